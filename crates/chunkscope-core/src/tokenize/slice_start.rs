//! Counting several slices of a document from one start: where the start falls among the
//! document's embed tokens is found once, then only each end is searched for.

use super::{fragment, DocTokens, EmbedTokenizer};

/// A slice's start among a document's embed tokens (`DocTokens::embed_start`): the tokens of the
/// word it cuts (counted, `head`; that word ends at `word_end`, else `word_end` is the start)
/// and the first token after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SliceStart {
    pub start: usize,
    first: usize,
    head: usize,
    word_end: u32,
}

impl DocTokens {
    /// Where a slice from byte `start` begins among the document's embed tokens, for counting
    /// several slices from the same start (`embed_count_from`): None unless the tokenizer is
    /// word-local with words in order (`walk_slice`'s case).
    pub fn embed_start(
        &self,
        text: &str,
        start: usize,
        tok: &EmbedTokenizer,
    ) -> Option<SliceStart> {
        let t = &self.embed;
        if !tok.is_word_local() || !t.words_in_order() {
            return None;
        }
        let s = start as u32;
        let mut first = t.first_ending_after(s);
        let (mut head, mut word_end) = (0, s);
        if let Some(w) = self.word_cut_at(first, s) {
            fragment(text, start, w.1 as usize, tok, |_, _| head += 1);
            word_end = w.1;
            first = t.word_end(first);
        }
        Some(SliceStart {
            start,
            first,
            head,
            word_end,
        })
    }

    /// `embed_count_in(text, from.start, end)`, reading the slice's start from `from`: only its
    /// end is searched for (a slice that ends inside the word its start cuts is counted whole).
    pub fn embed_count_from(
        &self,
        text: &str,
        from: &SliceStart,
        end: usize,
        tok: &EmbedTokenizer,
    ) -> usize {
        let e = end as u32;
        if end <= from.start || e <= from.word_end {
            return self.embed_count_in(text, from.start, end, tok);
        }
        let k = self.run_end(from.first, e);
        let mut tail = 0;
        self.tail_fragment(text, k, (from.start, end), tok, |_| tail += 1);
        from.head + (k - from.first) + tail
    }
}
