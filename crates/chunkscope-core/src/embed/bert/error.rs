//! Why the native encoder could not be loaded. Each names the file it concerns; the message
//! carries the cause, which is also kept typed in the variant.

use std::path::PathBuf;

use crate::embed::hf_config::HfConfigError;

#[derive(Debug, thiserror::Error)]
pub enum BertError {
    /// config.json could not be read (or describes sizes that would break the forward pass).
    #[error(transparent)]
    Config(#[from] HfConfigError),
    /// config.json is read but describes what the native encoder does not run (a model type,
    /// an activation, sizes no memory holds) or lacks a size it needs.
    #[error("{}: {why}", path.display())]
    Refused { path: PathBuf, why: String },
    #[error("{}: cannot open the weights: {cause}", path.display())]
    Open {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// The weights file could not be memory-mapped.
    #[error("{}: {cause}", path.display())]
    Map {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{}: not a safetensors file: {cause}", path.display())]
    NotSafetensors {
        path: PathBuf,
        cause: safetensors::SafeTensorError,
    },
    /// A tensor is missing, of another type or of another shape than config.json implies.
    #[error("{}: {why}", path.display())]
    Weights { path: PathBuf, why: String },
}

impl BertError {
    pub(super) fn refused(path: &std::path::Path, why: impl Into<String>) -> BertError {
        BertError::Refused {
            path: path.to_path_buf(),
            why: why.into(),
        }
    }
}
