//! NLTK's trained Punkt parameters: where NLTK keeps its punkt_tab data, and how a language
//! folder's files read into `Params`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Trained Punkt parameters, as NLTK's `punkt_tab` model folders hold them. The default is the
/// untrained model (all empty).
#[derive(Debug, Default, Clone)]
pub struct Params {
    /// Known abbreviations, lower case, without their final period.
    pub abbrev_types: HashSet<String>,
    /// Pairs of types (the first one's final period dropped) that do not break.
    pub collocations: HashSet<(String, String)>,
    /// Types that often open a sentence.
    pub sent_starters: HashSet<String>,
    /// Orthographic context flags per type.
    pub ortho_context: HashMap<String, u32>,
}

/// The punkt_tab model could not be found or read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PunktDataError {
    #[error("NLTK's punkt_tab data (tokenizers/punkt_tab/{lang}/) was not found; looked in: {tried}. Install it with `python -m nltk.downloader punkt_tab`, or point NLTK_DATA at a folder holding tokenizers/punkt_tab")]
    Missing { lang: String, tried: String },
    #[error("{path}:{line}: {reason}")]
    Bad {
        path: String,
        line: usize,
        reason: String,
    },
    #[error("{path}: {reason}")]
    Unreadable { path: String, reason: String },
}

/// The files a punkt_tab language folder must hold.
const MODEL_FILES: [&str; 4] = [
    "abbrev_types.txt",
    "collocations.tab",
    "sent_starters.txt",
    "ortho_context.tab",
];

/// The folders NLTK would search for data, in its order: `NLTK_DATA` (path list), `~/nltk_data`,
/// the active Python environment's `nltk_data` folders (`VIRTUAL_ENV`, else `CONDA_PREFIX`),
/// then the system ones. `setting` (a folder the caller names) comes first.
pub fn nltk_data_roots(setting: Option<&Path>) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    if let Some(s) = setting {
        roots.push(s.to_path_buf());
    }
    if let Some(v) = std::env::var_os("NLTK_DATA") {
        roots.extend(std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()));
    }
    if let Some(home) = std::env::var_os("HOME") {
        roots.push(PathBuf::from(home).join("nltk_data"));
    }
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(prefix) = std::env::var_os(var) {
            let prefix = PathBuf::from(prefix);
            roots.push(prefix.join("nltk_data"));
            roots.push(prefix.join("share").join("nltk_data"));
            roots.push(prefix.join("lib").join("nltk_data"));
        }
    }
    for sys in [
        "/usr/share/nltk_data",
        "/usr/local/share/nltk_data",
        "/usr/lib/nltk_data",
        "/usr/local/lib/nltk_data",
    ] {
        roots.push(PathBuf::from(sys));
    }
    roots
}

/// The first `tokenizers/punkt_tab/{lang}` folder with all four model files under `roots`.
pub fn find_model(roots: &[PathBuf], lang: &str) -> Result<PathBuf, PunktDataError> {
    for root in roots {
        let dir = root.join("tokenizers").join("punkt_tab").join(lang);
        if MODEL_FILES.iter().all(|f| dir.join(f).is_file()) {
            return Ok(dir);
        }
    }
    Err(PunktDataError::Missing {
        lang: lang.to_string(),
        tried: roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

impl Params {
    /// Read a punkt_tab language folder (one entry a line; tab-separated pairs).
    pub fn load(dir: &Path) -> Result<Params, PunktDataError> {
        let read = |name: &str| -> Result<(String, String), PunktDataError> {
            let path = dir.join(name);
            let text = std::fs::read_to_string(&path).map_err(|e| PunktDataError::Unreadable {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
            Ok((path.display().to_string(), text))
        };
        let mut p = Params::default();
        let (_, abbrevs) = read("abbrev_types.txt")?;
        p.abbrev_types = abbrevs.lines().map(str::to_string).collect();
        let (_, starters) = read("sent_starters.txt")?;
        p.sent_starters = starters.lines().map(str::to_string).collect();
        let (path, collocations) = read("collocations.tab")?;
        for (i, line) in collocations.lines().enumerate() {
            let Some((a, b)) = line.split_once('\t') else {
                return Err(PunktDataError::Bad {
                    path,
                    line: i + 1,
                    reason: "expected two types separated by a tab".into(),
                });
            };
            p.collocations.insert((a.to_string(), b.to_string()));
        }
        let (path, ortho) = read("ortho_context.tab")?;
        for (i, line) in ortho.lines().enumerate() {
            let flags = line
                .split_once('\t')
                .and_then(|(t, f)| Some((t, f.trim().parse::<u32>().ok()?)));
            let Some((typ, flags)) = flags else {
                return Err(PunktDataError::Bad {
                    path,
                    line: i + 1,
                    reason: "expected a type, a tab and a whole number".into(),
                });
            };
            p.ortho_context.insert(typ.to_string(), flags);
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_model_names_the_places_tried() {
        let roots = [
            PathBuf::from("/nonexistent/a"),
            PathBuf::from("/nonexistent/b"),
        ];
        let e = find_model(&roots, "english").unwrap_err().to_string();
        assert!(e.contains("tokenizers/punkt_tab/english/"), "{e}");
        assert!(e.contains("/nonexistent/a, /nonexistent/b"), "{e}");
        assert!(nltk_data_roots(Some(Path::new("/x")))[0] == Path::new("/x"));
    }
}
