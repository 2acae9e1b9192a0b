//! Ranking metrics over documents against graded judgments, computed as trec_eval 10.0 (and
//! pytrec_eval, which embeds it) computes them at its default relevance level 1: `ndcg_cut`,
//! `map_cut`, `recall`, `P` and `recip_rank`, per query, plus MRR@k.
//!
//! A ranking is a list of document ids, best first, each document once: a document ranks where
//! its best chunk ranks ([`doc_ranking`]). A judged grade of 0 means judged not relevant; a
//! document without a judgment counts as not relevant. A query without relevant documents (all
//! grades 0) scores 0 on every measure, as in trec_eval.
//!
//! Means ([`mean`]) are over every judged query, a query whose ranking is empty scoring 0. That
//! is pytrec_eval's mean when the run names every judged query (an empty ranking included);
//! trec_eval's own mean, without `-c`, leaves out queries absent from the run file.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

/// Documents in the order their chunks were hit, each at its first (best) hit: the document
/// ranking of a chunk ranking.
pub fn doc_ranking<'a>(chunk_hits: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for doc in chunk_hits {
        if seen.insert(doc) {
            out.push(doc.to_string());
        }
    }
    out
}

/// One query's ranking reduced to what trec_eval measures (its `res_rels`): the grade of each
/// ranked document and the grades of all relevant documents.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryEval {
    /// The grade of each ranked document, best first (0: judged not relevant, or unjudged).
    ranked: Vec<u32>,
    /// The grades of every relevant judged document (grade > 0), highest first.
    ideal: Vec<u32>,
}

impl QueryEval {
    /// `ranking`: document ids best first (a repeated id counts at its first place only);
    /// `judged`: document id and grade (a repeated id takes its last grade).
    pub fn new<S: AsRef<str>>(ranking: &[S], judged: &[(String, u32)]) -> QueryEval {
        let grades: HashMap<&str, u32> = judged.iter().map(|(d, g)| (d.as_str(), *g)).collect();
        let mut ideal: Vec<u32> = grades.values().copied().filter(|&g| g > 0).collect();
        ideal.sort_unstable_by(|a, b| b.cmp(a));
        let ranked = doc_ranking(ranking.iter().map(|d| d.as_ref()))
            .iter()
            .map(|d| grades.get(d.as_str()).copied().unwrap_or(0))
            .collect();
        QueryEval { ranked, ideal }
    }

    /// Relevant judged documents (trec_eval's `num_rel`).
    pub fn num_rel(&self) -> usize {
        self.ideal.len()
    }

    /// Documents ranked (trec_eval's `num_ret`).
    pub fn num_ret(&self) -> usize {
        self.ranked.len()
    }

    /// Relevant documents among the first `k`.
    fn rel_ret(&self, k: usize) -> usize {
        self.ranked.iter().take(k).filter(|&&g| g > 0).count()
    }

    /// trec_eval's `ndcg_cut.k`: DCG of the first `k` over the ideal DCG at `k`, the gain of a
    /// document its grade (linear, not 2^g - 1), rank r (1-based) discounted by log2(r + 1), the
    /// ideal ranking every relevant judged document by grade. 0 when nothing is relevant.
    pub fn ndcg_cut(&self, k: usize) -> f64 {
        let dcg = |grades: &[u32]| -> f64 {
            let mut sum = 0.0;
            for (i, &g) in grades.iter().take(k).enumerate() {
                if g > 0 {
                    sum += g as f64 / ((i + 2) as f64).log2();
                }
            }
            sum
        };
        let ideal = dcg(&self.ideal);
        if ideal > 0.0 {
            dcg(&self.ranked) / ideal
        } else {
            0.0
        }
    }

    /// trec_eval's `map_cut.k`: the precision at each relevant document within the first `k`,
    /// summed and divided by the number of relevant documents (all of them, not at most `k`).
    /// 0 when nothing is relevant.
    pub fn map_cut(&self, k: usize) -> f64 {
        if self.ideal.is_empty() {
            return 0.0;
        }
        let (mut found, mut sum) = (0usize, 0.0);
        for (i, &g) in self.ranked.iter().take(k).enumerate() {
            if g > 0 {
                found += 1;
                sum += found as f64 / (i + 1) as f64;
            }
        }
        sum / self.ideal.len() as f64
    }

    /// trec_eval's `recall.k`: relevant documents within the first `k` over all relevant
    /// documents. 0 when nothing is relevant.
    pub fn recall(&self, k: usize) -> f64 {
        if self.ideal.is_empty() {
            return 0.0;
        }
        self.rel_ret(k) as f64 / self.ideal.len() as f64
    }

    /// trec_eval's `P.k`: relevant documents within the first `k` over `k` (a ranking shorter
    /// than `k` is padded with non-relevant ones). 0 for `k` = 0.
    pub fn precision(&self, k: usize) -> f64 {
        if k == 0 {
            return 0.0;
        }
        self.rel_ret(k) as f64 / k as f64
    }

    /// trec_eval's `recip_rank`: 1 / the rank of the first relevant document, anywhere in the
    /// ranking (no cutoff); 0 when none is ranked.
    pub fn recip_rank(&self) -> f64 {
        self.recip_rank_cut(usize::MAX)
    }

    /// MRR@k: `recip_rank` of the first `k` (0 when the first relevant document ranks past `k`).
    /// trec_eval has no cutoff for it; this is its `recip_rank` over the ranking cut to `k`.
    pub fn recip_rank_cut(&self, k: usize) -> f64 {
        match self.ranked.iter().take(k).position(|&g| g > 0) {
            Some(i) => 1.0 / (i + 1) as f64,
            None => 0.0,
        }
    }

    /// Every measure at cutoff `k`.
    pub fn at(&self, k: usize) -> Metrics {
        Metrics {
            k,
            ndcg: self.ndcg_cut(k),
            map: self.map_cut(k),
            recall: self.recall(k),
            precision: self.precision(k),
            mrr: self.recip_rank_cut(k),
            recip_rank: self.recip_rank(),
        }
    }
}

/// One query's measures at cutoff `k` (or their mean over queries).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Metrics {
    pub k: usize,
    /// `ndcg_cut_k`
    pub ndcg: f64,
    /// `map_cut_k`
    pub map: f64,
    /// `recall_k`
    pub recall: f64,
    /// `P_k`
    pub precision: f64,
    /// MRR@k (`recip_rank` of the ranking cut to `k`)
    pub mrr: f64,
    /// `recip_rank` (no cutoff)
    pub recip_rank: f64,
}

/// The mean of each measure over `per_query` (every judged query, each measured at `k`; a query
/// with an empty ranking is there with 0s). All 0 when there is no query.
pub fn mean(k: usize, per_query: &[Metrics]) -> Metrics {
    let mut m = Metrics {
        k,
        ..Metrics::default()
    };
    if per_query.is_empty() {
        return m;
    }
    for q in per_query {
        debug_assert_eq!(q.k, k, "means are taken at one cutoff");
        m.ndcg += q.ndcg;
        m.map += q.map;
        m.recall += q.recall;
        m.precision += q.precision;
        m.mrr += q.mrr;
        m.recip_rank += q.recip_rank;
    }
    let n = per_query.len() as f64;
    m.ndcg /= n;
    m.map /= n;
    m.recall /= n;
    m.precision /= n;
    m.mrr /= n;
    m.recip_rank /= n;
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(pairs: &[(&str, u32)]) -> Vec<(String, u32)> {
        pairs.iter().map(|(d, g)| (d.to_string(), *g)).collect()
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    #[test]
    fn doc_ranking_keeps_first_hit() {
        let hits = ["b", "a", "b", "c", "a"];
        assert_eq!(doc_ranking(hits), ["b", "a", "c"]);
        assert!(doc_ranking(std::iter::empty::<&str>()).is_empty());
    }

    #[test]
    fn hand_computed_graded_query() {
        // Judged: d1 = 2, d2 = 1, d3 = 0 (judged not relevant), d4 = 3 never retrieved.
        let j = judged(&[("d1", 2), ("d2", 1), ("d3", 0), ("d4", 3)]);
        // Ranked: d3 (0), x (unjudged), d2 (1), d1 (2).
        let q = QueryEval::new(&["d3", "x", "d2", "d1"], &j);
        assert_eq!((q.num_rel(), q.num_ret()), (3, 4));
        // The discount of 1-based rank r.
        let l = |r: f64| (r + 1.0).log2();
        // DCG@3 = 1/log2(4) = 0.5; IDCG@3 = 3 + 2/log2(3) + 1/2.
        close(q.ndcg_cut(3), 0.5 / (3.0 + 2.0 / l(2.0) + 1.0 / l(3.0)));
        // DCG@4 = 0.5 + 2/log2(5); IDCG@4 = IDCG@3 (only three relevant).
        close(
            q.ndcg_cut(4),
            (0.5 + 2.0 / l(4.0)) / (3.0 + 2.0 / l(2.0) + 1.0 / l(3.0)),
        );
        close(q.ndcg_cut(2), 0.0);
        // map_cut: precision 1/3 at rank 3, 2/4 at rank 4, over 3 relevant.
        close(q.map_cut(2), 0.0);
        close(q.map_cut(3), (1.0 / 3.0) / 3.0);
        close(q.map_cut(10), (1.0 / 3.0 + 2.0 / 4.0) / 3.0);
        close(q.recall(3), 1.0 / 3.0);
        close(q.recall(10), 2.0 / 3.0);
        close(q.precision(4), 0.5);
        close(q.precision(10), 0.2); // padded with non-relevant
        close(q.recip_rank(), 1.0 / 3.0);
        close(q.recip_rank_cut(2), 0.0);
        close(q.recip_rank_cut(3), 1.0 / 3.0);
    }

    #[test]
    fn perfect_ranking_is_one() {
        let j = judged(&[("a", 3), ("b", 2), ("c", 2), ("d", 1)]);
        let q = QueryEval::new(&["a", "b", "c", "d", "e"], &j);
        for k in 1..=6 {
            close(q.ndcg_cut(k), 1.0);
            close(q.recip_rank_cut(k), 1.0);
        }
        close(q.map_cut(4), 1.0);
        close(q.map_cut(2), 0.5); // 2 of 4 relevant found, both at precision 1
        close(q.recall(5), 1.0);
        // Ties in grade: swapping b and c changes nothing; linear gains, not 2^g - 1.
        let swapped = QueryEval::new(&["a", "c", "b", "d"], &j);
        close(swapped.ndcg_cut(3), 1.0);
        let wrong = QueryEval::new(&["d", "a"], &j);
        let idcg2 = 3.0 + 2.0 / 3f64.log2();
        close(wrong.ndcg_cut(2), (1.0 + 3.0 / 3f64.log2()) / idcg2);
    }

    #[test]
    fn nothing_relevant_or_nothing_ranked_is_zero() {
        let none_rel = QueryEval::new(&["a", "b"], &judged(&[("a", 0), ("b", 0)]));
        let empty = QueryEval::new::<&str>(&[], &judged(&[("a", 1)]));
        for q in [none_rel, empty] {
            let m = q.at(5);
            assert_eq!(
                (m.ndcg, m.map, m.recall, m.precision, m.mrr, m.recip_rank),
                (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
            );
        }
        let q = QueryEval::new(&["a"], &judged(&[("a", 1)]));
        assert_eq!(q.precision(0), 0.0);
        assert_eq!(q.ndcg_cut(0), 0.0);
    }

    #[test]
    fn repeated_ids_count_once() {
        // "a" twice in the ranking ranks at its first place; a repeated judgment keeps the last.
        let q = QueryEval::new(
            &["x", "a", "a", "b"],
            &judged(&[("a", 2), ("b", 1), ("b", 0)]),
        );
        assert_eq!(q.num_ret(), 3);
        assert_eq!(q.num_rel(), 1);
        close(q.recip_rank(), 0.5);
        close(q.precision(3), 1.0 / 3.0);
    }

    #[test]
    fn mean_over_all_queries() {
        let a = QueryEval::new(&["a"], &judged(&[("a", 1)])).at(1);
        let b = QueryEval::new::<&str>(&[], &judged(&[("b", 1)])).at(1);
        let m = mean(1, &[a, b]);
        close(m.ndcg, 0.5);
        close(m.map, 0.5);
        close(m.recall, 0.5);
        close(m.precision, 0.5);
        close(m.mrr, 0.5);
        assert_eq!(
            mean(3, &[]),
            Metrics {
                k: 3,
                ..Metrics::default()
            }
        );
    }
}
