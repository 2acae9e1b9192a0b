//! The crate's semantic levels: runs of line breaks for text (the level is the run's number of
//! graphemes), pulldown-cmark's elements for Markdown; and its sections of the text at one level,
//! from a cursor on.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag};

/// Markdown elements as levels, in the crate's order (a soft break is the lowest, an H1 the
/// highest); text levels are the number of line breaks.
const SOFT_BREAK: u32 = 0;
const INLINE: u32 = 1;
const BLOCK: u32 = 2;
const RULE: u32 = 3;
/// H6 .. H1 are 4 .. 9.
const HEADING_H6: u32 = 4;

/// Runs of `\n` and `\r`, each at the level of its grapheme count (`\r\n` is one grapheme).
pub(super) fn text_levels(text: &str) -> Vec<(u32, Range<usize>)> {
    let bytes = text.as_bytes();
    let mut out: Vec<(u32, Range<usize>)> = Vec::new();
    for i in memchr::memchr2_iter(b'\n', b'\r', bytes) {
        let joins_crlf = bytes[i] == b'\n' && i > 0 && bytes[i - 1] == b'\r';
        match out.last_mut() {
            Some((n, run)) if run.end == i => {
                run.end = i + 1;
                if !joins_crlf {
                    *n += 1;
                }
            }
            _ => out.push((1, i..i + 1)),
        }
    }
    out
}

/// pulldown-cmark's events (every extension on) as levels; ends of elements are not levels.
pub(super) fn markdown_levels(text: &str) -> Vec<(u32, Range<usize>)> {
    Parser::new_ext(text, Options::all())
        .into_offset_iter()
        .filter_map(|(event, range)| {
            let level = match event {
                Event::SoftBreak => SOFT_BREAK,
                Event::Text(_)
                | Event::HardBreak
                | Event::Code(_)
                | Event::InlineHtml(_)
                | Event::InlineMath(_)
                | Event::FootnoteReference(_)
                | Event::TaskListMarker(_) => INLINE,
                Event::Html(_) | Event::DisplayMath(_) => BLOCK,
                Event::Rule => RULE,
                Event::End(_) => return None,
                Event::Start(tag) => match tag {
                    Tag::Emphasis
                    | Tag::Strong
                    | Tag::Strikethrough
                    | Tag::Link { .. }
                    | Tag::Image { .. }
                    | Tag::Subscript
                    | Tag::Superscript
                    | Tag::TableCell => INLINE,
                    Tag::Heading { level, .. } => HEADING_H6 + 6 - level as u32,
                    Tag::Paragraph
                    | Tag::CodeBlock(_)
                    | Tag::FootnoteDefinition(_)
                    | Tag::MetadataBlock(_)
                    | Tag::TableHead
                    | Tag::BlockQuote(_)
                    | Tag::TableRow
                    | Tag::Item
                    | Tag::HtmlBlock
                    | Tag::List(_)
                    | Tag::Table(_)
                    | Tag::DefinitionList
                    | Tag::DefinitionListTitle
                    | Tag::DefinitionListDefinition => BLOCK,
                },
            };
            Some((level, range))
        })
        .collect()
}

/// A document's level ranges in the crate's order, with what makes its per-chunk questions
/// cheap: which levels remain after a range, and where each level next occurs.
pub(super) struct Ranges {
    markdown: bool,
    /// (level, start, end), by start, longer first at equal starts.
    items: Vec<(u32, usize, usize)>,
    /// The first range at or after the cursor (the crate's cursor into its ranges).
    at: usize,
    /// The distinct levels, ascending.
    kinds: Vec<u32>,
    /// Per kind, the indices of its ranges.
    places: Vec<Vec<u32>>,
    /// Per index, the kinds present from it on, as bits (when there are at most 64 kinds).
    left: Option<Vec<u64>>,
}

impl Ranges {
    pub(super) fn new(mut ranges: Vec<(u32, Range<usize>)>, markdown: bool) -> Ranges {
        // The crate's order, ties included: the same unstable sort on elements of the same shape.
        ranges.sort_unstable_by(|(_, a), (_, b)| {
            a.start.cmp(&b.start).then_with(|| b.end.cmp(&a.end))
        });
        let items: Vec<(u32, usize, usize)> = ranges
            .into_iter()
            .map(|(l, r)| (l, r.start, r.end))
            .collect();
        let mut kinds: Vec<u32> = items.iter().map(|r| r.0).collect();
        kinds.sort_unstable();
        kinds.dedup();
        let mut places = vec![Vec::new(); kinds.len()];
        for (i, r) in items.iter().enumerate() {
            places[kinds.binary_search(&r.0).unwrap_or(0)].push(i as u32);
        }
        let left = (kinds.len() <= 64).then(|| {
            let mut bits = vec![0u64; items.len() + 1];
            for i in (0..items.len()).rev() {
                bits[i] = bits[i + 1] | 1 << kinds.binary_search(&items[i].0).unwrap_or(0);
            }
            bits
        });
        Ranges {
            markdown,
            items,
            at: 0,
            kinds,
            places,
            left,
        }
    }

    /// Move past the ranges that start before `cursor` (never back).
    pub(super) fn advance(&mut self, cursor: usize) {
        self.at += self.items[self.at..]
            .iter()
            .position(|r| r.1 >= cursor)
            .unwrap_or(self.items.len() - self.at);
    }

    /// The levels of the ranges left, ascending.
    pub(super) fn levels_left(&self) -> Vec<u32> {
        match &self.left {
            Some(bits) => {
                let b = bits[self.at];
                (0..self.kinds.len())
                    .filter(|k| b >> k & 1 == 1)
                    .map(|k| self.kinds[k])
                    .collect()
            }
            None => {
                let mut v: Vec<u32> = self.items[self.at..].iter().map(|r| r.0).collect();
                v.sort_unstable();
                v.dedup();
                v
            }
        }
    }

    /// The sections of `text[cursor..]` at `level` (the cursor is where `advance` was last
    /// called), as document ranges, none empty.
    pub(super) fn sections<'r>(&'r self, text: &'r str, cursor: usize, level: u32) -> Sections<'r> {
        let items = &self.items[self.at..];
        // The crate's first range of the level: the first one at it, or, when that is the very
        // first range left, the last of the ranges at it that share its start.
        let first = self
            .kinds
            .binary_search(&level)
            .ok()
            .and_then(|k| {
                let p = &self.places[k];
                let i = p.partition_point(|&i| (i as usize) < self.at);
                p.get(i).map(|&i| i as usize - self.at)
            })
            .map(|i| {
                let mut j = i;
                if i == 0 {
                    while items
                        .get(j + 1)
                        .is_some_and(|r| r.0 == level && r.1 == items[j].1)
                    {
                        j += 1;
                    }
                }
                (items[j].1, items[j].2)
            });
        Sections {
            text,
            items,
            level,
            markdown: self.markdown,
            first,
            skipping: first.is_some(),
            next: 0,
            pos: cursor,
            pending: None,
            done: false,
        }
    }
}

/// The sections at one level: the text between the level's ranges and the ranges themselves
/// (Markdown: a heading starts its section, a block takes the blank text before it along).
pub(super) struct Sections<'r> {
    text: &'r str,
    items: &'r [(u32, usize, usize)],
    level: u32,
    markdown: bool,
    first: Option<(usize, usize)>,
    skipping: bool,
    next: usize,
    pos: usize,
    pending: Option<(usize, usize)>,
    done: bool,
}

impl Sections<'_> {
    /// The next range at or above the level, past the leading ones that enclose the first range
    /// of the level (or are the same range at it, longer).
    fn next_range(&mut self) -> Option<(u32, usize, usize)> {
        while let Some(&(l, s, e)) = self.items.get(self.next) {
            self.next += 1;
            if l < self.level {
                continue;
            }
            if self.skipping {
                let (fs, fe) = self.first.unwrap_or_default();
                if (l > self.level && s <= fs && fs < e) || (l == self.level && s == fs && e > fe) {
                    continue;
                }
                self.skipping = false;
            }
            return Some((l, s, e));
        }
        None
    }
}

impl Iterator for Sections<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        loop {
            if let Some((s, e)) = self.pending.take() {
                if s < e {
                    return Some((s, e));
                }
                continue;
            }
            if self.done {
                return None;
            }
            let Some((l, s, e)) = self.next_range() else {
                self.done = true;
                self.pending = Some((self.pos, self.text.len()));
                continue;
            };
            if s < self.pos {
                continue;
            }
            let from = self.pos;
            if self.markdown && l >= HEADING_H6 {
                // A heading begins the next section.
                self.pos = s;
                self.pending = Some((from, s));
            } else if self.markdown
                && l == BLOCK
                && self.text[from..s].chars().all(char::is_whitespace)
            {
                self.pos = e;
                self.pending = Some((from, e));
            } else {
                self.pos = e;
                if from < s {
                    self.pending = Some((s, e));
                    return Some((from, s));
                }
                self.pending = Some((s, e));
            }
        }
    }
}
