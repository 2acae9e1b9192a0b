//! What was computed for short texts, remembered in a few buffers instead of a heap allocation per
//! text.
//!
//! The chunkers ask the same short texts again and again (a word cut by a boundary, a metadata
//! line, a piece of cl100k's regex), so their results are kept in bounded tables that are
//! emptied rather than grown. Here a table's keys and values share one byte buffer, which, like
//! its index, keeps its capacity when emptied: after the first fill a table allocates nothing,
//! where a map of boxed keys allocated (and later freed) a few dozen bytes per entry, 16,384 per
//! thread, among the pages of the chunking being built. Measured at 105 MB (`chunkscope-bench
//! scale`, five presets, 2026-12-06): read + tokenize 2.7 -> 2.0-2.6 s, llamaindex's knob p50
//! 220 -> 183 ms, the others within the run's drift, peak 508 -> 504 MB.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// A bounded map from byte strings to byte strings.
pub(crate) struct ByteMemo {
    /// Each entry's key then its value, one entry after another.
    bytes: Vec<u8>,
    /// Where each entry's key and value end in `bytes` (its key starts where the entry before
    /// it ends).
    ends: Vec<(u32, u32)>,
    table: HashTable<u32>,
    bound: usize,
}

impl ByteMemo {
    /// An empty table that holds at most `bound` entries.
    pub(crate) fn new(bound: usize) -> ByteMemo {
        ByteMemo {
            bytes: Vec::new(),
            ends: Vec::new(),
            table: HashTable::new(),
            bound: bound.max(1),
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.ends.len()
    }

    /// The value kept for `key`, if any.
    #[cfg(test)]
    fn get(&self, key: &[u8]) -> Option<&[u8]> {
        let i = self.find(key)?;
        Some(self.value(i))
    }

    /// The value kept for `key`, written by `fill` (which appends it to the buffer it is given)
    /// when there is none. The table is emptied first when it is full.
    pub(crate) fn get_or(&mut self, key: &[u8], fill: impl FnOnce(&mut Vec<u8>)) -> &[u8] {
        let i = match self.find(key) {
            Some(i) => i,
            None => self.insert_with(key, fill),
        };
        self.value(i)
    }

    /// Add `key` (not in the table) with the value `fill` appends; its entry number.
    fn insert_with(&mut self, key: &[u8], fill: impl FnOnce(&mut Vec<u8>)) -> u32 {
        let too_long = self.bytes.len() + key.len() > u32::MAX as usize / 2;
        if self.ends.len() >= self.bound || too_long {
            self.clear();
        }
        let i = self.ends.len() as u32;
        self.bytes.extend_from_slice(key);
        let key_end = self.bytes.len();
        fill(&mut self.bytes);
        self.ends.push((key_end as u32, self.bytes.len() as u32));
        let (bytes, ends) = (&self.bytes, &self.ends);
        self.table
            .insert_unique(FxBuildHasher.hash_one(key), i, |&j| {
                FxBuildHasher.hash_one(key_of(bytes, ends, j))
            });
        i
    }

    /// Forget every entry, keeping the buffers' capacity.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.table.clear();
    }

    fn find(&self, key: &[u8]) -> Option<u32> {
        let hash = FxBuildHasher.hash_one(key);
        self.table
            .find(hash, |&j| key_of(&self.bytes, &self.ends, j) == key)
            .copied()
    }

    fn value(&self, i: u32) -> &[u8] {
        let (key_end, end) = self.ends[i as usize];
        &self.bytes[key_end as usize..end as usize]
    }
}

fn key_of<'a>(bytes: &'a [u8], ends: &[(u32, u32)], i: u32) -> &'a [u8] {
    let i = i as usize;
    let start = if i == 0 { 0 } else { ends[i - 1].1 as usize };
    &bytes[start..ends[i].0 as usize]
}

/// Entries a `Remembered` holds at most.
const REMEMBERED: usize = 1 << 14;

/// A `ByteMemo` kept for one owner at a time (a tokenizer, a unit): emptied when the owner
/// changes.
pub(crate) struct Remembered<O> {
    owner: Option<O>,
    memo: ByteMemo,
}

impl<O> Default for Remembered<O> {
    fn default() -> Self {
        Remembered {
            owner: None,
            memo: ByteMemo::new(REMEMBERED),
        }
    }
}

impl<O: PartialEq> Remembered<O> {
    /// What `fill` appends for `text`, from the table when `owner` put it there.
    pub(crate) fn get_or(
        &mut self,
        owner: O,
        text: &str,
        fill: impl FnOnce(&mut Vec<u8>),
    ) -> &[u8] {
        if self.owner.as_ref() != Some(&owner) {
            self.memo.clear();
            self.owner = Some(owner);
        }
        self.memo.get_or(text.as_bytes(), fill)
    }

    /// A count (under 2^32) that `make` computes for `text`, from the table when `owner` put it
    /// there.
    pub(crate) fn count_or(&mut self, owner: O, text: &str, make: impl FnOnce() -> usize) -> usize {
        let kept = self.get_or(owner, text, |out| {
            let n = u32::try_from(make()).unwrap_or(u32::MAX);
            out.extend_from_slice(&n.to_le_bytes());
        });
        let mut n = [0u8; 4];
        n.copy_from_slice(kept);
        u32::from_le_bytes(n) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_each_value_with_its_key_until_full() {
        let mut m = ByteMemo::new(3);
        let mut calls = 0;
        for (k, v) in [("a", "1"), ("", "empty"), ("ab", "")] {
            let got = m.get_or(k.as_bytes(), |out| {
                calls += 1;
                out.extend_from_slice(v.as_bytes());
            });
            assert_eq!(got, v.as_bytes());
        }
        assert_eq!(calls, 3);
        // Asked again: from the table, `fill` not called.
        assert_eq!(m.get(b"a"), Some(&b"1"[..]));
        assert_eq!(m.get(b""), Some(&b"empty"[..]));
        assert_eq!(m.get(b"ab"), Some(&b""[..]));
        assert_eq!(m.get(b"b"), None);
        assert_eq!(m.get_or(b"a", |_| panic!("kept")), b"1");
        // Full: a fourth key empties the table first.
        assert_eq!(m.get_or(b"abc", |out| out.push(7)), [7]);
        assert_eq!(m.len(), 1);
        assert_eq!(m.get(b"a"), None);
        let capacity = m.bytes.capacity();
        m.clear();
        assert_eq!(m.bytes.capacity(), capacity);
    }

    #[test]
    fn a_new_owner_starts_afresh() {
        let mut r = Remembered::<u8>::default();
        assert_eq!(r.count_or(1, "word", || 3), 3);
        assert_eq!(r.count_or(1, "word", || unreachable!("kept")), 3);
        assert_eq!(r.count_or(2, "word", || 5), 5);
        assert_eq!(r.count_or(1, "word", || 4), 4);
    }
}
