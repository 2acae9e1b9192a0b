//! Max-Min semantic chunking against an independent implementation of the authors' rule
//! (tests/reference/maxmin_rule.py) over the same sentence embeddings from the real model; turning
//! a threshold needs no new embedding.

mod common;

use std::sync::atomic::AtomicBool;

use chunkscope_core::chunk::maxmin::{sentence_text, sentences};
use chunkscope_core::chunk::{ChunkSettings, MaxMinParams, Preset, SentenceVectors, Strategy};
use chunkscope_core::corpus::{Corpus, CorpusRules};
use chunkscope_core::embed::Embedder;
use chunkscope_core::engine::Engine;
use chunkscope_core::sentences::SentenceStore;
use chunkscope_core::tokenize::Unit;

fn engine() -> Engine {
    let corpus = Corpus::load(&common::repo().join("examples"), &CorpusRules::default()).unwrap();
    Engine::new(common::model().clone(), common::tokenizer(), corpus).unwrap()
}

fn maxmin(size: usize, p: MaxMinParams) -> ChunkSettings {
    let mut s = ChunkSettings::default();
    Preset::MaxMin.apply(&mut s);
    s.size = size;
    s.maxmin = p;
    s
}

#[test]
fn boundaries_equal_the_reference_rule() {
    let engine = engine();
    let embedder = Embedder::load(common::model()).unwrap();
    let mut store = SentenceStore::in_memory(&engine, embedder.dim());
    let defaults = maxmin(0, MaxMinParams::default());
    let missing = store.missing(&engine, &defaults);
    assert!(!missing.is_empty());
    store.fill(&embedder, &missing, 64, |_, _| true).unwrap();
    assert!(store.missing(&engine, &defaults).is_empty());

    // The authors' defaults, and looser settings under which many sentences join.
    let params = [
        MaxMinParams::default(),
        MaxMinParams {
            fixed_threshold: 0.3,
            ..MaxMinParams::default()
        },
        MaxMinParams {
            fixed_threshold: 0.2,
            c: 0.7,
            init_constant: 1.2,
        },
    ];
    let mut joined_somewhere = false;
    for p in params {
        let settings = maxmin(0, p);
        // Same sentences whatever the thresholds: nothing new to embed.
        assert!(store.missing(&engine, &settings).is_empty());
        let chunking = engine
            .chunk_all_with(&settings, Some(&store), &AtomicBool::new(false))
            .unwrap();
        let mut docs = Vec::new();
        let mut ours = Vec::new();
        for f in &chunking.files {
            let view = engine.view(f.doc);
            let spans = sentences(&view, settings.unit, 0);
            let vectors: Vec<Vec<f32>> = spans
                .iter()
                .map(|&s| {
                    store
                        .vector(sentence_text(view.text, s))
                        .expect("every sentence embedded")
                        .to_vec()
                })
                .collect();
            docs.push(vectors);
            // Our chunk starts as sentence indices.
            let starts: Vec<usize> = f
                .chunks
                .iter()
                .map(|c| {
                    spans
                        .iter()
                        .position(|s| s.0 == c.start())
                        .expect("a chunk starts at a sentence")
                })
                .collect();
            // Chunks cover the sentences in order, end to end.
            assert_eq!(f.chunks.last().map(|c| c.end()), spans.last().map(|s| s.1));
            joined_somewhere |= starts.len() < spans.len();
            ours.push(starts);
        }
        let input = serde_json::json!({
            "params": {
                "fixed_threshold": p.fixed_threshold as f64,
                "c": p.c as f64,
                "init_constant": p.init_constant as f64,
            },
            "docs": docs,
        });
        let reference: Vec<Vec<usize>> =
            serde_json::from_value(common::python("maxmin_rule.py", &input)).unwrap();
        assert_eq!(ours.len(), reference.len());
        for (f, (a, b)) in chunking.files.iter().zip(ours.iter().zip(&reference)) {
            assert_eq!(a, b, "{:?}: {}", p, engine.corpus.docs[f.doc].path);
        }
    }
    assert!(joined_somewhere, "the fixture must exercise joins");
}

#[test]
fn maximum_size_holds_chunks_inside_the_window() {
    let engine = engine();
    let embedder = Embedder::load(common::model()).unwrap();
    let mut store = SentenceStore::in_memory(&engine, embedder.dim());
    let loose = MaxMinParams {
        fixed_threshold: 0.1,
        c: 0.5,
        init_constant: 2.0,
    };
    let capped = maxmin(60, loose);
    assert_eq!(capped.strategy, Strategy::MaxMin);
    let missing = store.missing(&engine, &capped);
    store.fill(&embedder, &missing, 64, |_, _| true).unwrap();
    let chunking = engine
        .chunk_all_with(&capped, Some(&store), &AtomicBool::new(false))
        .unwrap();
    let mut total = 0;
    for f in &chunking.files {
        for c in f.chunks.iter() {
            assert!(
                c.unit_len(Unit::Embed) <= 60,
                "{} embed tokens",
                c.unit_len(Unit::Embed)
            );
            total += 1;
        }
    }
    // Without the cap the same loose rule makes fewer, longer chunks.
    let uncapped = maxmin(0, loose);
    let missing = store.missing(&engine, &uncapped);
    store.fill(&embedder, &missing, 64, |_, _| true).unwrap();
    let free = engine
        .chunk_all_with(&uncapped, Some(&store), &AtomicBool::new(false))
        .unwrap();
    let free_total: usize = free.files.iter().map(|f| f.chunks.len()).sum();
    let longest = free
        .files
        .iter()
        .flat_map(|f| f.chunks.iter().map(|c| c.unit_len(Unit::Embed)))
        .max()
        .unwrap();
    assert!(
        free_total < total && longest > 60,
        "{free_total} vs {total}, longest {longest}"
    );
}

/// In the workbench's pipeline: the first Max-Min chunking embeds the sentences it lacks (with
/// progress), turning a threshold re-chunks from the stored vectors with no embedding at all.
#[test]
fn threshold_turns_embed_nothing() {
    use chunkscope_core::jobs::pipeline::{Pipeline, Source};
    use chunkscope_core::jobs::Event;
    use std::sync::mpsc::channel;
    use std::time::Duration;

    let d = std::env::temp_dir().join(format!("chunkscope-maxmin-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    // A sentence no earlier run has embedded, so the first chunking must embed it.
    let nonce = format!(
        "{}{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    std::fs::write(
        d.join("a.md"),
        format!(
            "# Keys\n\nRotate the signing keys every quarter. Staging goes first.\n\n\
             Batch {nonce} was the last one rotated.\n\nRefunds are pro rata after thirty days.\n"
        ),
    )
    .unwrap();
    let (tx, rx) = channel();
    let pipeline = Pipeline::spawn(
        Source {
            corpus: d.clone(),
            rules: CorpusRules::default(),
            model: common::model().clone(),
            tok: common::tokenizer(),
            store: None,
        },
        chunkscope_core::embed::SharedEmbedder::new(common::model().clone()),
        tx,
    );
    pipeline.load(1);
    let run = |generation: u64, settings: ChunkSettings| -> (usize, usize) {
        pipeline.rechunk(generation, settings);
        let mut progress = 0;
        loop {
            match rx
                .recv_timeout(Duration::from_secs(120))
                .expect("pipeline answers")
            {
                Event::SentenceProgress { .. } => progress += 1,
                Event::Chunked {
                    generation: g,
                    result,
                    ..
                } if g == generation => {
                    let c = result.expect("chunked");
                    return (progress, c.files.iter().map(|f| f.chunks.len()).sum());
                }
                _ => {}
            }
        }
    };
    let (first, _) = run(2, maxmin(0, MaxMinParams::default()));
    assert!(first > 0, "the first maxmin chunking embeds its sentences");
    let loose = MaxMinParams {
        fixed_threshold: 0.05,
        c: 0.1,
        init_constant: 3.0,
    };
    let (second, loose_chunks) = run(3, maxmin(0, loose));
    let (third, strict_chunks) = run(
        4,
        maxmin(
            0,
            MaxMinParams {
                fixed_threshold: 0.99,
                init_constant: 0.5,
                ..MaxMinParams::default()
            },
        ),
    );
    assert_eq!((second, third), (0, 0), "threshold turns must not embed");
    assert!(
        loose_chunks < strict_chunks,
        "{loose_chunks} vs {strict_chunks}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
