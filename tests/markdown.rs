//! Structure-first chunking on Markdown: every chunk carries the heading path of its section, no
//! table row is separated from its column names, and no code fence is split while it fits.

mod common;

use chunkscope_core::chunk::{ChunkSettings, Preset};
use chunkscope_core::tokenize::Unit;
use common::{chunk_text, tokenizer};

/// Heading path at each byte offset where a heading line starts, scanning lines outside fences.
fn heading_paths(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut in_fence = false;
    let mut at = 0;
    for line in md.split_inclusive('\n') {
        let t = line.trim_end();
        if t.starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence && t.starts_with('#') {
            let level = t.chars().take_while(|&c| c == '#').count();
            if t[level..].starts_with(' ') {
                while stack.last().is_some_and(|(l, _)| *l >= level) {
                    stack.pop();
                }
                stack.push((level, t[level..].trim().to_string()));
                out.push((
                    at,
                    stack
                        .iter()
                        .map(|(_, s)| s.as_str())
                        .collect::<Vec<_>>()
                        .join(" > "),
                ));
            }
        }
        at += line.len();
    }
    out
}

fn markdown_files() -> Vec<(String, String)> {
    common::varied_texts()
        .into_iter()
        .filter(|(n, _)| n.ends_with(".md"))
        .collect()
}

#[test]
fn chunks_carry_their_section_heading() {
    let mut s = ChunkSettings::default();
    Preset::Markdown.apply(&mut s);
    let mut checked = 0;
    for (name, md) in markdown_files() {
        let paths = heading_paths(&md);
        for (c, _) in chunk_text(&md, &s) {
            let want = paths
                .iter()
                .rev()
                .find(|(at, _)| *at <= c.start)
                .map(|(_, p)| p.clone());
            assert_eq!(
                c.heading.as_deref().cloned(),
                want,
                "{name} chunk at {}",
                c.start
            );
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked}");
}

#[test]
fn table_rows_keep_their_column_names() {
    let mut rows = String::from("# Plans\n\n| Plan | Refund window | Refund |\n|---|---|---|\n");
    for i in 0..40 {
        rows.push_str(&format!(
            "| Plan {i} | {} days | pro rata minus a fee of {i} euros |\n",
            i + 7
        ));
    }
    let mut s = ChunkSettings::default();
    Preset::Markdown.apply(&mut s);
    s.size = 60;
    let chunks = chunk_text(&rows, &s);
    let row_chunks: Vec<&String> = chunks
        .iter()
        .map(|(_, t)| t)
        .filter(|t| t.contains("Plan: Plan"))
        .collect();
    assert!(row_chunks.len() > 3, "the table is split by rows");
    let mut seen = 0;
    for t in &row_chunks {
        // The table's heading opens its first row group.
        for line in t.lines().filter(|l| *l != "# Plans") {
            assert!(
                line.starts_with("Plan: ")
                    && line.contains(" · Refund window: ")
                    && line.contains(" · Refund: "),
                "{line}"
            );
            seen += 1;
        }
        assert!(tokenizer().count(t) <= 60, "row group within the size");
    }
    assert_eq!(seen, 40, "every row once");
    assert!(
        row_chunks[0].starts_with("# Plans\nPlan: Plan 0"),
        "{}",
        row_chunks[0]
    );
    assert!(
        chunks.iter().all(|(_, t)| t.trim() != "# Plans"),
        "no heading stands alone"
    );
}

#[test]
fn code_fences_stay_whole_while_they_fit() {
    let mut s = ChunkSettings::default();
    Preset::Markdown.apply(&mut s);
    for (name, md) in markdown_files() {
        let chunks = chunk_text(&md, &s);
        let mut rest = md.as_str();
        let mut base = 0;
        while let Some(open) = rest.find("```") {
            let after = &rest[open + 3..];
            let Some(close) = after.find("\n```") else {
                break;
            };
            let (fs, fe) = (base + open, base + open + 3 + close + 4);
            let fits = tokenizer().count(&md[fs..fe]) <= s.size;
            let whole = chunks
                .iter()
                .any(|(c, _)| c.text.is_none() && c.start <= fs && fe <= c.end);
            if fits {
                assert!(whole, "{name}: fence at {fs} fits but was split");
            }
            base = fe;
            rest = &md[fe..];
        }
    }
}

#[test]
fn markdown_chunks_fit_the_window_they_are_sized_for() {
    let mut s = ChunkSettings::default();
    Preset::Markdown.apply(&mut s);
    assert_eq!((s.unit, s.size), (Unit::Embed, 120));
    for (name, md) in markdown_files() {
        for (c, t) in chunk_text(&md, &s) {
            assert!(
                tokenizer().count(&t) <= 126,
                "{name} chunk at {} has {} tokens",
                c.start,
                tokenizer().count(&t)
            );
        }
    }
}

/// Found by the property test: a heading opens its table's first row group but cannot take a row;
/// the header row's bytes must still belong to the next group, so no byte is left out.
#[test]
fn a_heading_that_cannot_share_keeps_the_table_header_covered() {
    let md = "# aea\n\n| a | b |\n|---|---|\n| aab | a |\n\n";
    let s = ChunkSettings {
        strategy: chunkscope_core::chunk::Strategy::Markdown,
        unit: chunkscope_core::tokenize::Unit::Chars,
        size: 6,
        overlap: 0,
        ..ChunkSettings::default()
    };
    let chunks = chunk_text(md, &s);
    let header = md.find('|').unwrap();
    assert!(
        chunks
            .iter()
            .any(|(c, _)| c.start <= header && header < c.end),
        "{chunks:?}"
    );
}

/// Row groups are as large as the size allows, in the unit's own count of the joined text: no
/// group could have taken the next group's first row (the grouping adds up row lengths instead of
/// counting every candidate group again, so the sum must equal the count).
#[test]
fn table_row_groups_are_greedy_in_every_unit() {
    let cells = [
        "pro rata",
        "caf\u{e9} na\u{ef}ve",
        "\u{4e2d}\u{6587}\u{5b57}",
        "\u{1f600}\u{1f600} ok",
        "a\u{1f}b",
        "",
        "x,y;z!",
        "[MASK] it's",
        "e\u{301}t\u{e9}",
        "12,345.67 \u{20ac}",
    ];
    let mut md = String::from("## Fees\n\n| Plan | Fee | Note |\n|---|---|---|\n");
    for i in 0..60 {
        md.push_str(&format!(
            "| P{i} | {} | {} |\n",
            cells[i % cells.len()],
            cells[(i * 7 + 3) % cells.len()]
        ));
    }
    let tok = tokenizer();
    for (unit, size) in [(Unit::Embed, 40), (Unit::Embed, 17), (Unit::Chars, 150)] {
        let mut s = ChunkSettings::default();
        Preset::Markdown.apply(&mut s);
        s.unit = unit;
        s.size = size;
        let groups: Vec<String> = chunk_text(&md, &s)
            .into_iter()
            .filter(|(c, _)| c.text.is_some())
            .map(|(_, t)| t)
            .collect();
        assert!(groups.len() > 2, "{unit}: the table is split");
        let len = |t: &str| chunkscope_core::tokenize::count(unit, t, &tok);
        for pair in groups.windows(2) {
            let next = pair[1].lines().next().unwrap();
            // A row alone may exceed the size; a group of several never does.
            if pair[0].lines().count() > 1 {
                assert!(len(&pair[0]) <= size, "{unit}: {:?}", pair[0]);
            }
            assert!(
                len(&format!("{}\n{next}", pair[0])) > size,
                "{unit} {size}: {:?} could take {next:?}",
                pair[0]
            );
        }
    }
}
