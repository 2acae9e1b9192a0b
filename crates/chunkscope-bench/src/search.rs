//! `chunkscope-bench search`: exact top-10 over flat vectors at growing sizes.

use std::io::Write;
use std::time::Instant;

use anyhow::Result;

/// `chunkscope bench search`: exact top-10 over flat normalised vectors at growing sizes, to say
/// where a flat index stops being fine for an interactive query.
pub fn search(sizes: &[usize], out: &mut dyn Write) -> Result<()> {
    use chunkscope_core::index::VectorIndex;
    let dim = 384;
    // A small deterministic generator: no dependency, same vectors every run.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let mut unit = |n: usize| -> Vec<f32> {
        let v: Vec<f32> = (0..n).map(|_| next()).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    };
    writeln!(
        out,
        "{:>9} {:>12} {:>12} {:>10}",
        "vectors", "top-10 p50", "top-10 max", "memory"
    )?;
    for &n in sizes {
        let mut ix = VectorIndex::new(dim);
        for i in 0..n {
            ix.push(i as u64, &unit(dim));
        }
        let mut times: Vec<f64> = (0..20)
            .map(|_| {
                let q = unit(dim);
                let t = Instant::now();
                let hits = ix.search(&q, 10);
                assert_eq!(hits.len(), 10.min(n));
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        times.sort_by(f64::total_cmp);
        writeln!(
            out,
            "{n:>9} {:>9.2} ms {:>9.2} ms {:>7.0} MB",
            times[times.len() / 2],
            times[times.len() - 1],
            (n * dim * 4) as f64 / 1e6
        )?;
    }
    Ok(())
}
