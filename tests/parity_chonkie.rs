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

fn docs() -> Vec<Doc> {
    parity::docs(parity::recursive_hard_cases())
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
