//! `chunkscope-bench embed`: our embedder and sentence-transformers on the same texts in one run,
//! printing tokens/s, texts/s and the ratio at each window and batch size, and the cosine between
//! the two implementations' vectors.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::json;

use chunkscope_core::corpus::{Corpus, CorpusRules};
use chunkscope_core::embed::{cosine, BackendChoice, EmbedSpec, Embedder};
use chunkscope_core::model::ModelInfo;

use crate::common::{python_json, ST_EMBED};

pub struct BenchArgs<'a> {
    pub corpus: &'a Path,
    pub texts: usize,
    pub windows: Vec<usize>,
    pub batches: Vec<usize>,
    /// A Python with sentence-transformers installed; None runs ours only.
    pub reference: Option<String>,
    pub repeat: usize,
    /// Join paragraphs into texts of at least this many characters (0: paragraphs as they are),
    /// so that every text fills the window.
    pub min_chars: usize,
    /// An embedding server to time with 1, 2, 4 and 8 requests in flight, and the model name
    /// it serves.
    pub endpoint: Option<(String, String)>,
    /// Local backends to time, each in its own table.
    pub backends: Vec<BackendChoice>,
}

/// Paragraphs of the corpus (blank-line separated, at least 40 characters), joined until each has
/// `min_chars` characters, cycled to `n`.
pub fn bench_texts(corpus: &Path, n: usize, min_chars: usize) -> Result<Vec<String>> {
    let c = Corpus::load(corpus, &CorpusRules::default())?;
    let paras: Vec<String> = c
        .docs
        .iter()
        .flat_map(|d| {
            d.text
                .split("\n\n")
                .map(str::trim)
                .filter(|p| p.chars().count() >= 40)
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .collect();
    if paras.is_empty() {
        bail!("{}: no paragraphs to embed", corpus.display());
    }
    let mut joined: Vec<String> = Vec::new();
    let mut cur = String::new();
    for p in paras.iter().cycle().take(paras.len() * 2) {
        if !cur.is_empty() {
            cur.push_str("\n\n");
        }
        cur.push_str(p);
        if cur.chars().count() >= min_chars {
            joined.push(std::mem::take(&mut cur));
        }
    }
    let paras = joined;
    Ok(paras.iter().cycle().take(n).cloned().collect())
}

pub fn run(info: &ModelInfo, args: &BenchArgs, out: &mut dyn Write) -> Result<()> {
    let mut first = None;
    for &backend in &args.backends {
        let spec = EmbedSpec {
            backend,
            ..Default::default()
        };
        let emb = Embedder::open(info, &spec)?;
        writeln!(out, "== backend {}", emb.backend_name())?;
        run_backend(&emb, info, args, out)?;
        writeln!(
            out,
            "peak resident memory so far: {} MB",
            peak_rss_mb().map_or("?".into(), |m| m.to_string())
        )?;
        first.get_or_insert(emb);
    }
    if let (Some((url, model)), Some(emb)) = (&args.endpoint, &first) {
        let texts = bench_texts(args.corpus, args.texts, args.min_chars)?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        server(emb, &refs, url, model, args, out)?;
    }
    Ok(())
}

/// The process's peak resident set (VmHWM), in MB, where /proc says.
fn peak_rss_mb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

fn run_backend(
    emb: &Embedder,
    info: &ModelInfo,
    args: &BenchArgs,
    out: &mut dyn Write,
) -> Result<()> {
    let texts = bench_texts(args.corpus, args.texts, args.min_chars)?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    writeln!(
        out,
        "embedding benchmark: {} texts from {}, {} threads (ours), model {}",
        texts.len(),
        args.corpus.display(),
        rayon::current_num_threads(),
        info.id
    )?;
    writeln!(
        out,
        "{:>6} {:>5} {:>8} | {:>10} {:>8} | {:>10} {:>8} | {:>6}",
        "window", "batch", "tokens", "ours tok/s", "texts/s", "st tok/s", "texts/s", "ratio"
    )?;
    for &window in &args.windows {
        let tokens: usize = refs.iter().map(|t| emb.ids(t, window).len()).sum();
        // One untimed pass warms caches and the thread pool.
        emb.embed(&refs[..refs.len().min(16)], window);
        let reference = match &args.reference {
            Some(py) => Some(st_reference(
                py,
                info,
                &refs,
                window,
                &args.batches,
                args.repeat,
            )?),
            None => None,
        };
        let ours_vectors = emb.embed(&refs, window);
        if let Some(r) = &reference {
            let cos: Vec<f32> = ours_vectors
                .iter()
                .zip(&r.vectors)
                .map(|(a, b)| cosine(a, b))
                .collect();
            let min = cos.iter().copied().fold(f32::INFINITY, f32::min);
            let mean = cos.iter().sum::<f32>() / cos.len().max(1) as f32;
            writeln!(out, "window {window}: cosine to sentence-transformers min {min:.6} mean {mean:.6} over {} texts", cos.len())?;
        }
        for &b in &args.batches {
            let mut best = f64::INFINITY;
            for _ in 0..args.repeat.max(1) {
                let t0 = Instant::now();
                for batch in refs.chunks(b.max(1)) {
                    emb.embed(batch, window);
                }
                best = best.min(t0.elapsed().as_secs_f64());
            }
            let ours_tps = tokens as f64 / best;
            let ours_xps = refs.len() as f64 / best;
            let (st_tps, st_xps, ratio) = match reference.as_ref().and_then(|r| r.timings.get(&b)) {
                Some(&secs) => {
                    let tps = tokens as f64 / secs;
                    (
                        format!("{tps:.0}"),
                        format!("{:.1}", refs.len() as f64 / secs),
                        format!("{:.2}", ours_tps / tps),
                    )
                }
                None => ("-".into(), "-".into(), "-".into()),
            };
            writeln!(
                out,
                "{window:>6} {b:>5} {tokens:>8} | {ours_tps:>10.0} {ours_xps:>8.1} | {st_tps:>10} {st_xps:>8} | {ratio:>6}"
            )?;
        }
    }
    if let Some(r) = &args.reference {
        writeln!(out, "reference: {r} (sentence-transformers, torch CPU)")?;
    }
    Ok(())
}

/// The same texts through an embedding server with 1, 2, 4 and 8 requests in flight (batches
/// of 32), beside the local backend at batch 32; tokens are counted at the largest window asked
/// (the server's own truncation is its own).
fn server(
    emb: &Embedder,
    refs: &[&str],
    url: &str,
    model: &str,
    args: &BenchArgs,
    out: &mut dyn Write,
) -> Result<()> {
    use chunkscope_core::embed::remote::{Remote, RemoteConfig};
    let window = args.windows.iter().copied().max().unwrap_or(256);
    let tokens: usize = refs.iter().map(|t| emb.ids(t, window).len()).sum();
    let local = {
        let t0 = Instant::now();
        for batch in refs.chunks(32) {
            emb.embed(batch, window);
        }
        t0.elapsed().as_secs_f64()
    };
    writeln!(
        out,
        "server {url} ({model}), {} texts, {tokens} tokens at window {window}, batches of 32",
        refs.len()
    )?;
    writeln!(
        out,
        "{:>9} | {:>10} {:>8} | {:>10}",
        "in flight", "tok/s", "texts/s", "vs local"
    )?;
    writeln!(
        out,
        "{:>9} | {:>10.0} {:>8.1} | {:>10}",
        "local",
        tokens as f64 / local,
        refs.len() as f64 / local,
        "1.00"
    )?;
    for in_flight in [1, 2, 4, 8] {
        let mut cfg = RemoteConfig::new(url, model);
        cfg.in_flight = in_flight;
        cfg.batch = 32;
        let remote = Remote::connect(cfg).map_err(|e| anyhow::anyhow!("{e}"))?;
        let t0 = Instant::now();
        let mut got = 0;
        remote
            .embed(refs, |ids, _| {
                got += ids.len();
                true
            })
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let secs = t0.elapsed().as_secs_f64();
        anyhow::ensure!(
            got == refs.len(),
            "the server answered {got} of {}",
            refs.len()
        );
        writeln!(
            out,
            "{in_flight:>9} | {:>10.0} {:>8.1} | {:>10.2}",
            tokens as f64 / secs,
            refs.len() as f64 / secs,
            local / secs
        )?;
    }
    Ok(())
}

struct Reference {
    vectors: Vec<Vec<f32>>,
    timings: std::collections::HashMap<usize, f64>,
}

fn st_reference(
    py: &str,
    info: &ModelInfo,
    texts: &[&str],
    window: usize,
    batches: &[usize],
    repeat: usize,
) -> Result<Reference> {
    let req = json!({
        "model_dir": info.dir,
        "texts": texts,
        "window": window,
        "batch_sizes": batches,
        "repeat": repeat,
    });
    let v = python_json(py, &ST_EMBED, &req, "is sentence-transformers installed?")?;
    let vectors = v["vectors"]
        .as_array()
        .context("no vectors")?
        .iter()
        .map(|r| {
            r.as_array()
                .map(|a| a.iter().map(|x| x.as_f64().unwrap_or(0.0) as f32).collect())
                .unwrap_or_default()
        })
        .collect();
    let timings = v["timings"]
        .as_object()
        .context("no timings")?
        .iter()
        .filter_map(|(k, s)| Some((k.parse().ok()?, s.as_f64()?)))
        .collect();
    Ok(Reference { vectors, timings })
}
