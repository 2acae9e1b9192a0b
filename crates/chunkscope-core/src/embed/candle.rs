//! Transformers run through candle-transformers: BERT (for comparison with the native path),
//! ModernBERT, NomicBERT (nomic-embed-text: rotary positions, SwiGLU), JinaBERT
//! (jina-embeddings-v2: ALiBi positions, gated GELU) and Qwen3 (a decoder embedder, as in
//! Qwen3-Embedding, pooled on its last token). Weights are memory-mapped; sequences of similar
//! length run as one padded, masked batch, and the token states go to the same
//! sentence-transformers pooling as the native path's.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use candle_core::{DType, Device, Tensor};
use candle_nn::Module;
use candle_nn::VarBuilder;
use candle_transformers::models::{bert, jina_bert, modernbert, nomic_bert, qwen3};

/// Architectures run through candle (`jina_bert` is a `bert` config with ALiBi positions).
pub const CANDLE_TYPES: &[&str] = &["bert", "modernbert", "nomic_bert", "jina_bert", "qwen3"];

/// Why a model could not be opened or run through candle. Each load error names the file.
#[derive(Debug, thiserror::Error)]
pub enum CandleError {
    #[error(transparent)]
    Config(#[from] crate::embed::hf_config::HfConfigError),
    /// The device is known but this build or machine does not have it.
    #[error("device {name}: build chunkscope with {needs} to use it: {cause}")]
    Device {
        name: String,
        needs: &'static str,
        cause: candle_core::Error,
    },
    #[error("unknown device '{0}' (expected cpu, cuda or metal)")]
    UnknownDevice(String),
    #[error("{}: no model.safetensors (only safetensors weights are read)", dir.display())]
    NoWeights { dir: PathBuf },
    #[error("{}: cannot map the weights: {cause}", path.display())]
    Map {
        path: PathBuf,
        cause: candle_core::Error,
    },
    #[error("{}: {cause}", path.display())]
    Open {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{}: not a safetensors file: {cause}", path.display())]
    NotSafetensors {
        path: PathBuf,
        cause: safetensors::SafeTensorError,
    },
    /// config.json does not describe the network its model_type names.
    #[error("{}: not a {model_type} configuration: {cause}", path.display())]
    BadConfig {
        path: PathBuf,
        model_type: String,
        cause: serde_json::Error,
    },
    /// A model type, or a variant of one, that candle does not run here.
    #[error("{}: {why}", path.display())]
    Refused { path: PathBuf, why: String },
    /// candle's own error, building the network or running it.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
}

type Result<T> = std::result::Result<T, CandleError>;

enum Net {
    Bert(bert::BertModel),
    ModernBert(modernbert::ModernBert),
    NomicBert(nomic_bert::NomicBertModel),
    JinaBert(Box<Jina>),
    /// Cloned per sequence: a clone starts with an empty key/value cache.
    Qwen3(qwen3::Model),
}

/// candle's JinaBERT keeps an ALiBi table of heads x n x n for the n positions its config names
/// (8,192 in the released models: 3 GiB at 12 heads), so it is built for the longest sequence
/// seen so far, from 512 up, doubling; the weights stay mapped for a rebuild.
struct Jina {
    config: jina_bert::Config,
    positions: usize,
    vb: VarBuilder<'static>,
    built: Mutex<Option<(usize, jina_bert::BertModel)>>,
}

impl Jina {
    fn forward(&self, input: &Tensor, n: usize) -> Result<Tensor> {
        let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
        if built.as_ref().is_none_or(|(cap, _)| *cap < n) {
            let old = built.as_ref().map_or(0, |(cap, _)| *cap);
            let cap = n
                .next_power_of_two()
                .max(512)
                .max(old * 2)
                .min(self.positions)
                .max(n);
            // The old table and weights go before the new ones are made.
            *built = None;
            let mut config = self.config.clone();
            config.max_position_embeddings = cap;
            *built = Some((cap, jina_bert::BertModel::new(self.vb.clone(), &config)?));
        }
        let (_, model) = built.as_ref().expect("built above");
        Ok(model.forward(input)?)
    }
}

pub struct CandleEncoder {
    net: Net,
    pub hidden: usize,
    /// Tokens a sequence may hold.
    pub max_positions: usize,
    device: Device,
    pub model_type: String,
}

/// The device asked for: `cpu`, or `cuda` / `metal` when chunkscope was built with that feature.
pub fn device(name: &str) -> Result<Device> {
    match name {
        "" | "cpu" => Ok(Device::Cpu),
        "cuda" => Device::new_cuda(0).map_err(|cause| CandleError::Device {
            name: "cuda".into(),
            needs: "--features cuda (and a CUDA toolkit)",
            cause,
        }),
        "metal" => Device::new_metal(0).map_err(|cause| CandleError::Device {
            name: "metal".into(),
            needs: "--features metal (macOS)",
            cause,
        }),
        other => Err(CandleError::UnknownDevice(other.to_string())),
    }
}

impl CandleEncoder {
    pub fn load(dir: &Path, device: Device) -> Result<CandleEncoder> {
        let config_path = dir.join("config.json");
        let mut v = super::hf_config::read(&config_path)?;
        let model_type = super::architecture_of(&v).unwrap_or("bert").to_string();
        let weights = dir.join("model.safetensors");
        if !weights.is_file() {
            return Err(CandleError::NoWeights {
                dir: dir.to_path_buf(),
            });
        }
        // SAFETY: the weights file is mapped read-only and not modified while mapped.
        let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, &device) }
            .map_err(|cause| CandleError::Map {
            path: weights.clone(),
            cause,
        })?;
        let (bare, (prefix, rows)) = weights_layout(&weights)?;
        complete_config(&mut v, &model_type, rows);
        let vb = if bare {
            vb.rename_f(|n| n.strip_prefix("model.").unwrap_or(n).to_string())
        } else {
            vb
        };
        let encoder_vb = if prefix.is_empty() {
            vb.clone()
        } else {
            vb.pp(&prefix)
        };
        let config = ReadConfig {
            path: &config_path,
            v: &v,
            model_type: &model_type,
        };
        if !CANDLE_TYPES.contains(&model_type.as_str()) {
            return Err(config.unsupported(&model_type));
        }
        let num = |k: &str| v.get(k).and_then(|n| n.as_u64()).map(|n| n as usize);
        let hidden = num("hidden_size")
            .or_else(|| num("n_embd"))
            .ok_or_else(|| {
                config.refused(format!("not a {model_type} configuration (no hidden_size)"))
            })?;
        let max_positions = crate::model::positions_of(&v).unwrap_or(512);
        let net = config.build(vb, encoder_vb)?;
        Ok(CandleEncoder {
            net,
            hidden,
            max_positions,
            device,
            model_type,
        })
    }

    /// The last layer's states of a pass of sequences, as the native path gives them: rows of
    /// `hidden`, and the row each sequence starts at. The sequences run as one batch, padded on
    /// the right to the longest and masked (BERT, ModernBERT, NomicBERT), or causal so that the
    /// padding after a sequence cannot reach it (Qwen3); candle's JinaBERT takes no mask, so its
    /// sequences run one by one.
    pub fn hidden_states(&self, seqs: &[Vec<u32>]) -> Result<(Vec<f32>, Vec<usize>)> {
        let longest = seqs.iter().map(Vec::len).max().unwrap_or(0);
        if longest == 0 {
            return Ok((Vec::new(), vec![0; seqs.len()]));
        }
        if seqs.len() == 1 || matches!(self.net, Net::JinaBert(_)) {
            let mut states = Vec::new();
            let mut starts = Vec::with_capacity(seqs.len());
            for ids in seqs {
                starts.push(states.len() / self.hidden);
                if !ids.is_empty() {
                    let input = Tensor::new(ids.as_slice(), &self.device)?.unsqueeze(0)?;
                    states.extend(Self::rows(self.forward(&input, None, ids.len())?)?);
                }
            }
            return Ok((states, starts));
        }
        let mut ids = vec![0u32; seqs.len() * longest];
        let mut mask = vec![0u32; seqs.len() * longest];
        for (i, seq) in seqs.iter().enumerate() {
            ids[i * longest..i * longest + seq.len()].copy_from_slice(seq);
            mask[i * longest..i * longest + seq.len()].fill(1);
        }
        let shape = (seqs.len(), longest);
        let input = Tensor::from_vec(ids, shape, &self.device)?;
        let mask = Tensor::from_vec(mask, shape, &self.device)?;
        let states = Self::rows(self.forward(&input, Some(&mask), longest)?)?;
        Ok((states, (0..seqs.len()).map(|i| i * longest).collect()))
    }

    /// One forward pass over `input` (batch x `n`); `mask` marks the real tokens of a padded
    /// batch (1) and its padding (0).
    fn forward(&self, input: &Tensor, mask: Option<&Tensor>, n: usize) -> Result<Tensor> {
        let ones;
        let mask = match mask {
            Some(m) => m,
            None => {
                ones = input.ones_like()?;
                &ones
            }
        };
        Ok(match &self.net {
            Net::Bert(m) => m.forward(input, &input.zeros_like()?, Some(mask))?,
            Net::ModernBert(m) => m.forward(input, mask)?,
            Net::NomicBert(m) => m.forward(input, Some(&input.zeros_like()?), Some(mask))?,
            Net::JinaBert(m) => m.forward(input, n)?,
            Net::Qwen3(m) => m.clone().forward(input, 0)?,
        })
    }

    /// A batch x n x hidden tensor as f32 rows.
    fn rows(out: Tensor) -> Result<Vec<f32>> {
        Ok(out.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?)
    }
}

/// A bare model saved by transformers has no "model." prefix; candle's modules ask for it. The
/// word table says where an encoder's tensors start ("", "bert", ...) and how many rows it has
/// (NomicBERT pads its vocabulary to a multiple of 64). Returns (bare, (prefix, rows)).
fn weights_layout(weights: &Path) -> Result<(bool, (String, usize))> {
    let open = |cause| CandleError::Open {
        path: weights.to_path_buf(),
        cause,
    };
    let file = std::fs::File::open(weights).map_err(open)?;
    // SAFETY: the weights file is mapped read-only and not modified while mapped.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(open)?;
    let st = safetensors::SafeTensors::deserialize(&map).map_err(|cause| {
        CandleError::NotSafetensors {
            path: weights.to_path_buf(),
            cause,
        }
    })?;
    let words = super::bert::word_table(&st)
        .map(|(prefix, rows)| (prefix.trim_end_matches('.').to_string(), rows));
    let bare = !st.names().iter().any(|n| n.starts_with("model."));
    Ok((bare, words.unwrap_or_default()))
}

/// What candle's configs need that a saved config.json may lack: the word table's real row
/// count (`rows`, 0 when unknown), and the defaults the released JinaBERT configs always carry.
fn complete_config(v: &mut serde_json::Value, model_type: &str, rows: usize) {
    if rows > 0 && matches!(model_type, "nomic_bert" | "jina_bert") {
        v["vocab_size"] = rows.into();
    }
    if model_type == "jina_bert" {
        for (k, d) in [
            ("hidden_act", serde_json::json!("gelu")),
            ("initializer_range", serde_json::json!(0.02)),
            ("layer_norm_eps", serde_json::json!(1e-12)),
            ("pad_token_id", serde_json::json!(0)),
            ("type_vocab_size", serde_json::json!(2)),
        ] {
            if v.get(k).is_none_or(|x| x.is_null()) {
                v[k] = d;
            }
        }
    }
}

/// A model folder's config.json, read as one of candle's architectures.
struct ReadConfig<'a> {
    path: &'a Path,
    v: &'a serde_json::Value,
    model_type: &'a str,
}

impl ReadConfig<'_> {
    fn refused(&self, why: String) -> CandleError {
        CandleError::Refused {
            path: self.path.to_path_buf(),
            why,
        }
    }

    fn unsupported(&self, kind: &str) -> CandleError {
        self.refused(format!(
            "model_type {kind} is not supported (native: {}; candle: {})",
            super::bert::NATIVE_TYPES.join(", "),
            CANDLE_TYPES.join(", ")
        ))
    }

    /// A feature of the model candle does not run.
    fn refuse(&self, why: &str) -> Result<Net> {
        Err(self.refused(format!("{} with {why} is not supported", self.model_type)))
    }

    /// The config as architecture `what`'s (`T`).
    fn parse<T: serde::de::DeserializeOwned>(&self, v: serde_json::Value, what: &str) -> Result<T> {
        serde_json::from_value(v).map_err(|cause| CandleError::BadConfig {
            path: self.path.to_path_buf(),
            model_type: what.to_string(),
            cause,
        })
    }

    /// The network, its tensors from `vb` (the encoder's from `encoder_vb`).
    fn build(&self, vb: VarBuilder<'static>, encoder_vb: VarBuilder<'static>) -> Result<Net> {
        let v = self.v;
        Ok(match self.model_type {
            "bert" => {
                let c: bert::Config = self.parse(v.clone(), "BERT")?;
                Net::Bert(bert::BertModel::load(vb, &c)?)
            }
            "modernbert" => {
                // transformers writes the norm's epsilon as norm_eps.
                let mut v = v.clone();
                if v.get("layer_norm_eps").is_none() {
                    let eps = v
                        .get("norm_eps")
                        .cloned()
                        .unwrap_or(serde_json::json!(1e-5));
                    v["layer_norm_eps"] = eps;
                }
                let c: modernbert::Config = self.parse(v, "ModernBERT")?;
                Net::ModernBert(modernbert::ModernBert::load(vb, &c)?)
            }
            "nomic_bert" => {
                let c: nomic_bert::Config = self.parse(v.clone(), "NomicBERT")?;
                if let Some(why) = super::bert::nomic_unsupported(v) {
                    self.refuse(&why)?
                } else {
                    Net::NomicBert(nomic_bert::NomicBertModel::load(encoder_vb, &c)?)
                }
            }
            "jina_bert" => {
                let c: jina_bert::Config = self.parse(v.clone(), "JinaBERT")?;
                match v.get("feed_forward_type").and_then(|f| f.as_str()) {
                    Some("geglu") => Net::JinaBert(Box::new(Jina {
                        positions: c.max_position_embeddings,
                        config: c,
                        vb: encoder_vb,
                        built: Mutex::new(None),
                    })),
                    other => self.refuse(&format!(
                        "feed_forward_type {} (candle runs geglu)",
                        other.unwrap_or("unset")
                    ))?,
                }
            }
            "qwen3" => {
                let c: qwen3::Config = self.parse(v.clone(), "Qwen3")?;
                Net::Qwen3(qwen3::Model::new(&c, vb)?)
            }
            other => return Err(self.unsupported(other)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_errors_are_typed() {
        assert!(matches!(device("tpu"), Err(CandleError::UnknownDevice(d)) if d == "tpu"));
        let dir =
            std::env::temp_dir().join(format!("chunkscope-candle-err-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(matches!(
            CandleEncoder::load(&dir, Device::Cpu),
            Err(CandleError::Config(_))
        ));
        std::fs::write(dir.join("config.json"), r#"{"model_type": "modernbert"}"#).unwrap();
        let err = CandleEncoder::load(&dir, Device::Cpu).err().unwrap();
        assert!(
            matches!(&err, CandleError::NoWeights { dir: d } if d == &dir),
            "{err:?}"
        );
        assert!(err.to_string().contains("no model.safetensors"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
