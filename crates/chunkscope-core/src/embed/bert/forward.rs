//! The forward pass: embeddings, then per layer attention (per sequence and head, packed
//! without padding) and the feed-forward block.

use gemm::Parallelism;
use rayon::prelude::*;

use super::{Bert, Dense, Family, Layer};
use crate::embed::kernels::{act_bias, add_layer_norm_rows, exp_rows, layer_norm_rows, Activation};

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

impl Bert {
    /// Mean-pooled, L2-normalised embeddings of token id sequences (specials included).
    pub fn embed(&self, seqs: &[Vec<u32>]) -> Vec<Vec<f32>> {
        let modules = crate::embed::st::StModules {
            normalize: true,
            ..Default::default()
        };
        let h = self.config.hidden;
        let (x, starts) = self.hidden_states(seqs);
        seqs.iter()
            .zip(&starts)
            .map(|(seq, &at)| {
                if seq.is_empty() {
                    return vec![0.0; h];
                }
                modules.pool(&x[at * h..(at + seq.len()) * h], h, 0)
            })
            .collect()
    }

    /// The last layer's states of every token of every sequence, packed (rows of `hidden`), and
    /// the row each sequence starts at.
    pub fn hidden_states(&self, seqs: &[Vec<u32>]) -> (Vec<f32>, Vec<usize>) {
        self.hidden_states_typed(seqs, None)
    }

    /// Rows of the token type table (2 for BERT, 1 for RoBERTa and models without types).
    pub fn token_type_rows(&self) -> usize {
        self.token_types.len() / self.config.hidden
    }

    /// As `hidden_states`, with each token's type (a cross-encoder's pair: 0 for the query, 1 for
    /// the passage); types past the table read its last row, no types read row 0.
    pub fn hidden_states_typed(
        &self,
        seqs: &[Vec<u32>],
        types: Option<&[Vec<u32>]>,
    ) -> (Vec<f32>, Vec<usize>) {
        let c = &self.config;
        let total: usize = seqs.iter().map(Vec::len).sum();
        if total == 0 {
            return (Vec::new(), vec![0; seqs.len()]);
        }
        let starts: Vec<usize> = seqs
            .iter()
            .scan(0, |acc, s| {
                let at = *acc;
                *acc += s.len();
                Some(at)
            })
            .collect();
        let mut x = self.embeddings(seqs, types, &starts, total);
        layer_norm_rows(&mut x, &self.emb_ln_g, &self.emb_ln_b, c.eps);
        let rotary = (c.family == Family::Nomic).then(|| {
            let longest = seqs.iter().map(Vec::len).max().unwrap_or(0);
            Rotary::new(c.hidden / c.heads, c.rotary_base, longest)
        });
        let packed = PackedSeqs {
            seqs,
            starts: &starts,
            total,
            rotary: rotary.as_ref(),
        };
        let mut scratch = Scratch::new(c, total);
        for layer in &self.layers {
            self.encoder_layer(layer, &packed, &mut x, &mut scratch);
        }
        (x, starts)
    }

    /// One encoder layer over the packed states `x`: attention, then the feed-forward block,
    /// each added to its input and normalised.
    fn encoder_layer(&self, layer: &Layer, p: &PackedSeqs, x: &mut Vec<f32>, s: &mut Scratch) {
        let c = &self.config;
        let (h, total) = (c.hidden, p.total);
        linear(
            x,
            total,
            h,
            &layer.qkv_w,
            Some(&layer.qkv_b),
            3 * h,
            &mut s.qkv,
        );
        if let Some(r) = p.rotary {
            r.apply(&mut s.qkv, p.seqs, p.starts, h, c.heads);
        }
        self.attention(&s.qkv, p.seqs, p.starts, &mut s.ctx);
        linear(&s.ctx, total, h, &layer.out_w, None, h, &mut s.tmp);
        residual_norm(
            &mut s.tmp,
            x,
            h,
            &layer.out_b,
            &layer.ln1_g,
            &layer.ln1_b,
            c.eps,
        );
        std::mem::swap(x, &mut s.tmp);
        self.feed_forward(layer, x, total, s);
        linear(
            &s.inter,
            total,
            c.intermediate,
            &layer.down_w,
            None,
            h,
            &mut s.tmp,
        );
        residual_norm(
            &mut s.tmp,
            x,
            h,
            &layer.down_b,
            &layer.ln2_g,
            &layer.ln2_b,
            c.eps,
        );
        std::mem::swap(x, &mut s.tmp);
    }

    /// The feed-forward block's up projection and activation (gated or not) into `s.inter`.
    fn feed_forward(&self, layer: &Layer, x: &[f32], total: usize, s: &mut Scratch) {
        let c = &self.config;
        let (h, i) = (c.hidden, c.intermediate);
        if c.gated() {
            linear(x, total, h, &layer.inter_w, None, 2 * i, &mut s.gates);
            s.inter
                .par_chunks_mut(i * 64)
                .zip(s.gates.par_chunks(2 * i * 64))
                .for_each(|(out, g)| gate_rows(out, g, &layer.inter_b, c.act));
        } else {
            linear(x, total, h, &layer.inter_w, None, i, &mut s.inter);
            s.inter
                .par_chunks_mut(i * 64)
                .for_each(|rows| act_bias(rows, &layer.inter_b, c.act));
        }
    }

    /// Word + position + token type embeddings of every token, packed (before the LayerNorm).
    fn embeddings(
        &self,
        seqs: &[Vec<u32>],
        types: Option<&[Vec<u32>]>,
        starts: &[usize],
        total: usize,
    ) -> Vec<f32> {
        let c = &self.config;
        let h = c.hidden;
        let last_type = self.token_type_rows().saturating_sub(1);
        let mut x = vec![0.0f32; total * h];
        for (s, seq) in seqs.iter().enumerate() {
            for (p, &id) in seq.iter().enumerate() {
                let row = &mut x[(starts[s] + p) * h..][..h];
                let id = (id as usize).min(c.vocab - 1);
                let t = types
                    .and_then(|t| t.get(s)?.get(p).copied())
                    .map_or(0, |t| (t as usize).min(last_type));
                let w = &self.word[id * h..][..h];
                let ty = &self.token_types[t * h..][..h];
                for k in 0..h {
                    row[k] = w[k] + ty[k];
                }
                if !self.position.is_empty() {
                    let at = (p + c.position_offset).min(c.max_positions - 1);
                    for (x, pos) in row.iter_mut().zip(&self.position[at * h..][..h]) {
                        *x += pos;
                    }
                }
            }
        }
        x
    }

    /// Self-attention of every sequence and head; writes the context vectors into `ctx`.
    fn attention(&self, qkv: &[f32], seqs: &[Vec<u32>], starts: &[usize], ctx: &mut [f32]) {
        let h = self.config.hidden;
        let heads = self.config.heads;
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        let stride = 3 * h;
        let ctx_ptr = SendPtr(ctx.as_mut_ptr());
        let tasks: Vec<(usize, usize)> = (0..seqs.len())
            .flat_map(|s| (0..heads).map(move |hd| (s, hd)))
            .collect();
        tasks.par_iter().for_each_init(
            || (Vec::new(), Vec::new()),
            |(scores, inv): &mut (Vec<f32>, Vec<f32>), &(s, hd)| {
                let len = seqs[s].len();
                if len == 0 {
                    return;
                }
                let base = starts[s] * stride;
                scores.clear();
                scores.resize(len * len, 0.0);
                let q = qkv[base + hd * d..].as_ptr();
                let k = qkv[base + h + hd * d..].as_ptr();
                let v = qkv[base + 2 * h + hd * d..].as_ptr();
                // SAFETY: all pointers address rows of this sequence inside `qkv`/`scores`/`ctx` with the
                // strides given; each task writes a disjoint block (its rows, its head's columns) of ctx.
                unsafe {
                    // scores (len x len) = scale * Q (len x d) K^T (d x len)
                    gemm::gemm(
                        len,
                        len,
                        d,
                        scores.as_mut_ptr(),
                        1,
                        len as isize,
                        false,
                        q,
                        1,
                        stride as isize,
                        k,
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
                    add_by_offset(scores, len, &by_distance);
                }
                inv.clear();
                inv.resize(len, 0.0);
                exp_rows(scores, len, inv);
                unsafe {
                    let out = ctx_ptr.get().add(starts[s] * h + hd * d);
                    // ctx (len x d) = P (len x len) V (len x d)
                    gemm::gemm(
                        len,
                        d,
                        len,
                        out,
                        1,
                        h as isize,
                        false,
                        scores.as_ptr(),
                        1,
                        len as isize,
                        v,
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
                    for (i, f) in inv.iter().enumerate() {
                        let row = std::slice::from_raw_parts_mut(out.add(i * h), d);
                        row.iter_mut().for_each(|x| *x *= f);
                    }
                }
            },
        );
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

/// The sequences of a pass, packed one after another without padding.
struct PackedSeqs<'a> {
    seqs: &'a [Vec<u32>],
    /// The row each sequence starts at, and the rows in all.
    starts: &'a [usize],
    total: usize,
    rotary: Option<&'a Rotary>,
}

/// The buffers a layer writes, made once per pass.
struct Scratch {
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    tmp: Vec<f32>,
    inter: Vec<f32>,
    /// A gated feed-forward's gate and value halves.
    gates: Vec<f32>,
}

impl Scratch {
    fn new(c: &super::BertConfig, total: usize) -> Scratch {
        let h = c.hidden;
        Scratch {
            qkv: vec![0.0f32; total * 3 * h],
            ctx: vec![0.0f32; total * h],
            tmp: vec![0.0f32; total * h],
            inter: vec![0.0f32; total * c.intermediate],
            gates: if c.gated() {
                vec![0.0f32; total * 2 * c.intermediate]
            } else {
                Vec::new()
            },
        }
    }
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

/// Rotary positions (NomicBERT): each head's query and key are turned pairwise, element j with
/// element j + d/2, by the angle position x base^(-2j/d).
struct Rotary {
    half: usize,
    /// cos and sin per position and pair: (positions x half).
    cos: Vec<f32>,
    sin: Vec<f32>,
}

impl Rotary {
    fn new(d: usize, base: f32, positions: usize) -> Rotary {
        let half = d / 2;
        let freq: Vec<f32> = (0..half)
            .map(|j| 1.0 / base.powf((2 * j) as f32 / d as f32))
            .collect();
        let mut cos = Vec::with_capacity(positions * half);
        let mut sin = Vec::with_capacity(positions * half);
        for p in 0..positions {
            for f in &freq {
                let angle = p as f32 * f;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        Rotary { half, cos, sin }
    }

    /// Turns the query and key parts of every packed q|k|v row by its position in its sequence.
    fn apply(&self, qkv: &mut [f32], seqs: &[Vec<u32>], starts: &[usize], h: usize, heads: usize) {
        let half = self.half;
        let d = 2 * half;
        let mut rows: Vec<(usize, &mut [f32])> = Vec::with_capacity(starts.len());
        let mut rest = &mut qkv[..];
        for seq in seqs {
            let (mine, tail) = rest.split_at_mut(seq.len() * 3 * h);
            rows.push((seq.len(), mine));
            rest = tail;
        }
        rows.into_par_iter().for_each(|(len, block)| {
            for p in 0..len {
                let row = &mut block[p * 3 * h..][..2 * h];
                let (cos, sin) = (&self.cos[p * half..][..half], &self.sin[p * half..][..half]);
                for head in row.chunks_exact_mut(d).take(2 * heads) {
                    let (lo, hi) = head.split_at_mut(half);
                    for j in 0..half {
                        let (a, b) = (lo[j], hi[j]);
                        lo[j] = a * cos[j] - b * sin[j];
                        hi[j] = b * cos[j] + a * sin[j];
                    }
                }
            }
        });
    }
}

/// A gated feed-forward's activation, row by row: out = act(gate + b) * (value + b'), where each
/// row of `gates` holds the gate half then the value half and `bias` both halves' biases. SiLU
/// (NomicBERT) or the erf GELU (JinaBERT).
pub(super) fn gate_rows(out: &mut [f32], gates: &[f32], bias: &[f32], act: Activation) {
    let i = bias.len() / 2;
    for (o, g) in out.chunks_exact_mut(i).zip(gates.chunks_exact(2 * i)) {
        for j in 0..i {
            o[j] = act.apply(g[j] + bias[j]) * (g[i + j] + bias[i + j]);
        }
    }
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

/// out (rows x n) = x (rows x k) W^T (+ b), with W stored (n x k) as PyTorch's Linear does.
/// Without `b` the bias is left to the next pass over `out`, which folds it in.
pub(super) fn linear(
    x: &[f32],
    rows: usize,
    k: usize,
    w: &Dense,
    b: Option<&[f32]>,
    n: usize,
    out: &mut [f32],
) {
    // The unsafe product below reads and writes by these lengths: check them here, where a
    // shape mismatch is a clear panic rather than a read past a buffer.
    assert!(
        x.len() >= rows * k && out.len() >= rows * n && b.is_none_or(|b| b.len() == n),
        "linear: {rows}x{k} input ({} values), {n} outputs ({} values)",
        x.len(),
        out.len()
    );
    let w = match w {
        Dense::F32(w) => {
            assert_eq!(
                w.len(),
                n * k,
                "linear: weights of {} values for {n}x{k}",
                w.len()
            );
            w
        }
        Dense::Packed(p) => return p.matmul(x, rows, b, out),
    };
    let out = &mut out[..rows * n];
    if let Some(b) = b {
        for row in out.chunks_exact_mut(n) {
            row.copy_from_slice(b);
        }
    }
    let threads = rayon::current_num_threads();
    let par = if rows * n * k >= 1 << 18 && threads > 1 {
        Parallelism::Rayon(threads)
    } else {
        Parallelism::None
    };
    // SAFETY: the slices hold rows*k, n*k and rows*n values with the strides given.
    unsafe {
        gemm::gemm(
            rows,
            n,
            k,
            out.as_mut_ptr(),
            1,
            n as isize,
            b.is_some(),
            x.as_ptr(),
            1,
            k as isize,
            w.as_ptr(),
            k as isize,
            1,
            if b.is_some() { 1.0 } else { 0.0 },
            1.0,
            false,
            false,
            false,
            par,
        );
    }
}

/// out = LayerNorm(out + bias + residual), row by row.
fn residual_norm(
    out: &mut [f32],
    residual: &[f32],
    h: usize,
    bias: &[f32],
    g: &[f32],
    b: &[f32],
    eps: f32,
) {
    out.par_chunks_mut(h * 64)
        .zip(residual.par_chunks(h * 64))
        .for_each(|(o, r)| add_layer_norm_rows(o, r, bias, g, b, eps));
}
