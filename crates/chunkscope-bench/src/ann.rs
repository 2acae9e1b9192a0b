//! `chunkscope-bench ann`: the approximate (HNSW) vector index beside flat search at growing
//! sizes: build time and memory, recall@10 against exact search, top-10 latency.

use std::io::Write;
use std::time::Instant;

use anyhow::Result;

use chunkscope_core::index::ann::{
    clustered_queries, clustered_vectors, island_queries, island_vectors, AnnIndex, AnnParams,
};
use chunkscope_core::index::VectorIndex;

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
    let mut rows = Vec::new();
    let dim = args.dim;
    let p = args.params;
    writeln!(
        out,
        "HNSW (hnsw_rs) M {} ef_construction {}, candidates max(4k, ef_search) rescored exactly; \
         {dim}-d unit vectors ({}), {} a topic; {} threads",
        p.max_connections,
        p.ef_construction,
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
    for &n in &args.sizes {
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
        let mut flat_ms: Vec<f64> = queries
            .chunks_exact(dim)
            .take(args.flat_queries.max(1))
            .map(|q| {
                let t = Instant::now();
                let hits = ix.search(q, 10);
                assert_eq!(hits.len(), 10);
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        let (flat50, flat95) = (
            percentile(&mut flat_ms, 0.5),
            percentile(&mut flat_ms, 0.95),
        );
        let before = peak_rss_mb();
        reset_peak_rss();
        let cpu = cpu_seconds();
        let t = Instant::now();
        let mut ann = AnnIndex::build(&ix, p);
        let total = t.elapsed().as_secs_f64();
        let cpu = cpu.zip(cpu_seconds()).map(|(a, b)| b - a);
        let peak = peak_rss_mb();
        let stats = ann.stats();
        let mut efs = vec![p.ef_search];
        efs.extend(args.more_ef.iter().filter(|&&e| e != p.ef_search));
        for (i, &ef) in efs.iter().enumerate() {
            ann.set_ef_search(ef);
            let recall = ann.recall_for(&ix, &queries).unwrap_or(f32::NAN);
            let own = if i == 0 {
                stats.recall_at_10
            } else {
                ann.measure_recall(&ix, p.recall_sample, p.seed)
                    .unwrap_or(f32::NAN)
            };
            let mut ann_ms: Vec<f64> = queries
                .chunks_exact(dim)
                .map(|q| {
                    let t = Instant::now();
                    let (hits, _) = ann.search(&ix, q, 10).expect("fresh");
                    assert_eq!(hits.len(), 10);
                    t.elapsed().as_secs_f64() * 1000.0
                })
                .collect();
            let (build, cpu_s, rss) = if i == 0 {
                (
                    format!("{:.1} s", stats.build_seconds),
                    cpu.map_or("?".into(), |c| format!("{c:.0} s")),
                    peak.map_or("?".into(), |m| format!("{m} MB")),
                )
            } else {
                Default::default()
            };
            let row = AnnRow {
                vectors: n,
                build_seconds: stats.build_seconds,
                peak_rss_mb: peak,
                ef_search: ef,
                recall_at_10: recall,
                ann_p50_ms: percentile(&mut ann_ms, 0.5),
                ann_p95_ms: percentile(&mut ann_ms, 0.95),
                flat_p50_ms: flat50,
                flat_p95_ms: flat95,
            };
            writeln!(
                out,
                "{n:>9} {build:>8} {cpu_s:>8} {rss:>9} {ef:>6} {recall:>10.3} {own:>11.3} \
                 {:>6.2} ms {:>6.2} ms {flat50:>6.1} ms {flat95:>6.1} ms",
                row.ann_p50_ms, row.ann_p95_ms,
            )?;
            out.flush()?;
            rows.push(row);
        }
        writeln!(
            out,
            "{:>9} (graph {:.1} s, recall over {} corpus vectors {:.1} s, {total:.1} s in all; \
             recall@10 over {} held-out queries, self over corpus vectors; {} timed flat; \
             RSS before the build {} MB)",
            "",
            stats.build_seconds,
            stats.recall_queries,
            stats.recall_seconds,
            args.queries,
            flat_ms.len(),
            before.map_or("?".to_string(), |m| m.to_string()),
        )?;
        out.flush()?;
    }
    Ok(rows)
}
