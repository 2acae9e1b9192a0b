//! Cases that one evaluation retrieved and another did not, per retriever.

use serde::Serialize;

use super::Report;

/// Cases whose answer was retrieved at `k` by one report and not by the other (matched by line
/// and question): (gained, lost) from `a` to `b`, per retriever.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Flips {
    pub k: usize,
    pub bm25: (usize, usize),
    pub vector: (usize, usize),
    pub hybrid: (usize, usize),
    pub rerank: (usize, usize),
}

/// The flips from `a` to `b` at `b`'s k.
pub fn flips(a: &Report, b: &Report) -> Flips {
    let k = b.k;
    let hit = |r: Option<usize>| r.is_some_and(|r| r <= k);
    let mut f = Flips {
        k,
        ..Flips::default()
    };
    for cb in &b.results {
        let Some(ca) = a
            .results
            .iter()
            .find(|x| x.line == cb.line && x.question == cb.question)
        else {
            continue;
        };
        for (slot, ra, rb) in [
            (&mut f.bm25, ca.bm25_rank, cb.bm25_rank),
            (&mut f.vector, ca.vector_rank, cb.vector_rank),
            (&mut f.hybrid, ca.hybrid_rank, cb.hybrid_rank),
            (&mut f.rerank, ca.rerank_rank, cb.rerank_rank),
        ] {
            match (hit(ra), hit(rb)) {
                (false, true) => slot.0 += 1,
                (true, false) => slot.1 += 1,
                _ => {}
            }
        }
    }
    f
}
