//! The harness of the parity tests: the pinned reference interpreters (or a visible skip), the
//! documents, our pieces of them and the comparison with a reference script's pieces.

use std::fmt::Debug;
use std::path::PathBuf;

use chunkscope_core::chunk::{Chunk, Chunker, DocView};
use chunkscope_core::tokenize::DocTokens;
use serde_json::Value;

use super::{repo, skip, tokenizer, varied_texts};

/// One piece of a text, ours or the reference's: (start in code points, text).
pub type Piece<S> = (S, String);

/// The interpreter of CHUNKSCOPE_SPLITTERS_PYTHON when it imports `imports` and has the `pins`
/// (package, version); otherwise `test` is reported as skipped (a failure under CI=true).
pub fn splitters_python(test: &str, imports: &str, pins: &[(&str, &str)]) -> Option<PathBuf> {
    let Some(exe) = std::env::var_os("CHUNKSCOPE_SPLITTERS_PYTHON").map(PathBuf::from) else {
        skip(
            test,
            "CHUNKSCOPE_SPLITTERS_PYTHON is not set; run scripts/test.sh (it sets up .venv-splitters) or point it at a Python with the pinned splitters",
        );
        return None;
    };
    pinned(test, exe, imports, pins, "CHUNKSCOPE_SPLITTERS_PYTHON")
}

/// The interpreter of CHUNKSCOPE_REF_PYTHON (else .venv-ref's) when it imports `imports` and has
/// the `pins`; otherwise `test` is reported as skipped (a failure under CI=true).
pub fn reference_python(test: &str, imports: &str, pins: &[(&str, &str)]) -> Option<PathBuf> {
    let exe = std::env::var_os("CHUNKSCOPE_REF_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv-ref/bin/python"));
    pinned(test, exe, imports, pins, "CHUNKSCOPE_REF_PYTHON")
}

/// `exe` when it imports `imports` and reports exactly the pinned versions.
fn pinned(
    test: &str,
    exe: PathBuf,
    imports: &str,
    pins: &[(&str, &str)],
    var: &str,
) -> Option<PathBuf> {
    let check = pins
        .iter()
        .map(|(p, v)| format!("('{p}', '{v}')"))
        .collect::<Vec<_>>()
        .join(", ");
    let script = format!(
        "from importlib.metadata import version\n\
         import {imports}\n\
         bad = [f'{{p}} {{version(p)}} (want {{v}})' for p, v in [{check}] if version(p) != v]\n\
         assert not bad, ', '.join(bad)\n"
    );
    let why = match std::process::Command::new(&exe)
        .args(["-c", &script])
        .output()
    {
        Ok(o) if o.status.success() => return Some(exe),
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let last = err.lines().last().unwrap_or("").to_string();
            format!("lacks the pinned packages ({last})")
        }
        Err(e) => e.to_string(),
    };
    skip(
        test,
        &format!("{}: {why}; run scripts/test.sh or set {var}", exe.display()),
    );
    None
}

/// A text to chunk, tokenized by the real model's tokenizer; names ending in .md are Markdown.
pub struct Doc {
    pub name: String,
    pub text: String,
    pub tokens: DocTokens,
    pub markdown: bool,
}

impl Doc {
    pub fn new(name: String, text: String) -> Self {
        Doc {
            markdown: name.ends_with(".md"),
            tokens: DocTokens::new(&text, &tokenizer()).unwrap(),
            name,
            text,
        }
    }
}

/// `varied_texts` and then `extra`, as documents.
pub fn docs(extra: Vec<(String, String)>) -> Vec<Doc> {
    let mut all = varied_texts();
    all.extend(extra);
    all.into_iter().map(|(n, t)| Doc::new(n, t)).collect()
}

/// The texts of `docs`, as a reference request lists them.
pub fn texts(docs: &[Doc]) -> Vec<&str> {
    docs.iter().map(|d| d.text.as_str()).collect()
}

/// Our chunks of one document.
pub fn chunks(doc: &Doc, chunker: &dyn Chunker) -> Vec<Chunk> {
    let tok = tokenizer();
    let view = DocView {
        text: &doc.text,
        tokens: &doc.tokens,
        tok: &tok,
    };
    chunker.chunk(&view)
}

/// Our chunks of one document as pieces.
pub fn ours(doc: &Doc, chunker: &dyn Chunker) -> Vec<Piece<u64>> {
    chunks(doc, chunker)
        .into_iter()
        .map(|c| {
            (
                code_points(&doc.text, c.start),
                c.text(&doc.text).to_string(),
            )
        })
        .collect()
}

/// Byte spans of `text` as pieces.
pub fn spans(text: &str, spans: Vec<(usize, usize)>) -> Vec<Piece<u64>> {
    spans
        .into_iter()
        .map(|(s, e)| (code_points(text, s), text[s..e].to_string()))
        .collect()
}

/// The code points of `text` before byte `at`.
pub fn code_points(text: &str, at: usize) -> u64 {
    text[..at].chars().count() as u64
}

/// The reference's pieces of each of `n` texts (its `chunks`: one list of [start, text] per text),
/// each start read by `start`.
pub fn expected<S>(reference: &Value, n: usize, start: impl Fn(&Value) -> S) -> Vec<Vec<Piece<S>>> {
    let all = reference["chunks"].as_array().unwrap();
    assert_eq!(
        all.len(),
        n,
        "the reference answered for another number of texts"
    );
    all.iter()
        .map(|pieces| {
            pieces
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (start(&p[0]), p[1].as_str().unwrap().to_string()))
                .collect()
        })
        .collect()
}

/// Every document's chunks, ours by `ours`, against the reference's: panics with the share
/// identical and the first difference of each differing document.
pub fn compare(
    label: &str,
    docs: &[Doc],
    reference: &Value,
    ours: impl Fn(&Doc) -> Vec<Piece<u64>>,
) {
    let expected = expected(reference, docs.len(), |v| v.as_u64().unwrap());
    let mut tally = Tally::new("chunk");
    for (doc, exp) in docs.iter().zip(&expected) {
        tally.add(&doc.name, &ours(doc), exp);
    }
    tally.finish(label, reference);
}

/// The outcome of comparing texts one by one.
pub struct Tally {
    unit: &'static str,
    texts: usize,
    same: usize,
    pieces: usize,
    excused: usize,
    diffs: Vec<String>,
}

impl Tally {
    /// A tally of texts cut into `unit`s ("chunk", "sentence").
    pub fn new(unit: &'static str) -> Self {
        Tally {
            unit,
            texts: 0,
            same: 0,
            pieces: 0,
            excused: 0,
            diffs: Vec::new(),
        }
    }

    /// One text, `got` against `exp`; a difference is kept with its first differing piece.
    pub fn add<S: PartialEq + Debug>(&mut self, name: &str, got: &[Piece<S>], exp: &[Piece<S>]) {
        self.texts += 1;
        if got == exp {
            self.same += 1;
            self.pieces += got.len();
            return;
        }
        let i = got
            .iter()
            .zip(exp)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(exp.len()));
        let show = |c: Option<&Piece<S>>| {
            c.map(|(s, t)| format!("@{s:?} {:?}", t.chars().take(160).collect::<String>()))
        };
        let unit = self.unit;
        self.diffs.push(format!(
            "'{name}': {} {unit}s vs reference {}; first difference at {unit} {i}:\n ours: {:?}\n  ref: {:?}",
            got.len(),
            exp.len(),
            show(got.get(i)),
            show(exp.get(i))
        ));
    }

    /// One text that differs in a known, documented way.
    pub fn excuse(&mut self) {
        self.texts += 1;
        self.excused += 1;
    }

    /// Print the share identical; panic on any difference, or when nothing was compared.
    pub fn finish(self, label: &str, reference: &Value) {
        let unit = self.unit;
        let versions = match &reference["versions"] {
            Value::Null => String::new(),
            v => format!(" ({v})"),
        };
        let excused = match self.excused {
            0 => String::new(),
            n => format!(", {n} excused"),
        };
        eprintln!(
            "{label}{versions}: {}/{} texts identical ({} {unit}s){excused}",
            self.same, self.texts, self.pieces
        );
        assert!(
            self.diffs.is_empty(),
            "{label}: {}/{} texts identical\n{}",
            self.same,
            self.texts,
            self.diffs.join("\n")
        );
        assert!(self.pieces > 0, "{label}: nothing compared");
    }
}

/// A fixed pseudo-random sequence (a linear congruential generator) from `seed`, for generated
/// texts that are the same on every run.
pub fn sequence(seed: u64) -> impl FnMut() -> usize {
    let mut state = seed;
    move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    }
}
