//! The eval pane: judged measures and their bars.

use super::*;

/// A judged report with the given nDCG@10 of BM25, vector, hybrid and (a fourth value) the
/// reranker (every other measure 0).
fn judged_report<const N: usize>(ndcg: [f64; N]) -> chunkscope_core::eval::judged::JudgedReport {
    use chunkscope_core::metrics::Metrics;
    let at = |v: f64| {
        vec![Metrics {
            k: 10,
            ndcg: v,
            ..Metrics::default()
        }]
    };
    chunkscope_core::eval::judged::JudgedReport {
        source: "qrels/test.tsv".into(),
        rule: chunkscope_core::eval::judged::BEST_CHUNK_RULE.into(),
        queries: 0,
        ks: vec![10],
        not_in_corpus: Vec::new(),
        bm25: at(ndcg[0]),
        vector: at(ndcg[1]),
        hybrid: at(ndcg[2]),
        rerank: ndcg.get(3).map(|&v| at(v)),
        per_query: Vec::new(),
    }
}

/// nDCG@10 per retriever as horizontal bars: each as long as its value of the width (the value
/// written at its start), A's bar above B's when pinned.
#[test]
fn ndcg_bars_follow_the_values() {
    use chunkscope::ui::eval::ndcg_chart;
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::style::Style;
    use ratatui::widgets::Widget;

    let draw = |a: Option<[f64; 3]>, height: u16| {
        let (b, a) = (judged_report([0.8, 0.4, 1.0]), a.map(judged_report));
        let mut buf = Buffer::empty(Rect::new(0, 0, 40, height));
        let styles = (Style::default(), Style::default());
        ndcg_chart(&b, a.as_ref(), styles).render(buf.area, &mut buf);
        (0..height)
            .map(|y| (0..40).map(|x| buf[(x, y)].symbol()).collect::<String>())
            .collect::<Vec<String>>()
    };
    let rows = draw(None, 4);
    assert_eq!(rows[0].trim_end(), "nDCG@10", "{rows:#?}");
    // Labels take the widest label and a space (7 columns); bars share the 33 left.
    for (row, label, value, cells) in [
        (&rows[1], "BM25", "0.80", 26),
        (&rows[2], "vector", "0.40", 13),
        (&rows[3], "hybrid", "1.00", 33),
    ] {
        assert!(row.starts_with(label), "{row}");
        assert_eq!(&row[7..11], value, "{row}");
        assert_eq!(row.matches('█').count() + value.len(), cells, "{row}");
    }
    let rows = draw(Some([0.5, 0.4, 0.9]), 7);
    // The widest label is 8 columns ("A vector"), then a space, then the bar and its value.
    let bars: Vec<(&str, &str)> = rows[1..]
        .iter()
        .map(|r| (r[..8].trim_end(), &r[9..13]))
        .collect();
    assert_eq!(
        bars,
        [
            ("A BM25", "0.50"),
            ("B BM25", "0.80"),
            ("A vector", "0.40"),
            ("B vector", "0.40"),
            ("A hybrid", "0.90"),
            ("B hybrid", "1.00")
        ],
        "{rows:#?}"
    );
    // With a reranker, its bar follows the first stage's; pinned without one, it stands alone.
    let with_rerank = judged_report([0.8, 0.4, 1.0, 0.6]);
    let pinned = judged_report([0.5, 0.4, 0.9]);
    let mut buf = Buffer::empty(Rect::new(0, 0, 40, 9));
    let styles = (Style::default(), Style::default());
    ndcg_chart(&with_rerank, Some(&pinned), styles).render(buf.area, &mut buf);
    let rows: Vec<String> = (0..9)
        .map(|y| (0..40).map(|x| buf[(x, y)].symbol()).collect::<String>())
        .collect();
    assert!(rows[7].starts_with("B rerank"), "{rows:#?}");
    assert_eq!(&rows[7][9..13], "0.60", "{rows:#?}");
}

/// The eval pane over a judged evaluation (a query log, no answer spans): the measures per
/// retriever, the nDCG@10 bars, and the judged queries with their documents' ranks.
#[test]
fn eval_pane_shows_judged_measures() {
    use chunkscope::app::View;
    use chunkscope_core::cases::Cases;
    use chunkscope_core::embed::driver::embed_cached;
    use chunkscope_core::embed::{EmbedCache, Embedder};
    use chunkscope_core::search::SearchIndex;

    let mut m = model(Theme::mono());
    let (engine, chunking) = (m.engine.clone().unwrap(), m.chunking.clone().unwrap());
    let dir = std::env::temp_dir().join(format!("chunkscope-views-judged-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("log.jsonl");
    std::fs::write(
        &log,
        "{\"query\": \"how often are keys rotated\", \"relevant\": [\"runbooks/rotate-keys.md\"]}\n\
         {\"id\": \"short\", \"query\": \"a short note\", \"relevant\": {\"notes/short.txt\": 2}}\n",
    )
    .unwrap();
    let cases = Cases::load(&log, None, &engine.corpus).unwrap();
    let embedder = Embedder::load(common::model()).unwrap();
    let mut cache = EmbedCache::in_memory(384);
    let owned = chunking.embed_texts(&engine);
    let texts: Vec<&str> = owned.iter().map(|t| t.as_ref()).collect();
    let (vectors, _) = embed_cached(&embedder, &mut cache, &texts, 64, |_, _| true).unwrap();
    let index = SearchIndex::build(&engine, &chunking, Some(&vectors), 384).unwrap();
    let report = chunkscope_core::eval::evaluate(
        &engine,
        &chunking,
        &index,
        &embedder,
        &mut cache,
        &cases,
        64,
        &[1, 3, 5],
        5,
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let ndcg = report.judged.as_ref().unwrap().ndcg10();
    m.eval.report = Some(Arc::new(report));
    m.eval.made_for = Some((m.chunked_generation, m.window().tokens));
    m.view = View::Eval;
    let screen = format!("{}", render(&m).backend());
    for want in [
        "2 judged queries",
        "nDCG@10 MAP@10   R@1   R@3   R@5  R@10 MRR@10",
        "judged queries · ✓/✗ BM25 vector hybrid",
        "runbooks/rotate-keys.md (grade 1): BM25 1 at #",
        "notes/short.txt (grade 2)",
    ] {
        assert!(screen.contains(want), "{want} in\n{screen}");
    }
    for (label, v) in ["BM25", "vector", "hybrid"]
        .iter()
        .zip(ndcg.iter().map(|p| p.1))
    {
        assert!(
            screen.contains(&format!("{label} {v:.2}"))
                || screen.contains(&format!("{label}   {v:.2}")),
            "{label} {v:.2} in\n{screen}"
        );
    }
    // Pinned: A's row under each retriever's, and A's bar above B's.
    m.eval.pinned = m.eval.report.clone();
    let screen = format!("{}", render(&m).backend());
    assert!(screen.contains("A (pinned)"), "{screen}");
    assert!(
        screen.contains("A BM25") && screen.contains("B hybrid"),
        "{screen}"
    );
}
