//! Self-attention, one task per sequence and head (sequences packed without padding, so no mask).
//! In f32 the products run on the gemm crate; with bf16 dense layers they run on the bf16 kernels
//! too (AMX or AVX-512 BF16 where the CPU has them): Q K^T with the keys as panels, then P V with
//! V^T as the panels (a head's 32 dimensions fill half a panel, and the kernels skip the other
//! half). The softmax runs in f32 and rounds its probabilities to bf16 as it writes them where the
//! product reads them. Each thread keeps its buffers for every head, layer and batch.

use std::cell::RefCell;

use gemm::Parallelism;
use rayon::prelude::*;

use super::{Bert, Family};
use crate::embed::kernels::{exp_rows, softmax_to_bf16};
use crate::embed::lowp::{Bf16Operands, Precision};

/// A thread's attention buffers, grown to the longest sequence seen and kept.
#[derive(Default)]
struct Buffers {
    scores: Vec<f32>,
    inv: Vec<f32>,
    qk: Option<Bf16Operands>,
    pv: Option<Bf16Operands>,
}

thread_local! {
    static BUFFERS: RefCell<Buffers> = RefCell::new(Buffers::default());
}

/// Scores a thread keeps between heads: a 1,024-token sequence's (4 MB). A longer one's buffers
/// are dropped after each head, so one long text does not leave hundreds of MB behind.
const KEEP_SCORES: usize = 1 << 20;

/// One sequence's rows in the packed Q, K, V projections (`stride` values a row) and where its
/// context rows start.
struct Head<'a> {
    qkv: &'a [f32],
    /// Offsets of this head's query, key and value columns in the sequence's first row.
    q: usize,
    k: usize,
    v: usize,
    stride: usize,
    len: usize,
    d: usize,
}

impl Head<'_> {
    fn q(&self, i: usize) -> &[f32] {
        &self.qkv[self.q + i * self.stride..][..self.d]
    }
    fn k(&self, i: usize) -> &[f32] {
        &self.qkv[self.k + i * self.stride..][..self.d]
    }
    fn v(&self, i: usize) -> &[f32] {
        &self.qkv[self.v + i * self.stride..][..self.d]
    }
}

impl Bert {
    /// Self-attention of every sequence and head; writes the context vectors into `ctx`.
    pub(super) fn attention(
        &self,
        qkv: &[f32],
        seqs: &[Vec<u32>],
        starts: &[usize],
        ctx: &mut [f32],
    ) {
        let h = self.config.hidden;
        let heads = self.config.heads;
        let d = h / heads;
        let stride = 3 * h;
        let ctx_ptr = SendPtr(ctx.as_mut_ptr());
        let bf16 = self.precision == Precision::Bf16;
        let tasks: Vec<(usize, usize)> = (0..seqs.len())
            .filter(|&s| !seqs[s].is_empty())
            .flat_map(|s| (0..heads).map(move |hd| (s, hd)))
            .collect();
        tasks.par_iter().for_each(|&(s, hd)| {
            let base = starts[s] * stride;
            let head = Head {
                qkv,
                q: base + hd * d,
                k: base + h + hd * d,
                v: base + 2 * h + hd * d,
                stride,
                len: seqs[s].len(),
                d,
            };
            // SAFETY: the head's block (its rows, its columns) of ctx, which no other task writes.
            let out = unsafe { ctx_ptr.get().add(starts[s] * h + hd * d) };
            let run = |b: &mut Buffers| {
                if bf16 {
                    self.head_bf16(&head, hd, b, out, h)
                } else {
                    self.head_f32(&head, hd, b, out, h)
                }
            };
            // A task that waits inside rayon may run another on this thread: that one gets its
            // own buffers.
            BUFFERS.with(|b| match b.try_borrow_mut() {
                Ok(mut b) => {
                    run(&mut b);
                    if b.scores.capacity() > KEEP_SCORES {
                        *b = Buffers::default();
                    }
                }
                Err(_) => run(&mut Buffers::default()),
            });
        });
    }

    /// One head in f32 (gemm), its context written from `out` at stride `h`.
    fn head_f32(&self, head: &Head, hd: usize, b: &mut Buffers, out: *mut f32, h: usize) {
        let (len, d, stride) = (head.len, head.d, head.stride);
        let scale = 1.0 / (d as f32).sqrt();
        b.scores.clear();
        b.scores.resize(len * len, 0.0);
        // SAFETY: q, k and v address `len` rows of `d` values at `stride` inside qkv; scores
        // holds len x len values.
        unsafe {
            // scores (len x len) = scale * Q (len x d) K^T (d x len)
            gemm::gemm(
                len,
                len,
                d,
                b.scores.as_mut_ptr(),
                1,
                len as isize,
                false,
                head.q(0).as_ptr(),
                1,
                stride as isize,
                head.k(0).as_ptr(),
                stride as isize,
                1,
                0.0,
                scale,
                false,
                false,
                false,
                Parallelism::None,
            );
        }
        if let Some(by_distance) = self.distance_bias(hd, len) {
            add_by_offset(&mut b.scores, len, &by_distance);
        }
        b.inv.clear();
        b.inv.resize(len, 0.0);
        exp_rows(&mut b.scores, len, &mut b.inv);
        // SAFETY: `out` addresses len rows of d values at stride h (the caller's block).
        unsafe {
            // ctx (len x d) = P (len x len) V (len x d)
            gemm::gemm(
                len,
                d,
                len,
                out,
                1,
                h as isize,
                false,
                b.scores.as_ptr(),
                1,
                len as isize,
                head.v(0).as_ptr(),
                1,
                stride as isize,
                0.0,
                1.0,
                false,
                false,
                false,
                Parallelism::None,
            );
            // Normalise here: len x d values instead of len x len.
            for (i, f) in b.inv.iter().enumerate() {
                let row = std::slice::from_raw_parts_mut(out.add(i * h), d);
                row.iter_mut().for_each(|x| *x *= f);
            }
        }
    }

    /// One head on the bf16 kernels, its context written from `out` at stride `h`.
    fn head_bf16(&self, head: &Head, hd: usize, b: &mut Buffers, out: *mut f32, h: usize) {
        let (len, d) = (head.len, head.d);
        let scale = 1.0 / (d as f32).sqrt();
        let qk = b.qk.get_or_insert_with(Bf16Operands::default);
        qk.shape(len, len, d);
        for i in 0..len {
            qk.set_x_row(i, head.q(i), scale);
            qk.set_w_row(i, head.k(i));
        }
        b.scores.resize(len * len, 0.0);
        qk.run(&mut b.scores, len);
        if let Some(by_distance) = self.distance_bias(hd, len) {
            add_by_offset(&mut b.scores, len, &by_distance);
        }
        // ctx (len x d) = P (len x len) V: the probabilities as the rows, V^T as the panels.
        let pv = b.pv.get_or_insert_with(Bf16Operands::default);
        pv.shape(len, d, len);
        for (i, row) in b.scores[..len * len].chunks_exact_mut(len).enumerate() {
            softmax_to_bf16(row, pv.x_row_mut(i));
        }
        for t in (0..len).step_by(2) {
            pv.set_w_cols(t, head.v(t), (t + 1 < len).then(|| head.v(t + 1)));
        }
        // SAFETY: `out` addresses len rows of d values at stride h, the caller's block.
        unsafe { pv.run_into(out, h) };
    }

    /// MPNet's relative bias or JinaBERT's ALiBi for head `hd` of a sequence of `len` tokens, by
    /// key position - query position + len - 1; None for the other families.
    fn distance_bias(&self, hd: usize, len: usize) -> Option<Vec<f32>> {
        let heads = self.config.heads;
        let by_offset = |f: &dyn Fn(isize) -> f32| -> Vec<f32> {
            (0..2 * len - 1)
                .map(|k| f(k as isize - (len as isize - 1)))
                .collect()
        };
        match (&self.rel_bias, self.config.family) {
            (Some((bias, buckets)), _) => Some(by_offset(&|rel| {
                bias[relative_bucket(rel, *buckets, 128) * heads + hd]
            })),
            (None, Family::Jina) => {
                let slope = alibi_slopes(heads)[hd];
                Some(by_offset(&|rel| -slope * rel.unsigned_abs() as f32))
            }
            _ => None,
        }
    }
}

/// scores[i][j] += by_distance[j - i + len - 1] over a (len x len) score matrix.
fn add_by_offset(scores: &mut [f32], len: usize, by_distance: &[f32]) {
    for i in 0..len {
        let row = &mut scores[i * len..(i + 1) * len];
        let base = len - 1 - i;
        for (j, x) in row.iter_mut().enumerate() {
            *x += by_distance[base + j];
        }
    }
}

/// MPNet's bidirectional relative position bucket of `rel` = key position - query position:
/// half the buckets for each direction, exact up to a quarter of them, logarithmic beyond, the
/// last bucket of a direction from `max_distance` on.
fn relative_bucket(rel: isize, buckets: usize, max_distance: usize) -> usize {
    let half = buckets / 2;
    let n = -rel;
    let direction = if n < 0 { half } else { 0 };
    let n = n.unsigned_abs();
    let exact = half / 2;
    let within = if n < exact {
        n
    } else {
        let scaled = (n as f64 / exact as f64).ln() / (max_distance as f64 / exact as f64).ln()
            * (half - exact) as f64;
        (exact + scaled as usize).min(half - 1)
    };
    direction + within
}

/// ALiBi's head slopes: the geometric series from 2^(-8/n) for n heads; for a head count that is
/// not a power of two, the series of the power below, then every other slope of the power above.
pub(super) fn alibi_slopes(heads: usize) -> Vec<f32> {
    let series = |n: usize| -> Vec<f64> {
        let first = 2f64.powf(-8.0 / n as f64);
        (1..=n).map(|k| first.powi(k as i32)).collect()
    };
    let below = 1usize << heads.ilog2();
    let mut slopes = series(below);
    if below != heads {
        slopes.extend(series(2 * below).into_iter().step_by(2).take(heads - below));
    }
    slopes.into_iter().map(|s| s as f32).collect()
}

#[derive(Clone, Copy)]
struct SendPtr(*mut f32);
// SAFETY: used only for disjoint writes from the attention tasks.
unsafe impl Send for SendPtr {}
unsafe impl Sync for SendPtr {}
impl SendPtr {
    fn get(self) -> *mut f32 {
        self.0
    }
}
