//! Structure first, size second: split Markdown at headings, keep each block (paragraph, list,
//! quote, code fence, table) whole while it fits, merge neighbouring blocks of one section up to the
//! size, and only then cut inside a block (paragraphs at lines, sentences, words; code at lines).
//! Every chunk carries its heading path ("Runbook > Rotate keys > Staging"); a table is split by
//! rows, each row written with its column names ("Plan: Annual · Refund: pro rata") so no row loses
//! its header.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::{Chunk, Chunker, DocView, Recursive, StartCounter};
use crate::text::{is_python_space, strip_range};
use crate::tokenize::{count, Unit};

pub struct Markdown {
    pub unit: Unit,
    pub size: usize,
    pub overlap: usize,
}

#[derive(Debug)]
pub(crate) enum Kind {
    Heading {
        level: usize,
        text: String,
    },
    Code,
    Table {
        header: Vec<String>,
        rows: Vec<(usize, usize, Vec<String>)>,
    },
    Text,
}

#[derive(Debug)]
pub(crate) struct Block {
    start: usize,
    end: usize,
    kind: Kind,
}

/// Top-level blocks of `text` with their byte ranges.
fn blocks(text: &str) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut depth = 0usize;
    // Heading text, table cells being collected.
    let mut heading: Option<(usize, String)> = None;
    let mut cell: Option<String> = None;
    let mut row: Vec<String> = Vec::new();
    let mut row_range = (0, 0);
    let options = Options::ENABLE_TABLES | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS;
    for (ev, range) in Parser::new_ext(text, options).into_offset_iter() {
        match ev {
            // Front matter is metadata (see core::metadata), not text to chunk.
            Event::Start(Tag::MetadataBlock(_)) => depth += 1,
            Event::Start(tag) => {
                if depth == 0 {
                    let kind = match &tag {
                        Tag::Heading { level, .. } => {
                            heading = Some((*level as usize, String::new()));
                            Kind::Text
                        }
                        Tag::CodeBlock(_) => Kind::Code,
                        Tag::Table(_) => Kind::Table {
                            header: Vec::new(),
                            rows: Vec::new(),
                        },
                        _ => Kind::Text,
                    };
                    out.push(Block {
                        start: range.start,
                        end: range.end,
                        kind,
                    });
                }
                match tag {
                    Tag::TableCell => cell = Some(String::new()),
                    Tag::TableHead | Tag::TableRow => {
                        row.clear();
                        row_range = (range.start, range.end);
                    }
                    _ => {}
                }
                depth += 1;
            }
            Event::End(tag) => {
                depth = depth.saturating_sub(1);
                match tag {
                    TagEnd::TableCell => {
                        if let Some(c) = cell.take() {
                            row.push(c.trim().to_string());
                        }
                    }
                    TagEnd::TableHead => {
                        if let Some(Block {
                            kind: Kind::Table { header, .. },
                            ..
                        }) = out.last_mut()
                        {
                            *header = std::mem::take(&mut row);
                        }
                    }
                    TagEnd::TableRow => {
                        if let Some(Block {
                            kind: Kind::Table { rows, .. },
                            ..
                        }) = out.last_mut()
                        {
                            rows.push((row_range.0, row_range.1, std::mem::take(&mut row)));
                        }
                    }
                    TagEnd::Heading(_) => {
                        if let (Some((level, t)), Some(b)) = (heading.take(), out.last_mut()) {
                            b.kind = Kind::Heading {
                                level,
                                text: t.trim().to_string(),
                            };
                        }
                    }
                    _ => {}
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(c) = cell.as_mut() {
                    c.push_str(&t);
                } else if let Some((_, h)) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            _ => {}
        }
    }
    out
}

impl Markdown {
    /// True when the length of `a` + "\n" + `b` is the sum of theirs (plus the newline's own
    /// character), so that table rows can be grouped without counting each group again:
    /// characters, and the tokens of a word-local tokenizer (a newline always ends a word and
    /// every word is encoded alone). cl100k may merge the newline with its neighbours.
    fn additive(&self, doc: &DocView) -> bool {
        match self.unit {
            Unit::Chars => true,
            Unit::Embed => doc.tok.is_word_local(),
            Unit::Cl100k => false,
        }
    }

    /// The length of every text in the unit, for an additive unit (see `additive`): the embed
    /// tokens come from one encoding of the texts joined by newlines, each token counted with the
    /// text it starts in (a newline ends every word, so no token spans two texts).
    fn lengths(&self, doc: &DocView, texts: &[&str]) -> Vec<usize> {
        let each = || texts.iter().map(|t| count(self.unit, t, doc.tok)).collect();
        if self.unit != Unit::Embed {
            return each();
        }
        let Ok(spans) = doc.tok.spans(&texts.join("\n")) else {
            return each();
        };
        let mut lens = vec![0; texts.len()];
        let (mut i, mut end) = (0, texts.first().map_or(0, |t| t.len()));
        for t in spans {
            while t.start as usize > end && i + 1 < texts.len() {
                i += 1;
                end += 1 + texts[i].len();
            }
            lens[i] += 1;
        }
        lens
    }

    fn fits(&self, counter: &StartCounter, start: usize, end: usize) -> bool {
        counter.count(self.unit, start, end) <= self.size
    }

    /// Cut one block that does not fit, with the recursive splitter on its own range.
    fn split_block(
        &self,
        doc: &DocView,
        b: &Block,
        heading: &Option<crate::chunk::Heading>,
        out: &mut Vec<Chunk>,
    ) {
        let seps: Vec<String> = match b.kind {
            Kind::Code => vec!["\n".into(), "".into()],
            _ => ["\n\n", "\n", ". ", " ", ""]
                .iter()
                .map(|s| s.to_string())
                .collect(),
        };
        let r = Recursive {
            unit: self.unit,
            size: self.size,
            overlap: self.overlap,
            separators: seps.clone(),
            keep_at_end: true,
        };
        let mut pieces = Vec::new();
        r.split(doc, b.start, b.end, &seps, &mut pieces);
        out.extend(pieces.into_iter().map(|mut c| {
            c.heading = heading.clone();
            c
        }));
    }

    /// Cut a block that does not fit and open its first piece with the heading line at
    /// `heading_start` (the heading's own range ends where the block starts), so the heading does
    /// not stand alone. If the first piece leaves no room for the heading, the block is cut at the
    /// size less the heading's length (when that is at least half the size).
    fn split_after_heading(
        &self,
        doc: &DocView,
        heading_start: usize,
        b: &Block,
        heading: &Option<crate::chunk::Heading>,
        out: &mut Vec<Chunk>,
    ) {
        let mut pieces = Vec::new();
        self.split_block(doc, b, heading, &mut pieces);
        let counter = StartCounter::new(doc);
        let heading_len = counter.count(self.unit, heading_start, b.start);
        let crowded = pieces
            .first()
            .is_some_and(|first| !self.fits(&counter, heading_start, first.end));
        // Cut the whole block again, smaller, so the heading fits beside the first piece; only
        // while that leaves at least half the size (else the heading stands alone).
        if crowded && heading_len * 2 <= self.size {
            let room = self.size - heading_len;
            let narrower = Markdown {
                unit: self.unit,
                size: room,
                overlap: self.overlap.min(room.saturating_sub(1)),
            };
            pieces.clear();
            narrower.split_block(doc, b, heading, &mut pieces);
        }
        match pieces.first_mut() {
            Some(first) if self.fits(&counter, heading_start, first.end) => {
                first.start = heading_start
            }
            // No room beside the heading (a heading as long as the size): it stands alone.
            _ => {
                let (s, e) = strip_range(doc.text, heading_start, b.start, is_python_space);
                if e > s {
                    out.push(Chunk {
                        heading: heading.clone(),
                        ..Chunk::slice(s, e)
                    });
                }
            }
        }
        out.extend(pieces);
    }

    /// Table rows grouped up to the size, each written with its column names. The first group's
    /// range starts at the table, so the header row belongs to it; with `lead`, the start of a
    /// heading line just above the table, the first group opens with that heading.
    #[allow(clippy::too_many_arguments)]
    fn table(
        &self,
        doc: &DocView,
        lead: Option<usize>,
        table_start: usize,
        header: &[String],
        rows: &[(usize, usize, Vec<String>)],
        heading: &Option<crate::chunk::Heading>,
        out: &mut Vec<Chunk>,
    ) {
        let render = |cells: &[String]| -> String {
            cells
                .iter()
                .enumerate()
                .map(|(i, v)| match header.get(i).filter(|h| !h.is_empty()) {
                    Some(h) => format!("{h}: {v}"),
                    None => v.clone(),
                })
                .collect::<Vec<_>>()
                .join(" · ")
        };
        // A group: its range, its text and (where lengths add up) the text's length in the unit.
        let additive = self.additive(doc);
        let lead = lead.map(|h| strip_range(doc.text, h, table_start, is_python_space));
        let lines: Vec<String> = rows.iter().map(|(_, _, cells)| render(cells)).collect();
        // The lead's and every line's length, where lengths add up: one count for the table.
        let lens = additive.then(|| {
            let texts: Vec<&str> = lead
                .map(|(hs, he)| &doc.text[hs..he])
                .into_iter()
                .chain(lines.iter().map(String::as_str))
                .collect();
            self.lengths(doc, &texts)
        });
        let mut lens = lens.into_iter().flatten();
        let mut group: Option<(usize, usize, String, usize)> = lead.map(|(hs, he)| {
            let len = lens.next().unwrap_or(0);
            (hs, table_start, doc.text[hs..he].to_string(), len)
        });
        // The header row's bytes belong to the first group that holds a row.
        let mut header_owned = false;
        for ((s, e, _), line) in rows.iter().zip(lines) {
            let line_len = lens.next();
            if let Some((gs, ge, text, len)) = group.as_mut() {
                let joined = format!("{text}\n{line}");
                let joined_len = match line_len {
                    Some(n) => *len + n + usize::from(self.unit == Unit::Chars),
                    None => count(self.unit, &joined, doc.tok),
                };
                if joined_len <= self.size {
                    *ge = *e;
                    *text = joined;
                    *len = joined_len;
                    header_owned = true;
                    continue;
                }
                out.push(Chunk {
                    start: *gs,
                    end: *ge,
                    text: Some(std::mem::take(text).into()),
                    heading: heading.clone(),
                });
            }
            let start = if !header_owned && out_len_before(out, table_start) {
                table_start
            } else {
                *s
            };
            header_owned = true;
            group = Some((start, *e, line, line_len.unwrap_or(0)));
        }
        if let Some((s, e, text, _)) = group {
            out.push(Chunk {
                start: s,
                end: e,
                text: Some(text.into()),
                heading: heading.clone(),
            });
        }
    }
}

/// True when no chunk emitted so far reaches into the table (so the first group may claim the
/// header row's bytes).
/// A section of a document: from one heading to the next (any level), with its heading path.
/// Text before the first heading is a section without a heading; a document without headings is
/// one section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub start: usize,
    pub end: usize,
    pub heading: Option<crate::chunk::Heading>,
}

/// The sections of `text`, in order, covering it from the first byte to the last.
pub fn sections(text: &str) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    let mut path: Vec<(usize, String)> = Vec::new();
    for b in blocks(text) {
        let Kind::Heading { level, text: h } = &b.kind else {
            continue;
        };
        while path.last().is_some_and(|(l, _)| l >= level) {
            path.pop();
        }
        path.push((*level, h.clone()));
        let heading = path
            .iter()
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join(" > ");
        match out.last_mut() {
            Some(last) => last.end = b.start,
            None if b.start > 0 => out.push(Section {
                start: 0,
                end: b.start,
                heading: None,
            }),
            None => {}
        }
        out.push(Section {
            start: b.start,
            end: text.len(),
            heading: Some(heading.into()),
        });
    }
    if out.is_empty() {
        out.push(Section {
            start: 0,
            end: text.len(),
            heading: None,
        });
    }
    out
}

fn out_len_before(out: &[Chunk], table_start: usize) -> bool {
    out.last().is_none_or(|c| c.end <= table_start)
}

impl Chunker for Markdown {
    fn chunk(&self, doc: &DocView) -> Vec<Chunk> {
        self.chunk_up_to(doc, usize::MAX).0
    }

    fn chunk_first(&self, doc: &DocView, n: usize) -> Option<(Vec<Chunk>, bool)> {
        Some(self.chunk_up_to(doc, n))
    }
}

impl Markdown {
    /// The document's chunks, block after block, stopping at the first block after `limit`
    /// chunks are out (a chunk once out never changes, so these begin the whole chunking), and
    /// whether they are all of them.
    fn chunk_up_to(&self, doc: &DocView, limit: usize) -> (Vec<Chunk>, bool) {
        let mut out = Vec::new();
        let mut path: Vec<(usize, String)> = Vec::new();
        let mut pending: Option<(usize, usize)> = None;
        let mut heading: Option<crate::chunk::Heading> = None;
        let flush = |pending: &mut Option<(usize, usize)>,
                     heading: &Option<crate::chunk::Heading>,
                     out: &mut Vec<Chunk>| {
            if let Some((s, e)) = pending.take() {
                let (s, e) = strip_range(doc.text, s, e, is_python_space);
                if e > s {
                    out.push(Chunk {
                        heading: heading.clone(),
                        ..Chunk::slice(s, e)
                    });
                }
            }
        };
        // True while `pending` holds nothing but the section's heading line.
        let mut heading_only = false;
        // A chunk grows block by block from one start: its size is asked from there each time.
        let counter = StartCounter::new(doc);
        let found = match doc.memo {
            Some(memo) => memo.blocks(|| blocks(doc.text)),
            None => blocks(doc.text).into(),
        };
        for b in found.iter() {
            if out.len() >= limit {
                return (out, false);
            }
            if let Kind::Heading { level, text } = &b.kind {
                // A heading starts a new section: nothing before it shares a chunk with it (a
                // parent heading with no text of its own stays a chunk of its own, so that every
                // chunk carries the path of the section it starts in).
                flush(&mut pending, &heading, &mut out);
                while path.last().is_some_and(|(l, _)| l >= level) {
                    path.pop();
                }
                path.push((*level, text.clone()));
                heading = Some(
                    path.iter()
                        .map(|(_, t)| t.as_str())
                        .collect::<Vec<_>>()
                        .join(" > ")
                        .into(),
                );
            }
            if let Kind::Table { header, rows } = &b.kind {
                let lead = pending.filter(|_| heading_only).map(|p| p.0);
                let alone = self.fits(&counter, b.start, b.end);
                if !alone || lead.is_some_and(|h| !self.fits(&counter, h, b.end)) {
                    if lead.is_some() {
                        pending = None;
                    } else {
                        flush(&mut pending, &heading, &mut out);
                    }
                    self.table(doc, lead, b.start, header, rows, &heading, &mut out);
                    heading_only = false;
                    continue;
                }
            }
            match pending {
                Some((s, _)) if self.fits(&counter, s, b.end) => pending = Some((s, b.end)),
                // A heading followed by a block that must be cut: cut them together, so the
                // heading line opens the first piece instead of standing alone.
                Some((s, _)) if heading_only => {
                    pending = None;
                    self.split_after_heading(doc, s, b, &heading, &mut out);
                }
                _ => {
                    flush(&mut pending, &heading, &mut out);
                    if self.fits(&counter, b.start, b.end) {
                        pending = Some((b.start, b.end));
                    } else {
                        self.split_block(doc, b, &heading, &mut out);
                    }
                }
            }
            heading_only =
                matches!(b.kind, Kind::Heading { .. }) && pending == Some((b.start, b.end));
        }
        flush(&mut pending, &heading, &mut out);
        (out, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_blocks_headings_and_table_rows() {
        let md = "# Title\n\nIntro.\n\n## Refunds\n\n| Plan | Refund |\n|---|---|\n| Annual | pro rata |\n| Monthly | none |\n\n```sh\necho hi\n```\n";
        let b = blocks(md);
        let kinds: Vec<String> = b
            .iter()
            .map(|b| match &b.kind {
                Kind::Heading { level, text } => format!("h{level} {text}"),
                Kind::Code => "code".into(),
                Kind::Table { header, rows } => {
                    format!("table {} cols {} rows", header.len(), rows.len())
                }
                Kind::Text => "text".into(),
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                "h1 Title",
                "text",
                "h2 Refunds",
                "table 2 cols 2 rows",
                "code"
            ]
        );
        if let Kind::Table { rows, .. } = &b[3].kind {
            assert_eq!(&md[rows[0].0..rows[0].1].trim(), &"| Annual | pro rata |");
        }
    }
}
