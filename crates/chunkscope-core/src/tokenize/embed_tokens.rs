//! A document's embed tokens, held compactly: the workbench keeps them for every file of the
//! corpus for the whole session, so they cost about 3 bytes a token instead of 20 (a start, an
//! end and a word id each, plus a span per word).
//!
//! Each token is its start byte and its length (one byte; longer tokens, such as an `[UNK]` over
//! a long word, are listed aside), and one bit says whether it begins a new pre-tokenizer word.
//! A start is held as its low 16 bits; its high bits are those of its run (consecutive tokens
//! with the same high bits: one run for a document under 64 KiB).
//! When words come in order (BERT's always do), a word is a run of consecutive tokens and its
//! span is the run's: words need not be stored.

use super::TokenSpan;

/// Lengths at or above this are kept in `EmbedTokens::long`.
const LONG: u8 = u8::MAX;

/// Tokens per entry of `EmbedTokens::block_runs` (a power of two).
const BLOCK_SHIFT: u32 = 10;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmbedTokens {
    /// The low 16 bits of the byte where each token starts.
    low: Vec<u16>,
    /// (first token, high bits) of each run of tokens whose starts share their high 16 bits.
    runs: Vec<(u32, u16)>,
    /// For each block of `BLOCK` tokens, the run its first token is in: a start's high bits are
    /// found a step or two from there instead of by a search of `runs` (documents past 64 KiB
    /// read them on every start).
    block_runs: Vec<u32>,
    /// The end of the last token of each full block of `BLOCK` tokens: a search for a byte
    /// reads this short table first, then one block, instead of probing the whole document.
    block_ends: Vec<u32>,
    /// Each token's length in bytes, or `LONG`.
    lens: Vec<u8>,
    /// (token, end byte) of each token whose length is `LONG` or more, by token.
    long: Vec<(u32, u32)>,
    /// Bit `i` is set when token `i` begins a word.
    word_starts: Vec<u64>,
    /// True when every word covers at least one byte and, token after token, words start and end
    /// in order: word spans are then runs of tokens, and counts can skip whole words.
    words_in_order: bool,
}

impl EmbedTokens {
    /// From the tokenizer's tokens.
    pub(super) fn new(tokens: &[TokenSpan]) -> EmbedTokens {
        let n = tokens.len();
        let mut t = EmbedTokens {
            low: Vec::with_capacity(n),
            runs: Vec::new(),
            block_runs: Vec::new(),
            block_ends: Vec::new(),
            lens: Vec::with_capacity(n),
            long: Vec::new(),
            word_starts: vec![0; n.div_ceil(64)],
            words_in_order: true,
        };
        let word_id = |i: usize| tokens[i].word;
        for (
            i,
            &TokenSpan {
                start: s, end: e, ..
            },
        ) in tokens.iter().enumerate()
        {
            let high = (s >> 16) as u16;
            if t.runs.last().is_none_or(|&(_, h)| h != high) {
                t.runs.push((i as u32, high));
            }
            t.low.push(s as u16);
            let len = e.saturating_sub(s);
            if len >= u32::from(LONG) {
                t.lens.push(LONG);
                t.long.push((i as u32, e));
            } else {
                t.lens.push(len as u8);
            }
            match i.checked_sub(1).map(word_id) {
                Some(prev) if prev == word_id(i) => {}
                Some(prev) if prev > word_id(i) => {
                    t.words_in_order = false;
                    t.word_starts[i / 64] |= 1 << (i % 64);
                }
                _ => t.word_starts[i / 64] |= 1 << (i % 64),
            }
        }
        t.long.shrink_to_fit();
        t.runs.shrink_to_fit();
        if !matches!(t.runs.as_slice(), [] | [(_, 0)]) {
            let mut r = 0;
            t.block_runs = (0..n.div_ceil(1 << BLOCK_SHIFT))
                .map(|b| {
                    let first = (b << BLOCK_SHIFT) as u32;
                    while t.runs.get(r + 1).is_some_and(|&(f, _)| f <= first) {
                        r += 1;
                    }
                    r as u32
                })
                .collect();
        }
        t.block_ends = (1..=n >> BLOCK_SHIFT)
            .map(|b| t.end((b << BLOCK_SHIFT) - 1))
            .collect();
        t.words_in_order = t.words_in_order && t.word_spans_in_order(tokens);
        t
    }

    /// Every word's span (its tokens' least start, greatest end) covers a byte, and word spans
    /// start and end in order. Word ids were checked to never decrease.
    fn word_spans_in_order(&self, tokens: &[TokenSpan]) -> bool {
        let mut prev: Option<(u32, u32)> = None;
        let mut i = 0;
        while i < tokens.len() {
            let j = self.word_end(i);
            let w = tokens[i..j]
                .iter()
                .fold((u32::MAX, 0), |w, t| (w.0.min(t.start), w.1.max(t.end)));
            if w.0 >= w.1 || prev.is_some_and(|p| p.0 > w.0 || p.1 > w.1) {
                return false;
            }
            // Within a word, the bounds used by searches must be its first and last token's.
            if tokens[i].start != w.0 || tokens[j - 1].end != w.1 {
                return false;
            }
            prev = Some(w);
            i = j;
        }
        true
    }

    pub fn len(&self) -> usize {
        self.low.len()
    }

    pub fn is_empty(&self) -> bool {
        self.low.is_empty()
    }

    pub fn words_in_order(&self) -> bool {
        self.words_in_order
    }

    #[inline(always)]
    pub fn start(&self, i: usize) -> u32 {
        let low = u32::from(self.low[i]);
        match self.runs.as_slice() {
            [] | [(_, 0)] => low,
            runs => u32::from(self.high(runs, i)) << 16 | low,
        }
    }

    /// The high bits of token `i`'s start, from its run: the run of its block's first token, or
    /// one after it (a run spans thousands of tokens in text; fewer only where whitespace runs
    /// long, and then the walk is at most a block).
    #[inline]
    fn high(&self, runs: &[(u32, u16)], i: usize) -> u16 {
        let mut r = self.block_runs[i >> BLOCK_SHIFT] as usize;
        while runs.get(r + 1).is_some_and(|&(f, _)| f as usize <= i) {
            r += 1;
        }
        runs[r].1
    }

    #[inline(always)]
    pub fn end(&self, i: usize) -> u32 {
        match self.lens[i] {
            LONG => self.long_end(i),
            len => self.start(i) + u32::from(len),
        }
    }

    /// The end of token `i`, one of the long ones listed aside.
    #[cold]
    fn long_end(&self, i: usize) -> u32 {
        let k = self.long.partition_point(|&(t, _)| (t as usize) < i);
        self.long[k].1
    }

    /// Token `i`'s byte span.
    pub fn span(&self, i: usize) -> (usize, usize) {
        (self.start(i) as usize, self.end(i) as usize)
    }

    /// Every token's byte span, in order.
    pub fn spans(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.len()).map(|i| self.span(i))
    }

    fn begins_word(&self, i: usize) -> bool {
        self.word_starts[i / 64] >> (i % 64) & 1 == 1
    }

    /// The token past the last one of token `i`'s word: the next word's first token (found a
    /// 64-bit word of `word_starts` at a time), or the end.
    pub fn word_end(&self, i: usize) -> usize {
        let n = self.len();
        let j = i + 1;
        if j >= n {
            return n;
        }
        let mut k = j / 64;
        // Bits past the last token are never set.
        let mut bits = self.word_starts[k] & (u64::MAX << (j % 64));
        while bits == 0 {
            k += 1;
            match self.word_starts.get(k) {
                Some(&b) => bits = b,
                None => return n,
            }
        }
        k * 64 + bits.trailing_zeros() as usize
    }

    /// The first token of token `i`'s word.
    pub(super) fn word_first(&self, i: usize) -> usize {
        let mut j = i;
        while j > 0 && !self.begins_word(j) {
            j -= 1;
        }
        j
    }

    /// The byte span of token `i`'s word (words in order: its first token's start, its last
    /// token's end).
    pub fn word_span(&self, i: usize) -> (u32, u32) {
        (
            self.start(self.word_first(i)),
            self.end(self.word_end(i) - 1),
        )
    }

    /// The first token that ends past byte `at` (token ends in order, as with words in order):
    /// the block from `block_ends`, then a binary search inside it.
    pub fn first_ending_after(&self, at: u32) -> usize {
        let b = self.block_ends.partition_point(|&e| e <= at);
        let lo = b << BLOCK_SHIFT;
        let hi = (lo + (1 << BLOCK_SHIFT)).min(self.len());
        partition_in(lo, hi, |i| self.end(i) <= at)
    }

    /// The first token in `from..` for which `pred` fails (`pred` holds for a prefix).
    pub fn partition_from(&self, from: usize, pred: impl Fn(usize) -> bool) -> usize {
        partition_in(from, self.len(), pred)
    }

    /// As `partition_from`, probing `from`, then steps that double, before the binary search:
    /// a few probes when the answer is near `from`, as it is for a slice's end.
    pub fn gallop_from(&self, from: usize, pred: impl Fn(usize) -> bool) -> usize {
        let n = self.len();
        // `pred` holds below `lo`; it fails at `hi` unless `hi == n`.
        let (mut lo, mut hi, mut step) = (from, from, 1);
        while hi < n && pred(hi) {
            lo = hi + 1;
            hi = (hi + step).min(n);
            step *= 2;
        }
        partition_in(lo, hi, pred)
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.low.capacity() * 2
            + self.runs.capacity() * 8
            + self.block_runs.capacity() * 4
            + self.block_ends.capacity() * 4
            + self.lens.capacity()
            + self.long.capacity() * 8
            + self.word_starts.capacity() * 8
    }
}

/// The first index in `lo..hi` for which `pred` fails (`pred` holds for a prefix), or `hi`.
fn partition_in(mut lo: usize, mut hi: usize, pred: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(spans: &[(u32, u32)], words: &[u32]) -> EmbedTokens {
        let t: Vec<TokenSpan> = spans
            .iter()
            .zip(words)
            .map(|(&(start, end), &word)| TokenSpan { start, end, word })
            .collect();
        EmbedTokens::new(&t)
    }

    #[test]
    fn spans_and_words_come_back() {
        // "ab cd": word 0 = "ab" as two tokens, word 1 = "cd"; one token 300 bytes long.
        let t = tokens(&[(0, 1), (1, 2), (3, 5), (6, 306)], &[0, 0, 1, 2]);
        let back: Vec<_> = t.spans().collect();
        assert_eq!(back, [(0, 1), (1, 2), (3, 5), (6, 306)]);
        assert!(t.words_in_order());
        assert_eq!(t.word_span(1), (0, 2));
        assert_eq!(t.word_end(0), 2);
        assert_eq!(t.word_span(3), (6, 306));
        assert_eq!(t.partition_from(0, |i| t.end(i) <= 3), 2);
    }

    /// Word ends found a bit-word at a time agree with a token-by-token walk, for words that
    /// cross 64-token boundaries and a last word that runs to the end.
    #[test]
    fn word_ends_across_bit_words() {
        // Word lengths 1, 2, 3, ..., then one long word of 130 tokens at the end.
        let mut words = Vec::new();
        for (w, len) in (1..20).chain([130]).enumerate() {
            words.extend(std::iter::repeat_n(w as u32, len));
        }
        let spans: Vec<(u32, u32)> = (0..words.len() as u32).map(|i| (i, i + 1)).collect();
        let t = tokens(&spans, &words);
        for i in 0..words.len() {
            let walk = (i + 1..words.len())
                .find(|&j| words[j] != words[i])
                .unwrap_or(words.len());
            assert_eq!(t.word_end(i), walk, "token {i}");
            let first = (0..=i).find(|&j| words[j] == words[i]).unwrap();
            assert_eq!(t.word_first(i), first, "token {i}");
        }
    }

    /// Starts past 64 KiB, across several runs, and a start that goes back, come back whole.
    #[test]
    fn starts_past_64_kib_come_back() {
        let spans = [
            (0, 3),
            (65_530, 65_540),
            (65_541, 65_542),
            (200_000, 200_001),
            (70_000, 70_004),
            (70_004, 70_300),
            (4_000_000_000, 4_000_000_002),
        ];
        let t = tokens(&spans, &[0, 1, 2, 3, 4, 4, 5]);
        assert_eq!(
            t.spans().collect::<Vec<_>>(),
            spans.map(|(a, b)| (a as usize, b as usize))
        );
        assert!(!t.words_in_order());
    }

    /// Starts found through the block index: runs thousands of tokens long, runs of a token or
    /// two where whitespace runs long, several runs inside one block, and a document whose first
    /// token lies past 64 KiB (one run, high bits not zero).
    #[test]
    fn starts_across_blocks_and_runs_come_back() {
        let mut spans = Vec::new();
        let mut at = 0u32;
        for i in 0..5_000u32 {
            // Mostly 5-byte steps; now and then a gap of nearly 64 KiB, twice in a row at times.
            at += if i % 1_300 == 7 || i % 1_300 == 8 {
                65_000
            } else {
                5
            };
            spans.push((at, at + 3));
        }
        let words: Vec<u32> = (0..spans.len() as u32).collect();
        let t = tokens(&spans, &words);
        assert!(t.runs.len() > 8, "{}", t.runs.len());
        let back: Vec<(usize, usize)> = t.spans().collect();
        let want: Vec<(usize, usize)> = spans
            .iter()
            .map(|&(a, b)| (a as usize, b as usize))
            .collect();
        assert_eq!(back, want);
        for at in (0..=at + 10).step_by(997).chain([0, 1, 4, 5, at + 2]) {
            let want = t.partition_from(0, |i| t.end(i) <= at);
            assert_eq!(t.first_ending_after(at), want, "byte {at}");
        }
        let far = tokens(&[(70_000, 70_002), (70_003, 70_004)], &[0, 1]);
        assert_eq!(
            far.spans().collect::<Vec<_>>(),
            [(70_000, 70_002), (70_003, 70_004)]
        );
    }

    /// Galloping finds what the binary search finds, from every start, for every cut.
    #[test]
    fn gallop_equals_partition() {
        let n = 70u32;
        let spans: Vec<(u32, u32)> = (0..n).map(|i| (2 * i, 2 * i + 1)).collect();
        let words: Vec<u32> = (0..n).collect();
        let t = tokens(&spans, &words);
        for cut in 0..=n as usize {
            for from in 0..=cut {
                let pred = |i: usize| i < cut;
                assert_eq!(t.gallop_from(from, pred), t.partition_from(from, pred));
                assert_eq!(t.gallop_from(from, pred), cut);
            }
        }
    }

    #[test]
    fn words_out_of_order_are_noticed() {
        let t = tokens(&[(0, 1), (2, 3)], &[1, 0]);
        assert!(!t.words_in_order());
        // A word covering no byte.
        let t = tokens(&[(0, 0), (1, 2)], &[0, 1]);
        assert!(!t.words_in_order());
        // A word whose tokens go back.
        let t = tokens(&[(2, 3), (0, 1)], &[0, 0]);
        assert!(!t.words_in_order());
    }
}
