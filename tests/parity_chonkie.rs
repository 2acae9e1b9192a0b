//! Preset parity with chonkie 1.7.0 (RecursiveChunker and TokenChunker at their character
//! tokenizer), run for real in the Python environment named by CHUNKSCOPE_SPLITTERS_PYTHON
//! (tests/reference/chonkie_ref.py; scripts/test.sh sets it up with the pinned versions). Chunk
//! texts and start offsets (in code points) must be identical on the examples, the shared seed
//! articles and XQuAD contexts, and hard cases (abbreviations and decimals, CJK punctuation, long
//! words, empty lines, tables, code fences, text without separators, each delimiter level of
//! chonkie's rules), at the defaults and at two other sizes (and overlaps) each.

mod common;

use std::path::PathBuf;

use chunkscope_core::chunk::{ChunkSettings, Preset, Strategy};
use chunkscope_core::tokenize::Unit;
use common::parity::{self, Doc};
use common::python_with;
use serde_json::json;

/// The pinned reference packages, as scripts/test.sh installs them.
const PINS: &[(&str, &str)] = &[("chonkie", "1.7.0"), ("chonkie-core", "0.10.2")];

const TEST: &str = "parity: chonkie";

/// The interpreter of CHUNKSCOPE_SPLITTERS_PYTHON when it has the pinned packages; otherwise the
/// test is reported as skipped (a failure under CI=true).
fn splitters_python() -> Option<PathBuf> {
    parity::splitters_python(TEST, "chonkie", PINS)
}

/// Hard cases on top of `varied_texts`.
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
    add("table.md", table);
    let mut fences = String::from("# Code\n\nSome intro text before the fence.\n\n");
    for i in 0..25 {
        fences.push_str(&format!(
            "## Step {i}\n\nRun this:\n\n```rust\nfn step_{i}() {{\n    let xs: Vec<u32> = (0..{i}).collect();\n    println!(\"{{:?}}\", xs); // a comment that is fairly long to push the size\n}}\n```\n\n- item one\n- item two with `inline code`\n  - nested item\n\n> A quote, with **bold** and _emphasis_.\n\n"
        ));
    }
    add("fences.md", fences);
    v.extend(generated());
    v
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
    let mut next = parity::sequence(0x2545_f491_4f6c_dd1d);
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

fn docs() -> Vec<Doc> {
    parity::docs(hard_cases())
}

fn settings(strategy: Strategy, size: usize, overlap: usize) -> ChunkSettings {
    let s = ChunkSettings {
        strategy,
        unit: Unit::Chars,
        size,
        overlap,
        ..ChunkSettings::default()
    };
    s.validate().unwrap();
    s
}

/// Our `strategy` at `size`/`overlap` against `library` (chonkie_ref.py) at the same settings,
/// or at the library's defaults when `defaults` (then the reference must report our size).
fn check(library: &str, strategy: Strategy, size: usize, overlap: usize, defaults: bool) {
    let Some(py) = splitters_python() else {
        return;
    };
    let docs = docs();
    let (req_size, req_overlap) = if defaults {
        (json!(null), json!(null))
    } else {
        (json!(size), json!(overlap))
    };
    let reference = python_with(
        &py,
        "chonkie_ref.py",
        &json!({
            "library": library,
            "texts": parity::texts(&docs),
            "chunk_size": req_size,
            "overlap": req_overlap,
        }),
    );
    assert_eq!(
        reference["chunk_size"].as_u64(),
        Some(size as u64),
        "{library}'s chunk_size"
    );
    let chunker = settings(strategy, size, overlap).chunker();
    parity::compare(
        &format!("{library} {size}/{overlap}"),
        &docs,
        &reference,
        |d| parity::ours(d, chunker.as_ref()),
    );
}

#[test]
fn chonkie_preset_matches_recursive_chunker_defaults() {
    let mut s = ChunkSettings::default();
    Preset::Chonkie.apply(&mut s);
    assert_eq!(
        (s.strategy, s.size, s.overlap),
        (Strategy::Chonkie, 2048, 0)
    );
    check("chonkie", s.strategy, s.size, s.overlap, true);
}

#[test]
fn chonkie_other_sizes_match() {
    check("chonkie", Strategy::Chonkie, 300, 0, false);
    check("chonkie", Strategy::Chonkie, 40, 0, false);
}

#[test]
fn chonkie_tokens_preset_matches_token_chunker_defaults() {
    let mut s = ChunkSettings::default();
    Preset::ChonkieTokens.apply(&mut s);
    assert_eq!(
        (s.strategy, s.size, s.overlap),
        (Strategy::ChonkieTokens, 2048, 0)
    );
    check("chonkie-tokens", s.strategy, s.size, s.overlap, true);
}

#[test]
fn chonkie_tokens_other_sizes_and_overlaps_match() {
    check("chonkie-tokens", Strategy::ChonkieTokens, 500, 100, false);
    check("chonkie-tokens", Strategy::ChonkieTokens, 37, 5, false);
}
