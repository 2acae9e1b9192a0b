//! The knobs carried out of a session: written into workbench.toml (comments and layout kept,
//! atomically), or as the command line that reproduces them headless.

use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, Item, Table, Value};

use crate::chunk::{ChunkSettings, Strategy};
use crate::metadata::Use;
use crate::window::WindowSpec;

/// Why the knobs could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// The workbench.toml to write into does not parse (`line` is 1-based, where known).
    #[error("workbench.toml does not parse: {cause}")]
    Parse {
        line: Option<usize>,
        cause: toml_edit::TomlError,
    },
    /// A table the knobs go into (`model`, `chunking`, ...) is another kind of value.
    #[error("[{table}] is not a table")]
    NotATable { table: String },
    #[error("writing {}: {cause}", path.display())]
    Write {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("replacing {}: {cause}", path.display())]
    Replace {
        path: PathBuf,
        cause: std::io::Error,
    },
}

/// Set `key` of `table` to `v`, keeping the comment that followed the old value on its line.
fn set(table: &mut Item, key: &str, v: impl Into<Value>) {
    let mut v = v.into();
    if let Some(old) = table.get(key).and_then(Item::as_value) {
        *v.decor_mut() = old.decor().clone();
    }
    table[key] = Item::Value(v);
}

/// `text` (a workbench.toml) with the chunking knobs and the window set to these; everything
/// else, comments included, stays as it was. A preset key is removed: the explicit knobs replace
/// it.
pub fn with_knobs(text: &str, s: &ChunkSettings, window: WindowSpec) -> Result<String, SaveError> {
    let mut doc: DocumentMut = text.parse().map_err(|cause: toml_edit::TomlError| {
        let line = cause
            .span()
            .map(|at| text[..at.start.min(text.len())].matches('\n').count() + 1);
        SaveError::Parse { line, cause }
    })?;
    let table = |doc: &mut DocumentMut, name: &str| -> Result<(), SaveError> {
        if !doc.contains_key(name) {
            doc.insert(name, Item::Table(Table::new()));
        }
        doc[name]
            .as_table_like()
            .map(|_| ())
            .ok_or_else(|| SaveError::NotATable {
                table: name.to_string(),
            })
    };
    table(&mut doc, "model")?;
    let w: Value = match window {
        WindowSpec::Tokens(n) => (n as i64).into(),
        other => other.to_string().into(),
    };
    set(&mut doc["model"], "window", w);
    table(&mut doc, "chunking")?;
    let ch = &mut doc["chunking"];
    if let Some(t) = ch.as_table_like_mut() {
        t.remove("preset");
    }
    set(ch, "strategy", s.strategy.name());
    set(ch, "unit", s.unit.name());
    set(ch, "size", s.size as i64);
    set(ch, "overlap", s.overlap as i64);
    set(ch, "parents", if s.parents { "section" } else { "none" });
    if s.strategy == Strategy::MaxMin {
        table(&mut doc, "maxmin")?;
        let m = &mut doc["maxmin"];
        // The f32 knobs as the decimals they were turned to (0.45, not 0.44999998807907104).
        let short = |x: f32| (f64::from(x) * 1e6).round() / 1e6;
        set(m, "fixed_threshold", short(s.maxmin.fixed_threshold));
        set(m, "c", short(s.maxmin.c));
        set(m, "init_constant", short(s.maxmin.init_constant));
    }
    table(&mut doc, "metadata")?;
    let md = &mut doc["metadata"];
    let p = &s.metadata;
    for (key, u) in [
        ("file", p.file),
        ("heading", p.heading),
        ("index", p.index),
        ("front_matter", p.front_matter),
    ] {
        set(md, key, u.name());
    }
    Ok(doc.to_string())
}

/// Write `text` to `path` atomically: a temporary file beside it, then a rename.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), SaveError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("workbench.toml"),
        std::process::id()
    ));
    std::fs::write(&tmp, text).map_err(|cause| SaveError::Write {
        path: tmp.clone(),
        cause,
    })?;
    std::fs::rename(&tmp, path).map_err(|cause| {
        let _ = std::fs::remove_file(&tmp);
        SaveError::Replace {
            path: path.to_path_buf(),
            cause,
        }
    })
}

/// The flags that reproduce these knobs on the command line (after `chunkscope audit CORPUS`).
pub fn command_flags(s: &ChunkSettings, window: WindowSpec) -> Vec<String> {
    let mut f = vec![
        "--strategy".to_string(),
        s.strategy.name().to_string(),
        "--unit".into(),
        s.unit.name().into(),
        "--size".into(),
        s.size.to_string(),
        "--overlap".into(),
        s.overlap.to_string(),
        "--window".into(),
        window.to_string(),
    ];
    if s.strategy == Strategy::MaxMin {
        let m = &s.maxmin;
        for (flag, v) in [
            ("--fixed-threshold", m.fixed_threshold),
            ("--maxmin-c", m.c),
            ("--init-constant", m.init_constant),
        ] {
            f.push(flag.into());
            f.push(v.to_string());
        }
    }
    let p = &s.metadata;
    for (u, flag) in [
        (Use::Embed, "--embed-metadata"),
        (Use::Drop, "--drop-metadata"),
    ] {
        let fields: Vec<&str> = [
            ("file", p.file),
            ("heading", p.heading),
            ("index", p.index),
            ("front_matter", p.front_matter),
        ]
        .into_iter()
        .filter(|(_, x)| *x == u)
        .map(|(n, _)| n)
        .chain(
            p.keys
                .iter()
                .filter(|(_, x)| **x == u)
                .map(|(k, _)| k.as_str()),
        )
        .collect();
        if !fields.is_empty() {
            f.push(flag.into());
            f.push(fields.join(","));
        }
    }
    if s.parents {
        f.push("--parents".into());
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::Preset;
    use crate::config::{Config, DEFAULT_TOML};

    #[test]
    fn knobs_written_keep_the_comments_and_read_back_equal() {
        let mut s = ChunkSettings::default();
        Preset::MaxMin.apply(&mut s);
        s.maxmin.fixed_threshold = 0.45;
        s.metadata.heading = Use::Embed;
        s.parents = true;
        let text = with_knobs(DEFAULT_TOML, &s, WindowSpec::Tokens(256)).unwrap();
        assert!(text.contains("# Log file"), "comments are kept");
        assert!(
            text.contains("# the file's path in the corpus"),
            "a comment after a value is kept"
        );
        let c = Config::parse(&text, "w").unwrap();
        assert_eq!(c.chunking, s);
        assert_eq!(c.window, WindowSpec::Tokens(256));
        // A file without those tables gets them.
        let bare = with_knobs("[ui]\ntheme = \"light\"\n", &s, WindowSpec::St).unwrap();
        let c = Config::parse(&bare, "w").unwrap();
        assert_eq!(
            (c.chunking, c.window, c.theme.as_str()),
            (s, WindowSpec::St, "light")
        );
    }

    #[test]
    fn errors_say_where() {
        let s = ChunkSettings::default();
        let e =
            with_knobs("[ui]\ntheme = \"light\"\nsize = = 3\n", &s, WindowSpec::St).unwrap_err();
        assert!(matches!(e, SaveError::Parse { line: Some(3), .. }), "{e:?}");
        assert!(
            e.to_string().starts_with("workbench.toml does not parse"),
            "{e}"
        );
        let e = with_knobs("chunking = 3\n", &s, WindowSpec::St).unwrap_err();
        assert!(
            matches!(&e, SaveError::NotATable { table } if table == "chunking"),
            "{e:?}"
        );
        let e = write_atomically(Path::new("/nonexistent/dir/workbench.toml"), "").unwrap_err();
        assert!(matches!(e, SaveError::Write { .. }), "{e:?}");
    }
}
