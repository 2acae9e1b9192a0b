//! `chunkscope bench embed`: our embedder and sentence-transformers on the same texts in one run,
//! printing tokens/s, texts/s and the ratio at each window and batch size, and the cosine between
//! the two implementations' vectors.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::json;

use crate::core::corpus::{Corpus, CorpusRules};
use crate::core::embed::{cosine, Embedder};
use crate::core::model::ModelInfo;

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
    let emb = Embedder::load(info)?;
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
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/st_embed.py");
    let req = json!({
        "model_dir": info.dir,
        "texts": texts,
        "window": window,
        "batch_sizes": batches,
        "repeat": repeat,
    });
    let v = python_json(py, &script, &req, "is sentence-transformers installed?")?;
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

/// `chunkscope bench rechunk`: on a generated corpus of about `megabytes` MB (the example corpus
/// repeated with varied words, written under a temporary directory), the time from a knob change
/// (size, overlap, window) to updated chunks and stats without embedding, and from a file save to
/// its updated chunks.
pub fn rechunk(
    info: &ModelInfo,
    megabytes: usize,
    presses: usize,
    reference: Option<&str>,
    out: &mut dyn Write,
) -> Result<()> {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use crate::core::chunk::{ChunkSettings, Preset};
    use crate::core::engine::Engine;
    use crate::core::search::SearchIndex;
    use crate::core::tokenize::EmbedTokenizer;

    let dir = std::env::temp_dir().join(format!("chunkscope-bench-{}", std::process::id()));
    let (n, written) = generate_corpus(&dir, megabytes)?;
    let tok = Arc::new(EmbedTokenizer::from_file(&info.tokenizer_path())?);
    let t0 = Instant::now();
    let corpus = Corpus::load(&dir, &CorpusRules::default())?;
    let engine = Engine::new(info.clone(), Arc::clone(&tok), corpus)?;
    writeln!(
        out,
        "corpus: {n} files, {:.1} MB, read and tokenized once in {:.2} s",
        written as f64 / 1e6,
        t0.elapsed().as_secs_f64()
    )?;
    let never = AtomicBool::new(false);
    let mut settings = ChunkSettings::default();
    Preset::LangchainTokens.apply(&mut settings);
    let time = |s: &ChunkSettings, window: usize| {
        let t = Instant::now();
        let c = engine.chunk_all(s, &never).expect("not cancelled");
        let _ = c.stats(window, engine.specials());
        t.elapsed().as_secs_f64() * 1000.0
    };
    time(&settings, 128);
    let mut size_ms = Vec::new();
    for i in 0..presses {
        settings.size = if i % 2 == 0 { 270 } else { 240 };
        size_ms.push(time(&settings, 128));
    }
    report(out, "size knob (langchain embed)", size_ms)?;
    let mut ov_ms = Vec::new();
    for i in 0..presses {
        settings.overlap = if i % 2 == 0 { 40 } else { 32 };
        ov_ms.push(time(&settings, 128));
    }
    report(out, "overlap knob", ov_ms)?;
    // A window change recomputes tails from stored offsets: stats only.
    let chunking = engine.chunk_all(&settings, &never).expect("not cancelled");
    let mut win_ms = Vec::new();
    for i in 0..presses {
        let t = Instant::now();
        let _ = chunking.stats(if i % 2 == 0 { 256 } else { 128 }, engine.specials());
        win_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    report(out, "window knob (stats only)", win_ms)?;
    let mut save_ms = Vec::new();
    let victim = engine
        .corpus
        .docs
        .first()
        .map(|d| dir.join(&d.path))
        .context("no files")?;
    let mut prev_chunking = engine.chunk_all(&settings, &never).expect("not cancelled");
    let t = Instant::now();
    let mut index = SearchIndex::build(&engine, &prev_chunking, None, 384)?;
    writeln!(
        out,
        "BM25 index over {} chunks built in {:.0} ms",
        index.len(),
        t.elapsed().as_secs_f64() * 1000.0
    )?;
    let mut prev = engine;
    let mut index_ms = Vec::new();
    for i in 0..presses.min(10) {
        std::fs::write(
            &victim,
            format!("# Saved {i}\n\nThe file was saved again with new text.\n"),
        )?;
        let t = Instant::now();
        let corpus = Corpus::load(&dir, &CorpusRules::default())?;
        let (next, _) = Engine::refreshed(Some(&prev), info.clone(), Arc::clone(&tok), corpus)?;
        let (c, _) = next
            .chunk_all_reusing(&settings, None, Some((&prev, &prev_chunking)), &never)
            .expect("not cancelled");
        let _ = c.stats(128, next.specials());
        save_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        index.update(&next, &c)?;
        index_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        prev = next;
        prev_chunking = c;
    }
    report(out, "file save -> chunks + stats", save_ms)?;
    report(out, "file save -> BM25/vector update", index_ms)?;
    if let Some(py) = reference {
        // semantic-text-splitter on the same files and tokenizer, one full re-chunk per press.
        let sizes: Vec<usize> = (0..presses.min(6))
            .map(|i| if i % 2 == 0 { 270 } else { 240 })
            .collect();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/sts_rechunk.py");
        let req = json!({"dir": dir, "tokenizer_json": info.tokenizer_path(), "sizes": sizes});
        let v = python_json(py, &script, &req, "pip install semantic-text-splitter")?;
        let ms: Vec<f64> = v["millis"]
            .as_array()
            .context("millis")?
            .iter()
            .filter_map(|x| x.as_f64())
            .collect();
        report(out, "semantic-text-splitter size", ms)?;
        writeln!(
            out,
            "(semantic-text-splitter: {} files, re-tokenizes the corpus on every change)",
            v["files"]
        )?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Write a corpus of about `megabytes` MB into `dir` (emptied first): the example corpus copied
/// over and over with words varied per copy, so no two documents are equal. Returns the number
/// of files and bytes written.
fn generate_corpus(dir: &Path, megabytes: usize) -> Result<(usize, usize)> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let seed = Corpus::load(&examples, &CorpusRules::default())?;
    let target = megabytes.max(1) * 1024 * 1024;
    let (mut written, mut n) = (0usize, 0usize);
    while written < target {
        for d in &seed.docs {
            // Vary the words so documents differ (no cache can shortcut them).
            let text = d
                .text
                .replace("the ", &format!("the{} ", n % 97))
                .replace("key", &format!("key{}", n % 13));
            let path = dir.join(format!(
                "d{:03}/{n:05}-{}",
                n / 100,
                d.path.replace('/', "_")
            ));
            std::fs::create_dir_all(path.parent().context("parent")?)?;
            std::fs::write(&path, &text)?;
            written += text.len();
            n += 1;
        }
    }
    Ok((n, written))
}

fn report(out: &mut dyn Write, what: &str, mut ms: Vec<f64>) -> Result<()> {
    if ms.is_empty() {
        writeln!(out, "{what:<32} no samples")?;
        return Ok(());
    }
    ms.sort_by(f64::total_cmp);
    let p = |q: f64| ms[((q * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1];
    writeln!(
        out,
        "{what:<32} n {:>3}  p50 {:>8.1} ms  p95 {:>8.1} ms  max {:>8.1} ms",
        ms.len(),
        p(0.5),
        p(0.95),
        p(1.0)
    )?;
    Ok(())
}

/// `chunkscope bench live`: a file saved on disk to its new text on the workbench's screen,
/// through the real watcher, pipeline, update function, views and event loop, drawn into an
/// in-memory terminal (no embedding worker, so nothing else competes for the cores).
pub fn live(info: &ModelInfo, megabytes: usize, saves: usize, out: &mut dyn Write) -> Result<()> {
    use std::sync::mpsc::channel;
    use std::sync::{Arc, Mutex};

    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use crate::app::keymap::Keymap;
    use crate::app::Model;
    use crate::core::chunk::{ChunkSettings, Preset};
    use crate::core::tokenize::EmbedTokenizer;
    use crate::core::window::WindowSpec;
    use crate::ui::theme::Theme;
    use crate::work::pipeline::{Pipeline, Source};

    let dir = std::env::temp_dir().join(format!("chunkscope-live-{}", std::process::id()));
    let (n, written) = generate_corpus(&dir, megabytes)?;
    writeln!(
        out,
        "corpus: {n} files, {:.1} MB; preset langchain-tokens; {saves} saves",
        written as f64 / 1e6
    )?;
    let tok = Arc::new(EmbedTokenizer::from_file(&info.tokenizer_path())?);
    let (tx, rx) = channel();
    let pipeline = Pipeline::spawn(
        Source {
            corpus: dir.clone(),
            rules: CorpusRules::default(),
            model: info.clone(),
            tok: Arc::clone(&tok),
        },
        tx.clone(),
    );
    let watcher = crate::work::watcher::watch(&dir, tx).map_err(|e| anyhow::anyhow!(e))?;
    let mut settings = ChunkSettings::default();
    Preset::LangchainTokens.apply(&mut settings);
    let mut m = Model::new(
        dir.clone(),
        info.short_name(),
        info.windows,
        tok.specials(),
        settings,
        WindowSpec::Auto,
        Theme::dark(),
        Keymap::default(),
    );
    m.watch = watcher.mode().to_string();
    m.generation = 1;
    pipeline.load(1);
    let mut terminal = Terminal::new(TestBackend::new(140, 40))?;

    // The saver thread writes the selected file once the screen shows the previous save; the
    // loop below notes when the new text first appears on screen.
    let (go_tx, go_rx) = channel::<(usize, std::path::PathBuf)>();
    let saved_at: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let stamp = Arc::clone(&saved_at);
    let saver = std::thread::spawn(move || {
        while let Ok((i, path)) = go_rx.recv() {
            // Let the watcher go quiet after the previous save.
            std::thread::sleep(std::time::Duration::from_millis(400));
            let text = format!("# Saved {i}\n\nsaved-{i}-marker: the file was saved again.\n");
            *stamp.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
            if std::fs::write(&path, text).is_err() {
                return;
            }
        }
    });
    let started = Instant::now();
    let mut ms: Vec<f64> = Vec::new();
    let mut waiting: Option<usize> = None;
    let mut first_screen: Option<f64> = None;
    let screen_text = |b: &ratatui::buffer::Buffer| -> String {
        b.content().iter().map(|c| c.symbol()).collect::<String>()
    };
    crate::tui::event_loop(
        &mut terminal,
        &mut m,
        &rx,
        &pipeline,
        None,
        None,
        |m, buffer| {
            let ready = m.chunking.is_some() && !m.stale();
            match waiting {
                None if ready => {
                    first_screen = Some(started.elapsed().as_secs_f64());
                    let Some(doc) = m
                        .engine
                        .as_ref()
                        .and_then(|e| e.corpus.docs.get(m.selected))
                    else {
                        return true;
                    };
                    let _ = go_tx.send((0, dir.join(&doc.path)));
                    waiting = Some(0);
                }
                Some(i) if screen_text(buffer).contains(&format!("saved-{i}-marker")) => {
                    if let Some(t) = *saved_at.lock().unwrap_or_else(|p| p.into_inner()) {
                        ms.push(t.elapsed().as_secs_f64() * 1000.0);
                    }
                    if i + 1 >= saves {
                        return true;
                    }
                    let path = m
                        .engine
                        .as_ref()
                        .and_then(|e| e.corpus.docs.get(m.selected))
                        .map(|d| dir.join(&d.path));
                    match path {
                        Some(p) => {
                            let _ = go_tx.send((i + 1, p));
                            waiting = Some(i + 1);
                        }
                        None => return true,
                    }
                }
                _ => {}
            }
            started.elapsed().as_secs() > 600
        },
    )?;
    drop(go_tx);
    let _ = saver.join();
    if let Some(s) = first_screen {
        writeln!(
            out,
            "corpus read, tokenized, chunked and on screen in {s:.2} s"
        )?;
    }
    report(out, "file save -> new text on screen", ms)?;
    writeln!(
        out,
        "(includes the watcher's 200 ms quiet period; the rest is re-read, re-tokenize the file, \
         re-chunk (other files keep their chunks), stats and the draw)"
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// `chunkscope bench maxmin`: on a generated corpus, embed every sentence once (timed), then time
/// threshold turns, which re-chunk from the stored sentence vectors.
pub fn maxmin(
    info: &ModelInfo,
    megabytes: usize,
    presses: usize,
    out: &mut dyn Write,
) -> Result<()> {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use crate::core::chunk::{ChunkSettings, Preset};
    use crate::core::engine::Engine;
    use crate::core::sentences::SentenceStore;
    use crate::core::tokenize::EmbedTokenizer;

    let dir = std::env::temp_dir().join(format!("chunkscope-maxmin-{}", std::process::id()));
    let (n, written) = generate_corpus(&dir, megabytes)?;
    let tok = Arc::new(EmbedTokenizer::from_file(&info.tokenizer_path())?);
    let engine = Engine::new(
        info.clone(),
        tok,
        Corpus::load(&dir, &CorpusRules::default())?,
    )?;
    let embedder = Embedder::load(info)?;
    let mut store = SentenceStore::open(&engine, embedder.dim(), false);
    let mut settings = ChunkSettings::default();
    Preset::MaxMin.apply(&mut settings);
    let t = Instant::now();
    let missing = store.missing(&engine, &settings);
    let found = t.elapsed().as_secs_f64();
    let t = Instant::now();
    store.fill(&embedder, &missing, 64, |_, _| true);
    writeln!(
        out,
        "corpus: {n} files, {:.1} MB; {} distinct sentences found in {:.2} s, embedded once in {:.1} s",
        written as f64 / 1e6,
        missing.len(),
        found,
        t.elapsed().as_secs_f64()
    )?;
    let never = AtomicBool::new(false);
    let mut ms = Vec::new();
    for i in 0..presses {
        settings.maxmin.fixed_threshold = if i % 2 == 0 { 0.55 } else { 0.6 };
        let t = Instant::now();
        let c = engine
            .chunk_all_with(&settings, Some(&store), &never)
            .context("cancelled")?;
        let _ = c.stats(128, engine.specials());
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    report(out, "threshold turn -> chunks + stats", ms)?;
    let mut seg = Vec::new();
    for _ in 0..presses.min(5) {
        let t = Instant::now();
        let ids: Vec<usize> = (0..engine.corpus.docs.len()).collect();
        let _ = crate::core::engine::parallel_map(&ids, |&d| {
            crate::core::chunk::maxmin::sentences(&engine.view(d), settings.unit, settings.size)
                .len()
        });
        seg.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    report(out, "segmentation alone (done once)", seg)?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Run a reference script with `req` as JSON on stdin and parse its JSON output.
fn python_json(
    py: &str,
    script: &Path,
    req: &serde_json::Value,
    hint: &str,
) -> Result<serde_json::Value> {
    let mut child = Command::new(py)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("running {py} {}", script.display()))?;
    child
        .stdin
        .take()
        .context("stdin")?
        .write_all(req.to_string().as_bytes())?;
    let o = child.wait_with_output()?;
    if !o.status.success() {
        bail!("{py} {}: failed ({}); {hint}", script.display(), o.status);
    }
    Ok(serde_json::from_slice(&o.stdout)?)
}

/// `chunkscope bench search`: exact top-10 over flat normalised vectors at growing sizes, to say
/// where a flat index stops being fine for an interactive query.
pub fn search(sizes: &[usize], out: &mut dyn Write) -> Result<()> {
    use crate::core::index::VectorIndex;
    let dim = 384;
    // A small deterministic generator: no dependency, same vectors every run.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let mut unit = |n: usize| -> Vec<f32> {
        let v: Vec<f32> = (0..n).map(|_| next()).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    };
    writeln!(
        out,
        "{:>9} {:>12} {:>12} {:>10}",
        "vectors", "top-10 p50", "top-10 max", "memory"
    )?;
    for &n in sizes {
        let mut ix = VectorIndex::new(dim);
        for i in 0..n {
            ix.push(i as u64, &unit(dim));
        }
        let mut times: Vec<f64> = (0..20)
            .map(|_| {
                let q = unit(dim);
                let t = Instant::now();
                let hits = ix.search(&q, 10);
                assert_eq!(hits.len(), 10.min(n));
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        times.sort_by(f64::total_cmp);
        writeln!(
            out,
            "{n:>9} {:>9.2} ms {:>9.2} ms {:>7.0} MB",
            times[times.len() / 2],
            times[times.len() - 1],
            (n * dim * 4) as f64 / 1e6
        )?;
    }
    Ok(())
}
