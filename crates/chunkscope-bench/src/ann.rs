//! `chunkscope-bench ann`: the approximate (HNSW) vector index beside flat search at growing
//! sizes: build time and memory, recall@10 against exact search, top-10 latency.

use std::io::Write;
use std::time::Instant;

use anyhow::Result;

use chunkscope_core::index::ann::{
    clustered_queries, clustered_vectors, island_queries, island_vectors, AnnIndex, AnnParams,
};
use chunkscope_core::index::{AnnStats, VectorIndex};

use crate::common::{peak_rss_mb, percentile, reset_peak_rss};

pub struct AnnArgs {
    pub sizes: Vec<usize>,
    pub dim: usize,
    /// Held-out queries for recall@10 and the ANN latency.
    pub queries: usize,
    /// Queries timed on the flat index (a scan of 10^6 vectors takes a quarter of a second).
    pub flat_queries: usize,
    /// Vectors per topic of the generated data.
    pub per_topic: usize,
    pub params: AnnParams,
    /// `island_vectors` instead of `clustered_vectors`.
    pub islands: bool,
    /// More breadths of search to measure on the same graph (recall for time).
    pub more_ef: Vec<usize>,
}

/// CPU seconds this process has used (user + system), where /proc says.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// One line of the table: a size at one breadth of search.
#[derive(Debug, Clone)]
pub struct AnnRow {
    pub vectors: usize,
    /// The graph's build (wall seconds) and the process's peak memory during it.
    pub build_seconds: f64,
    pub peak_rss_mb: Option<u64>,
    pub ef_search: usize,
    /// Against exact search, over the held-out queries.
    pub recall_at_10: f32,
    pub ann_p50_ms: f64,
    pub ann_p95_ms: f64,
    pub flat_p50_ms: f64,
    pub flat_p95_ms: f64,
}

/// Print the table and return its rows (the default ef_search first for each size).
pub fn ann(args: &AnnArgs, out: &mut dyn Write) -> Result<Vec<AnnRow>> {
    header(args, out)?;
    let mut rows = Vec::new();
    for &n in &args.sizes {
        rows.extend(one_size(args, n, out)?);
    }
    Ok(rows)
}

/// The settings line and the column heads.
fn header(args: &AnnArgs, out: &mut dyn Write) -> Result<()> {
    let p = args.params;
    writeln!(
        out,
        "HNSW (hnsw_rs) M {} ef_construction {}, candidates max(4k, ef_search) rescored exactly; \
         {}-d unit vectors ({}), {} a topic; {} threads",
        p.max_connections,
        p.ef_construction,
        args.dim,
        if args.islands {
            "islands"
        } else {
            "latent topics"
        },
        args.per_topic,
        rayon::current_num_threads()
    )?;
    writeln!(
        out,
        "{:>9} {:>8} {:>8} {:>9} {:>6} {:>10} {:>11} {:>9} {:>9} {:>9} {:>9}",
        "vectors",
        "build",
        "CPU",
        "peak RSS",
        "ef",
        "recall@10",
        "self rec@10",
        "ANN p50",
        "ANN p95",
        "flat p50",
        "flat p95"
    )?;
    Ok(())
}

/// `n` generated vectors in a flat index, and the held-out queries (flat, `dim` apiece).
fn generated(args: &AnnArgs, n: usize) -> (VectorIndex, Vec<f32>) {
    let dim = args.dim;
    let topics = (n / args.per_topic.max(1)).max(1);
    let seed = 42;
    let mut ix = VectorIndex::new(dim);
    {
        let data = if args.islands {
            island_vectors(n, dim, topics, seed)
        } else {
            clustered_vectors(n, dim, topics, seed)
        };
        for (i, v) in data.chunks_exact(dim).enumerate() {
            ix.push(i as u64, v);
        }
    }
    let queries = if args.islands {
        island_queries(args.queries, dim, topics, seed)
    } else {
        clustered_queries(args.queries, dim, topics, seed)
    };
    (ix, queries)
}

/// Milliseconds of each top-10 search, `search` giving the number of hits (which must be 10).
fn time_top10<'a>(
    queries: impl Iterator<Item = &'a [f32]>,
    mut search: impl FnMut(&[f32]) -> usize,
) -> Vec<f64> {
    queries
        .map(|q| {
            let t = Instant::now();
            let hits = search(q);
            assert_eq!(hits, 10);
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect()
}

/// The graph over one size's vectors, with what its build cost.
struct Built {
    ann: AnnIndex,
    stats: AnnStats,
    /// Wall seconds of `AnnIndex::build` as timed here (the graph and its own recall sample).
    total_s: f64,
    cpu_s: Option<f64>,
    peak_rss_mb: Option<u64>,
    /// Peak memory before the build.
    before_mb: Option<u64>,
}

fn build(ix: &VectorIndex, p: AnnParams) -> Built {
    let before_mb = peak_rss_mb();
    reset_peak_rss();
    let cpu = cpu_seconds();
    let t = Instant::now();
    let ann = AnnIndex::build(ix, p);
    let total_s = t.elapsed().as_secs_f64();
    let cpu_s = cpu.zip(cpu_seconds()).map(|(a, b)| b - a);
    let peak_rss_mb = peak_rss_mb();
    let stats = ann.stats();
    Built {
        ann,
        stats,
        total_s,
        cpu_s,
        peak_rss_mb,
        before_mb,
    }
}

/// One size: flat search timed, the graph built, then a row per breadth of search.
fn one_size(args: &AnnArgs, n: usize, out: &mut dyn Write) -> Result<Vec<AnnRow>> {
    let dim = args.dim;
    let p = args.params;
    let (ix, queries) = generated(args, n);
    let flat_queries = queries.chunks_exact(dim).take(args.flat_queries.max(1));
    let mut flat_ms = time_top10(flat_queries, |q| ix.search(q, 10).len());
    let (flat50, flat95) = (
        percentile(&mut flat_ms, 0.5),
        percentile(&mut flat_ms, 0.95),
    );
    let mut b = build(&ix, p);
    let mut efs = vec![p.ef_search];
    efs.extend(args.more_ef.iter().filter(|&&e| e != p.ef_search));
    let mut rows = Vec::new();
    for (i, &ef) in efs.iter().enumerate() {
        b.ann.set_ef_search(ef);
        let recall = b.ann.recall_for(&ix, &queries).unwrap_or(f32::NAN);
        let own = if i == 0 {
            b.stats.recall_at_10
        } else {
            b.ann
                .measure_recall(&ix, p.recall_sample, p.seed)
                .unwrap_or(f32::NAN)
        };
        let mut ann_ms = time_top10(queries.chunks_exact(dim), |q| {
            b.ann.search(&ix, q, 10).expect("fresh").0.len()
        });
        let row = AnnRow {
            vectors: n,
            build_seconds: b.stats.build_seconds,
            peak_rss_mb: b.peak_rss_mb,
            ef_search: ef,
            recall_at_10: recall,
            ann_p50_ms: percentile(&mut ann_ms, 0.5),
            ann_p95_ms: percentile(&mut ann_ms, 0.95),
            flat_p50_ms: flat50,
            flat_p95_ms: flat95,
        };
        write_row(&row, (i == 0).then_some(&b), own, out)?;
        rows.push(row);
    }
    writeln!(
        out,
        "{:>9} (graph {:.1} s, recall over {} corpus vectors {:.1} s, {:.1} s in all; \
         recall@10 over {} held-out queries, self over corpus vectors; {} timed flat; \
         RSS before the build {} MB)",
        "",
        b.stats.build_seconds,
        b.stats.recall_queries,
        b.stats.recall_seconds,
        b.total_s,
        args.queries,
        flat_ms.len(),
        b.before_mb.map_or("?".to_string(), |m| m.to_string()),
    )?;
    out.flush()?;
    Ok(rows)
}

/// One line of the table; the build's figures only on the first line of a size (`build`).
fn write_row(row: &AnnRow, build: Option<&Built>, own: f32, out: &mut dyn Write) -> Result<()> {
    let (build, cpu_s, rss) = match build {
        Some(b) => (
            format!("{:.1} s", b.stats.build_seconds),
            b.cpu_s.map_or("?".into(), |c| format!("{c:.0} s")),
            b.peak_rss_mb.map_or("?".into(), |m| format!("{m} MB")),
        ),
        None => Default::default(),
    };
    let (n, ef, recall) = (row.vectors, row.ef_search, row.recall_at_10);
    writeln!(
        out,
        "{n:>9} {build:>8} {cpu_s:>8} {rss:>9} {ef:>6} {recall:>10.3} {own:>11.3} \
         {:>6.2} ms {:>6.2} ms {:>6.1} ms {:>6.1} ms",
        row.ann_p50_ms, row.ann_p95_ms, row.flat_p50_ms, row.flat_p95_ms,
    )?;
    out.flush()?;
    Ok(())
}
