//! The reduced precisions of the native backend (bf16, int8) on the real all-MiniLM-L6-v2 and on
//! the tiny random folders: vectors close to sentence-transformers' fp32 ones, keys and labels
//! that tell precisions apart, refusals where a precision cannot apply, and XQuAD recall by
//! precision.

mod common;

use std::process::Command;
use std::sync::atomic::AtomicBool;

use chunkscope_core::cases::Cases;
use chunkscope_core::chunk::{ChunkSettings, Preset};
use chunkscope_core::config::Config;
use chunkscope_core::embed::driver::embed_cached;
use chunkscope_core::embed::lowp::Precision;
use chunkscope_core::embed::{cosine, BackendChoice, EmbedCache, EmbedSpec, Embedder};
use chunkscope_core::engine::Engine;
use chunkscope_core::eval::evaluate;
use chunkscope_core::model::ModelInfo;
use chunkscope_core::search::SearchIndex;

fn at(precision: Precision) -> EmbedSpec {
    EmbedSpec {
        precision,
        ..Default::default()
    }
}

/// sentence-transformers' recorded fp32 vectors (tests/fixtures/st_vectors.json) and the texts.
fn st_fixture() -> (Vec<String>, serde_json::Value, Vec<String>) {
    let raw =
        std::fs::read_to_string(common::repo().join("tests/fixtures/st_vectors.json")).unwrap();
    let fx: serde_json::Value = serde_json::from_str(&raw).unwrap();
    let mut names = Vec::new();
    let mut texts = Vec::new();
    for (k, v) in fx["inline"].as_object().unwrap() {
        names.push(k.clone());
        texts.push(v.as_str().unwrap().to_string());
    }
    for f in fx["files"].as_array().unwrap() {
        let f = f.as_str().unwrap();
        names.push(f.to_string());
        texts.push(std::fs::read_to_string(common::repo().join(f)).unwrap());
    }
    (names, fx, texts)
}

/// bf16 within 0.999 and int8 within 0.99 of sentence-transformers' fp32 vectors at windows 128
/// and 256, and of our own f32 ones on varied texts (English, Polish, Chinese, code, tables).
#[test]
fn reduced_precisions_stay_close_to_fp32() {
    let info = common::model();
    let (names, fx, texts) = st_fixture();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let varied = common::varied_texts();
    let varied: Vec<&str> = varied.iter().map(|(_, t)| t.as_str()).collect();
    let f32e = Embedder::open(info, &at(Precision::F32)).unwrap();
    for (precision, floor) in [(Precision::Bf16, 0.999f32), (Precision::Int8, 0.99)] {
        let e = Embedder::open(info, &at(precision)).unwrap();
        assert!(
            e.backend_name().starts_with(&format!("native {precision}")),
            "{}",
            e.backend_name()
        );
        let mut worst = 1.0f32;
        for window in [128usize, 256] {
            for (name, v) in names.iter().zip(e.embed(&refs, window).unwrap()) {
                let want: Vec<f32> = fx["windows"][window.to_string()][name]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap() as f32)
                    .collect();
                let c = cosine(&v, &want);
                assert!(c >= floor, "{precision} {name} at {window}: {c}");
                worst = worst.min(c);
            }
            for (a, b) in e
                .embed(&varied, window)
                .unwrap()
                .iter()
                .zip(f32e.embed(&varied, window).unwrap())
            {
                let c = cosine(a, &b);
                assert!(c >= floor, "{precision} at {window}: {c} to our f32");
                // Normalised as the model's Normalize module says.
                let n = a.iter().map(|x| x * x).sum::<f32>().sqrt();
                assert!((n - 1.0).abs() < 1e-4, "norm {n}");
                worst = worst.min(c);
            }
        }
        eprintln!("{precision}: worst cosine {worst:.6}");
    }
}

/// Each precision has its own cache key (f32 keeps the key it always had), and a cached f32
/// vector is never served to an int8 run.
#[test]
fn precisions_have_their_own_cache_keys() {
    let info = common::model();
    let keys: Vec<String> = [Precision::F32, Precision::Bf16, Precision::Int8]
        .into_iter()
        .map(|p| Embedder::open(info, &at(p)).unwrap().model_key)
        .collect();
    assert_eq!(keys[0], chunkscope_core::embed::model_key(info));
    assert!(
        keys[1].ends_with("#bf16") && keys[2].ends_with("#int8"),
        "{keys:?}"
    );
    let text = "A sentence whose vector depends on the arithmetic.";
    let f32e = Embedder::open(info, &at(Precision::F32)).unwrap();
    let int8 = Embedder::open(info, &at(Precision::Int8)).unwrap();
    let mut cache = EmbedCache::in_memory(384);
    let (a, _) = embed_cached(&f32e, &mut cache, &[text], 128, |_, _| true).unwrap();
    let (b, _) = embed_cached(&int8, &mut cache, &[text], 128, |_, _| true).unwrap();
    assert_ne!(a[0], b[0], "the int8 run got the f32 vector from the cache");
    assert_eq!(b[0], int8.embed(&[text], 128).unwrap()[0]);
}

/// Where bf16 and int8 cannot apply the user is told, not given f32 silently.
#[test]
fn precision_is_refused_where_it_cannot_apply() {
    let tiny = common::repo().join("tests/fixtures/tiny/modernbert-mean");
    let info = ModelInfo::from_dir("modernbert-mean", &tiny, "fixture").unwrap();
    let spec = EmbedSpec {
        precision: Precision::Int8,
        ..Default::default()
    };
    let err = Embedder::open(&info, &spec).err().unwrap().to_string();
    assert!(err.contains("only the native backend"), "{err}");
    let spec = EmbedSpec {
        precision: Precision::Bf16,
        backend: BackendChoice::Candle,
        ..Default::default()
    };
    let err = Embedder::open(common::model(), &spec)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("precision bf16"), "{err}");
    let spec = EmbedSpec {
        precision: Precision::Bf16,
        remote: Some(chunkscope_core::embed::remote::RemoteConfig::new(
            "http://127.0.0.1:9/v1",
            "m",
        )),
        ..Default::default()
    };
    let err = Embedder::open(common::model(), &spec)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("server computes in its own precision"),
        "{err}"
    );
    // workbench.toml: the key is read, a bad value names the file and line.
    let c = Config::parse("[model]\nprecision = \"int8\"\n", "w.toml").unwrap();
    assert_eq!(c.embed_spec().precision, Precision::Int8);
    let e = Config::parse("[model]\nid = \"x\"\nprecision = \"fp8\"\n", "w.toml").unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("w.toml:3") && msg.contains("f32, bf16 or int8"),
        "{msg}"
    );
}

/// Tiny BERT-family folders (every native architecture, pooling and prompt variant) at bf16 and
/// int8 against the vectors sentence-transformers recorded in fp32.
#[test]
fn tiny_native_models_at_reduced_precision() {
    let fixtures = common::repo().join("tests/fixtures/tiny");
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures.join("record.json")).unwrap())
            .unwrap();
    let texts: Vec<String> = rec["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    let mut checked = 0;
    for (name, entry) in rec["models"].as_object().unwrap() {
        let info = ModelInfo::from_dir(name, &fixtures.join(name), "fixture").unwrap();
        // Folders `auto` runs on candle (ModernBERT, Qwen3) stay in f32.
        let label = chunkscope_core::embed::backend_label(&info, &Default::default());
        if !label.starts_with("native") {
            continue;
        }
        for (precision, floor) in [(Precision::Bf16, 0.999f32), (Precision::Int8, 0.99)] {
            let e = Embedder::open(&info, &at(precision)).unwrap();
            let prompt = info.modules.document_prompt().to_string();
            let docs: Vec<String> = texts.iter().map(|t| format!("{prompt}{t}")).collect();
            let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
            for (window, want) in entry["windows"].as_object().unwrap() {
                let ours = e.embed(&refs, window.parse().unwrap()).unwrap();
                for (i, (a, b)) in ours
                    .iter()
                    .zip(want["docs"].as_array().unwrap())
                    .enumerate()
                {
                    let b: Vec<f32> = b
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_f64().unwrap() as f32)
                        .collect();
                    let c = cosine(a, &b);
                    assert!(
                        c >= floor,
                        "{name} {precision} window {window} text {i}: {c}"
                    );
                }
            }
        }
        checked += 1;
    }
    assert!(checked >= 10, "{checked} native folders");
}

/// The embed JSONL and the query output name the precision in force.
#[test]
fn exports_name_the_precision() {
    let out = Command::new(env!("CARGO_BIN_EXE_chunkscope"))
        .args([
            "embed",
            "examples",
            "--precision",
            "int8",
            "--format",
            "jsonl",
        ])
        .current_dir(common::repo())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = String::from_utf8_lossy(&out.stdout);
    let line: serde_json::Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    assert!(
        line["embedder"]
            .as_str()
            .unwrap()
            .starts_with("native int8"),
        "{line}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_chunkscope"))
        .args(["query", "examples", "tail", "--precision", "bf16"])
        .current_dir(common::repo())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().next().unwrap().contains("native bf16"),
        "{text}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_chunkscope"))
        .args(["embed", "examples", "--precision", "fp16"])
        .current_dir(common::repo())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("f32, bf16 or int8"));
}

/// XQuAD (English, spring-ai chunks, window 128): vector recall@5 at bf16 and int8 within 0.01
/// of f32.
#[test]
fn xquad_recall_by_precision() {
    let Some(shared) = common::shared_or_skip("xquad_recall_by_precision") else {
        return;
    };
    let (corpus, cases) = Cases::from_squad(&shared.join("data/xquad/xquad.en.json")).unwrap();
    let engine = Engine::new(common::model().clone(), common::tokenizer(), corpus).unwrap();
    let mut settings = ChunkSettings::default();
    Preset::SpringAi.apply(&mut settings);
    let chunking = engine
        .chunk_all(&settings, &AtomicBool::new(false))
        .unwrap();
    let owned = chunking.embed_texts(&engine);
    let texts: Vec<&str> = owned.iter().map(|t| t.as_ref()).collect();
    let mut recall = Vec::new();
    for p in [Precision::F32, Precision::Bf16, Precision::Int8] {
        let e = Embedder::open(common::model(), &at(p)).unwrap();
        let mut cache = EmbedCache::in_memory(384);
        let (vectors, _) = embed_cached(&e, &mut cache, &texts, 128, |_, _| true).unwrap();
        let index = SearchIndex::build(&engine, &chunking, Some(&vectors), e.dim()).unwrap();
        let report = evaluate(
            &engine,
            &chunking,
            &index,
            &e,
            &mut cache,
            &cases,
            128,
            &[5],
            5,
        )
        .unwrap();
        assert!(report.embedder.starts_with(&format!("native {p}")));
        let r5 = report.vector.at(5);
        eprintln!("{p}: vector recall@5 {r5:.4}");
        recall.push(r5);
    }
    for (p, r) in ["bf16", "int8"].iter().zip(&recall[1..]) {
        assert!(
            (r - recall[0]).abs() <= 0.01,
            "{p} recall@5 {r} vs f32 {}",
            recall[0]
        );
    }
}
