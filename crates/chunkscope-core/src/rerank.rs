//! A sentence-transformers CrossEncoder reranker on the native backend: the query and a passage
//! read together by a BERT-family encoder with a sequence-classification head, one score per
//! pair, as `CrossEncoder.predict` gives it.
//!
//! What is read, and from where, as sentence-transformers 6 reads it:
//!
//! - the encoder ([`Bert`], in the [`Precision`] asked for) and the head from model.safetensors:
//!   BertForSequenceClassification's pooler (dense + tanh on `[CLS]`) then `classifier`, or
//!   XLMRobertaForSequenceClassification's (RoBERTa's, CamemBERT's) `classifier.dense` + tanh +
//!   `classifier.out_proj` on `<s>`; one label only. The head runs in f32 whatever the precision.
//! - the activation on the logit: `activation_fn` in config_sentence_transformers.json (as 5.x
//!   and 6.x save it), else config.json's `sentence_transformers.activation_fn` (4.x), else its
//!   `sbert_ce_default_activation_function` (before 4), else sigmoid. As sentence-transformers
//!   does without `trust_remote_code`, a path outside `torch.` is passed over.
//! - the pair's token window (`max_length`): sentence-transformers' own rule
//!   ([`crate::model::read_windows`]: sentence_bert_config.json's `max_seq_length`, else the
//!   tokenizer's `model_max_length` capped at the positions), never past the positions the
//!   encoder has.
//! - the pair's tokens: tokenizer.json's own pair template, truncated `longest_first` to the
//!   window (the longer of query and passage loses tokens first, one at a time, so a long query
//!   is cut too), as the tokenizer sentence-transformers calls with `truncation=True` does.
//!
//! The window has its own invisible tail: a passage whose answer lies past
//! [`Reranker::pair_tail`] is scored without it, so it cannot be reranked up for it.

pub mod stage;

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use safetensors::SafeTensors;
use serde_json::Value;
use tokenizers::utils::truncation::truncate_encodings;
use tokenizers::{
    Encoding, NormalizerWrapper, Tokenizer, TruncationDirection, TruncationParams,
    TruncationStrategy,
};

use crate::embed::bert::{Bert, Family};
use crate::embed::lowp::Precision;

/// Pairs are grouped into forward passes of about this many tokens.
const TOKENS_PER_PASS: usize = 4096;

/// Why a reranker folder could not be opened. Every message names the file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RerankError {
    /// A file of the folder is missing, unreadable or malformed.
    #[error("{}: {why}", path.display())]
    File { path: PathBuf, why: String },
    /// The folder describes a model the native reranker does not run.
    #[error("{}: {why}", path.display())]
    Unsupported { path: PathBuf, why: String },
    /// The encoder failed to load (the message names its file).
    #[error("{0}")]
    Encoder(String),
    /// A hub id that is in no cache and could not be downloaded (every place tried is named).
    #[error("{0}")]
    NotFound(String),
}

impl RerankError {
    fn file(path: &Path, why: impl Into<String>) -> RerankError {
        RerankError::File {
            path: path.to_path_buf(),
            why: why.into(),
        }
    }

    fn unsupported(path: &Path, why: impl Into<String>) -> RerankError {
        RerankError::Unsupported {
            path: path.to_path_buf(),
            why: why.into(),
        }
    }
}

/// The function sentence-transformers applies to the logit in `predict`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScoreActivation {
    Sigmoid,
    Identity,
    Tanh,
}

impl ScoreActivation {
    pub fn name(self) -> &'static str {
        match self {
            ScoreActivation::Sigmoid => "sigmoid",
            ScoreActivation::Identity => "identity",
            ScoreActivation::Tanh => "tanh",
        }
    }

    pub fn apply(self, x: f32) -> f32 {
        match self {
            ScoreActivation::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            ScoreActivation::Identity => x,
            ScoreActivation::Tanh => x.tanh(),
        }
    }

    /// A torch class path as sentence-transformers saves it (`torch.nn.modules.activation.Sigmoid`,
    /// `torch.nn.Identity`, ...): Some(Ok) when known, Some(Err) for a torch class not run here,
    /// None for a path outside `torch.` (which sentence-transformers passes over unless trusted).
    fn from_path(path: &str) -> Option<Result<ScoreActivation, String>> {
        if !path.starts_with("torch.") {
            return None;
        }
        let class = path.rsplit('.').next().unwrap_or(path);
        Some(match class {
            "Sigmoid" => Ok(ScoreActivation::Sigmoid),
            "Identity" => Ok(ScoreActivation::Identity),
            "Tanh" => Ok(ScoreActivation::Tanh),
            _ => Err(format!(
                "activation_fn {path} is not supported (Sigmoid, Identity or Tanh are)"
            )),
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
            match ScoreActivation::from_path(p) {
                Some(Ok(a)) => return Ok(a),
                Some(Err(why)) => return Err(RerankError::unsupported(path, why)),
                None => {}
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
    match said
        .and_then(Value::as_str)
        .and_then(ScoreActivation::from_path)
    {
        Some(Ok(a)) => Ok(a),
        Some(Err(why)) => Err(RerankError::unsupported(path, why)),
        None => Ok(ScoreActivation::Sigmoid),
    }
}

/// The sequence-classification head on the first token: dense (hidden x hidden) + tanh, then one
/// output. BERT's pooler + classifier and RoBERTa's classifier.dense + out_proj alike.
#[derive(Debug, Clone)]
struct Head {
    dense_w: Vec<f32>,
    dense_b: Vec<f32>,
    out_w: Vec<f32>,
    out_b: f32,
}

impl Head {
    fn logit(&self, first: &[f32]) -> f32 {
        let h = first.len();
        let mut acc = self.out_b as f64;
        for (j, row) in self.dense_w.chunks_exact(h).enumerate() {
            let z: f64 = self.dense_b[j] as f64
                + row
                    .iter()
                    .zip(first)
                    .map(|(w, x)| *w as f64 * *x as f64)
                    .sum::<f64>();
            acc += self.out_w[j] as f64 * (z as f32).tanh() as f64;
        }
        acc as f32
    }
}

/// A sentence-transformers CrossEncoder folder, scored on the native encoder.
pub struct Reranker {
    dir: PathBuf,
    bert: Bert,
    head: Head,
    activation: ScoreActivation,
    window: usize,
    /// The folder's tokenizer, truncation and padding off: each text is encoded alone, the pair
    /// truncated by [`truncate_encodings`], then the pair template applied.
    tok: Tokenizer,
    /// Tokens the pair template adds.
    pair_specials: usize,
}

impl std::fmt::Debug for Reranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reranker")
            .field("dir", &self.dir)
            .field("activation", &self.activation)
            .field("window", &self.window)
            .field("precision", &self.bert.precision)
            .finish_non_exhaustive()
    }
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

/// The encoder in `precision`, whose token type table must hold every type the pair template
/// gives (BERT: the passage is type 1).
fn load_encoder(dir: &Path, precision: Precision, max_type: u32) -> Result<Bert, RerankError> {
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
    Ok(bert)
}

/// A pair's token ids and their token types.
type Pair = (Vec<u32>, Vec<u32>);

impl Reranker {
    /// Open a CrossEncoder folder (config.json, model.safetensors, tokenizer.json, and the
    /// sentence-transformers files when it has them) with the encoder's dense layers in
    /// `precision`.
    pub fn load(dir: &Path, precision: Precision) -> Result<Reranker, RerankError> {
        let config_path = dir.join("config.json");
        let config = read_json(&config_path, false)?;
        let st_path = dir.join("config_sentence_transformers.json");
        let st = read_json_if_present(&st_path, false)?;
        let sbert_path = dir.join("sentence_bert_config.json");
        let sbert = read_json_if_present(&sbert_path, false)?;
        let modules_path = dir.join("modules.json");
        let modules = read_json_if_present(&modules_path, true)?;

        if let Some(archs) = config.get("architectures").and_then(Value::as_array) {
            let arch = archs.first().and_then(Value::as_str).unwrap_or("");
            const HEADS: [&str; 4] = [
                "BertForSequenceClassification",
                "RobertaForSequenceClassification",
                "XLMRobertaForSequenceClassification",
                "CamembertForSequenceClassification",
            ];
            if !HEADS.contains(&arch) {
                return Err(RerankError::unsupported(
                    &config_path,
                    format!(
                        "architecture {arch} is not a reranker the native backend runs ({})",
                        HEADS.join(", ")
                    ),
                ));
            }
        }
        if let Some(list) = &modules {
            let types: Vec<&str> = list
                .as_array()
                .map(|a| a.iter().filter_map(|m| m.get("type")?.as_str()).collect())
                .unwrap_or_default();
            if types.len() != 1 || !types[0].ends_with("Transformer") {
                return Err(RerankError::unsupported(
                    &modules_path,
                    format!("modules {types:?}: only a single Transformer module is scored"),
                ));
            }
        }
        if let Some(task) = sbert
            .as_ref()
            .and_then(|s| s.get("transformer_task"))
            .and_then(Value::as_str)
        {
            if task != "sequence-classification" {
                return Err(RerankError::unsupported(
                    &sbert_path,
                    format!("transformer_task {task} (sequence-classification is scored)"),
                ));
            }
        }
        if let Some(name) = st
            .as_ref()
            .and_then(|s| s.get("default_prompt_name"))
            .and_then(Value::as_str)
        {
            return Err(RerankError::unsupported(
                &st_path,
                format!("default prompt {name:?}: prompts are not applied by the native reranker"),
            ));
        }
        let activation = resolve_activation(
            st.as_ref().map(|v| (v, st_path.as_path())),
            (&config, &config_path),
        )?;

        // The pair tokenizer.
        let tok_path = dir.join("tokenizer.json");
        let mut tok = Tokenizer::from_file(&tok_path)
            .map_err(|e| RerankError::file(&tok_path, format!("cannot load tokenizer: {e}")))?;
        tok.with_padding(None);
        tok.with_truncation(None)
            .map_err(|e| RerankError::file(&tok_path, e.to_string()))?;
        if sbert
            .as_ref()
            .and_then(|s| s.get("do_lower_case"))
            .and_then(Value::as_bool)
            == Some(true)
        {
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
        let max_type = probe.get_type_ids().iter().copied().max().unwrap_or(0);

        let bert = load_encoder(dir, precision, max_type)?;
        if !matches!(bert.config.family, Family::Bert | Family::Roberta) {
            return Err(RerankError::unsupported(
                &config_path,
                format!(
                    "{:?} encoders have no reranker head here (BERT and RoBERTa / XLM-RoBERTa do)",
                    bert.config.family
                ),
            ));
        }

        // The head, read from the weights once more (the encoder keeps only its own tensors).
        let weights = dir.join("model.safetensors");
        let file = std::fs::File::open(&weights)
            .map_err(|e| RerankError::file(&weights, e.to_string()))?;
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
        let head = read_head(&tensors, &weights, &prefix, bert.config.hidden)?;

        // The window: sentence-transformers' rule, within the positions the encoder has.
        let windows =
            crate::model::read_windows(dir).map_err(|e| RerankError::Encoder(format!("{e:#}")))?;
        let usable = bert.config.usable_positions();
        let window = windows.sentence_transformers.unwrap_or(usable).min(usable);
        let pair_specials = probe.len().saturating_sub(2);
        if window <= pair_specials {
            return Err(RerankError::unsupported(
                &config_path,
                format!("a pair window of {window} tokens leaves no room past the {pair_specials} special tokens"),
            ));
        }
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

    /// The folder the reranker was read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Tokens a (query, passage) pair may hold, specials included (`max_length`).
    pub fn pair_window(&self) -> usize {
        self.window
    }

    /// The activation applied to the logit.
    pub fn activation(&self) -> ScoreActivation {
        self.activation
    }

    /// The arithmetic of the encoder's dense layers.
    pub fn precision(&self) -> Precision {
        self.bert.precision
    }

    /// The pair as the model reads it, truncated to the window, and how many tokens the passage
    /// has in all. Each text is encoded alone, the two cut `longest_first` by the tokenizers
    /// crate's own rule, then the pair template applied. Not the tokenizer's built-in truncation:
    /// tokenizers 0.23.2 stops tokenizing each text at the window before comparing lengths, so
    /// two texts both longer than the window tie and the query keeps the shorter half, where
    /// transformers (tokenizers 0.23.3) keeps the longer text's extra token on the longer one.
    fn encode_pair(&self, query: &str, passage: &str) -> Option<(Encoding, usize)> {
        let encoded = (|| {
            let a = self.tok.encode(query, false)?;
            let b = self.tok.encode(passage, false)?;
            let passage_tokens = b.len();
            let params = TruncationParams {
                direction: TruncationDirection::Right,
                max_length: self.window - self.pair_specials,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            };
            let (a, b) = truncate_encodings(a, Some(b), &params)?;
            Ok::<_, tokenizers::Error>((self.tok.post_process(a, b, true)?, passage_tokens))
        })();
        match encoded {
            Ok(e) => Some(e),
            Err(e) => {
                log::warn!("reranker tokenizer failed on a pair: {e}");
                None
            }
        }
    }

    /// The token ids and token type ids the model reads for the pair (truncated to the window).
    pub fn pair_ids(&self, query: &str, passage: &str) -> (Vec<u32>, Vec<u32>) {
        self.encode_pair(query, passage)
            .map(|(e, _)| (e.get_ids().to_vec(), e.get_type_ids().to_vec()))
            .unwrap_or_default()
    }

    /// The byte in `passage` where the reranker stops reading it: the end of the last passage
    /// token kept when the pair is truncated to the window (0 when none is kept), or None when
    /// every token of the passage is read (a query cut alone leaves the passage whole).
    pub fn pair_tail(&self, query: &str, passage: &str) -> Option<usize> {
        let (pair, passage_tokens) = self.encode_pair(query, passage)?;
        let kept: Vec<usize> = pair
            .get_sequence_ids()
            .iter()
            .zip(pair.get_offsets())
            .filter(|(s, _)| **s == Some(1))
            .map(|(_, o)| o.1)
            .collect();
        if kept.len() >= passage_tokens {
            return None;
        }
        Some(kept.last().copied().unwrap_or(0))
    }

    /// The score of each passage against `query`, as `CrossEncoder.predict` gives it (the
    /// activation applied), in the order of `passages`. A pair the tokenizer fails on scores NaN.
    pub fn score(&self, query: &str, passages: &[&str]) -> Vec<f32> {
        let mut scores = vec![f32::NAN; passages.len()];
        let seqs: Vec<Option<Pair>> = passages
            .par_iter()
            .map(|p| {
                let (e, _) = self.encode_pair(query, p)?;
                Some((e.get_ids().to_vec(), e.get_type_ids().to_vec()))
            })
            .collect();
        let mut group: Vec<(usize, Pair)> = Vec::new();
        let mut tokens = 0;
        for (i, seq) in seqs.into_iter().enumerate() {
            let Some(seq) = seq else { continue };
            if tokens + seq.0.len() > TOKENS_PER_PASS && !group.is_empty() {
                self.score_pass(std::mem::take(&mut group), &mut scores);
                tokens = 0;
            }
            tokens += seq.0.len();
            group.push((i, seq));
        }
        self.score_pass(group, &mut scores);
        scores
    }

    /// One forward pass over `group` (each pair's index in `scores`, its ids and type ids).
    fn score_pass(&self, group: Vec<(usize, Pair)>, scores: &mut [f32]) {
        if group.is_empty() {
            return;
        }
        let h = self.bert.config.hidden;
        let (at, pairs): (Vec<usize>, Vec<Pair>) = group.into_iter().unzip();
        let (seqs, types): (Vec<Vec<u32>>, Vec<Vec<u32>>) = pairs.into_iter().unzip();
        let (states, starts) = self.bert.hidden_states_typed(&seqs, Some(&types));
        for ((i, seq), start) in at.into_iter().zip(&seqs).zip(starts) {
            if !seq.is_empty() {
                let first = &states[start * h..(start + 1) * h];
                scores[i] = self.activation.apply(self.head.logit(first));
            }
        }
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
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("config_sentence_transformers.json") && err.contains("Softplus"),
            "{err}"
        );
    }

    /// A reranker is shared between threads as an embedder is.
    #[test]
    fn reranker_is_send_and_sync() {
        fn shared<T: Send + Sync>() {}
        shared::<Reranker>();
    }

    /// The head: out_b + sum_j out_w[j] tanh(dense_b[j] + dense_w[j] . x).
    #[test]
    fn head_is_dense_tanh_then_one_output() {
        let head = Head {
            dense_w: vec![1.0, 0.0, 0.5, -1.0],
            dense_b: vec![0.0, 0.25],
            out_w: vec![2.0, -1.0],
            out_b: 0.5,
        };
        let x = [0.3f32, -0.2];
        let want = 0.5 + 2.0 * 0.3f32.tanh() - (0.25f32 + 0.15 + 0.2).tanh();
        assert!((head.logit(&x) - want).abs() < 1e-6);
        assert!((ScoreActivation::Sigmoid.apply(0.0) - 0.5).abs() < 1e-7);
    }
}
