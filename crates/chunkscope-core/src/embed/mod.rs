//! The embedder: the model's tokenizer truncated to the window in force, our BERT forward pass,
//! mean pooling and L2 normalisation, and a cache so nothing is embedded twice; or an embedding
//! server (`remote`) that reads what it reads, counted with the same tokenizer.

pub mod bert;
pub mod cache;
pub mod candle;
pub mod driver;
pub mod hf_config;
pub mod kernels;
pub mod lowp;
pub mod remote;
mod run;
pub mod st;

use tokenizers::TruncationDirection;

use super::model::ModelInfo;
use super::tokenize::EmbedTokenizer;
pub use bert::{Bert, BertError};
pub use cache::EmbedCache;
pub use run::{EmbedRun, Embedded};

/// Which engine runs a local model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// The native path for the architectures it runs (faster here), candle for the others.
    #[default]
    Auto,
    Native,
    Candle,
}

impl std::str::FromStr for BackendChoice {
    type Err = crate::names::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "native" => Ok(BackendChoice::Native),
            "candle" => Ok(BackendChoice::Candle),
            other => Err(crate::names::UnknownName::new(
                "backend",
                other,
                "auto, native or candle",
            )),
        }
    }
}

/// Which embedder a configuration asks for: a server, or a local model on a backend and device.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EmbedSpec {
    pub remote: Option<remote::RemoteConfig>,
    pub backend: BackendChoice,
    /// candle's device: cpu (default), cuda or metal.
    pub device: String,
    /// The arithmetic of the native backend's dense layers (f32, the reference, by default).
    pub precision: lowp::Precision,
}

/// Where vectors come from.
enum Backend {
    /// Our BERT forward pass on this machine.
    Native(Bert),
    /// A transformer run by candle-transformers on this machine.
    Candle(candle::CandleEncoder),
    /// An embedding server.
    Remote(remote::Remote),
}

pub struct Embedder {
    backend: Backend,
    /// What follows the transformer (pooling, dense, normalisation) and the model's prompts.
    pub modules: st::StModules,
    /// The model's tokenizer with truncation and padding off; the window is applied per text.
    tok: EmbedTokenizer,
    /// Identifies the model in cache keys: its id and the weights' size, or the server and its
    /// model name.
    pub model_key: String,
}

/// Why embedding did not give every vector asked for. Each call answers with its own error;
/// nothing is left behind for a later call to find.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmbedError {
    /// The embedding server failed (after its retries), or answered with something unusable.
    #[error("{0}")]
    Server(String),
    /// The local forward pass failed (candle reports errors; the native path does not).
    #[error("{0}")]
    Forward(String),
    /// The model or server could not be opened.
    #[error("{0}")]
    Load(String),
    /// The caller asked the run to stop.
    #[error("embedding was cancelled")]
    Cancelled,
}

/// Why an embedder could not be opened: the backend's own error (naming the file it concerns),
/// or settings that do not go together.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Native(#[from] BertError),
    /// Boxed: candle's errors are large, and this one travels in every `Result` of a load.
    #[error(transparent)]
    Candle(Box<candle::CandleError>),
    #[error(transparent)]
    Tokenizer(#[from] crate::tokenize::TokenizeError),
    #[error(transparent)]
    Remote(#[from] remote::RemoteError),
    #[error("device {device}: the native backend runs on the CPU; use --backend candle")]
    NativeDevice { device: String },
    #[error(
        "precision {precision}: only the native backend (the BERT family, NomicBERT, JinaBERT) runs \
         bf16 and int8; {model} runs on candle in f32"
    )]
    CandlePrecision {
        precision: lowp::Precision,
        model: String,
    },
    #[error(
        "precision {precision}: an embedding server computes in its own precision; drop --precision \
         or the endpoint"
    )]
    RemotePrecision { precision: lowp::Precision },
}

impl From<candle::CandleError> for OpenError {
    fn from(e: candle::CandleError) -> OpenError {
        OpenError::Candle(Box::new(e))
    }
}

impl Embedder {
    /// The model on this machine, on the backend `auto` picks for its architecture.
    pub fn load(info: &ModelInfo) -> Result<Embedder, OpenError> {
        Embedder::open(info, &EmbedSpec::default())
    }

    fn local(info: &ModelInfo, spec: &EmbedSpec) -> Result<Embedder, OpenError> {
        let (_, native) = architecture_and_native(&info.dir);
        let backend = match (spec.backend, native) {
            (BackendChoice::Native, _) | (BackendChoice::Auto, true) => {
                if !spec.device.is_empty() && spec.device != "cpu" {
                    return Err(OpenError::NativeDevice {
                        device: spec.device.clone(),
                    });
                }
                Backend::Native(Bert::load_with(&info.dir, spec.precision)?)
            }
            _ if spec.precision != lowp::Precision::F32 => {
                return Err(OpenError::CandlePrecision {
                    precision: spec.precision,
                    model: info.id.clone(),
                })
            }
            _ => Backend::Candle(candle::CandleEncoder::load(
                &info.dir,
                candle::device(&spec.device)?,
            )?),
        };
        let tok = EmbedTokenizer::from_file(&info.tokenizer_path())?;
        let model_key = match &backend {
            Backend::Candle(_) => format!("{}#candle", model_key(info)),
            // f32 keeps the key it always had; the reduced precisions have their own vectors.
            Backend::Native(b) if b.precision != lowp::Precision::F32 => {
                format!("{}#{}", model_key(info), b.precision)
            }
            _ => model_key(info),
        };
        Ok(Embedder {
            modules: info.modules.clone(),
            backend,
            tok,
            model_key,
        })
    }

    /// The embedder a configuration asks for: the server when `remote` is set (its tokens
    /// counted with the model's tokenizer), else the model on this machine.
    pub fn open(info: &ModelInfo, spec: &EmbedSpec) -> Result<Embedder, OpenError> {
        let Some(config) = &spec.remote else {
            return Embedder::local(info, spec);
        };
        if spec.precision != lowp::Precision::F32 {
            return Err(OpenError::RemotePrecision {
                precision: spec.precision,
            });
        }
        let tok = EmbedTokenizer::from_file(&info.tokenizer_path())?;
        let server = remote::Remote::connect(config.clone())?;
        Ok(Embedder {
            modules: info.modules.clone(),
            model_key: config.model_key(),
            backend: Backend::Remote(server),
            tok,
        })
    }

    /// The backend in words, for the status line and exports (never a key).
    pub fn backend_name(&self) -> String {
        match &self.backend {
            Backend::Native(b) => format!("native {}", b.precision.label()),
            Backend::Candle(c) => format!("candle {} f32", c.model_type),
            Backend::Remote(r) => format!("remote {} ({})", r.config.endpoint, r.config.model),
        }
    }

    /// The native backend's precision; `None` for candle and servers (f32 only).
    pub fn native_precision(&self) -> Option<lowp::Precision> {
        match &self.backend {
            Backend::Native(b) => Some(b.precision),
            _ => None,
        }
    }

    /// The server, when vectors come from one.
    pub fn remote(&self) -> Option<&remote::Remote> {
        match &self.backend {
            Backend::Remote(r) => Some(r),
            _ => None,
        }
    }

    pub fn dim(&self) -> usize {
        match &self.backend {
            Backend::Native(b) => self.modules.dim(b.config.hidden),
            Backend::Candle(c) => self.modules.dim(c.hidden),
            Backend::Remote(r) => r.dim,
        }
    }

    /// The leading tokens of `text` that pooling leaves out when the model excludes its prompt:
    /// the first special token and the prompt's own tokens (as sentence-transformers counts
    /// them), when `text` starts with the document or query prompt.
    fn prompt_skip(&self, text: &str) -> usize {
        if self.modules.include_prompt {
            return 0;
        }
        [self.modules.document_prompt(), self.modules.query_prompt()]
            .into_iter()
            .filter(|p| !p.is_empty() && text.starts_with(p))
            .map(|p| self.input_tokens(p).saturating_sub(1))
            .max()
            .unwrap_or(0)
    }

    /// The query as the model reads it: its query prompt first.
    pub fn query_text<'a>(&self, query: &'a str) -> std::borrow::Cow<'a, str> {
        match self.modules.query_prompt() {
            "" => std::borrow::Cow::Borrowed(query),
            p => std::borrow::Cow::Owned(format!("{p}{query}")),
        }
    }

    /// Tokens the model's tokenizer makes of `text`, specials included (what a server that
    /// refuses long inputs compares with its window).
    pub fn input_tokens(&self, text: &str) -> usize {
        self.tok
            .tokenizer()
            .encode(text, true)
            .map_or(0, |e| e.len())
    }

    /// The ids the model reads for `text` at `window`: content truncated to window - specials, then
    /// [CLS] and [SEP] added, as the tokenizers pipeline does with truncation on.
    pub fn ids(&self, text: &str, window: usize) -> Vec<u32> {
        let window = match &self.backend {
            Backend::Native(b) => window.min(b.config.usable_positions()),
            Backend::Candle(c) => window.min(c.max_positions),
            Backend::Remote(_) => window,
        };
        let content = window.saturating_sub(self.tok.specials());
        // Long texts: encode a prefix cut at whitespace that surely holds `content` tokens when the
        // tokenizer is word-local (a word never straddles the cut, so the prefix's tokens are the
        // first tokens of the whole text); fall back to the whole text otherwise.
        // sentence_bert_config.json's do_lower_case: the text is lowercased before tokenizing.
        let lowered;
        let text = if self.modules.do_lower_case {
            lowered = text.to_lowercase();
            lowered.as_str()
        } else {
            text
        };
        let mut enc = None;
        if self.tok.is_word_local() && text.len() > content * 16 {
            let end = crate::text::floor_char(text, content * 12);
            let cut = text[..end].rfind(char::is_whitespace).unwrap_or(0);
            if cut > 0 {
                if let Ok(e) = self.tok.tokenizer().encode(&text[..cut], false) {
                    if e.len() >= content {
                        enc = Some(e);
                    }
                }
            }
        }
        let mut enc = match enc {
            Some(e) => e,
            None => match self.tok.tokenizer().encode(text, false) {
                Ok(e) => e,
                Err(_) => return Vec::new(),
            },
        };
        enc.truncate(content, 0, TruncationDirection::Right);
        match self.tok.tokenizer().post_process(enc, None, true) {
            Ok(e) => e.get_ids().to_vec(),
            Err(_) => Vec::new(),
        }
    }
}

/// The embedding model of a process, loaded on first use and shared by every worker (the
/// pipeline's Max-Min sentences and the embedding worker's chunks read the same weights), with
/// whether one of them is chunking (the embedding worker's background work waits for it).
#[derive(Clone)]
pub struct SharedEmbedder {
    info: ModelInfo,
    spec: EmbedSpec,
    loaded: std::sync::Arc<std::sync::OnceLock<Result<std::sync::Arc<Embedder>, EmbedError>>>,
    cores: crate::jobs::Cores,
}

impl SharedEmbedder {
    pub fn new(info: ModelInfo) -> SharedEmbedder {
        SharedEmbedder::with_spec(info, EmbedSpec::default())
    }

    /// The embedder `spec` asks for: `info` on a backend, or a server (counted with `info`'s
    /// tokenizer).
    pub fn with_spec(info: ModelInfo, spec: EmbedSpec) -> SharedEmbedder {
        SharedEmbedder {
            info,
            spec,
            loaded: Default::default(),
            cores: Default::default(),
        }
    }

    /// Whether a worker sharing this model is chunking.
    pub fn cores(&self) -> &crate::jobs::Cores {
        &self.cores
    }

    /// The model, loading it the first time; a failed load is reported every time it is asked.
    pub fn get(&self) -> Result<std::sync::Arc<Embedder>, EmbedError> {
        self.loaded
            .get_or_init(|| {
                Embedder::open(&self.info, &self.spec)
                    .map(std::sync::Arc::new)
                    .map_err(|e| EmbedError::Load(format!("{e:#}")))
            })
            .clone()
    }
}

/// The backend `spec` runs `info` on, in words, known without loading anything (what the status
/// line and `model list` show).
pub fn backend_label(info: &ModelInfo, spec: &EmbedSpec) -> String {
    match backend_kind(info, spec) {
        BackendKind::Remote => {
            let r = spec.remote.as_ref().expect("a remote spec");
            format!("remote {} ({})", r.endpoint, r.model)
        }
        BackendKind::Native => format!("native {}", spec.precision.label()),
        BackendKind::Candle => {
            format!("candle {} f32", architecture_and_native(&info.dir).0)
        }
    }
}

/// Where vectors come from: the native path, candle, or a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendKind {
    #[default]
    Native,
    Candle,
    Remote,
}

/// Which backend `spec` gives for the model (what `auto` picks included).
pub fn backend_kind(info: &ModelInfo, spec: &EmbedSpec) -> BackendKind {
    if spec.remote.is_some() {
        return BackendKind::Remote;
    }
    match (spec.backend, architecture_and_native(&info.dir).1) {
        (BackendChoice::Native, _) | (BackendChoice::Auto, true) => BackendKind::Native,
        _ => BackendKind::Candle,
    }
}

/// The width of a model's vectors from its files: the transformer's hidden size through the
/// pooling and dense layers.
pub fn vector_dim(info: &ModelInfo) -> Option<usize> {
    let v = hf_config::read(&info.dir.join("config.json")).ok()?;
    let hidden = ["hidden_size", "dim", "n_embd"]
        .iter()
        .find_map(|k| v.get(*k)?.as_u64())? as usize;
    Some(info.modules.dim(hidden))
}

/// The architecture config.json describes: its `model_type`, except that JinaBERT (which says
/// `bert` with ALiBi positions) is `jina_bert`.
pub fn architecture(dir: &std::path::Path) -> Option<String> {
    let v = hf_config::read(&dir.join("config.json")).ok()?;
    Some(architecture_of(&v)?.to_string())
}

/// The folder's architecture (BERT when config.json names none) and whether the native path
/// runs it, which is what `auto` picks.
fn architecture_and_native(dir: &std::path::Path) -> (String, bool) {
    let kind = architecture(dir).unwrap_or_else(|| "bert".into());
    let native = bert::NATIVE_TYPES.contains(&kind.as_str());
    (kind, native)
}

pub(crate) fn architecture_of(config: &serde_json::Value) -> Option<&str> {
    let kind = config.get("model_type")?.as_str()?;
    let alibi = config
        .get("position_embedding_type")
        .and_then(|p| p.as_str())
        == Some("alibi");
    Some(if kind == "bert" && alibi {
        "jina_bert"
    } else {
        kind
    })
}

/// The cache key of a model: its id and the size of its weights, known without loading them.
pub fn model_key(info: &ModelInfo) -> String {
    let weights = std::fs::metadata(info.dir.join("model.safetensors"))
        .map(|m| m.len())
        .unwrap_or(0);
    format!("{}#{weights}", info.id)
}

/// Cosine of two vectors (1.0 for identical directions).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb).max(1e-12)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_that_do_not_go_together_are_typed() {
        let dir = std::env::temp_dir().join(format!("chunkscope-open-err-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let info = ModelInfo {
            id: "m".into(),
            dir: dir.clone(),
            found_in: "test".into(),
            windows: Default::default(),
            modules: Default::default(),
        };
        let native_on_gpu = EmbedSpec {
            backend: BackendChoice::Native,
            device: "cuda".into(),
            ..EmbedSpec::default()
        };
        let err = Embedder::open(&info, &native_on_gpu).err().unwrap();
        assert!(
            matches!(&err, OpenError::NativeDevice { device } if device == "cuda"),
            "{err:?}"
        );
        // No config.json: the native backend's own error, naming the file.
        let err = Embedder::load(&info).err().unwrap();
        assert!(
            matches!(&err, OpenError::Native(BertError::Config(_))),
            "{err:?}"
        );
        assert!(err.to_string().contains("config.json"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
