//! Embeddings kept in memory and on disk, keyed by (model, window, exact embedded text), so that
//! reopening a corpus or turning a knob back embeds nothing new. The disk file is written whole to a
//! temporary file and renamed over the old one; a damaged file is detected by its checksum,
//! discarded and rebuilt.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"CSEMB001";

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

pub struct EmbedCache {
    dim: usize,
    map: HashMap<u128, Vec<f32>>,
    path: Option<PathBuf>,
    /// Entries added since the last save.
    dirty: usize,
}

impl EmbedCache {
    pub fn in_memory(dim: usize) -> EmbedCache {
        EmbedCache {
            dim,
            map: HashMap::new(),
            path: None,
            dirty: 0,
        }
    }

    /// Open (or start) the cache file at `path`. A damaged file is reported in the log and ignored.
    pub fn open(path: &Path, dim: usize) -> EmbedCache {
        let mut c = EmbedCache::in_memory(dim);
        c.path = Some(path.to_path_buf());
        match fs::read(path) {
            Ok(bytes) => match decode(&bytes, dim) {
                Some(map) => c.map = map,
                None => log::warn!("{}: damaged embedding cache discarded", path.display()),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => log::warn!("{}: {e}", path.display()),
        }
        c
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn get(&self, key: u128) -> Option<&Vec<f32>> {
        self.map.get(&key)
    }

    pub fn insert(&mut self, key: u128, v: Vec<f32>) {
        if v.len() == self.dim && self.map.insert(key, v).is_none() {
            self.dirty += 1;
        }
    }

    /// Write the cache file atomically if anything was added.
    pub fn save(&mut self) -> std::io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        if self.dirty == 0 {
            return Ok(());
        }
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(&encode(&self.map, self.dim))?;
            f.sync_all()?;
        }
        fs::rename(&tmp, path)?;
        self.dirty = 0;
        Ok(())
    }
}

fn checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

fn encode(map: &HashMap<u128, Vec<f32>>, dim: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(24 + map.len() * (16 + dim * 4) + 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(dim as u64).to_le_bytes());
    out.extend_from_slice(&(map.len() as u64).to_le_bytes());
    for (k, v) in map {
        out.extend_from_slice(&k.to_le_bytes());
        for x in v {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

fn decode(bytes: &[u8], dim: usize) -> Option<HashMap<u128, Vec<f32>>> {
    if bytes.len() < 32 || &bytes[..8] != MAGIC {
        return None;
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    if checksum(body) != u64::from_le_bytes(sum.try_into().ok()?) {
        return None;
    }
    let file_dim = u64::from_le_bytes(body[8..16].try_into().ok()?) as usize;
    let n = u64::from_le_bytes(body[16..24].try_into().ok()?) as usize;
    let rec = 16 + dim * 4;
    if file_dim != dim || body.len() != 24 + n * rec {
        return None;
    }
    let mut map = HashMap::with_capacity(n);
    for r in body[24..].chunks_exact(rec) {
        let k = u128::from_le_bytes(r[..16].try_into().ok()?);
        let v = r[16..]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        map.insert(k, v);
    }
    Some(map)
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

    #[test]
    fn round_trip_and_damage() {
        let dir = std::env::temp_dir().join(format!("chunkscope-cache-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let path = dir.join("c.bin");
        let mut c = EmbedCache::open(&path, 3);
        c.insert(key("m", 128, "a"), vec![1.0, 2.0, 3.0]);
        c.insert(key("m", 256, "a"), vec![4.0, 5.0, 6.0]);
        c.save().unwrap();
        let c2 = EmbedCache::open(&path, 3);
        assert_eq!(c2.len(), 2);
        assert_eq!(c2.get(key("m", 128, "a")), Some(&vec![1.0, 2.0, 3.0]));
        assert_ne!(key("m", 128, "a"), key("m", 256, "a"));
        // Flip one byte: the file is discarded, not trusted.
        let mut bytes = fs::read(&path).unwrap();
        bytes[40] ^= 1;
        fs::write(&path, bytes).unwrap();
        assert!(EmbedCache::open(&path, 3).is_empty());
        fs::write(&path, b"garbage").unwrap();
        assert!(EmbedCache::open(&path, 3).is_empty());
        let _ = fs::remove_dir_all(&dir);
    }
}
