//! `chunkscope knobs [CORPUS] --as FRAMEWORK`: the knobs (workbench.toml with the flags laid over
//! it) as the snippet that gives the same chunks in the user's own pipeline.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use clap::Args;

use chunkscope_core::chunk::snippet::{snippet, Framework};

use super::knobs::Knobs;

/// Print the knobs as code: a Python program for LangChain, semantic-text-splitter, semchunk,
/// Haystack or chonkie (it prints the chunks of the file it is given as JSON), Spring AI's Java builder, or
/// workbench.toml's tables. The framework must match the strategy (--preset sets both).
#[derive(Args)]
pub struct KnobsArgs {
    /// Corpus folder whose workbench.toml is read (default: ./workbench.toml).
    corpus: Option<PathBuf>,
    /// langchain, text-splitter, semchunk, haystack, chonkie, spring-ai, toml (llamaindex has no
    /// chunkscope preset yet). Default: the strategy's own framework; toml for markdown, maxmin,
    /// recursive and fixed.
    #[arg(long = "as", value_name = "FRAMEWORK")]
    framework: Option<String>,
    #[command(flatten)]
    knobs: Knobs,
}

pub fn run(a: KnobsArgs) -> Result<ExitCode> {
    let config = a.knobs.config(a.corpus.as_deref())?;
    let framework = match &a.framework {
        Some(f) => f.parse::<Framework>().map_err(|e| anyhow!("--as: {e}"))?,
        None => Framework::for_strategy(config.chunking.strategy),
    };
    let text = snippet(&config.chunking, config.window, &config.model, framework)?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}
