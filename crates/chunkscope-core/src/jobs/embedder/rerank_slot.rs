//! The worker's reranker: loaded on first use, its failure kept and reported once.

use std::time::Instant;

use super::RerankSetup;
use crate::jobs::JobError;
use crate::rerank::stage::{self, Stage};
use crate::rerank::Reranker;

/// The reranker, loaded on the worker on first use; a failure is kept (and reported once).
pub(super) enum RerankerSlot {
    None,
    Wanted(RerankSetup),
    Loaded(Box<Reranker>, usize),
    Failed(String),
}

impl RerankerSlot {
    /// The reranker and its depth, loaded now if it is wanted and not yet loaded; None when
    /// there is none; the reason when it cannot load.
    pub(super) fn ready(&mut self) -> Result<Option<Stage<'_>>, JobError> {
        if let RerankerSlot::Wanted(setup) = self {
            let started = Instant::now();
            *self = match stage::open(&setup.model, setup.precision) {
                Ok(r) => {
                    log::info!(
                        "reranker {} loaded in {:.2} s",
                        setup.model,
                        started.elapsed().as_secs_f64()
                    );
                    RerankerSlot::Loaded(Box::new(r), setup.candidates)
                }
                Err(e) => RerankerSlot::Failed(e.to_string()),
            };
        }
        match self {
            RerankerSlot::None | RerankerSlot::Wanted(_) => Ok(None),
            RerankerSlot::Loaded(r, candidates) => Ok(Some(Stage {
                reranker: r,
                candidates: *candidates,
            })),
            RerankerSlot::Failed(why) => Err(JobError::Rerank(why.clone())),
        }
    }
}
