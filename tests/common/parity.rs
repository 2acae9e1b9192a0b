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
    pub tokens: std::sync::Arc<DocTokens>,
    pub markdown: bool,
}

impl Doc {
    pub fn new(name: String, text: String) -> Self {
        Doc {
            markdown: name.ends_with(".md"),
            tokens: std::sync::Arc::new(DocTokens::new(&text, &tokenizer()).unwrap()),
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
        memo: None,
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

/// The hard cases of the recursive splitters' parity tests (chonkie, haystack-recursive), on top
/// of `varied_texts`, and generated texts.
pub fn recursive_hard_cases() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = Vec::new();
    let mut add = |n: &str, t: String| v.push((n.to_string(), t));
    add(
        "abbreviations.txt",
        "Dr. Smith paid $3.50 for 2.5 kg of apples, i.e. about 1.40 per kg. Mr. J. R. R. Tolkien \
         wrote e.g. The Hobbit (1937), pp. 12-15; vol. 2. U.S.A. vs. U.K.: 3.14159 > 2.71828... \
         Really?! Yes. Version 1.2.3 shipped at 10 a.m. on Jan. 5th, etc. \"Quoted.\" 'Single.' \
         (Parenthetical.) [Bracketed.] Done.\n"
            .repeat(25),
    );
    add(
        "cjk punctuation.txt",
        "你好，世界！这是一个测试。「引号」和『书名号』；还有：冒号、顿号……以及——破折号。\
         日本語の文です。句読点、そして。한국어 문장입니다. 全角\u{3000}空格\u{3000}在这里。\n"
            .repeat(30),
    );
    add(
        "long words.txt",
        format!(
            "Supercalifragilisticexpialidocious {} pneumonoultramicroscopicsilicovolcanoconiosis \
             https://example.com/a/very/long/path/with-many-segments_and_underscores?query=1&x=2 {}\n",
            "a".repeat(1500),
            "antidisestablishmentarianism".repeat(120)
        )
        .repeat(4),
    );
    add(
        "empty lines.txt",
        "para one line\n\n\n\npara two\n \n\t\n\npara three\r\n\r\nend of it\r\rmac\n\r\n\n\n\n\n"
            .repeat(40),
    );
    add("no separators.txt", "x".repeat(6000));
    add("no separators multibyte.txt", "é中😀".repeat(1500));
    add(
        "cjk no punctuation.txt",
        "检索增强生成的质量在切分时就已决定".repeat(300),
    );
    add(
        "pauses only.txt",
        "alpha{beta}gamma\"delta[epsilon]zeta<eta>theta(iota)kappa:lambda;mu,nu—xi|omicron~pi-rho...sigma`tau'upsilon....phi"
            .repeat(60),
    );
    add(
        "sentence marks.txt",
        "Short. Tiny! Why? A rather longer sentence that goes on for a while. Ok.Then!No?Yes. . ! ? "
            .repeat(80),
    );
    add(
        "spaces.txt",
        "a\u{a0}b  c   d\u{2003}e f\u{a0}\u{a0}g. h i, j\u{3000}k; l ".repeat(200),
    );
    add(
        "tabs.txt",
        "col1\tcol2\t\tcol3\t\t\tcol4 and some words here\t".repeat(150),
    );
    add("empty.txt", String::new());
    add("one space.txt", " ".to_string());
    add("whitespace only.txt", " \n\n\t \r\n ".repeat(50));
    for (name, text) in markdown_cases() {
        add(name, text);
    }
    v.extend(generated());
    v
}

/// A long Markdown table and a file of fenced code blocks, headings, lists and quotes: the
/// structure-aware splitters' hard cases, shared by the recursive parity tests.
pub fn markdown_cases() -> [(&'static str, String); 2] {
    let mut table =
        String::from("# Plans\n\n| Plan | Price | Refund | Notes |\n| --- | ---: | --- | --- |\n");
    for i in 0..120 {
        table.push_str(&format!(
            "| Plan {i} | {}.{:02} | pro rata after {} days | row {i} of the table, with words |\n",
            i * 3,
            i % 100,
            i % 30
        ));
    }
    table.push_str("\nAfter the table, a closing paragraph. It has two sentences.\n");
    let mut fences = String::from("# Code\n\nSome intro text before the fence.\n\n");
    for i in 0..25 {
        fences.push_str(&format!(
            "## Step {i}\n\nRun this:\n\n```rust\nfn step_{i}() {{\n    let xs: Vec<u32> = (0..{i}).collect();\n    println!(\"{{:?}}\", xs); // a comment that is fairly long to push the size\n}}\n```\n\n- item one\n- item two with `inline code`\n  - nested item\n\n> A quote, with **bold** and _emphasis_.\n\n"
        ));
    }
    [("table.md", table), ("fences.md", fences)]
}

/// Texts drawn from a fixed pseudo-random sequence of words, delimiters, whitespace runs and other
/// scripts: every level of the rules gets exercised in odd combinations.
fn generated() -> Vec<(String, String)> {
    const PIECES: &[&str] = &[
        "the",
        "chunk",
        "window",
        "embedding",
        "retrieval",
        "model's",
        "x",
        "tokenizer",
        "Ünïcödé",
        "naïve",
        "中文",
        "検索",
        "😀",
        "👩‍🔬",
        "3.14",
        "e.g.",
        "U.S.",
        "co-op",
        "and/or",
        "supercalifragilisticexpialidociousness",
        " ",
        " ",
        " ",
        " ",
        "  ",
        "   ",
        "\n",
        "\n\n",
        "\n\n\n",
        "\r\n",
        "\r",
        "\t",
        "\u{a0}",
        "\u{3000}",
        ". ",
        ", ",
        "; ",
        ": ",
        "! ",
        "? ",
        "...",
        "… ",
        "—",
        "–",
        "-",
        "~",
        "|",
        "<",
        ">",
        "{",
        "}",
        "(",
        ")",
        "[",
        "]",
        "\"",
        "'",
        "“",
        "”",
        "`",
        "。",
        "，",
        "# ",
        "| a | b |\n",
        "```\n",
        "- ",
    ];
    let mut next = sequence(0x2545_f491_4f6c_dd1d);
    (0..12)
        .map(|i| {
            let n = 300 + 250 * i;
            let mut t = String::new();
            for _ in 0..n {
                t.push_str(PIECES[next() % PIECES.len()]);
                if next().is_multiple_of(3) {
                    t.push(' ');
                }
            }
            (format!("generated {i}.txt"), t)
        })
        .collect()
}
