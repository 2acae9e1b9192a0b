//! What the benchmarks share: a generated corpus in a temporary folder that is always removed,
//! the figures line, and reference scripts run in Python.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use chunkscope_core::corpus::{Corpus, CorpusRules};

/// Chunks of the selected file the chunk pane can reach on a 50-row terminal from its first
/// chunk (`Model::rechunk_focus`): the first chunk and one a row below it.
pub const REACH: usize = 48;

/// A temporary folder removed when dropped, on every exit path (errors and panics included).
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        TempDir(std::env::temp_dir().join(format!("chunkscope-{name}-{}", std::process::id())))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The example corpus the generated ones are made from (a benchmark runs from the source tree).
pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// How to walk a folder of the user's own (`--corpus`): the `[corpus]` rules of its
/// workbench.toml, else the defaults.
pub fn own_corpus_rules(dir: &Path) -> Result<CorpusRules> {
    if !dir.is_dir() {
        anyhow::bail!("{}: not a folder", dir.display());
    }
    let toml = dir.join("workbench.toml");
    if !toml.is_file() {
        return Ok(CorpusRules::default());
    }
    Ok(chunkscope_core::config::Config::discover(Some(&toml), None)?.corpus)
}

/// Write a corpus of about `megabytes` MB into `dir` (emptied first): the example corpus copied
/// over and over with words varied per copy, so no two documents are equal. Returns the number
/// of files and bytes written.
pub fn generate_corpus(dir: &Path, megabytes: usize) -> Result<(usize, usize)> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let examples = examples();
    let seed = Corpus::load(&examples, &CorpusRules::default())?;
    let target = megabytes.max(1) * 1024 * 1024;
    let (mut written, mut n) = (0usize, 0usize);
    while written < target {
        for d in &seed.docs {
            // Vary the words so documents differ (no cache can shortcut them).
            let text = d
                .text
                .replace("the ", &format!("the{} ", n % 97))
                .replace("key", &format!("key{}", n % 13));
            let path = dir.join(format!(
                "d{:03}/{n:05}-{}",
                n / 100,
                d.path.replace('/', "_")
            ));
            std::fs::create_dir_all(path.parent().context("parent")?)?;
            std::fs::write(&path, &text)?;
            written += text.len();
            n += 1;
        }
    }
    Ok((n, written))
}

pub fn report(out: &mut dyn Write, what: &str, mut ms: Vec<f64>) -> Result<()> {
    if ms.is_empty() {
        writeln!(out, "{what:<32} no samples")?;
        return Ok(());
    }
    writeln!(
        out,
        "{what:<32} n {:>3}  p50 {:>8.1} ms  p95 {:>8.1} ms  max {:>8.1} ms",
        ms.len(),
        percentile(&mut ms, 0.5),
        percentile(&mut ms, 0.95),
        percentile(&mut ms, 1.0)
    )?;
    Ok(())
}

/// The `q` quantile (0..=1) of `ms`, nearest rank; sorts `ms` in place. `ms` must not be empty.
pub fn percentile(ms: &mut [f64], q: f64) -> f64 {
    ms.sort_by(f64::total_cmp);
    ms[((q * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1]
}

/// Run a reference script with `req` as JSON on stdin and parse its JSON output.
pub fn python_json(
    py: &str,
    script: &Script,
    req: &serde_json::Value,
    hint: &str,
) -> Result<serde_json::Value> {
    let mut child = Command::new(py)
        .arg("-c")
        .arg(script.source)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("running {py} {}", script.name))?;
    child
        .stdin
        .take()
        .context("stdin")?
        .write_all(req.to_string().as_bytes())?;
    let o = child.wait_with_output()?;
    if !o.status.success() {
        bail!("{py} {}: failed ({}); {hint}", script.name, o.status);
    }
    Ok(serde_json::from_slice(&o.stdout)?)
}

/// A reference script, compiled in so the benchmark needs no source files at run time.
pub struct Script {
    pub name: &'static str,
    pub source: &'static str,
}

pub const ST_EMBED: Script = Script {
    name: "st_embed.py",
    source: include_str!("../../../tests/reference/st_embed.py"),
};

pub const STS_RECHUNK: Script = Script {
    name: "sts_rechunk.py",
    source: include_str!("../../../tests/reference/sts_rechunk.py"),
};

/// The process's peak resident set (VmHWM), in MB, where /proc says.
pub fn peak_rss_mb() -> Option<u64> {
    proc_status_kb("VmHWM:").map(|kb| kb / 1024)
}

/// The process's resident set now (VmRSS), in MB, where /proc says.
pub fn rss_mb() -> Option<u64> {
    proc_status_kb("VmRSS:").map(|kb| kb / 1024)
}

/// A field of /proc/self/status given in kB.
fn proc_status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Start the peak resident set again from the current one (Linux: 5 into clear_refs).
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The system allocator, counting the bytes live on the heap and their peak, so that the
/// benchmarks can tell what the program holds from what the allocator keeps (RSS).
pub struct Counting;

static LIVE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static PEAK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn counted(grow: usize) {
    use std::sync::atomic::Ordering::Relaxed;
    let now = LIVE.fetch_add(grow, Relaxed) + grow;
    if now > PEAK.load(Relaxed) {
        PEAK.fetch_max(now, Relaxed);
    }
}

// SAFETY: every call is passed to the system allocator unchanged; only counters are updated.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = std::alloc::System.alloc(layout);
        if !p.is_null() {
            counted(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = std::alloc::System.alloc_zeroed(layout);
        if !p.is_null() {
            counted(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        std::alloc::System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), std::sync::atomic::Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        let p = std::alloc::System.realloc(ptr, layout, new);
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), std::sync::atomic::Ordering::Relaxed);
            counted(new);
        }
        p
    }
}

/// Heap bytes live now, in MB.
pub fn heap_mb() -> u64 {
    (LIVE.load(std::sync::atomic::Ordering::Relaxed) >> 20) as u64
}

/// The peak of live heap bytes since the last `reset_peak_heap`, in MB.
pub fn peak_heap_mb() -> u64 {
    (PEAK.load(std::sync::atomic::Ordering::Relaxed) >> 20) as u64
}

/// Start the heap's peak again from what is live now.
pub fn reset_peak_heap() {
    use std::sync::atomic::Ordering::Relaxed;
    PEAK.store(LIVE.load(Relaxed), Relaxed);
}
