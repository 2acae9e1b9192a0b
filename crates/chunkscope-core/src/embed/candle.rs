//! Transformers run through candle-transformers: BERT (for comparison with the native path),
//! ModernBERT and Qwen3 (a decoder embedder, as in Qwen3-Embedding, pooled on its last token).
//! Weights are memory-mapped; each sequence runs alone (no padding), and the token states go
//! to the same sentence-transformers pooling as the native path's.

use std::path::Path;

use anyhow::{bail, Context, Result};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::{bert, modernbert, qwen3};

/// `model_type`s run through candle.
pub const CANDLE_TYPES: &[&str] = &["bert", "modernbert", "qwen3"];

enum Net {
    Bert(bert::BertModel),
    ModernBert(modernbert::ModernBert),
    /// Cloned per sequence: a clone starts with an empty key/value cache.
    Qwen3(qwen3::Model),
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
        let text = std::fs::read_to_string(&config_path)
            .with_context(|| config_path.display().to_string())?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not valid JSON", config_path.display()))?;
        let model_type = v
            .get("model_type")
            .and_then(|t| t.as_str())
            .unwrap_or("bert")
            .to_string();
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
        let bare = {
            let file = std::fs::File::open(&weights)?;
            // SAFETY: as above.
            let map = unsafe { memmap2::Mmap::map(&file) }?;
            let st = safetensors::SafeTensors::deserialize(&map)?;
            !st.names().iter().any(|n| n.starts_with("model."))
        };
        let vb = if bare {
            vb.rename_f(|n| n.strip_prefix("model.").unwrap_or(n).to_string())
        } else {
            vb
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
        let hidden = num("hidden_size").with_context(|| parse(&model_type))?;
        let max_positions = num("max_position_embeddings").unwrap_or(512);
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

    /// The last layer's states of one sequence: `ids.len()` rows of `hidden`.
    pub fn hidden_states(&self, ids: &[u32]) -> Result<Vec<f32>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let input = Tensor::new(ids, &self.device)?.unsqueeze(0)?;
        let out = match &self.net {
            Net::Bert(m) => {
                let types = input.zeros_like()?;
                let mask = input.ones_like()?;
                m.forward(&input, &types, Some(&mask))?
            }
            Net::ModernBert(m) => {
                let mask = input.ones_like()?;
                m.forward(&input, &mask)?
            }
            Net::Qwen3(m) => m.clone().forward(&input, 0)?,
        };
        Ok(out
            .squeeze(0)?
            .to_dtype(DType::F32)?
            .flatten_all()?
            .to_vec1::<f32>()?)
    }
}
