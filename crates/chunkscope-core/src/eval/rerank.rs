//! The reranker stage during an evaluation: each query's candidates reordered and timed, and a
//! summary of how it ran.

use serde::Serialize;

use super::EvalError;
use crate::engine::{Chunking, Engine};
use crate::rerank::stage::{self, Stage};
use crate::search::SearchIndex;

/// How the reranker stage ran over an evaluation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RerankRun {
    /// The CrossEncoder folder.
    pub model: String,
    /// Its pair window (query and passage, specials included).
    pub window: usize,
    /// How deep it read into BM25's and the vectors' rankings, each.
    pub candidates: usize,
    pub queries: usize,
    /// Time spent scoring per query: mean and 95th percentile.
    pub mean_millis: f64,
    pub p95_millis: f64,
    /// Pairs scored in all, and of those, how many the pair window cut.
    pub scored: usize,
    pub truncated: usize,
}

/// The reranker stage during an evaluation: each query's order of its candidates, timed.
pub struct RerankMeter<'a> {
    stage: Stage<'a>,
    millis: Vec<f64>,
    scored: usize,
    truncated: usize,
}

impl<'a> RerankMeter<'a> {
    pub fn new(stage: Stage<'a>) -> RerankMeter<'a> {
        RerankMeter {
            stage,
            millis: Vec::new(),
            scored: 0,
            truncated: 0,
        }
    }

    /// The reranked chunk ids of `query`'s candidates (`qv` its vector, empty for none).
    pub(super) fn ranking(
        &mut self,
        index: &SearchIndex,
        searched: (&Engine, &Chunking),
        query: &str,
        qv: &[f32],
    ) -> Result<Vec<u64>, EvalError> {
        let started = std::time::Instant::now();
        let scored = stage::score(self.stage, index, searched, query, qv)?;
        self.millis.push(started.elapsed().as_secs_f64() * 1000.0);
        self.scored += scored.candidates;
        self.truncated += scored.cuts.iter().filter(|c| c.is_some()).count();
        Ok(scored.ids)
    }

    pub(super) fn run(self) -> RerankRun {
        let mut sorted = self.millis.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        RerankRun {
            model: self.stage.reranker.dir().display().to_string(),
            window: self.stage.reranker.pair_window(),
            candidates: self.stage.candidates,
            queries: n,
            mean_millis: if n == 0 {
                0.0
            } else {
                sorted.iter().sum::<f64>() / n as f64
            },
            p95_millis: sorted
                .get((n * 95).div_ceil(100).saturating_sub(1))
                .copied()
                .unwrap_or(0.0),
            scored: self.scored,
            truncated: self.truncated,
        }
    }
}
