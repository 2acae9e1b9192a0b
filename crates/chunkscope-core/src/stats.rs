//! Figures of the stats pane and of `audit`.

use serde::Serialize;

use super::measure::MeasuredChunk;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Stats {
    pub chunks: usize,
    /// Chunks with an invisible tail.
    pub over_window: usize,
    pub max_embed_tokens: usize,
    pub median_embed_tokens: usize,
    pub p95_embed_tokens: usize,
    /// Content tokens past the window, summed over chunks.
    pub never_embedded_tokens: usize,
    pub total_embed_tokens: usize,
}

impl Stats {
    pub fn of<'a>(
        chunks: impl IntoIterator<Item = &'a MeasuredChunk>,
        window: usize,
        specials: usize,
    ) -> Stats {
        let mut lens: Vec<usize> = Vec::new();
        let mut s = Stats::default();
        for c in chunks {
            let n = c.embed_tokens(specials);
            lens.push(n);
            s.total_embed_tokens += n;
            if let Some(t) = c.tail(window, specials) {
                s.over_window += 1;
                s.never_embedded_tokens += t.tokens;
            }
        }
        lens.sort_unstable();
        s.chunks = lens.len();
        s.max_embed_tokens = lens.last().copied().unwrap_or(0);
        s.median_embed_tokens = percentile(&lens, 50);
        s.p95_embed_tokens = percentile(&lens, 95);
        s
    }

    pub fn over_percent(&self) -> f64 {
        if self.chunks == 0 {
            0.0
        } else {
            100.0 * self.over_window as f64 / self.chunks as f64
        }
    }
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[usize], p: usize) -> usize {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank.min(sorted.len()) - 1]
}

/// A histogram of embed-token lengths with `bins` equal bins from 0 to the larger of the longest
/// chunk and 1.5 x window, so the window always falls inside it. Returns (counts, bin width).
pub fn histogram(lens: &[usize], window: usize, bins: usize) -> (Vec<usize>, usize) {
    let bins = bins.max(1);
    let top = lens
        .iter()
        .copied()
        .max()
        .unwrap_or(0)
        .max(window + window / 2)
        .max(1);
    let width = top.div_ceil(bins).max(1);
    let mut counts = vec![0; bins];
    for &l in lens {
        counts[(l / width).min(bins - 1)] += 1;
    }
    (counts, width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let v: Vec<usize> = (1..=100).collect();
        assert_eq!(percentile(&v, 50), 50);
        assert_eq!(percentile(&v, 95), 95);
        assert_eq!(percentile(&[7], 95), 7);
        assert_eq!(percentile(&[], 50), 0);
    }

    #[test]
    fn histogram_contains_window() {
        let (c, w) = histogram(&[10, 100, 300], 128, 10);
        assert_eq!(c.iter().sum::<usize>(), 3);
        assert!(w * 10 >= 300);
        let (c2, w2) = histogram(&[], 128, 8);
        assert_eq!(c2, vec![0; 8]);
        assert!(w2 * 8 >= 192);
    }
}
