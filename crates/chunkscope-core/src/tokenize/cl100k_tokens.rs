//! A document's cl100k tokens, held compactly: each token's length in bytes, and the byte where
//! every 32nd token starts. Any other token's start is its block's start plus the lengths of the
//! tokens before it in the block. The ids themselves are never needed again (the tokens of a
//! document spell it, so a run of tokens is a slice of the text), which makes about 1.1 bytes a
//! token instead of 8 (an id and a start each).

use std::sync::atomic::{AtomicU64, Ordering};

/// Tokens per stored start.
const BLOCK: usize = 32;

/// Bytes past the last token found within which `token_at` walks on without a search (about as
/// many tokens as a block holds).
const NEAR: u32 = 128;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cl100kTokens {
    /// The last token found by `token_at`: chunkers ask for starts in order, so the next walk
    /// usually begins there instead of at its block's start.
    last: LastFound,
    /// Each token's length in bytes (cl100k's longest token has 128; a test says so).
    lens: Vec<u8>,
    /// Byte where token `k * BLOCK` starts.
    block_starts: Vec<u32>,
}

/// (start byte, token) of a token of the document, packed in one atomic so that threads sharing
/// the document never read a torn pair. Not part of the value: clones start afresh, and
/// equality ignores it.
#[derive(Debug, Default)]
struct LastFound(AtomicU64);

impl LastFound {
    fn get(&self) -> (u32, usize) {
        let v = self.0.load(Ordering::Relaxed);
        ((v >> 32) as u32, (v & u64::from(u32::MAX)) as usize)
    }

    fn set(&self, start: u32, token: usize) {
        if let Ok(token) = u32::try_from(token) {
            let v = u64::from(start) << 32 | u64::from(token);
            self.0.store(v, Ordering::Relaxed);
        }
    }
}

impl Clone for LastFound {
    fn clone(&self) -> Self {
        LastFound::default()
    }
}

impl PartialEq for LastFound {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for LastFound {}

impl Cl100kTokens {
    /// `text` encoded with cl100k_base, special-token strings read as plain text.
    pub fn new(text: &str) -> Cl100kTokens {
        let mut t = Cl100kTokens {
            last: LastFound::default(),
            lens: Vec::with_capacity(text.len() / 4 + 1),
            block_starts: Vec::with_capacity(text.len() / (4 * BLOCK) + 1),
        };
        let mut at = 0u32;
        super::cl100k_direct::token_lens(text, |len| {
            if t.lens.len().is_multiple_of(BLOCK) {
                t.block_starts.push(at);
            }
            t.lens.push(len as u8);
            at += len as u32;
        });
        t.lens.shrink_to_fit();
        t.block_starts.shrink_to_fit();
        t
    }

    pub fn len(&self) -> usize {
        self.lens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lens.is_empty()
    }

    /// Byte length of token `i`.
    #[inline]
    fn len_at(&self, i: usize) -> u32 {
        u32::from(self.lens[i])
    }

    /// The byte where token `i` starts, if there is a token `i`.
    pub fn start(&self, i: usize) -> Option<usize> {
        if i >= self.len() {
            return None;
        }
        let k = i / BLOCK;
        let before: u32 = (k * BLOCK..i).map(|j| self.len_at(j)).sum();
        Some((self.block_starts[k] + before) as usize)
    }

    /// Every token's start byte, in order.
    pub fn starts(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).scan(0usize, move |at, i| {
            let s = *at;
            *at += self.len_at(i) as usize;
            Some(s)
        })
    }

    /// The token among `from..to` that starts at byte `g`, if one does.
    pub fn token_at(&self, g: usize, from: usize, to: usize) -> Option<usize> {
        let n = self.len();
        let to = to.min(n);
        if from >= to {
            return None;
        }
        let g = u32::try_from(g).ok()?;
        // Walk on from the last token found when it lies a little before `g`; otherwise from the
        // last block starting at or before `g`, or from the last token found if that is nearer.
        let (last_at, last) = self.last.get();
        let after_last = last_at <= g && last < n;
        let (mut i, mut at) = if after_last && g - last_at <= NEAR {
            (last, last_at)
        } else {
            let k = self
                .block_starts
                .partition_point(|&s| s <= g)
                .checked_sub(1)?;
            match after_last && last >= k * BLOCK {
                true => (last, last_at),
                false => (k * BLOCK, self.block_starts[k]),
            }
        };
        while at < g && i < n {
            at += self.len_at(i);
            i += 1;
        }
        if at == g && i < n {
            self.last.set(g, i);
        }
        // Tokens of no bytes do not occur; the first token starting at `g` is the one.
        (at == g && (from..to).contains(&i)).then_some(i)
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.lens.capacity() + self.block_starts.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::super::cl100k;
    use super::*;

    /// Every ordinary token's length fits the byte that holds it.
    #[test]
    fn every_token_length_fits_a_byte() {
        let bpe = cl100k();
        let longest = (0..100_256u32)
            .filter_map(|id| bpe.decode_bytes(&[id]).ok().map(|b| b.len()))
            .max();
        assert_eq!(longest, Some(128));
    }

    #[test]
    fn starts_match_the_decoded_tokens() {
        let text = "Grüße, 世界! ".repeat(40) + "tail\n\n  x";
        let t = Cl100kTokens::new(&text);
        let bpe = cl100k();
        let mut at = 0;
        let mut want = Vec::new();
        for &id in &bpe.encode_ordinary(&text) {
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
        // Any order of questions, so the walk starts from every kind of last answer: forward,
        // backward, in the same block and blocks apart, after a miss.
        for stride in [1, 7, 31, 33, 97, 500] {
            for k in 0..text.len() {
                let b = (k * stride + k / 3) % (text.len() + 1);
                let i = want.iter().position(|&s| s == b);
                assert_eq!(t.token_at(b, 0, t.len()), i, "byte {b}, stride {stride}");
            }
        }
    }
}
