//! The ranking metrics of `chunkscope_core::metrics` against pytrec_eval (trec_eval inside), per
//! query and per measure within 1e-9, over random graded judgments: grades 0..3 with ties,
//! queries with nothing relevant, empty rankings and rankings shorter than k, relevant documents
//! never retrieved, unjudged documents retrieved, chunk hits repeating a document.
//! tests/reference/trec_metrics.py runs under `CHUNKSCOPE_REF_PYTHON` (else .venv-ref's Python),
//! which needs pytrec-eval-terrier.

mod common;

use std::path::PathBuf;

use serde_json::{json, Map, Value};

use chunkscope_core::metrics::{doc_ranking, mean, Metrics, QueryEval};

const TEST: &str = "metrics::measures_agree_with_pytrec_eval";
const KS: [usize; 5] = [1, 3, 5, 10, 20];

/// .venv-ref's Python, or `CHUNKSCOPE_REF_PYTHON`.
fn reference_python() -> PathBuf {
    std::env::var_os("CHUNKSCOPE_REF_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::repo().join(".venv-ref/bin/python"))
}

/// SplitMix64: the same cases on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

struct Case {
    id: String,
    judged: Vec<(String, u32)>,
    ranking: Vec<String>,
}

fn random_cases(rng: &mut Rng, n: usize) -> Vec<Case> {
    (0..n)
        .map(|i| {
            let pool = 1 + rng.below(30);
            let docs: Vec<String> = (0..pool).map(|d| format!("d{d}")).collect();
            // Judge a random subset, grades 0..3; some queries have nothing relevant.
            let nothing_relevant = i % 7 == 3;
            let mut judged: Vec<(String, u32)> = Vec::new();
            for d in &docs {
                if rng.below(3) > 0 {
                    let g = if nothing_relevant { 0 } else { rng.below(4) };
                    judged.push((d.clone(), g as u32));
                }
            }
            if judged.is_empty() {
                judged.push((docs[0].clone(), u32::from(!nothing_relevant)));
            }
            // Chunk hits: judged and unjudged documents, repeats included, as long as 0..40;
            // some queries retrieve nothing.
            let hits = if i % 11 == 5 { 0 } else { rng.below(41) };
            let mut chunk_hits: Vec<String> = Vec::new();
            for _ in 0..hits {
                if rng.below(4) == 0 {
                    chunk_hits.push(format!("u{}", rng.below(50)));
                } else {
                    chunk_hits.push(docs[rng.below(pool)].clone());
                }
            }
            Case {
                id: format!("q{i}"),
                judged,
                ranking: doc_ranking(chunk_hits.iter().map(String::as_str)),
            }
        })
        .collect()
}

fn ours(q: &QueryEval, measure: &str, k: usize) -> f64 {
    match measure {
        "ndcg_cut" => q.ndcg_cut(k),
        "map_cut" => q.map_cut(k),
        "recall" => q.recall(k),
        "P" => q.precision(k),
        "recip_rank_cut" => q.recip_rank_cut(k),
        _ => unreachable!("{measure}"),
    }
}

#[test]
fn measures_agree_with_pytrec_eval() {
    let py = reference_python();
    let importable = std::process::Command::new(&py)
        .args(["-c", "import pytrec_eval"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !importable {
        common::skip(
            TEST,
            &format!(
                "{} cannot import pytrec_eval (pip install pytrec-eval-terrier there; or set CHUNKSCOPE_REF_PYTHON)",
                py.display()
            ),
        );
        return;
    }
    let mut rng = Rng(25);
    let cases = random_cases(&mut rng, 300);
    let (mut qrels, mut run) = (Map::new(), Map::new());
    for c in &cases {
        let grades: Map<String, Value> = c
            .judged
            .iter()
            .map(|(d, g)| (d.clone(), json!(g)))
            .collect();
        qrels.insert(c.id.clone(), Value::Object(grades));
        run.insert(c.id.clone(), json!(c.ranking));
    }
    let want = common::python_with(
        &py,
        "trec_metrics.py",
        &json!({"qrels": qrels, "run": run, "ks": KS}),
    );
    eprintln!(
        "pytrec-eval-terrier {}",
        want["version"].as_str().unwrap_or("?")
    );
    let per_query = want["per_query"].as_object().expect("per_query");
    assert_eq!(per_query.len(), cases.len(), "every query measured");

    let mut compared = 0;
    let mut per_k: Vec<Vec<Metrics>> = vec![Vec::new(); KS.len()];
    for c in &cases {
        let q = QueryEval::new(&c.ranking, &c.judged);
        let theirs = &per_query[&c.id];
        let check = |name: String, value: f64| {
            let r = theirs[&name]
                .as_f64()
                .unwrap_or_else(|| panic!("{}: no {name}", c.id));
            assert!(
                (value - r).abs() <= 1e-9,
                "{} {name}: ours {value}, pytrec_eval {r}\nranking {:?}\njudged {:?}",
                c.id,
                c.ranking,
                c.judged
            );
        };
        check("recip_rank".into(), q.recip_rank());
        compared += 1;
        for (i, &k) in KS.iter().enumerate() {
            for measure in ["ndcg_cut", "map_cut", "recall", "P", "recip_rank_cut"] {
                check(format!("{measure}_{k}"), ours(&q, measure, k));
                compared += 1;
            }
            per_k[i].push(q.at(k));
        }
    }
    // Our means are over every judged query; the run named them all, so they are pytrec_eval's.
    for (i, &k) in KS.iter().enumerate() {
        let m = mean(k, &per_k[i]);
        let theirs = |name: &str| {
            per_query
                .values()
                .map(|v| v[name].as_f64().unwrap())
                .sum::<f64>()
                / per_query.len() as f64
        };
        for (ours, name) in [
            (m.ndcg, format!("ndcg_cut_{k}")),
            (m.map, format!("map_cut_{k}")),
            (m.recall, format!("recall_{k}")),
            (m.precision, format!("P_{k}")),
            (m.mrr, format!("recip_rank_cut_{k}")),
            (m.recip_rank, "recip_rank".to_string()),
        ] {
            let r = theirs(&name);
            assert!(
                (ours - r).abs() <= 1e-9,
                "mean {name}: ours {ours}, pytrec_eval {r}"
            );
        }
    }
    // The generator reached the edge cases it is meant to.
    let none_relevant = cases
        .iter()
        .filter(|c| c.judged.iter().all(|j| j.1 == 0))
        .count();
    let empty = cases.iter().filter(|c| c.ranking.is_empty()).count();
    let short = cases.iter().filter(|c| c.ranking.len() < 10).count();
    assert!(
        none_relevant > 10 && empty > 10 && short > 30,
        "{none_relevant} {empty} {short}"
    );
    eprintln!("{compared} per-query values equal to pytrec_eval's");
}
