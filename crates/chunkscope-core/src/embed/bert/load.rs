//! The weights: safetensors memory-mapped, each tensor checked against the shape config.json
//! gives, the dense layers packed for the precision asked.

use std::fs::File;
use std::path::Path;

use safetensors::{Dtype, SafeTensors};

use super::{Bert, BertConfig, BertError, Dense, Family, Layer};
use crate::embed::lowp::Precision;

/// Rows of a 2-D table (`name` in full): a tensor of another rank, or without rows, is an error
/// naming it, never an index out of range.
pub(super) fn table_rows(st: &SafeTensors, name: &str) -> Result<usize, String> {
    let t = st
        .tensor(name)
        .map_err(|e| format!("weights: no tensor {name}: {e}"))?;
    match t.shape() {
        [rows, cols] if *rows > 0 && *cols > 0 => Ok(*rows),
        shape => Err(format!(
            "weights: {name} has shape {shape:?}, expected a table (rows x columns)"
        )),
    }
}

fn tensor(st: &SafeTensors, prefix: &str, name: &str, len: usize) -> Result<Vec<f32>, String> {
    let full = format!("{prefix}{name}");
    let t = st
        .tensor(&full)
        .map_err(|e| format!("weights: no tensor {full}: {e}"))?;
    // Weights stored in half precision are widened to f32 once, at load.
    let width = match t.dtype() {
        Dtype::F32 => 4,
        Dtype::F16 | Dtype::BF16 => 2,
        other => {
            return Err(format!(
                "weights: {full} is {other:?}, expected F32, F16 or BF16"
            ))
        }
    };
    let data = t.data();
    if data.len() != len * width {
        return Err(format!(
            "weights: {full} has {} values, expected {len}",
            data.len() / width
        ));
    }
    Ok(f32_values(&t).unwrap_or_default())
}

/// Reads the tensor of a name (below the model's prefix) and length, or says why not.
type TensorOf<'a> = dyn Fn(&str, usize) -> Result<Vec<f32>, BertError> + 'a;

/// A tensor's values widened to f32 (F32, F16 or BF16 stored); None for other types.
pub(crate) fn f32_values(t: &safetensors::tensor::TensorView) -> Option<Vec<f32>> {
    let data = t.data();
    Some(match t.dtype() {
        Dtype::F32 => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Dtype::F16 => data
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        Dtype::BF16 => data
            .chunks_exact(2)
            .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        _ => return None,
    })
}

impl Bert {
    /// Load from a model folder holding config.json and model.safetensors, in f32.
    pub fn load(dir: &Path) -> Result<Bert, BertError> {
        Bert::load_with(dir, Precision::F32)
    }

    /// Load with the dense layers in `precision` (their f32 weights are packed and dropped
    /// layer by layer, so the f32 copy of the whole model never exists beside the packed one).
    pub fn load_with(dir: &Path, precision: Precision) -> Result<Bert, BertError> {
        let mut config = BertConfig::from_file(&dir.join("config.json"))?;
        let path = dir.join("model.safetensors");
        let file = File::open(&path).map_err(|cause| BertError::Open {
            path: path.clone(),
            cause,
        })?;
        // SAFETY: the file is opened read-only and only read while mapped; we copy what we need.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|cause| BertError::Map {
            path: path.clone(),
            cause,
        })?;
        let st = SafeTensors::deserialize(&map).map_err(|cause| BertError::NotSafetensors {
            path: path.clone(),
            cause,
        })?;
        let weights = |why: String| BertError::Weights {
            path: path.clone(),
            why,
        };
        let Some((prefix, rows)) = word_table(&st) else {
            return Err(weights(
                "no tensor embeddings.word_embeddings.weight".into(),
            ));
        };
        let prefix = prefix.as_str();
        config.vocab = rows;
        let c = &config;
        let h = c.hidden;
        let g = |name: &str, len: usize| tensor(&st, prefix, name, len).map_err(weights);
        let names = tensor_names(c.family);
        let layers = (0..c.layers)
            .map(|l| load_layer(&g, c, &format!("{}.{l}.", names[0]), &names, precision))
            .collect::<Result<Vec<Layer>, BertError>>()?;
        // Token types: 0 for every token of an embedder's input, 1 for a cross-encoder's second
        // text (DistilBERT has no token types: one zero row).
        let types_name = format!("{prefix}embeddings.token_type_embeddings.weight");
        let token_types = match st.tensor(&types_name) {
            Ok(_) => {
                let rows = table_rows(&st, &types_name).map_err(weights)?;
                g("embeddings.token_type_embeddings.weight", rows * h)?
            }
            Err(_) => vec![0.0; h],
        };
        // MPNet: one relative position bias table (buckets x heads) shared by every layer.
        let rel_bias = match c.family {
            Family::MpNet => {
                let name = format!("{prefix}encoder.relative_attention_bias.weight");
                let buckets = table_rows(&st, &name).map_err(weights)?;
                Some((
                    g("encoder.relative_attention_bias.weight", buckets * c.heads)?,
                    buckets,
                ))
            }
            _ => None,
        };
        let positional = !matches!(c.family, Family::Nomic | Family::Jina);
        let emb_ln = if c.family == Family::Nomic {
            "emb_ln"
        } else {
            "embeddings.LayerNorm"
        };
        Ok(Bert {
            precision,
            rel_bias,
            word: g("embeddings.word_embeddings.weight", c.vocab * h)?,
            position: if positional {
                g("embeddings.position_embeddings.weight", c.max_positions * h)?
            } else {
                Vec::new()
            },
            token_types,
            emb_ln_g: g(&format!("{emb_ln}.weight"), h)?,
            emb_ln_b: g(&format!("{emb_ln}.bias"), h)?,
            layers,
            config,
        })
    }

    /// Bytes the dense layers' weights take in the precision in force.
    pub fn dense_bytes(&self) -> usize {
        self.layers
            .iter()
            .map(|l| l.qkv_w.bytes() + l.out_w.bytes() + l.inter_w.bytes() + l.down_w.bytes())
            .sum()
    }
}

/// Tensor names per family: (layer prefix, q, k, v, attention out, first norm, up, down, second
/// norm).
fn tensor_names(family: Family) -> [&'static str; 9] {
    match family {
        Family::DistilBert => [
            "transformer.layer",
            "attention.q_lin",
            "attention.k_lin",
            "attention.v_lin",
            "attention.out_lin",
            "sa_layer_norm",
            "ffn.lin1",
            "ffn.lin2",
            "output_layer_norm",
        ],
        Family::MpNet => [
            "encoder.layer",
            "attention.attn.q",
            "attention.attn.k",
            "attention.attn.v",
            "attention.attn.o",
            "attention.LayerNorm",
            "intermediate.dense",
            "output.dense",
            "output.LayerNorm",
        ],
        Family::Nomic => [
            "encoder.layers",
            "attn.Wqkv",
            "",
            "",
            "attn.out_proj",
            "norm1",
            "mlp.fc12",
            "mlp.fc2",
            "norm2",
        ],
        family => {
            let mut names = [
                "encoder.layer",
                "attention.self.query",
                "attention.self.key",
                "attention.self.value",
                "attention.output.dense",
                "attention.output.LayerNorm",
                "intermediate.dense",
                "output.dense",
                "output.LayerNorm",
            ];
            // JinaBERT: BERT's attention, its own gated feed-forward.
            if family == Family::Jina {
                names[6..].copy_from_slice(&["mlp.gated_layers", "mlp.wo", "mlp.layernorm"]);
            }
            names
        }
    }
}

/// Layer `p` (its name prefix, "encoder.layer.3."): attention with q, k and v stacked, the
/// feed-forward (gated for NomicBERT and JinaBERT), both norms; dense weights packed for
/// `precision`.
fn load_layer(
    g: &TensorOf,
    c: &BertConfig,
    p: &str,
    names: &[&str; 9],
    precision: Precision,
) -> Result<Layer, BertError> {
    let (h, i) = (c.hidden, c.intermediate);
    let [_, q, k, v, out, ln1, up, down, ln2] = *names;
    // A gated feed-forward projects to 2 x intermediate: the half its activation reads first,
    // the half it multiplies by second.
    let up_n = if c.gated() { 2 * i } else { i };
    // A bias the config says is absent (NomicBERT) is zeros.
    let bias = |name: String, len: usize, present: bool| -> Result<Vec<f32>, BertError> {
        if present {
            g(&name, len)
        } else {
            Ok(vec![0.0; len])
        }
    };
    let [qkv_bias, up_bias, down_bias] = c.biases;
    let (qkv_w, qkv_b) = if c.family == Family::Nomic {
        (
            g(&format!("{p}{q}.weight"), 3 * h * h)?,
            bias(format!("{p}{q}.bias"), 3 * h, qkv_bias)?,
        )
    } else {
        let mut w = g(&format!("{p}{q}.weight"), h * h)?;
        w.extend(g(&format!("{p}{k}.weight"), h * h)?);
        w.extend(g(&format!("{p}{v}.weight"), h * h)?);
        let mut b = g(&format!("{p}{q}.bias"), h)?;
        b.extend(g(&format!("{p}{k}.bias"), h)?);
        b.extend(g(&format!("{p}{v}.bias"), h)?);
        (w, b)
    };
    let (inter_w, inter_b) = match c.family {
        // fc12 is the gate (through SiLU), fc11 the value.
        Family::Nomic => {
            let mut w = g(&format!("{p}mlp.fc12.weight"), i * h)?;
            w.extend(g(&format!("{p}mlp.fc11.weight"), i * h)?);
            let mut b = bias(format!("{p}mlp.fc12.bias"), i, up_bias)?;
            b.extend(bias(format!("{p}mlp.fc11.bias"), i, up_bias)?);
            (w, b)
        }
        Family::Jina => (g(&format!("{p}{up}.weight"), up_n * h)?, vec![0.0; up_n]),
        _ => (
            g(&format!("{p}{up}.weight"), i * h)?,
            g(&format!("{p}{up}.bias"), i)?,
        ),
    };
    let dense = |w, n, k| Dense::new(w, n, k, precision);
    Ok(Layer {
        qkv_w: dense(qkv_w, 3 * h, h),
        qkv_b,
        out_w: dense(g(&format!("{p}{out}.weight"), h * h)?, h, h),
        out_b: bias(format!("{p}{out}.bias"), h, qkv_bias)?,
        ln1_g: g(&format!("{p}{ln1}.weight"), h)?,
        ln1_b: g(&format!("{p}{ln1}.bias"), h)?,
        inter_w: dense(inter_w, up_n, h),
        inter_b,
        down_w: dense(g(&format!("{p}{down}.weight"), h * i)?, h, i),
        down_b: bias(format!("{p}{down}.bias"), h, down_bias)?,
        ln2_g: g(&format!("{p}{ln2}.weight"), h)?,
        ln2_b: g(&format!("{p}{ln2}.bias"), h)?,
    })
}

/// Where an encoder's tensors start ("", "bert.", "roberta.", ...) and how many rows its word
/// table has (NomicBERT pads it past `vocab_size`), read from the word table's name and shape.
pub(in crate::embed) fn word_table(st: &SafeTensors) -> Option<(String, usize)> {
    st.tensors().into_iter().find_map(|(name, t)| {
        let prefix = name.strip_suffix("embeddings.word_embeddings.weight")?;
        Some((prefix.to_string(), *t.shape().first()?))
    })
}
