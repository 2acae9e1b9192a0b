//! The approximate vector index inside `SearchIndex`: flat below the threshold, the graph once
//! built and while it describes the vectors, flat again as soon as they change, a background
//! build installed when done, and the query results saying "approximate".

mod common;

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use chunkscope_core::chunk::ChunkSettings;
use chunkscope_core::corpus::{Corpus, CorpusRules};
use chunkscope_core::embed::{EmbedCache, Embedder};
use chunkscope_core::engine::{Chunking, Engine};
use chunkscope_core::index::ann::{clustered_queries, clustered_vectors};
use chunkscope_core::search::SearchIndex;

/// The examples folder's engine.
fn examples() -> Engine {
    let corpus = Corpus::load(&common::repo().join("examples"), &CorpusRules::default()).unwrap();
    Engine::new(common::model().clone(), common::tokenizer(), corpus).unwrap()
}

/// `engine` chunked at `size` (the default strategy), no overlap.
fn chunked(engine: &Engine, size: usize) -> Chunking {
    let s = ChunkSettings {
        size,
        overlap: 0,
        ..ChunkSettings::default()
    };
    engine.chunk_all(&s, &AtomicBool::new(false)).unwrap()
}

fn rows(flat: &[f32], dim: usize) -> Vec<Vec<f32>> {
    flat.chunks_exact(dim).map(<[f32]>::to_vec).collect()
}

#[test]
fn search_index_goes_approximate_past_the_threshold_and_back_when_vectors_change() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<SearchIndex>();
    let engine = examples();
    let chunking = chunked(&engine, 64);
    let dim = 384;
    let mut index = SearchIndex::build(&engine, &chunking, None, dim).unwrap();
    let n = index.len();
    assert!(n >= 120, "enough chunks for a graph: {n}");
    let vectors = rows(&clustered_vectors(n, dim, n / 10, 5), dim);
    let ids: Vec<u64> = (0..n as u64).collect();
    // Vectors arrive slice by slice, as from the embedding worker; the last few are late.
    let late = n - 6;
    for (i, v) in ids[..late].chunks(50).zip(vectors[..late].chunks(50)) {
        index.add_vectors(i, v);
    }
    index.ann_params.threshold = n - 10;
    index.ann_params.ef_search = 24;
    index.ann_params.recall_sample = 40;
    let queries = rows(&clustered_queries(10, dim, n / 10, 5), dim);
    let flat = |index: &SearchIndex, q: &[f32], k: usize| -> Vec<(u64, f32)> {
        index.vector_scored(q).into_iter().take(k).collect()
    };

    // Past the threshold but not built yet: flat.
    assert!(index.ann_due() && !index.approximate());
    let (hits, info) = index.vector_top(&queries[0], 5);
    assert!(info.is_none() && !index.last_search_approximate());
    assert_eq!(hits, flat(&index, &queries[0], 5));

    // Built: approximate, with the exact scores, here the exact hits too.
    let stats = index.build_ann().expect("past the threshold");
    assert_eq!(stats.vectors, late);
    assert!(stats.recall_at_10 >= 0.9, "{stats:?}");
    assert!(index.approximate() && !index.ann_due());
    assert_eq!(index.build_ann(), Some(stats), "already built: not again");
    for q in &queries {
        let (hits, info) = index.vector_top(q, 5);
        let info = info.expect("answered by the graph");
        assert!(index.last_search_approximate());
        assert_eq!(info.recall_at_10, stats.recall_at_10);
        assert!(info.candidates >= 5);
        assert_eq!(hits, flat(&index, q, 5));
    }
    assert!(index.ann_recall(30).unwrap() >= 0.9);

    // The threshold raised past the vectors: flat, though the graph is fresh.
    index.ann_params.threshold = n + 1;
    assert!(!index.approximate() && !index.ann_due() && index.build_ann().is_none());
    assert!(index.vector_top(&queries[0], 5).1.is_none());
    index.ann_params.threshold = n - 10;
    assert!(index.approximate());

    // The late vectors: the graph is stale, search is flat and exact, a build is due; built in
    // the background and installed by a poll.
    index.add_vectors(&ids[late..], &vectors[late..]);
    assert!(index.has_vectors());
    assert!(!index.approximate() && index.ann_due());
    let (hits, info) = index.vector_top(&queries[1], 5);
    assert!(info.is_none() && !index.last_search_approximate());
    assert_eq!(hits, flat(&index, &queries[1], 5));
    assert!(index.start_ann_build());
    assert!(!index.ann_due(), "a build for these vectors runs");
    let started = Instant::now();
    let stats = loop {
        if let Some(stats) = index.poll_ann() {
            break stats;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "build never ended"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(stats.vectors, n);
    assert!(index.approximate());

    // The whole search: the vector column says it is approximate, and how good.
    let embedder = Embedder::load(common::model()).unwrap();
    let mut cache = EmbedCache::in_memory(dim);
    let results = index
        .search(
            &engine,
            &chunking,
            &embedder,
            &mut cache,
            "rotate the keys",
            5,
            128,
        )
        .unwrap();
    let info = results.approximate.expect("answered by the graph");
    assert_eq!(info.recall_at_10, stats.recall_at_10);
    assert_eq!(results.vector.len(), 5);
    let json = serde_json::to_value(&results).unwrap();
    assert!(json["approximate"]["recall_at_10"].is_number(), "{json}");

    // A build started, then the vectors changed: it is dropped, never installed.
    index.clear_vectors();
    assert!(!index.approximate() && !index.ann_due());
    index.set_vectors(&vectors, dim);
    assert!(index.start_ann_build());
    index.clear_vectors();
    assert!(index.poll_ann().is_none() && index.wait_ann().is_none());
    assert!(!index.approximate());
    let results = index
        .search(
            &engine,
            &chunking,
            &embedder,
            &mut cache,
            "rotate the keys",
            5,
            128,
        )
        .unwrap();
    assert!(results.approximate.is_none() && results.vector.is_empty());
    let json = serde_json::to_value(&results).unwrap();
    assert!(
        json.get("approximate").is_none(),
        "skipped when flat: {json}"
    );
}

/// A knob turn replaces most chunks: the updated index (then rebuilt, so that earlier
/// chunkings' deleted documents do not stay in memory) holds and ranks exactly what a fresh
/// build of the new chunking does; a small change still goes through deletes and adds.
#[test]
fn an_update_after_a_knob_turn_equals_a_fresh_build() {
    let engine = examples();
    let (a, b) = (chunked(&engine, 400), chunked(&engine, 500));
    let mut index = SearchIndex::build(&engine, &a, None, 4).unwrap();
    for next in [&b, &a, &b] {
        let changes = index.update(&engine, next).unwrap();
        assert!(changes.removed * 2 > changes.kept, "{changes:?}");
        let fresh = SearchIndex::build(&engine, next, None, 4).unwrap();
        assert_eq!(index.contents().unwrap(), fresh.contents().unwrap());
        // No earlier chunking's documents left behind.
        assert_eq!(index.bm25_held(), index.len() as u64);
        for q in ["chunk size overlap", "embedding window tail", "Spring AI"] {
            assert_eq!(
                index.bm25_scored(q).unwrap(),
                fresh.bm25_scored(q).unwrap(),
                "{q}"
            );
        }
    }
    // The same chunking again: nothing removed, nothing rebuilt.
    let changes = index.update(&engine, &b).unwrap();
    assert_eq!((changes.removed, changes.added), (0, 0));
}

/// The embedding worker gives up an index for a chunking a newer one replaced: a build or a
/// knob turn's fresh BM25 stops once told to (nothing half-built comes back); a small move and
/// an unstopped one finish as `update` does.
#[test]
fn a_stopped_build_or_knob_turn_gives_up_and_an_unstopped_one_finishes() {
    let engine = examples();
    let (a, b) = (chunked(&engine, 400), chunked(&engine, 500));
    let (stop, go) = (|| false, || true);
    assert!(SearchIndex::build_unless(&engine, &a, 4, &stop)
        .unwrap()
        .is_none());
    let index = SearchIndex::build_unless(&engine, &a, 4, &go)
        .unwrap()
        .expect("not stopped");
    let fresh_a = SearchIndex::build(&engine, &a, None, 4).unwrap();
    assert_eq!(index.contents().unwrap(), fresh_a.contents().unwrap());
    let kept = SearchIndex::build(&engine, &a, None, 4).unwrap();
    assert!(kept.update_unless(&engine, &b, &stop).unwrap().is_none());
    // The same chunking again moves nothing: nothing to give up.
    let (index, changes) = index
        .update_unless(&engine, &a, &stop)
        .unwrap()
        .expect("a move without a fresh build finishes");
    assert_eq!((changes.removed, changes.added), (0, 0));
    let (index, changes) = index
        .update_unless(&engine, &b, &go)
        .unwrap()
        .expect("not stopped");
    assert!(changes.removed * 2 > changes.kept, "{changes:?}");
    let fresh_b = SearchIndex::build(&engine, &b, None, 4).unwrap();
    assert_eq!(index.contents().unwrap(), fresh_b.contents().unwrap());
    assert_eq!(index.bm25_held(), index.len() as u64);
}
