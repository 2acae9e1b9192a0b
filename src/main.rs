//! The `chunkscope` binary: parse the command line and dispatch.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use chunkscope::cli::{audit, eval, export, knobs::Knobs, model, query, text};
use chunkscope::tui;

/// See what your embedder never reads: chunk lengths in three units, token windows and the
/// invisible tail of every chunk, live in the terminal or headless for CI.
#[derive(Parser)]
#[command(name = "chunkscope", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Corpus directory (or file, SQuAD-format JSON, or BEIR folder) to open in the workbench
    /// (default: the current folder).
    corpus: Option<PathBuf>,
    /// Evaluation cases for the eval pane: TSV, SQuAD JSON, a JSONL query log or a BEIR folder
    /// (default: CORPUS/cases.tsv, or a BEIR corpus's qrels).
    #[arg(long)]
    cases: Option<PathBuf>,
    /// The qrels split of a BEIR folder the eval pane reads (qrels/SPLIT.tsv).
    #[arg(long, default_value = chunkscope_core::judgments::DEFAULT_SPLIT)]
    split: String,
    #[command(flatten)]
    knobs: Knobs,
    /// Log level of the workbench's log file: error, warn, info, debug, trace (default: RUST_LOG's
    /// level, else info).
    #[arg(long)]
    log_level: Option<String>,
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
    Audit(audit::AuditArgs),
    Chunks(export::ChunksArgs),
    Embed(export::EmbedArgs),
    Query(query::QueryArgs),
    Eval(eval::EvalArgs),
    Text(text::TextArgs),
    Knobs(chunkscope::cli::knobs_as::KnobsArgs),
    /// The embedding model.
    Model {
        #[command(subcommand)]
        action: model::ModelAction,
    },
}

fn main() -> ExitCode {
    chunkscope_core::reclaim::tune_allocator();
    let cli = Cli::parse();
    let mono = match cli.color {
        ColorWhen::Never => true,
        ColorWhen::Always => false,
        ColorWhen::Auto => std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
    };
    let result = match cli.command {
        None => {
            let corpus = cli.corpus.unwrap_or_else(|| PathBuf::from("."));
            // A bad workbench.toml is shown on the screen; the flags still apply.
            let (config, config_error) = cli.knobs.config_or_defaults(&corpus);
            let level = tui::logfile::level(cli.log_level.as_deref());
            let cases = eval::workbench_cases(&corpus, cli.cases, &cli.split);
            tui::run(&corpus, cases, config, config_error, mono, level).map(|()| ExitCode::SUCCESS)
        }
        Some(Command::Audit(a)) => audit::run(a),
        Some(Command::Chunks(a)) => export::chunks(a),
        Some(Command::Embed(a)) => export::embed(a),
        Some(Command::Query(a)) => query::run(a),
        Some(Command::Eval(a)) => eval::run(a),
        Some(Command::Text(a)) => text::run(a),
        Some(Command::Knobs(a)) => chunkscope::cli::knobs_as::run(a),
        Some(Command::Model { action }) => model::run(action),
    };
    result.unwrap_or_else(|e| {
        if chunkscope::cli::stdout_closed(&e) {
            return ExitCode::SUCCESS;
        }
        eprintln!("chunkscope: {e:#}");
        ExitCode::from(2)
    })
}
