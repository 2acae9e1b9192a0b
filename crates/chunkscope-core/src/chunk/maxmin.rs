//! Max-Min semantic chunking (Kiss, Nagy and Szilagyi, 2025): sentences are embedded once, then
//! walked in order; a sentence joins the current chunk when its best similarity to the chunk beats
//! both a fixed floor and an adaptive threshold that follows the chunk's weakest internal pair.
//! An optional maximum size (in any unit) closes a chunk before it outgrows the window.

use unicode_segmentation::UnicodeSegmentation;

use super::{span_list, Chunk, Chunker, DocView, Recursive};
use crate::tokenize::Unit;

/// The rule's knobs; the defaults are the authors' (tuned on bge-base-en-v1.5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaxMinParams {
    /// A sentence never joins below this similarity.
    pub fixed_threshold: f32,
    /// Scales the adaptive threshold (minimum internal similarity x c x sigmoid(|C| - 1)).
    pub c: f32,
    /// Multiplies the similarity of the first pair, which has no internal minimum yet.
    pub init_constant: f32,
}

impl Default for MaxMinParams {
    fn default() -> Self {
        MaxMinParams {
            fixed_threshold: 0.6,
            c: 0.9,
            init_constant: 1.5,
        }
    }
}

/// Sentence spans (byte ranges) of one document, as `sentences` returns them.
pub type Spans = super::SpanList;

/// Sentence embeddings looked up by the sentence's embedded text.
pub trait SentenceVectors: Sync {
    fn vector(&self, sentence: &str) -> Option<&[f32]>;
}

/// The text of a sentence span that is embedded: the span without surrounding whitespace.
pub fn sentence_text(doc: &str, span: (usize, usize)) -> &str {
    doc[span.0..span.1].trim()
}

/// Sentence spans covering the document in order (UAX #29 sentence boundaries; runs of
/// whitespace are attached to the sentence before them). With `max > 0`, a sentence longer than
/// `max` units is cut at spaces, or between characters, into pieces that fit.
pub fn sentences(doc: &DocView, unit: Unit, max: usize) -> Vec<(usize, usize)> {
    fit(doc, bounds(doc.text), unit, max)
}

/// Sentence spans covering `text` in order (UAX #29 sentence boundaries; runs of whitespace are
/// attached to the sentence before them), whatever the maximum size.
pub fn bounds(text: &str) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut carry: Option<usize> = None;
    let soft = soften(text);
    for (i, s) in soft.split_sentence_bound_indices() {
        let end = i + s.len();
        if s.trim().is_empty() {
            match spans.last_mut() {
                Some(last) => last.1 = end,
                None => {
                    carry.get_or_insert(i);
                }
            }
            continue;
        }
        spans.push((carry.take().unwrap_or(i), end));
    }
    spans
}

/// `spans` (sentences of `doc` from `bounds`) with each one longer than `max` units (0 = no
/// maximum) cut at spaces, or between characters, into pieces that fit.
pub fn fit(
    doc: &DocView,
    spans: impl IntoIterator<Item = (usize, usize)>,
    unit: Unit,
    max: usize,
) -> Vec<(usize, usize)> {
    if max == 0 {
        return spans.into_iter().collect();
    }
    let cutter = Recursive {
        unit,
        size: max,
        overlap: 0,
        separators: vec![" ".into(), String::new()],
        keep_at_end: true,
    };
    let mut out = Vec::new();
    for (s, e) in spans {
        if doc.count(unit, s, e) <= max {
            out.push((s, e));
            continue;
        }
        let mut pieces = Vec::new();
        cutter.split(doc, s, e, &cutter.separators, &mut pieces);
        out.extend(
            pieces
                .into_iter()
                .map(|c| (c.start, c.end))
                .filter(|&(a, b)| !doc.text[a..b].trim().is_empty()),
        );
    }
    out
}

/// Sentences of `text` as byte ranges without surrounding whitespace (empty ones left out).
pub fn trimmed_sentences(text: &str) -> Vec<(usize, usize)> {
    soften(text)
        .split_sentence_bound_indices()
        .filter_map(|(i, s)| {
            let lead = s.len() - s.trim_start().len();
            let t = s.trim();
            (!t.is_empty()).then_some((i + lead, i + lead + t.len()))
        })
        .collect()
}

/// `text` with soft line breaks (a newline inside a paragraph, as hard-wrapped prose has) turned
/// into spaces, byte for byte, so the segmenter does not end a sentence at every wrapped line. A
/// newline stays when either line is blank, a heading, a list item, a quote, a table row or a code
/// fence, or when the text is inside a fence.
fn soften(text: &str) -> String {
    fn structural(line: &str) -> bool {
        let t = line.trim_start();
        t.is_empty()
            || t.starts_with(['#', '|', '>', '-', '*', '+'])
            || t.starts_with("```")
            || t.starts_with("~~~")
            || t.split_once(". ").is_some_and(|(n, _)| {
                !n.is_empty() && n.len() <= 3 && n.bytes().all(|b| b.is_ascii_digit())
            })
            || line.starts_with("    ")
            || line.starts_with('\t')
    }
    let mut out = String::with_capacity(text.len());
    let mut fenced = false;
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
        }
        let joins = !fenced
            && line.ends_with('\n')
            && !line.ends_with("\r\n")
            && !structural(line)
            && lines.peek().is_some_and(|next| !structural(next));
        if joins {
            out.push_str(&line[..line.len() - 1]);
            out.push(' ');
        } else {
            out.push_str(line);
        }
    }
    out
}

/// The dot product of `a` and `b` in f64: eight running sums over the lanes of each block of
/// eight (added in a fixed order at the end), so that the additions do not wait on each other;
/// the same on every machine.
fn dot(a: &[f32], b: &[f32]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut lanes = [0f64; 8];
    let (blocks_a, blocks_b) = (a.chunks_exact(8), b.chunks_exact(8));
    let (rest_a, rest_b) = (blocks_a.remainder(), blocks_b.remainder());
    for (x, y) in blocks_a.zip(blocks_b) {
        for k in 0..8 {
            lanes[k] += f64::from(x[k]) * f64::from(y[k]);
        }
    }
    let mut sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]))
        + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (x, y) in rest_a.iter().zip(rest_b) {
        sum += f64::from(*x) * f64::from(*y);
    }
    sum
}

/// The cosine of `a` and `b` given their norms squared (`dot(v, v)`), 0 for a zero vector.
fn cosine(a: &[f32], b: &[f32], na: f64, nb: f64) -> f64 {
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot(a, b) / (na.sqrt() * nb.sqrt())
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The authors' rule over sentence vectors in order: the index of the first sentence of each
/// chunk. A sentence without a vector opens a chunk and no sentence joins it. `fits(first, i)`
/// says whether sentences `first..=i` may share a chunk (the optional maximum size).
pub fn group(
    vectors: &[Option<&[f32]>],
    p: &MaxMinParams,
    mut fits: impl FnMut(usize, usize) -> bool,
) -> Vec<usize> {
    let mut starts = Vec::new();
    if vectors.is_empty() {
        return starts;
    }
    starts.push(0);
    // Each vector's norm once, not once per comparison.
    let norms: Vec<f64> = vectors
        .iter()
        .map(|v| v.map_or(0.0, |v| dot(v, v)))
        .collect();
    let mut members: Vec<usize> = vec![0];
    let mut pmin = 0f64;
    let fixed = p.fixed_threshold as f64;
    for (i, v) in vectors.iter().enumerate().skip(1) {
        // A member without a vector is a chunk's only one: nothing joins it.
        let all_have = members.iter().all(|&m| vectors[m].is_some());
        let decision = match v {
            Some(v) if all_have => {
                let sim = |m: usize| cosine(v, vectors[m].unwrap_or_default(), norms[i], norms[m]);
                if members.len() == 1 {
                    let first = sim(members[0]);
                    let score = p.init_constant as f64 * first;
                    (score > 0f64.max(fixed)).then_some(first)
                } else {
                    let (mut score, mut low) = (f64::NEG_INFINITY, f64::INFINITY);
                    for &m in &members {
                        let s = sim(m);
                        score = score.max(s);
                        low = low.min(s);
                    }
                    let threshold = pmin * p.c as f64 * sigmoid((members.len() - 1) as f64);
                    (score > threshold.max(fixed)).then_some(pmin.min(low))
                }
            }
            _ => None,
        };
        match decision {
            Some(new_min) if fits(members[0], i) => {
                pmin = new_min;
                members.push(i);
            }
            _ => {
                starts.push(i);
                members.clear();
                members.push(i);
                pmin = 0.0;
            }
        }
    }
    starts
}

pub struct MaxMin<'a> {
    pub unit: Unit,
    /// Maximum chunk size in `unit`; 0 means none (the authors' rule alone).
    pub max: usize,
    pub params: MaxMinParams,
    pub vectors: Option<&'a dyn SentenceVectors>,
    /// The document's sentence spans when already known (`sentences` of the same unit and max).
    pub spans: Option<Spans>,
}

impl Chunker for MaxMin<'_> {
    fn chunk(&self, doc: &DocView) -> Vec<Chunk> {
        let spans = match &self.spans {
            Some(s) => std::sync::Arc::clone(s),
            None => span_list(sentences(doc, self.unit, self.max)),
        };
        let span = |i: usize| (spans[i].0 as usize, spans[i].1 as usize);
        let vectors: Vec<Option<&[f32]>> = spans
            .iter()
            .map(|&(s, e)| {
                self.vectors
                    .and_then(|v| v.vector(sentence_text(doc.text, (s as usize, e as usize))))
            })
            .collect();
        let starts = group(&vectors, &self.params, |first, i| {
            self.max == 0 || doc.count(self.unit, span(first).0, span(i).1) <= self.max
        });
        starts
            .iter()
            .enumerate()
            .map(|(k, &first)| {
                let last = starts.get(k + 1).map_or(spans.len(), |&n| n) - 1;
                Chunk::slice(span(first).0, span(last).1)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(x: f32) -> Vec<f32> {
        vec![x.cos(), x.sin()]
    }

    #[test]
    fn joins_close_sentences_and_cuts_at_a_turn() {
        // Angles: three close sentences, then a sharp turn, then two close ones.
        let vs: Vec<Vec<f32>> = [0.0, 0.1, 0.15, 1.5, 1.55].into_iter().map(unit).collect();
        let refs: Vec<Option<&[f32]>> = vs.iter().map(|v| Some(v.as_slice())).collect();
        let starts = group(&refs, &MaxMinParams::default(), |_, _| true);
        assert_eq!(starts, vec![0, 3]);
        // A size cap closes chunks; a missing vector opens one.
        assert_eq!(
            group(&refs, &MaxMinParams::default(), |f, i| i - f < 2),
            vec![0, 2, 3]
        );
        let mut gap = refs.clone();
        gap[1] = None;
        assert_eq!(
            group(&gap, &MaxMinParams::default(), |_, _| true),
            vec![0, 1, 2, 3]
        );
    }

    /// The blocked dot product is the plain one up to rounding, remainders included.
    #[test]
    fn blocked_dot_is_the_dot_product() {
        for n in [0, 1, 7, 8, 13, 384, 771] {
            let a: Vec<f32> = (0..n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
                .collect();
            let b: Vec<f32> = (0..n)
                .map(|i| ((i * 53 % 97) as f32 - 48.0) / 3.0)
                .collect();
            let plain: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
            let scale: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (*x as f64 * *y as f64).abs())
                .sum();
            assert!(
                (dot(&a, &b) - plain).abs() <= 1e-12 * scale.max(1.0),
                "n = {n}"
            );
        }
        assert_eq!(cosine(&[0.0; 3], &[1.0; 3], 0.0, 3.0), 0.0);
    }

    #[test]
    fn splits_sentences() {
        let t = "One two. Three four? Five\n\nSix. 七八。九";
        let parts: Vec<&str> = trimmed_sentences(t)
            .iter()
            .map(|&(a, b)| &t[a..b])
            .collect();
        assert_eq!(
            parts,
            vec!["One two.", "Three four?", "Five", "Six.", "七八。", "九"]
        );
    }

    #[test]
    fn wrapped_lines_are_one_sentence() {
        let t =
            "# Title\n\nA wrapped\nsentence here. Next one\ncontinues.\n\n- item one\n- item two\n";
        let s = soften(t);
        assert_eq!(s.len(), t.len());
        assert_eq!(
            s,
            "# Title\n\nA wrapped sentence here. Next one continues.\n\n- item one\n- item two\n"
        );
        let fenced = "```\nlet a = 1;\nlet b = 2;\n```\n";
        assert_eq!(soften(fenced), fenced);
    }

    #[test]
    fn raising_the_floor_cuts_more() {
        let vs: Vec<Vec<f32>> = [0.0, 0.3, 0.6, 0.9].into_iter().map(unit).collect();
        let refs: Vec<Option<&[f32]>> = vs.iter().map(|v| Some(v.as_slice())).collect();
        let loose = MaxMinParams {
            fixed_threshold: 0.1,
            ..Default::default()
        };
        let strict = MaxMinParams {
            fixed_threshold: 0.99,
            ..Default::default()
        };
        assert_eq!(group(&refs, &loose, |_, _| true), vec![0]);
        // The first pair is scaled by init_constant (1.5 x 0.955 > 0.99), later ones are not.
        assert_eq!(group(&refs, &strict, |_, _| true), vec![0, 2]);
    }
}
