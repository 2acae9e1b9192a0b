//! Tiny random-weight sentence-transformers CrossEncoder folders (tests/fixtures/tiny-rerankers,
//! made by tests/reference/make_tiny_rerankers.py with sentence-transformers 6.3 and
//! transformers 5): BERT and XLM-RoBERTa sequence-classification heads, sigmoid and identity
//! activations, the activation where 6.x, 4.x and earlier versions put it (or nowhere: sigmoid),
//! pair windows of 24-32 tokens. Our scores must equal `CrossEncoder.predict`'s, our pair tokens
//! and the passage's cut the tokenizer's own `longest_first` truncation.

mod common;

use std::path::{Path, PathBuf};

use chunkscope_core::embed::lowp::Precision;
use chunkscope_core::rerank::{RerankError, Reranker};

fn fixtures() -> PathBuf {
    common::repo().join("tests/fixtures/tiny-rerankers")
}

fn record() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join("record.json")).unwrap()).unwrap()
}

/// The recorded (query, passage) pairs.
fn pairs(record: &serde_json::Value) -> Vec<(String, String)> {
    record["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap().to_string(),
                p[1].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Every pair scored query by query (each query's passages in one call), in the record's order.
fn scores(rr: &Reranker, pairs: &[(String, String)]) -> Vec<f32> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < pairs.len() {
        let query = &pairs[at].0;
        let end = at + pairs[at..].iter().take_while(|(q, _)| q == query).count();
        let passages: Vec<&str> = pairs[at..end].iter().map(|(_, p)| p.as_str()).collect();
        out.extend(rr.score(query, &passages));
        at = end;
    }
    out
}

fn models(record: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    let models = record["models"].as_object().unwrap();
    assert!(models.len() >= 7, "{} folders recorded", models.len());
    models.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

#[test]
fn scores_equal_cross_encoder_predict() {
    let record = record();
    let pairs = pairs(&record);
    let mut identity = 0;
    for (name, m) in models(&record) {
        let rr = Reranker::load(&fixtures().join(&name), Precision::F32).unwrap();
        assert_eq!(
            rr.pair_window() as u64,
            m["window"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            rr.activation().name(),
            m["activation"].as_str().unwrap().to_lowercase(),
            "{name}"
        );
        identity += (m["activation"] == "Identity") as usize;
        let want: Vec<f32> = m["scores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_f64().unwrap() as f32)
            .collect();
        let got = scores(&rr, &pairs);
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-4,
                "{name} pair {i} {:?}: {g} against CrossEncoder.predict's {w}",
                pairs[i]
            );
        }
        // One pair at a time gives the same scores as the batch.
        for (i, (q, p)) in pairs.iter().enumerate().step_by(5) {
            let one = rr.score(q, &[p.as_str()])[0];
            assert!(
                (one - got[i]).abs() <= 1e-5,
                "{name} pair {i}: {one} alone, {} batched",
                got[i]
            );
        }
    }
    assert!(identity >= 3, "identity activations are covered");
}

/// The pair's tokens and token types (BERT: the passage is type 1) are the tokenizer's own
/// truncated pair encoding, and the passage's tail begins where the tokenizer cut it.
#[test]
fn pair_tokens_and_tail_equal_the_tokenizer_truncation() {
    let record = record();
    let pairs = pairs(&record);
    for (name, m) in models(&record) {
        let rr = Reranker::load(&fixtures().join(&name), Precision::F32).unwrap();
        let (mut cut, mut whole, mut query_cut) = (0, 0, 0);
        for (i, ((q, p), want)) in pairs.iter().zip(m["pairs"].as_array().unwrap()).enumerate() {
            let (ids, types) = rr.pair_ids(q, p);
            let want_ids: Vec<u32> = serde_json::from_value(want["ids"].clone()).unwrap();
            let want_types: Vec<u32> = serde_json::from_value(want["type_ids"].clone()).unwrap();
            assert_eq!(ids, want_ids, "{name} pair {i} ids");
            assert_eq!(types, want_types, "{name} pair {i} token types");
            assert!(ids.len() <= rr.pair_window(), "{name} pair {i}");
            let tail = rr.pair_tail(q, p);
            let want_tail = want["cut_byte"].as_u64().map(|b| b as usize);
            assert_eq!(tail, want_tail, "{name} pair {i} {q:?} / {p:?}");
            if let Some(at) = tail {
                assert!(
                    p.is_char_boundary(at) && at < p.len(),
                    "{name} pair {i}: {at}"
                );
                cut += 1;
            } else {
                whole += 1;
                let over = want["whole_tokens"].as_u64().unwrap() as usize > rr.pair_window();
                query_cut += over as usize;
            }
        }
        assert!(
            cut >= 5 && whole >= 5,
            "{name}: {cut} passages cut, {whole} read whole"
        );
        // Long queries are cut while the passage is kept whole (longest_first).
        assert!(
            query_cut >= 1 || name.starts_with("bert-identity"),
            "{name}"
        );
    }
}

/// bf16 and int8 encoders: the same ranking signal within a looser bound.
#[test]
fn reduced_precisions_stay_near_f32() {
    let record = record();
    let pairs = pairs(&record);
    for (name, m) in models(&record) {
        let want: Vec<f32> = m["scores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_f64().unwrap() as f32)
            .collect();
        for (precision, bound) in [(Precision::Bf16, 0.015f32), (Precision::Int8, 0.04)] {
            let rr = Reranker::load(&fixtures().join(&name), precision).unwrap();
            assert_eq!(rr.precision(), precision);
            let got = scores(&rr, &pairs);
            let worst = got
                .iter()
                .zip(&want)
                .map(|(g, w)| (g - w).abs())
                .fold(0.0f32, f32::max);
            eprintln!("{name} {}: worst difference {worst}", precision.as_str());
            assert!(
                worst <= bound,
                "{name} {}: worst difference {worst} (bound {bound})",
                precision.as_str()
            );
        }
    }
}

/// A copy of a fixture folder in a fresh temporary folder.
fn copy_of(name: &str, tag: &str) -> PathBuf {
    let to = std::env::temp_dir().join(format!(
        "chunkscope-rerank-test-{}-{tag}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&to);
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(fixtures().join(name)).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
    to
}

fn error_of(dir: &Path) -> String {
    let err: RerankError = Reranker::load(dir, Precision::F32).unwrap_err();
    err.to_string()
}

/// A missing or corrupt file is an error naming it.
#[test]
fn broken_folders_name_the_file() {
    let cases: [(&str, &str, Option<&str>); 6] = [
        ("config.json", "missing-config", None),
        ("config.json", "corrupt-config", Some("{\"model_type\": ")),
        (
            "config_sentence_transformers.json",
            "corrupt-st",
            Some("[1, 2"),
        ),
        ("modules.json", "corrupt-modules", Some("{}")),
        ("tokenizer.json", "missing-tokenizer", None),
        ("model.safetensors", "corrupt-weights", Some("not weights")),
    ];
    for (file, tag, content) in cases {
        let dir = copy_of("bert-sigmoid", tag);
        match content {
            None => std::fs::remove_file(dir.join(file)).unwrap(),
            Some(text) => std::fs::write(dir.join(file), text).unwrap(),
        }
        let err = error_of(&dir);
        eprintln!("{tag}: {err}");
        assert!(err.contains(file), "{tag}: {err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
    // A torch activation not run here is named with its file, not replaced by sigmoid.
    let dir = copy_of("bert-identity", "softplus");
    let path = dir.join("config_sentence_transformers.json");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "torch.nn.modules.linear.Identity",
        "torch.nn.modules.activation.Softplus",
    );
    std::fs::write(&path, text).unwrap();
    let err = error_of(&dir);
    assert!(
        err.contains("config_sentence_transformers.json") && err.contains("Softplus"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    // An embedder folder is not a reranker.
    let embedder = common::repo().join("tests/fixtures/tiny/cls-normalized");
    let err = error_of(&embedder);
    assert!(
        err.contains("modules.json") || err.contains("config.json"),
        "{err}"
    );
}

/// `query --rerank`: a fourth list of k hits, best first, each scored as the reranker scores its
/// chunk's text (carried in the JSON like every list's), drawn from the union of BM25's and the
/// vectors' candidates; a hit whose first query term lies past the pair window is marked.
#[test]
fn query_reranks_the_first_stage() {
    let dir = fixtures().join("bert-sigmoid");
    let cache = std::env::temp_dir().join(format!("chunkscope-rerank-q-{}", std::process::id()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chunkscope"))
        .arg("query")
        .arg(common::repo().join("examples"))
        .arg("rotate the webhook signing secret")
        .args(["--model", common::model().dir.to_str().unwrap()])
        .args([
            "--rerank",
            dir.to_str().unwrap(),
            "--k",
            "4",
            "--format",
            "json",
        ])
        .env("CHUNKSCOPE_CACHE_DIR", &cache)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let hits = v["rerank"].as_array().unwrap();
    assert_eq!(hits.len(), 4);
    let texts: Vec<&str> = hits.iter().map(|h| h["text"].as_str().unwrap()).collect();
    let rr = Reranker::load(&dir, Precision::F32).unwrap();
    let want = rr.score("rotate the webhook signing secret", &texts);
    for (h, w) in hits.iter().zip(&want) {
        let got = h["score"].as_f64().unwrap() as f32;
        assert!((got - w).abs() < 1e-5, "{got} vs {w}");
    }
    assert!(
        want.windows(2).all(|p| p[0] >= p[1]),
        "not best first: {want:?}"
    );
    let info = &v["rerank_info"];
    assert_eq!(info["window"].as_u64(), Some(rr.pair_window() as u64));
    let first_stage: std::collections::HashSet<(String, u64)> = ["bm25", "vector"]
        .iter()
        .flat_map(|l| v[l].as_array().unwrap())
        .map(|h| {
            (
                h["file"].as_str().unwrap().to_string(),
                h["chunk"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(info["candidates"].as_u64().unwrap() as usize >= first_stage.len());
    for l in ["bm25", "vector", "hybrid"] {
        assert!(
            v[l][0]["text"].as_str().is_some_and(|t| !t.is_empty()),
            "{l}"
        );
    }
    let _ = std::fs::remove_dir_all(cache);
}
