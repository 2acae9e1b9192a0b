//! `chunkscope-bench embed`: our embedder (each backend, each precision) and sentence-transformers
//! (fp32, and bf16 autocast) on the same texts in one run, printing tokens/s, texts/s and the
//! ratios at each window and batch size, the minimum and median cosine of each precision to our
//! f32 vectors and to sentence-transformers' fp32 ones, and each embedder's peak memory.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::json;

use chunkscope_core::corpus::{Corpus, CorpusRules};
use chunkscope_core::embed::lowp::Precision;
use chunkscope_core::embed::{cosine, BackendChoice, EmbedSpec, Embedder};
use chunkscope_core::model::ModelInfo;

use crate::common::{peak_rss_mb, python_json, reset_peak_rss, ST_EMBED};

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
    /// Precisions of the native backend to time (f32 first: the others are compared with it).
    pub precisions: Vec<Precision>,
    /// Also time sentence-transformers under bf16 autocast.
    pub st_bf16: bool,
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

/// One measurement: our tokens/s for a backend and precision at a window and batch size, and
/// sentence-transformers' on the same texts where it ran.
#[derive(Debug, Clone)]
pub struct EmbedRow {
    /// The embedder's own name for its backend and precision (e.g. "native f32").
    pub backend: String,
    pub window: usize,
    pub batch: usize,
    pub ours_tokens_per_s: f64,
    pub st_fp32_tokens_per_s: Option<f64>,
    pub st_bf16_tokens_per_s: Option<f64>,
}

/// Print a table per backend and precision and return its rows.
pub fn run(info: &ModelInfo, args: &BenchArgs, out: &mut dyn Write) -> Result<Vec<EmbedRow>> {
    let mut rows = Vec::new();
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
    // sentence-transformers once per window (fp32, and bf16 autocast when asked), shared by
    // every backend and precision below.
    let mut references = std::collections::HashMap::new();
    if let Some(py) = &args.reference {
        for &window in &args.windows {
            let r = st_reference(py, info, &refs, window, args)?;
            references.insert(window, r);
        }
        writeln!(out, "reference: {py} (sentence-transformers, torch CPU)")?;
    }
    // Our f32 vectors per window: what each reduced precision is compared with.
    let mut ours_f32: std::collections::HashMap<usize, Vec<Vec<f32>>> = Default::default();
    let mut first = None;
    for &backend in &args.backends {
        let precisions: &[Precision] = if backend == BackendChoice::Candle {
            &[Precision::F32]
        } else {
            &args.precisions
        };
        for &precision in precisions {
            let spec = EmbedSpec {
                backend,
                precision,
                ..Default::default()
            };
            // The peak is measured from here: the previous embedder is gone.
            drop(first.take());
            reset_peak_rss();
            let emb = Embedder::open(info, &spec)?;
            writeln!(out, "\n== backend {}", emb.backend_name())?;
            rows.extend(run_backend(
                &emb,
                &refs,
                args,
                &references,
                &mut ours_f32,
                out,
            )?);
            writeln!(
                out,
                "peak resident memory of this embedder (load + runs): {} MB",
                peak_rss_mb().map_or("?".into(), |m| m.to_string())
            )?;
            first = Some(emb);
        }
    }
    if let (Some((url, model)), Some(emb)) = (&args.endpoint, &first) {
        server(emb, &refs, url, model, args, out)?;
    }
    Ok(rows)
}

/// Minimum and median of the cosines between two lists of vectors.
fn cosines(a: &[Vec<f32>], b: &[Vec<f32>]) -> (f32, f32) {
    let mut cos: Vec<f32> = a.iter().zip(b).map(|(x, y)| cosine(x, y)).collect();
    cos.sort_by(f32::total_cmp);
    let min = cos.first().copied().unwrap_or(f32::NAN);
    let median = cos.get(cos.len() / 2).copied().unwrap_or(f32::NAN);
    (min, median)
}

fn run_backend(
    emb: &Embedder,
    refs: &[&str],
    args: &BenchArgs,
    references: &std::collections::HashMap<usize, Reference>,
    ours_f32: &mut std::collections::HashMap<usize, Vec<Vec<f32>>>,
    out: &mut dyn Write,
) -> Result<Vec<EmbedRow>> {
    let mut rows = Vec::new();
    writeln!(
        out,
        "{:>6} {:>5} {:>8} | {:>10} {:>8} | {:>12} {:>6} | {:>12} {:>6}",
        "window",
        "batch",
        "tokens",
        "ours tok/s",
        "texts/s",
        "st fp32 tok/s",
        "ratio",
        "st bf16 tok/s",
        "ratio"
    )?;
    let reduced = emb
        .native_precision()
        .is_some_and(|p| p != chunkscope_core::embed::lowp::Precision::F32);
    for &window in &args.windows {
        let tokens: usize = refs.iter().map(|t| emb.ids(t, window).len()).sum();
        // One untimed pass warms caches and the thread pool.
        emb.embed(&refs[..refs.len().min(16)], window)
            .expect("embed");
        let reference = references.get(&window);
        let vectors = emb.embed(refs, window).expect("embed");
        let mut said = Vec::new();
        if reduced {
            if let Some(f32s) = ours_f32.get(&window) {
                let (min, median) = cosines(&vectors, f32s);
                said.push(format!("to ours f32 min {min:.6} median {median:.6}"));
            }
        } else {
            ours_f32.entry(window).or_insert_with(|| vectors.clone());
        }
        if let Some(r) = reference {
            let (min, median) = cosines(&vectors, &r.vectors);
            said.push(format!("to st fp32 min {min:.6} median {median:.6}"));
            if let Some(b) = &r.bf16 {
                let (min, median) = cosines(&b.vectors, &r.vectors);
                said.push(format!(
                    "(st bf16 to st fp32: min {min:.6} median {median:.6})"
                ));
            }
        }
        if !said.is_empty() {
            writeln!(
                out,
                "window {window}, {} texts: cosine {}",
                vectors.len(),
                said.join(", ")
            )?;
        }
        for &b in &args.batches {
            let mut best = f64::INFINITY;
            for _ in 0..args.repeat.max(1) {
                let t0 = Instant::now();
                for batch in refs.chunks(b.max(1)) {
                    emb.embed(batch, window).expect("embed");
                }
                best = best.min(t0.elapsed().as_secs_f64());
            }
            let ours_tps = tokens as f64 / best;
            let ours_xps = refs.len() as f64 / best;
            let st_tps =
                |t: Option<&Timings>| t.and_then(|t| t.get(&b)).map(|&s| tokens as f64 / s);
            let row = EmbedRow {
                backend: emb.backend_name(),
                window,
                batch: b,
                ours_tokens_per_s: ours_tps,
                st_fp32_tokens_per_s: st_tps(reference.map(|r| &r.timings)),
                st_bf16_tokens_per_s: st_tps(
                    reference.and_then(|r| r.bf16.as_ref()).map(|b| &b.timings),
                ),
            };
            let versus = |tps: Option<f64>| match tps {
                Some(tps) => (format!("{tps:.0}"), format!("{:.2}", ours_tps / tps)),
                None => ("-".into(), "-".into()),
            };
            let (fp32, r32) = versus(row.st_fp32_tokens_per_s);
            let (bf16, r16) = versus(row.st_bf16_tokens_per_s);
            writeln!(
                out,
                "{window:>6} {b:>5} {tokens:>8} | {ours_tps:>10.0} {ours_xps:>8.1} | {fp32:>12} {r32:>6} | {bf16:>12} {r16:>6}"
            )?;
            rows.push(row);
        }
    }
    Ok(rows)
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
            emb.embed(batch, window).expect("embed");
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

type Timings = std::collections::HashMap<usize, f64>;

/// sentence-transformers' vectors and timings for one window.
struct Reference {
    vectors: Vec<Vec<f32>>,
    timings: Timings,
    /// The same under bf16 autocast, when asked.
    bf16: Option<Box<Reference>>,
}

fn st_reference(
    py: &str,
    info: &ModelInfo,
    texts: &[&str],
    window: usize,
    args: &BenchArgs,
) -> Result<Reference> {
    let req = json!({
        "model_dir": info.dir,
        "texts": texts,
        "window": window,
        "batch_sizes": args.batches,
        "repeat": args.repeat,
        "bf16": args.st_bf16,
    });
    let v = python_json(py, &ST_EMBED, &req, "is sentence-transformers installed?")?;
    let read = |vectors: &str, timings: &str| -> Result<Reference> {
        let vectors = v[vectors]
            .as_array()
            .context("no vectors")?
            .iter()
            .map(|r| {
                r.as_array()
                    .map(|a| a.iter().map(|x| x.as_f64().unwrap_or(0.0) as f32).collect())
                    .unwrap_or_default()
            })
            .collect();
        let timings = v[timings]
            .as_object()
            .context("no timings")?
            .iter()
            .filter_map(|(k, s)| Some((k.parse().ok()?, s.as_f64()?)))
            .collect();
        Ok(Reference {
            vectors,
            timings,
            bf16: None,
        })
    };
    let mut r = read("vectors", "timings")?;
    if args.st_bf16 {
        r.bf16 = Some(Box::new(read("vectors_bf16", "timings_bf16")?));
    }
    Ok(r)
}
