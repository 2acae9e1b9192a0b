//! Haystack's `DocumentSplitter(split_by="word")` (haystack-ai 3.4), reproduced chunk for chunk:
//! the text is split on every single space `" "` (only U+0020: newlines and tabs stay inside a
//! unit), the space kept at the end of the unit it closes; windows of `length` units advance by
//! `length - overlap` units (more_itertools.windowed: the last window may be short); a window's
//! units are joined verbatim (nothing is stripped). A window shorter than `threshold` units is
//! appended to the previous chunk (its units past the overlap); with overlap, a trailing window
//! that adds no new text is dropped; an empty window is dropped; an empty document has no chunks.
//! Sizes count units ("words"), whatever the unit knob says; the unit only changes what the panes
//! measure.

use super::{Chunk, Chunker, DocView};

pub struct Haystack {
    /// `split_length`, in words.
    pub length: usize,
    /// `split_overlap`, in words.
    pub overlap: usize,
    /// `split_threshold`, in words (0 in the preset, Haystack's default).
    pub threshold: usize,
}

impl Chunker for Haystack {
    fn chunk(&self, doc: &DocView) -> Vec<Chunk> {
        split(doc.text, self.length, self.overlap, self.threshold)
    }
}

/// `str.split(" ")` with the space put back on every unit but the last: byte ranges.
fn units(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    for (i, _) in text.match_indices(' ') {
        out.push((from, i + 1));
        from = i + 1;
    }
    out.push((from, text.len()));
    out
}

fn split(text: &str, length: usize, overlap: usize, threshold: usize) -> Vec<Chunk> {
    if text.is_empty() || length == 0 || overlap >= length {
        return Vec::new();
    }
    let units = units(text);
    let n = units.len();
    let step = length - overlap;
    // more_itertools.windowed(units, length, step=step): the number of windows it yields.
    let windows = if n < length {
        1
    } else {
        let pad = if step >= length { length - 1 } else { step - 1 };
        1 + (n - length + pad) / step
    };
    let mut out: Vec<Chunk> = Vec::new();
    let mut covered = 0usize;
    for k in 0..windows {
        let first = k * step;
        let last = (first + length).min(n);
        let cur = &units[first..last];
        let (start, end) = (cur[0].0, cur[cur.len() - 1].1);
        // A trailing window whose units past the covered ones are all empty adds nothing.
        let new_from = first.max(covered).min(last);
        let adds = units[new_from..last].iter().any(|u| u.1 > u.0);
        if overlap > 0 && !out.is_empty() && !adds {
            continue;
        }
        covered = covered.max(last);
        if cur.len() < threshold && !out.is_empty() {
            // The units past the overlap join the previous chunk (they follow it in the text).
            if overlap < cur.len() {
                let from = cur[overlap].0;
                let prev = out.last_mut().unwrap();
                if prev.text.is_none() && prev.end == from {
                    prev.end = end;
                } else {
                    let mut t = prev
                        .text
                        .take()
                        .map_or_else(|| text[prev.start..prev.end].to_string(), String::from);
                    t.push_str(&text[from..end]);
                    prev.text = Some(t.into());
                    prev.end = prev.end.max(end);
                }
            }
        } else if end > start {
            out.push(Chunk::slice(start, end));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(t: &str, l: usize, o: usize, th: usize) -> Vec<String> {
        split(t, l, o, th)
            .iter()
            .map(|c| c.text(t).to_string())
            .collect()
    }

    #[test]
    fn words_keep_their_space() {
        assert_eq!(texts("a b c d e", 2, 0, 0), ["a b ", "c d ", "e"]);
        assert_eq!(texts("a b c d e", 3, 1, 0), ["a b c ", "c d e"]);
        assert_eq!(texts("a  b", 2, 0, 0), ["a  ", "b"]);
        assert_eq!(texts("a b ", 2, 0, 0), ["a b "]);
        assert_eq!(texts("a b c d e", 2, 0, 2), ["a b ", "c d e"]);
        assert!(texts("", 2, 0, 0).is_empty());
    }
}
