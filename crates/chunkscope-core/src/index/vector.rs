//! Exact top-k search by cosine, flat in memory: vectors are stored L2-normalised (a model
//! without a Normalize module gives unnormalised ones) so a dot product is the cosine.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A stamp no other state of any index has had: an approximate index built from one state knows
/// whether the vectors changed since (see `VectorIndex::stamp`).
fn next_stamp() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[derive(Debug, Clone)]
pub struct VectorIndex {
    dim: usize,
    /// Row-major, `dim` values a row; shared (copy on write) with an approximate index being
    /// built from it, so taking that snapshot copies nothing.
    data: Arc<Vec<f32>>,
    ids: Vec<u64>,
    stamp: u64,
}

impl Default for VectorIndex {
    fn default() -> VectorIndex {
        VectorIndex::new(0)
    }
}

impl VectorIndex {
    pub fn new(dim: usize) -> VectorIndex {
        VectorIndex {
            dim,
            data: Arc::new(Vec::new()),
            ids: Vec::new(),
            stamp: next_stamp(),
        }
    }

    pub fn push(&mut self, id: u64, v: &[f32]) {
        assert_eq!(v.len(), self.dim, "vector dimension");
        push_unit(Arc::make_mut(&mut self.data), v);
        self.ids.push(id);
        self.stamp = next_stamp();
    }

    /// An index of every row of `stored`, row `r` with id `ids[r]`, sharing its rows instead of
    /// copying them (they are unit vectors already). None unless every row is present and
    /// `ids` has one id a row.
    pub fn from_stored(stored: &StoredVectors, ids: Vec<u64>) -> Option<VectorIndex> {
        (stored.all_present() && ids.len() == stored.len()).then(|| VectorIndex {
            dim: stored.dim,
            data: Arc::clone(&stored.data),
            ids,
            stamp: next_stamp(),
        })
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Changes whenever a vector is added or removed, unique across indexes: what an approximate
    /// index compares to know it still describes these vectors.
    pub fn stamp(&self) -> u64 {
        self.stamp
    }

    /// The stored (unit) vector of row `r`, rows in insertion order (`ids()[r]` is its id).
    pub fn row(&self, r: usize) -> &[f32] {
        &self.data[r * self.dim..(r + 1) * self.dim]
    }

    /// Every row, row-major; shared, not copied.
    pub fn shared_data(&self) -> Arc<Vec<f32>> {
        Arc::clone(&self.data)
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Drop the rows whose id is in `gone` (order of the others kept).
    pub fn remove(&mut self, gone: &std::collections::HashSet<u64>) {
        if gone.is_empty() {
            return;
        }
        let dim = self.dim.max(1);
        if !self.ids.iter().any(|id| gone.contains(id)) {
            return;
        }
        let data = Arc::make_mut(&mut self.data);
        let mut w = 0;
        for r in 0..self.ids.len() {
            if gone.contains(&self.ids[r]) {
                continue;
            }
            if w != r {
                self.ids[w] = self.ids[r];
                data.copy_within(r * dim..(r + 1) * dim, w * dim);
            }
            w += 1;
        }
        self.ids.truncate(w);
        data.truncate(w * dim);
        self.stamp = next_stamp();
    }

    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The `k` nearest ids by cosine, best first.
    pub fn search(&self, q: &[f32], k: usize) -> Vec<(u64, f32)> {
        let q = unit(q);
        let mut scored: Vec<(u64, f32)> = self
            .data
            .chunks_exact(self.dim.max(1))
            .zip(&self.ids)
            // A zero vector is a chunk the embedder refused (a server's window): never a hit.
            .filter(|(v, _)| v.iter().any(|x| *x != 0.0))
            .map(|(v, &id)| (id, exact_dot(v, &q)))
            .collect();
        let k = k.min(scored.len());
        if k == 0 {
            return Vec::new();
        }
        // Equal scores (a chunk stored many times) by id, so which of them make the k is fixed.
        let order = |a: &(u64, f32), b: &(u64, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        scored.select_nth_unstable_by(k - 1, order);
        scored.truncate(k);
        scored.sort_by(order);
        scored
    }
}

/// Append `v` to `data` as the index keeps it: scaled to unit length unless it is one already
/// (or is zero).
fn push_unit(data: &mut Vec<f32>, v: &[f32]) {
    match scale_of(v) {
        Some(norm) => data.extend(v.iter().map(|x| x / norm)),
        None => data.extend_from_slice(v),
    }
}

/// The norm to divide `v` by to make it a unit vector; `None` when it is one already (within
/// 1e-4) or is zero, and is kept as it is.
fn scale_of(v: &[f32]) -> Option<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    (norm > 0.0 && (norm - 1.0).abs() > 1e-4).then_some(norm)
}

/// The vectors a store held, one row per chunk in its order, kept as the index keeps them (unit
/// length; a zero row where a chunk has none), so that an index over a store whose every chunk
/// has a vector shares these rows (`VectorIndex::from_stored`): a store of 10^6 vectors of 384
/// dimensions is 1.5 GB once. Filled as the store is read; every vector must have the width of
/// the first.
#[derive(Debug, Default, PartialEq)]
pub struct StoredVectors {
    /// 0 until the first vector.
    dim: usize,
    data: Arc<Vec<f32>>,
    present: Vec<bool>,
    count: usize,
}

impl StoredVectors {
    /// From each chunk's vector, if any (the width is the first one's).
    pub fn new<'a>(
        vectors: impl Iterator<Item = Option<&'a [f32]>>,
    ) -> Result<StoredVectors, String> {
        let mut out = StoredVectors::default();
        for v in vectors {
            out.push(v)?;
        }
        Ok(out)
    }

    /// One more chunk, with its vector or none (a vector of another width adds nothing).
    pub fn push(&mut self, v: Option<&[f32]>) -> Result<(), String> {
        if let Some(v) = v {
            self.fits(v)?;
        }
        self.present.push(false);
        if self.dim > 0 {
            let n = self.data.len() + self.dim;
            Arc::make_mut(&mut self.data).resize(n, 0.0);
        }
        match v {
            Some(v) => self.set(self.present.len() - 1, v),
            None => Ok(()),
        }
    }

    /// Chunk `i`'s vector (a chunk pushed before), replacing any it had.
    pub fn set(&mut self, i: usize, v: &[f32]) -> Result<(), String> {
        self.fits(v)?;
        if self.dim == 0 {
            self.dim = v.len();
            self.data = Arc::new(vec![0.0; self.present.len() * self.dim]);
        }
        let row = &mut Arc::make_mut(&mut self.data)[i * self.dim..(i + 1) * self.dim];
        match scale_of(v) {
            Some(norm) => row.iter_mut().zip(v).for_each(|(r, x)| *r = x / norm),
            None => row.copy_from_slice(v),
        }
        if !std::mem::replace(&mut self.present[i], true) {
            self.count += 1;
        }
        Ok(())
    }

    /// What is wrong with `v` as one of these vectors, if anything.
    fn fits(&self, v: &[f32]) -> Result<(), String> {
        if v.is_empty() {
            Err("an empty vector".into())
        } else if self.dim > 0 && v.len() != self.dim {
            Err(format!(
                "a vector of {} dimensions where the others have {}",
                v.len(),
                self.dim
            ))
        } else {
            Ok(())
        }
    }

    /// The width of every vector; 0 when there is none.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Chunks, with or without a vector.
    pub fn len(&self) -> usize {
        self.present.len()
    }

    pub fn is_empty(&self) -> bool {
        self.present.is_empty()
    }

    /// Chunks with a vector.
    pub fn count(&self) -> usize {
        self.count
    }

    pub fn all_present(&self) -> bool {
        self.count == self.present.len()
    }

    /// Chunk `i`'s vector (unit length), None when it has none.
    pub fn get(&self, i: usize) -> Option<&[f32]> {
        self.present
            .get(i)
            .copied()
            .unwrap_or(false)
            .then(|| &self.data[i * self.dim..(i + 1) * self.dim])
    }
}

/// `q` as a unit vector (borrowed when it already is one, or is zero).
pub fn unit(q: &[f32]) -> std::borrow::Cow<'_, [f32]> {
    match scale_of(q) {
        Some(norm) => std::borrow::Cow::Owned(q.iter().map(|x| x / norm).collect()),
        None => std::borrow::Cow::Borrowed(q),
    }
}

/// The dot product flat search scores with, summed in order: the approximate index rescores its
/// candidates with it, so both give a chunk the same score to the bit.
#[inline]
pub fn exact_dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_first() {
        let mut ix = VectorIndex::new(2);
        ix.push(7, &[1.0, 0.0]);
        ix.push(8, &[0.0, 1.0]);
        ix.push(9, &[0.6, 0.8]);
        let hits = ix.search(&[0.0, 1.0], 2);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![8, 9]);
        assert!(ix.search(&[1.0, 0.0], 0).is_empty());
        assert_eq!(ix.search(&[1.0, 0.0], 10).len(), 3);
        ix.push(10, &[0.0, 0.0]);
        assert_eq!(
            ix.search(&[1.0, 0.0], 10).len(),
            3,
            "a zero vector is never a hit"
        );
        ix.remove(&[8, 10].into_iter().collect());
        assert_eq!(ix.ids(), &[7, 9]);
        let hits = ix.search(&[0.0, 1.0], 1);
        assert_eq!(hits[0].0, 9);
    }

    #[test]
    fn stored_rows_are_kept_as_pushed_and_shared_when_all_are_there() {
        let rows: Vec<Option<Vec<f32>>> = vec![None, Some(vec![3.0, 4.0]), Some(vec![0.0, 0.0])];
        let mut stored = StoredVectors::new(rows.iter().map(|v| v.as_deref())).unwrap();
        let e = stored.push(Some(&[1.0, 2.0, 3.0])).unwrap_err();
        assert_eq!(e, "a vector of 3 dimensions where the others have 2");
        stored.push(None).unwrap();
        stored.set(0, &[0.0, 5.0]).unwrap();
        assert_eq!(
            stored.get(0),
            Some(&[0.0, 1.0][..]),
            "set after the rows were made"
        );
        stored.set(0, &[3.0, 4.0]).unwrap();
        assert_eq!(
            (stored.len(), stored.count(), stored.dim()),
            (4, 3, 2),
            "set twice counts once"
        );
        let stored =
            StoredVectors::new([Some(&[3.0, 4.0][..]), Some(&[0.0, 0.0][..]), None].into_iter())
                .unwrap();
        assert_eq!(stored.len(), 3);
        assert_eq!(stored.get(0), Some(&[0.6, 0.8][..]));
        assert_eq!(
            stored.get(1),
            Some(&[0.0, 0.0][..]),
            "a zero vector is kept, as push keeps it"
        );
        assert_eq!(stored.get(2), None);
        assert_eq!(stored.get(9), None);
        assert!(VectorIndex::from_stored(&stored, vec![1, 2, 3]).is_none());
        assert!(StoredVectors::new([Some(&[][..])].into_iter()).is_err());

        let full: Vec<Vec<f32>> = vec![vec![3.0, 4.0], vec![0.0, 2.0], vec![1.0, 0.0]];
        let stored = StoredVectors::new(full.iter().map(|v| Some(v.as_slice()))).unwrap();
        assert!(
            VectorIndex::from_stored(&stored, vec![7, 8]).is_none(),
            "one id a row"
        );
        let shared = VectorIndex::from_stored(&stored, vec![7, 8, 9]).unwrap();
        assert!(
            Arc::ptr_eq(&shared.shared_data(), &stored.data),
            "shared, not copied"
        );
        let mut pushed = VectorIndex::new(2);
        for (id, v) in [7, 8, 9].into_iter().zip(&full) {
            pushed.push(id, v);
        }
        assert_eq!(shared.data, pushed.data);
        assert_eq!(shared.ids(), pushed.ids());
        for q in [[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]] {
            assert_eq!(shared.search(&q, 3), pushed.search(&q, 3));
        }
    }
}
