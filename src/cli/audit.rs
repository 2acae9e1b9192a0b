//! `chunkscope audit`: per-file and total figures, the worst chunks, a CI gate on tails.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use serde_json::json;

use chunkscope_core::engine::{Chunking, Engine};
use chunkscope_core::stats::Stats;
use chunkscope_core::window::Window;

use super::knobs::Knobs;
use super::prepare::prepare;

/// Per-file and total figures: chunks, chunks over the window, embed-token percentiles, tokens
/// never embedded. Exit 1 with --fail-on-tail when any chunk overflows the window.
#[derive(Args)]
pub struct AuditArgs {
    /// The corpus folder (optional with --store, where it is the store's source folder).
    corpus: Option<PathBuf>,
    #[command(flatten)]
    knobs: Knobs,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Exit with status 1 (and list the worst chunks) when any chunk overflows the window.
    #[arg(long)]
    fail_on_tail: bool,
}

pub fn run(a: AuditArgs) -> Result<ExitCode> {
    let mut out = super::out();
    let (over, window) = match super::store::wanted(&a.knobs, a.corpus.as_deref())? {
        Some(config) => {
            let opened = super::store::open(config)?;
            let check = opened.vector_check()?;
            (opened.write_audit(&check, a.json, &mut out)?, opened.window)
        }
        None => {
            let (_, engine, window, chunking) = prepare(&super::corpus_arg(&a.corpus)?, &a.knobs)?;
            (
                audit(&engine, &chunking, &window, a.json, &mut out)?,
                window,
            )
        }
    };
    out.flush().ok();
    if a.fail_on_tail && over {
        let what = if window.rejects {
            "are rejected by the server: longer than"
        } else {
            "overflow"
        };
        eprintln!(
            "chunkscope: chunks {what} the {}-token window (--fail-on-tail)",
            window.tokens
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct FileAudit<'a> {
    file: &'a str,
    #[serde(flatten)]
    stats: Stats,
}

#[derive(Serialize)]
struct Worst<'a> {
    file: &'a str,
    index: usize,
    embed_tokens: usize,
    tail_tokens: usize,
}

/// The audit: the stats pane's figures per file and in total. Returns whether any chunk overflows.
fn audit(
    engine: &Engine,
    chunking: &Chunking,
    window: &Window,
    as_json: bool,
    out: &mut dyn Write,
) -> Result<bool> {
    let audit = Audit::of(engine, chunking, window);
    if as_json {
        audit.write_json(out)?;
    } else {
        audit.write_table(out)?;
    }
    Ok(audit.total.over_window > 0)
}

/// One chunking's figures at one window.
struct Audit<'a> {
    engine: &'a Engine,
    chunking: &'a Chunking,
    window: &'a Window,
    files: Vec<FileAudit<'a>>,
    total: Stats,
    /// The ten chunks with the most tokens past the window.
    worst: Vec<Worst<'a>>,
}

impl<'a> Audit<'a> {
    fn of(engine: &'a Engine, chunking: &'a Chunking, window: &'a Window) -> Audit<'a> {
        let specials = engine.specials();
        let files = chunking
            .files
            .iter()
            .map(|f| FileAudit {
                file: &engine.corpus.docs[f.doc].path,
                stats: Stats::of(f.chunks.iter(), window.tokens, specials),
            })
            .collect();
        let worst = chunking
            .worst_chunks(engine, window.tokens)
            .into_iter()
            .take(10)
            .map(|w| Worst {
                file: &engine.corpus.docs[chunking.files[w.file_pos].doc].path,
                index: w.index,
                embed_tokens: w.embed_tokens,
                tail_tokens: w.tail_tokens,
            })
            .collect();
        Audit {
            engine,
            chunking,
            window,
            files,
            total: chunking.stats(window.tokens, specials),
            worst,
        }
    }

    fn write_json(&self, out: &mut dyn Write) -> Result<()> {
        let (engine, window, total) = (self.engine, self.window, &self.total);
        let v = json!({
            "model": engine.model.id,
            "pooling": engine.model.modules.describe(),
            "document_prompt": engine.model.modules.document_prompt(),
            "query_prompt": engine.model.modules.query_prompt(),
            "window": window.tokens,
            "window_source": window.source,
            // With a server that refuses long inputs, chunks over the window get no vector at
            // all (rejected) instead of a tail.
            "rejected": if window.rejects { total.over_window } else { 0 },
            "settings": self.chunking.settings.label(),
            "total": total,
            "files": self.files,
            "worst": self.worst,
            "skipped": engine.corpus.skipped,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        Ok(())
    }

    fn write_table(&self, out: &mut dyn Write) -> Result<()> {
        let (engine, window, total) = (self.engine, self.window, &self.total);
        let modules = &engine.model.modules;
        writeln!(
            out,
            "model {} ({})  window {} ({})  {}",
            engine.model.short_name(),
            modules.describe(),
            window.tokens,
            window.source,
            self.chunking.settings.label()
        )?;
        if !modules.document_prompt().is_empty() {
            writeln!(
                out,
                "document prompt {:?} (counted in every chunk's window), query prompt {:?}",
                modules.document_prompt(),
                modules.query_prompt()
            )?;
        }
        // The name column as wide as the longest path, so every row's figures line up.
        let width = self
            .files
            .iter()
            .map(|f| f.file.chars().count())
            .fold(40, usize::max);
        writeln!(
            out,
            "{:<width$} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8}",
            "file", "chunks", "over", "max", "median", "p95", "unseen"
        )?;
        for f in &self.files {
            writeln!(out, "{}", stats_row(f.file, &f.stats, width))?;
        }
        writeln!(out, "{}", stats_row("TOTAL", total, width))?;
        if window.rejects {
            writeln!(
                out,
                "{} of {} chunks ({:.1} %) are longer than the server accepts: rejected, never embedded at all.",
                total.over_window,
                total.chunks,
                total.over_percent(),
            )?;
        } else {
            writeln!(
                out,
                "{} of {} chunks ({:.1} %) overflow the window; {} embed tokens are never embedded.",
                total.over_window,
                total.chunks,
                total.over_percent(),
                total.never_embedded_tokens
            )?;
        }
        self.write_notes(out)
    }

    /// Files skipped or read lossily, and the worst chunks.
    fn write_notes(&self, out: &mut dyn Write) -> Result<()> {
        let corpus = &self.engine.corpus;
        for s in &corpus.skipped {
            writeln!(out, "skipped {}: {}", s.path, s.reason)?;
        }
        for d in corpus.docs.iter().filter(|d| d.lossy) {
            writeln!(out, "note {}: invalid UTF-8 replaced by U+FFFD", d.path)?;
        }
        if !self.worst.is_empty() {
            writeln!(
                out,
                "worst chunks (embed tokens incl. specials, tokens past the window):"
            )?;
            for w in &self.worst {
                writeln!(
                    out,
                    "  {} #{}  {} tokens, {} unseen",
                    w.file, w.index, w.embed_tokens, w.tail_tokens
                )?;
            }
        }
        Ok(())
    }
}

/// One row of the table: a file's figures, or the total's, the name padded to `width`.
fn stats_row(name: &str, s: &Stats, width: usize) -> String {
    format!(
        "{:<width$} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8}",
        name,
        s.chunks,
        s.over_window,
        s.max_embed_tokens,
        s.median_embed_tokens,
        s.p95_embed_tokens,
        s.never_embedded_tokens
    )
}
