//! workbench.toml: built-in defaults with the user's file laid over them. Every error names the
//! file and the line.

use std::path::{Path, PathBuf};

mod file;
pub mod save;

use file::{key_overrides, line_of_key, line_of_offset, RawFile};

use super::chunk::{ChunkSettings, Preset, SpringAiParams, Strategy};
use super::metadata::Use;

use super::corpus::CorpusRules;
use super::embed::lowp::Precision;
use super::embed::remote::RemoteConfig;
use super::embed::{BackendChoice, EmbedSpec};
use super::model::DEFAULT_MODEL;
use super::tokenize::Unit;
use super::window::WindowSpec;

/// The documented default configuration, shipped at the top of the repository.
pub const DEFAULT_TOML: &str = include_str!("../../../../workbench.toml");

/// What is wrong in a configuration, with the field it concerns.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigProblem {
    /// TOML that does not parse, or a key the file may not have.
    #[error("{0}")]
    Syntax(String),
    /// A value that cannot be read, e.g. an unknown unit.
    #[error("{section}.{key}: {message}")]
    Value {
        section: &'static str,
        key: String,
        message: String,
    },
    /// Settings that cannot work together.
    #[error(transparent)]
    Settings(#[from] crate::chunk::SettingsError),
    /// A key binding that cannot be used (the keymap itself lives with the terminal front end).
    #[error("{0}")]
    Keys(String),
    #[error("{0}")]
    Io(String),
}

impl ConfigProblem {
    fn value(section: &'static str, key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigProblem::Value {
            section,
            key: key.into(),
            message: message.into(),
        }
    }

    /// The (section, key) the problem is about, when it is about one.
    pub fn field(&self) -> Option<(&str, &str)> {
        match self {
            ConfigProblem::Value { section, key, .. } => {
                Some((section, key.split('.').next().unwrap_or(key)))
            }
            ConfigProblem::Settings(e) => Some(e.field()),
            _ => None,
        }
    }
}

/// A configuration error with its place: the file and, when known, the line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}{}: {problem}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ConfigError {
    pub file: String,
    pub line: Option<usize>,
    pub problem: ConfigProblem,
}

impl ConfigError {
    /// The error at the line of `text` where the problem's field is set.
    fn located(file: &str, text: &str, problem: ConfigProblem) -> ConfigError {
        ConfigError {
            file: file.to_string(),
            line: problem.field().and_then(|(s, k)| line_of_key(text, s, k)),
            problem,
        }
    }
}

/// One remapped action from `[keys]`: `quit = [..]` (global and chunks actions) or
/// `[keys.PANE] action = [..]`, with the line it is on.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyOverride {
    pub pane: Option<String>,
    pub action: String,
    pub keys: Vec<String>,
    pub line: Option<usize>,
}

/// The knobs a layer may set (workbench.toml, then the command line), laid over the defaults in
/// that order by [`Overrides::apply`], for every command and the TUI alike.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub model: Option<String>,
    /// An embedding server's base URL (`[model] endpoint`, `--endpoint`); empty: none.
    pub endpoint: Option<String>,
    /// The local backend (`[model] backend`, `--backend`) and candle's device.
    pub backend: Option<BackendChoice>,
    pub device: Option<String>,
    /// The dense layers' arithmetic (`[model] precision`, `--precision`).
    pub precision: Option<Precision>,
    pub window: Option<WindowSpec>,
    pub preset: Option<Preset>,
    pub strategy: Option<Strategy>,
    pub unit: Option<Unit>,
    pub size: Option<usize>,
    pub overlap: Option<usize>,
    pub separators: Option<Vec<String>>,
    pub parents: Option<bool>,
    pub fixed_threshold: Option<f32>,
    pub maxmin_c: Option<f32>,
    pub init_constant: Option<f32>,
    /// (field, use): heading/section, file, index/chunk, front_matter, or a front-matter key.
    pub metadata: Vec<(String, Use)>,
    /// A store to open as the corpus (`--store URI`).
    pub store: Option<String>,
}

impl Overrides {
    /// Lay these knobs over `c`: a preset first, then a strategy (with what it implies), then
    /// the explicit unit, size and overlap, then the rest.
    pub fn apply(&self, c: &mut Config) {
        if let Some(m) = &self.model {
            c.model = m.clone();
        }
        if let Some(s) = &self.store {
            c.store.uri = Some(s.clone());
        }
        if let Some(e) = &self.endpoint {
            c.remote.endpoint = e.trim_end_matches('/').to_string();
        }
        if let Some(b) = self.backend {
            c.backend = b;
        }
        if let Some(d) = &self.device {
            c.device = d.clone();
        }
        if let Some(p) = self.precision {
            c.precision = p;
        }
        if let Some(w) = self.window {
            c.window = w;
        }
        let s = &mut c.chunking;
        if let Some(p) = self.preset {
            p.apply(s);
        }
        if let Some(st) = self.strategy {
            s.set_strategy(st);
        }
        if let Some(u) = self.unit {
            s.unit = u;
        }
        if let Some(n) = self.size {
            s.size = n;
        }
        if let Some(n) = self.overlap {
            s.overlap = n;
        }
        if let Some(v) = &self.separators {
            s.separators = v.clone();
        }
        if let Some(p) = self.parents {
            s.parents = p;
        }
        for (v, slot) in [
            (self.fixed_threshold, &mut s.maxmin.fixed_threshold),
            (self.maxmin_c, &mut s.maxmin.c),
            (self.init_constant, &mut s.maxmin.init_constant),
        ] {
            if let Some(v) = v {
                *slot = v;
            }
        }
        let p = &mut s.metadata;
        for (field, u) in &self.metadata {
            match field.as_str() {
                "heading" | "section" => p.heading = *u,
                "file" => p.file = *u,
                "index" | "chunk" => p.index = *u,
                "front_matter" | "front-matter" => p.front_matter = *u,
                key => {
                    p.keys.insert(key.to_string(), *u);
                }
            }
        }
    }
}

/// Everything the workbench is configured with.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub model: String,
    /// The embedding server, when `remote.endpoint` is not empty (see [`Config::remote`]).
    pub remote: RemoteConfig,
    /// The local backend and candle's device.
    pub backend: BackendChoice,
    pub device: String,
    /// The native backend's arithmetic: f32 (the reference), bf16 or int8.
    pub precision: Precision,
    /// Other models the workbench cycles through (`[model] compare`, the `E` key).
    pub compare: Vec<String>,
    pub window: WindowSpec,
    pub chunking: ChunkSettings,
    pub corpus: CorpusRules,
    pub theme: String,
    pub mouse: bool,
    pub log_file: Option<PathBuf>,
    /// Hits per retriever in the query pane.
    pub search_k: usize,
    /// Reciprocal rank fusion's constant for the hybrid column.
    pub search_rrf_k: usize,
    /// A CrossEncoder folder that reranks the first stage (`[rerank] model`, `--rerank`).
    pub rerank_model: Option<String>,
    /// How deep into BM25's and the vectors' rankings the reranker reads (each).
    pub rerank_candidates: usize,
    /// Remapped actions, overriding the default keymap.
    pub keys: Vec<KeyOverride>,
    /// A RAG store opened as the corpus (`[store]`, `--store`).
    pub store: crate::store::StoreOptions,
    /// The file this came from, if any.
    pub source: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            model: DEFAULT_MODEL.into(),
            remote: RemoteConfig::new("", ""),
            backend: BackendChoice::Auto,
            device: "cpu".into(),
            precision: Precision::F32,
            compare: Vec::new(),
            window: WindowSpec::Auto,
            chunking: ChunkSettings::default(),
            corpus: CorpusRules::default(),
            theme: "dark".into(),
            mouse: false,
            log_file: None,
            search_k: 5,
            search_rrf_k: crate::search::RRF_K,
            rerank_model: None,
            rerank_candidates: crate::rerank::stage::CANDIDATES,
            keys: Vec::new(),
            store: Default::default(),
            source: None,
        }
    }
}

impl Config {
    /// The embedding server to use, if any: the model name it is asked for is `served_model`,
    /// else the model id.
    pub fn remote(&self) -> Option<RemoteConfig> {
        if self.remote.endpoint.is_empty() {
            return None;
        }
        let mut r = self.remote.clone();
        if r.model.is_empty() {
            r.model = self.model.clone();
        }
        Some(r)
    }

    /// The embedder this configuration asks for.
    pub fn embed_spec(&self) -> EmbedSpec {
        EmbedSpec {
            remote: self.remote(),
            backend: self.backend,
            device: self.device.clone(),
            precision: self.precision,
        }
    }

    /// Parse `text` (named `file` in messages) over the defaults.
    pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
        let located = |p: ConfigProblem| ConfigError::located(file, text, p);
        let raw: RawFile = toml::from_str(text).map_err(|e| ConfigError {
            file: file.to_string(),
            line: e.span().map(|s| line_of_offset(text, s.start)),
            problem: ConfigProblem::Syntax(e.message().to_string()),
        })?;
        let mut c = Config::default();
        raw.overrides().map_err(located)?.apply(&mut c);
        if let Some(s) = &raw.spring_ai {
            c.chunking.spring_ai = spring_ai(s);
        }
        c.chunking
            .validate()
            .map_err(|e| located(ConfigProblem::Settings(e)))?;
        if let Some(m) = &raw.model {
            c.read_model(m).map_err(located)?;
        }
        if let Some(co) = raw.corpus {
            c.read_corpus(co);
        }
        if let Some(ui) = raw.ui {
            if let Some(t) = ui.theme {
                c.theme = t;
            }
            if let Some(m) = ui.mouse {
                c.mouse = m;
            }
            c.log_file = ui.log_file.filter(|s| !s.is_empty()).map(PathBuf::from);
        }
        if let Some(s) = &raw.search {
            if let Some(k) = s.k {
                c.search_k = at_least_one("search", "k", k).map_err(located)?;
            }
            if let Some(k) = s.rrf_k {
                c.search_rrf_k = at_least_one("search", "rrf_k", k).map_err(located)?;
            }
        }
        if let Some(r) = raw.rerank {
            c.rerank_model = r.model.filter(|m| !m.is_empty());
            if let Some(n) = r.candidates {
                c.rerank_candidates = at_least_one("rerank", "candidates", n).map_err(located)?;
            }
        }
        if let Some(store) = raw.store {
            c.store = store;
        }
        c.keys = key_overrides(raw.keys.unwrap_or_default(), text).map_err(located)?;
        Ok(c)
    }

    /// `[model]`'s keys beyond the knobs: the models compared, the embedding server's.
    fn read_model(&mut self, m: &file::RawModel) -> Result<(), ConfigProblem> {
        if let Some(v) = &m.compare {
            self.compare = v.clone();
        }
        let r = &mut self.remote;
        if let Some(v) = &m.served_model {
            r.model = v.clone();
        }
        r.api_key_env = m.api_key_env.clone().filter(|v| !v.is_empty());
        if let Some(v) = m.batch {
            r.batch = v.max(1);
        }
        if let Some(v) = m.in_flight {
            r.in_flight = v.max(1);
        }
        if let Some(v) = m.timeout_s {
            r.timeout = std::time::Duration::from_secs_f64(v.clamp(0.1, 3600.0));
        }
        if let Some(v) = m.max_retries {
            r.max_retries = v;
        }
        if let Some(v) = &m.overflow {
            r.overflow = match v.as_str() {
                "auto" => None,
                other => Some(other.parse().map_err(|e: crate::names::UnknownName| {
                    ConfigProblem::value("model", "overflow", e.to_string())
                })?),
            };
        }
        Ok(())
    }

    fn read_corpus(&mut self, co: file::RawCorpus) {
        let c = &mut self.corpus;
        if let Some(v) = co.include {
            c.include = v;
        }
        if let Some(v) = co.exclude {
            c.exclude = v;
        }
        if let Some(v) = co.max_file_bytes {
            c.max_file_bytes = v;
        }
        if let Some(v) = co.max_document_bytes {
            c.max_document_bytes = v;
        }
        if let Some(v) = co.gitignore {
            c.gitignore = v;
        }
    }

    /// The file name errors should carry: the file this came from, or "defaults".
    pub fn source_name(&self) -> String {
        self.source
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "defaults".into())
    }

    /// Load the user's file: `explicit` if given, else ./workbench.toml, else the corpus root's.
    /// Returns the defaults when there is none.
    pub fn discover(explicit: Option<&Path>, corpus: Option<&Path>) -> Result<Config, ConfigError> {
        let candidates: Vec<PathBuf> = match explicit {
            Some(p) => vec![p.to_path_buf()],
            None => {
                let mut v = vec![PathBuf::from("workbench.toml")];
                if let Some(c) = corpus.filter(|c| c.is_dir()) {
                    v.push(c.join("workbench.toml"));
                }
                v
            }
        };
        for path in candidates {
            if !path.is_file() {
                if explicit.is_some() {
                    return Err(ConfigError {
                        file: path.display().to_string(),
                        line: None,
                        problem: ConfigProblem::Io("no such file".into()),
                    });
                }
                continue;
            }
            let name = path.display().to_string();
            let text = std::fs::read_to_string(&path).map_err(|e| ConfigError {
                file: name.clone(),
                line: None,
                problem: ConfigProblem::Io(e.to_string()),
            })?;
            let mut c = Config::parse(&text, &name)?;
            c.source = Some(path);
            return Ok(c);
        }
        Ok(Config::default())
    }
}

/// `[spring_ai]`'s parameters, the defaults where a key is missing.
fn spring_ai(s: &file::RawSpringAi) -> SpringAiParams {
    let d = SpringAiParams::default();
    SpringAiParams {
        min_chunk_size_chars: s.min_chunk_size_chars.unwrap_or(d.min_chunk_size_chars),
        min_chunk_length_to_embed: s
            .min_chunk_length_to_embed
            .unwrap_or(d.min_chunk_length_to_embed),
        max_num_chunks: s.max_num_chunks.unwrap_or(d.max_num_chunks),
        keep_separator: s.keep_separator.unwrap_or(d.keep_separator),
        punctuation: d.punctuation,
    }
}

/// A count that must be at least 1 (`[section] key`).
fn at_least_one(section: &'static str, key: &str, n: usize) -> Result<usize, ConfigProblem> {
    if n == 0 {
        return Err(ConfigProblem::value(section, key, "must be at least 1"));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_file_is_the_default() {
        let c = Config::parse(DEFAULT_TOML, "workbench.toml").unwrap();
        assert_eq!(c, Config::default());
    }

    #[test]
    fn bad_values_name_the_line() {
        let e = Config::parse("[chunking]\nsize = 100\noverlap = 100\n", "w.toml").unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        assert!(
            e.to_string().starts_with("w.toml:3: chunking.overlap"),
            "{e}"
        );
        let e = Config::parse("[chunking]\nunit = \"bytes\"\n", "w.toml").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(e.problem.to_string().contains("bytes"));
        let e =
            Config::parse("[model]\nid = \"x\"\n\n[chunking]\nsize = \n", "w.toml").unwrap_err();
        assert_eq!(e.line, Some(5), "{e}");
        let e = Config::parse("[chunking]\nsise = 3\n", "w.toml").unwrap_err();
        assert!(e.problem.to_string().contains("sise"), "{e}");
        let e = Config::parse("[chunking]\nsize = 0\n", "w.toml").unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
        // A Max-Min error names its own key and line.
        let e = Config::parse("[chunking]\nstrategy = \"maxmin\"\noverlap = 5\n", "w.toml")
            .unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
    }

    #[test]
    fn keys_carry_their_lines() {
        let c = Config::parse(
            "[keys]\nquit = [\"x\"]\n\n[keys.eval]\nmisses = [\"M\"]\n",
            "w.toml",
        )
        .unwrap();
        assert_eq!(c.keys.len(), 2);
        assert_eq!(
            (c.keys[0].pane.as_deref(), c.keys[0].line),
            (Some("eval"), Some(5))
        );
        assert_eq!(
            (c.keys[1].action.as_str(), c.keys[1].line),
            ("quit", Some(2))
        );
    }

    #[test]
    fn a_strategy_implies_the_same_everywhere() {
        let c = Config::parse(
            "[chunking]\npreset = \"langchain-chars\"\nstrategy = \"spring-ai\"\n",
            "w",
        )
        .unwrap();
        assert_eq!((c.chunking.unit, c.chunking.overlap), (Unit::Cl100k, 0));
    }

    #[test]
    fn presets_and_overrides() {
        let c = Config::parse("[chunking]\npreset = \"langchain-tokens\"\n", "w").unwrap();
        assert_eq!(c.chunking.strategy, Strategy::Langchain);
        assert_eq!((c.chunking.size, c.chunking.overlap), (240, 32));
        assert_eq!(c.chunking.unit, Unit::Embed);
        let c = Config::parse("[model]\nwindow = 256\n", "w").unwrap();
        assert_eq!(c.window, WindowSpec::Tokens(256));
    }
}
