//! A model folder read as sentence-transformers reads it: `modules.json` (Transformer, Pooling,
//! Dense, Normalize, in order; module types by the last segment of their Python path, which
//! sentence-transformers 5 moved), the pooling modes of `1_Pooling/config.json` (either layout),
//! a Dense layer's weights, `sentence_bert_config.json` (`do_lower_case`; the window is read in
//! model.rs) and
//! `config_sentence_transformers.json` (`prompts`, `default_prompt_name`,
//! `similarity_fn_name`). A folder without `modules.json` gets sentence-transformers' own
//! fallback: mean pooling, no normalisation, and a note that says so.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

/// Why a model folder's sentence-transformers files could not be read. Each names the file.
#[derive(Debug, thiserror::Error)]
pub enum StError {
    #[error("{}: {cause}", path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{}: not what sentence-transformers writes: {cause}", path.display())]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        cause: serde_json::Error,
    },
    /// A module's config.json that modules.json points to is not there.
    #[error("{}: missing", path.display())]
    Missing { path: PathBuf },
    /// What chunkscope does not run: a module type, a pooling mode, a Dense activation or
    /// size, or no Pooling module at all.
    #[error("{}: {why}", path.display())]
    Refused { path: PathBuf, why: String },
    #[error("{}: cannot open the Dense weights (only safetensors are read): {cause}", path.display())]
    Open {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{}: {cause}", path.display())]
    Map {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{}: not a safetensors file: {cause}", path.display())]
    NotSafetensors {
        path: PathBuf,
        cause: safetensors::SafeTensorError,
    },
    /// A Dense tensor is missing or not the size config.json gives.
    #[error("{}: {why}", path.display())]
    Weights { path: PathBuf, why: String },
}

impl StError {
    fn refused(path: &Path, why: impl Into<String>) -> StError {
        StError::Refused {
            path: path.to_path_buf(),
            why: why.into(),
        }
    }

    fn missing(path: &Path) -> StError {
        StError::Missing {
            path: path.to_path_buf(),
        }
    }
}

type Result<T> = std::result::Result<T, StError>;

/// The pooling modes sentence-transformers knows; several may be on (their outputs are
/// concatenated in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    Cls,
    Max,
    Mean,
    MeanSqrtLen,
    WeightedMean,
    LastToken,
}

impl Pool {
    const ALL: [Pool; 6] = [
        Pool::Cls,
        Pool::Max,
        Pool::Mean,
        Pool::MeanSqrtLen,
        Pool::WeightedMean,
        Pool::LastToken,
    ];

    fn from_name(name: &str) -> Option<Pool> {
        Pool::ALL.into_iter().find(|p| p.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Pool::Cls => "cls",
            Pool::Max => "max",
            Pool::Mean => "mean",
            Pool::MeanSqrtLen => "mean_sqrt_len_tokens",
            Pool::WeightedMean => "weightedmean",
            Pool::LastToken => "lasttoken",
        }
    }
}

impl PoolingConfig {
    /// The modes in force, as sentence-transformers 6 reads either layout: `pooling_mode` when
    /// set, else the flags that are on, else mean.
    fn modes(&self, file: &Path) -> Result<Vec<Pool>> {
        let bad = || {
            StError::refused(
                file,
                format!(
                    "pooling_mode must be one of {} or a list of them",
                    Pool::ALL.map(Pool::name).join(", ")
                ),
            )
        };
        let named = |v: &serde_json::Value| v.as_str().and_then(Pool::from_name).ok_or_else(bad);
        let modes = match &self.pooling_mode {
            Some(serde_json::Value::Array(list)) => {
                list.iter().map(named).collect::<Result<Vec<_>>>()?
            }
            Some(serde_json::Value::Null) | None => [
                (self.pooling_mode_cls_token, Pool::Cls),
                (self.pooling_mode_max_tokens, Pool::Max),
                (self.pooling_mode_mean_tokens, Pool::Mean),
                (self.pooling_mode_mean_sqrt_len_tokens, Pool::MeanSqrtLen),
                (self.pooling_mode_weightedmean_tokens, Pool::WeightedMean),
                (self.pooling_mode_lasttoken, Pool::LastToken),
            ]
            .into_iter()
            .filter_map(|(on, pool)| on.then_some(pool))
            .collect(),
            Some(one) => vec![named(one)?],
        };
        Ok(if modes.is_empty() {
            vec![Pool::Mean]
        } else {
            modes
        })
    }
}

/// A Dense module: `activation(W x + b)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Dense {
    pub inputs: usize,
    pub outputs: usize,
    /// outputs x inputs, row-major.
    weight: Vec<f32>,
    bias: Option<Vec<f32>>,
    tanh: bool,
}

/// What the model does after the transformer, and the prompts it declares.
#[derive(Debug, Clone, PartialEq)]
pub struct StModules {
    pub pooling: Vec<Pool>,
    /// False when the pooling must leave the prompt's tokens out (`include_prompt: false`).
    pub include_prompt: bool,
    pub dense: Vec<Dense>,
    pub normalize: bool,
    pub do_lower_case: bool,
    pub prompts: BTreeMap<String, String>,
    pub default_prompt_name: Option<String>,
    pub similarity: Option<String>,
    /// False when the folder has no `modules.json` (the fallback is in force).
    pub declared: bool,
}

impl Default for StModules {
    /// sentence-transformers' fallback for a plain transformers folder.
    fn default() -> Self {
        StModules {
            pooling: vec![Pool::Mean],
            include_prompt: true,
            dense: Vec::new(),
            normalize: false,
            do_lower_case: false,
            prompts: BTreeMap::new(),
            default_prompt_name: None,
            similarity: None,
            declared: false,
        }
    }
}

#[derive(Deserialize)]
struct Module {
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

/// 1_Pooling/config.json in both layouts: sentence-transformers 5.x/6.x write `pooling_mode` (a
/// name, or a list whose outputs are concatenated in its order); 2.x-4.x wrote one
/// `pooling_mode_*` flag per mode (concatenated in the order below).
#[derive(Deserialize, Default)]
#[serde(default)]
struct PoolingConfig {
    pooling_mode: Option<serde_json::Value>,
    pooling_mode_cls_token: bool,
    pooling_mode_mean_tokens: bool,
    pooling_mode_max_tokens: bool,
    pooling_mode_mean_sqrt_len_tokens: bool,
    pooling_mode_weightedmean_tokens: bool,
    pooling_mode_lasttoken: bool,
    include_prompt: Option<bool>,
}

#[derive(Deserialize)]
struct DenseConfig {
    in_features: usize,
    out_features: usize,
    #[serde(default = "yes")]
    bias: bool,
    #[serde(default)]
    activation_function: String,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StConfig {
    prompts: BTreeMap<String, String>,
    default_prompt_name: Option<String>,
    similarity_fn_name: Option<String>,
}

fn json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>> {
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).map_err(|cause| StError::Read {
        path: path.to_path_buf(),
        cause,
    })?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|cause| StError::Json {
            path: path.to_path_buf(),
            line: cause.line(),
            column: cause.column(),
            cause,
        })
}

impl StModules {
    pub fn read(dir: &Path) -> Result<StModules> {
        let mut m = StModules::default();
        if let Some(c) = json::<serde_json::Value>(&dir.join("sentence_bert_config.json"))? {
            m.do_lower_case = c
                .get("do_lower_case")
                .and_then(|v| v.as_bool())
                .unwrap_or(false);
        }
        if let Some(c) = json::<StConfig>(&dir.join("config_sentence_transformers.json"))? {
            m.prompts = c.prompts;
            m.default_prompt_name = c.default_prompt_name.filter(|n| !n.is_empty());
            m.similarity = c.similarity_fn_name;
        }
        let Some(modules) = json::<Vec<Module>>(&dir.join("modules.json"))? else {
            return Ok(m);
        };
        m.declared = true;
        let mut pooled = false;
        for module in modules {
            let kind = module.kind.rsplit('.').next().unwrap_or("");
            let path = dir.join(&module.path);
            match kind {
                "Transformer" => {}
                "Pooling" => {
                    let file = path.join("config.json");
                    let p: PoolingConfig = json(&file)?.ok_or_else(|| StError::missing(&file))?;
                    m.pooling = p.modes(&file)?;
                    m.include_prompt = p.include_prompt.unwrap_or(true);
                    pooled = true;
                }
                "Dense" => m.dense.push(Dense::read(&path)?),
                "Normalize" => m.normalize = true,
                other => {
                    return Err(StError::refused(
                        &dir.join("modules.json"),
                        format!(
                            "module type {} is not supported (Transformer, Pooling, Dense and Normalize are)",
                            if other.is_empty() { &module.kind } else { other }
                        ),
                    ))
                }
            }
        }
        if !pooled {
            return Err(StError::refused(
                &dir.join("modules.json"),
                "no Pooling module (a sentence vector needs one)",
            ));
        }
        Ok(m)
    }

    /// The prompt put before each document, as `encode_document` picks it: the model's
    /// "document" (else "passage", else "corpus") prompt, even an empty one, else the default
    /// prompt; empty when it has none.
    pub fn document_prompt(&self) -> &str {
        ["document", "passage", "corpus"]
            .iter()
            .find_map(|k| self.prompts.get(*k).map(String::as_str))
            .or_else(|| self.default_prompt())
            .unwrap_or("")
    }

    /// The prompt put before each query, as `encode_query` picks it: the "query" prompt, else
    /// the default prompt.
    pub fn query_prompt(&self) -> &str {
        self.prompts
            .get("query")
            .map(String::as_str)
            .or_else(|| self.default_prompt())
            .unwrap_or("")
    }

    fn default_prompt(&self) -> Option<&str> {
        self.default_prompt_name
            .as_ref()
            .and_then(|n| self.prompts.get(n))
            .map(String::as_str)
    }

    /// The pooling and what follows it, in words, e.g. "cls, normalized" or "mean (no
    /// modules.json: sentence-transformers' fallback), not normalized".
    pub fn describe(&self) -> String {
        let pools: Vec<&str> = self.pooling.iter().map(|p| p.name()).collect();
        let mut s = pools.join("+");
        if !self.declared {
            s.push_str(" (no modules.json: sentence-transformers' fallback)");
        }
        for d in &self.dense {
            s.push_str(&format!(", dense {}->{}", d.inputs, d.outputs));
        }
        s.push_str(if self.normalize {
            ", normalized"
        } else {
            ", not normalized"
        });
        s
    }

    /// The vector size after pooling and dense layers, for a transformer of `hidden` width.
    pub fn dim(&self, hidden: usize) -> usize {
        self.dense
            .last()
            .map_or(hidden * self.pooling.len(), |d| d.outputs)
    }

    /// Pool one sequence's token states (`len` rows of `hidden`), skipping its first `skip`
    /// tokens for every mode but cls when the prompt is left out, then the dense layers and the
    /// normalisation.
    pub fn pool(&self, states: &[f32], hidden: usize, skip: usize) -> Vec<f32> {
        let len = states.len() / hidden.max(1);
        let row = |i: usize| &states[i * hidden..][..hidden];
        let from = if self.include_prompt {
            0
        } else {
            skip.min(len.saturating_sub(1))
        };
        let mut out = Vec::with_capacity(hidden * self.pooling.len());
        for pool in &self.pooling {
            match pool {
                // sentence-transformers 6 takes the first token the mask keeps: the first past
                // the prompt when the prompt is left out (3.x took row 0 whatever the setting).
                Pool::Cls => out.extend_from_slice(row(from)),
                Pool::LastToken => out.extend_from_slice(row(len.saturating_sub(1))),
                Pool::Max => {
                    let mut v = vec![f32::NEG_INFINITY; hidden];
                    for i in from..len {
                        for (a, b) in v.iter_mut().zip(row(i)) {
                            *a = a.max(*b);
                        }
                    }
                    out.extend(v);
                }
                Pool::Mean | Pool::MeanSqrtLen | Pool::WeightedMean => {
                    let mut v = vec![0.0f32; hidden];
                    let mut total = 0.0f32;
                    for i in from..len {
                        // Weighted mean weighs each token by its position (1-based).
                        let w = if *pool == Pool::WeightedMean {
                            (i + 1) as f32
                        } else {
                            1.0
                        };
                        for (a, b) in v.iter_mut().zip(row(i)) {
                            *a += w * b;
                        }
                        total += w;
                    }
                    let div = match pool {
                        Pool::MeanSqrtLen => total.max(1e-9).sqrt(),
                        _ => total.max(1e-9),
                    };
                    out.extend(v.into_iter().map(|a| a / div));
                }
            }
        }
        for d in &self.dense {
            out = d.apply(&out);
        }
        if self.normalize {
            let n = out.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-12);
            out.iter_mut().for_each(|a| *a /= n);
        }
        out
    }
}

impl Dense {
    fn read(dir: &Path) -> Result<Dense> {
        let file = dir.join("config.json");
        let c: DenseConfig = json(&file)?.ok_or_else(|| StError::missing(&file))?;
        let tanh = c.activation_function.ends_with("Tanh");
        if !tanh
            && !c.activation_function.ends_with("Identity")
            && !c.activation_function.is_empty()
        {
            return Err(StError::refused(
                &file,
                format!(
                    "activation {} is not supported (Tanh and Identity are)",
                    c.activation_function
                ),
            ));
        }
        let Some(count) = c.in_features.checked_mul(c.out_features) else {
            return Err(StError::refused(
                &file,
                format!(
                    "in_features {} x out_features {} is more weights than memory holds",
                    c.in_features, c.out_features
                ),
            ));
        };
        let weights = dir.join("model.safetensors");
        let f = File::open(&weights).map_err(|cause| StError::Open {
            path: weights.clone(),
            cause,
        })?;
        // SAFETY: read-only mapping, only read while mapped.
        let map = unsafe { memmap2::Mmap::map(&f) }.map_err(|cause| StError::Map {
            path: weights.clone(),
            cause,
        })?;
        let st = SafeTensors::deserialize(&map).map_err(|cause| StError::NotSafetensors {
            path: weights.clone(),
            cause,
        })?;
        let bad_weights = |why: String| StError::Weights {
            path: weights.clone(),
            why,
        };
        let get = |name: &str, len: usize| -> Result<Vec<f32>> {
            let t = st
                .tensor(name)
                .map_err(|e| bad_weights(format!("no tensor {name}: {e}")))?;
            if t.dtype() != Dtype::F32 || Some(t.data().len()) != len.checked_mul(4) {
                return Err(bad_weights(format!("{name} is not {len} f32 values")));
            }
            Ok(t.data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect())
        };
        Ok(Dense {
            inputs: c.in_features,
            outputs: c.out_features,
            weight: get("linear.weight", count)?,
            bias: if c.bias {
                Some(get("linear.bias", c.out_features)?)
            } else {
                None
            },
            tanh,
        })
    }

    fn apply(&self, x: &[f32]) -> Vec<f32> {
        (0..self.outputs)
            .map(|o| {
                let w = &self.weight[o * self.inputs..][..self.inputs];
                let mut y: f32 = w.iter().zip(x).map(|(a, b)| a * b).sum();
                if let Some(b) = &self.bias {
                    y += b[o];
                }
                if self.tanh {
                    y.tanh()
                } else {
                    y
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooling_modes_on_known_states() {
        // Three tokens of width 2.
        let states = [1.0, 0.0, 3.0, 2.0, 5.0, -2.0];
        let m = |pooling: Vec<Pool>| StModules {
            pooling,
            normalize: false,
            ..StModules::default()
        };
        assert_eq!(m(vec![Pool::Cls]).pool(&states, 2, 0), vec![1.0, 0.0]);
        assert_eq!(
            m(vec![Pool::LastToken]).pool(&states, 2, 0),
            vec![5.0, -2.0]
        );
        assert_eq!(m(vec![Pool::Mean]).pool(&states, 2, 0), vec![3.0, 0.0]);
        assert_eq!(m(vec![Pool::Max]).pool(&states, 2, 0), vec![5.0, 2.0]);
        let s = m(vec![Pool::MeanSqrtLen]).pool(&states, 2, 0);
        assert!((s[0] - 9.0 / 3f32.sqrt()).abs() < 1e-6);
        // Weights 1, 2, 3: (1 + 6 + 15) / 6.
        let w = m(vec![Pool::WeightedMean]).pool(&states, 2, 0);
        assert!((w[0] - 22.0 / 6.0).abs() < 1e-6, "{w:?}");
        assert_eq!(m(vec![Pool::Cls, Pool::Mean]).pool(&states, 2, 0).len(), 4);
        let mut no_prompt = m(vec![Pool::Mean]);
        no_prompt.include_prompt = false;
        assert_eq!(no_prompt.pool(&states, 2, 2), vec![5.0, -2.0]);
    }

    #[test]
    fn prompts_for_documents_and_queries() {
        let mut m = StModules::default();
        m.prompts.insert("query".into(), "query: ".into());
        m.prompts.insert("passage".into(), "passage: ".into());
        assert_eq!(m.document_prompt(), "passage: ");
        assert_eq!(m.query_prompt(), "query: ");
        // A named prompt wins over the default one, even an empty one (sentence-transformers 6
        // writes "document": "" and "query": "" into every folder).
        m.default_prompt_name = Some("query".into());
        assert_eq!(m.document_prompt(), "passage: ");
        m.prompts.insert("document".into(), String::new());
        assert_eq!(m.document_prompt(), "");
        m.prompts.clear();
        m.prompts.insert("query".into(), "q: ".into());
        assert_eq!(m.document_prompt(), "q: ");
    }

    #[test]
    fn pooling_config_in_both_layouts() {
        let dir = std::env::temp_dir().join(format!("chunkscope-pool-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("config.json");
        let read = |text: &str| -> Result<Vec<Pool>> {
            std::fs::write(&file, text).unwrap();
            json::<PoolingConfig>(&file)?.unwrap().modes(&file)
        };
        assert_eq!(
            read(r#"{"embedding_dimension": 8, "pooling_mode": "cls", "include_prompt": true}"#)
                .unwrap(),
            vec![Pool::Cls]
        );
        // A list keeps its order; the flags keep theirs.
        assert_eq!(
            read(r#"{"pooling_mode": ["mean", "cls"]}"#).unwrap(),
            vec![Pool::Mean, Pool::Cls]
        );
        assert_eq!(
            read(
                r#"{"word_embedding_dimension": 8, "pooling_mode_mean_tokens": true,
                     "pooling_mode_cls_token": true, "future_key": 1}"#
            )
            .unwrap(),
            vec![Pool::Cls, Pool::Mean]
        );
        assert_eq!(read("{}").unwrap(), vec![Pool::Mean]);
        let err = read(r#"{"pooling_mode": "median"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("config.json") && err.contains("pooling_mode"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn dense_sizes_past_memory_are_refused_by_name() {
        // Their product overflowed (a panic in the dev profile; found by tests/mutations.rs).
        let dir = std::env::temp_dir().join(format!("chunkscope-dense-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("config.json"),
            r#"{"in_features": 4294967296, "out_features": 4294967296}"#,
        )
        .unwrap();
        let err = Dense::read(&dir).unwrap_err();
        assert!(
            matches!(&err, StError::Refused { path, .. } if path == &dir.join("config.json")),
            "{err:?}"
        );
        let err = err.to_string();
        assert!(
            err.contains("config.json") && err.contains("more weights than memory"),
            "{err}"
        );
        // No config.json at all: the module's folder is named.
        std::fs::remove_file(dir.join("config.json")).unwrap();
        assert!(matches!(Dense::read(&dir), Err(StError::Missing { .. })));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
