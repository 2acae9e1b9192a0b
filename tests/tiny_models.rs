//! Tiny random-weight sentence-transformers folders (tests/fixtures/tiny, made by
//! tests/reference/make_tiny_models.py with torch, transformers and sentence-transformers): every
//! pooling mode, with and without Normalize, a Dense layer, prompts (and a prompt left out of
//! the pooling). Our vectors must agree with the ones sentence-transformers recorded at two
//! windows, and our token counts with its tokenizer's, prompt included.

mod common;

use chunkscope_core::embed::{cosine, Embedder};
use chunkscope_core::model::ModelInfo;
use chunkscope_core::tokenize::EmbedTokenizer;

/// The folders as sentence-transformers 6 and transformers 5 write them (the versions
/// scripts/test.sh pins).
fn fixtures() -> std::path::PathBuf {
    common::repo().join("tests/fixtures/tiny")
}

/// A handful of the same folders as sentence-transformers 3.4.1 and transformers 4 wrote them
/// (flag-style Pooling configs, max_seq_length in sentence_bert_config.json, the 4.x rope keys).
fn old_fixtures() -> std::path::PathBuf {
    common::repo().join("tests/fixtures/tiny-st3")
}

fn record_in(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("record.json")).unwrap()).unwrap()
}

fn record() -> serde_json::Value {
    record_in(&fixtures())
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn vectors(v: &serde_json::Value) -> Vec<Vec<f32>> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect()
        })
        .collect()
}

#[test]
fn tiny_models_agree_with_sentence_transformers() {
    let version = std::fs::read_to_string(
        fixtures().join("cls-normalized/config_sentence_transformers.json"),
    )
    .unwrap();
    assert!(
        version.contains(r#""sentence_transformers": "6."#),
        "{version}"
    );
    agree_with_record(&fixtures(), 19);
}

/// Folders in the layout sentence-transformers 2-4 and transformers 4 wrote still read alike.
#[test]
fn old_layout_folders_agree_with_sentence_transformers() {
    let pooling =
        std::fs::read_to_string(old_fixtures().join("cls-normalized/1_Pooling/config.json"))
            .unwrap();
    assert!(pooling.contains("pooling_mode_cls_token"), "{pooling}");
    agree_with_record(&old_fixtures(), 8);
}

/// Every folder of `set` against the vectors, windows and token counts sentence-transformers
/// recorded for it (`encode_document` / `encode_query`, at two windows).
fn agree_with_record(set: &std::path::Path, at_least: usize) {
    let rec = record_in(set);
    let texts = strings(&rec["texts"]);
    let queries = strings(&rec["queries"]);
    let models = rec["models"].as_object().unwrap();
    assert!(models.len() >= at_least);
    for (name, entry) in models {
        let info = ModelInfo::from_dir(name, &set.join(name), "fixture").unwrap();
        // The window sentence-transformers reads from the folder, by its own rule.
        let st = info
            .windows
            .resolve(chunkscope_core::window::WindowSpec::St);
        assert_eq!(
            st.tokens as u64,
            entry["st_window"].as_u64().unwrap(),
            "{name}: {}",
            st.source
        );
        let auto = Embedder::load(&info).unwrap();
        // BERT-family folders (NomicBERT and JinaBERT too) run natively under auto; ModernBERT
        // and Qwen3 through candle. NomicBERT and JinaBERT are checked on both backends.
        let native = ["modernbert", "qwen3"].iter().all(|p| !name.starts_with(p));
        assert_eq!(
            auto.backend_name() == "native f32",
            native,
            "{name}: {}",
            auto.backend_name()
        );
        let mut embedders = vec![auto];
        if name.starts_with("nomic") || name.starts_with("jina") {
            let spec = chunkscope_core::embed::EmbedSpec {
                backend: chunkscope_core::embed::BackendChoice::Candle,
                ..Default::default()
            };
            embedders.push(Embedder::open(&info, &spec).unwrap());
        }
        for e in &embedders {
            let prompt = info.modules.document_prompt().to_string();
            let docs: Vec<String> = texts.iter().map(|t| format!("{prompt}{t}")).collect();
            let doc_refs: Vec<&str> = docs.iter().map(String::as_str).collect();
            let qs: Vec<String> = queries
                .iter()
                .map(|q| e.query_text(q).into_owned())
                .collect();
            let q_refs: Vec<&str> = qs.iter().map(String::as_str).collect();
            for (window, want) in entry["windows"].as_object().unwrap() {
                let w: usize = window.parse().unwrap();
                for (ours, theirs, what) in [
                    (
                        e.embed(&doc_refs, w).unwrap(),
                        vectors(&want["docs"]),
                        "docs",
                    ),
                    (
                        e.embed(&q_refs, w).unwrap(),
                        vectors(&want["queries"]),
                        "queries",
                    ),
                ] {
                    assert_eq!(ours.len(), theirs.len());
                    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
                        assert_eq!(a.len(), b.len(), "{name} {what}: dimension");
                        let c = cosine(a, b);
                        let backend = e.backend_name();
                        assert!(
                            c >= 0.9999,
                            "{name} {backend} window {w} {what} {i}: cosine {c}"
                        );
                        // Without Normalize the vectors are not unit length, as in ST.
                        let (na, nb) = (norm(a), norm(b));
                        assert!(
                            (na - nb).abs() <= 1e-3 * nb.max(1.0),
                            "{name}: norm {na} vs {nb}"
                        );
                    }
                }
            }
        }
        let prompt = info.modules.document_prompt().to_string();
        // Token counts: the engine's chunk of each text, the document prompt ahead of it, counts
        // what the model's tokenizer makes of prompt + text, specials included.
        let (engine, c) = common::one_chunk_each(&info, &texts);
        let want: Vec<u64> = entry["doc_tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap())
            .collect();
        for f in &c.files {
            let i = common::index_of(&engine.corpus.docs[f.doc].path);
            assert_eq!(f.chunks.len(), 1);
            let ch = &f.chunks[0];
            assert_eq!(
                ch.embed_tokens(engine.specials()) as u64,
                want[i],
                "{name}: text {i} with prompt {prompt:?}"
            );
            assert_eq!(ch.prefix_tokens() > 0, !prompt.is_empty(), "{name}");
        }
    }
}

/// A model folder copied with its module folders (1_Pooling, 2_Normalize), but for `except`.
fn copy_folder(src: &std::path::Path, dst: &std::path::Path, except: &str) {
    std::fs::create_dir_all(dst).unwrap();
    for f in std::fs::read_dir(src).unwrap().flatten() {
        if f.path().is_dir() {
            copy_folder(&f.path(), &dst.join(f.file_name()), except);
        } else if f.file_name() != except {
            std::fs::copy(f.path(), dst.join(f.file_name())).unwrap();
        }
    }
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

#[test]
fn folders_say_how_they_pool() {
    let m = |n: &str| {
        ModelInfo::from_dir(n, &fixtures().join(n), "fixture")
            .unwrap()
            .modules
    };
    assert_eq!(m("cls-normalized").describe(), "cls, normalized");
    assert_eq!(m("mean-raw").describe(), "mean, not normalized");
    assert_eq!(m("dense-tanh").describe(), "mean, dense 32->16, normalized");
    assert_eq!(m("e5-prompts").query_prompt(), "query: ");
    // A plain transformers folder: sentence-transformers' fallback, and the description says so.
    let dir = std::env::temp_dir().join(format!("chunkscope-plain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::fs::copy(fixtures().join("mean-raw").join(f), dir.join(f)).unwrap();
    }
    let plain = ModelInfo::from_dir("plain", &dir, "test").unwrap().modules;
    assert!(
        plain.describe().contains("fallback"),
        "{}",
        plain.describe()
    );
    assert!(!plain.normalize);
    let _ = std::fs::remove_dir_all(&dir);
}

/// XLM-RoBERTa counts positions from the padding id + 1: a 130-row table holds 128 tokens, and
/// that is the largest window. A model type the native embedder does not run is refused with
/// config.json named and the supported types listed.
#[test]
fn positions_and_unsupported_types() {
    let x = ModelInfo::from_dir("x", &fixtures().join("xlm-roberta-e5"), "fixture").unwrap();
    assert_eq!(x.windows.max_positions, Some(128));
    let dir = std::env::temp_dir().join(format!("chunkscope-gpt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["tokenizer.json", "model.safetensors"] {
        std::fs::copy(fixtures().join("mean-raw").join(f), dir.join(f)).unwrap();
    }
    std::fs::write(
        dir.join("config.json"),
        r#"{"model_type": "gpt2", "n_embd": 32}"#,
    )
    .unwrap();
    let info = ModelInfo::from_dir("gpt", &dir, "test").unwrap();
    let err = Embedder::load(&info).err().unwrap().to_string();
    assert!(err.contains("config.json") && err.contains("gpt2"), "{err}");
    assert!(
        err.contains("xlm-roberta") && err.contains("distilbert"),
        "{err}"
    );
    // JinaBERT's config says "bert" with ALiBi positions; both backends run the gated-GELU
    // feed-forward only, and refuse another by name.
    let jina = std::fs::read_to_string(fixtures().join("jina-bert-alibi/config.json")).unwrap();
    std::fs::write(dir.join("config.json"), jina.replace("geglu", "reglu")).unwrap();
    let info = ModelInfo::from_dir("jina", &dir, "test").unwrap();
    let candle = chunkscope_core::embed::EmbedSpec {
        backend: chunkscope_core::embed::BackendChoice::Candle,
        ..Default::default()
    };
    for spec in [Default::default(), candle] {
        let err = format!("{:#}", Embedder::open(&info, &spec).err().unwrap());
        assert!(
            err.contains("config.json") && err.contains("feed_forward_type reglu"),
            "{err}"
        );
    }
    // Relative positions BERT's other variants use are refused by name, not by a missing tensor.
    std::fs::write(
        dir.join("config.json"),
        jina.replace(r#""alibi""#, r#""relative_key""#),
    )
    .unwrap();
    let info = ModelInfo::from_dir("rel", &dir, "test").unwrap();
    let err = format!("{:#}", Embedder::load(&info).err().unwrap());
    assert!(
        err.contains("config.json") && err.contains("relative_key"),
        "{err}"
    );
    // NomicBERT variants candle does not run (partial rotary, xPos scaling) are refused by name.
    let nomic = std::fs::read_to_string(fixtures().join("nomic-bert-prompts/config.json")).unwrap();
    for (from, to, says) in [
        (
            r#""rotary_emb_fraction": 1.0"#,
            r#""rotary_emb_fraction": 0.5"#,
            "rotary_emb_fraction",
        ),
        (r#""prenorm": false"#, r#""prenorm": true"#, "prenorm"),
    ] {
        assert!(nomic.contains(from));
        std::fs::write(dir.join("config.json"), nomic.replace(from, to)).unwrap();
        let info = ModelInfo::from_dir("nomic", &dir, "test").unwrap();
        let err = format!("{:#}", Embedder::load(&info).err().unwrap());
        assert!(err.contains("config.json") && err.contains(says), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The candle backend runs BERT too: its vectors equal the native path's.
#[test]
fn candle_and_native_agree_on_bert() {
    let rec = record();
    let texts = strings(&rec["texts"]);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for name in ["cls-normalized", "mean-raw", "dense-tanh"] {
        let info = ModelInfo::from_dir(name, &fixtures().join(name), "fixture").unwrap();
        let native = Embedder::load(&info).unwrap();
        let spec = chunkscope_core::embed::EmbedSpec {
            backend: chunkscope_core::embed::BackendChoice::Candle,
            ..Default::default()
        };
        let candle = Embedder::open(&info, &spec).unwrap();
        assert_eq!(candle.backend_name(), "candle bert f32");
        assert_ne!(
            candle.model_key, native.model_key,
            "the cache tells backends apart"
        );
        for w in [16, 64] {
            for (a, b) in native
                .embed(&refs, w)
                .unwrap()
                .iter()
                .zip(candle.embed(&refs, w).unwrap())
            {
                assert!(cosine(a, &b) >= 0.9999, "{name} window {w}");
            }
        }
    }
}

/// NomicBERT declares its positions as `n_positions` and its width as `n_embd`; with dynamic NTK
/// scaling on, positions past `max_trained_positions` are not run, so that is the limit.
#[test]
fn nomic_positions_and_width() {
    let dir = fixtures().join("nomic-bert-prompts");
    let info = ModelInfo::from_dir("nomic", &dir, "fixture").unwrap();
    assert_eq!(info.windows.max_positions, Some(128));
    assert_eq!(chunkscope_core::embed::vector_dim(&info), Some(32));
    let tmp = std::env::temp_dir().join(format!("chunkscope-ntk-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let config = std::fs::read_to_string(dir.join("config.json"))
        .unwrap()
        .replace(
            r#""rotary_scaling_factor": null"#,
            r#""rotary_scaling_factor": 2.0, "max_trained_positions": 96"#,
        );
    std::fs::write(tmp.join("config.json"), config).unwrap();
    let w = chunkscope_core::model::read_windows(&tmp).unwrap();
    assert_eq!(w.max_positions, Some(96));
    let _ = std::fs::remove_dir_all(&tmp);
}

/// `chunkscope model show` describes a folder without loading its weights.
#[test]
fn model_show_names_architecture_backend_and_pooling() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chunkscope"))
        .args(["model", "show"])
        .arg(fixtures().join("qwen3-lasttoken"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "architecture qwen3",
        "backend candle qwen3 f32",
        "dimension 32",
        "pooling lasttoken, normalized",
        "positions 128",
        "queries \"Instruct:",
    ] {
        assert!(text.contains(want), "{want} not in:\n{text}");
    }
}

/// Weights stored in half precision (F16 or BF16 safetensors, as many hub folders ship them) are
/// read by the native path, widened to f32 at load.
#[test]
fn half_precision_weights_load_natively() {
    use safetensors::tensor::TensorView;
    use safetensors::{Dtype, SafeTensors};
    let src = fixtures().join("cls-normalized");
    let bytes = std::fs::read(src.join("model.safetensors")).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    for (dtype, min_cos) in [(Dtype::F16, 0.999), (Dtype::BF16, 0.99)] {
        let dir =
            std::env::temp_dir().join(format!("chunkscope-half-{dtype:?}-{}", std::process::id()));
        copy_folder(&src, &dir, "model.safetensors");
        let converted: Vec<(String, Vec<u8>, Vec<usize>)> = st
            .tensors()
            .into_iter()
            .map(|(name, t)| {
                let data: Vec<u8> = t
                    .data()
                    .chunks_exact(4)
                    .flat_map(|b| {
                        let x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                        match dtype {
                            Dtype::F16 => half::f16::from_f32(x).to_le_bytes(),
                            _ => half::bf16::from_f32(x).to_le_bytes(),
                        }
                    })
                    .collect();
                (name, data, t.shape().to_vec())
            })
            .collect();
        let views: Vec<(String, TensorView)> = converted
            .iter()
            .map(|(n, d, s)| (n.clone(), TensorView::new(dtype, s.clone(), d).unwrap()))
            .collect();
        safetensors::serialize_to_file(views, None, &dir.join("model.safetensors")).unwrap();
        let texts = strings(&record()["texts"]);
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let full = Embedder::load(&ModelInfo::from_dir("f32", &src, "fixture").unwrap()).unwrap();
        let half = Embedder::load(&ModelInfo::from_dir("half", &dir, "test").unwrap()).unwrap();
        for (a, b) in full
            .embed(&refs, 64)
            .unwrap()
            .iter()
            .zip(half.embed(&refs, 64).unwrap())
        {
            let c = cosine(a, &b);
            assert!(c >= min_cos, "{dtype:?}: cosine {c}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// candle's JinaBERT ALiBi table grows with the longest sequence seen (candle builds it for every
/// position the config names otherwise): a long text after a short one gets the vector it gets
/// alone, past the first table's 512 positions; the native path agrees there.
#[test]
fn jina_alibi_table_grows_without_changing_vectors() {
    let src = fixtures().join("jina-bert-alibi");
    let dir = std::env::temp_dir().join(format!("chunkscope-jina-{}", std::process::id()));
    copy_folder(&src, &dir, "");
    let config = std::fs::read_to_string(src.join("config.json"))
        .unwrap()
        .replace(
            r#""max_position_embeddings": 128"#,
            r#""max_position_embeddings": 2048"#,
        );
    std::fs::write(dir.join("config.json"), config).unwrap();
    let info = ModelInfo::from_dir("jina-long", &dir, "test").unwrap();
    let long = "restart the payments stack: drain the queue, stop the workers. ".repeat(70);
    let candle = chunkscope_core::embed::EmbedSpec {
        backend: chunkscope_core::embed::BackendChoice::Candle,
        ..Default::default()
    };
    let grown = Embedder::open(&info, &candle).unwrap();
    let short = grown.embed(&["Rotate the signing keys."], 2048).unwrap();
    assert_eq!(short.len(), 1);
    let after = grown.embed(&[long.as_str()], 2048).unwrap();
    let alone = Embedder::open(&info, &candle)
        .unwrap()
        .embed(&[long.as_str()], 2048)
        .unwrap();
    let c = cosine(&after[0], &alone[0]);
    assert!(c >= 0.99999, "cosine {c}");
    // The native path (ALiBi computed per sequence) agrees at that length.
    let native = Embedder::load(&info)
        .unwrap()
        .embed(&[long.as_str()], 2048)
        .unwrap();
    let c = cosine(&native[0], &alone[0]);
    assert!(c >= 0.9999, "native vs candle at 600+ tokens: cosine {c}");
    let tok = EmbedTokenizer::from_file(&info.tokenizer_path()).unwrap();
    assert!(tok.spans(&long).unwrap().len() > 600);
    let _ = std::fs::remove_dir_all(&dir);
}

/// NomicBERT checkpoints as they may be saved: tensors under a prefix ("bert.") and the word
/// table padded to a multiple of 64 rows while config.json keeps the tokenizer's count. The
/// vectors are the folder's own.
#[test]
fn nomic_prefixed_and_padded_weights() {
    use safetensors::tensor::TensorView;
    use safetensors::SafeTensors;
    let src = fixtures().join("nomic-bert-prompts");
    let dir = std::env::temp_dir().join(format!("chunkscope-nomic-pad-{}", std::process::id()));
    copy_folder(&src, &dir, "model.safetensors");
    let bytes = std::fs::read(src.join("model.safetensors")).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let tensors: Vec<(String, Vec<u8>, Vec<usize>)> = st
        .tensors()
        .into_iter()
        .map(|(name, t)| {
            let mut data = t.data().to_vec();
            let mut shape = t.shape().to_vec();
            if name == "embeddings.word_embeddings.weight" {
                let rows = shape[0].div_ceil(64) * 64;
                data.resize(rows * shape[1] * 4, 0);
                shape[0] = rows;
            }
            (format!("bert.{name}"), data, shape)
        })
        .collect();
    let views: Vec<(String, TensorView)> = tensors
        .iter()
        .map(|(n, d, s)| {
            let view = TensorView::new(safetensors::Dtype::F32, s.clone(), d).unwrap();
            (n.clone(), view)
        })
        .collect();
    safetensors::serialize_to_file(views, None, &dir.join("model.safetensors")).unwrap();
    let texts = strings(&record()["texts"]);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let want = Embedder::load(&ModelInfo::from_dir("n", &src, "fixture").unwrap())
        .unwrap()
        .embed(&refs, 64)
        .unwrap();
    let padded = ModelInfo::from_dir("p", &dir, "test").unwrap();
    let candle = chunkscope_core::embed::EmbedSpec {
        backend: chunkscope_core::embed::BackendChoice::Candle,
        ..Default::default()
    };
    for spec in [Default::default(), candle] {
        let got = Embedder::open(&padded, &spec)
            .unwrap()
            .embed(&refs, 64)
            .unwrap();
        for (a, b) in want.iter().zip(&got) {
            assert!(cosine(a, b) >= 0.99999);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
