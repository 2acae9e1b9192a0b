//! workbench.toml: built-in defaults with the user's file laid over them. Every error names the
//! file and the line.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::chunk::{ChunkSettings, Preset, SpringAiParams, Strategy};

use super::corpus::CorpusRules;
use super::model::DEFAULT_MODEL;
use super::tokenize::Unit;
use super::window::WindowSpec;

/// The documented default configuration, shipped at the top of the repository.
pub const DEFAULT_TOML: &str = include_str!("../../workbench.toml");

/// A configuration error with its place in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{}: {}", self.file, l, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawFile {
    model: Option<RawModel>,
    chunking: Option<RawChunking>,
    spring_ai: Option<RawSpringAi>,
    maxmin: Option<RawMaxMin>,
    metadata: Option<RawMetadata>,
    corpus: Option<RawCorpus>,
    ui: Option<RawUi>,
    search: Option<RawSearch>,
    keys: Option<BTreeMap<String, Vec<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    id: Option<String>,
    window: Option<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChunking {
    preset: Option<String>,
    strategy: Option<String>,
    unit: Option<String>,
    size: Option<i64>,
    overlap: Option<i64>,
    separators: Option<Vec<String>>,
    parents: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMaxMin {
    fixed_threshold: Option<f64>,
    c: Option<f64>,
    init_constant: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetadata {
    file: Option<String>,
    heading: Option<String>,
    index: Option<String>,
    front_matter: Option<String>,
    keys: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpringAi {
    min_chunk_size_chars: Option<usize>,
    min_chunk_length_to_embed: Option<usize>,
    max_num_chunks: Option<usize>,
    keep_separator: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCorpus {
    include: Option<Vec<String>>,
    exclude: Option<Vec<String>>,
    max_file_bytes: Option<u64>,
    gitignore: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSearch {
    k: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUi {
    theme: Option<String>,
    mouse: Option<bool>,
    log_file: Option<String>,
}

/// Everything the workbench is configured with.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub model: String,
    pub window: WindowSpec,
    pub chunking: ChunkSettings,
    pub corpus: CorpusRules,
    pub theme: String,
    pub mouse: bool,
    pub log_file: Option<PathBuf>,
    /// Hits per retriever in the query pane.
    pub search_k: usize,
    /// Action name -> keys, overriding the default keymap.
    pub keys: BTreeMap<String, Vec<String>>,
    /// The file this came from, if any.
    pub source: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            model: DEFAULT_MODEL.into(),
            window: WindowSpec::Auto,
            chunking: ChunkSettings::default(),
            corpus: CorpusRules::default(),
            theme: "dark".into(),
            mouse: false,
            log_file: None,
            search_k: 5,
            keys: BTreeMap::new(),
            source: None,
        }
    }
}

impl Config {
    /// Parse `text` (named `file` in messages) over the defaults.
    pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
        let err = |line: Option<usize>, message: String| ConfigError {
            file: file.to_string(),
            line,
            message,
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of_offset(text, s.start));
            err(line, e.message().to_string())
        })?;
        let at = |section: &str, key: &str| line_of_key(text, section, key);
        let mut c = Config::default();
        if let Some(m) = raw.model {
            if let Some(id) = m.id {
                c.model = id;
            }
            if let Some(w) = m.window {
                let s = match &w {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Integer(n) => n.to_string(),
                    other => other.to_string(),
                };
                c.window = s.parse().map_err(|m: String| {
                    err(at("model", "window"), format!("model.window: {m}"))
                })?;
            }
        }
        if let Some(ch) = raw.chunking {
            if let Some(p) = ch.preset {
                let preset: Preset = p.parse().map_err(|m: String| {
                    err(at("chunking", "preset"), format!("chunking.preset: {m}"))
                })?;
                preset.apply(&mut c.chunking);
            }
            if let Some(s) = ch.strategy {
                c.chunking.strategy = s.parse().map_err(|m: String| {
                    err(
                        at("chunking", "strategy"),
                        format!("chunking.strategy: {m}"),
                    )
                })?;
                if c.chunking.strategy == Strategy::SpringAi && ch.unit.is_none() {
                    c.chunking.unit = Unit::Cl100k;
                }
            }
            if let Some(u) = ch.unit {
                c.chunking.unit = u.parse().map_err(|m: String| {
                    err(at("chunking", "unit"), format!("chunking.unit: {m}"))
                })?;
            }
            if let Some(n) = ch.size {
                c.chunking.size = usize::try_from(n).map_err(|_| {
                    err(
                        at("chunking", "size"),
                        format!("chunking.size: {n} is negative"),
                    )
                })?;
            }
            if let Some(n) = ch.overlap {
                c.chunking.overlap = usize::try_from(n).map_err(|_| {
                    err(
                        at("chunking", "overlap"),
                        format!("chunking.overlap: {n} is negative"),
                    )
                })?;
            }
            if let Some(seps) = ch.separators {
                c.chunking.separators = seps;
            }
            if let Some(p) = ch.parents {
                c.chunking.parents = match p.as_str() {
                    "none" => false,
                    "section" => true,
                    other => {
                        return Err(err(
                            at("chunking", "parents"),
                            format!(
                            "chunking.parents: unknown value '{other}' (expected none or section)"
                        ),
                        ))
                    }
                };
            }
        }
        if let Some(m) = raw.maxmin {
            let p = &mut c.chunking.maxmin;
            for (key, value, slot) in [
                ("fixed_threshold", m.fixed_threshold, &mut p.fixed_threshold),
                ("c", m.c, &mut p.c),
                ("init_constant", m.init_constant, &mut p.init_constant),
            ] {
                if let Some(v) = value {
                    if !v.is_finite() {
                        return Err(err(
                            at("maxmin", key),
                            format!("maxmin.{key} must be a finite number"),
                        ));
                    }
                    *slot = v as f32;
                }
            }
        }
        if let Some(m) = raw.metadata {
            let p = &mut c.chunking.metadata;
            for (key, value, slot) in [
                ("file", m.file, &mut p.file),
                ("heading", m.heading, &mut p.heading),
                ("index", m.index, &mut p.index),
                ("front_matter", m.front_matter, &mut p.front_matter),
            ] {
                if let Some(v) = value {
                    *slot = v.parse().map_err(|e: String| {
                        err(at("metadata", key), format!("metadata.{key}: {e}"))
                    })?;
                }
            }
            for (k, v) in m.keys.unwrap_or_default() {
                let u = v.parse().map_err(|e: String| {
                    err(at("metadata", "keys"), format!("metadata.keys.{k}: {e}"))
                })?;
                p.keys.insert(k, u);
            }
        }
        if let Some(s) = raw.spring_ai {
            let d = SpringAiParams::default();
            c.chunking.spring_ai = SpringAiParams {
                min_chunk_size_chars: s.min_chunk_size_chars.unwrap_or(d.min_chunk_size_chars),
                min_chunk_length_to_embed: s
                    .min_chunk_length_to_embed
                    .unwrap_or(d.min_chunk_length_to_embed),
                max_num_chunks: s.max_num_chunks.unwrap_or(d.max_num_chunks),
                keep_separator: s.keep_separator.unwrap_or(d.keep_separator),
                punctuation: d.punctuation,
            };
        }
        if let Err(m) = c.chunking.validate() {
            let key = m.split([' ', ':']).next().unwrap_or("");
            let (section, name) = key.split_once('.').unwrap_or(("chunking", key));
            return Err(err(at(section, name), m));
        }
        if let Some(co) = raw.corpus {
            if let Some(v) = co.include {
                c.corpus.include = v;
            }
            if let Some(v) = co.exclude {
                c.corpus.exclude = v;
            }
            if let Some(v) = co.max_file_bytes {
                c.corpus.max_file_bytes = v;
            }
            if let Some(v) = co.gitignore {
                c.corpus.gitignore = v;
            }
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
        if let Some(k) = raw.search.and_then(|s| s.k) {
            if k == 0 {
                return Err(err(at("search", "k"), "search.k must be at least 1".into()));
            }
            c.search_k = k;
        }
        if let Some(keys) = raw.keys {
            c.keys = keys;
        }
        Ok(c)
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
                        message: "no such file".into(),
                    });
                }
                continue;
            }
            let name = path.display().to_string();
            let text = std::fs::read_to_string(&path).map_err(|e| ConfigError {
                file: name.clone(),
                line: None,
                message: e.to_string(),
            })?;
            let mut c = Config::parse(&text, &name)?;
            c.source = Some(path);
            return Ok(c);
        }
        Ok(Config::default())
    }
}

fn line_of_offset(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The 1-based line where `key` is set inside `[section]`, if it can be found.
fn line_of_key(text: &str, section: &str, key: &str) -> Option<usize> {
    let mut current = String::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix('[') {
            current = rest.trim_end_matches(']').trim().to_string();
            continue;
        }
        if current == section {
            if let Some((k, _)) = t.split_once('=') {
                if k.trim() == key {
                    return Some(i + 1);
                }
            }
        }
    }
    None
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
        assert!(e.message.contains("bytes"));
        let e =
            Config::parse("[model]\nid = \"x\"\n\n[chunking]\nsize = \n", "w.toml").unwrap_err();
        assert_eq!(e.line, Some(5), "{e}");
        let e = Config::parse("[chunking]\nsise = 3\n", "w.toml").unwrap_err();
        assert!(e.message.contains("sise"), "{e}");
        let e = Config::parse("[chunking]\nsize = 0\n", "w.toml").unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
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
