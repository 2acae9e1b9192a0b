//! The embedder on the real all-MiniLM-L6-v2 weights: agreement with sentence-transformers' vectors
//! (recorded by tests/reference/make_st_fixture.py), the truncation the window implies, the cache,
//! and side-by-side search placing matches in the tail.

mod common;

use std::sync::atomic::AtomicBool;
use std::sync::OnceLock;

use chunkscope_core::cases::Cases;
use chunkscope_core::chunk::{ChunkSettings, Preset};
use chunkscope_core::corpus::Corpus;
use chunkscope_core::embed::driver::embed_cached;
use chunkscope_core::embed::{cosine, EmbedCache, Embedder};
use chunkscope_core::engine::Engine;
use chunkscope_core::search::SearchIndex;

fn embedder() -> &'static Embedder {
    static E: OnceLock<Embedder> = OnceLock::new();
    E.get_or_init(|| Embedder::load(common::model()).expect("weights load"))
}

#[test]
fn agrees_with_sentence_transformers() {
    let raw =
        std::fs::read_to_string(common::repo().join("tests/fixtures/st_vectors.json")).unwrap();
    let fx: serde_json::Value = serde_json::from_str(&raw).unwrap();
    let mut texts: Vec<(String, String)> = fx["inline"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect();
    for f in fx["files"].as_array().unwrap() {
        let f = f.as_str().unwrap();
        texts.push((
            f.to_string(),
            std::fs::read_to_string(common::repo().join(f)).unwrap(),
        ));
    }
    let mut worst = 1.0f32;
    for window in [128usize, 256] {
        let refs: Vec<&str> = texts.iter().map(|(_, t)| t.as_str()).collect();
        let ours = embedder().embed(&refs, window).unwrap();
        for ((name, _), v) in texts.iter().zip(&ours) {
            let want: Vec<f32> = fx["windows"][window.to_string()][name]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect();
            let c = cosine(v, &want);
            assert!(c >= 0.9999, "{name} at window {window}: cosine {c}");
            worst = worst.min(c);
        }
    }
    eprintln!("worst cosine to sentence-transformers: {worst:.6}");
}

#[test]
fn text_past_the_window_never_reaches_the_vector() {
    let long =
        std::fs::read_to_string(common::repo().join("examples/runbooks/rotate-keys.md")).unwrap();
    let probe = format!("{long} The violet submarine juggles seventeen marmalade comets.");
    let v = embedder()
        .embed(&[long.as_str(), probe.as_str()], 128)
        .unwrap();
    assert_eq!(
        v[0], v[1],
        "bit-identical: the appended sentence is past the window"
    );
    let short = "Keys are rotated every ninety days.";
    let probe = format!("{short} The violet submarine juggles seventeen marmalade comets.");
    let v = embedder().embed(&[short, probe.as_str()], 128).unwrap();
    assert!(
        cosine(&v[0], &v[1]) < 0.95,
        "inside the window the text changes the vector"
    );
    // The ids the model reads: [CLS] + 126 content tokens + [SEP].
    assert_eq!(embedder().ids(&long, 128).len(), 128);
    assert_eq!(embedder().ids(&long, 256).len(), 256);
    assert_eq!(
        embedder().ids(short, 128).len(),
        common::tokenizer().count(short) + 2
    );
}

#[test]
fn vectors_are_normalised_and_batch_independent() {
    let texts = [
        "alpha beta",
        "a somewhat longer sentence about payments and refunds",
        "短い",
        "",
    ];
    let together = embedder().embed(&texts, 128).unwrap();
    for (t, v) in texts.iter().zip(&together) {
        let alone = embedder().embed(&[t], 128).unwrap();
        assert!(cosine(v, &alone[0]) > 0.99999, "{t:?}");
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{t:?} norm {norm}");
    }
}

/// A background run pauses before every layer of every forward pass (the workbench waits there
/// while a chunking runs), and pausing changes no vector.
#[test]
fn a_pausing_run_pauses_before_each_layer_and_gives_the_same_vectors() {
    let texts = [
        "alpha beta",
        "a somewhat longer sentence about payments and refunds",
    ];
    let pauses = std::cell::Cell::new(0usize);
    let paused = embedder()
        .embed_pausing(&texts, 128, |_| true, &|| {
            pauses.set(pauses.get() + 1);
            true
        })
        .unwrap();
    let plain = embedder().embed_with(&texts, 128, |_| true).unwrap();
    assert_eq!(paused.vectors, plain.vectors);
    // all-MiniLM-L6-v2: six layers; two short texts make one pass.
    assert_eq!(pauses.get(), 6);
    // A pause that answers false gives the pass up there: no vectors, no more pauses.
    let asked = std::cell::Cell::new(0usize);
    let given_up = embedder().embed_pausing(&texts, 128, |_| true, &|| {
        asked.set(asked.get() + 1);
        asked.get() < 3
    });
    assert!(given_up.is_none());
    assert_eq!(asked.get(), 3);
}

#[test]
fn cache_embeds_nothing_twice() {
    let dir = std::env::temp_dir().join(format!("chunkscope-embcache-{}", std::process::id()));
    let path = dir.join("c.bin");
    let mut cache = EmbedCache::open(&path, 384);
    let texts = ["one text", "another text", "one text"];
    let (v1, n1) = embed_cached(embedder(), &mut cache, &texts, 128, |_, _| true).unwrap();
    assert_eq!(n1, 2, "duplicates are embedded once");
    cache.save().unwrap();
    let mut reopened = EmbedCache::open(&path, 384);
    let (v2, n2) = embed_cached(embedder(), &mut reopened, &texts, 128, |_, _| true).unwrap();
    assert_eq!(n2, 0);
    assert_eq!(v1, v2);
    let (_, n3) = embed_cached(embedder(), &mut reopened, &texts, 256, |_, _| true).unwrap();
    assert_eq!(n3, 2, "another window is another key");
    let _ = std::fs::remove_dir_all(&dir);
}

/// XQuAD English, one document per article, the spring-ai preset: for questions whose answer lies
/// past the window of its chunk, BM25 finds the chunk and marks its match "tail".
#[test]
fn bm25_hits_in_the_tail_on_xquad() {
    let Some(shared) = common::shared_or_skip("bm25_hits_in_the_tail_on_xquad") else {
        return;
    };
    // One document per article, paragraphs in order; the first 12 articles and their questions.
    let (corpus, cases) = Cases::from_squad(&shared.join("data/xquad/xquad.en.json")).unwrap();
    let corpus = Corpus {
        docs: corpus.docs.into_iter().take(12).collect(),
        ..corpus
    };
    let questions: Vec<(usize, String)> = cases
        .cases
        .into_iter()
        .filter(|c| c.doc < 12)
        .map(|c| (c.doc, c.question))
        .collect();
    let engine = Engine::new(common::model().clone(), common::tokenizer(), corpus).unwrap();
    let mut settings = ChunkSettings::default();
    Preset::SpringAi.apply(&mut settings);
    let chunking = engine
        .chunk_all(&settings, &AtomicBool::new(false))
        .unwrap();
    let index = SearchIndex::build(&engine, &chunking, None, 384).unwrap();
    let mut cache = EmbedCache::in_memory(384);
    let mut tail_hits = 0;
    for (doc, question) in &questions {
        let r = index
            .search(&engine, &chunking, embedder(), &mut cache, question, 5, 128)
            .unwrap();
        if r.bm25.iter().any(|h| h.file_pos == *doc && h.in_tail) {
            tail_hits += 1;
        }
    }
    eprintln!(
        "{tail_hits} of {} questions: BM25 hit in its article marked TAIL",
        questions.len()
    );
    assert!(tail_hits > 10);
}
