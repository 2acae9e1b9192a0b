//! The cache file: a header (magic, width) and fixed-size records (key, vector, checksum)
//! appended under an exclusive lock. A record whose checksum fails (a torn or damaged write) is
//! skipped on its own; the others are kept. Files of the first format (one checksum over the
//! whole file) are read once and rewritten in this one, to a temporary file renamed over it.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

const MAGIC: &[u8; 8] = b"CSEMB002";
/// The first format: magic, width, count, (key, vector) records, FNV-1a of all of it.
const MAGIC_V1: &[u8; 8] = b"CSEMB001";
pub(super) const HEADER: u64 = 16;

/// Bytes of one record of `dim` values.
pub(super) fn record_len(dim: usize) -> u64 {
    (16 + dim * 4 + 8) as u64
}

/// The checksum of a record's key and vector bytes, eight bytes at a time.
fn checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0x243f_6a88_85a3_08d3 ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    let mut mix = |w: u64| {
        h = (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^= h >> 29;
    };
    for w in &mut words {
        mix(u64::from_le_bytes(w.try_into().expect("8 bytes")));
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        mix(u64::from_le_bytes(last));
    }
    h
}

/// Append one record (key, vector, checksum) to `out`.
fn put_record(out: &mut Vec<u8>, key: u128, v: &[f32]) {
    let start = out.len();
    out.extend_from_slice(&key.to_le_bytes());
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    let sum = checksum(&out[start..]);
    out.extend_from_slice(&sum.to_le_bytes());
}

fn header(dim: usize) -> [u8; 16] {
    let mut h = [0u8; 16];
    h[..8].copy_from_slice(MAGIC);
    h[8..].copy_from_slice(&(dim as u64).to_le_bytes());
    h
}

/// What the start of a file says.
pub(super) enum Header {
    /// This format, at this width.
    Ours,
    /// The first format at this width: convert it.
    First,
    /// Another width, another format or garbage.
    Foreign,
}

pub(super) fn read_header(f: &mut File, dim: usize) -> io::Result<Header> {
    let mut h = [0u8; 16];
    f.seek(SeekFrom::Start(0))?;
    if f.read_exact(&mut h).is_err() {
        return Ok(Header::Foreign);
    }
    let width = u64::from_le_bytes(h[8..].try_into().expect("8 bytes"));
    Ok(match &h[..8] {
        m if m == MAGIC && width == dim as u64 => Header::Ours,
        m if m == MAGIC_V1 && width == dim as u64 => Header::First,
        _ => Header::Foreign,
    })
}

/// Read the records between `from` and `to` (a multiple of records past the header),
/// calling `found(key, offset of its vector)` for each whose checksum holds; returns how many
/// were skipped as damaged.
pub(super) fn scan(
    f: &mut File,
    dim: usize,
    from: u64,
    to: u64,
    mut found: impl FnMut(u128, u64),
) -> io::Result<usize> {
    let rec = record_len(dim);
    f.seek(SeekFrom::Start(from))?;
    let mut r = BufReader::with_capacity(1 << 20, f);
    let mut buf = vec![0u8; rec as usize];
    let mut damaged = 0;
    let mut at = from;
    while at + rec <= to {
        r.read_exact(&mut buf)?;
        let (body, sum) = buf.split_at(buf.len() - 8);
        if checksum(body) == u64::from_le_bytes(sum.try_into().expect("8 bytes")) {
            let key = u128::from_le_bytes(body[..16].try_into().expect("16 bytes"));
            found(key, at + 16);
        } else {
            damaged += 1;
        }
        at += rec;
    }
    Ok(damaged)
}

/// Where the whole records of a file of `len` bytes end.
pub(super) fn whole_records_end(len: u64, dim: usize) -> u64 {
    if len < HEADER {
        return HEADER;
    }
    HEADER + (len - HEADER) / record_len(dim) * record_len(dim)
}

/// Read the vector at `offset`.
pub(super) fn read_vector(f: &mut File, offset: u64, dim: usize) -> io::Result<Vec<f32>> {
    let mut bytes = vec![0u8; dim * 4];
    #[cfg(unix)]
    std::os::unix::fs::FileExt::read_exact_at(f, &mut bytes, offset)?;
    #[cfg(not(unix))]
    {
        f.seek(SeekFrom::Start(offset))?;
        f.read_exact(&mut bytes)?;
    }
    Ok(floats(&bytes).collect())
}

/// Little-endian f32s.
fn floats(bytes: &[u8]) -> impl Iterator<Item = f32> + '_ {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Open `path` to read and append, or to read only where it cannot be written.
pub(super) fn open_existing(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)
        .or_else(|_| File::open(path))
}

/// Open (or create) `path` to read and append.
pub(super) fn open_for_append(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
}

/// A header for a new (empty) file.
pub(super) fn write_header(f: &mut File, dim: usize) -> io::Result<()> {
    f.write_all(&header(dim))
}

/// Append `records` in batches of whole records, one write each: an append that another
/// process's runs beside (without a lock) can interleave with it only between records.
pub(super) fn append_records<'a>(
    f: &mut File,
    dim: usize,
    records: impl Iterator<Item = (u128, &'a [f32])>,
) -> io::Result<()> {
    const BATCH: usize = 256;
    let mut buf = Vec::with_capacity(BATCH * record_len(dim) as usize);
    let mut n = 0;
    for (k, v) in records {
        put_record(&mut buf, k, v);
        n += 1;
        if n == BATCH {
            f.write_all(&buf)?;
            buf.clear();
            n = 0;
        }
    }
    f.write_all(&buf)
}

/// Records on their way to a file.
pub(super) struct Records<W: Write> {
    w: W,
    buf: Vec<u8>,
}

impl<W: Write> Records<W> {
    fn new(w: W) -> Records<W> {
        Records { w, buf: Vec::new() }
    }

    pub(super) fn put(&mut self, key: u128, v: &[f32]) -> io::Result<()> {
        self.buf.clear();
        put_record(&mut self.buf, key, v);
        self.w.write_all(&self.buf)
    }

    /// A record from its key's and vector's bytes as they lie in a file of the first format.
    fn put_body(&mut self, body: &[u8]) -> io::Result<()> {
        self.buf.clear();
        self.buf.extend_from_slice(body);
        let sum = checksum(body);
        self.buf.extend_from_slice(&sum.to_le_bytes());
        self.w.write_all(&self.buf)
    }

    fn into_inner(self) -> W {
        self.w
    }
}

/// Replace `path` with a file of the records `fill` puts: written to a temporary file beside it,
/// synced and renamed over it, so a reader sees the old file or the new one, never half of one.
pub(super) fn write_whole(
    path: &Path,
    dim: usize,
    fill: impl FnOnce(&mut Records<BufWriter<File>>) -> io::Result<()>,
) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let written = (|| {
        let mut w = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
        w.write_all(&header(dim))?;
        let mut records = Records::new(w);
        fill(&mut records)?;
        records
            .into_inner()
            .into_inner()
            .map_err(|e| e.into_error())?
            .sync_all()
    })();
    match written {
        Ok(()) => fs::rename(&tmp, path),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Rewrite a file of the first format in this one, streaming (it may be hundreds of MB): its
/// checksum is checked in a first pass, its records copied in a second. Returns how many
/// records it held, or None when it is damaged (left as it is).
pub(super) fn convert_first_format(path: &Path, dim: usize) -> io::Result<Option<u64>> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let mut head = [0u8; 24];
    if len < 32 || f.read_exact(&mut head).is_err() || &head[..8] != MAGIC_V1 {
        return Ok(None);
    }
    let file_dim = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes"));
    let n = u64::from_le_bytes(head[16..24].try_into().expect("8 bytes"));
    let rec = 16 + dim as u64 * 4;
    if file_dim != dim as u64 || n.checked_mul(rec).and_then(|b| b.checked_add(32)) != Some(len) {
        return Ok(None);
    }
    f.seek(SeekFrom::Start(0))?;
    let mut r = BufReader::with_capacity(1 << 20, &mut f);
    let mut h = FNV_OFFSET;
    let mut left = len - 8;
    let mut buf = vec![0u8; 1 << 16];
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        r.read_exact(&mut buf[..n])?;
        h = fnv_feed(h, &buf[..n]);
        left -= n as u64;
    }
    let mut sum = [0u8; 8];
    r.read_exact(&mut sum)?;
    if h != u64::from_le_bytes(sum) {
        return Ok(None);
    }
    drop(r);
    f.seek(SeekFrom::Start(24))?;
    let mut r = BufReader::with_capacity(1 << 20, f);
    let mut body = vec![0u8; rec as usize];
    write_whole(path, dim, |out| {
        for _ in 0..n {
            r.read_exact(&mut body)?;
            out.put_body(&body)?;
        }
        Ok(())
    })?;
    Ok(Some(n))
}

/// A file of the first format holding `records`, for the conversion's test.
#[cfg(test)]
pub(super) fn first_format(dim: usize, records: &[(u128, Vec<f32>)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC_V1);
    out.extend_from_slice(&(dim as u64).to_le_bytes());
    out.extend_from_slice(&(records.len() as u64).to_le_bytes());
    for (k, v) in records {
        out.extend_from_slice(&k.to_le_bytes());
        for x in v {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    let sum = fnv_feed(FNV_OFFSET, &out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// The first format's checksum: 64-bit FNV-1a, fed piece by piece from `FNV_OFFSET`.
const FNV_OFFSET: u64 = 0xcbf29ce484222325;

fn fnv_feed(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}
