//! A document's cl100k tokens, held compactly: the ids, and the byte where every 32nd token
//! starts. Any other token's start is its block's start plus the byte lengths of the tokens
//! before it in the block, read from a table of every token's length. This costs about 4.1 bytes
//! a token instead of 8 (an id and a start each).

use std::sync::OnceLock;

use super::cl100k;

/// Tokens per stored start.
const BLOCK: usize = 32;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cl100kTokens {
    ids: Vec<u32>,
    /// Byte where token `k * BLOCK` starts.
    block_starts: Vec<u32>,
}

/// Byte length of every ordinary cl100k token, by id (0 for ids that are not one).
fn token_lens() -> &'static [u8] {
    static LENS: OnceLock<Vec<u8>> = OnceLock::new();
    LENS.get_or_init(|| {
        let bpe = cl100k();
        // cl100k's ordinary ids are 0..100256; its special tokens follow.
        (0..100_256u32)
            .map(|id| {
                bpe.decode_bytes(&[id])
                    .map_or(0, |b| u8::try_from(b.len()).unwrap_or(u8::MAX))
            })
            .collect()
    })
}

/// Byte length of token `id`.
fn token_len(id: u32) -> u32 {
    match token_lens().get(id as usize) {
        Some(&n) if n < u8::MAX => u32::from(n),
        // Not in the table (a special token), or too long for it.
        _ => cl100k().decode_bytes(&[id]).map_or(0, |b| b.len() as u32),
    }
}

impl Cl100kTokens {
    /// `text` encoded with cl100k_base, special-token strings read as plain text.
    pub fn new(text: &str) -> Cl100kTokens {
        let mut ids = cl100k().encode_ordinary(text);
        // Held for the whole session, one per document: no growth slack.
        ids.shrink_to_fit();
        let mut block_starts = Vec::with_capacity(ids.len().div_ceil(BLOCK));
        let mut at = 0u32;
        for (i, &id) in ids.iter().enumerate() {
            if i % BLOCK == 0 {
                block_starts.push(at);
            }
            at += token_len(id);
        }
        Cl100kTokens { ids, block_starts }
    }

    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The byte where token `i` starts, if there is a token `i`.
    pub fn start(&self, i: usize) -> Option<usize> {
        if i >= self.ids.len() {
            return None;
        }
        let k = i / BLOCK;
        let before: u32 = self.ids[k * BLOCK..i].iter().map(|&id| token_len(id)).sum();
        Some((self.block_starts[k] + before) as usize)
    }

    /// Every token's start byte, in order.
    pub fn starts(&self) -> impl Iterator<Item = usize> + '_ {
        self.ids.iter().scan(0usize, |at, &id| {
            let s = *at;
            *at += token_len(id) as usize;
            Some(s)
        })
    }

    /// The token among `from..to` that starts at byte `g`, if one does.
    pub fn token_at(&self, g: usize, from: usize, to: usize) -> Option<usize> {
        let to = to.min(self.ids.len());
        if from >= to {
            return None;
        }
        let g = u32::try_from(g).ok()?;
        // The last block starting at or before `g`, then a walk through it.
        let k = self
            .block_starts
            .partition_point(|&s| s <= g)
            .checked_sub(1)?;
        let mut i = k * BLOCK;
        let mut at = self.block_starts[k];
        while at < g && i < self.ids.len() {
            at += token_len(self.ids[i]);
            i += 1;
        }
        // Tokens of no bytes do not occur; the first token starting at `g` is the one.
        (at == g && (from..to).contains(&i)).then_some(i)
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        (self.ids.capacity() + self.block_starts.capacity()) * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_match_the_decoded_tokens() {
        let text = "Grüße, 世界! ".repeat(40) + "tail\n\n  x";
        let t = Cl100kTokens::new(&text);
        let bpe = cl100k();
        let mut at = 0;
        let mut want = Vec::new();
        for &id in t.ids() {
            want.push(at);
            at += bpe.decode_bytes(&[id]).unwrap().len();
        }
        assert_eq!(at, text.len());
        assert!(t.len() > 2 * BLOCK);
        let got: Vec<usize> = (0..t.len()).map(|i| t.start(i).unwrap()).collect();
        assert_eq!(got, want);
        assert_eq!(t.starts().collect::<Vec<_>>(), want);
        assert_eq!(t.start(t.len()), None);
        for (i, &s) in want.iter().enumerate() {
            assert_eq!(t.token_at(s, 0, t.len()), Some(i));
            assert_eq!(t.token_at(s, i + 1, t.len()), None);
        }
        // A byte inside a token starts none.
        let inside = (1..text.len()).find(|b| !want.contains(b)).unwrap();
        assert_eq!(t.token_at(inside, 0, t.len()), None);
    }
}
