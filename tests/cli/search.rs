//! Search and evaluation from the command line: hits placed in their chunks, vectors written,
//! recall by bucket and malformed cases listed by line.

use super::*;

#[test]
fn query_json_places_hits_and_embed_writes_vectors() {
    let o = run(&[
        "query",
        &examples(),
        "which flag rolls back the gateway deployment",
        "--k",
        "3",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for side in ["bm25", "vector"] {
        let hits = v[side].as_array().unwrap();
        assert_eq!(hits.len(), 3, "{side}");
        for h in hits {
            for key in [
                "rank",
                "score",
                "file",
                "chunk",
                "heading",
                "token_offset",
                "in_tail",
                "only_here",
            ] {
                assert!(h.get(key).is_some(), "{side} hit lacks {key}");
            }
        }
    }
    // Second run: every vector comes from the cache.
    let o = run(&[
        "query",
        &examples(),
        "refund window for annual plans",
        "--format",
        "json",
    ]);
    assert!(stderr(&o).contains("nothing embedded"), "{}", stderr(&o));

    let o = run(&[
        "embed",
        &examples(),
        "--format",
        "jsonl",
        "--preset",
        "langchain-tokens",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let vec: Vec<f64> = v["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(vec.len(), 384);
        let norm: f64 = vec.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "norm {norm}");
    }
}

#[test]
fn eval_reports_buckets_and_min_recall_sets_the_exit_code() {
    let o = run(&["eval", &examples(), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), common::example_cases());
    // Every case with its answer past the window of its chunk is in the tail bucket, and the
    // vector retriever's misses there say so.
    for r in results {
        if r["bucket"] == "in-the-tail" {
            // Its last token lies past the window: position 127 and on ([CLS] = 0).
            let n = common::tokenizer().count(r["answer"].as_str().unwrap()) as u64;
            assert!(r["answer_token"].as_u64().unwrap() + n > 127, "{r}");
            if let Some(m) = r["vector_miss"].as_object() {
                assert_eq!(m["reason"], "answer-in-the-tail", "{r}");
            }
        }
    }
    let o = run(&[
        "eval",
        &examples(),
        "--min-recall",
        "0.99",
        "--retriever",
        "vector",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("below --min-recall"));
    let o = run(&[
        "eval",
        &examples(),
        "--min-recall",
        "0.5",
        "--retriever",
        "bm25",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn malformed_cases_are_listed_by_line() {
    let d = tmp("cases");
    let cases = d.join("cases.tsv");
    std::fs::write(
        &cases,
        "Which tool is used?\tnwctl\nno tab on this line\nEmpty answer?\t\nMissing?\tzebra quartz\n",
    )
    .unwrap();
    let o = run(&["eval", &examples(), "--cases", cases.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    for want in [
        ":2: no TAB",
        ":3: empty answer span",
        ":4: answer span found nowhere",
    ] {
        assert!(e.contains(want), "{want} in {e}");
    }
    std::fs::write(&cases, "only\tbad\tlines\textra\n").unwrap();
    let o = run(&["eval", &examples(), "--cases", cases.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no usable cases"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&d);
}
