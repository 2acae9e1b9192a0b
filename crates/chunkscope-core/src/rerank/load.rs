//! Opening a CrossEncoder folder: its JSON files read and checked, the activation resolved, the
//! pair tokenizer, the encoder, the classification head and the pair window.

use std::path::{Path, PathBuf};

use safetensors::SafeTensors;
use serde_json::Value;
use tokenizers::{Encoding, NormalizerWrapper, Tokenizer};

use super::{Head, RerankError, Reranker, ScoreActivation};
use crate::embed::bert::{Bert, Family};
use crate::embed::lowp::Precision;

impl ScoreActivation {
    /// A torch class path as sentence-transformers saves it (`torch.nn.modules.activation.Sigmoid`,
    /// `torch.nn.Identity`, ...): Some(Ok) when known, Some(Err) for a torch class not run here,
    /// None for a path outside `torch.` (which sentence-transformers passes over unless trusted).
    /// `file` is the JSON file that names it, for the error.
    fn from_path(path: &str, file: &Path) -> Option<Result<ScoreActivation, RerankError>> {
        if !path.starts_with("torch.") {
            return None;
        }
        let class = path.rsplit('.').next().unwrap_or(path);
        Some(match class {
            "Sigmoid" => Ok(ScoreActivation::Sigmoid),
            "Identity" => Ok(ScoreActivation::Identity),
            "Tanh" => Ok(ScoreActivation::Tanh),
            _ => Err(RerankError::Activation {
                path: file.to_path_buf(),
                activation_fn: path.to_string(),
            }),
        })
    }
}

/// The activation the folder's files give, by sentence-transformers 6's order (see the module
/// docs). `st` is config_sentence_transformers.json when present, `config` config.json; the paths
/// name them in errors.
fn resolve_activation(
    st: Option<(&Value, &Path)>,
    config: (&Value, &Path),
) -> Result<ScoreActivation, RerankError> {
    // config_sentence_transformers.json (5.x, 6.x): taken when it resolves.
    if let Some((v, path)) = st {
        if let Some(p) = v.get("activation_fn").and_then(Value::as_str) {
            if let Some(resolved) = ScoreActivation::from_path(p, path) {
                return resolved;
            }
        }
    }
    // config.json: `sentence_transformers.activation_fn` (4.x) when the key is there, else
    // `sbert_ce_default_activation_function` (before 4); sigmoid when neither resolves.
    let (v, path) = config;
    let said = match v.get("sentence_transformers") {
        Some(s) if s.get("activation_fn").is_some() => s.get("activation_fn"),
        _ => v.get("sbert_ce_default_activation_function"),
    };
    said.and_then(Value::as_str)
        .and_then(|p| ScoreActivation::from_path(p, path))
        .unwrap_or(Ok(ScoreActivation::Sigmoid))
}

/// A JSON file of the folder: an object, or (`list`) an array.
fn read_json(path: &Path, list: bool) -> Result<Value, RerankError> {
    let text = std::fs::read_to_string(path).map_err(|e| RerankError::file(path, e.to_string()))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| RerankError::file(path, format!("not valid JSON: {e}")))?;
    match (list, &v) {
        (false, Value::Object(_)) | (true, Value::Array(_)) => Ok(v),
        (false, _) => Err(RerankError::file(path, "not a JSON object")),
        (true, _) => Err(RerankError::file(path, "not a JSON list")),
    }
}

fn read_json_if_present(path: &Path, list: bool) -> Result<Option<Value>, RerankError> {
    if path.exists() {
        read_json(path, list).map(Some)
    } else {
        Ok(None)
    }
}

/// The folder's JSON files, with their paths for errors.
struct Configs {
    config_path: PathBuf,
    config: Value,
    st_path: PathBuf,
    /// config_sentence_transformers.json
    st: Option<Value>,
    sbert_path: PathBuf,
    /// sentence_bert_config.json
    sbert: Option<Value>,
    modules_path: PathBuf,
    modules: Option<Value>,
}

/// The architectures the native reranker runs (config.json's `architectures`).
const HEADS: [&str; 4] = [
    "BertForSequenceClassification",
    "RobertaForSequenceClassification",
    "XLMRobertaForSequenceClassification",
    "CamembertForSequenceClassification",
];

impl Configs {
    /// config.json, and the sentence-transformers files when the folder has them.
    fn read(dir: &Path) -> Result<Configs, RerankError> {
        let config_path = dir.join("config.json");
        let config = read_json(&config_path, false)?;
        let st_path = dir.join("config_sentence_transformers.json");
        let st = read_json_if_present(&st_path, false)?;
        let sbert_path = dir.join("sentence_bert_config.json");
        let sbert = read_json_if_present(&sbert_path, false)?;
        let modules_path = dir.join("modules.json");
        let modules = read_json_if_present(&modules_path, true)?;
        Ok(Configs {
            config_path,
            config,
            st_path,
            st,
            sbert_path,
            sbert,
            modules_path,
            modules,
        })
    }

    /// The files describe a model the native reranker scores as sentence-transformers does: a
    /// sequence-classification architecture, one Transformer module, no prompt.
    fn check(&self) -> Result<(), RerankError> {
        self.check_architecture()?;
        self.check_modules()?;
        if let Some(task) = self.sbert_str("transformer_task") {
            if task != "sequence-classification" {
                return Err(RerankError::unsupported(
                    &self.sbert_path,
                    format!("transformer_task {task} (sequence-classification is scored)"),
                ));
            }
        }
        if let Some(name) = self
            .st
            .as_ref()
            .and_then(|s| s.get("default_prompt_name"))
            .and_then(Value::as_str)
        {
            return Err(RerankError::unsupported(
                &self.st_path,
                format!("default prompt {name:?}: prompts are not applied by the native reranker"),
            ));
        }
        Ok(())
    }

    fn check_architecture(&self) -> Result<(), RerankError> {
        let Some(archs) = self.config.get("architectures").and_then(Value::as_array) else {
            return Ok(());
        };
        let arch = archs.first().and_then(Value::as_str).unwrap_or("");
        if HEADS.contains(&arch) {
            return Ok(());
        }
        Err(RerankError::unsupported(
            &self.config_path,
            format!(
                "architecture {arch} is not a reranker the native backend runs ({})",
                HEADS.join(", ")
            ),
        ))
    }

    fn check_modules(&self) -> Result<(), RerankError> {
        let Some(list) = &self.modules else {
            return Ok(());
        };
        let types: Vec<&str> = list
            .as_array()
            .map(|a| a.iter().filter_map(|m| m.get("type")?.as_str()).collect())
            .unwrap_or_default();
        if types.len() != 1 || !types[0].ends_with("Transformer") {
            return Err(RerankError::unsupported(
                &self.modules_path,
                format!("modules {types:?}: only a single Transformer module is scored"),
            ));
        }
        Ok(())
    }

    /// A string of sentence_bert_config.json.
    fn sbert_str(&self, key: &str) -> Option<&str> {
        self.sbert.as_ref()?.get(key)?.as_str()
    }

    fn activation(&self) -> Result<ScoreActivation, RerankError> {
        resolve_activation(
            self.st.as_ref().map(|v| (v, self.st_path.as_path())),
            (&self.config, &self.config_path),
        )
    }

    /// sentence_bert_config.json asks for lowercased input.
    fn lowercases(&self) -> bool {
        self.sbert
            .as_ref()
            .and_then(|s| s.get("do_lower_case"))
            .and_then(Value::as_bool)
            == Some(true)
    }
}

/// The folder's tokenizer for pairs, truncation and padding off (a Lowercase normalizer ahead of
/// its own when `lowercase`), and the encoding of a probe pair, which shows its template.
fn pair_tokenizer(dir: &Path, lowercase: bool) -> Result<(Tokenizer, Encoding), RerankError> {
    let tok_path = dir.join("tokenizer.json");
    let mut tok = Tokenizer::from_file(&tok_path)
        .map_err(|e| RerankError::file(&tok_path, format!("cannot load tokenizer: {e}")))?;
    tok.with_padding(None);
    tok.with_truncation(None)
        .map_err(|e| RerankError::file(&tok_path, e.to_string()))?;
    if lowercase {
        // sentence-transformers puts a Lowercase normalizer ahead of the tokenizer's own.
        let mut steps: Vec<NormalizerWrapper> = vec![tokenizers::normalizers::Lowercase.into()];
        steps.extend(tok.get_normalizer().cloned());
        tok.with_normalizer(Some(tokenizers::normalizers::Sequence::new(steps)))
            .map_err(|e| RerankError::file(&tok_path, e.to_string()))?;
    }
    let probe = tok
        .encode(("a", "b"), true)
        .map_err(|e| RerankError::file(&tok_path, format!("cannot encode a pair: {e}")))?;
    if probe.get_sequence_ids().iter().all(|s| *s != Some(1)) {
        return Err(RerankError::unsupported(
            &tok_path,
            "the tokenizer's post-processor has no pair template",
        ));
    }
    Ok((tok, probe))
}

/// The encoder in `precision`, whose token type table must hold every type the pair template
/// gives (BERT: the passage is type 1), of a family with a reranker head here.
fn load_encoder(
    dir: &Path,
    config_path: &Path,
    precision: Precision,
    max_type: u32,
) -> Result<Bert, RerankError> {
    let bert =
        Bert::load_with(dir, precision).map_err(|e| RerankError::Encoder(format!("{e:#}")))?;
    if max_type as usize >= bert.token_type_rows() {
        return Err(RerankError::unsupported(
            &dir.join("model.safetensors"),
            format!(
                "{} token type rows; the tokenizer's pair template uses token type {max_type}",
                bert.token_type_rows()
            ),
        ));
    }
    if !matches!(bert.config.family, Family::Bert | Family::Roberta) {
        return Err(RerankError::unsupported(
            config_path,
            format!(
                "{:?} encoders have no reranker head here (BERT and RoBERTa / XLM-RoBERTa do)",
                bert.config.family
            ),
        ));
    }
    Ok(bert)
}

/// A tensor as f32 values (F32, F16 or BF16 stored), with its shape.
fn tensor_f32(
    st: &SafeTensors,
    path: &Path,
    name: &str,
) -> Result<(Vec<f32>, Vec<usize>), RerankError> {
    let t = st
        .tensor(name)
        .map_err(|_| RerankError::file(path, format!("no tensor {name}")))?;
    let values = crate::embed::bert::f32_values(&t).ok_or_else(|| {
        RerankError::file(
            path,
            format!("{name} is {:?}, expected F32, F16 or BF16", t.dtype()),
        )
    })?;
    Ok((values, t.shape().to_vec()))
}

/// The head, read from model.safetensors once more (the encoder keeps only its own tensors).
fn load_head(dir: &Path, hidden: usize) -> Result<Head, RerankError> {
    let weights = dir.join("model.safetensors");
    let file =
        std::fs::File::open(&weights).map_err(|e| RerankError::file(&weights, e.to_string()))?;
    // SAFETY: read-only mapping, only read while mapped.
    let map = unsafe { memmap2::Mmap::map(&file) }
        .map_err(|e| RerankError::file(&weights, e.to_string()))?;
    let tensors = SafeTensors::deserialize(&map)
        .map_err(|e| RerankError::file(&weights, format!("not a safetensors file: {e}")))?;
    let prefix = tensors
        .names()
        .into_iter()
        .find_map(|n| n.strip_suffix("embeddings.word_embeddings.weight"))
        .unwrap_or("")
        .to_string();
    read_head(&tensors, &weights, &prefix, hidden)
}

/// The head's tensors, by the names transformers gives them: RoBERTa's classification head
/// (`classifier.dense`, `classifier.out_proj`) or BERT's pooler + `classifier`.
fn read_head(
    st: &SafeTensors,
    path: &Path,
    prefix: &str,
    hidden: usize,
) -> Result<Head, RerankError> {
    let has = |n: &str| st.tensor(n).is_ok();
    let (dense, out) = if has("classifier.out_proj.weight") {
        ("classifier.dense".to_string(), "classifier.out_proj")
    } else if has("classifier.weight") && has(&format!("{prefix}pooler.dense.weight")) {
        (format!("{prefix}pooler.dense"), "classifier")
    } else {
        return Err(RerankError::unsupported(
            path,
            format!(
                "no sequence-classification head ({prefix}pooler.dense + classifier, or \
                 classifier.dense + classifier.out_proj)"
            ),
        ));
    };
    let (dense_w, dw) = tensor_f32(st, path, &format!("{dense}.weight"))?;
    let (dense_b, db) = tensor_f32(st, path, &format!("{dense}.bias"))?;
    let (out_w, ow) = tensor_f32(st, path, &format!("{out}.weight"))?;
    let (out_b, ob) = tensor_f32(st, path, &format!("{out}.bias"))?;
    if ow.first().is_some_and(|&labels| labels != 1) {
        return Err(RerankError::unsupported(
            path,
            format!(
                "{out}.weight has {} labels; only num_labels 1 is scored",
                ow[0]
            ),
        ));
    }
    if dw != [hidden, hidden] || db != [hidden] || ow != [1, hidden] || ob != [1] {
        return Err(RerankError::file(
            path,
            format!(
                "head shapes {dense}.weight {dw:?}, {dense}.bias {db:?}, {out}.weight {ow:?}, \
                 {out}.bias {ob:?} do not fit hidden size {hidden}"
            ),
        ));
    }
    Ok(Head {
        dense_w,
        dense_b,
        out_w,
        out_b: out_b[0],
    })
}

/// The pair window: sentence-transformers' rule, within the positions the encoder has, with room
/// for a token past the template's `pair_specials`.
fn pair_window(
    dir: &Path,
    config_path: &Path,
    bert: &Bert,
    pair_specials: usize,
) -> Result<usize, RerankError> {
    let windows =
        crate::model::read_windows(dir).map_err(|e| RerankError::Encoder(format!("{e:#}")))?;
    let usable = bert.config.usable_positions();
    let window = windows.sentence_transformers.unwrap_or(usable).min(usable);
    if window <= pair_specials {
        return Err(RerankError::unsupported(
            config_path,
            format!("a pair window of {window} tokens leaves no room past the {pair_specials} special tokens"),
        ));
    }
    Ok(window)
}

impl Reranker {
    /// Open a CrossEncoder folder (config.json, model.safetensors, tokenizer.json, and the
    /// sentence-transformers files when it has them) with the encoder's dense layers in
    /// `precision`.
    pub fn load(dir: &Path, precision: Precision) -> Result<Reranker, RerankError> {
        let configs = Configs::read(dir)?;
        configs.check()?;
        let activation = configs.activation()?;
        let (tok, probe) = pair_tokenizer(dir, configs.lowercases())?;
        let max_type = probe.get_type_ids().iter().copied().max().unwrap_or(0);
        let bert = load_encoder(dir, &configs.config_path, precision, max_type)?;
        let head = load_head(dir, bert.config.hidden)?;
        let pair_specials = probe.len().saturating_sub(2);
        let window = pair_window(dir, &configs.config_path, &bert, pair_specials)?;
        Ok(Reranker {
            dir: dir.to_path_buf(),
            bert,
            head,
            activation,
            window,
            tok,
            pair_specials,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(st: Option<Value>, config: Value) -> Result<ScoreActivation, RerankError> {
        let (sp, cp) = (
            Path::new("config_sentence_transformers.json"),
            Path::new("config.json"),
        );
        resolve_activation(st.as_ref().map(|v| (v, sp)), (&config, cp))
    }

    /// sentence-transformers 6's order: config_sentence_transformers.json, then config.json's
    /// 4.x key, then the key before 4, then sigmoid; paths outside torch. are passed over.
    #[test]
    fn activation_is_read_as_sentence_transformers_reads_it() {
        use serde_json::json;
        use ScoreActivation::*;
        let id = "torch.nn.modules.linear.Identity";
        let sig = "torch.nn.modules.activation.Sigmoid";
        assert_eq!(resolve(None, json!({})).unwrap(), Sigmoid);
        assert_eq!(
            resolve(Some(json!({"activation_fn": id})), json!({})).unwrap(),
            Identity
        );
        assert_eq!(
            resolve(
                Some(json!({"activation_fn": sig})),
                json!({"sentence_transformers": {"activation_fn": id}})
            )
            .unwrap(),
            Sigmoid
        );
        assert_eq!(
            resolve(
                None,
                json!({"sentence_transformers": {"activation_fn": id}})
            )
            .unwrap(),
            Identity
        );
        assert_eq!(
            resolve(
                None,
                json!({"sbert_ce_default_activation_function": "torch.nn.Tanh"})
            )
            .unwrap(),
            Tanh
        );
        // The 4.x key, when present, decides (even null: sigmoid), before the older one.
        assert_eq!(
            resolve(
                None,
                json!({"sentence_transformers": {"activation_fn": null},
                       "sbert_ce_default_activation_function": id})
            )
            .unwrap(),
            Sigmoid
        );
        // Untrusted (outside torch.): passed over, to config.json, then to sigmoid.
        assert_eq!(
            resolve(
                Some(json!({"activation_fn": "my_pkg.Scale"})),
                json!({"sbert_ce_default_activation_function": id})
            )
            .unwrap(),
            Identity
        );
        assert_eq!(
            resolve(Some(json!({"activation_fn": "my_pkg.Scale"})), json!({})).unwrap(),
            Sigmoid
        );
        let err = resolve(
            Some(json!({"activation_fn": "torch.nn.Softplus"})),
            json!({}),
        )
        .unwrap_err();
        assert!(
            matches!(&err, RerankError::Activation { path, activation_fn }
                if path == Path::new("config_sentence_transformers.json")
                    && activation_fn == "torch.nn.Softplus"),
            "{err:?}"
        );
        let err = err.to_string();
        assert!(
            err.contains("config_sentence_transformers.json") && err.contains("Softplus"),
            "{err}"
        );
    }
}
