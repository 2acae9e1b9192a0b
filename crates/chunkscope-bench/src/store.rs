//! Reading a store: a generated JSONL of 100,000 chunks with 384-dimension vectors (and any store
//! URI given) read by `chunkscope_core::store::open`, in chunks/s and MB/s with the peak
//! resident memory, beside Python's `json.loads` over the same lines.

use std::io::Write;
use std::time::Instant;

use anyhow::Result;

use chunkscope_core::store::{self, StoreOptions};

use crate::common::{peak_rss_mb, reset_peak_rss, TempDir};

/// Texts of about 600 characters, varied per chunk (no two equal).
fn text(i: usize) -> String {
    const WORDS: &[&str] = &[
        "rotate",
        "the",
        "signing",
        "keys",
        "every",
        "ninety",
        "days",
        "incident",
        "commander",
        "owns",
        "timeline",
        "refunds",
        "annual",
        "plans",
        "queue",
        "workers",
        "gateway",
        "drain",
    ];
    let mut s = format!("Chunk {i}: ");
    let mut x = i as u64 * 2_654_435_761 + 1;
    while s.len() < 600 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(WORDS[(x % WORDS.len() as u64) as usize]);
        s.push(' ');
    }
    s
}

/// Write `n` chunks as LangChain-style JSONL; returns the bytes written.
fn generate(path: &std::path::Path, n: usize, dim: usize) -> Result<u64> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    for i in 0..n {
        let v: Vec<f32> = (0..dim)
            .map(|j| (((i * 31 + j * 17) % 1000) as f32 / 1000.0) - 0.5)
            .collect();
        let line = serde_json::json!({
            "id": format!("c{i:07}"),
            "page_content": text(i),
            "metadata": {"source": format!("doc{}.md", i / 20), "start_index": (i % 20) * 600},
            "embedding": v,
        });
        writeln!(f, "{line}")?;
    }
    f.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

fn time_open(uri: &str, out: &mut dyn Write) -> Result<()> {
    reset_peak_rss();
    let before = peak_rss_mb().unwrap_or(0);
    let t = Instant::now();
    let s = store::open(uri, &StoreOptions::default(), &mut |_, _| {})?;
    let secs = t.elapsed().as_secs_f64();
    writeln!(
        out,
        "{uri}: {} chunks ({} vectors) in {secs:.2} s = {:.0} chunks/s; peak resident {} MB (before: {before} MB)",
        s.chunks.len(),
        s.vectors(),
        s.chunks.len() as f64 / secs,
        peak_rss_mb().map_or("?".into(), |m| m.to_string())
    )?;
    Ok(())
}

pub fn store(
    chunks: usize,
    dim: usize,
    uris: &[String],
    reference: Option<&str>,
    keep: Option<&std::path::Path>,
    out: &mut dyn Write,
) -> Result<()> {
    let dir = TempDir::new("bench-store");
    std::fs::create_dir_all(&dir.0)?;
    let path = dir.0.join("chunks.jsonl");
    let bytes = generate(&path, chunks, dim)?;
    writeln!(
        out,
        "generated {chunks} chunks x {dim} dimensions: {:.1} MB of JSONL",
        bytes as f64 / 1e6
    )?;
    let uri = format!("jsonl:{}", path.display());
    let t = Instant::now();
    time_open(&uri, out)?;
    let ours = t.elapsed().as_secs_f64();
    writeln!(out, "  = {:.1} MB/s", bytes as f64 / 1e6 / ours)?;
    if let Some(py) = reference {
        let code = "import json,sys,time\nt=time.perf_counter()\nn=0\nfor line in open(sys.argv[1],encoding='utf-8'):\n    json.loads(line); n+=1\nprint(n, time.perf_counter()-t)";
        let o = std::process::Command::new(py)
            .args(["-c", code])
            .arg(&path)
            .output()?;
        let s = String::from_utf8_lossy(&o.stdout);
        if let Some((n, secs)) = s.trim().split_once(' ') {
            let secs: f64 = secs.parse().unwrap_or(f64::NAN);
            writeln!(
                out,
                "reference: Python json.loads over the same {n} lines: {secs:.2} s ({:.1} MB/s); ours {:.2}x",
                bytes as f64 / 1e6 / secs,
                secs / ours
            )?;
        }
    }
    if let Some(k) = keep {
        std::fs::copy(&path, k)?;
    }
    for u in uris {
        time_open(u, out)?;
    }
    Ok(())
}
