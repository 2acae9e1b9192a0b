//! Embeddings kept on disk, keyed by (model, window, exact embedded text), so that reopening a
//! corpus or turning a knob back embeds nothing new. Memory holds the keys and where each vector
//! lies in the file; a vector is read back when asked for, so a cache grown over many corpora and
//! knob settings costs a map entry a vector in memory (32 bytes and the map's slack), not the
//! vector. New vectors are held until
//! `save` appends them (records with their own checksums, under an exclusive lock: two processes
//! may add to one file).

mod file;

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use file::{Header, HEADER};

/// 128-bit FNV-1a of the model key, the window and the text: the cache key.
pub fn key(model: &str, window: usize, text: &str) -> u128 {
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    let prime: u128 = 0x0000000001000000000000000000013B;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            h ^= b as u128;
            h = h.wrapping_mul(prime);
        }
    };
    feed(model.as_bytes());
    feed(&[0xff]);
    feed(&(window as u64).to_le_bytes());
    feed(text.as_bytes());
    h
}

/// New vectors are appended to the cache file at most this often while they arrive (an append
/// costs what was added, and the cache then lets them go from memory).
pub const SAVE_EVERY_SECS: u64 = 2;

/// Where a key's vector is.
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// Row of `rows`.
    Memory(u32),
    /// Byte offset of the vector in the file.
    File(u64),
}

pub struct EmbedCache {
    dim: usize,
    slots: HashMap<u128, Slot>,
    /// Vectors held in memory, `dim` values a row: those not yet written (every one, without a
    /// file).
    rows: Vec<f32>,
    /// Keys whose vectors are not in the file yet, in the order they came.
    unsaved: Vec<u128>,
    path: Option<PathBuf>,
    /// The file, open to read (and append where it may be written).
    file: Option<Mutex<File>>,
    /// Where the records read so far end: another process's appends lie past it.
    end: u64,
    /// The file could not be locked (said once).
    lockless: bool,
}

impl EmbedCache {
    pub fn in_memory(dim: usize) -> EmbedCache {
        EmbedCache {
            dim,
            slots: HashMap::new(),
            rows: Vec::new(),
            unsaved: Vec::new(),
            path: None,
            file: None,
            end: HEADER,
            lockless: false,
        }
    }

    /// Open (or start) the cache file at `path`, keeping only keys in memory. A damaged file is
    /// reported in the log and ignored; damaged records are skipped.
    pub fn open(path: &Path, dim: usize) -> EmbedCache {
        let mut c = EmbedCache::in_memory(dim);
        c.path = Some(path.to_path_buf());
        if let Err(e) = c.load(path) {
            // A file that cannot be read is not replaced either: this run keeps its vectors in
            // memory only.
            log::warn!("{}: {e}; new vectors will not be saved", path.display());
            c.path = None;
            c.slots.clear();
            c.rows.clear();
        }
        c
    }

    fn load(&mut self, path: &Path) -> io::Result<()> {
        let mut f = match file::open_existing(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        if f.metadata()?.len() < HEADER {
            // Being created by another process (its header not written yet), or torn at its
            // start: the next save decides, under the lock.
            return Ok(());
        }
        match file::read_header(&mut f, self.dim)? {
            Header::Ours => {}
            Header::First => {
                drop(f);
                let Some(n) = file::convert_first_format(path, self.dim)? else {
                    log::warn!("{}: damaged embedding cache discarded", path.display());
                    return Ok(());
                };
                log::info!(
                    "{}: {n} cached vectors converted to the appendable format",
                    path.display()
                );
                f = file::open_existing(path)?;
            }
            Header::Foreign => {
                log::warn!(
                    "{}: not an embedding cache of width {}: discarded",
                    path.display(),
                    self.dim
                );
                return Ok(());
            }
        }
        let end = file::whole_records_end(f.metadata()?.len(), self.dim);
        let damaged = file::scan(&mut f, self.dim, HEADER, end, |k, at| self.found(k, at))?;
        if damaged > 0 {
            log::warn!(
                "{}: {damaged} damaged cached vectors skipped",
                path.display()
            );
        }
        self.end = end;
        self.file = Some(Mutex::new(f));
        Ok(())
    }

    /// A record read from the file; the first of a key is kept.
    fn found(&mut self, key: u128, at: u64) {
        self.slots.entry(key).or_insert(Slot::File(at));
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn contains(&self, key: u128) -> bool {
        self.slots.contains_key(&key)
    }

    /// The vector of `key`, read from the file when it is not in memory (None where that read
    /// fails, reported in the log).
    pub fn get(&self, key: u128) -> Option<Vec<f32>> {
        match *self.slots.get(&key)? {
            Slot::Memory(r) => Some(self.row(r).to_vec()),
            Slot::File(at) => {
                let mut f = self.file.as_ref()?.lock().ok()?;
                file::read_vector(&mut f, at, self.dim)
                    .map_err(|e| log::warn!("embedding cache: vector not read back: {e}"))
                    .ok()
            }
        }
    }

    fn row(&self, r: u32) -> &[f32] {
        let start = r as usize * self.dim;
        &self.rows[start..start + self.dim]
    }

    /// The vector of `key`, which is in `unsaved`: held in memory until it is written.
    fn unsaved_row(&self, key: u128) -> &[f32] {
        match self.slots[&key] {
            Slot::Memory(r) => self.row(r),
            Slot::File(_) => unreachable!("a vector is written before it leaves memory"),
        }
    }

    /// The vector of `key` when it is held in memory: every one in an `in_memory` cache, borrowed
    /// (Max-Min reads its sentence vectors so in its inner loop).
    pub fn held(&self, key: u128) -> Option<&[f32]> {
        match *self.slots.get(&key)? {
            Slot::Memory(r) => Some(self.row(r)),
            Slot::File(_) => None,
        }
    }

    /// Keep `v` for `key` (ignored when the key has one or the width is not the model's).
    pub fn insert(&mut self, key: u128, v: &[f32]) {
        if v.len() != self.dim || self.slots.contains_key(&key) {
            return;
        }
        let row = self.rows.len() / self.dim.max(1);
        self.rows.extend_from_slice(v);
        self.slots.insert(key, Slot::Memory(row as u32));
        if self.path.is_some() {
            self.unsaved.push(key);
        }
    }

    /// Append the vectors added since the last save to the file (nothing when none were). A
    /// file this cache cannot add to is replaced whole, through a temporary file and a rename.
    pub fn save(&mut self) -> io::Result<()> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        if self.unsaved.is_empty() {
            return Ok(());
        }
        let mut f = match self.file.take() {
            Some(f) => f.into_inner().unwrap_or_else(|p| p.into_inner()),
            None => file::open_for_append(&path)?,
        };
        // A file system without locks (some network mounts) still gets the vectors, appended in
        // whole records; only a torn record is then left alone instead of cut off.
        let locked = match f.lock() {
            Ok(()) => true,
            Err(e) => {
                if !self.lockless {
                    log::warn!(
                        "{}: not locked ({e}); appending without a lock",
                        path.display()
                    );
                    self.lockless = true;
                }
                false
            }
        };
        let saved = self.append(&mut f, &path, locked);
        if locked {
            let _ = f.unlock();
        }
        self.file = Some(Mutex::new(f));
        saved
    }

    fn append(&mut self, f: &mut File, path: &Path, locked: bool) -> io::Result<()> {
        // What the file is now decides (not what it was at open: another process may have
        // created or replaced it since).
        let len = f.metadata()?.len();
        let foreign = if len == 0 {
            file::write_header(f, self.dim)?;
            false
        } else {
            !matches!(file::read_header(f, self.dim)?, Header::Ours)
        };
        if foreign {
            return self.replace(f, path);
        }
        // Records another process appended since this one last looked, and a record a writer
        // that died left half written, cut off.
        let len = f.metadata()?.len();
        let end = file::whole_records_end(len, self.dim);
        if end > self.end {
            let from = self.end;
            file::scan(f, self.dim, from, end, |k, at| self.found(k, at))?;
        }
        if len != end {
            if !locked {
                return Err(io::Error::other(
                    "a record is half written and the file cannot be locked: not appended",
                ));
            }
            f.set_len(end)?;
        }
        let records = self.unsaved.iter().map(|&k| (k, self.unsaved_row(k)));
        file::append_records(f, self.dim, records)?;
        f.sync_data()?;
        self.written(end);
        Ok(())
    }

    /// Write every vector held in memory as the whole file, and reopen it.
    fn replace(&mut self, f: &mut File, path: &Path) -> io::Result<()> {
        // Vectors of the file being replaced are gone with it; those in memory make the new one.
        let mut held: Vec<(u32, u128)> = Vec::new();
        self.slots.retain(|k, s| match s {
            Slot::Memory(r) => {
                held.push((*r, *k));
                true
            }
            Slot::File(_) => false,
        });
        held.sort_unstable();
        self.unsaved = held.into_iter().map(|(_, k)| k).collect();
        file::write_whole(path, self.dim, |out| {
            self.unsaved
                .iter()
                .try_for_each(|&k| out.put(k, self.unsaved_row(k)))
        })?;
        *f = file::open_existing(path)?;
        self.written(HEADER);
        Ok(())
    }

    /// `unsaved` now lies in the file from `at`, in order: their rows go from memory.
    fn written(&mut self, at: u64) {
        let rec = file::record_len(self.dim);
        let n = self.unsaved.len() as u64;
        for (i, k) in self.unsaved.iter().enumerate() {
            self.slots.insert(*k, Slot::File(at + i as u64 * rec + 16));
        }
        self.rows = Vec::new();
        self.unsaved.clear();
        self.end = at + n * rec;
    }
}

/// Where the embedding cache of a model lives: one file per model, under the cache directory.
pub fn default_path(model_key: &str) -> std::path::PathBuf {
    let safe: String = model_key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    crate::model::cache_root()
        .join("embeddings")
        .join(format!("{safe}.bin"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("chunkscope-cache-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn round_trip_appends_and_reads_back_from_the_file() {
        let d = dir("round");
        let path = d.join("c.bin");
        let mut c = EmbedCache::open(&path, 3);
        c.insert(key("m", 128, "a"), &[1.0, 2.0, 3.0]);
        c.insert(key("m", 256, "a"), &[4.0, 5.0, 6.0]);
        c.insert(key("m", 256, "a"), &[7.0, 7.0, 7.0]);
        c.insert(key("m", 256, "b"), &[1.0]);
        assert_eq!(
            c.len(),
            2,
            "a key keeps its first vector; a wrong width is refused"
        );
        c.save().unwrap();
        assert!(c.rows.is_empty(), "saved vectors leave memory");
        assert_eq!(c.get(key("m", 256, "a")), Some(vec![4.0, 5.0, 6.0]));
        c.insert(key("m", 128, "c"), &[0.5, 0.25, 0.125]);
        c.save().unwrap();
        let len = fs::metadata(&path).unwrap().len();
        assert_eq!(
            len,
            HEADER + 3 * file::record_len(3),
            "the second save appended one record"
        );
        let c2 = EmbedCache::open(&path, 3);
        assert_eq!(c2.len(), 3);
        assert_eq!(c2.get(key("m", 128, "a")), Some(vec![1.0, 2.0, 3.0]));
        assert_eq!(c2.get(key("m", 128, "c")), Some(vec![0.5, 0.25, 0.125]));
        assert!(c2.rows.is_empty(), "a reopened cache holds keys only");
        assert!(c2.get(key("m", 512, "a")).is_none());
        assert_ne!(key("m", 128, "a"), key("m", 256, "a"));
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn damage_costs_the_damaged_record_only() {
        let d = dir("damage");
        let path = d.join("c.bin");
        let mut c = EmbedCache::open(&path, 3);
        for (i, t) in ["a", "b", "c"].iter().enumerate() {
            c.insert(key("m", 128, t), &[i as f32, 1.0, 2.0]);
        }
        c.save().unwrap();
        let rec = file::record_len(3) as usize;
        // A flipped byte in the second record's vector; half a record left by a writer that died.
        let mut bytes = fs::read(&path).unwrap();
        bytes[HEADER as usize + rec + 20] ^= 1;
        bytes.extend_from_slice(&vec![7u8; rec / 2]);
        fs::write(&path, &bytes).unwrap();
        let mut c2 = EmbedCache::open(&path, 3);
        assert_eq!(c2.len(), 2);
        assert!(!c2.contains(key("m", 128, "b")));
        assert_eq!(c2.get(key("m", 128, "c")), Some(vec![2.0, 1.0, 2.0]));
        // The next save cuts the torn half off before it appends.
        c2.insert(key("m", 128, "b"), &[9.0, 9.0, 9.0]);
        c2.save().unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().len() as usize,
            HEADER as usize + 4 * rec
        );
        let c3 = EmbedCache::open(&path, 3);
        assert_eq!(c3.len(), 3);
        assert_eq!(c3.get(key("m", 128, "b")), Some(vec![9.0, 9.0, 9.0]));
        // A damaged header: the file is not trusted, and the next save replaces it whole.
        let mut bytes = fs::read(&path).unwrap();
        bytes[2] ^= 1;
        fs::write(&path, bytes).unwrap();
        let mut c4 = EmbedCache::open(&path, 3);
        assert!(c4.is_empty());
        c4.insert(key("m", 128, "z"), &[1.0, 1.0, 1.0]);
        c4.save().unwrap();
        let c5 = EmbedCache::open(&path, 3);
        assert_eq!(c5.len(), 1);
        assert_eq!(c5.get(key("m", 128, "z")), Some(vec![1.0, 1.0, 1.0]));
        // Another width's file is not read as this one's.
        assert!(EmbedCache::open(&path, 4).is_empty());
        fs::write(&path, b"garbage").unwrap();
        assert!(EmbedCache::open(&path, 3).is_empty());
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn two_caches_add_to_one_file() {
        let d = dir("two");
        let path = d.join("c.bin");
        let mut a = EmbedCache::open(&path, 2);
        let mut b = EmbedCache::open(&path, 2);
        a.insert(key("m", 1, "a"), &[1.0, 0.0]);
        b.insert(key("m", 1, "b"), &[0.0, 1.0]);
        a.save().unwrap();
        b.save().unwrap();
        assert_eq!(
            b.get(key("m", 1, "a")),
            Some(vec![1.0, 0.0]),
            "b read a's record"
        );
        a.insert(key("m", 1, "c"), &[0.5, 0.5]);
        a.save().unwrap();
        let c = EmbedCache::open(&path, 2);
        assert_eq!(c.len(), 3);
        for (t, v) in [("a", [1.0, 0.0]), ("b", [0.0, 1.0]), ("c", [0.5, 0.5])] {
            assert_eq!(c.get(key("m", 1, t)), Some(v.to_vec()));
        }
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn caches_saving_at_once_lose_nothing() {
        let d = dir("race");
        let path = d.join("c.bin");
        let writers: Vec<_> = (0..3)
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut c = EmbedCache::open(&path, 4);
                    for i in 0..600 {
                        c.insert(key("m", w, &i.to_string()), &[w as f32, i as f32, 1.0, 2.0]);
                        if i % 25 == 0 {
                            c.save().unwrap();
                        }
                    }
                    c.save().unwrap();
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let c = EmbedCache::open(&path, 4);
        assert_eq!(c.len(), 1800);
        for w in 0..3 {
            for i in [0, 299, 599] {
                let v = c.get(key("m", w, &i.to_string()));
                assert_eq!(v, Some(vec![w as f32, i as f32, 1.0, 2.0]));
            }
        }
        let len = fs::metadata(&path).unwrap().len();
        assert_eq!(
            len,
            HEADER + 1800 * file::record_len(4),
            "no record torn or twice"
        );
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_first_format_file_is_converted_once() {
        let d = dir("first");
        let path = d.join("c.bin");
        fs::create_dir_all(&d).unwrap();
        let records = vec![
            (key("m", 128, "a"), vec![1.0, 2.0]),
            (key("m", 128, "b"), vec![3.0, 4.0]),
        ];
        fs::write(&path, file::first_format(2, &records)).unwrap();
        let c = EmbedCache::open(&path, 2);
        assert_eq!(c.len(), 2);
        assert_eq!(c.get(key("m", 128, "b")), Some(vec![3.0, 4.0]));
        assert_eq!(&fs::read(&path).unwrap()[..8], b"CSEMB002");
        assert_eq!(
            EmbedCache::open(&path, 2).get(key("m", 128, "a")),
            Some(vec![1.0, 2.0])
        );
        // A damaged first-format file is discarded, as before.
        let mut bytes = file::first_format(2, &records);
        bytes[30] ^= 1;
        fs::write(&path, bytes).unwrap();
        assert!(EmbedCache::open(&path, 2).is_empty());
        let _ = fs::remove_dir_all(&d);
    }
}
