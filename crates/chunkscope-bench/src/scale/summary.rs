//! The summary table of `chunkscope-bench scale`: each figure, its reference where there is one,
//! and issue 27's target.

use std::io::Write;

use anyhow::Result;

use crate::ann::AnnRow;
use crate::embed::EmbedRow;

use super::{mb, KnobRow, ScaleFigures};

/// The table's rows: figure, ours, reference, target.
#[derive(Default)]
struct Rows(Vec<[String; 4]>);

impl Rows {
    fn add(&mut self, what: String, ours: String, reference: &str, target: &str) {
        self.0
            .push([what, ours, reference.to_string(), target.to_string()]);
    }
}

/// One table: each figure, its reference where there is one, and issue 27's target.
pub(super) fn summary(f: &ScaleFigures, out: &mut dyn Write) -> Result<()> {
    let mut rows = Rows::default();
    corpus_rows(f, &mut rows);
    for k in &f.knobs {
        knob_rows(k, &mut rows);
    }
    for e in &f.embed {
        embed_row(e, &mut rows);
    }
    for a in &f.ann {
        ann_rows(a, &mut rows);
    }
    print(rows.0, out)
}

/// Reading, the first chunking and memory.
fn corpus_rows(f: &ScaleFigures, rows: &mut Rows) {
    let mbs = f.corpus_bytes as f64 / 1e6;
    rows.add(
        format!("read + tokenize ({} files, {mbs:.0} MB)", f.files),
        format!("{:.1} s", f.read_tokenize_s),
        "",
        "",
    );
    rows.add(
        format!("first chunking ({})", f.first_chunking_label),
        format!("{:.1} s", f.first_chunking_s),
        "",
        "",
    );
    rows.add(
        "its search index (BM25)".into(),
        format!("{:.1} s", f.first_index_s),
        "",
        "",
    );
    let per_byte = |mb: Option<u64>| {
        f.bytes_per_byte(mb)
            .map_or(String::new(), |b| format!(" = {b:.1} B/B"))
    };
    let before = format!("before reading: {}", mb(f.rss_base_mb));
    for (what, value, reference, target) in [
        (
            "memory after first chunking + BM25 (RSS)",
            f.rss_chunked_mb,
            before.as_str(),
            "<= 5 B per corpus byte",
        ),
        (
            "peak memory: load + first chunking",
            f.peak_to_first_chunking_mb,
            "",
            "",
        ),
        (
            "peak memory: + every preset's knob",
            f.peak_knobs_mb,
            "",
            "",
        ),
    ] {
        rows.add(
            what.into(),
            format!("{}{}", mb(value), per_byte(value)),
            reference,
            target,
        );
    }
}

/// One preset's knob, on the focused file and on the whole corpus.
fn knob_rows(k: &KnobRow, rows: &mut Rows) {
    rows.add(
        format!("{} knob, focused file on screen p50 / p95 / max", k.preset),
        format!(
            "{:.1} / {:.1} / {:.1} ms",
            k.screen_p50_ms, k.screen_p95_ms, k.screen_max_ms
        ),
        &format!(
            "whole file {:.1} / {:.1} / {:.1} ms",
            k.focus_p50_ms, k.focus_p95_ms, k.focus_max_ms
        ),
        "<= 50 ms",
    );
    rows.add(
        format!("{} knob, whole corpus p50 / p95", k.preset),
        format!("{:.0} / {:.0} ms", k.whole_p50_ms, k.whole_p95_ms),
        "",
        "<= 1000 ms",
    );
}

/// One embedding measurement beside sentence-transformers.
fn embed_row(e: &EmbedRow, rows: &mut Rows) {
    let ratio = |st: Option<f64>, name: &str| {
        st.map_or(String::new(), |s| {
            format!("{name} {s:.0} ({:.2}x)", e.ours_tokens_per_s / s)
        })
    };
    let reference = [
        ratio(e.st_fp32_tokens_per_s, "st fp32"),
        ratio(e.st_bf16_tokens_per_s, "st bf16"),
    ]
    .into_iter()
    .filter(|s| !s.is_empty())
    .collect::<Vec<_>>()
    .join(", ");
    let target = if e.backend.contains("f32") {
        ">= 1.0x st fp32"
    } else if e.backend.contains("bf16") {
        ">= 1.0x st bf16"
    } else {
        ""
    };
    rows.add(
        format!(
            "embed {} tok/s, window {} batch {}",
            e.backend, e.window, e.batch
        ),
        format!("{:.0}", e.ours_tokens_per_s),
        &reference,
        target,
    );
}

/// One ANN size: build, recall and latency beside flat search.
fn ann_rows(a: &AnnRow, rows: &mut Rows) {
    rows.add(
        format!("ANN {} vectors: build", a.vectors),
        format!("{:.1} s ({})", a.build_seconds, mb(a.peak_rss_mb)),
        "",
        "",
    );
    rows.add(
        format!("ANN {} vectors: recall@10", a.vectors),
        format!("{:.3} (ef_search {})", a.recall_at_10, a.ef_search),
        "exact: 1.000",
        "",
    );
    rows.add(
        format!("ANN {} vectors: top-10 p50 / p95", a.vectors),
        format!("{:.2} / {:.2} ms", a.ann_p50_ms, a.ann_p95_ms),
        &format!("flat {:.1} / {:.1} ms", a.flat_p50_ms, a.flat_p95_ms),
        "p50 <= 10 ms at 10^6",
    );
}

/// The rows under a heading, in columns as wide as their widest cell.
fn print(rows: Vec<[String; 4]>, out: &mut dyn Write) -> Result<()> {
    let widths: Vec<usize> = (0..4)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    writeln!(out, "\n== summary (issue 27's targets on the right)")?;
    let head = ["figure", "ours", "reference", "target"];
    for r in std::iter::once(head.map(String::from)).chain(rows) {
        writeln!(
            out,
            "{:<w0$}  {:>w1$}  {:<w2$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            w0 = widths[0].max(6),
            w1 = widths[1].max(4),
            w2 = widths[2].max(9),
        )?;
    }
    Ok(())
}
