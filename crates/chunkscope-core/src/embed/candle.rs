//! Transformers run through candle-transformers: BERT (for comparison with the native path),
//! ModernBERT, NomicBERT (nomic-embed-text: rotary positions, SwiGLU), JinaBERT
//! (jina-embeddings-v2: ALiBi positions, gated GELU) and Qwen3 (a decoder embedder, as in
//! Qwen3-Embedding, pooled on its last token). Weights are memory-mapped; sequences of similar
//! length run as one padded, masked batch, and the token states go to the same
//! sentence-transformers pooling as the native path's.

use std::path::Path;
use std::sync::Mutex;

use anyhow::{bail, Context, Result};
use candle_core::{DType, Device, Tensor};
use candle_nn::Module;
use candle_nn::VarBuilder;
use candle_transformers::models::{bert, jina_bert, modernbert, nomic_bert, qwen3};

/// Architectures run through candle (`jina_bert` is a `bert` config with ALiBi positions).
pub const CANDLE_TYPES: &[&str] = &["bert", "modernbert", "nomic_bert", "jina_bert", "qwen3"];

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
        "cuda" => Device::new_cuda(0).context(
            "device cuda: build chunkscope with --features cuda (and a CUDA toolkit) to use it",
        ),
        "metal" => Device::new_metal(0)
            .context("device metal: build chunkscope with --features metal (macOS) to use it"),
        other => bail!("unknown device '{other}' (expected cpu, cuda or metal)"),
    }
}

impl CandleEncoder {
    pub fn load(dir: &Path, device: Device) -> Result<CandleEncoder> {
        let config_path = dir.join("config.json");
        let v = super::hf_config::read(&config_path)?;
        let model_type = super::architecture_of(&v).unwrap_or("bert").to_string();
        let weights = dir.join("model.safetensors");
        if !weights.is_file() {
            bail!(
                "{}: no model.safetensors (only safetensors weights are read)",
                dir.display()
            );
        }
        // SAFETY: the weights file is mapped read-only and not modified while mapped.
        let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, &device) }
            .with_context(|| format!("{}: cannot map the weights", weights.display()))?;
        // A bare model saved by transformers has no "model." prefix; candle's modules ask for it.
        // The word table says where an encoder's tensors start ("", "bert.", ...) and how many
        // rows it has (NomicBERT pads its vocabulary to a multiple of 64).
        let (bare, words) = {
            let file = std::fs::File::open(&weights)?;
            // SAFETY: as above.
            let map = unsafe { memmap2::Mmap::map(&file) }?;
            let st = safetensors::SafeTensors::deserialize(&map)?;
            let words = super::bert::word_table(&st)
                .map(|(prefix, rows)| (prefix.trim_end_matches('.').to_string(), rows));
            (!st.names().iter().any(|n| n.starts_with("model.")), words)
        };
        let mut v = v;
        let (prefix, rows) = words.unwrap_or_default();
        if rows > 0 && matches!(model_type.as_str(), "nomic_bert" | "jina_bert") {
            v["vocab_size"] = rows.into();
        }
        // What the released JinaBERT configs always carry, for configs saved without them.
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
        if !CANDLE_TYPES.contains(&model_type.as_str()) {
            bail!(
                "{}: model_type {model_type} is not supported (native: {}; candle: {})",
                config_path.display(),
                super::bert::NATIVE_TYPES.join(", "),
                CANDLE_TYPES.join(", ")
            );
        }
        let parse = |what: &str| format!("{}: not a {what} configuration", config_path.display());
        let num = |k: &str| v.get(k).and_then(|n| n.as_u64()).map(|n| n as usize);
        let hidden = num("hidden_size")
            .or_else(|| num("n_embd"))
            .with_context(|| parse(&model_type))?;
        let max_positions = crate::model::positions_of(&v).unwrap_or(512);
        let refuse = |why: &str| -> Result<Net> {
            bail!(
                "{}: {model_type} with {why} is not supported",
                config_path.display()
            )
        };
        let net = match model_type.as_str() {
            "bert" => {
                let c: bert::Config =
                    serde_json::from_value(v.clone()).with_context(|| parse("BERT"))?;
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
                let c: modernbert::Config =
                    serde_json::from_value(v).with_context(|| parse("ModernBERT"))?;
                Net::ModernBert(modernbert::ModernBert::load(vb, &c)?)
            }
            "nomic_bert" => {
                let c: nomic_bert::Config =
                    serde_json::from_value(v.clone()).with_context(|| parse("NomicBERT"))?;
                if let Some(why) = super::bert::nomic_unsupported(&v) {
                    refuse(&why)?
                } else {
                    Net::NomicBert(nomic_bert::NomicBertModel::load(encoder_vb, &c)?)
                }
            }
            "jina_bert" => {
                let c: jina_bert::Config =
                    serde_json::from_value(v.clone()).with_context(|| parse("JinaBERT"))?;
                match v.get("feed_forward_type").and_then(|f| f.as_str()) {
                    Some("geglu") => Net::JinaBert(Box::new(Jina {
                        positions: c.max_position_embeddings,
                        config: c,
                        vb: encoder_vb,
                        built: Mutex::new(None),
                    })),
                    other => refuse(&format!(
                        "feed_forward_type {} (candle runs geglu)",
                        other.unwrap_or("unset")
                    ))?,
                }
            }
            "qwen3" => {
                let c: qwen3::Config =
                    serde_json::from_value(v.clone()).with_context(|| parse("Qwen3"))?;
                Net::Qwen3(qwen3::Model::new(&c, vb)?)
            }
            other => bail!(
                "{}: model_type {other} is not supported (native: {}; candle: {})",
                config_path.display(),
                super::bert::NATIVE_TYPES.join(", "),
                CANDLE_TYPES.join(", ")
            ),
        };
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
