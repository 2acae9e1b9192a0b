//! The corpus `scale` measures: generated, or a folder of one's own as it is; and what it holds
//! once loaded.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Result};

use chunkscope_core::corpus::CorpusRules;
use chunkscope_core::engine::Engine;

use super::{ScaleArgs, ScaleFigures};
use crate::common::TempDir;

/// The folder to measure and how to walk it: the user's own (`--corpus`, with its
/// workbench.toml's `[corpus]` rules), or a corpus generated into `--keep-corpus` or `tmp`.
pub(super) fn folder(
    args: &ScaleArgs,
    tmp: &TempDir,
    out: &mut dyn Write,
) -> Result<(PathBuf, CorpusRules)> {
    if let Some(dir) = &args.corpus {
        return Ok((dir.clone(), crate::common::own_corpus_rules(dir)?));
    }
    let dir = match &args.keep_corpus {
        Some(keep) => {
            let used = std::fs::read_dir(keep).is_ok_and(|mut d| d.next().is_some());
            if used {
                bail!(
                    "{}: not empty; --keep-corpus wants a new or empty folder",
                    keep.display()
                );
            }
            keep.clone()
        }
        None => tmp.0.clone(),
    };
    let t = Instant::now();
    let made = crate::wiki::generate(&dir, args.megabytes, args.shared.as_deref(), args.seed)?;
    writeln!(
        out,
        "corpus: {} files, {:.1} MB of text, generated in {:.1} s into {} (seed {}; from {}; \
         about a tenth of the words varied per file)",
        made.files,
        made.bytes as f64 / 1e6,
        t.elapsed().as_secs_f64(),
        dir.display(),
        args.seed,
        made.sources
    )?;
    Ok((dir, CorpusRules::default()))
}

/// What was read: the figures' file count and text bytes (the text chunkscope reads, converted
/// documents as text), said for a folder of one's own; then what it holds.
pub(super) fn loaded(
    engine: &Engine,
    args: &ScaleArgs,
    dir: &Path,
    f: &mut ScaleFigures,
    out: &mut dyn Write,
) -> Result<()> {
    f.files = engine.corpus.docs.len();
    f.corpus_bytes = engine.corpus.docs.iter().map(|d| d.text.len()).sum();
    if args.corpus.is_some() {
        writeln!(
            out,
            "corpus: {} files read, {:.1} MB of text, from {} (as it is)",
            f.files,
            f.corpus_bytes as f64 / 1e6,
            dir.display()
        )?;
    }
    if f.corpus_bytes == 0 {
        bail!("{}: no text to chunk", dir.display());
    }
    held_after_load(engine, f.corpus_bytes, f, out)
}

/// What the loaded corpus holds on the heap, by part, in bytes per corpus byte: what the resident
/// memory is made of, beside the allocator's share.
fn held_after_load(
    engine: &Engine,
    corpus_bytes: usize,
    f: &ScaleFigures,
    out: &mut dyn Write,
) -> Result<()> {
    let text: usize = engine.corpus.docs.iter().map(|d| d.text.capacity()).sum();
    let mut parts = [0usize; 2];
    for t in &engine.tokens {
        for (sum, b) in parts.iter_mut().zip(t.heap_bytes()) {
            *sum += b;
        }
    }
    let per = |b: usize| b as f64 / corpus_bytes.max(1) as f64;
    let total = text + parts.iter().sum::<usize>();
    writeln!(
        out,
        "held after load: texts {:.2} B/B, embed tokens {:.2}, cl100k tokens {:.2}; \
         {:.2} B/B in all ({} MB); resident {} MB more than before reading",
        per(text),
        per(parts[0]),
        per(parts[1]),
        per(total),
        total / 1_000_000,
        f.rss_loaded_mb
            .zip(f.rss_base_mb)
            .map_or("?".into(), |(a, b)| a.saturating_sub(b).to_string())
    )?;
    Ok(())
}
