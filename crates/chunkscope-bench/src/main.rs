//! chunkscope's benchmarks: each prints its figures, beside its reference where there is one, in
//! one run. Not part of the installed `chunkscope` binary; run from the source tree with
//! `cargo run --release -p chunkscope-bench -- WHAT`.

mod ann;
mod common;
mod convert;
mod embed;
mod focus;
mod live;
mod maxmin;
mod rechunk;
mod scale;
mod search;
mod store;
mod tokenize;
mod wiki;

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use chunkscope_core::chunk::Preset;
use chunkscope_core::model::{self, ModelInfo, DEFAULT_MODEL};

#[global_allocator]
static HEAP: common::Counting = common::Counting;

#[derive(Parser)]
#[command(name = "chunkscope-bench")]
struct Cli {
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand)]
enum What {
    /// Exact top-10 over flat vectors at growing sizes (where a flat index stops being fine).
    Search {
        /// Numbers of vectors, comma separated.
        #[arg(long, value_delimiter = ',', default_value = "10000,100000,1000000")]
        sizes: Vec<usize>,
    },
    /// The approximate (HNSW) vector index beside flat search: build time and peak memory,
    /// recall@10 against exact search, top-10 latency, on generated clustered vectors.
    Ann(AnnOpts),
    /// Knob change to updated chunks and stats (no embedding) on a generated corpus, and a file
    /// save to its updated chunks.
    Rechunk {
        /// Size of the generated corpus in MB.
        #[arg(long, default_value_t = 10)]
        megabytes: usize,
        /// Knob presses per measurement.
        #[arg(long, default_value_t = 20)]
        presses: usize,
        /// A Python with semantic-text-splitter, to time it re-chunking the same corpus.
        #[arg(long)]
        reference: Option<String>,
        /// Model folder or hub id.
        #[arg(long)]
        model: Option<String>,
    },
    /// A knob turn through the pipeline worker, per preset: the time to the selected file's
    /// new chunks, to the files on screen, and to the whole corpus.
    Focus {
        /// Size of the generated corpus in MB.
        #[arg(long, default_value_t = 10)]
        megabytes: usize,
        /// Size turns to time per preset.
        #[arg(long, default_value_t = 6)]
        presses: usize,
        /// Model folder or hub id.
        #[arg(long)]
        model: Option<String>,
        /// Time this folder instead of a generated corpus (read only; its workbench.toml's
        /// [corpus] rules apply).
        #[arg(long)]
        corpus: Option<PathBuf>,
        /// Presets to time, comma separated (default: every preset but Max-Min).
        #[arg(long, value_delimiter = ',')]
        presets: Vec<String>,
    },
    /// A file save to its new text on the workbench's screen, through the real watcher,
    /// pipeline, update, views and event loop (drawn into an in-memory terminal).
    Live {
        /// Size of the generated corpus in MB.
        #[arg(long, default_value_t = 10)]
        megabytes: usize,
        /// Saves to time.
        #[arg(long, default_value_t = 20)]
        saves: usize,
        /// Model folder or hub id.
        #[arg(long)]
        model: Option<String>,
    },
    /// Max-Min: every sentence of a generated corpus embedded once, then threshold turns timed
    /// (re-chunking from the stored sentence vectors).
    Maxmin {
        /// Size of the generated corpus in MB.
        #[arg(long, default_value_t = 1)]
        megabytes: usize,
        /// Threshold turns to time.
        #[arg(long, default_value_t = 10)]
        presses: usize,
        /// Model folder or hub id.
        #[arg(long)]
        model: Option<String>,
    },
    /// Tokenizing a corpus on one thread, both units, through their crates (tokenizers,
    /// tiktoken-rs) and as chunkscope computes a document's tokens, token counts compared.
    Tokenize {
        /// The corpus (default: the examples; e.g. a folder written by `scale --keep-corpus`).
        corpus: Option<std::path::PathBuf>,
        /// Model folder or hub id.
        #[arg(long)]
        model: Option<String>,
    },
    /// Document conversion (PDF, DOCX, HTML) in MB/s, beside pypdf for PDF, with our per-page
    /// word recall against it. Documents are made from the examples by fpdf2 and python-docx.
    Convert {
        /// A Python with markdown, fpdf2, python-docx and pypdf (e.g. .venv/bin/python).
        #[arg(long, default_value = ".venv/bin/python")]
        reference: String,
        /// Copies of each example Markdown in one document.
        #[arg(long, default_value_t = 20)]
        copies: usize,
    },
    /// Reading a store: a generated JSONL of --chunks chunks (and every --uri given, e.g. a
    /// Postgres table) in chunks/s with peak memory, beside Python's json.loads.
    Store {
        #[arg(long, default_value_t = 100_000)]
        chunks: usize,
        #[arg(long, default_value_t = 384)]
        dim: usize,
        /// Other stores to time (postgres://..., chroma://..., llamaindex:...).
        #[arg(long)]
        uri: Vec<String>,
        /// A Python interpreter for the reference (json.loads per line).
        #[arg(long)]
        reference: Option<String>,
        /// Keep the generated JSONL at this path (to load it into another store).
        #[arg(long)]
        keep: Option<PathBuf>,
    },
    /// The workbench at a company's corpus size: a generated wiki-like corpus (unique text per
    /// file) read and tokenized, chunked, every preset's size knob timed on the focused file and
    /// on the whole corpus, memory; then embedding beside sentence-transformers and the ANN index
    /// beside flat search. One summary table with issue 27's targets.
    Scale(ScaleOpts),
    /// Embedding speed, ours and (with --reference) sentence-transformers' on the same texts.
    Embed(EmbedOpts),
}

// The options of the commands whose setup has a function of its own (below `run`).

#[derive(Args)]
struct AnnOpts {
    /// Numbers of vectors, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "100000,1000000")]
    sizes: Vec<usize>,
    #[arg(long, default_value_t = 384)]
    dim: usize,
    /// Held-out queries (recall@10 and ANN latency).
    #[arg(long, default_value_t = 1000)]
    queries: usize,
    /// Of those, queries timed on the flat index.
    #[arg(long, default_value_t = 100)]
    flat_queries: usize,
    /// Vectors per topic in the generated data.
    #[arg(long, default_value_t = 100)]
    per_topic: usize,
    /// HNSW's M (links per node).
    #[arg(long)]
    m: Option<usize>,
    #[arg(long)]
    ef_construction: Option<usize>,
    #[arg(long)]
    ef_search: Option<usize>,
    /// The generated vectors: `latent` (topics near or far by degrees, in a low-dimensional
    /// subspace, as real embeddings) or `islands` (every topic alike far from the others).
    #[arg(long, default_value = "latent")]
    data: String,
    /// More ef_search values measured on the same graph, comma separated.
    #[arg(long, value_delimiter = ',')]
    more_ef: Vec<usize>,
}

#[derive(Args)]
struct ScaleOpts {
    /// Size of the generated corpus in MB.
    #[arg(long, default_value_t = 100)]
    megabytes: usize,
    /// Knob presses timed on the whole corpus, per preset.
    #[arg(long, default_value_t = 6)]
    presses: usize,
    /// Knob presses timed on the focused file, per preset.
    #[arg(long, default_value_t = 40)]
    focus_presses: usize,
    /// The folder holding seeds/ and data/xquad/ that the corpus is made from besides the
    /// examples (default: $CHUNKSCOPE_SHARED, else ../shared beside the repository).
    #[arg(long)]
    shared: Option<PathBuf>,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Leave out the embedding benchmark.
    #[arg(long)]
    skip_embed: bool,
    /// Leave out the ANN benchmark.
    #[arg(long)]
    skip_ann: bool,
    /// Presets whose knobs are turned, comma separated (default: every preset).
    #[arg(long, value_delimiter = ',')]
    presets: Vec<String>,
    /// Numbers of vectors for the ANN benchmark, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "100000,1000000")]
    ann_sizes: Vec<usize>,
    /// A Python with sentence-transformers, timed beside our embedder (default:
    /// .venv-ref/bin/python where it exists).
    #[arg(long)]
    reference: Option<String>,
    /// Precisions of our embedder (comma separated).
    #[arg(long, value_delimiter = ',', default_value = "f32,bf16,int8")]
    precisions: Vec<String>,
    /// Model folder or hub id.
    #[arg(long)]
    model: Option<String>,
    /// Generate the corpus into this new (or empty) folder and keep it, to open it in the
    /// workbench afterwards.
    #[arg(long, conflicts_with = "corpus")]
    keep_corpus: Option<PathBuf>,
    /// Measure this folder instead of a generated corpus (read only; its workbench.toml's
    /// [corpus] rules apply): a corpus of your own at its own size.
    #[arg(long)]
    corpus: Option<PathBuf>,
}

#[derive(Args)]
struct EmbedOpts {
    /// Corpus whose paragraphs are embedded.
    #[arg(default_value = "examples")]
    corpus: PathBuf,
    /// Number of texts (paragraphs, cycled).
    #[arg(long, default_value_t = 256)]
    texts: usize,
    /// Windows to measure, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "128,256")]
    windows: Vec<usize>,
    /// Batch sizes to measure, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64")]
    batches: Vec<usize>,
    /// A Python interpreter with sentence-transformers, to run the reference in the same run.
    #[arg(long)]
    reference: Option<String>,
    /// Repetitions per measurement (the best is kept).
    #[arg(long, default_value_t = 2)]
    repeat: usize,
    /// Join paragraphs into texts of at least this many characters (e.g. 2000 so every text
    /// fills a 256-token window); 0 embeds paragraphs as they are.
    #[arg(long, default_value_t = 0)]
    min_chars: usize,
    /// Model folder or hub id.
    #[arg(long)]
    model: Option<String>,
    /// An OpenAI-compatible embedding server (e.g. http://127.0.0.1:7997/v1), timed with 1,
    /// 2, 4 and 8 requests in flight beside the local backend.
    #[arg(long)]
    endpoint: Option<String>,
    /// The model name the server serves (default: the model id).
    #[arg(long)]
    served_model: Option<String>,
    /// Local backends to time (comma separated): native, candle, auto.
    #[arg(long, value_delimiter = ',', default_value = "native,candle")]
    backends: Vec<String>,
    /// Precisions of the native backend (comma separated): f32, bf16, int8. f32 runs first
    /// whatever the order: the others are compared with its vectors.
    #[arg(long, value_delimiter = ',', default_value = "f32")]
    precisions: Vec<String>,
    /// Also time sentence-transformers under torch.autocast("cpu", bfloat16) (with
    /// --reference).
    #[arg(long)]
    st_bf16: bool,
}

/// The model named (default: all-MiniLM-L6-v2), found or fetched.
fn locate(m: Option<String>) -> anyhow::Result<ModelInfo> {
    Ok(model::locate(
        m.as_deref().unwrap_or(DEFAULT_MODEL),
        &mut |l| eprintln!("{l}"),
    )?)
}

/// Parse precision names, f32 first (the others are compared with its vectors).
fn parse_precisions(
    names: &[String],
) -> anyhow::Result<Vec<chunkscope_core::embed::lowp::Precision>> {
    let mut precisions = names
        .iter()
        .map(|p| p.parse().map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<Vec<chunkscope_core::embed::lowp::Precision>>>()?;
    precisions.sort_by_key(|p| *p != chunkscope_core::embed::lowp::Precision::F32);
    precisions.dedup();
    Ok(precisions)
}

fn run(what: What, out: &mut dyn Write) -> anyhow::Result<()> {
    match what {
        What::Scale(o) => scale(o, out),
        What::Search { sizes } => search::search(&sizes, out),
        What::Ann(o) => ann(o, out),
        What::Store {
            chunks,
            dim,
            uri,
            reference,
            keep,
        } => store::store(
            chunks,
            dim,
            &uri,
            reference.as_deref(),
            keep.as_deref(),
            out,
        ),
        What::Convert { reference, copies } => convert::convert(&reference, copies, out),
        What::Tokenize { corpus, model } => tokenize::tokenize(
            &locate(model)?,
            &corpus.unwrap_or_else(common::examples),
            out,
        ),
        What::Maxmin {
            megabytes,
            presses,
            model,
        } => maxmin::maxmin(&locate(model)?, megabytes, presses, out),
        What::Focus {
            megabytes,
            presses,
            model,
            corpus,
            presets,
        } => {
            let presets = parse_presets(&presets)?;
            focus::focus(&locate(model)?, megabytes, corpus, presses, &presets, out)
        }
        What::Live {
            megabytes,
            saves,
            model,
        } => live::live(&locate(model)?, megabytes, saves, out),
        What::Rechunk {
            megabytes,
            presses,
            reference,
            model,
        } => rechunk::rechunk(
            &locate(model)?,
            megabytes,
            presses,
            reference.as_deref(),
            out,
        ),
        What::Embed(o) => embed(o, out),
    }
}

fn scale(o: ScaleOpts, out: &mut dyn Write) -> anyhow::Result<()> {
    let shared = o.shared.unwrap_or_else(wiki::default_shared);
    let reference = o.reference.or_else(|| {
        let venv = common::examples().join("../.venv-ref/bin/python");
        venv.is_file().then(|| venv.display().to_string())
    });
    let args = scale::ScaleArgs {
        megabytes: o.megabytes,
        presses: o.presses,
        focus_presses: o.focus_presses,
        shared: shared.is_dir().then_some(shared),
        seed: o.seed,
        skip_embed: o.skip_embed,
        reference,
        precisions: parse_precisions(&o.precisions)?,
        ann_sizes: if o.skip_ann { Vec::new() } else { o.ann_sizes },
        keep_corpus: o.keep_corpus,
        corpus: o.corpus,
        presets: parse_presets(&o.presets)?,
    };
    scale::scale(&locate(o.model)?, &args, out).map(drop)
}

/// Presets named on the command line; every preset when none is.
fn parse_presets(names: &[String]) -> anyhow::Result<Vec<Preset>> {
    if names.is_empty() {
        return Ok(Preset::ALL.to_vec());
    }
    Ok(names
        .iter()
        .map(|n| n.parse::<Preset>())
        .collect::<Result<_, _>>()?)
}

fn ann(o: AnnOpts, out: &mut dyn Write) -> anyhow::Result<()> {
    let d = chunkscope_core::index::AnnParams::default();
    let params = chunkscope_core::index::AnnParams {
        max_connections: o.m.unwrap_or(d.max_connections),
        ef_construction: o.ef_construction.unwrap_or(d.ef_construction),
        ef_search: o.ef_search.unwrap_or(d.ef_search),
        ..d
    };
    let islands = match o.data.as_str() {
        "latent" => false,
        "islands" => true,
        other => anyhow::bail!("--data: latent or islands, not {other:?}"),
    };
    let args = ann::AnnArgs {
        sizes: o.sizes,
        dim: o.dim,
        queries: o.queries,
        flat_queries: o.flat_queries,
        per_topic: o.per_topic,
        params,
        islands,
        more_ef: o.more_ef,
    };
    ann::ann(&args, out).map(drop)
}

fn embed(o: EmbedOpts, out: &mut dyn Write) -> anyhow::Result<()> {
    let precisions = parse_precisions(&o.precisions)?;
    let backends = o
        .backends
        .iter()
        .map(|b| b.parse().map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let served = o
        .served_model
        .or_else(|| o.model.clone())
        .unwrap_or_else(|| DEFAULT_MODEL.to_string());
    let args = embed::BenchArgs {
        backends,
        precisions,
        st_bf16: o.st_bf16,
        endpoint: o.endpoint.map(|e| (e, served)),
        corpus: &o.corpus,
        texts: o.texts,
        windows: o.windows,
        batches: o.batches,
        reference: o.reference,
        repeat: o.repeat,
        min_chars: o.min_chars,
    };
    embed::run(&locate(o.model)?, &args, out).map(drop)
}

fn main() -> ExitCode {
    // The product's allocator settings, so that its memory is what is measured.
    chunkscope_core::reclaim::tune_allocator();
    let cli = Cli::parse();
    match run(cli.what, &mut io::stdout().lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chunkscope-bench: {e:#}");
            ExitCode::from(2)
        }
    }
}
