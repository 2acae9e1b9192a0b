//! The approximate vector index of a search index: built (here, or on a thread of its own) once
//! the vectors pass the threshold, used only while it describes them, dropped when stale.

use std::sync::atomic::Ordering;

use super::SearchIndex;
use crate::index::ann::{AnnBuild, AnnJob};
use crate::index::{AnnIndex, AnnInfo, AnnStats};

impl SearchIndex {
    /// Forget an approximate index, and stop a build, that no longer describe the vectors: a
    /// stale graph is never searched (search is flat until the next build), so its memory goes.
    pub(super) fn drop_stale_ann(&mut self) {
        let stamp = self.vectors.stamp();
        if self.ann.as_ref().is_some_and(|a| a.stamp() != stamp) {
            self.ann = None;
        }
        if self.ann_build.as_ref().is_some_and(|b| b.stamp() != stamp) {
            // Dropping it cancels it; its thread ends at its next batch.
            self.ann_build = None;
        }
    }

    /// The approximate index when it describes the vectors and they number at least the
    /// threshold.
    fn fresh_ann(&self) -> Option<&AnnIndex> {
        self.ann.as_ref().filter(|a| {
            a.is_fresh(&self.vectors) && self.vectors.len() >= self.ann_params.threshold
        })
    }

    /// True when vector searches are answered by the approximate index now.
    pub fn approximate(&self) -> bool {
        self.fresh_ann().is_some()
    }

    /// True when the last vector search (`vector_top`, `search`) was answered by the approximate
    /// index.
    pub fn last_search_approximate(&self) -> bool {
        self.last_approximate.load(Ordering::Relaxed)
    }

    /// What the approximate index in use measured when built.
    pub fn ann_stats(&self) -> Option<AnnStats> {
        self.fresh_ann().map(AnnIndex::stats)
    }

    /// True when the vectors passed the threshold and no approximate index describes them (nor
    /// is one being built for them).
    pub fn ann_due(&self) -> bool {
        self.vectors.len() >= self.ann_params.threshold
            && self.fresh_ann().is_none()
            && self
                .ann_build
                .as_ref()
                .is_none_or(|b| b.stamp() != self.vectors.stamp())
    }

    /// A build of the approximate index for the vectors as they are, when one is due: run it
    /// anywhere (`AnnJob::run`, or `spawn` for a thread of its own) and hand the result to
    /// `install_ann`. The snapshot shares the vectors, copying nothing.
    pub fn ann_job(&self) -> Option<AnnJob> {
        self.ann_due()
            .then(|| AnnJob::new(&self.vectors, self.ann_params))
    }

    /// Use `ann` if it describes the vectors as they are now (else it is dropped: false).
    pub fn install_ann(&mut self, ann: AnnIndex) -> bool {
        if !ann.is_fresh(&self.vectors) {
            return false;
        }
        self.ann = Some(ann);
        if self
            .ann_build
            .as_ref()
            .is_some_and(|b| b.stamp() == self.vectors.stamp())
        {
            self.ann_build = None;
        }
        true
    }

    /// Build the approximate index now, on this thread, when the vectors passed the threshold;
    /// its figures, also when it was already built. `None` below the threshold.
    pub fn build_ann(&mut self) -> Option<AnnStats> {
        if let Some(job) = self.ann_job() {
            self.ann_build = None;
            self.install_ann(job.run());
        }
        self.ann_stats()
    }

    /// Start building the approximate index on a thread of its own when one is due (the
    /// embedding worker calls it once the vectors are in); `poll_ann` installs it when done.
    /// True while a build for the current vectors runs.
    pub fn start_ann_build(&mut self) -> bool {
        if let Some(job) = self.ann_job() {
            self.ann_build = Some(job.spawn());
        }
        self.ann_build
            .as_ref()
            .is_some_and(|b| b.stamp() == self.vectors.stamp())
    }

    /// Install a background build that has finished; its figures when one was just installed.
    /// Never waits.
    pub fn poll_ann(&mut self) -> Option<AnnStats> {
        if !self.ann_build.as_ref().is_some_and(AnnBuild::is_finished) {
            return None;
        }
        let ann = self.ann_build.take()?.join()?;
        let stats = ann.stats();
        self.install_ann(ann).then_some(stats)
    }

    /// Wait for a background build and install it; its figures.
    pub fn wait_ann(&mut self) -> Option<AnnStats> {
        let ann = self.ann_build.take()?.join()?;
        let stats = ann.stats();
        self.install_ann(ann).then_some(stats)
    }

    /// Recall@10 of the approximate index in use against exact search, measured now with
    /// `sample` of the corpus's own vectors as queries.
    pub fn ann_recall(&self, sample: usize) -> Option<f32> {
        self.fresh_ann()?
            .measure_recall(&self.vectors, sample, self.ann_params.seed)
    }

    /// The `k` nearest chunks to `qv` (ids and cosines, best first): from the approximate index
    /// when it is in use (its candidates rescored exactly, and what it was returned beside),
    /// else by the exact flat scan.
    pub fn vector_top(&self, qv: &[f32], k: usize) -> (Vec<(u64, f32)>, Option<AnnInfo>) {
        let (hits, info) = match self
            .fresh_ann()
            .and_then(|a| a.search(&self.vectors, qv, k))
        {
            Some((hits, info)) => (hits, Some(info)),
            None => (self.vectors.search(qv, k), None),
        };
        self.last_approximate
            .store(info.is_some(), Ordering::Relaxed);
        let hits = hits
            .into_iter()
            .filter_map(|(key, score)| self.ids.get(&key).map(|&id| (id, score)))
            .collect();
        (hits, info)
    }
}
