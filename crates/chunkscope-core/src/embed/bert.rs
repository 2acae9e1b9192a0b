//! A BERT encoder forward pass over the model's safetensors weights (memory-mapped, read once),
//! with matrix products by the gemm crate. The same pass runs the BERT family's variants: RoBERTa's
//! and MPNet's positions, DistilBERT's names, NomicBERT (rotary positions, SwiGLU) and JinaBERT
//! (ALiBi, gated GELU). Sequences are packed without padding: the dense layers
//! run on all real tokens of a batch at once and attention runs per sequence and head, so no work
//! is spent on pad tokens and no attention mask is needed.

use std::fs::File;
use std::path::Path;

use anyhow::{bail, Context, Result};
use gemm::Parallelism;
use rayon::prelude::*;
use safetensors::{Dtype, SafeTensors};

use super::kernels::{act_bias, add_layer_norm_rows, exp_rows, layer_norm_rows, Activation};
use super::lowp::{Packed, Precision};

/// The encoder families the native embedder runs: BERT's layout, RoBERTa's (positions counted
/// from the padding id + 1, as XLM-RoBERTa and multilingual-e5 have it) and DistilBERT's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Bert,
    Roberta,
    DistilBert,
    /// MPNet (all-mpnet-base-v2): RoBERTa's positions plus a relative position bias in
    /// attention.
    MpNet,
    /// NomicBERT (nomic-embed-text): no position table, rotary positions on queries and keys,
    /// a fused q|k|v projection, a SwiGLU feed-forward.
    Nomic,
    /// JinaBERT (jina-embeddings-v2): no position table, ALiBi in attention, a gated GELU
    /// feed-forward.
    Jina,
}

/// `model_type`s read natively, for the error that names what is supported.
pub const NATIVE_TYPES: &[&str] = &[
    "bert",
    "roberta",
    "xlm-roberta",
    "camembert",
    "distilbert",
    "mpnet",
    "nomic_bert",
    "jina_bert",
];

/// Why a NomicBERT config describes a variant neither backend runs (checked against our
/// reference forward pass only for the released models' settings), or None.
pub fn nomic_unsupported(v: &serde_json::Value) -> Option<String> {
    let flag = |k: &str| v.get(k).and_then(|b| b.as_bool()).unwrap_or(false);
    let act = v
        .get("activation_function")
        .and_then(|a| a.as_str())
        .unwrap_or("swiglu");
    let fraction = v
        .get("rotary_emb_fraction")
        .and_then(|f| f.as_f64())
        .unwrap_or(1.0);
    if act != "swiglu" {
        Some(format!("activation_function {act}"))
    } else if fraction != 1.0 {
        Some("rotary_emb_fraction below 1 (partial rotary)".into())
    } else if flag("prenorm") || flag("causal") || flag("rotary_head_dim") {
        Some("prenorm, causal or rotary_head_dim set".into())
    } else if v.get("rotary_emb_scale_base").is_some_and(|b| !b.is_null()) {
        Some("rotary_emb_scale_base (xPos)".into())
    } else {
        None
    }
}

/// Layers a config may declare: more than any released model has (a mistyped count would
/// otherwise have the load reserve room for billions of them).
const MAX_LAYERS: usize = 4096;

#[derive(Debug, Clone, PartialEq)]
pub struct BertConfig {
    pub family: Family,
    pub hidden: usize,
    pub heads: usize,
    pub layers: usize,
    pub intermediate: usize,
    pub eps: f32,
    /// Rows of the position table.
    pub max_positions: usize,
    /// The position of a sequence's first token (RoBERTa: padding id + 1).
    pub position_offset: usize,
    /// Rows of the word table, set from the weights at load (NomicBERT pads it past
    /// config.json's `vocab_size`, so that number is not used).
    pub vocab: usize,
    /// NomicBERT's rotary base.
    pub rotary_base: f32,
    /// Biases NomicBERT may leave out: q|k|v and output, first feed-forward, second.
    pub biases: [bool; 3],
    /// The feed-forward activation (the gated families have their own).
    pub act: Activation,
}

impl BertConfig {
    pub fn from_file(path: &Path) -> Result<BertConfig> {
        let c = BertConfig::read(path)?;
        // Sizes the forward pass slices by or the load reserves for: refused here rather than
        // panicking (or aborting on a failed allocation) in the embedder's thread (zero and
        // uneven sizes are refused by hf_config).
        if c.max_positions <= c.position_offset {
            bail!(
                "{}: {} positions leave no room for a token (offset {})",
                path.display(),
                c.max_positions,
                c.position_offset
            );
        }
        if c.layers > MAX_LAYERS {
            bail!(
                "{}: {} layers is more than any model has (at most {MAX_LAYERS} are read)",
                path.display(),
                c.layers
            );
        }
        // The largest weight tables, in bytes: q|k|v, the feed-forward (gated: twice), the
        // position table. One past the address space describes weights no file holds.
        let up = if c.gated() { 2 } else { 1 };
        let bytes = |n: &[usize]| {
            n.iter()
                .try_fold(4usize, |a, &b| a.checked_mul(b))
                .filter(|&b| b <= isize::MAX as usize)
        };
        if bytes(&[3, c.hidden, c.hidden]).is_none()
            || bytes(&[up, c.intermediate, c.hidden]).is_none()
            || bytes(&[c.max_positions, c.hidden]).is_none()
        {
            bail!(
                "{}: hidden size {}, intermediate size {} and {} positions describe weights larger than memory can address",
                path.display(),
                c.hidden,
                c.intermediate,
                c.max_positions
            );
        }
        Ok(c)
    }

    fn read(path: &Path) -> Result<BertConfig> {
        let v = super::hf_config::read(path)?;
        let model_type = super::architecture_of(&v).unwrap_or("bert");
        let family = match model_type {
            "bert" => Family::Bert,
            "roberta" | "xlm-roberta" | "camembert" => Family::Roberta,
            "distilbert" => Family::DistilBert,
            "mpnet" => Family::MpNet,
            "nomic_bert" => Family::Nomic,
            "jina_bert" => Family::Jina,
            other => bail!(
                "{}: model_type {other} is not supported by the native embedder (supported: {})",
                path.display(),
                NATIVE_TYPES.join(", ")
            ),
        };
        let refuse = |why: &str| -> Result<BertConfig> {
            bail!(
                "{}: {model_type} with {why} is not supported",
                path.display()
            )
        };
        // Relative positions other than JinaBERT's ALiBi: said by name, not by a missing tensor.
        if let Some(kind) = v.get("position_embedding_type").and_then(|t| t.as_str()) {
            if kind != "absolute" && kind != "alibi" {
                return refuse(&format!("position_embedding_type {kind}"));
            }
        }
        if family == Family::Nomic {
            if let Some(why) = nomic_unsupported(&v) {
                return refuse(&why);
            }
            if v.get("rotary_emb_interleaved").and_then(|b| b.as_bool()) == Some(true) {
                return refuse("rotary_emb_interleaved (the candle backend runs it)");
            }
        }
        if family == Family::Jina {
            let ff = v.get("feed_forward_type").and_then(|f| f.as_str());
            if ff != Some("geglu") {
                return refuse(&format!(
                    "feed_forward_type {} (geglu is run)",
                    ff.unwrap_or("unset")
                ));
            }
        }
        let num = |k: &str| -> Result<usize> {
            v.get(k)
                .and_then(|n| n.as_u64())
                .map(|n| n as usize)
                .with_context(|| format!("{}: no {k}", path.display()))
        };
        if family == Family::Nomic {
            let flag = |k: &str| v.get(k).and_then(|b| b.as_bool()).unwrap_or(false);
            return Ok(BertConfig {
                family,
                hidden: num("n_embd")?,
                heads: num("n_head")?,
                layers: num("n_layer")?,
                intermediate: num("n_inner")?,
                eps: v
                    .get("layer_norm_epsilon")
                    .and_then(|e| e.as_f64())
                    .unwrap_or(1e-12) as f32,
                max_positions: crate::model::positions_of(&v).unwrap_or(2048),
                position_offset: 0,
                vocab: 0,
                rotary_base: v
                    .get("rotary_emb_base")
                    .and_then(|b| b.as_f64())
                    .unwrap_or(10_000.0) as f32,
                biases: [
                    flag("qkv_proj_bias"),
                    flag("mlp_fc1_bias"),
                    flag("mlp_fc2_bias"),
                ],
                act: Activation::Silu,
            });
        }
        let distil = family == Family::DistilBert;
        // DistilBERT's config names its sizes its own way.
        let key = |k: &'static str, distil_key: &'static str| if distil { distil_key } else { k };
        let act_key = if distil { "activation" } else { "hidden_act" };
        let act_name = v.get(act_key).and_then(|a| a.as_str()).unwrap_or("gelu");
        let act = match (family, Activation::from_name(act_name)) {
            // JinaBERT's GEGLU is gated GELU whatever its config names.
            (Family::Jina, _) => Activation::Gelu,
            (_, Some(a)) => a,
            (_, None) => bail!(
                "{}: {act_key} {act_name} is not supported (native: {})",
                path.display(),
                Activation::NAMES
            ),
        };
        let position_offset = match family {
            // transformers' MPNet counts positions from its padding index 1 whatever the
            // config says.
            Family::MpNet => 2,
            Family::Roberta => (v.get("pad_token_id").and_then(|n| n.as_u64()).unwrap_or(1)
                as usize)
                .saturating_add(1),
            _ => 0,
        };
        Ok(BertConfig {
            family,
            hidden: num(key("hidden_size", "dim"))?,
            heads: num(key("num_attention_heads", "n_heads"))?,
            layers: num(key("num_hidden_layers", "n_layers"))?,
            intermediate: num(key("intermediate_size", "hidden_dim"))?,
            eps: v
                .get("layer_norm_eps")
                .and_then(|e| e.as_f64())
                .unwrap_or(1e-12) as f32,
            max_positions: num("max_position_embeddings")?,
            position_offset,
            vocab: 0,
            rotary_base: 0.0,
            biases: [true, true, true],
            act,
        })
    }

    /// Tokens a sequence may hold: the position table less RoBERTa's offset.
    pub fn usable_positions(&self) -> usize {
        self.max_positions.saturating_sub(self.position_offset)
    }

    /// A gated feed-forward (NomicBERT's SwiGLU, JinaBERT's GEGLU).
    pub fn gated(&self) -> bool {
        matches!(self.family, Family::Nomic | Family::Jina)
    }
}

/// A Linear layer's weight (n x k): f32 as read, or packed for a reduced precision.
enum Dense {
    F32(Vec<f32>),
    Packed(Packed),
}

impl Dense {
    fn new(w: Vec<f32>, n: usize, k: usize, precision: Precision) -> Dense {
        match precision {
            Precision::F32 => Dense::F32(w),
            p => Dense::Packed(Packed::new(&w, n, k, p)),
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Dense::F32(w) => w.len() * 4,
            Dense::Packed(p) => p.bytes(),
        }
    }
}

struct Layer {
    /// Query, key and value projections stacked: (3 hidden) x hidden, and their biases.
    qkv_w: Dense,
    qkv_b: Vec<f32>,
    out_w: Dense,
    out_b: Vec<f32>,
    ln1_g: Vec<f32>,
    ln1_b: Vec<f32>,
    inter_w: Dense,
    inter_b: Vec<f32>,
    down_w: Dense,
    down_b: Vec<f32>,
    ln2_g: Vec<f32>,
    ln2_b: Vec<f32>,
}

pub struct Bert {
    pub config: BertConfig,
    /// The arithmetic of the dense layers.
    pub precision: Precision,
    word: Vec<f32>,
    position: Vec<f32>,
    token_type0: Vec<f32>,
    emb_ln_g: Vec<f32>,
    emb_ln_b: Vec<f32>,
    layers: Vec<Layer>,
    /// MPNet's relative position bias: (buckets x heads, row-major) and the bucket count.
    rel_bias: Option<(Vec<f32>, usize)>,
}

/// MPNet's bidirectional relative position bucket of `rel` = key position - query position:
/// half the buckets for each direction, exact up to a quarter of them, logarithmic beyond, the
/// last bucket of a direction from `max_distance` on.
fn relative_bucket(rel: isize, buckets: usize, max_distance: usize) -> usize {
    let half = buckets / 2;
    let n = -rel;
    let direction = if n < 0 { half } else { 0 };
    let n = n.unsigned_abs();
    let exact = half / 2;
    let within = if n < exact {
        n
    } else {
        let scaled = (n as f64 / exact as f64).ln() / (max_distance as f64 / exact as f64).ln()
            * (half - exact) as f64;
        (exact + scaled as usize).min(half - 1)
    };
    direction + within
}

/// Rows of a 2-D table (`name` in full): a tensor of another rank, or without rows, is an error
/// naming it, never an index out of range.
fn table_rows(st: &SafeTensors, name: &str) -> Result<usize> {
    let t = st
        .tensor(name)
        .with_context(|| format!("weights: no tensor {name}"))?;
    match t.shape() {
        [rows, cols] if *rows > 0 && *cols > 0 => Ok(*rows),
        shape => bail!("weights: {name} has shape {shape:?}, expected a table (rows x columns)"),
    }
}

fn tensor(st: &SafeTensors, prefix: &str, name: &str, len: usize) -> Result<Vec<f32>> {
    let full = format!("{prefix}{name}");
    let t = st
        .tensor(&full)
        .with_context(|| format!("weights: no tensor {full}"))?;
    // Weights stored in half precision are widened to f32 once, at load.
    let width = match t.dtype() {
        Dtype::F32 => 4,
        Dtype::F16 | Dtype::BF16 => 2,
        other => bail!("weights: {full} is {other:?}, expected F32, F16 or BF16"),
    };
    let data = t.data();
    if data.len() != len * width {
        bail!(
            "weights: {full} has {} values, expected {len}",
            data.len() / width
        );
    }
    Ok(match t.dtype() {
        Dtype::F16 => data
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        Dtype::BF16 => data
            .chunks_exact(2)
            .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        _ => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    })
}

impl Bert {
    /// Load from a model folder holding config.json and model.safetensors, in f32.
    pub fn load(dir: &Path) -> Result<Bert> {
        Bert::load_with(dir, Precision::F32)
    }

    /// Load with the dense layers in `precision` (their f32 weights are packed and dropped
    /// layer by layer, so the f32 copy of the whole model never exists beside the packed one).
    pub fn load_with(dir: &Path, precision: Precision) -> Result<Bert> {
        let mut config = BertConfig::from_file(&dir.join("config.json"))?;
        let path = dir.join("model.safetensors");
        let file = File::open(&path)
            .with_context(|| format!("{}: cannot open the weights", path.display()))?;
        // SAFETY: the file is opened read-only and only read while mapped; we copy what we need.
        let map =
            unsafe { memmap2::Mmap::map(&file) }.with_context(|| path.display().to_string())?;
        let st = SafeTensors::deserialize(&map)
            .with_context(|| format!("{}: not a safetensors file", path.display()))?;
        let Some((prefix, rows)) = word_table(&st) else {
            bail!(
                "{}: no tensor embeddings.word_embeddings.weight",
                path.display()
            );
        };
        let prefix = prefix.as_str();
        config.vocab = rows;
        let c = &config;
        let (h, i) = (c.hidden, c.intermediate);
        let g = |name: &str, len: usize| tensor(&st, prefix, name, len);
        // Tensor names per family: (layer prefix, q, k, v, attention out, first norm, up, down,
        // second norm).
        let names: [&str; 9] = match c.family {
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
        };
        let [layer, q, k, v, out, ln1, up, down, ln2] = names;
        // A gated feed-forward projects to 2 x intermediate: the half its activation reads first,
        // the half it multiplies by second.
        let up_n = if c.gated() { 2 * i } else { i };
        // A bias the config says is absent (NomicBERT) is zeros.
        let bias = |name: String, len: usize, present: bool| -> Result<Vec<f32>> {
            if present {
                g(&name, len)
            } else {
                Ok(vec![0.0; len])
            }
        };
        let [qkv_bias, up_bias, down_bias] = c.biases;
        let mut layers = Vec::with_capacity(c.layers);
        for l in 0..c.layers {
            let p = format!("{layer}.{l}.");
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
            layers.push(Layer {
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
            });
        }
        // Token type 0 is added to every token (DistilBERT has no token types).
        let types_name = format!("{prefix}embeddings.token_type_embeddings.weight");
        let token_type0 = match st.tensor(&types_name) {
            Ok(_) => {
                let rows = table_rows(&st, &types_name)?;
                let mut v = g("embeddings.token_type_embeddings.weight", rows * h)?;
                v.truncate(h);
                v
            }
            Err(_) => vec![0.0; h],
        };
        // MPNet: one relative position bias table (buckets x heads) shared by every layer.
        let rel_bias = match c.family {
            Family::MpNet => {
                let name = format!("{prefix}encoder.relative_attention_bias.weight");
                let buckets = table_rows(&st, &name)?;
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
            token_type0,
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

    /// Mean-pooled, L2-normalised embeddings of token id sequences (specials included).
    pub fn embed(&self, seqs: &[Vec<u32>]) -> Vec<Vec<f32>> {
        let modules = super::st::StModules {
            normalize: true,
            ..Default::default()
        };
        let h = self.config.hidden;
        let (x, starts) = self.hidden_states(seqs);
        seqs.iter()
            .zip(&starts)
            .map(|(seq, &at)| {
                if seq.is_empty() {
                    return vec![0.0; h];
                }
                modules.pool(&x[at * h..(at + seq.len()) * h], h, 0)
            })
            .collect()
    }

    /// The last layer's states of every token of every sequence, packed (rows of `hidden`), and
    /// the row each sequence starts at.
    pub fn hidden_states(&self, seqs: &[Vec<u32>]) -> (Vec<f32>, Vec<usize>) {
        let c = &self.config;
        let h = c.hidden;
        let total: usize = seqs.iter().map(Vec::len).sum();
        if total == 0 {
            return (Vec::new(), vec![0; seqs.len()]);
        }
        let starts: Vec<usize> = seqs
            .iter()
            .scan(0, |acc, s| {
                let at = *acc;
                *acc += s.len();
                Some(at)
            })
            .collect();
        // Embeddings: word + position + token type 0, then LayerNorm.
        let mut x = vec![0.0f32; total * h];
        for (s, seq) in seqs.iter().enumerate() {
            for (p, &id) in seq.iter().enumerate() {
                let row = &mut x[(starts[s] + p) * h..][..h];
                let id = (id as usize).min(c.vocab - 1);
                let w = &self.word[id * h..][..h];
                for k in 0..h {
                    row[k] = w[k] + self.token_type0[k];
                }
                if !self.position.is_empty() {
                    let at = (p + c.position_offset).min(c.max_positions - 1);
                    for (x, pos) in row.iter_mut().zip(&self.position[at * h..][..h]) {
                        *x += pos;
                    }
                }
            }
        }
        layer_norm_rows(&mut x, &self.emb_ln_g, &self.emb_ln_b, c.eps);
        let mut qkv = vec![0.0f32; total * 3 * h];
        let mut ctx = vec![0.0f32; total * h];
        let mut tmp = vec![0.0f32; total * h];
        let mut inter = vec![0.0f32; total * c.intermediate];
        let mut gates = if c.gated() {
            vec![0.0f32; total * 2 * c.intermediate]
        } else {
            Vec::new()
        };
        let rotary = (c.family == Family::Nomic).then(|| {
            let longest = seqs.iter().map(Vec::len).max().unwrap_or(0);
            Rotary::new(h / c.heads, c.rotary_base, longest)
        });
        for layer in &self.layers {
            linear(
                &x,
                total,
                h,
                &layer.qkv_w,
                Some(&layer.qkv_b),
                3 * h,
                &mut qkv,
            );
            if let Some(r) = &rotary {
                r.apply(&mut qkv, seqs, &starts, h, c.heads);
            }
            self.attention(&qkv, seqs, &starts, &mut ctx);
            linear(&ctx, total, h, &layer.out_w, None, h, &mut tmp);
            residual_norm(
                &mut tmp,
                &x,
                h,
                &layer.out_b,
                &layer.ln1_g,
                &layer.ln1_b,
                c.eps,
            );
            std::mem::swap(&mut x, &mut tmp);
            if c.gated() {
                let i = c.intermediate;
                linear(&x, total, h, &layer.inter_w, None, 2 * i, &mut gates);
                inter
                    .par_chunks_mut(i * 64)
                    .zip(gates.par_chunks(2 * i * 64))
                    .for_each(|(out, g)| gate_rows(out, g, &layer.inter_b, c.act));
            } else {
                linear(
                    &x,
                    total,
                    h,
                    &layer.inter_w,
                    None,
                    c.intermediate,
                    &mut inter,
                );
                inter
                    .par_chunks_mut(c.intermediate * 64)
                    .for_each(|rows| act_bias(rows, &layer.inter_b, c.act));
            }
            linear(
                &inter,
                total,
                c.intermediate,
                &layer.down_w,
                None,
                h,
                &mut tmp,
            );
            residual_norm(
                &mut tmp,
                &x,
                h,
                &layer.down_b,
                &layer.ln2_g,
                &layer.ln2_b,
                c.eps,
            );
            std::mem::swap(&mut x, &mut tmp);
        }
        (x, starts)
    }

    /// Self-attention of every sequence and head; writes the context vectors into `ctx`.
    fn attention(&self, qkv: &[f32], seqs: &[Vec<u32>], starts: &[usize], ctx: &mut [f32]) {
        let h = self.config.hidden;
        let heads = self.config.heads;
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        let stride = 3 * h;
        let ctx_ptr = SendPtr(ctx.as_mut_ptr());
        let tasks: Vec<(usize, usize)> = (0..seqs.len())
            .flat_map(|s| (0..heads).map(move |hd| (s, hd)))
            .collect();
        tasks.par_iter().for_each_init(
            || (Vec::new(), Vec::new()),
            |(scores, inv): &mut (Vec<f32>, Vec<f32>), &(s, hd)| {
                let len = seqs[s].len();
                if len == 0 {
                    return;
                }
                let base = starts[s] * stride;
                scores.clear();
                scores.resize(len * len, 0.0);
                let q = qkv[base + hd * d..].as_ptr();
                let k = qkv[base + h + hd * d..].as_ptr();
                let v = qkv[base + 2 * h + hd * d..].as_ptr();
                // SAFETY: all pointers address rows of this sequence inside `qkv`/`scores`/`ctx` with the
                // strides given; each task writes a disjoint block (its rows, its head's columns) of ctx.
                unsafe {
                    // scores (len x len) = scale * Q (len x d) K^T (d x len)
                    gemm::gemm(
                        len,
                        len,
                        d,
                        scores.as_mut_ptr(),
                        1,
                        len as isize,
                        false,
                        q,
                        1,
                        stride as isize,
                        k,
                        stride as isize,
                        1,
                        0.0,
                        scale,
                        false,
                        false,
                        false,
                        Parallelism::None,
                    );
                }
                // MPNet's relative bias or JinaBERT's ALiBi: scores[i][j] += f(j - i).
                let by_offset = |f: &dyn Fn(isize) -> f32| -> Vec<f32> {
                    (0..2 * len - 1)
                        .map(|k| f(k as isize - (len as isize - 1)))
                        .collect()
                };
                let by_distance = match (&self.rel_bias, self.config.family) {
                    (Some((bias, buckets)), _) => Some(by_offset(&|rel| {
                        bias[relative_bucket(rel, *buckets, 128) * heads + hd]
                    })),
                    (None, Family::Jina) => {
                        let slope = alibi_slopes(heads)[hd];
                        Some(by_offset(&|rel| -slope * rel.unsigned_abs() as f32))
                    }
                    _ => None,
                };
                if let Some(by_distance) = by_distance {
                    for i in 0..len {
                        let row = &mut scores[i * len..(i + 1) * len];
                        let base = len - 1 - i;
                        for (j, x) in row.iter_mut().enumerate() {
                            *x += by_distance[base + j];
                        }
                    }
                }
                inv.clear();
                inv.resize(len, 0.0);
                exp_rows(scores, len, inv);
                unsafe {
                    let out = ctx_ptr.get().add(starts[s] * h + hd * d);
                    // ctx (len x d) = P (len x len) V (len x d)
                    gemm::gemm(
                        len,
                        d,
                        len,
                        out,
                        1,
                        h as isize,
                        false,
                        scores.as_ptr(),
                        1,
                        len as isize,
                        v,
                        1,
                        stride as isize,
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        Parallelism::None,
                    );
                    // Normalise here: len x d values instead of len x len.
                    for (i, f) in inv.iter().enumerate() {
                        let row = std::slice::from_raw_parts_mut(out.add(i * h), d);
                        row.iter_mut().for_each(|x| *x *= f);
                    }
                }
            },
        );
    }
}

/// Where an encoder's tensors start ("", "bert.", "roberta.", ...) and how many rows its word
/// table has (NomicBERT pads it past `vocab_size`), read from the word table's name and shape.
pub(super) fn word_table(st: &SafeTensors) -> Option<(String, usize)> {
    st.tensors().into_iter().find_map(|(name, t)| {
        let prefix = name.strip_suffix("embeddings.word_embeddings.weight")?;
        Some((prefix.to_string(), *t.shape().first()?))
    })
}

/// ALiBi's head slopes: the geometric series from 2^(-8/n) for n heads; for a head count that is
/// not a power of two, the series of the power below, then every other slope of the power above.
fn alibi_slopes(heads: usize) -> Vec<f32> {
    let series = |n: usize| -> Vec<f64> {
        let first = 2f64.powf(-8.0 / n as f64);
        (1..=n).map(|k| first.powi(k as i32)).collect()
    };
    let below = 1usize << heads.ilog2();
    let mut slopes = series(below);
    if below != heads {
        slopes.extend(series(2 * below).into_iter().step_by(2).take(heads - below));
    }
    slopes.into_iter().map(|s| s as f32).collect()
}

/// Rotary positions (NomicBERT): each head's query and key are turned pairwise, element j with
/// element j + d/2, by the angle position x base^(-2j/d).
struct Rotary {
    half: usize,
    /// cos and sin per position and pair: (positions x half).
    cos: Vec<f32>,
    sin: Vec<f32>,
}

impl Rotary {
    fn new(d: usize, base: f32, positions: usize) -> Rotary {
        let half = d / 2;
        let freq: Vec<f32> = (0..half)
            .map(|j| 1.0 / base.powf((2 * j) as f32 / d as f32))
            .collect();
        let mut cos = Vec::with_capacity(positions * half);
        let mut sin = Vec::with_capacity(positions * half);
        for p in 0..positions {
            for f in &freq {
                let angle = p as f32 * f;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        Rotary { half, cos, sin }
    }

    /// Turns the query and key parts of every packed q|k|v row by its position in its sequence.
    fn apply(&self, qkv: &mut [f32], seqs: &[Vec<u32>], starts: &[usize], h: usize, heads: usize) {
        let half = self.half;
        let d = 2 * half;
        let mut rows: Vec<(usize, &mut [f32])> = Vec::with_capacity(starts.len());
        let mut rest = &mut qkv[..];
        for seq in seqs {
            let (mine, tail) = rest.split_at_mut(seq.len() * 3 * h);
            rows.push((seq.len(), mine));
            rest = tail;
        }
        rows.into_par_iter().for_each(|(len, block)| {
            for p in 0..len {
                let row = &mut block[p * 3 * h..][..2 * h];
                let (cos, sin) = (&self.cos[p * half..][..half], &self.sin[p * half..][..half]);
                for head in row.chunks_exact_mut(d).take(2 * heads) {
                    let (lo, hi) = head.split_at_mut(half);
                    for j in 0..half {
                        let (a, b) = (lo[j], hi[j]);
                        lo[j] = a * cos[j] - b * sin[j];
                        hi[j] = b * cos[j] + a * sin[j];
                    }
                }
            }
        });
    }
}

/// A gated feed-forward's activation, row by row: out = act(gate + b) * (value + b'), where each
/// row of `gates` holds the gate half then the value half and `bias` both halves' biases. SiLU
/// (NomicBERT) or the erf GELU (JinaBERT).
fn gate_rows(out: &mut [f32], gates: &[f32], bias: &[f32], act: Activation) {
    let i = bias.len() / 2;
    for (o, g) in out.chunks_exact_mut(i).zip(gates.chunks_exact(2 * i)) {
        for j in 0..i {
            o[j] = act.apply(g[j] + bias[j]) * (g[i + j] + bias[i + j]);
        }
    }
}

#[derive(Clone, Copy)]
struct SendPtr(*mut f32);
// SAFETY: used only for disjoint writes from the attention tasks.
unsafe impl Send for SendPtr {}
unsafe impl Sync for SendPtr {}
impl SendPtr {
    fn get(self) -> *mut f32 {
        self.0
    }
}

/// out (rows x n) = x (rows x k) W^T (+ b), with W stored (n x k) as PyTorch's Linear does.
/// Without `b` the bias is left to the next pass over `out`, which folds it in.
fn linear(
    x: &[f32],
    rows: usize,
    k: usize,
    w: &Dense,
    b: Option<&[f32]>,
    n: usize,
    out: &mut [f32],
) {
    // The unsafe product below reads and writes by these lengths: check them here, where a
    // shape mismatch is a clear panic rather than a read past a buffer.
    assert!(
        x.len() >= rows * k && out.len() >= rows * n && b.is_none_or(|b| b.len() == n),
        "linear: {rows}x{k} input ({} values), {n} outputs ({} values)",
        x.len(),
        out.len()
    );
    let w = match w {
        Dense::F32(w) => {
            assert_eq!(
                w.len(),
                n * k,
                "linear: weights of {} values for {n}x{k}",
                w.len()
            );
            w
        }
        Dense::Packed(p) => return p.matmul(x, rows, b, out),
    };
    let out = &mut out[..rows * n];
    if let Some(b) = b {
        for row in out.chunks_exact_mut(n) {
            row.copy_from_slice(b);
        }
    }
    let threads = rayon::current_num_threads();
    let par = if rows * n * k >= 1 << 18 && threads > 1 {
        Parallelism::Rayon(threads)
    } else {
        Parallelism::None
    };
    // SAFETY: the slices hold rows*k, n*k and rows*n values with the strides given.
    unsafe {
        gemm::gemm(
            rows,
            n,
            k,
            out.as_mut_ptr(),
            1,
            n as isize,
            b.is_some(),
            x.as_ptr(),
            1,
            k as isize,
            w.as_ptr(),
            k as isize,
            1,
            if b.is_some() { 1.0 } else { 0.0 },
            1.0,
            false,
            false,
            false,
            par,
        );
    }
}

/// out = LayerNorm(out + bias + residual), row by row.
fn residual_norm(
    out: &mut [f32],
    residual: &[f32],
    h: usize,
    bias: &[f32],
    g: &[f32],
    b: &[f32],
    eps: f32,
) {
    out.par_chunks_mut(h * 64)
        .zip(residual.par_chunks(h * 64))
        .for_each(|(o, r)| add_layer_norm_rows(o, r, bias, g, b, eps));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The product's unsafe call reads by the lengths it is told: weights or inputs shorter than
    /// the shape stop at the check, naming the shape, instead of reading past the buffer.
    #[test]
    fn linear_checks_its_lengths() {
        let w = Dense::F32(vec![0.5; 6]);
        let mut out = vec![0.0; 4];
        linear(&[1.0; 6], 2, 3, &w, None, 2, &mut out);
        assert_eq!(out, [1.5; 4]);
        for (x, w, n) in [
            (vec![1.0; 5], vec![0.5; 6], 2),
            (vec![1.0; 6], vec![0.5; 5], 2),
        ] {
            let why = std::panic::catch_unwind(move || {
                let mut out = vec![0.0; 4];
                linear(&x, 2, 3, &Dense::F32(w), None, n, &mut out)
            })
            .unwrap_err();
            let why = why.downcast_ref::<String>().cloned().unwrap_or_default();
            assert!(why.contains("linear:"), "{why}");
        }
    }

    /// A table whose shape is not rows x columns (a scalar, a vector, no rows) is an error
    /// naming the tensor, not a panic in the embedder's thread.
    #[test]
    fn malformed_tables_are_refused_by_name() {
        use safetensors::tensor::TensorView;
        let four = [0u8; 16];
        let views = [
            (
                "scalar",
                TensorView::new(Dtype::F32, vec![], &four[..4]).unwrap(),
            ),
            (
                "vector",
                TensorView::new(Dtype::F32, vec![4], &four).unwrap(),
            ),
            (
                "empty",
                TensorView::new(Dtype::F32, vec![0, 4], &[]).unwrap(),
            ),
            (
                "table",
                TensorView::new(Dtype::F32, vec![2, 2], &four).unwrap(),
            ),
        ];
        let bytes =
            safetensors::serialize(views.iter().map(|(n, v)| (*n, v.clone())), None).unwrap();
        let st = SafeTensors::deserialize(&bytes).unwrap();
        for name in ["scalar", "vector", "empty"] {
            let err = table_rows(&st, name).unwrap_err().to_string();
            assert!(
                err.contains(name) && err.contains("expected a table"),
                "{err}"
            );
        }
        assert_eq!(table_rows(&st, "table").unwrap(), 2);
        assert!(table_rows(&st, "missing")
            .unwrap_err()
            .to_string()
            .contains("no tensor"));
    }

    /// The ALiBi paper's slopes: 1/2 .. 1/256 for 8 heads; for 12, those 8 then 2^-0.5,
    /// 2^-1.5, 2^-2.5, 2^-3.5 (every other slope of the 16-head series).
    #[test]
    fn alibi_slopes_follow_the_paper() {
        let eight: Vec<f32> = (1..=8).map(|k| 0.5f32.powi(k)).collect();
        assert_eq!(alibi_slopes(8), eight);
        let twelve = alibi_slopes(12);
        assert_eq!(&twelve[..8], &eight[..]);
        for (got, e) in twelve[8..].iter().zip([0.5f32, 1.5, 2.5, 3.5]) {
            assert!((got - 2f32.powf(-e)).abs() < 1e-7, "{got}");
        }
    }

    /// A gated row: SiLU(gate) x value and GELU(gate) x value, biases added to both halves.
    #[test]
    fn gates_multiply_the_activated_half_by_the_other() {
        let gates = [1.0f32, -2.0, 3.0, 0.5];
        let bias = [0.0f32, 1.0, 0.0, 0.5];
        let mut out = [0.0f32; 2];
        gate_rows(&mut out, &gates, &bias, Activation::Silu);
        let silu = |x: f32| x / (1.0 + (-x).exp());
        assert!((out[0] - silu(1.0) * 3.0).abs() < 1e-6);
        assert!((out[1] - silu(-1.0) * 1.0).abs() < 1e-6);
        gate_rows(&mut out, &gates, &bias, Activation::Gelu);
        assert!((out[0] - 0.841_344_7 * 3.0).abs() < 1e-5, "{}", out[0]);
    }
}
