//! `chunkscope eval`: recall@k and MRR by where answers sit, every miss explained, and a floor
//! for CI; against relevance judgments (a BEIR folder, a JSONL query log), nDCG@10, MAP@10,
//! recall@k and MRR per retriever at document level.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};

use chunkscope_core::cases::{Cases, JudgedSource};
use chunkscope_core::config::Config;
use chunkscope_core::embed::EmbedSpec;
use chunkscope_core::engine::{Chunking, Engine};
use chunkscope_core::eval::{evaluate_with, Report};
use chunkscope_core::rerank::stage::Stage;
use chunkscope_core::rerank::Reranker;
use chunkscope_core::search::SearchIndex;
use chunkscope_core::window::Window;

use super::knobs::Knobs;
use super::prepare::{chunk, chunk_vectors, engine_for, open_engine, say};

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum Retriever {
    /// BM25 and vector.
    Both,
    Bm25,
    Vector,
    /// BM25 and vector fused by reciprocal rank fusion.
    Hybrid,
    /// BM25, vector and hybrid.
    All,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum EvalFormat {
    Markdown,
    Json,
}

/// Recall@k and MRR of BM25, vectors and their hybrid on evaluation cases, by where the answer sits (inside
/// the window, in the tail, split across chunks, in no chunk) and in its document, with every
/// miss explained. CORPUS may be a SQuAD-format JSON file, which gives corpus and cases, or a
/// BEIR folder (corpus.jsonl, queries.jsonl, qrels/), which gives corpus and judgments: nDCG@10,
/// MAP@10, recall@k and MRR per retriever, a document ranking at its best chunk.
#[derive(Args)]
pub struct EvalArgs {
    /// The corpus folder, BEIR folder or SQuAD JSON (optional with --store, which then needs
    /// --cases or --judgments).
    corpus: Option<PathBuf>,
    /// Cases: TSV (question TAB answer [TAB file]) or SQuAD JSON (default: CORPUS/cases.tsv,
    /// the JSON itself, or a BEIR folder's qrels).
    #[arg(long, conflicts_with = "judgments")]
    cases: Option<PathBuf>,
    /// Relevance judgments: a JSONL query log ({"query": ..., "relevant": [doc ids or paths],
    /// "answer": optional} a line), a BEIR folder or one of its qrels/*.tsv.
    #[arg(long)]
    judgments: Option<PathBuf>,
    /// The BEIR qrels split read (qrels/SPLIT.tsv).
    #[arg(long, default_value = chunkscope_core::judgments::DEFAULT_SPLIT)]
    split: String,
    #[command(flatten)]
    knobs: Knobs,
    /// The k values of recall@k, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,3,5,10")]
    k: Vec<usize>,
    /// The k that misses are explained at and --min-recall checks.
    #[arg(long, default_value_t = 5)]
    at: usize,
    /// Exit 1 when recall@AT of a checked retriever falls below this (0..1).
    #[arg(long)]
    min_recall: Option<f64>,
    /// Which retrievers --min-recall checks.
    #[arg(long, value_enum, default_value_t = Retriever::Both)]
    retriever: Retriever,
    /// Output format.
    #[arg(long, value_enum, default_value_t = EvalFormat::Markdown)]
    format: EvalFormat,
    /// JSON output (the same as --format json).
    #[arg(long)]
    json: bool,
    /// Misses listed in the Markdown report.
    #[arg(long, default_value_t = 20)]
    misses: usize,
}

pub fn run(a: EvalArgs) -> Result<ExitCode> {
    let folder = a.corpus.as_deref().filter(|c| c.is_dir());
    if let Some(config) = super::store::wanted(&a.knobs, folder)? {
        return run_on_store(&a, config);
    }
    let corpus = super::corpus_arg(&a.corpus)?;
    let config = a
        .knobs
        .config(corpus.is_dir().then_some(corpus.as_path()))?;
    let (engine, cases) = open_eval(&corpus, &a, &config, &mut say)?;
    usable(&cases)?;
    let window = super::prepare::window_for(&engine, &config);
    let chunking = chunk(&engine, &config, &mut say)?;
    let ks = chunkscope_core::eval::ks_with(&a.k, a.at);
    let rrf = config.search_rrf_k;
    let reranker = super::query::reranker(&config)?;
    let report = eval(
        (&engine, &chunking, &cases),
        (&window, config.embed_spec()),
        (&ks, a.at, rrf),
        reranker.as_ref(),
        &mut say,
    )?;
    report_and_floor(&a, &report, &cases)
}

/// Cases that can be evaluated: some span case or judged query; else the unusable lines and an
/// error.
fn usable(cases: &Cases) -> Result<()> {
    let judged = cases.judged.as_ref().map_or(0, |j| j.judgments.cases.len());
    if cases.cases.is_empty() && judged == 0 {
        for b in &cases.bad {
            eprintln!("{}:{}: {}", cases.file, b.line, b.reason);
        }
        anyhow::bail!("{}: no usable cases", cases.file);
    }
    Ok(())
}

/// The cases file named by --judgments or --cases, else found in `folder`: a BEIR folder's
/// qrels, else its cases.tsv.
fn cases_path(a: &EvalArgs, folder: Option<&Path>) -> Option<PathBuf> {
    a.judgments.clone().or_else(|| a.cases.clone()).or_else(|| {
        let dir = folder?;
        Some(if chunkscope_core::judgments::is_beir_folder(dir) {
            dir.to_path_buf()
        } else {
            dir.join("cases.tsv")
        })
    })
}

/// The eval pane's cases: `--cases` (a BEIR folder's qrels of `split`), else a BEIR corpus's
/// `qrels/SPLIT.tsv`; `None` leaves the workbench's own default (CORPUS/cases.tsv).
pub fn workbench_cases(corpus: &Path, cases: Option<PathBuf>, split: &str) -> Option<PathBuf> {
    let qrels = |dir: &Path| dir.join("qrels").join(format!("{split}.tsv"));
    match cases {
        Some(c) if chunkscope_core::judgments::is_beir_folder(&c) => Some(qrels(&c)),
        Some(c) => Some(c),
        None => chunkscope_core::judgments::is_beir_folder(corpus).then(|| qrels(corpus)),
    }
}

/// `eval --store`: the cases' answers located in the stored texts (a case's file column names a
/// stored id or a source document), searched on the stored vectors. Judgments name documents:
/// a stored chunk's document is its source (else its id).
fn run_on_store(a: &EvalArgs, config: Config) -> Result<ExitCode> {
    let folder = a.corpus.as_deref().filter(|c| c.is_dir());
    let Some(cases_path) = cases_path(a, folder) else {
        anyhow::bail!(
            "eval --store needs --cases FILE (question TAB answer [TAB file]) or --judgments FILE"
        )
    };
    let opened = super::store::open(config)?;
    let chunks = &opened.store.chunks;
    let in_file = |d: usize, f: &str| {
        chunks[d].id == f
            || chunks[d]
                .source
                .as_deref()
                .is_some_and(|s| s == f || s.strip_suffix(f).is_some_and(|p| p.ends_with('/')))
    };
    let cases = match JudgedSource::of(&cases_path, Some(&a.split)) {
        Some(source) => {
            let doc_ids = chunks
                .iter()
                .map(|c| c.source.clone().unwrap_or_else(|| c.id.clone()))
                .collect();
            Cases::from_judged(&source, &opened.engine.corpus, Some(doc_ids))?
        }
        None => Cases::from_tsv_matching(&cases_path, &opened.engine.corpus, &in_file)?,
    };
    usable(&cases)?;
    let reranker = super::query::reranker(&opened.config)?;
    let (embedder, mut cache, index) = opened.searchable()?;
    let ks = chunkscope_core::eval::ks_with(&a.k, a.at);
    let mut report = evaluate_with(
        (&opened.engine, &opened.chunking, &index),
        &embedder,
        &mut cache,
        &cases,
        opened.window.tokens,
        (&ks, a.at),
        stage(reranker.as_ref()),
    )?;
    let _ = cache.save();
    // The chunks are the store's: no knob made them.
    report.settings = format!("stored chunks of {}", opened.store.uri);
    match a.corpus.as_deref().filter(|c| c.is_dir()) {
        Some(folder) => against_folder(a, &report, folder, &opened, &cases_path),
        None => report_and_floor(a, &report, &cases),
    }
}

/// A source folder with the store: the same cases on the chunks the knobs make from it (B),
/// beside the store's report (A), and the A -> B table; --min-recall checks A.
fn against_folder(
    a: &EvalArgs,
    report: &Report,
    folder: &Path,
    opened: &super::store::Opened,
    cases_path: &Path,
) -> Result<ExitCode> {
    let ks = chunkscope_core::eval::ks_with(&a.k, a.at);
    let config = &opened.config;
    let engine = open_engine(folder, config, &mut say)?;
    let b_cases = Cases::load(cases_path, Some(&a.split), &engine.corpus)?;
    let chunking = chunk(&engine, config, &mut say)?;
    let reranker = super::query::reranker(config)?;
    let b = eval(
        (&engine, &chunking, &b_cases),
        (&opened.window, config.embed_spec()),
        (&ks, a.at, config.search_rrf_k),
        reranker.as_ref(),
        &mut say,
    )?;
    let mut out = super::out();
    let flips = chunkscope_core::eval::flips(report, &b);
    match format(a) {
        EvalFormat::Json => writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "a": report, "b": b, "flips": flips,
            }))?
        )?,
        EvalFormat::Markdown => {
            writeln!(out, "# A: {}\n", report.settings)?;
            write!(out, "{}", chunkscope_core::eval::markdown(report, a.misses))?;
            writeln!(
                out,
                "\n# B: {} re-chunked, {}\n",
                folder.display(),
                b.settings
            )?;
            write!(out, "{}", chunkscope_core::eval::markdown(&b, a.misses))?;
            writeln!(out, "\n# A -> B at k {}\n", a.at)?;
            write!(out, "{}", a_to_b(report, &b, &flips, a.at))?;
        }
    }
    drop(out);
    // The floor is the real index's: --min-recall checks A.
    check_floor(a, report)
}

/// The A -> B tables: recall@AT of the answer spans with the cases gained and lost, and with
/// judgments every headline measure of each retriever.
fn a_to_b(report: &Report, b: &Report, flips: &chunkscope_core::eval::Flips, at: usize) -> String {
    let mut s = String::new();
    if !report.results.is_empty() || !b.results.is_empty() {
        s.push_str(&format!(
            "| retriever | A recall@{at} | B recall@{at} | gained | lost |\n|---|---|---|---|---|\n"
        ));
        for (name, ra, rb, (gained, lost)) in [
            ("BM25", &report.bm25, &b.bm25, flips.bm25),
            ("vector", &report.vector, &b.vector, flips.vector),
            ("hybrid", &report.hybrid, &b.hybrid, flips.hybrid),
        ]
        .into_iter()
        .chain(match (&report.rerank, &b.rerank) {
            (Some(ra), Some(rb)) => Some(("rerank", ra, rb, flips.rerank)),
            _ => None,
        }) {
            s.push_str(&format!(
                "| {name} | {:.2} | {:.2} | {gained} | {lost} |\n",
                ra.at(at),
                rb.at(at)
            ));
        }
    }
    if let (Some(ja), Some(jb)) = (&report.judged, &b.judged) {
        s.push_str(&format!("\njudged, at document level ({}):\n\n", ja.rule));
        s.push_str(&chunkscope_core::eval::judged::compare_markdown(ja, jb, at));
    }
    s
}

/// Print the report, the unusable case lines, and check --min-recall.
fn report_and_floor(a: &EvalArgs, report: &Report, cases: &Cases) -> Result<ExitCode> {
    let bad = || {
        for b in &cases.bad {
            eprintln!("{}:{}: {}", cases.file, b.line, b.reason);
        }
    };
    let mut out = super::out();
    match format(a) {
        EvalFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(report)?)?,
        EvalFormat::Markdown => {
            write!(out, "{}", chunkscope_core::eval::markdown(report, a.misses))?
        }
    }
    bad();
    check_floor(a, report)
}

/// --format, or JSON with --json.
fn format(a: &EvalArgs) -> EvalFormat {
    if a.json {
        EvalFormat::Json
    } else {
        a.format
    }
}

/// --min-recall: exit 1 when a checked retriever's recall@AT falls below the floor.
fn check_floor(a: &EvalArgs, report: &Report) -> Result<ExitCode> {
    if let Some(floor) = a.min_recall {
        use Retriever::*;
        let r = a.retriever;
        let failed = report.below(
            floor,
            a.at,
            matches!(r, Both | Bm25 | All),
            matches!(r, Both | Vector | All),
            matches!(r, Hybrid | All),
        );
        if !failed.is_empty() {
            eprintln!(
                "chunkscope: {} below --min-recall {floor}",
                failed.join(" and ")
            );
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `chunkscope eval` reads: SQuAD JSON gives corpus and cases; a BEIR folder gives corpus
/// and judgments (its qrels of --split); a directory needs cases (default CORPUS/cases.tsv) or
/// --judgments.
fn open_eval(
    corpus: &Path,
    a: &EvalArgs,
    config: &Config,
    say: &mut dyn FnMut(&str),
) -> Result<(Engine, Cases)> {
    let named = a.judgments.as_deref().or(a.cases.as_deref());
    if corpus.extension().is_some_and(|e| e == "json") {
        let (c, from_json) = Cases::from_squad(corpus)?;
        let engine = engine_for(c, config, say)?;
        let cases = match named {
            Some(p) if p != corpus => Cases::load(p, Some(&a.split), &engine.corpus)?,
            _ => from_json,
        };
        return Ok((engine, cases));
    }
    let engine = open_engine(corpus, config, say)?;
    let path = cases_path(a, Some(corpus)).unwrap_or_else(|| corpus.join("cases.tsv"));
    let cases = Cases::load(&path, Some(&a.split), &engine.corpus)?;
    Ok((engine, cases))
}

/// `chunkscope eval`: the report, and the recall figures a floor is checked against.
fn eval(
    (engine, chunking, cases): (&Engine, &Chunking, &Cases),
    (window, spec): (&Window, EmbedSpec),
    (ks, k, rrf_k): (&[usize], usize, usize),
    reranker: Option<&(Reranker, usize)>,
    say: &mut dyn FnMut(&str),
) -> Result<Report> {
    let (embedder, mut cache, vectors) = chunk_vectors(engine, chunking, window, &spec, say)?;
    let mut index = SearchIndex::build(engine, chunking, Some(&vectors), embedder.dim())?;
    index.rrf_k = rrf_k;
    let report = evaluate_with(
        (engine, chunking, &index),
        &embedder,
        &mut cache,
        cases,
        window.tokens,
        (ks, k),
        stage(reranker),
    )?;
    let _ = cache.save();
    Ok(report)
}

/// The reranker stage of a loaded reranker and its depth.
fn stage(reranker: Option<&(Reranker, usize)>) -> Option<Stage<'_>> {
    reranker.map(|(reranker, candidates)| Stage {
        reranker,
        candidates: *candidates,
    })
}
