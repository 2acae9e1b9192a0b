//! The TOML layer: workbench.toml read into raw tables, then into the one overrides type; a
//! field is mapped to the line it is set on.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{ConfigProblem, KeyOverride, Overrides};
use crate::metadata::Use;

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    pub(super) model: Option<RawModel>,
    pub(super) chunking: Option<RawChunking>,
    pub(super) spring_ai: Option<RawSpringAi>,
    pub(super) maxmin: Option<RawMaxMin>,
    pub(super) metadata: Option<RawMetadata>,
    pub(super) corpus: Option<RawCorpus>,
    pub(super) ui: Option<RawUi>,
    pub(super) search: Option<RawSearch>,
    pub(super) rerank: Option<RawRerank>,
    pub(super) store: Option<crate::store::StoreOptions>,
    pub(super) keys: Option<BTreeMap<String, toml::Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawModel {
    pub(super) id: Option<String>,
    pub(super) window: Option<toml::Value>,
    pub(super) endpoint: Option<String>,
    pub(super) served_model: Option<String>,
    pub(super) api_key_env: Option<String>,
    pub(super) batch: Option<usize>,
    pub(super) in_flight: Option<usize>,
    pub(super) timeout_s: Option<f64>,
    pub(super) max_retries: Option<u32>,
    pub(super) overflow: Option<String>,
    pub(super) backend: Option<String>,
    pub(super) device: Option<String>,
    pub(super) precision: Option<String>,
    pub(super) compare: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawChunking {
    pub(super) preset: Option<String>,
    pub(super) strategy: Option<String>,
    pub(super) unit: Option<String>,
    pub(super) size: Option<i64>,
    pub(super) overlap: Option<i64>,
    pub(super) separators: Option<Vec<String>>,
    pub(super) parents: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMaxMin {
    pub(super) fixed_threshold: Option<f64>,
    pub(super) c: Option<f64>,
    pub(super) init_constant: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMetadata {
    pub(super) file: Option<String>,
    pub(super) heading: Option<String>,
    pub(super) index: Option<String>,
    pub(super) front_matter: Option<String>,
    pub(super) keys: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSpringAi {
    pub(super) min_chunk_size_chars: Option<usize>,
    pub(super) min_chunk_length_to_embed: Option<usize>,
    pub(super) max_num_chunks: Option<usize>,
    pub(super) keep_separator: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCorpus {
    pub(super) include: Option<Vec<String>>,
    pub(super) exclude: Option<Vec<String>>,
    pub(super) max_file_bytes: Option<u64>,
    pub(super) max_document_bytes: Option<u64>,
    pub(super) gitignore: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSearch {
    pub(super) k: Option<usize>,
    pub(super) rrf_k: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRerank {
    pub(super) model: Option<String>,
    pub(super) candidates: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawUi {
    pub(super) theme: Option<String>,
    pub(super) mouse: Option<bool>,
    pub(super) log_file: Option<String>,
}

impl RawFile {
    /// The knobs this file sets, read into the one overrides type.
    pub(super) fn overrides(&self) -> Result<Overrides, ConfigProblem> {
        fn parsed<T: std::str::FromStr<Err: std::fmt::Display>>(
            v: &Option<String>,
            section: &'static str,
            key: &str,
        ) -> Result<Option<T>, ConfigProblem> {
            v.as_deref()
                .map(|s| {
                    s.parse()
                        .map_err(|m: T::Err| ConfigProblem::value(section, key, m.to_string()))
                })
                .transpose()
        }
        let mut o = Overrides::default();
        if let Some(m) = &self.model {
            o.model = m.id.clone();
            o.endpoint = m.endpoint.clone();
            o.backend = parsed(&m.backend, "model", "backend")?;
            o.device = m.device.clone();
            o.precision = parsed(&m.precision, "model", "precision")?;
            if let Some(w) = &m.window {
                let s = match w {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Integer(n) => n.to_string(),
                    other => other.to_string(),
                };
                o.window = parsed(&Some(s), "model", "window")?;
            }
        }
        if let Some(ch) = &self.chunking {
            o.preset = parsed(&ch.preset, "chunking", "preset")?;
            o.strategy = parsed(&ch.strategy, "chunking", "strategy")?;
            o.unit = parsed(&ch.unit, "chunking", "unit")?;
            let count = |v: Option<i64>, key: &str| {
                v.map(|n| {
                    usize::try_from(n).map_err(|_| {
                        ConfigProblem::value("chunking", key, format!("{n} is negative"))
                    })
                })
                .transpose()
            };
            o.size = count(ch.size, "size")?;
            o.overlap = count(ch.overlap, "overlap")?;
            o.separators = ch.separators.clone();
            o.parents = match ch.parents.as_deref() {
                None => None,
                Some("none") => Some(false),
                Some("section") => Some(true),
                Some(other) => {
                    return Err(ConfigProblem::value(
                        "chunking",
                        "parents",
                        format!("unknown value '{other}' (expected none or section)"),
                    ))
                }
            };
        }
        if let Some(m) = &self.maxmin {
            for (key, value, slot) in [
                ("fixed_threshold", m.fixed_threshold, &mut o.fixed_threshold),
                ("c", m.c, &mut o.maxmin_c),
                ("init_constant", m.init_constant, &mut o.init_constant),
            ] {
                if let Some(v) = value {
                    if !v.is_finite() {
                        return Err(ConfigProblem::value(
                            "maxmin",
                            key,
                            "must be a finite number",
                        ));
                    }
                    *slot = Some(v as f32);
                }
            }
        }
        if let Some(m) = &self.metadata {
            for (key, value) in [
                ("file", &m.file),
                ("heading", &m.heading),
                ("index", &m.index),
                ("front_matter", &m.front_matter),
            ] {
                if let Some(u) = parsed::<Use>(value, "metadata", key)? {
                    o.metadata.push((key.to_string(), u));
                }
            }
            for (k, v) in m.keys.iter().flatten() {
                let u: Use = v.parse().map_err(|e: crate::names::UnknownName| {
                    ConfigProblem::value("metadata", format!("keys.{k}"), e.to_string())
                })?;
                o.metadata.push((k.clone(), u));
            }
        }
        Ok(o)
    }
}

/// `[keys]`: `action = ["k", ..]` or `[keys.PANE]` tables of them.
pub(super) fn key_overrides(
    table: BTreeMap<String, toml::Value>,
    text: &str,
) -> Result<Vec<KeyOverride>, ConfigProblem> {
    let keys = |v: &toml::Value, name: &str| -> Result<Vec<String>, ConfigProblem> {
        v.as_array()
            .and_then(|a| a.iter().map(|k| k.as_str().map(str::to_string)).collect())
            .ok_or_else(|| {
                ConfigProblem::value(
                    "keys",
                    name,
                    "expected a list of keys, e.g. [\"q\", \"ctrl-c\"]",
                )
            })
    };
    let mut out = Vec::new();
    for (name, value) in &table {
        match value.as_table() {
            Some(pane) => {
                for (action, v) in pane {
                    out.push(KeyOverride {
                        pane: Some(name.clone()),
                        action: action.clone(),
                        keys: keys(v, &format!("{name}.{action}"))?,
                        line: line_of_key(text, &format!("keys.{name}"), action)
                            .or_else(|| line_of_key(text, "keys", name)),
                    });
                }
            }
            None => out.push(KeyOverride {
                pane: None,
                action: name.clone(),
                keys: keys(value, name)?,
                line: line_of_key(text, "keys", name),
            }),
        }
    }
    Ok(out)
}

pub(super) fn line_of_offset(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The 1-based line where `key` is set inside `[section]`, if it can be found.
pub(super) fn line_of_key(text: &str, section: &str, key: &str) -> Option<usize> {
    let mut current = String::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix('[') {
            current = rest.trim_end_matches(']').trim().to_string();
            continue;
        }
        if current == section {
            if let Some((k, _)) = t.split_once('=') {
                if k.trim().trim_matches('"') == key {
                    return Some(i + 1);
                }
            }
        }
    }
    None
}
