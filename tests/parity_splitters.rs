//! Preset parity with three more splitter libraries, run for real in the Python environment named
//! by CHUNKSCOPE_SPLITTERS_PYTHON (tests/reference/splitters_ref.py; scripts/test.sh sets it up with
//! the pinned versions): our `text-splitter` chunks equal semantic-text-splitter 0.33.1's (the
//! Python binding of the crate we link), `semchunk` equals semchunk 4.1.1 with the embedder's
//! tokenizer as its token counter, `haystack` equals haystack-ai 3.4.1's
//! DocumentSplitter(split_by="word"). Chunk texts and start offsets (in code points) must be
//! identical on the examples, the shared seed articles and XQuAD contexts, and hard cases
//! (abbreviations and decimals, CJK punctuation, long words, empty lines, tables, code fences,
//! text without separators).

mod common;

use std::path::PathBuf;

use chunkscope_core::chunk::{ChunkSettings, Haystack, Preset, Strategy};
use chunkscope_core::tokenize::Unit;
use common::parity::{self, Doc};
use common::{model, python_with, tokenizer};
use serde_json::{json, Value};

/// The pinned reference packages, as scripts/test.sh installs them.
const PINS: &[(&str, &str)] = &[
    ("semantic-text-splitter", "0.33.1"),
    ("semchunk", "4.1.1"),
    ("haystack-ai", "3.4.1"),
    ("tokenizers", "0.23.3"),
    ("transformers", "5.25.0"),
];

const TEST: &str = "parity: text-splitter, semchunk, haystack";

/// The interpreter of CHUNKSCOPE_SPLITTERS_PYTHON when it has the pinned packages; otherwise the
/// test is reported as skipped (a failure under CI=true).
fn splitters_python() -> Option<PathBuf> {
    parity::splitters_python(
        TEST,
        "semantic_text_splitter, semchunk, haystack, tokenizers, transformers",
        PINS,
    )
}

/// Hard cases on top of `varied_texts`; names ending in .md are Markdown.
fn hard_cases() -> Vec<(String, String)> {
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
            "antidisestablishmentarianism".repeat(40)
        )
        .repeat(4),
    );
    add(
        "empty lines.txt",
        "para one line\n\n\n\npara two\n \n\t\n\npara three\r\n\r\nend of it\n\n\n\n\n\n"
            .repeat(40),
    );
    add("no separators.txt", "x".repeat(6000));
    add(
        "cjk no punctuation.txt",
        "检索增强生成的质量在切分时就已决定".repeat(300),
    );
    add(
        "joiners only.txt",
        "alpha.beta,gamma;delta(epsilon)zeta[eta]theta-iota/kappa\\lambda&mu–nu—xi…omicron:pi*rho"
            .repeat(60),
    );
    add(
        "spaces.txt",
        "a\u{a0}b  c   d\u{2003}e f\u{a0}\u{a0}g. h i, j\u{3000}k; l ".repeat(200),
    );
    add(
        "tabs.txt",
        "col1\tcol2\t\tcol3\t\t\tcol4 and some words here\t".repeat(150),
    );
    add(
        "trailing spaces.txt",
        "ends with spaces   and  doubles  ".repeat(120),
    );
    add("empty.txt", String::new());
    add("one space.txt", " ".to_string());
    for (name, text) in parity::markdown_cases() {
        add(name, text);
    }
    v.extend(generated());
    v
}

/// Texts drawn from a fixed pseudo-random sequence of words, punctuation, whitespace runs and
/// other scripts: every splitter level of each library gets exercised in odd combinations.
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
        "\t",
        "\t\t",
        "\u{a0}",
        "\u{3000}",
        ". ",
        ", ",
        "; ",
        ": ",
        "! ",
        "? ",
        "… ",
        "—",
        "–",
        "-",
        "/",
        "(",
        ")",
        "[",
        "]",
        "\"",
        "'",
        "“",
        "”",
        "*",
        "`",
        "&",
        "。",
        "，",
        "、",
        "# ",
        "| a | b |\n",
        "```\n",
        "- ",
    ];
    let mut next = parity::sequence(0x9e37_79b9_7f4a_7c15);
    (0..10)
        .map(|i| {
            let n = 300 + 150 * i;
            let mut t = String::new();
            for _ in 0..n {
                t.push_str(PIECES[next() % PIECES.len()]);
                if next().is_multiple_of(3) {
                    t.push(' ');
                }
            }
            let name = if i % 3 == 0 {
                format!("generated {i}.md")
            } else {
                format!("generated {i}.txt")
            };
            (name, t)
        })
        .collect()
}

fn docs() -> Vec<Doc> {
    parity::docs(hard_cases())
}

fn request(library: &str, docs: &[Doc], unit: Unit, size: Option<usize>, overlap: Value) -> Value {
    json!({
        "library": library,
        "texts": parity::texts(docs),
        "markdown": docs.iter().map(|d| d.markdown).collect::<Vec<_>>(),
        "unit": unit.name(),
        "tokenizer_json": model().tokenizer_path(),
        "chunk_size": size,
        "overlap": overlap,
    })
}

fn settings(strategy: Strategy, unit: Unit, size: usize, overlap: usize) -> ChunkSettings {
    let s = ChunkSettings {
        strategy,
        unit,
        size,
        overlap,
        ..ChunkSettings::default()
    };
    s.validate().unwrap();
    s
}

fn text_splitter(unit: Unit, size: usize, overlap: usize) {
    let Some(py) = splitters_python() else {
        return;
    };
    let docs = docs();
    let reference = python_with(
        &py,
        "splitters_ref.py",
        &request("text-splitter", &docs, unit, Some(size), json!(overlap)),
    );
    let s = settings(Strategy::TextSplitter, unit, size, overlap);
    parity::compare(
        &format!("text-splitter {unit} {size}/{overlap}"),
        &docs,
        &reference,
        |d| parity::ours(d, s.chunker_for(None, None, d.markdown).as_ref()),
    );
}

#[test]
fn text_splitter_preset_matches_semantic_text_splitter() {
    let mut s = ChunkSettings::default();
    Preset::TextSplitter.apply(&mut s);
    text_splitter(s.unit, s.size, s.overlap);
}

#[test]
fn text_splitter_small_tokens_with_overlap_match() {
    text_splitter(Unit::Embed, 40, 8);
}

#[test]
fn text_splitter_chars_and_cl100k_match() {
    text_splitter(Unit::Chars, 300, 50);
    text_splitter(Unit::Cl100k, 64, 0);
}

/// semchunk with `size` (None: chunkerify's default) and `overlap` (tokens, or a fraction).
fn semchunk(unit: Unit, size: Option<usize>, overlap: Value) {
    let Some(py) = splitters_python() else {
        return;
    };
    let docs = docs();
    let reference = python_with(
        &py,
        "splitters_ref.py",
        &request("semchunk", &docs, unit, size, overlap.clone()),
    );
    let chunk_size = reference["chunk_size"].as_u64().unwrap() as usize;
    // A fraction of the size is semchunk's floor(size * f) tokens.
    let tokens = match overlap.as_f64() {
        Some(f) if f > 0.0 && f < 1.0 => (chunk_size as f64 * f).floor() as usize,
        Some(f) => f as usize,
        None => 0,
    };
    let s = settings(Strategy::Semchunk, unit, size.unwrap_or(0), tokens);
    if size.is_none() {
        let tok = tokenizer();
        assert_eq!(
            tok.model_max_length().map(|m| m - tok.specials()),
            Some(chunk_size),
            "chunkerify's default size"
        );
    }
    parity::compare(
        &format!("semchunk {unit} {chunk_size}/{overlap}"),
        &docs,
        &reference,
        |d| parity::ours(d, s.chunker_for(None, None, d.markdown).as_ref()),
    );
}

#[test]
fn semchunk_preset_matches_chunkerify_defaults() {
    let mut s = ChunkSettings::default();
    Preset::Semchunk.apply(&mut s);
    assert_eq!((s.unit, s.size, s.overlap), (Unit::Embed, 0, 0));
    semchunk(Unit::Embed, None, json!(null));
}

#[test]
fn semchunk_smaller_sizes_with_overlap_match() {
    semchunk(Unit::Embed, Some(64), json!(16));
    semchunk(Unit::Embed, Some(128), json!(0.25));
}

#[test]
fn semchunk_chars_match() {
    semchunk(Unit::Chars, Some(200), json!(null));
    semchunk(Unit::Chars, Some(12), json!(5));
}

fn haystack(length: usize, overlap: usize, threshold: usize) {
    let Some(py) = splitters_python() else {
        return;
    };
    let docs = docs();
    let mut req = request("haystack", &docs, Unit::Embed, Some(length), json!(overlap));
    req["split_threshold"] = json!(threshold);
    let reference = python_with(&py, "splitters_ref.py", &req);
    let s = settings(Strategy::Haystack, Unit::Embed, length, overlap);
    parity::compare(
        &format!("haystack {length}/{overlap} threshold {threshold}"),
        &docs,
        &reference,
        |d| {
            if threshold == 0 {
                parity::ours(d, s.chunker_for(None, None, d.markdown).as_ref())
            } else {
                let h = Haystack {
                    length,
                    overlap,
                    threshold,
                };
                parity::ours(d, &h)
            }
        },
    );
}

#[test]
fn haystack_preset_matches_document_splitter() {
    let mut s = ChunkSettings::default();
    Preset::Haystack.apply(&mut s);
    haystack(s.size, s.overlap, 0);
}

#[test]
fn haystack_overlap_and_threshold_match() {
    haystack(50, 10, 0);
    haystack(30, 0, 5);
    haystack(7, 3, 4);
}
