//! A vocabulary held compactly for lookups by bytes: every piece's bytes in one buffer, and a
//! hash table of piece numbers (about 9 bytes a piece instead of a heap allocation each).

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

#[derive(Default)]
pub(super) struct PieceTable {
    bytes: Vec<u8>,
    /// Where piece `i` ends in `bytes` (it starts where piece `i - 1` ends).
    ends: Vec<u32>,
    /// The value given with each piece (a rank, an id).
    values: Vec<u32>,
    table: HashTable<u32>,
}

impl PieceTable {
    /// The table of `pieces` with their values (a piece given twice keeps its first value).
    pub(super) fn new<'a>(pieces: impl IntoIterator<Item = (&'a [u8], u32)>) -> PieceTable {
        let mut t = PieceTable::default();
        for (piece, value) in pieces {
            t.push(piece, value);
        }
        t.shrink();
        t
    }

    /// Add `piece` with `value`, unless it is already there.
    pub(super) fn push(&mut self, piece: &[u8], value: u32) {
        if self.get(piece).is_some() {
            return;
        }
        let i = self.ends.len() as u32;
        self.bytes.extend_from_slice(piece);
        self.ends.push(self.bytes.len() as u32);
        self.values.push(value);
        let hash = FxBuildHasher.hash_one(piece);
        let (bytes, ends) = (&self.bytes, &self.ends);
        self.table.insert_unique(hash, i, |&j| {
            FxBuildHasher.hash_one(piece_of(bytes, ends, j))
        });
    }

    /// Give back what the buffers hold beyond their pieces.
    pub(super) fn shrink(&mut self) {
        self.bytes.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.values.shrink_to_fit();
        let (bytes, ends) = (&self.bytes, &self.ends);
        self.table
            .shrink_to_fit(|&j| FxBuildHasher.hash_one(piece_of(bytes, ends, j)));
    }

    /// The value of `piece`, if it is one.
    #[inline]
    pub(super) fn get(&self, piece: &[u8]) -> Option<u32> {
        let hash = FxBuildHasher.hash_one(piece);
        let &i = self.table.find(hash, |&j| self.piece(j) == piece)?;
        Some(self.values[i as usize])
    }

    pub(super) fn contains(&self, piece: &[u8]) -> bool {
        self.get(piece).is_some()
    }

    /// The longest piece, in bytes.
    pub(super) fn longest(&self) -> usize {
        (0..self.ends.len() as u32)
            .map(|i| self.piece(i).len())
            .max()
            .unwrap_or(0)
    }

    fn piece(&self, i: u32) -> &[u8] {
        piece_of(&self.bytes, &self.ends, i)
    }
}

fn piece_of<'a>(bytes: &'a [u8], ends: &[u32], i: u32) -> &'a [u8] {
    let i = i as usize;
    let start = if i == 0 { 0 } else { ends[i - 1] as usize };
    &bytes[start..ends[i] as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_piece_and_nothing_else() {
        let words = ["a", "ab", "abc", "", "##b", "é", "ab"];
        let t = PieceTable::new(
            words
                .iter()
                .enumerate()
                .map(|(i, w)| (w.as_bytes(), i as u32)),
        );
        for (i, w) in words.iter().enumerate().take(6) {
            assert_eq!(t.get(w.as_bytes()), Some(i as u32), "{w:?}");
        }
        // A piece given twice keeps its first value.
        assert_eq!(t.get(b"ab"), Some(1));
        for miss in ["b", "abcd", "##", "e"] {
            assert!(!t.contains(miss.as_bytes()), "{miss:?}");
        }
        assert_eq!(t.longest(), 3);
    }
}
