//! Scoring pairs: each (query, passage) pair encoded and truncated to the window as the
//! tokenizer sentence-transformers calls does it, grouped into forward passes, the head and the
//! activation applied to the first token's state.

use rayon::prelude::*;
use tokenizers::utils::truncation::truncate_encodings;
use tokenizers::{Encoding, TruncationDirection, TruncationParams, TruncationStrategy};

use super::Reranker;

/// Pairs are grouped into forward passes of about this many tokens.
const TOKENS_PER_PASS: usize = 4096;

/// A pair's token ids and their token types.
type Pair = (Vec<u32>, Vec<u32>);

impl Reranker {
    /// The pair as the model reads it, truncated to the window, and how many tokens the passage
    /// has in all. Each text is encoded alone, the two cut `longest_first` by the tokenizers
    /// crate's own rule, then the pair template applied. Not the tokenizer's built-in truncation:
    /// tokenizers 0.23.2 stops tokenizing each text at the window before comparing lengths, so
    /// two texts both longer than the window tie and the query keeps the shorter half, where
    /// transformers (tokenizers 0.23.3) keeps the longer text's extra token on the longer one.
    fn encode_pair(&self, query: &str, passage: &str) -> Option<(Encoding, usize)> {
        let encoded = (|| {
            let a = self.tok.encode(query, false)?;
            let b = self.tok.encode(passage, false)?;
            let passage_tokens = b.len();
            let params = TruncationParams {
                direction: TruncationDirection::Right,
                max_length: self.window - self.pair_specials,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            };
            let (a, b) = truncate_encodings(a, Some(b), &params)?;
            Ok::<_, tokenizers::Error>((self.tok.post_process(a, b, true)?, passage_tokens))
        })();
        match encoded {
            Ok(e) => Some(e),
            Err(e) => {
                log::warn!("reranker tokenizer failed on a pair: {e}");
                None
            }
        }
    }

    /// The token ids and token type ids the model reads for the pair (truncated to the window).
    pub fn pair_ids(&self, query: &str, passage: &str) -> (Vec<u32>, Vec<u32>) {
        self.encode_pair(query, passage)
            .map(|(e, _)| (e.get_ids().to_vec(), e.get_type_ids().to_vec()))
            .unwrap_or_default()
    }

    /// The byte in `passage` where the reranker stops reading it: the end of the last passage
    /// token kept when the pair is truncated to the window (0 when none is kept), or None when
    /// every token of the passage is read (a query cut alone leaves the passage whole).
    pub fn pair_tail(&self, query: &str, passage: &str) -> Option<usize> {
        let (pair, passage_tokens) = self.encode_pair(query, passage)?;
        let kept: Vec<usize> = pair
            .get_sequence_ids()
            .iter()
            .zip(pair.get_offsets())
            .filter(|(s, _)| **s == Some(1))
            .map(|(_, o)| o.1)
            .collect();
        if kept.len() >= passage_tokens {
            return None;
        }
        Some(kept.last().copied().unwrap_or(0))
    }

    /// The score of each passage against `query`, as `CrossEncoder.predict` gives it (the
    /// activation applied), in the order of `passages`. A pair the tokenizer fails on scores NaN.
    pub fn score(&self, query: &str, passages: &[&str]) -> Vec<f32> {
        let mut scores = vec![f32::NAN; passages.len()];
        let seqs: Vec<Option<Pair>> = passages
            .par_iter()
            .map(|p| {
                let (e, _) = self.encode_pair(query, p)?;
                Some((e.get_ids().to_vec(), e.get_type_ids().to_vec()))
            })
            .collect();
        let mut group: Vec<(usize, Pair)> = Vec::new();
        let mut tokens = 0;
        for (i, seq) in seqs.into_iter().enumerate() {
            let Some(seq) = seq else { continue };
            if tokens + seq.0.len() > TOKENS_PER_PASS && !group.is_empty() {
                self.score_pass(std::mem::take(&mut group), &mut scores);
                tokens = 0;
            }
            tokens += seq.0.len();
            group.push((i, seq));
        }
        self.score_pass(group, &mut scores);
        scores
    }

    /// One forward pass over `group` (each pair's index in `scores`, its ids and type ids).
    fn score_pass(&self, group: Vec<(usize, Pair)>, scores: &mut [f32]) {
        if group.is_empty() {
            return;
        }
        let h = self.bert.config.hidden;
        let (at, pairs): (Vec<usize>, Vec<Pair>) = group.into_iter().unzip();
        let (seqs, types): (Vec<Vec<u32>>, Vec<Vec<u32>>) = pairs.into_iter().unzip();
        let (states, starts) = self.bert.hidden_states_typed(&seqs, Some(&types));
        for ((i, seq), start) in at.into_iter().zip(&seqs).zip(starts) {
            if !seq.is_empty() {
                let first = &states[start * h..(start + 1) * h];
                scores[i] = self.activation.apply(self.head.logit(first));
            }
        }
    }
}
