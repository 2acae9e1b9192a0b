//! The knobs every command takes: read into the core's one overrides type and laid over
//! workbench.toml (which is laid over the defaults).

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use chunkscope_core::config::{Config, Overrides};
use chunkscope_core::metadata::Use;

use crate::app::keymap::Keymap;

/// A flag's value read by its type's own parser; the error names the flag and lists the words.
fn word<T: std::str::FromStr<Err: std::fmt::Display>>(
    flag: &str,
    v: &Option<String>,
) -> Result<Option<T>> {
    v.as_deref()
        .map(|s| {
            s.parse()
                .map_err(|e: T::Err| anyhow::anyhow!("--{flag}: {e}"))
        })
        .transpose()
}

/// Knobs shared by every command; each overrides workbench.toml.
#[derive(Args, Clone, Default)]
pub struct Knobs {
    /// workbench.toml to read (default: ./workbench.toml, then CORPUS/workbench.toml).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// A RAG store to open as the corpus, read-only: jsonl:PATH, llamaindex:DIR,
    /// chroma://HOST:PORT/COLLECTION, postgres://USER@HOST:PORT/DB?table=T (password from
    /// PGPASSWORD).
    #[arg(long)]
    pub store: Option<String>,
    /// Model: a local folder or a hub id.
    #[arg(long)]
    pub model: Option<String>,
    /// An embedding server (OpenAI-compatible), e.g. http://127.0.0.1:8080/v1: vectors come from
    /// it; tokens are counted with --model's tokenizer.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// A sentence-transformers CrossEncoder folder that reranks the first stage (`query`, `eval`,
    /// the workbench's query pane): the union of BM25's and the vectors' top candidates.
    #[arg(long)]
    pub rerank: Option<String>,
    /// Local backend: auto (native for BERT, RoBERTa/XLM-R, DistilBERT and MPNet, candle for the
    /// rest), native, candle.
    #[arg(long)]
    backend: Option<String>,
    /// candle's device: cpu, cuda or metal (cuda and metal need chunkscope built with that
    /// feature).
    #[arg(long)]
    device: Option<String>,
    /// Arithmetic of the native backend's dense layers: f32 (the reference), bf16 or int8.
    #[arg(long)]
    precision: Option<String>,
    /// Preset: spring-ai, langchain-chars (1500/150 chars), langchain-tokens (240/32 embed tokens),
    /// markdown (structure first, 120 embed tokens), maxmin (semantic, at most 120 embed tokens),
    /// text-splitter (the crate, 120 embed tokens), semchunk (chunkerify's size: the model's
    /// model_max_length less specials), haystack (DocumentSplitter, 200 words),
    /// haystack-recursive (RecursiveDocumentSplitter, 200 words), chonkie (RecursiveChunker, 2048
    /// characters), chonkie-tokens (TokenChunker, 2048 characters).
    #[arg(long)]
    preset: Option<String>,
    /// Strategy: fixed, recursive, spring-ai, langchain, markdown, maxmin, text-splitter,
    /// semchunk, haystack, haystack-recursive, chonkie, chonkie-tokens.
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
    /// Only a config file and a model (what `model fetch` takes).
    pub fn model_only(config: Option<PathBuf>, model: Option<String>) -> Knobs {
        Knobs {
            config,
            model,
            ..Knobs::default()
        }
    }

    /// The flags as overrides.
    fn overrides(&self) -> Result<Overrides> {
        let metadata = [
            (&self.embed_metadata, Use::Embed),
            (&self.drop_metadata, Use::Drop),
        ]
        .into_iter()
        .flat_map(|(fields, u)| {
            fields
                .iter()
                .map(|f| f.trim())
                .filter(|f| !f.is_empty())
                .map(move |f| (f.to_string(), u))
        })
        .collect();
        Ok(Overrides {
            model: self.model.clone(),
            endpoint: self.endpoint.clone(),
            backend: word("backend", &self.backend)?,
            device: self.device.clone(),
            precision: word("precision", &self.precision)?,
            window: word("window", &self.window)?,
            preset: word("preset", &self.preset)?,
            strategy: word("strategy", &self.strategy)?,
            unit: word("unit", &self.unit)?,
            size: self.size,
            overlap: self.overlap,
            separators: None,
            parents: self.parents.then_some(true),
            fixed_threshold: self.fixed_threshold,
            maxmin_c: self.maxmin_c,
            init_constant: self.init_constant,
            metadata,
            store: self.store.clone(),
        })
    }

    /// workbench.toml ([keys] included) with these flags laid over it.
    pub fn config(&self, corpus: Option<&Path>) -> Result<Config> {
        let mut c = Config::discover(self.config.as_deref(), corpus)?;
        if let Some(e) = Keymap::with_overrides(&c.keys, &c.source_name()).1.first() {
            return Err(e.clone().into());
        }
        self.overrides()?.apply(&mut c);
        if let Some(r) = &self.rerank {
            c.rerank_model = Some(r.clone());
        }
        c.chunking
            .validate()
            .map_err(|e| anyhow::anyhow!("{e} (from flags or {})", c.source_name()))?;
        Ok(c)
    }

    /// For the screen: the configuration, or, when workbench.toml is bad, the defaults with these
    /// flags laid over them and the error to show.
    pub fn config_or_defaults(&self, corpus: &Path) -> (Config, Option<String>) {
        match self.config(Some(corpus)) {
            Ok(c) => (c, None),
            Err(e) => {
                let mut c = Config::default();
                let flags = self.overrides().map(|o| o.apply(&mut c));
                let valid = flags.is_ok() && c.chunking.validate().is_ok();
                (
                    if valid { c } else { Config::default() },
                    Some(format!("{e:#}")),
                )
            }
        }
    }
}
