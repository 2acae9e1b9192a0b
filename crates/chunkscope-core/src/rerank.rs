//! A sentence-transformers CrossEncoder reranker on the native backend: the query and a passage
//! read together by a BERT-family encoder with a sequence-classification head, one score per
//! pair, as `CrossEncoder.predict` gives it.
//!
//! What is read, and from where, as sentence-transformers 6 reads it:
//!
//! - the encoder ([`Bert`], in the [`Precision`] asked for) and the head from model.safetensors:
//!   BertForSequenceClassification's pooler (dense + tanh on `[CLS]`) then `classifier`, or
//!   XLMRobertaForSequenceClassification's (RoBERTa's, CamemBERT's) `classifier.dense` + tanh +
//!   `classifier.out_proj` on `<s>`; one label only. The head runs in f32 whatever the precision.
//! - the activation on the logit: `activation_fn` in config_sentence_transformers.json (as 5.x
//!   and 6.x save it), else config.json's `sentence_transformers.activation_fn` (4.x), else its
//!   `sbert_ce_default_activation_function` (before 4), else sigmoid. As sentence-transformers
//!   does without `trust_remote_code`, a path outside `torch.` is passed over.
//! - the pair's token window (`max_length`): sentence-transformers' own rule
//!   ([`crate::model::read_windows`]: sentence_bert_config.json's `max_seq_length`, else the
//!   tokenizer's `model_max_length` capped at the positions), never past the positions the
//!   encoder has.
//! - the pair's tokens: tokenizer.json's own pair template, truncated `longest_first` to the
//!   window (the longer of query and passage loses tokens first, one at a time, so a long query
//!   is cut too), as the tokenizer sentence-transformers calls with `truncation=True` does.
//!
//! The window has its own invisible tail: a passage whose answer lies past
//! [`Reranker::pair_tail`] is scored without it, so it cannot be reranked up for it.

pub mod stage;

mod load;
mod score;

use std::path::{Path, PathBuf};

use tokenizers::Tokenizer;

use crate::embed::bert::Bert;
use crate::embed::lowp::Precision;

/// Why a reranker folder could not be opened. Every message names the file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RerankError {
    /// A file of the folder is missing, unreadable or malformed.
    #[error("{}: {why}", path.display())]
    File { path: PathBuf, why: String },
    /// The folder describes a model the native reranker does not run.
    #[error("{}: {why}", path.display())]
    Unsupported { path: PathBuf, why: String },
    /// The file's `activation_fn` is a torch class the reranker does not apply.
    #[error("{}: activation_fn {activation_fn} is not supported (Sigmoid, Identity or Tanh are)", path.display())]
    Activation {
        path: PathBuf,
        activation_fn: String,
    },
    /// The encoder failed to load (the message names its file).
    #[error("{0}")]
    Encoder(String),
    /// A hub id that is in no cache and could not be downloaded (every place tried is named).
    #[error("{0}")]
    NotFound(String),
}

impl RerankError {
    fn file(path: &Path, why: impl Into<String>) -> RerankError {
        RerankError::File {
            path: path.to_path_buf(),
            why: why.into(),
        }
    }

    fn unsupported(path: &Path, why: impl Into<String>) -> RerankError {
        RerankError::Unsupported {
            path: path.to_path_buf(),
            why: why.into(),
        }
    }
}

/// The function sentence-transformers applies to the logit in `predict`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScoreActivation {
    Sigmoid,
    Identity,
    Tanh,
}

impl ScoreActivation {
    pub fn name(self) -> &'static str {
        match self {
            ScoreActivation::Sigmoid => "sigmoid",
            ScoreActivation::Identity => "identity",
            ScoreActivation::Tanh => "tanh",
        }
    }

    pub fn apply(self, x: f32) -> f32 {
        match self {
            ScoreActivation::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            ScoreActivation::Identity => x,
            ScoreActivation::Tanh => x.tanh(),
        }
    }
}

/// The sequence-classification head on the first token: dense (hidden x hidden) + tanh, then one
/// output. BERT's pooler + classifier and RoBERTa's classifier.dense + out_proj alike.
#[derive(Debug, Clone)]
struct Head {
    dense_w: Vec<f32>,
    dense_b: Vec<f32>,
    out_w: Vec<f32>,
    out_b: f32,
}

impl Head {
    fn logit(&self, first: &[f32]) -> f32 {
        let h = first.len();
        let mut acc = self.out_b as f64;
        for (j, row) in self.dense_w.chunks_exact(h).enumerate() {
            let z: f64 = self.dense_b[j] as f64
                + row
                    .iter()
                    .zip(first)
                    .map(|(w, x)| *w as f64 * *x as f64)
                    .sum::<f64>();
            acc += self.out_w[j] as f64 * (z as f32).tanh() as f64;
        }
        acc as f32
    }
}

/// A sentence-transformers CrossEncoder folder, scored on the native encoder.
pub struct Reranker {
    dir: PathBuf,
    bert: Bert,
    head: Head,
    activation: ScoreActivation,
    window: usize,
    /// The folder's tokenizer, truncation and padding off: each text is encoded alone, the pair
    /// truncated by [`tokenizers::utils::truncation::truncate_encodings`], then the pair
    /// template applied.
    tok: Tokenizer,
    /// Tokens the pair template adds.
    pair_specials: usize,
}

impl std::fmt::Debug for Reranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reranker")
            .field("dir", &self.dir)
            .field("activation", &self.activation)
            .field("window", &self.window)
            .field("precision", &self.bert.precision)
            .finish_non_exhaustive()
    }
}

impl Reranker {
    /// The folder the reranker was read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Tokens a (query, passage) pair may hold, specials included (`max_length`).
    pub fn pair_window(&self) -> usize {
        self.window
    }

    /// The activation applied to the logit.
    pub fn activation(&self) -> ScoreActivation {
        self.activation
    }

    /// The arithmetic of the encoder's dense layers.
    pub fn precision(&self) -> Precision {
        self.bert.precision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reranker is shared between threads as an embedder is.
    #[test]
    fn reranker_is_send_and_sync() {
        fn shared<T: Send + Sync>() {}
        shared::<Reranker>();
    }

    /// The head: out_b + sum_j out_w[j] tanh(dense_b[j] + dense_w[j] . x).
    #[test]
    fn head_is_dense_tanh_then_one_output() {
        let head = Head {
            dense_w: vec![1.0, 0.0, 0.5, -1.0],
            dense_b: vec![0.0, 0.25],
            out_w: vec![2.0, -1.0],
            out_b: 0.5,
        };
        let x = [0.3f32, -0.2];
        let want = 0.5 + 2.0 * 0.3f32.tanh() - (0.25f32 + 0.15 + 0.2).tanh();
        assert!((head.logit(&x) - want).abs() < 1e-6);
        assert!((ScoreActivation::Sigmoid.apply(0.0) - 0.5).abs() < 1e-7);
    }
}
