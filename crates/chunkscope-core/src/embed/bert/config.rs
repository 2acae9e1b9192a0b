//! config.json as the native encoder reads it: the family, sizes and positions.

use std::path::Path;

use super::BertError;

use crate::embed::kernels::Activation;

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

/// Refuse the config.json at `path`, the rest formatted as `format!` does.
macro_rules! refuse_at {
    ($path:expr, $($arg:tt)*) => {
        return Err(BertError::refused($path, format!($($arg)*)))
    };
}

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
    pub fn from_file(path: &Path) -> Result<BertConfig, BertError> {
        let c = BertConfig::read(path)?;
        // Sizes the forward pass slices by or the load reserves for: refused here rather than
        // panicking (or aborting on a failed allocation) in the embedder's thread (zero and
        // uneven sizes are refused by hf_config).
        if c.max_positions <= c.position_offset {
            refuse_at!(
                path,
                "{} positions leave no room for a token (offset {})",
                c.max_positions,
                c.position_offset
            );
        }
        if c.layers > MAX_LAYERS {
            refuse_at!(
                path,
                "{} layers is more than any model has (at most {MAX_LAYERS} are read)",
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
            refuse_at!(
                path,
                "hidden size {}, intermediate size {} and {} positions describe weights larger than memory can address",
                c.hidden,
                c.intermediate,
                c.max_positions
            );
        }
        Ok(c)
    }

    fn read(path: &Path) -> Result<BertConfig, BertError> {
        let v = crate::embed::hf_config::read(path)?;
        let model_type = crate::embed::architecture_of(&v).unwrap_or("bert");
        let family = family_of(path, model_type)?;
        check_variant(path, family, model_type, &v)?;
        if family == Family::Nomic {
            return nomic(path, &v);
        }
        bert_layout(path, family, &v)
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

/// The family of a config.json's `model_type`; refused when the native embedder runs none.
fn family_of(path: &Path, model_type: &str) -> Result<Family, BertError> {
    Ok(match model_type {
        "bert" => Family::Bert,
        "roberta" | "xlm-roberta" | "camembert" => Family::Roberta,
        "distilbert" => Family::DistilBert,
        "mpnet" => Family::MpNet,
        "nomic_bert" => Family::Nomic,
        "jina_bert" => Family::Jina,
        other => refuse_at!(
            path,
            "model_type {other} is not supported by the native embedder (supported: {})",
            NATIVE_TYPES.join(", ")
        ),
    })
}

/// Refuse the variants of a family that the native encoder does not run, by name.
fn check_variant(
    path: &Path,
    family: Family,
    model_type: &str,
    v: &serde_json::Value,
) -> Result<(), BertError> {
    let refuse = |why: &str| -> Result<(), BertError> {
        refuse_at!(path, "{model_type} with {why} is not supported",)
    };
    // Relative positions other than JinaBERT's ALiBi: said by name, not by a missing tensor.
    if let Some(kind) = v.get("position_embedding_type").and_then(|t| t.as_str()) {
        if kind != "absolute" && kind != "alibi" {
            return refuse(&format!("position_embedding_type {kind}"));
        }
    }
    if family == Family::Nomic {
        if let Some(why) = nomic_unsupported(v) {
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
    Ok(())
}

/// The size `k` of a config.json; refused when it is missing.
fn num(path: &Path, v: &serde_json::Value, k: &str) -> Result<usize, BertError> {
    v.get(k)
        .and_then(|n| n.as_u64())
        .map(|n| n as usize)
        .ok_or_else(|| BertError::refused(path, format!("no {k}")))
}

/// A NomicBERT config, which names its sizes GPT-2's way.
fn nomic(path: &Path, v: &serde_json::Value) -> Result<BertConfig, BertError> {
    let num = |k: &str| num(path, v, k);
    let flag = |k: &str| v.get(k).and_then(|b| b.as_bool()).unwrap_or(false);
    Ok(BertConfig {
        family: Family::Nomic,
        hidden: num("n_embd")?,
        heads: num("n_head")?,
        layers: num("n_layer")?,
        intermediate: num("n_inner")?,
        eps: v
            .get("layer_norm_epsilon")
            .and_then(|e| e.as_f64())
            .unwrap_or(1e-12) as f32,
        max_positions: crate::model::positions_of(v).unwrap_or(2048),
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
    })
}

/// A config of the families laid out as BERT is (BERT, RoBERTa, DistilBERT, MPNet, JinaBERT).
fn bert_layout(
    path: &Path,
    family: Family,
    v: &serde_json::Value,
) -> Result<BertConfig, BertError> {
    let num = |k: &str| num(path, v, k);
    let distil = family == Family::DistilBert;
    // DistilBERT's config names its sizes its own way.
    let key = |k: &'static str, distil_key: &'static str| if distil { distil_key } else { k };
    let act_key = if distil { "activation" } else { "hidden_act" };
    let act_name = v.get(act_key).and_then(|a| a.as_str()).unwrap_or("gelu");
    let act = match (family, Activation::from_name(act_name)) {
        // JinaBERT's GEGLU is gated GELU whatever its config names.
        (Family::Jina, _) => Activation::Gelu,
        (_, Some(a)) => a,
        (_, None) => refuse_at!(
            path,
            "{act_key} {act_name} is not supported (native: {})",
            Activation::NAMES
        ),
    };
    let position_offset = match family {
        // transformers' MPNet counts positions from its padding index 1 whatever the
        // config says.
        Family::MpNet => 2,
        Family::Roberta => {
            (v.get("pad_token_id").and_then(|n| n.as_u64()).unwrap_or(1) as usize).saturating_add(1)
        }
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
