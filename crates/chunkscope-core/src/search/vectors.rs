//! The vector side of a search index: which chunks have a vector, giving them theirs (embedded,
//! or as their store holds them), and the exact ranking by cosine.

use std::collections::HashSet;

use super::SearchIndex;
use crate::engine::Chunking;
use crate::index::VectorIndex;

impl SearchIndex {
    /// Ids of the chunks without a vector, in chunking order.
    pub fn missing_vectors(&self) -> Vec<u64> {
        let have: HashSet<u64> = self.vectors.ids().iter().copied().collect();
        (0..self.keys.len() as u64)
            .filter(|&id| !have.contains(&self.keys[id as usize]))
            .collect()
    }

    /// Give chunks `ids` their vectors.
    pub fn add_vectors(&mut self, ids: &[u64], vectors: &[Vec<f32>]) {
        for (&id, v) in ids.iter().zip(vectors) {
            if let Some(&k) = self.keys.get(id as usize) {
                if v.len() == self.dim {
                    self.vectors.push(k, v);
                }
            }
        }
        self.drop_stale_ann();
    }

    /// Give the chunks still without a vector the ones their store holds
    /// (`Chunking::stored_vectors`), as stored, whatever the window: only chunks stored without
    /// one, or with another width, are left to embed.
    /// When every chunk has one and the index has none yet, the index shares the stored rows
    /// instead of copying them.
    pub fn add_stored_vectors(&mut self, chunking: &Chunking) {
        let Some(stored) = chunking.stored_vectors.as_ref() else {
            return;
        };
        if stored.dim() != self.dim {
            return;
        }
        if self.vectors.is_empty() {
            if let Some(shared) = VectorIndex::from_stored(stored, self.keys.clone()) {
                self.vectors = shared;
                self.drop_stale_ann();
                return;
            }
        }
        let (ids, vectors): (Vec<u64>, Vec<Vec<f32>>) = self
            .missing_vectors()
            .into_iter()
            .filter_map(|id| Some((id, stored.get(id as usize)?.to_vec())))
            .unzip();
        self.add_vectors(&ids, &vectors);
    }

    /// Forget every vector (the window changed).
    pub fn clear_vectors(&mut self) {
        self.vectors = VectorIndex::new(self.dim);
        self.drop_stale_ann();
    }

    /// Fill the vector side: one embedding per chunk in chunking order.
    pub fn set_vectors(&mut self, vectors: &[Vec<f32>], dim: usize) {
        self.dim = dim;
        self.clear_vectors();
        let ids: Vec<u64> = (0..vectors.len() as u64).collect();
        self.add_vectors(&ids, vectors);
    }

    /// Every chunk id ranked by cosine to `qv`.
    pub fn vector_ranking(&self, qv: &[f32]) -> Vec<u64> {
        self.vector_scored(qv)
            .into_iter()
            .map(|(id, _)| id)
            .collect()
    }

    /// Every chunk with a vector, with its cosine to `qv`, best first.
    pub fn vector_scored(&self, qv: &[f32]) -> Vec<(u64, f32)> {
        self.vectors
            .search(qv, self.refs.len())
            .into_iter()
            .filter_map(|(key, score)| Some((*self.ids.get(&key)?, score)))
            .collect()
    }

    /// True when every chunk has its vector.
    pub fn has_vectors(&self) -> bool {
        !self.vectors.is_empty() && self.vectors.len() >= self.refs.len()
    }
}
