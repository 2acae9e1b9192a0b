//! `chunkscope-bench scale`: the workbench at a company's corpus size. A generated wiki-like
//! corpus (unique text per file) is read and tokenized, chunked, and every preset's size knob is
//! turned, timed for the focused file alone (the core's one-document chunking) and for the whole
//! corpus (the engine call the pipeline worker makes); memory is read from /proc; then the
//! embedding benchmark (beside sentence-transformers) and the ANN benchmark (beside flat search)
//! run in the same process, and one summary table puts every figure beside its reference and
//! issue 27's target.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};

use chunkscope_core::chunk::{ChunkSettings, Preset, SentenceVectors, Strategy};
use chunkscope_core::corpus::Corpus;
use chunkscope_core::embed::lowp::Precision;
use chunkscope_core::embed::BackendChoice;
use chunkscope_core::engine::{Chunking, Engine};
use chunkscope_core::index::ann::XorShift;
use chunkscope_core::model::ModelInfo;
use chunkscope_core::search::SearchIndex;
use chunkscope_core::stats::Stats;
use chunkscope_core::tokenize::EmbedTokenizer;
use chunkscope_core::window::WindowSpec;

use crate::ann::{AnnArgs, AnnRow};
use crate::common::{
    heap_mb, peak_heap_mb, peak_rss_mb, percentile, reset_peak_heap, reset_peak_rss, rss_mb,
    TempDir, REACH,
};
use crate::embed::{BenchArgs, EmbedRow};

mod corpus;
mod summary;

pub struct ScaleArgs {
    pub megabytes: usize,
    /// Knob presses timed on the whole corpus, per preset.
    pub presses: usize,
    /// Knob presses timed on the focused file alone, per preset.
    pub focus_presses: usize,
    /// The folder with seeds/ and data/xquad/ (None: the examples alone).
    pub shared: Option<PathBuf>,
    pub seed: u64,
    pub skip_embed: bool,
    /// A Python with sentence-transformers, timed beside our embedder.
    pub reference: Option<String>,
    pub precisions: Vec<Precision>,
    /// Vector counts for the ANN benchmark; empty skips it.
    pub ann_sizes: Vec<usize>,
    /// The presets whose knobs are turned (`Preset::ALL` unless narrowed).
    pub presets: Vec<Preset>,
    /// A new or empty folder the corpus is generated into and left in (None: a temporary one).
    pub keep_corpus: Option<PathBuf>,
    /// A folder measured as it is instead of a generated corpus (None: generate one).
    pub corpus: Option<PathBuf>,
}

/// One preset's knob: the size turned between its own value and one press up.
#[derive(Debug, Clone)]
pub struct KnobRow {
    pub preset: &'static str,
    pub label: String,
    /// Chunks of the whole corpus at the preset's own size.
    pub chunks: usize,
    /// Switching to the preset: the whole corpus chunked and measured.
    pub switch_ms: f64,
    /// The focused file to its chunks on screen: its first chunks where the workbench sends them
    /// ahead of the rest of a large file, else the whole file.
    pub screen_p50_ms: f64,
    pub screen_p95_ms: f64,
    pub screen_max_ms: f64,
    /// The focused file chunked whole.
    pub focus_p50_ms: f64,
    pub focus_p95_ms: f64,
    pub focus_max_ms: f64,
    pub whole_p50_ms: f64,
    pub whole_p95_ms: f64,
    /// The peak resident set while this preset's knob was turned, and the resident set after.
    pub peak_mb: Option<u64>,
    pub rss_after_mb: Option<u64>,
    /// The same two counted on the heap (what the program holds, not what the allocator keeps).
    pub heap_peak_mb: u64,
    pub heap_after_mb: u64,
    /// Moving the search index (BM25) to the switched-to chunking, as the embedding worker does
    /// while the old chunking is still held.
    pub index_ms: f64,
}

/// Every figure of one run.
#[derive(Debug, Clone, Default)]
pub struct ScaleFigures {
    pub files: usize,
    pub corpus_bytes: usize,
    pub read_tokenize_s: f64,
    pub first_chunking_s: f64,
    pub first_chunking_label: String,
    /// The search index (BM25) over the first chunking.
    pub first_index_s: f64,
    /// Resident memory before the corpus is read (the process and the tokenizer), after reading
    /// and tokenizing, and after the first chunking; the peak through those and through the knobs.
    pub rss_base_mb: Option<u64>,
    pub rss_loaded_mb: Option<u64>,
    pub rss_chunked_mb: Option<u64>,
    pub peak_to_first_chunking_mb: Option<u64>,
    pub peak_knobs_mb: Option<u64>,
    pub knobs: Vec<KnobRow>,
    pub embed: Vec<EmbedRow>,
    pub ann: Vec<AnnRow>,
}

impl ScaleFigures {
    /// Memory beyond the process and tokenizer, per byte of corpus text.
    fn bytes_per_byte(&self, mb: Option<u64>) -> Option<f64> {
        let (base, now) = (self.rss_base_mb?, mb?);
        Some(now.saturating_sub(base) as f64 * 1024.0 * 1024.0 / self.corpus_bytes.max(1) as f64)
    }
}

/// Max-Min reads sentence vectors; embedding every sentence of a 100 MB corpus takes the best
/// part of an hour (it is timed by `chunkscope-bench maxmin`, and the worker's own timer leaves
/// it out too). Here each sentence looks up one of a fixed set of unit vectors by a hash of its
/// text: the chunker does the same work per sentence, and the vectors are alike enough (cosine
/// about 0.6, Max-Min's default threshold) that it both joins and cuts.
struct HashedVectors {
    dim: usize,
    table: Vec<f32>,
}

impl HashedVectors {
    const COUNT: usize = 4096;

    fn new(dim: usize, seed: u64) -> HashedVectors {
        let mut rng = XorShift::new(seed);
        let common: Vec<f32> = unit((0..dim).map(|_| rng.normal()).collect());
        let table = (0..Self::COUNT)
            .flat_map(|_| {
                let noise = unit((0..dim).map(|_| rng.normal()).collect());
                unit(
                    common
                        .iter()
                        .zip(&noise)
                        .map(|(c, n)| c + 0.8 * n)
                        .collect(),
                )
            })
            .collect();
        HashedVectors { dim, table }
    }
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v
        .iter()
        .map(|x| x * x)
        .sum::<f32>()
        .sqrt()
        .max(f32::MIN_POSITIVE);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

impl SentenceVectors for HashedVectors {
    fn vector(&self, sentence: &str) -> Option<&[f32]> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        sentence.hash(&mut h);
        let i = (h.finish() % Self::COUNT as u64) as usize;
        self.table.get(i * self.dim..(i + 1) * self.dim)
    }
}

/// The size one press of `+` leads to from `size` (the workbench's step: an eighth); a preset
/// whose size is automatic (0) is turned to an explicit 256.
fn pressed(size: usize) -> usize {
    if size == 0 {
        256
    } else {
        size + (size / 8).max(1)
    }
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// The whole corpus chunked and measured as the pipeline worker does a knob turn (the previous
/// chunking offered for reuse, as the worker keeps it), then the stats the panes show.
fn chunk_whole(
    engine: &Engine,
    settings: &ChunkSettings,
    vectors: Option<&dyn SentenceVectors>,
    prev: Option<&Chunking>,
    window: usize,
) -> Result<(Chunking, Stats, f64)> {
    let never = AtomicBool::new(false);
    let t = Instant::now();
    let (c, _) = engine
        .chunk_all_reusing(settings, vectors, prev.map(|p| (engine, p)), &never)
        .context("chunking cancelled")?;
    let stats = c.stats(window, engine.specials());
    Ok((c, stats, ms_since(t)))
}

/// The files focused in turn: the largest of each extension (the slowest to re-chunk, and plain
/// text takes other paths than Markdown), then files drawn at random, `n` in all; and how many
/// of them are the largest.
fn focus_files(engine: &Engine, n: usize, seed: u64) -> (Vec<usize>, usize) {
    let docs = &engine.corpus.docs;
    let mut by_ext: std::collections::BTreeMap<&str, usize> = Default::default();
    for (i, d) in docs.iter().enumerate() {
        let ext = d.path.rsplit_once('.').map_or("", |(_, e)| e);
        let best = by_ext.entry(ext).or_insert(i);
        if d.text.len() > docs[*best].text.len() {
            *best = i;
        }
    }
    let mut files: Vec<usize> = by_ext.into_values().collect();
    let largest = files.len();
    let mut rng = XorShift::new(seed);
    while files.len() < n.max(1) && !docs.is_empty() {
        files.push((rng.next_u64() % docs.len() as u64) as usize);
    }
    (files, largest)
}

/// Turn every preset's size knob: `focus_presses` on one file alone each (`focus` in turn),
/// `presses` on the whole corpus, for each of `args.presets` (every preset by default, so new
/// ones are measured too).
fn knobs(
    engine: &Engine,
    focus: &[usize],
    window: usize,
    args: &ScaleArgs,
    mut prev: Chunking,
    mut index: SearchIndex,
    out: &mut dyn Write,
) -> Result<Vec<KnobRow>> {
    let vectors = HashedVectors::new(384, args.seed);
    let mut rows = Vec::new();
    for &preset in &args.presets {
        let mut s = ChunkSettings::default();
        preset.apply(&mut s);
        if let Err(e) = s.validate() {
            writeln!(out, "{:<18} not measured: {e}", preset.name())?;
            continue;
        }
        let v: Option<&dyn SentenceVectors> =
            (s.strategy == Strategy::MaxMin).then_some(&vectors as &dyn SentenceVectors);
        let own = s.size;
        // Each row's peak is its own; the run's peak is the largest of them (see chunking).
        reset_peak_rss();
        reset_peak_heap();
        let (c, stats, switch_ms) = chunk_whole(engine, &s, v, Some(&prev), window)?;
        // The workbench's search index follows the switch once the old chunking is let go (the
        // embedding worker drops it before the build).
        prev = c;
        let t = Instant::now();
        index.update(engine, &prev)?;
        let index_ms = ms_since(t);
        let (mut screen_ms, mut focus_ms) = time_focused(engine, focus, &s, v, args, window);
        let mut whole_ms = Vec::new();
        for i in 0..args.presses.max(1) {
            s.size = if i % 2 == 0 { pressed(own) } else { own };
            let (c, _, ms) = chunk_whole(engine, &s, v, Some(&prev), window)?;
            prev = c;
            whole_ms.push(ms);
        }
        s.size = own;
        let peak_mb = peak_rss_mb();
        let rss_after_mb = rss_mb();
        let (heap_peak_mb, heap_after_mb) = (peak_heap_mb(), heap_mb());
        let row = KnobRow {
            preset: preset.name(),
            label: s.label(),
            chunks: stats.chunks,
            switch_ms,
            screen_p50_ms: percentile(&mut screen_ms, 0.5),
            screen_p95_ms: percentile(&mut screen_ms, 0.95),
            screen_max_ms: percentile(&mut screen_ms, 1.0),
            focus_p50_ms: percentile(&mut focus_ms, 0.5),
            focus_p95_ms: percentile(&mut focus_ms, 0.95),
            focus_max_ms: percentile(&mut focus_ms, 1.0),
            whole_p50_ms: percentile(&mut whole_ms, 0.5),
            whole_p95_ms: percentile(&mut whole_ms, 0.95),
            peak_mb,
            rss_after_mb,
            heap_peak_mb,
            heap_after_mb,
            index_ms,
        };
        writeln!(
            out,
            "{:<18} {:>9} {:>10.0} {:>8.0} | {:>8.2} {:>8.2} | {:>8.2} {:>8.2} {:>8.2} | {:>9.0} {:>9.0} | {:>7} {:>7} | {:>7} {:>7}   {}",
            row.preset,
            row.chunks,
            row.switch_ms,
            row.index_ms,
            row.screen_p50_ms,
            row.screen_p95_ms,
            row.focus_p50_ms,
            row.focus_p95_ms,
            row.focus_max_ms,
            row.whole_p50_ms,
            row.whole_p95_ms,
            row.peak_mb.map_or("?".into(), |m| m.to_string()),
            row.rss_after_mb.map_or("?".into(), |m| m.to_string()),
            row.heap_peak_mb,
            row.heap_after_mb,
            row.label
        )?;
        out.flush()?;
        rows.push(row);
    }
    Ok(rows)
}

/// `presses` size turns (its own size, then one press up, alternately) on one file alone, `focus`
/// in turn: the times to its chunks on screen (as the pipeline sends them: a large file's first
/// chunks where its splitter can stop early, else the whole file) and to the whole file with its
/// stats.
fn time_focused(
    engine: &Engine,
    focus: &[usize],
    s: &ChunkSettings,
    v: Option<&dyn SentenceVectors>,
    args: &ScaleArgs,
    window: usize,
) -> (Vec<f64>, Vec<f64>) {
    let (own, mut s) = (s.size, s.clone());
    let (mut screen_ms, mut focus_ms) = (Vec::new(), Vec::new());
    for i in 0..args.focus_presses.max(1) {
        s.size = if i % 2 == 0 { pressed(own) } else { own };
        let d = focus[i % focus.len()];
        let t = Instant::now();
        let head = engine
            .chunk_doc_head(d, &s, v, REACH)
            .filter(|(_, whole)| !whole);
        let head_ms = head.map(|_| ms_since(t));
        let t = Instant::now();
        let f = engine.chunk_doc_with(d, &s, v);
        let _ = Stats::of(f.chunks.iter(), window, engine.specials());
        let whole_ms = ms_since(t);
        focus_ms.push(whole_ms);
        screen_ms.push(head_ms.unwrap_or(whole_ms));
    }
    (screen_ms, focus_ms)
}

fn mb(v: Option<u64>) -> String {
    v.map_or("?".into(), |m| format!("{m} MB"))
}

/// The corpus, read, tokenized and chunked, and every preset's knob: the part of the run that
/// needs the corpus (it is dropped before the embedding and ANN parts).
fn chunking(info: &ModelInfo, args: &ScaleArgs, out: &mut dyn Write) -> Result<ScaleFigures> {
    let tmp = TempDir::new("scale");
    let (dir, rules) = corpus::folder(args, &tmp, out)?;
    let mut f = ScaleFigures::default();
    let tok = Arc::new(EmbedTokenizer::from_file(&info.tokenizer_path())?);
    let window = info.windows.resolve(WindowSpec::Auto).tokens;
    f.rss_base_mb = rss_mb();
    reset_peak_rss();
    let t = Instant::now();
    let corpus = Corpus::load(&dir, &rules)?;
    let engine = Engine::new(info.clone(), tok, corpus)?;
    f.read_tokenize_s = t.elapsed().as_secs_f64();
    f.rss_loaded_mb = rss_mb();
    corpus::loaded(&engine, args, &dir, &mut f, out)?;
    let settings = ChunkSettings::default();
    f.first_chunking_label = settings.label();
    let (first, stats, ms) = chunk_whole(&engine, &settings, None, None, window)?;
    f.first_chunking_s = ms / 1000.0;
    let chunked_heap = heap_mb();
    // The workbench's BM25 index over the first chunking (vectors are not part of this run).
    let t = Instant::now();
    let index = SearchIndex::build(&engine, &first, None, 384)?;
    f.first_index_s = t.elapsed().as_secs_f64();
    f.rss_chunked_mb = rss_mb();
    writeln!(
        out,
        "heap after the first chunking: {chunked_heap} MB, {} MB with its search index (BM25, \
         built in {:.2} s; peak {} MB)",
        heap_mb(),
        f.first_index_s,
        peak_heap_mb()
    )?;
    f.peak_to_first_chunking_mb = peak_rss_mb();
    writeln!(
        out,
        "read + tokenized {} documents in {:.2} s; first chunking ({}) {:.2} s, {} chunks; \
         window {window}; {} threads",
        engine.corpus.docs.len(),
        f.read_tokenize_s,
        f.first_chunking_label,
        f.first_chunking_s,
        stats.chunks,
        rayon::current_num_threads()
    )?;
    let (focus, largest) = focus_files(&engine, args.focus_presses, args.seed);
    let largest: Vec<String> = focus[..largest]
        .iter()
        .map(|&d| {
            let doc = &engine.corpus.docs[d];
            format!("{} ({} bytes)", doc.path, doc.text.len())
        })
        .collect();
    writeln!(
        out,
        "knob: size between each preset's own and one press up (+1/8); one file alone per press \
         ({} presses: the largest of each kind, {}, then files drawn at random), to its chunks on \
         screen (scr: a large file's first chunks where its splitter stops early) and whole; whole corpus \
         (chunks + stats), {} presses; maxmin with hashed sentence vectors (embedding not timed)",
        args.focus_presses.max(1),
        largest.join(", "),
        args.presses.max(1)
    )?;
    writeln!(
        out,
        "{:<18} {:>9} {:>10} {:>8} | {:>8} {:>8} | {:>8} {:>8} {:>8} | {:>9} {:>9} | {:>7} {:>7} | {:>7} {:>7}   settings",
        "preset",
        "chunks",
        "switch ms",
        "index ms",
        "scr p50",
        "scr p95",
        "file p50",
        "file p95",
        "file max",
        "whole p50",
        "whole p95",
        "peak MB",
        "rss MB",
        "heap pk",
        "heap"
    )?;
    f.knobs = knobs(&engine, &focus, window, args, first, index, out)?;
    f.peak_knobs_mb = f
        .knobs
        .iter()
        .filter_map(|k| k.peak_mb)
        .chain(f.peak_to_first_chunking_mb)
        .max();
    Ok(f)
}

pub fn scale(info: &ModelInfo, args: &ScaleArgs, out: &mut dyn Write) -> Result<ScaleFigures> {
    let mut f = chunking(info, args, out)?;
    if !args.skip_embed {
        writeln!(
            out,
            "\n== embedding (all precisions beside sentence-transformers)"
        )?;
        let bench = BenchArgs {
            corpus: &crate::common::examples(),
            texts: 256,
            windows: vec![128, 256],
            batches: vec![16],
            reference: args.reference.clone(),
            repeat: 1,
            min_chars: 2000,
            endpoint: None,
            backends: vec![BackendChoice::Native],
            precisions: args.precisions.clone(),
            st_bf16: args.reference.is_some(),
        };
        match crate::embed::run(info, &bench, out) {
            Ok(rows) => f.embed = rows,
            Err(e) => writeln!(out, "embedding not measured: {e:#}")?,
        }
    }
    if !args.ann_sizes.is_empty() {
        writeln!(out, "\n== approximate vector search (HNSW beside flat)")?;
        let d = chunkscope_core::index::AnnParams::default();
        f.ann = crate::ann::ann(
            &AnnArgs {
                sizes: args.ann_sizes.clone(),
                dim: 384,
                queries: 1000,
                flat_queries: 100,
                per_topic: 100,
                params: d,
                islands: false,
                more_ef: Vec::new(),
            },
            out,
        )?;
    }
    summary::summary(&f, out)?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chunkscope_core::corpus::CorpusRules;

    /// The subcommand at its smallest, so it cannot rot: every preset measured on a 1 MB corpus.
    #[test]
    fn scale_runs_every_preset_at_one_megabyte() {
        use chunkscope_core::model::{locate, DEFAULT_MODEL};
        let info = locate(DEFAULT_MODEL, &mut |l| eprintln!("{l}"))
            .unwrap_or_else(|e| panic!("the real model is needed for this test: {e:#}"));
        let kept = TempDir::new("scale-kept");
        let args = ScaleArgs {
            megabytes: 1,
            presses: 2,
            focus_presses: 2,
            shared: None,
            seed: 1,
            skip_embed: true,
            reference: None,
            precisions: Vec::new(),
            ann_sizes: Vec::new(),
            presets: Preset::ALL.to_vec(),
            keep_corpus: Some(kept.0.clone()),
            corpus: None,
        };
        let mut out = Vec::new();
        let f = scale(&info, &args, &mut out).expect("scale runs");
        let text = String::from_utf8(out).unwrap();
        assert_eq!(f.knobs.len(), Preset::ALL.len(), "{text}");
        assert!(f.corpus_bytes >= 1024 * 1024);
        assert!(f.knobs.iter().all(|k| k.chunks > 0), "{text}");
        assert!(text.contains("== summary"), "{text}");
        // The corpus stays for the workbench, and a second run never empties a used folder.
        let again = Corpus::load(&kept.0, &CorpusRules::default()).expect("kept corpus");
        assert_eq!(again.docs.len(), f.files);
        let refused = scale(&info, &args, &mut Vec::new()).expect_err("a used folder");
        assert!(format!("{refused:#}").contains("not empty"), "{refused:#}");
        assert!(std::fs::read_dir(&kept.0).unwrap().count() > 0);
        // The same folder measured as a corpus of one's own: read as it is, nothing written.
        let listing = |d: &std::path::Path| -> Vec<_> {
            let mut v: Vec<_> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            v.sort();
            v
        };
        let before = listing(&kept.0);
        let own = ScaleArgs {
            keep_corpus: None,
            corpus: Some(kept.0.clone()),
            presets: vec![Preset::ALL[0]],
            ..args
        };
        let mut out = Vec::new();
        let g = scale(&info, &own, &mut out).expect("scale on a folder");
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("(as it is)"), "{text}");
        assert_eq!(
            (g.files, g.corpus_bytes),
            (f.files, f.corpus_bytes),
            "{text}"
        );
        assert_eq!(listing(&kept.0), before);
        let missing = ScaleArgs {
            corpus: Some(kept.0.join("absent")),
            ..own
        };
        let e = scale(&info, &missing, &mut Vec::new()).expect_err("no folder");
        assert!(format!("{e:#}").contains("not a folder"), "{e:#}");
    }
}
