//! Preset parity: our spring-ai and langchain chunkers give the same chunk texts as the reference
//! implementations (the real langchain-text-splitters package; a Python port of Spring AI's
//! TokenTextSplitter checked against the Java) on varied text.

mod common;

use chunkscope_core::chunk::{ChunkSettings, Preset, SpringAiParams, Strategy};
use chunkscope_core::tokenize::Unit;
use common::{chunk_text, model, python, varied_texts};
use serde_json::json;

fn compare(
    label: &str,
    texts: &[(String, String)],
    settings: &ChunkSettings,
    reference: &serde_json::Value,
) {
    let expected = reference["chunks"].as_array().unwrap();
    assert_eq!(expected.len(), texts.len());
    let mut checked = 0;
    for ((name, text), exp) in texts.iter().zip(expected) {
        let Some(exp) = exp.as_array() else {
            continue; // the reference raised (Java would throw); nothing to compare
        };
        let ours: Vec<String> = chunk_text(text, settings)
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        let exp: Vec<String> = exp
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        if ours != exp {
            let i = ours
                .iter()
                .zip(&exp)
                .position(|(a, b)| a != b)
                .unwrap_or(ours.len().min(exp.len()));
            panic!(
                "{label} on '{name}': {} chunks vs reference {}; first difference at chunk {i}:\n ours: {:?}\n  ref: {:?}",
                ours.len(),
                exp.len(),
                ours.get(i).map(|s| &s[..s.len().min(300)]),
                exp.get(i).map(|s| &s[..s.len().min(300)])
            );
        }
        checked += ours.len();
    }
    assert!(checked > 0, "{label}: nothing compared");
    eprintln!(
        "{label}: {checked} chunks identical over {} texts",
        texts.len()
    );
}

fn spring(size: usize, min_chars: usize, keep_separator: bool) {
    if !common::reference_packages_or_skip("parity: spring-ai") {
        return;
    }
    let texts = varied_texts();
    let mut s = ChunkSettings::default();
    Preset::SpringAi.apply(&mut s);
    s.size = size;
    s.spring_ai = SpringAiParams {
        min_chunk_size_chars: min_chars,
        keep_separator,
        ..SpringAiParams::default()
    };
    let req = json!({
        "texts": texts.iter().map(|(_, t)| t).collect::<Vec<_>>(),
        "chunk_size": size,
        "min_chunk_size_chars": min_chars,
        "keep_separator": keep_separator,
    });
    let reference = python("spring_ai_split.py", &req);
    compare(
        &format!("spring-ai {size}/{min_chars}"),
        &texts,
        &s,
        &reference,
    );
}

#[test]
fn spring_ai_defaults_match_reference() {
    spring(800, 350, true);
}

#[test]
fn spring_ai_small_windows_match_reference() {
    spring(64, 40, true);
    spring(37, 10, false);
}

fn langchain(unit: Unit, size: usize, overlap: usize) {
    if !common::reference_packages_or_skip("parity: langchain") {
        return;
    }
    let texts = varied_texts();
    let s = ChunkSettings {
        strategy: Strategy::Langchain,
        unit,
        size,
        overlap,
        ..ChunkSettings::default()
    };
    let req = json!({
        "texts": texts.iter().map(|(_, t)| t).collect::<Vec<_>>(),
        "chunk_size": size,
        "chunk_overlap": overlap,
        "unit": if unit == Unit::Chars { "chars" } else { "embed" },
        "tokenizer_json": model().tokenizer_path(),
    });
    let reference = python("langchain_split.py", &req);
    compare(
        &format!("langchain {unit} {size}/{overlap}"),
        &texts,
        &s,
        &reference,
    );
}

#[test]
fn langchain_chars_preset_matches_reference() {
    langchain(Unit::Chars, 1500, 150);
}

#[test]
fn langchain_chars_small_matches_reference() {
    langchain(Unit::Chars, 120, 30);
}

#[test]
fn langchain_tokens_preset_matches_reference() {
    langchain(Unit::Embed, 240, 32);
}

#[test]
fn langchain_tokens_small_matches_reference() {
    langchain(Unit::Embed, 40, 8);
}
