//! benbrandt's `text-splitter` (the library behind the Python package semantic-text-splitter),
//! version 0.33.1, reimplemented: `TextSplitter`, and `MarkdownSplitter` for Markdown files, with
//! capacity = `size`, overlap = `overlap` and the crate's default trimming. Chunks are sized by
//! the unit: characters, the embedder's tokenizer (what the crate's `tokenizers` sizer counts: the
//! content tokens of the chunk encoded alone) or cl100k (its `CoreBPE` sizer: `encode_ordinary`),
//! counted from the document's tokens.
//!
//! The crate, for each chunk: finds the highest semantic level (runs of line breaks; Markdown
//! elements) whose first section from the cursor fits, else the highest fallback level (sentence,
//! word, grapheme, char: ICU4X's segmenters); gathers that level's sections while the text they
//! span might still fit; binary-searches the longest prefix of them that fits; and, with overlap,
//! steps the cursor back over the sections that fit the overlap. Its results are kept exactly
//! (tests/props.rs compares with the crate on generated text, tests/parity_splitters.rs with the
//! Python package); what changes is the cost of questions it asks again for every chunk: the
//! levels left and where a level's first range is (an index per document instead of a scan and
//! sort of the rest), and ICU's boundaries (found once per document, `breaks`).
//!
//! Trimming: the crate trims every candidate before sizing it (`Trim::All`; Markdown keeps the
//! indentation when the trimmed chunk holds a line break), trims the chunks it returns, and drops
//! empty ones and those ending where an earlier one ended. The sizes it memoizes are keyed by the
//! untrimmed range, cleared once per chunk; kept so here, key for key.

use std::cmp::Ordering;

use super::{Chunk, Chunker, DocView, StartCounter};
use crate::tokenize::Unit;

mod breaks;
mod levels;

use breaks::{DocBreaks, Fallback};
use levels::Ranges;

pub struct TextSplitterChunker {
    pub unit: Unit,
    pub size: usize,
    pub overlap: usize,
    /// Markdown files go through `MarkdownSplitter`, everything else through `TextSplitter`.
    pub markdown: bool,
}

/// The crate's trimming of a chunk at byte `at`: `Trim::All` (surrounding whitespace) for text;
/// for Markdown, `Trim::PreserveIndentation`: when the trimmed chunk holds a line break, only
/// leading line breaks go at the front (the indentation stays), otherwise as for text.
fn trim(markdown: bool, at: usize, chunk: &str) -> (usize, &str) {
    let kept = if markdown && memchr::memchr2(b'\n', b'\r', chunk.trim().as_bytes()).is_some() {
        chunk.trim_start_matches(['\n', '\r'])
    } else {
        chunk.trim_start()
    };
    (at + chunk.len() - kept.len(), kept.trim_end())
}

/// The unit's count of a trimmed candidate, memoized by key as the crate memoizes it.
struct Sizes<'a> {
    doc: &'a DocView<'a>,
    unit: Unit,
    markdown: bool,
    known: Vec<((usize, usize), usize)>,
    /// Counts from the chunk's start: its sizes are all asked from there.
    counter: StartCounter<'a>,
}

impl Sizes<'_> {
    /// The size of `text[from..to]`, remembered under `key..key + (to - from)` (the crate keys
    /// one question by a different start than the text's; see `gather`).
    fn of(&mut self, key: usize, from: usize, to: usize) -> usize {
        let k = (key, key + (to - from));
        if let Some(&(_, n)) = self.known.iter().find(|(kk, _)| *kk == k) {
            return n;
        }
        let (s, kept) = trim(self.markdown, from, &self.doc.text[from..to]);
        let n = self.counter.count(self.unit, s, s + kept.len());
        self.known.push((k, n));
        n
    }

    /// The size of `text[from..to]` under its own key.
    fn at(&mut self, from: usize, to: usize) -> usize {
        self.of(from, from, to)
    }
}

/// One document being split: the crate's iterator state.
struct Run<'a> {
    text: &'a str,
    size: usize,
    overlap: usize,
    sizes: Sizes<'a>,
    ranges: Ranges,
    /// Each fallback level's boundaries, by `Fallback as usize` (Char keeps none).
    breaks: [DocBreaks<'a>; 4],
    cursor: usize,
    /// The sections gathered for the next chunk, as document ranges.
    sections: Vec<(usize, usize)>,
    /// The longest chunk so far, in bytes.
    longest: Option<usize>,
}

/// Where a candidate section stands against the capacity.
fn fits(size: usize, capacity: usize) -> Ordering {
    size.cmp(&capacity)
}

/// Whether a first section of `len` bytes at `cursor` fits: sized whole, or at boundaries of a
/// lower level from eight times the capacity in bytes on, at doubling steps, stopping as soon as
/// a prefix is past the capacity by a quarter (the crate's probe).
fn probe(
    sizes: &mut Sizes,
    capacity: usize,
    cursor: usize,
    len: usize,
    bounds: &mut dyn Iterator<Item = usize>,
) -> Ordering {
    let end = cursor + len;
    let probe_max = capacity.saturating_add((capacity / 4).max(1));
    let probe_start = cursor
        .saturating_add(capacity.saturating_mul(8).max(1))
        .min(end);
    if probe_start == end {
        return fits(sizes.at(cursor, end), capacity);
    }
    let mut step: usize = 1;
    let mut bounds = bounds;
    let mut next = Iterator::find(&mut bounds, |&b| b > cursor && b >= probe_start);
    while let Some(b) = next {
        if b > end {
            break;
        }
        let size = sizes.at(cursor, b);
        if size > probe_max || b == end {
            return fits(size, capacity);
        }
        let skip = step.saturating_sub(1);
        step = step.saturating_mul(2);
        next = bounds.nth(skip);
    }
    fits(sizes.at(cursor, end), capacity)
}

/// The crate's choice among levels, finest first, each with its first section's length and the
/// level below it: consecutive levels whose first sections do not grow count as the higher one;
/// a level fits when its first section is no longer in bytes than the capacity, or, probed, is
/// not too big. Returns the highest fitting level and, where one did not fit, the offset its
/// first section ends at (sections past it are not gathered).
fn choose<L: Copy>(
    mut levels: impl Iterator<Item = (L, usize, Option<L>)>,
    mut too_big: impl FnMut(usize, Option<L>) -> bool,
    cursor: usize,
    capacity: usize,
) -> (Option<L>, Option<usize>) {
    let mut chosen = None;
    let Some(mut held) = levels.next() else {
        return (None, None);
    };
    loop {
        let next = levels.next();
        if let Some(n) = next {
            if held.1 >= n.1 {
                held = n;
                continue;
            }
        }
        let (level, len, lower) = held;
        if len > capacity && too_big(len, lower) {
            return (chosen, Some(cursor + len));
        }
        chosen = Some(level);
        match next {
            Some(n) => held = n,
            None => return (chosen, None),
        }
    }
}

impl<'a> Run<'a> {
    fn fallback(&mut self, level: Fallback) -> &mut DocBreaks<'a> {
        &mut self.breaks[level as usize]
    }

    /// The next chunk's (start, end), untrimmed; the cursor moves past it (less the overlap).
    fn next_chunk(&mut self) -> (usize, usize) {
        self.ranges.advance(self.cursor);
        let low = self.gather();
        let (start, end) = self.search(low);
        self.longest = Some(self.longest.map_or(end - start, |l| l.max(end - start)));
        self.sizes.known.clear();
        self.step_back(end);
        (start, end)
    }

    /// Gather the sections the next chunk is cut from; returns the index the search starts at.
    fn gather(&mut self) -> usize {
        self.sections.clear();
        let (text, cursor, capacity) = (self.text, self.cursor, self.size);
        let levels = self.ranges.levels_left();
        let ranges = &self.ranges;
        let sizes = &mut self.sizes;
        let mut below = None;
        let semantic = levels.iter().filter_map(|&level| {
            let first = ranges.sections(text, cursor, level).next();
            let item = first.map(|(s, e)| (level, e - s, below));
            below = Some(level);
            item
        });
        let (level, mut max_offset) = choose(
            semantic,
            |len, lower| {
                let end = cursor + len;
                let mut bounds = lower
                    .into_iter()
                    .flat_map(|l| ranges.sections(text, cursor, l))
                    .map(|(_, e)| e)
                    .take_while(|&e| e <= end);
                probe(sizes, capacity, cursor, len, &mut bounds).is_gt()
            },
            cursor,
            capacity,
        );
        let fallback = if level.is_none() {
            let firsts: Vec<(Fallback, usize, Option<Fallback>)> = Fallback::ALL
                .into_iter()
                .filter_map(|f| {
                    let end = self.fallback(f).first_end(cursor)?;
                    Some((f, end - cursor, f.probed_at()))
                })
                .collect();
            let (text_breaks, sizes) = (&mut self.breaks, &mut self.sizes);
            let (chosen, fallback_max) = choose(
                firsts.into_iter(),
                |len, lower| {
                    let end = cursor + len;
                    let mut none = std::iter::empty();
                    let mut words;
                    let bounds: &mut dyn Iterator<Item = usize> = match lower {
                        Some(l) => {
                            words = text_breaks[l as usize]
                                .from(cursor)
                                .skip(1)
                                .take_while(move |&e| e <= end);
                            &mut words
                        }
                        None => &mut none,
                    };
                    probe(sizes, capacity, cursor, len, bounds).is_gt()
                },
                cursor,
                capacity,
            );
            max_offset = match (fallback_max, max_offset) {
                (Some(f), Some(m)) => Some(f.min(m)),
                (f, m) => f.or(m),
            };
            Some(chosen.unwrap_or(Fallback::Char))
        } else {
            None
        };

        // Sections of the chosen level, up to `max_offset`, gathered until the text they span is
        // past a target that grows with what has been seen to fit.
        let mut semantic_sections;
        let mut fallback_sections;
        let sections: &mut dyn Iterator<Item = (usize, usize)> = match (fallback, level) {
            (Some(f), _) => {
                let mut from = self.breaks[f as usize].from(cursor).peekable();
                fallback_sections = std::iter::from_fn(move || {
                    let s = from.next()?;
                    let e = *from.peek()?;
                    Some((s, e))
                });
                &mut fallback_sections
            }
            (None, level) => {
                semantic_sections = self.ranges.sections(text, cursor, level.unwrap_or(0));
                &mut semantic_sections
            }
        };
        let mut sections = sections
            .take_while(|&(s, _)| max_offset.is_none_or(|m| s <= m))
            .filter(|&(s, e)| s < e);
        let sizes = &mut self.sizes;
        let out = &mut self.sections;
        let mut low = 0;
        let mut prev_equal: Option<usize> = None;
        let mut target = self.longest.unwrap_or(capacity);
        loop {
            let before = out.len();
            for (s, e) in sections.by_ref() {
                out.push((s, e));
                if e > cursor.saturating_add(target) {
                    break;
                }
            }
            if out.len() == before {
                break;
            }
            let &(last_start, last_end) = out.last().expect("a section was just added");
            if last_end - cursor < target {
                break;
            }
            // Keyed by the last section's start, not the cursor: the crate's key.
            let size = sizes.of(last_start, cursor, last_end);
            let fit = fits(size, capacity);
            if fit.is_le() {
                let spanned = last_end - cursor;
                let per = spanned.div_ceil(size.max(1));
                let room = (capacity - size.max(1).min(capacity)).max(1);
                target = spanned
                    .saturating_add(room.saturating_mul(per))
                    .saturating_add(spanned.div_ceil(10));
            }
            match fit {
                Ordering::Less => low = out.len().saturating_sub(1),
                Ordering::Equal => {
                    if prev_equal.is_some_and(|p| p < size) {
                        break;
                    }
                    prev_equal = Some(size);
                }
                Ordering::Greater => break,
            }
        }
        low
    }

    /// The longest run of gathered sections from the cursor that fits (the first section alone
    /// if none does), extended over following sections that do not grow it.
    fn search(&mut self, mut low: usize) -> (usize, usize) {
        let (start, capacity) = (self.cursor, self.size);
        let mut end = start;
        let mut equal_found = false;
        if self.sections.is_empty() {
            // Never so (the rest of the text is a section); where the crate would index none.
            return (start, self.text.len());
        }
        let mut high = self.sections.len() - 1;
        let mut best: Option<(usize, usize)> = None;
        while low <= high {
            let mid = low + (high - low) / 2;
            let section_end = self.sections[mid].1;
            let size = self.sizes.at(start, section_end);
            let fit = fits(size, capacity);
            match fit {
                Ordering::Less => {
                    if section_end > end {
                        end = section_end;
                        best = Some((mid, size));
                    }
                }
                Ordering::Equal => {
                    if section_end < end || !equal_found {
                        end = section_end;
                        best = Some((mid, size));
                    }
                    equal_found = true;
                }
                Ordering::Greater => {
                    if mid == 0 && start == end {
                        end = section_end;
                        best = Some((mid, size));
                    }
                }
            }
            if fit.is_lt() {
                low = mid + 1;
            } else if mid > 0 {
                high = mid - 1;
            } else {
                break;
            }
        }
        if let Some((index, size)) = best {
            for i in index + 1..self.sections.len() {
                let section_end = self.sections[i].1;
                if self.sizes.at(start, section_end) > size {
                    break;
                }
                end = end.max(section_end);
            }
        }
        (start, end)
    }

    /// The cursor after a chunk ending at `end`: back to the earliest gathered section start
    /// from which the text up to `end` fits the overlap (the crate's binary search).
    fn step_back(&mut self, end: usize) {
        if self.overlap == 0 || self.sections.is_empty() {
            self.cursor = end;
            return;
        }
        let mut start = end;
        let mut low = 0;
        let mut high = match self.sections.binary_search_by_key(&end, |s| s.1) {
            Ok(i) | Err(i) => i.min(self.sections.len().saturating_sub(1)),
        };
        while low <= high {
            let mid = low + (high - low) / 2;
            let offset = self.sections[mid].0;
            let fit = fits(self.sizes.at(offset, end), self.overlap);
            if fit.is_le() && offset < start && offset > self.cursor {
                start = offset;
            }
            if fit.is_lt() && mid > 0 {
                high = mid - 1;
            } else {
                low = mid + 1;
            }
        }
        self.cursor = start;
    }
}

impl Chunker for TextSplitterChunker {
    fn chunk(&self, doc: &DocView) -> Vec<Chunk> {
        self.chunk_up_to(doc, usize::MAX).0
    }

    fn chunk_first(&self, doc: &DocView, n: usize) -> Option<(Vec<Chunk>, bool)> {
        Some(self.chunk_up_to(doc, n))
    }
}

impl TextSplitterChunker {
    /// The document's chunks, stopping after the first `limit` (the splitter walks the text once
    /// from the start, so these are the whole chunking's first `limit`), and whether they are
    /// all of them.
    fn chunk_up_to(&self, doc: &DocView, limit: usize) -> (Vec<Chunk>, bool) {
        let text = doc.text;
        let levels = if self.markdown {
            levels::markdown_levels(text)
        } else {
            levels::text_levels(text)
        };
        // Sentence boundaries do not change with the knobs: the whole text's, kept with the
        // document, are read on from any cursor among them (`DocBreaks::known`).
        let sentences = doc
            .memo
            .map(|m| m.icu_sentences(|| breaks::whole(text, Fallback::Sentence)));
        let known = |f: Fallback| match (f, &sentences) {
            (Fallback::Sentence, Some(s)) => &s[..],
            _ => &[],
        };
        let mut run = Run {
            text,
            size: self.size.max(1),
            // Settings are validated (overlap < size) before a chunker is made; 0 otherwise.
            overlap: if self.overlap < self.size.max(1) {
                self.overlap
            } else {
                0
            },
            sizes: Sizes {
                doc,
                unit: self.unit,
                markdown: self.markdown,
                known: Vec::new(),
                counter: StartCounter::new(doc),
            },
            ranges: Ranges::new(levels, self.markdown),
            breaks: Fallback::ALL.map(|f| DocBreaks::new(text, f, known(f))),
            cursor: 0,
            sections: Vec::new(),
            longest: None,
        };
        let mut chunks = Vec::new();
        let (mut crate_end, mut last_end) = (0, 0);
        while run.cursor < text.len() && chunks.len() < limit {
            let (s, e) = run.next_chunk();
            // The crate's iterator: no empty chunk, none ending where one already ended
            // (untrimmed, then again after trimming).
            if s == e || e <= crate_end {
                continue;
            }
            crate_end = e;
            let (s, kept) = trim(self.markdown, s, &text[s..e]);
            let e = s + kept.len();
            if kept.is_empty() || e <= last_end {
                continue;
            }
            last_end = e;
            chunks.push(Chunk::slice(s, e));
        }
        let whole = run.cursor >= text.len();
        (chunks, whole)
    }
}
