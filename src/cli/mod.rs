//! The headless commands, one module each, over the same engine as the screen.

pub mod audit;
pub mod eval;
pub mod export;
pub mod knobs;
pub mod knobs_as;
pub mod model;
mod prepare;
pub mod query;
mod store;

/// The corpus argument, which only `--store` makes optional.
fn corpus_arg(corpus: &Option<std::path::PathBuf>) -> anyhow::Result<std::path::PathBuf> {
    corpus
        .clone()
        .ok_or_else(|| anyhow::anyhow!("a CORPUS folder is needed (or --store URI)"))
}
pub mod text;
