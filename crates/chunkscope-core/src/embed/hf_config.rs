//! A model's config.json as transformers 4 and 5 write it, read into one layout. transformers 5
//! writes `rope_parameters` (one entry per attention kind for models that mix them, as
//! ModernBERT does, or a single `{rope_theta, rope_type}` for Qwen3) and `layer_types` where 4.x
//! wrote `global_rope_theta` / `local_rope_theta` / `rope_theta`. Both layouts end up in the older
//! keys, which the native and candle backends read; keys neither layout needs are left alone.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Why a config.json could not be read. Each names the file; the messages carry the cause.
#[derive(Debug, thiserror::Error)]
pub enum HfConfigError {
    #[error("{}: {cause}", path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{}: not valid JSON: {cause}", path.display())]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        cause: serde_json::Error,
    },
    #[error("{}: not a JSON object", path.display())]
    NotObject { path: PathBuf },
    /// A size that would break the forward pass (0 heads, a width the heads do not split), or a
    /// layout no backend runs (scaled rope, a layer pattern the network does not follow).
    #[error("{}: {why}", path.display())]
    Refused { path: PathBuf, why: Refusal },
}

/// What in a config.json no backend runs; [`HfConfigError::Refused`] adds the file. Keys are
/// named as the file spells them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    /// A size a forward pass divides by or loops over is 0 or negative.
    #[error("{key} is {value}; it must be at least 1")]
    NotPositive { key: &'static str, value: i128 },
    /// The width does not split evenly into the heads.
    #[error("{hidden_key} {hidden} is not a multiple of {heads_key} {heads}")]
    HeadsSplit {
        hidden_key: &'static str,
        hidden: i128,
        heads_key: &'static str,
        heads: i128,
    },
    /// Scaled rope (`rope_type` other than default); `key` is the `rope_parameters` entry.
    #[error("{key}.rope_type {rope_type} is not supported (default is)")]
    RopeType { key: String, rope_type: String },
    #[error("{key} has no rope_theta")]
    NoRopeTheta { key: String },
    #[error("layer_types must be a list of names")]
    LayerTypesNotNames,
    /// A model other than ModernBERT with layers that are not all full attention.
    #[error("{model_type} with layer_types other than full_attention ({}) is not supported", layer_types.join(", "))]
    LayerTypes {
        model_type: String,
        layer_types: Vec<String>,
    },
    #[error("layer_types: unknown attention kind {kind}")]
    UnknownAttention { kind: String },
    /// ModernBERT's layers not following full attention every `every` layers.
    #[error("layer_types ({}) is not full attention every {every} layers, which is what ModernBERT runs", layer_types.join(", "))]
    ModernBertPattern {
        layer_types: Vec<String>,
        every: usize,
    },
}

/// Read and normalise `path` (a config.json).
pub fn read(path: &Path) -> Result<Value, HfConfigError> {
    let text = std::fs::read_to_string(path).map_err(|cause| HfConfigError::Read {
        path: path.to_path_buf(),
        cause,
    })?;
    let mut v: Value = serde_json::from_str(&text).map_err(|cause| HfConfigError::Json {
        path: path.to_path_buf(),
        line: cause.line(),
        column: cause.column(),
        cause,
    })?;
    if !v.is_object() {
        return Err(HfConfigError::NotObject {
            path: path.to_path_buf(),
        });
    }
    normalise(&mut v)
        .and_then(|()| check_sizes(&v))
        .map_err(|why| HfConfigError::Refused {
            path: path.to_path_buf(),
            why,
        })?;
    Ok(v)
}

/// The sizes a forward pass divides by or loops over, under any of their names: none may be 0,
/// and the width must split evenly into the heads.
fn check_sizes(v: &Value) -> Result<(), Refusal> {
    // Any integer, past i64 too (a head count of 2^64-1 is no more absent than one of 0).
    let int = |n: &Value| n.as_i64().map(i128::from).or(n.as_u64().map(i128::from));
    let size = |names: &[&'static str]| -> Option<(&'static str, i128)> {
        names.iter().find_map(|k| Some((*k, int(v.get(*k)?)?)))
    };
    let hidden = size(&["hidden_size", "n_embd", "dim", "d_model"]);
    let heads = size(&["num_attention_heads", "n_head", "n_heads"]);
    let others = [
        size(&["num_hidden_layers", "n_layer", "n_layers"]),
        size(&["intermediate_size", "n_inner", "hidden_dim"]),
        size(&["max_position_embeddings", "n_positions"]),
        size(&["vocab_size"]),
    ];
    for (key, n) in [hidden, heads].into_iter().chain(others).flatten() {
        if n <= 0 {
            return Err(Refusal::NotPositive { key, value: n });
        }
    }
    if let (Some((hk, h)), Some((nk, n))) = (hidden, heads) {
        if h % n != 0 {
            return Err(Refusal::HeadsSplit {
                hidden_key: hk,
                hidden: h,
                heads_key: nk,
                heads: n,
            });
        }
    }
    Ok(())
}

/// The rope base of one `rope_parameters` entry; only unscaled ("default") rope is run.
fn rope_theta(entry: &Value, key: &str) -> Result<f64, Refusal> {
    match entry.get("rope_type").and_then(Value::as_str) {
        None | Some("default") => {}
        Some(kind) => {
            return Err(Refusal::RopeType {
                key: key.to_string(),
                rope_type: kind.to_string(),
            })
        }
    }
    entry
        .get("rope_theta")
        .and_then(Value::as_f64)
        .ok_or_else(|| Refusal::NoRopeTheta {
            key: key.to_string(),
        })
}

/// Fill the 4.x keys from the 5.x ones where the 4.x keys are missing, and refuse what the
/// backends cannot run (scaled rope, a layer pattern the network does not follow).
fn normalise(v: &mut Value) -> Result<(), Refusal> {
    let kind = v.get("model_type").and_then(Value::as_str).unwrap_or("");
    let kind = kind.to_string();
    if let Some(rope) = v.get("rope_parameters").cloned().filter(|r| !r.is_null()) {
        let per_kind = ["full_attention", "sliding_attention"]
            .iter()
            .any(|k| rope.get(*k).is_some());
        if !per_kind {
            let theta = rope_theta(&rope, "rope_parameters")?;
            set_missing(v, "rope_theta", theta.into());
        } else {
            // One entry per attention kind.
            for (layer, old) in [
                ("full_attention", "global_rope_theta"),
                ("sliding_attention", "local_rope_theta"),
            ] {
                if let Some(entry) = rope.get(layer) {
                    let theta = rope_theta(entry, &format!("rope_parameters.{layer}"))?;
                    set_missing(v, old, theta.into());
                    if layer == "full_attention" {
                        set_missing(v, "rope_theta", theta.into());
                    }
                }
            }
        }
    }
    let layer_types: Option<Vec<String>> = match v.get("layer_types") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => Some(
            a.iter()
                .map(|t| t.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or(Refusal::LayerTypesNotNames)?,
        ),
        Some(_) => return Err(Refusal::LayerTypesNotNames),
    };
    let Some(types) = layer_types else {
        return Ok(());
    };
    match kind.as_str() {
        "modernbert" => modernbert_layers(v, &types),
        _ if types.iter().all(|t| t == "full_attention") => Ok(()),
        _ => Err(Refusal::LayerTypes {
            model_type: kind,
            layer_types: types,
        }),
    }
}

/// ModernBERT runs full attention every `global_attn_every_n_layers` layers (from the first) and
/// sliding attention between: `layer_types` must follow that pattern, and gives `n` when the 4.x
/// key is missing.
fn modernbert_layers(v: &mut Value, types: &[String]) -> Result<(), Refusal> {
    if let Some(t) = types
        .iter()
        .find(|t| !matches!(t.as_str(), "full_attention" | "sliding_attention"))
    {
        return Err(Refusal::UnknownAttention { kind: t.clone() });
    }
    let every = match v.get("global_attn_every_n_layers").and_then(Value::as_u64) {
        Some(n) => n as usize,
        None => {
            let n = types
                .iter()
                .skip(1)
                .position(|t| t == "full_attention")
                .map_or(types.len().max(1), |i| i + 1);
            v["global_attn_every_n_layers"] = n.into();
            n
        }
    };
    let follows = every > 0
        && types
            .iter()
            .enumerate()
            .all(|(i, t)| (t == "full_attention") == (i % every == 0));
    if !follows {
        return Err(Refusal::ModernBertPattern {
            layer_types: types.to_vec(),
            every,
        });
    }
    Ok(())
}

fn set_missing(v: &mut Value, key: &str, value: Value) {
    if v.get(key).is_none_or(Value::is_null) {
        v[key] = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn modernbert_5x_reads_as_4x() {
        let mut v = json!({
            "model_type": "modernbert",
            "layer_types": ["full_attention", "sliding_attention", "full_attention"],
            "rope_parameters": {
                "full_attention": {"rope_theta": 160000.0, "rope_type": "default"},
                "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}
            }
        });
        normalise(&mut v).unwrap();
        assert_eq!(v["global_rope_theta"], json!(160000.0));
        assert_eq!(v["local_rope_theta"], json!(10000.0));
        assert_eq!(v["global_attn_every_n_layers"], json!(2));
        // The 4.x keys, where present, are left as they are.
        let mut old = json!({"model_type": "modernbert", "global_rope_theta": 5.0,
                             "rope_parameters": {"full_attention": {"rope_theta": 7.0}}});
        normalise(&mut old).unwrap();
        assert_eq!(old["global_rope_theta"], json!(5.0));
    }

    #[test]
    fn qwen3_5x_reads_as_4x() {
        let mut v = json!({"model_type": "qwen3",
                           "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
                           "layer_types": ["full_attention", "full_attention"]});
        normalise(&mut v).unwrap();
        assert_eq!(v["rope_theta"], json!(1000000.0));
    }

    #[test]
    fn sizes_that_would_panic_are_refused() {
        for (bad, says) in [
            (
                json!({"hidden_size": 32, "num_attention_heads": 0}),
                "num_attention_heads is 0",
            ),
            (
                json!({"hidden_size": 32, "num_attention_heads": 3}),
                "not a multiple",
            ),
            (
                json!({"n_embd": 32, "n_head": 2, "n_layer": 0}),
                "n_layer is 0",
            ),
            (json!({"dim": -4}), "dim is -4"),
            // Past i64 (found by tests/mutations.rs: the load multiplied by it and overflowed).
            (
                json!({"hidden_size": 32, "num_attention_heads": 18446744073709551615u64}),
                "not a multiple",
            ),
        ] {
            assert!(
                check_sizes(&bad).unwrap_err().to_string().contains(says),
                "{bad}"
            );
        }
        assert!(check_sizes(&json!({"hidden_size": 32, "num_attention_heads": 2})).is_ok());
    }

    #[test]
    fn what_is_not_run_is_refused_by_name() {
        let mut scaled = json!({"model_type": "qwen3",
                                "rope_parameters": {"rope_theta": 1.0, "rope_type": "yarn"}});
        assert!(matches!(
            normalise(&mut scaled),
            Err(Refusal::RopeType { key, rope_type }) if key == "rope_parameters" && rope_type == "yarn"
        ));
        let mut odd = json!({"model_type": "modernbert", "global_attn_every_n_layers": 3,
                             "layer_types": ["full_attention", "sliding_attention", "full_attention"]});
        assert!(normalise(&mut odd)
            .unwrap_err()
            .to_string()
            .contains("every 3"));
        let mut sliding = json!({"model_type": "qwen3",
                                 "layer_types": ["sliding_attention", "full_attention"]});
        assert!(normalise(&mut sliding)
            .unwrap_err()
            .to_string()
            .contains("layer_types"));
        let mut bad = json!({"model_type": "qwen3", "rope_parameters": {"rope_type": "default"}});
        assert!(normalise(&mut bad)
            .unwrap_err()
            .to_string()
            .contains("rope_theta"));
    }

    #[test]
    fn errors_say_which_file_and_where() {
        let dir = std::env::temp_dir().join(format!("hf-config-err-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.json");
        assert!(matches!(read(&path), Err(HfConfigError::Read { path: p, .. }) if p == path));
        std::fs::write(&path, "{\n  \"hidden_size\": 32,\n  oops\n}").unwrap();
        let e = read(&path).unwrap_err();
        assert!(matches!(e, HfConfigError::Json { line: 3, .. }), "{e:?}");
        assert!(
            e.to_string().starts_with(&path.display().to_string()),
            "{e}"
        );
        std::fs::write(&path, "[1]").unwrap();
        assert!(matches!(read(&path), Err(HfConfigError::NotObject { .. })));
        std::fs::write(&path, r#"{"hidden_size": 32, "num_attention_heads": 0}"#).unwrap();
        let e = read(&path).unwrap_err();
        assert!(
            matches!(
                &e,
                HfConfigError::Refused {
                    why: Refusal::NotPositive {
                        key: "num_attention_heads",
                        value: 0
                    },
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .ends_with("num_attention_heads is 0; it must be at least 1"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
