//! Building the graph: a snapshot of the vectors, inserted in batches (on a thread of its own,
//! cancellable between batches), then its recall@10 measured against exact search.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use hnsw_rs::hnsw::Hnsw;

use super::{push_bf16, sample_rows, AnnIndex, AnnParams, AnnStats, UnitDot};
use crate::index::vector::VectorIndex;

/// A build to run: a snapshot of the vectors (shared, not copied) and the parameters.
pub struct AnnJob {
    data: Arc<Vec<f32>>,
    dim: usize,
    rows: usize,
    stamp: u64,
    params: AnnParams,
}

/// A build running on its own thread; dropping it cancels it.
pub struct AnnBuild {
    cancel: Arc<AtomicBool>,
    handle: Option<JoinHandle<Option<AnnIndex>>>,
    stamp: u64,
}

impl AnnBuild {
    /// True once the thread has finished (built, or stopped by a cancel).
    pub fn is_finished(&self) -> bool {
        self.handle.as_ref().is_none_or(|h| h.is_finished())
    }

    /// Stamp of the vectors being indexed.
    pub fn stamp(&self) -> u64 {
        self.stamp
    }

    /// Ask the build to stop at its next batch of insertions.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// Wait for the build; `None` when it was cancelled or panicked.
    pub fn join(mut self) -> Option<AnnIndex> {
        let h = self.handle.take()?;
        match h.join() {
            Ok(ann) => ann,
            Err(_) => {
                log::error!("the approximate index build panicked");
                None
            }
        }
    }
}

impl Drop for AnnBuild {
    fn drop(&mut self) {
        self.cancel();
    }
}

/// Rows inserted between two looks at the cancel flag.
const BATCH: usize = 8192;

impl AnnJob {
    /// Snapshot `vectors` for a build.
    pub fn new(vectors: &VectorIndex, params: AnnParams) -> AnnJob {
        AnnJob {
            data: vectors.shared_data(),
            dim: vectors.dim(),
            rows: vectors.len(),
            stamp: vectors.stamp(),
            params,
        }
    }

    pub fn stamp(&self) -> u64 {
        self.stamp
    }

    /// Build here (on rayon's pool), then measure recall@10.
    pub fn run(self) -> AnnIndex {
        self.run_cancellable(&AtomicBool::new(false))
            .expect("not cancelled")
    }

    /// Build on a thread of its own.
    pub fn spawn(self) -> AnnBuild {
        let cancel = Arc::new(AtomicBool::new(false));
        let stamp = self.stamp;
        let flag = Arc::clone(&cancel);
        let handle = std::thread::Builder::new()
            .name("ann-build".into())
            .spawn(move || self.run_cancellable(&flag))
            .map_err(|e| log::error!("cannot start the approximate index build: {e}"))
            .ok();
        AnnBuild {
            cancel,
            handle,
            stamp,
        }
    }

    fn run_cancellable(self, cancel: &AtomicBool) -> Option<AnnIndex> {
        let started = Instant::now();
        let dim = self.dim.max(1);
        let p = self.params;
        let hnsw = Hnsw::<u16, UnitDot>::new(
            p.max_connections.clamp(2, 255),
            self.rows.max(1),
            16,
            p.ef_construction.max(1),
            UnitDot,
        );
        // A zero vector is a chunk the embedder refused: never a hit, so not in the graph.
        let nonzero: Vec<usize> = self
            .data
            .chunks_exact(dim)
            .take(self.rows)
            .enumerate()
            .filter(|(_, v)| v.iter().any(|x| *x != 0.0))
            .map(|(r, _)| r)
            .collect();
        let covered = nonzero.len();
        let (rows, copies) = distinct_rows(&self.data, dim, nonzero);
        let mut rounded = Vec::with_capacity(BATCH.min(rows.len()) * dim);
        for batch in rows.chunks(BATCH) {
            if cancel.load(Ordering::Relaxed) {
                return None;
            }
            // The graph copies each vector in; the batch's bf16 rows are only lent to it.
            rounded.clear();
            for &r in batch {
                push_bf16(&self.data[r * dim..(r + 1) * dim], &mut rounded);
            }
            let lent: Vec<(&[u16], usize)> = rounded
                .chunks_exact(dim)
                .zip(batch.iter().copied())
                .collect();
            hnsw.parallel_insert_slice(&lent);
        }
        let mut hnsw = hnsw;
        hnsw.set_searching_mode(true);
        let build_seconds = started.elapsed().as_secs_f64();
        let mut ann = AnnIndex {
            hnsw,
            copies,
            stamp: self.stamp,
            params: p,
            stats: AnnStats {
                vectors: covered,
                dim: self.dim,
                build_seconds,
                recall_at_10: 0.0,
                recall_queries: 0,
                recall_seconds: 0.0,
            },
        };
        drop(rows);
        if cancel.load(Ordering::Relaxed) {
            return None;
        }
        let t = Instant::now();
        let queries = sample_rows(&self.data, dim, self.rows, p.recall_sample, p.seed);
        let recall = ann.recall_on(&self.data, dim, self.rows, &queries, 10);
        ann.stats.recall_at_10 = recall;
        ann.stats.recall_queries = queries.len() / dim;
        ann.stats.recall_seconds = t.elapsed().as_secs_f64();
        log::info!(
            "approximate index: {} vectors in {:.1} s, recall@10 {:.3} ({} queries, {:.1} s)",
            ann.stats.vectors,
            build_seconds,
            recall,
            ann.stats.recall_queries,
            ann.stats.recall_seconds
        );
        Some(ann)
    }
}

/// The rows to put in the graph, one per distinct vector (its first row), and the later rows of
/// each vector stored more than once, ascending. A store can hold one chunk thousands of times;
/// in the graph those copies would fill each other's neighbour lists at distance zero and crowd a
/// search's candidates.
fn distinct_rows(
    data: &[f32],
    dim: usize,
    rows: Vec<usize>,
) -> (Vec<usize>, HashMap<usize, Vec<usize>>) {
    let row = |r: usize| &data[r * dim..(r + 1) * dim];
    let hasher = std::collections::hash_map::RandomState::new();
    let mut firsts: HashMap<u64, Vec<usize>> = HashMap::with_capacity(rows.len());
    let mut copies: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut distinct = Vec::with_capacity(rows.len());
    for r in rows {
        let mut h = hasher.build_hasher();
        row(r).iter().for_each(|x| h.write_u32(x.to_bits()));
        let same = firsts.entry(h.finish()).or_default();
        match same.iter().find(|&&f| row(f) == row(r)) {
            Some(&f) => copies.entry(f).or_default().push(r),
            None => {
                same.push(r);
                distinct.push(r);
            }
        }
    }
    (distinct, copies)
}
