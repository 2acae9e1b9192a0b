//! Where in a hit's text it matched: the query's terms as BM25 matched them, the sentence that
//! holds a byte, and the sentence nearest the query vector.

use std::collections::HashSet;

use crate::embed::driver::embed_cached;
use crate::embed::{EmbedCache, Embedder};

/// Where a query's terms occur in `text`, as BM25 matched them: the default analyzer's tokens
/// (alphanumeric runs, lowercased) equal to one of the query's. Byte ranges, in order.
pub fn term_spans(text: &str, query: &str) -> Vec<(usize, usize)> {
    fn words(s: &str) -> impl Iterator<Item = (usize, &str)> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(move |w| (w.as_ptr() as usize - s.as_ptr() as usize, w))
    }
    let terms: HashSet<String> = words(query).map(|(_, w)| w.to_lowercase()).collect();
    words(text)
        .filter(|(_, w)| terms.contains(&w.to_lowercase()))
        .map(|(at, w)| (at, at + w.len()))
        .collect()
}

/// The sentence of `text` that holds byte `at` (trimmed), by the segmenter Max-Min and the vector
/// hits use.
pub fn sentence_span(text: &str, at: usize) -> Option<(usize, usize)> {
    crate::chunk::maxmin::trimmed_sentences(text)
        .into_iter()
        .find(|&(a, b)| a <= at && at < b.max(a + 1))
}

pub(super) fn best_sentence(
    embedder: &Embedder,
    cache: &mut EmbedCache,
    text: &str,
    qv: &[f32],
    window: usize,
) -> Option<usize> {
    // The same segmenter Max-Min uses.
    let spans = crate::chunk::maxmin::trimmed_sentences(text);
    let texts: Vec<&str> = spans.iter().map(|&(a, b)| &text[a..b]).collect();
    let (vs, _) = embed_cached(embedder, cache, &texts, window, |_, _| true).ok()?;
    vs.iter()
        .zip(&spans)
        .map(|(v, &(a, _))| (v.iter().zip(qv).map(|(x, y)| x * y).sum::<f32>(), a))
        .max_by(|x, y| x.0.total_cmp(&y.0))
        .map(|(_, a)| a)
}
