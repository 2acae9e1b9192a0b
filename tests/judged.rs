//! Relevance judgments through the binary: a BEIR folder made from the example corpus is read as
//! corpus and cases, and every reported measure equals trec_eval's formulas (crate::metrics,
//! checked against pytrec_eval by tests/metrics.rs) recomputed from the reported document
//! rankings; a JSONL query log against examples/; a malformed qrels line named by file and line.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use chunkscope_core::metrics::{self, Metrics, QueryEval};
use serde_json::Value;

fn run(args: &[&str]) -> Output {
    common::model(); // the model in place before the binary looks for it
    Command::new(env!("CARGO_BIN_EXE_chunkscope"))
        .env("HF_HUB_OFFLINE", "1")
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chunkscope-judged-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A query: id, text, judged documents and grades.
type JudgedQuery = (&'static str, &'static str, &'static [(&'static str, u32)]);

/// Queries over examples/ whose relevant documents are known, with graded judgments (grade 0:
/// judged not relevant). The last names a document the corpus lacks.
const QUERIES: &[JudgedQuery] = &[
    (
        "q1",
        "How often are the regional RSA response signing keys rotated?",
        &[("runbooks/rotate-keys.md", 2)],
    ),
    (
        "q2",
        "What is the refund window for the Scale annual plan?",
        &[("policy/refunds.md", 2), ("README.md", 0)],
    ),
    (
        "q3",
        "Who gets paged when a SEV1 is still open after 90 minutes?",
        &[
            ("guides/incident-handbook.md", 2),
            ("notes/oncall-faq.txt", 1),
        ],
    ),
    (
        "q4",
        "When is a canary release aborted automatically?",
        &[("docs/deploy.rst", 1)],
    ),
    (
        "q5",
        "How do you restart the payments ledger pods one at a time?",
        &[
            ("runbooks/restart-payments.md", 3),
            ("guides/incident-handbook.md", 1),
            ("runbooks/retired.md", 1),
        ],
    ),
];

/// The example corpus's files, relative to examples/ with '/' separators.
fn example_files() -> Vec<String> {
    let root = common::repo().join("examples");
    common::walk(&root)
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).unwrap().to_string_lossy();
            rel.replace('\\', "/")
        })
        .collect()
}

/// A BEIR folder: each example file a document whose `_id` is its path, the queries above, and
/// their qrels as `qrels/test.tsv`.
fn beir_folder(name: &str) -> PathBuf {
    let d = tmp(name);
    std::fs::create_dir_all(d.join("qrels")).unwrap();
    let mut corpus = String::new();
    for rel in example_files() {
        let text = std::fs::read_to_string(common::repo().join("examples").join(&rel)).unwrap();
        let doc = serde_json::json!({"_id": rel, "title": "", "text": text});
        corpus.push_str(&format!("{doc}\n"));
    }
    std::fs::write(d.join("corpus.jsonl"), corpus).unwrap();
    let mut queries = String::new();
    let mut qrels = String::from("query-id\tcorpus-id\tscore\n");
    for (id, text, judged) in QUERIES {
        queries.push_str(&format!(
            "{}\n",
            serde_json::json!({"_id": id, "text": text})
        ));
        for (doc, grade) in *judged {
            qrels.push_str(&format!("{id}\t{doc}\t{grade}\n"));
        }
    }
    std::fs::write(d.join("queries.jsonl"), queries).unwrap();
    std::fs::write(d.join("qrels/test.tsv"), qrels).unwrap();
    d
}

fn close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() < 1e-9, "{what}: reported {a}, recomputed {b}");
}

fn metrics_of(v: &Value) -> Metrics {
    let f = |k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"));
    Metrics {
        k: v["k"].as_u64().unwrap() as usize,
        ndcg: f("ndcg"),
        map: f("map"),
        recall: f("recall"),
        precision: f("precision"),
        mrr: f("mrr"),
        recip_rank: f("recip_rank"),
    }
}

/// Every per-query measure recomputed from the reported ranking and judgments, every mean from
/// the per-query measures; the judged documents' places agree with the rankings.
fn check_judged(j: &Value, queries: usize) {
    assert!(
        j["rule"].as_str().unwrap().contains("best chunk"),
        "{}",
        j["rule"]
    );
    let ks: Vec<usize> = j["ks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(ks, [1, 3, 5, 10]);
    let per_query = j["per_query"].as_array().unwrap();
    assert_eq!(per_query.len(), queries);
    assert_eq!(j["queries"], queries);
    let mut rankers = vec!["bm25", "vector", "hybrid"];
    if !j["rerank"].is_null() {
        rankers.push("rerank");
    }
    for r in rankers {
        let means = j[r].as_array().unwrap();
        assert_eq!(means.len(), ks.len(), "{r}");
        for (i, &k) in ks.iter().enumerate() {
            let each: Vec<Metrics> = per_query
                .iter()
                .map(|q| metrics_of(&q[r]["metrics"][i]))
                .collect();
            let want = metrics::mean(k, &each);
            let got = metrics_of(&means[i]);
            assert_eq!(got.k, k);
            for (a, b, m) in [
                (got.ndcg, want.ndcg, "ndcg"),
                (got.map, want.map, "map"),
                (got.recall, want.recall, "recall"),
                (got.mrr, want.mrr, "mrr"),
            ] {
                close(a, b, &format!("mean {r} {m}@{k}"));
            }
        }
        for q in per_query {
            check_query(q, r, &ks);
        }
    }
}

fn check_query(q: &Value, r: &str, ks: &[usize]) {
    let judged: Vec<(String, u32)> = q["judged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["doc"].as_str().unwrap().to_string(),
                d["grade"].as_u64().unwrap() as u32,
            )
        })
        .collect();
    let ranking: Vec<String> = q[r]["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap().to_string())
        .collect();
    let ranked = q[r]["ranked"].as_u64().unwrap() as usize;
    assert_eq!(ranking.len(), ranked.min(10), "{q}");
    let eval = QueryEval::new(&ranking, &judged);
    for (i, &k) in ks.iter().enumerate() {
        let got = metrics_of(&q[r]["metrics"][i]);
        let want = eval.at(k);
        let what = |m: &str| format!("{} {r} {m}@{k}", q["id"]);
        close(got.ndcg, want.ndcg, &what("ndcg"));
        close(got.map, want.map, &what("map"));
        close(got.recall, want.recall, &what("recall"));
        close(got.precision, want.precision, &what("precision"));
        close(got.mrr, want.mrr, &what("mrr"));
        // recip_rank has no cutoff: 1 / the best rank of a relevant document, from their places.
        let best = q["judged"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["grade"].as_u64().unwrap() > 0)
            .filter_map(|d| d[r]["rank"].as_u64())
            .min();
        close(
            got.recip_rank,
            best.map_or(0.0, |b| 1.0 / b as f64),
            &what("recip_rank"),
        );
    }
    for d in q["judged"].as_array().unwrap() {
        let Some(rank) = d[r]["rank"].as_u64() else {
            continue;
        };
        let rank = rank as usize;
        assert!(rank <= ranked, "{d}");
        if rank <= ranking.len() {
            assert_eq!(ranking[rank - 1], d["doc"].as_str().unwrap(), "{q}");
        }
        assert!(d[r]["chunk_rank"].as_u64().unwrap() as usize >= rank, "{d}");
        assert_eq!(d[r]["file"], d["doc"], "{d}");
    }
}

#[test]
fn a_beir_folder_is_corpus_and_cases() {
    let dir = beir_folder("beir");
    let d = dir.to_str().unwrap();
    // Every command reads corpus.jsonl as the corpus, each document named by its _id.
    let o = run(&["audit", d, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut files: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    files.sort();
    let mut want = example_files();
    want.sort();
    assert_eq!(files, want.iter().map(String::as_str).collect::<Vec<_>>());

    let o = run(&["eval", d, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["results"].as_array().unwrap().len(), 0, "no answer spans");
    let j = &v["judged"];
    check_judged(j, QUERIES.len());
    assert_eq!(
        j["not_in_corpus"],
        serde_json::json!(["runbooks/retired.md"])
    );
    let q5 = &j["per_query"][4];
    let retired = &q5["judged"].as_array().unwrap()[2];
    assert_eq!(retired["doc"], "runbooks/retired.md");
    assert_eq!(retired["in_corpus"], false);
    assert!(retired["vector"].is_null());
    // BM25 finds the refund policy for its own words at rank 1.
    assert_eq!(j["per_query"][1]["judged"][0]["bm25"]["rank"], 1);

    let o = run(&["eval", d]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    for want in [
        "a document ranks at its best chunk (as MTEB's chunked evaluation)",
        "| retriever | nDCG@10 | MAP@10 | recall@1 | recall@3 | recall@5 | recall@10 | MRR@10 |",
        "| vector |",
        "cut by the window (TAIL)",
    ] {
        assert!(text.contains(want), "{want} in {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_query_log_against_the_examples() {
    let d = tmp("log");
    let log = d.join("log.jsonl");
    let lines = [
        serde_json::json!({"query": "How often are the regional RSA response signing keys rotated?",
            "relevant": ["./runbooks/rotate-keys.md"], "answer": "every 90 days"}),
        serde_json::json!({"id": "faq", "query": "Until what time can you deploy on a Friday?",
            "relevant": {"notes/oncall-faq.txt": 2, "docs/deploy.rst": 1}}),
        serde_json::json!({"query": "When is the postmortem draft due?",
            "relevant": [common::repo().join("examples/guides/incident-handbook.md")],
            "answer": "zebra quartz"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&log, text).unwrap();
    let examples = common::repo().join("examples");
    let o = run(&[
        "eval",
        examples.to_str().unwrap(),
        "--judgments",
        log.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let j = &v["judged"];
    check_judged(j, 3);
    // "./a.md" and an absolute path both name the corpus's documents.
    assert_eq!(
        j["per_query"][0]["judged"][0]["doc"],
        "runbooks/rotate-keys.md"
    );
    assert_eq!(
        j["per_query"][2]["judged"][0]["doc"],
        "guides/incident-handbook.md"
    );
    assert!(j["not_in_corpus"].as_array().unwrap().is_empty());
    // The answer that is in its document became a span case, bucketed as its judged document.
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(
        results[0]["bucket"],
        j["per_query"][0]["judged"][0]["answer_at"]
    );
    // The one that is not is listed by its position, and still counts in the judged measures.
    assert!(
        stderr(&o).contains("log.jsonl:3: query \"3\": answer not found"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_malformed_qrels_line_names_file_and_line() {
    let dir = beir_folder("badqrels");
    let qrels = dir.join("qrels/test.tsv");
    let mut text = std::fs::read_to_string(&qrels).unwrap();
    text.insert_str(
        text.find('\n').unwrap() + 1,
        "q1\trunbooks/rotate-keys.md\n",
    );
    std::fs::write(&qrels, text).unwrap();
    let o = run(&["eval", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let want = format!("{}:2: expected query-id", qrels.display());
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    // A split the folder lacks names the ones it has.
    let o = run(&["eval", dir.to_str().unwrap(), "--split", "dev"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no qrels/dev.tsv (splits there: test)"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The workbench's cases for a BEIR corpus: its qrels of the split.
#[test]
fn the_workbench_reads_a_beir_folders_qrels() {
    let dir = beir_folder("workbench");
    let cases = chunkscope::cli::eval::workbench_cases(&dir, None, "test");
    assert_eq!(cases, Some(dir.join("qrels/test.tsv")));
    let cases = chunkscope::cli::eval::workbench_cases(Path::new("."), Some(dir.clone()), "dev");
    assert_eq!(cases, Some(dir.join("qrels/dev.tsv")));
    assert_eq!(
        chunkscope::cli::eval::workbench_cases(&common::repo().join("examples"), None, "test"),
        None
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A CrossEncoder folder reranks every judged query's candidates as a fourth retriever: its
/// measures recomputed from its rankings like the others', each ranking the document order of
/// `query --rerank` for the same query (whose scores tests/rerank.rs checks against the
/// reranker), its time per query reported; an answer span gets a rerank rank too.
#[test]
fn a_reranker_is_a_fourth_retriever() {
    let dir = beir_folder("rerank");
    let d = dir.to_str().unwrap();
    let rr = common::repo().join("tests/fixtures/tiny-rerankers/bert-sigmoid");
    let rr = rr.to_str().unwrap();
    let o = run(&["eval", d, "--rerank", rr, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let j = &v["judged"];
    assert!(j["rerank"].is_array(), "{j}");
    check_judged(j, QUERIES.len());
    let run_info = &v["reranker"];
    assert_eq!(run_info["queries"], QUERIES.len());
    assert_eq!(run_info["candidates"], 50);
    assert!(run_info["mean_millis"].as_f64().unwrap() > 0.0);
    for (i, (_, text, _)) in QUERIES.iter().enumerate().take(2) {
        let o = run(&[
            "query", d, text, "--rerank", rr, "--k", "1000", "--format", "json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let q: Value = serde_json::from_slice(&o.stdout).unwrap();
        let mut docs: Vec<String> = Vec::new();
        for h in q["rerank"].as_array().unwrap() {
            let f = h["file"].as_str().unwrap().to_string();
            if !docs.contains(&f) {
                docs.push(f);
            }
        }
        docs.truncate(10);
        let ranking: Vec<String> = j["per_query"][i]["rerank"]["ranking"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap().to_string())
            .collect();
        assert_eq!(ranking, docs, "query {text:?}");
    }
    let o = run(&["eval", d, "--rerank", rr]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    for want in [
        "| rerank |",
        "ms per query",
        "pairs cut by the window",
        "rerank ",
    ] {
        assert!(text.contains(want), "{want} in {text}");
    }
    // Answer spans: the reranker's rank beside the others', and its recall.
    let log = dir.join("log.jsonl");
    let line = serde_json::json!({"query": "How often are the regional RSA response signing keys rotated?",
        "relevant": ["runbooks/rotate-keys.md"], "answer": "every 90 days"});
    std::fs::write(&log, format!("{line}\n")).unwrap();
    let examples = common::repo().join("examples");
    let o = run(&[
        "eval",
        examples.to_str().unwrap(),
        "--judgments",
        log.to_str().unwrap(),
        "--rerank",
        rr,
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let case = &v["results"][0];
    let rank = case["rerank_rank"].as_u64();
    let at5 = v["rerank"]["at"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p[0] == 5)
        .unwrap()[1]
        .as_f64()
        .unwrap();
    assert_eq!(
        at5,
        if rank.is_some_and(|r| r <= 5) {
            1.0
        } else {
            0.0
        },
        "{case}"
    );
    assert!(
        v["by_bucket"][0]["rerank"].is_object(),
        "{}",
        v["by_bucket"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
