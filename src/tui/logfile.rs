//! The log: a file, never the screen; INFO by default (`--log-level` or `RUST_LOG`), and the file
//! set aside once it outgrows its limit.

use std::io::Write;
use std::path::{Path, PathBuf};

use chunkscope_core::model;

/// A log file larger than this is renamed to `NAME.1` (replacing the previous one) at start.
const ROTATE_BYTES: u64 = 4 * 1024 * 1024;

/// A logger that appends to a file; the screen never sees a log line.
struct FileLog {
    file: std::sync::Mutex<std::fs::File>,
    level: log::Level,
}

impl log::Log for FileLog {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= self.level && !m.target().starts_with("ignore")
    }
    fn log(&self, r: &log::Record) {
        if self.enabled(r.metadata()) {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0);
            if let Ok(mut f) = self.file.lock() {
                let _ = writeln!(f, "{secs:.3} {} {}: {}", r.level(), r.target(), r.args());
            }
        }
    }
    fn flush(&self) {}
}

/// The level asked for: `flag` (--log-level), else RUST_LOG's level, else INFO.
pub fn level(flag: Option<&str>) -> log::Level {
    flag.map(str::to_string)
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|s| s.rsplit('=').next().and_then(|l| l.trim().parse().ok()))
        .unwrap_or(log::Level::Info)
}

/// Start logging to `path` (default: chunkscope.log in the cache directory) at `level`; returns
/// the file's path.
pub(super) fn init(path: Option<&Path>, level: log::Level) -> Option<PathBuf> {
    let path = path
        .map(Path::to_path_buf)
        .unwrap_or_else(|| model::cache_root().join("chunkscope.log"));
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > ROTATE_BYTES) {
        let _ = std::fs::rename(&path, path.with_extension("log.1"));
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .ok()?;
    let _ = log::set_boxed_logger(Box::new(FileLog {
        file: std::sync::Mutex::new(file),
        level,
    }));
    log::set_max_level(level.to_level_filter());
    Some(path)
}
