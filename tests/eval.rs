//! Evaluation against an independent computation: on XQuAD (three languages) and the examples, the
//! tool's per-case hit/miss equals a direct scan of the same rankings, and answers past the window
//! land in the tail bucket where the vector retriever cannot see them.

mod common;

use std::sync::atomic::AtomicBool;

use chunkscope_core::cases::{norm, Cases};
use chunkscope_core::chunk::{ChunkSettings, Preset};
use chunkscope_core::corpus::{Corpus, CorpusRules};
use chunkscope_core::embed::driver::embed_cached;
use chunkscope_core::embed::{EmbedCache, Embedder};
use chunkscope_core::engine::{Chunking, Engine};
use chunkscope_core::eval::{evaluate, Bucket};
use chunkscope_core::search::SearchIndex;

/// Both indexes over `chunking`, every chunk embedded (what it embeds) at window 128.
fn indexed(
    engine: &Engine,
    chunking: &Chunking,
    embedder: &Embedder,
    cache: &mut EmbedCache,
) -> SearchIndex {
    let owned = chunking.embed_texts(engine);
    let texts: Vec<&str> = owned.iter().map(|t| t.as_ref()).collect();
    let (vectors, _) = embed_cached(embedder, cache, &texts, 128, |_, _| true).unwrap();
    SearchIndex::build(engine, chunking, Some(&vectors), 384).unwrap()
}

fn check(corpus: Corpus, cases: impl Fn(&Corpus) -> Cases, label: &str) {
    let engine = Engine::new(common::model().clone(), common::tokenizer(), corpus).unwrap();
    let cases = cases(&engine.corpus);
    let mut settings = ChunkSettings::default();
    Preset::SpringAi.apply(&mut settings);
    let chunking = engine
        .chunk_all(&settings, &AtomicBool::new(false))
        .unwrap();
    let embedder = Embedder::load(common::model()).unwrap();
    let mut cache = EmbedCache::in_memory(384);
    let index = indexed(&engine, &chunking, &embedder, &mut cache);
    let report = evaluate(
        &engine,
        &chunking,
        &index,
        &embedder,
        &mut cache,
        &cases,
        128,
        &[1, 5],
        5,
    )
    .unwrap();
    assert_eq!(report.results.len(), cases.cases.len());
    // Independent: scan the full rankings for the first chunk whose text holds the answer.
    let normed: Vec<String> = chunking
        .files
        .iter()
        .flat_map(|f| {
            let doc = engine.corpus.docs[f.doc].text.as_str();
            f.chunks.iter().map(move |c| norm(c.text(doc)))
        })
        .collect();
    let mut hits = (0, 0);
    for (case, r) in cases.cases.iter().zip(&report.results) {
        let answer = norm(&case.answer);
        let bm = index.bm25_ranking(&case.question).unwrap();
        let want_bm = bm
            .iter()
            .position(|&id| normed[id as usize].contains(&answer))
            .map(|p| p + 1);
        assert_eq!(r.bm25_rank, want_bm, "{label} line {}", case.line);
        let (qv, _) = embed_cached(
            &embedder,
            &mut cache,
            &[case.question.as_str()],
            128,
            |_, _| true,
        )
        .unwrap();
        let vr = index.vector_ranking(&qv[0]);
        let want_vec = vr
            .iter()
            .position(|&id| normed[id as usize].contains(&answer))
            .map(|p| p + 1);
        assert_eq!(r.vector_rank, want_vec, "{label} line {}", case.line);
        // Hybrid: reciprocal rank fusion written again here, over the same two rankings.
        let mut fused: Vec<(u64, f64)> = Vec::new();
        for ranking in [&bm, &vr] {
            for (i, &id) in ranking.iter().enumerate() {
                let add = 1.0 / (60.0 + i as f64 + 1.0);
                match fused.iter_mut().find(|f| f.0 == id) {
                    Some(f) => f.1 += add,
                    None => fused.push((id, add)),
                }
            }
        }
        fused.sort_by(|a, b| b.1.total_cmp(&a.1));
        let want_hybrid = fused
            .iter()
            .position(|&(id, _)| normed[id as usize].contains(&answer))
            .map(|p| p + 1);
        assert_eq!(r.hybrid_rank, want_hybrid, "{label} line {}", case.line);
        hits.0 += usize::from(want_bm.is_some_and(|x| x <= 5));
        hits.1 += usize::from(want_vec.is_some_and(|x| x <= 5));
        // The bucket agrees with the window: a tail case's answer ends past its chunk's tail start.
        if r.bucket == Bucket::InTheTail {
            let (fp, ci) = r.holding.unwrap();
            let c = &chunking.files[fp].chunks[ci];
            let tail = c
                .tail(128, 2)
                .expect("a tail bucket case's chunk overflows");
            assert!(
                case.end - c.start() > tail.start_byte,
                "{label} line {}",
                case.line
            );
        }
    }
    let n = cases.cases.len() as f64;
    assert!((report.bm25.at(5) - hits.0 as f64 / n).abs() < 1e-12);
    assert!((report.vector.at(5) - hits.1 as f64 / n).abs() < 1e-12);
    // The window predicts the tail: an answer past the window is never what the vector saw, so
    // in-the-tail vector hits can only come from other words of the chunk, and the tail bucket
    // holds a large share of XQuAD's answers under the 800-token splitter.
    let tail = report
        .by_bucket
        .iter()
        .find(|b| b.group == Bucket::InTheTail)
        .unwrap();
    assert!(
        tail.vector.n * 2 > cases.cases.len(),
        "{label}: the tail bucket should hold most answers under the 800-token splitter"
    );
    eprintln!(
        "{label}: {} cases, tail {}: BM25@5 {:.2} vector@5 {:.2} (tail bucket vector@5 {:.2})",
        cases.cases.len(),
        tail.vector.n,
        report.bm25.at(5),
        report.vector.at(5),
        tail.vector.at(5)
    );
}

#[test]
fn xquad_per_case_results_match_an_independent_scan() {
    let Some(shared) = common::shared_or_skip("xquad_per_case_results_match_an_independent_scan")
    else {
        return;
    };
    for lang in ["en", "es", "zh"] {
        let path = shared.join(format!("data/xquad/xquad.{lang}.json"));
        let (corpus, cases) = Cases::from_squad(&path).unwrap();
        // A third of the articles keeps the test quick; every language is covered.
        let keep = 16;
        let corpus = Corpus {
            docs: corpus.docs.into_iter().take(keep).collect(),
            ..corpus
        };
        let mut cases = cases;
        cases.cases.retain(|c| c.doc < keep);
        check(corpus, |_| cases.clone(), &format!("xquad {lang}"));
    }
}

#[test]
fn examples_cases_match_an_independent_scan() {
    let corpus = Corpus::load(&common::repo().join("examples"), &CorpusRules::default()).unwrap();
    check(
        corpus,
        |c| Cases::from_tsv(&common::repo().join("examples/cases.tsv"), c).unwrap(),
        "examples",
    );
}

/// Embed small, return big: with the same chunks, indexes and rankings, a case found in chunk mode
/// is found at the same rank or earlier when hits return their parent section (each parent holds
/// its children, and a parent counts once at its best child).
#[test]
fn parent_mode_finds_every_answer_chunk_mode_finds_no_later() {
    let corpus = Corpus::load(&common::repo().join("examples"), &CorpusRules::default()).unwrap();
    let engine = Engine::new(common::model().clone(), common::tokenizer(), corpus).unwrap();
    let cases =
        Cases::from_tsv(&common::repo().join("examples/cases.tsv"), &engine.corpus).unwrap();
    let embedder = Embedder::load(common::model()).unwrap();
    let mut cache = EmbedCache::in_memory(384);
    let mut reports = Vec::new();
    for parents in [false, true] {
        let mut settings = ChunkSettings::default();
        Preset::Markdown.apply(&mut settings);
        settings.size = 60;
        settings.parents = parents;
        let chunking = engine
            .chunk_all(&settings, &AtomicBool::new(false))
            .unwrap();
        let index = indexed(&engine, &chunking, &embedder, &mut cache);
        reports.push(
            evaluate(
                &engine,
                &chunking,
                &index,
                &embedder,
                &mut cache,
                &cases,
                128,
                &[1, 5],
                5,
            )
            .unwrap(),
        );
    }
    let (small, big) = (&reports[0], &reports[1]);
    let mut earlier = 0;
    for (a, b) in small.results.iter().zip(&big.results) {
        for (ra, rb) in [(a.bm25_rank, b.bm25_rank), (a.vector_rank, b.vector_rank)] {
            if let Some(ra) = ra {
                let rb = rb.expect("a parent holds its child's answer");
                assert!(
                    rb <= ra,
                    "{}: parent rank {rb} > chunk rank {ra}",
                    a.question
                );
                earlier += usize::from(rb < ra);
            }
        }
    }
    assert!(big.vector.at(1) >= small.vector.at(1));
    assert!(earlier > 0, "parents should lift some answers");
    eprintln!(
        "vector recall@1 {:.2} -> {:.2} with parents ({earlier} ranks earlier)",
        small.vector.at(1),
        big.vector.at(1)
    );
}
