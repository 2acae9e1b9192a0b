//! The forward pass: embeddings, then per layer attention (per sequence and head, packed
//! without padding) and the feed-forward block.

use gemm::Parallelism;
use rayon::prelude::*;

use super::{Bert, Dense, Family, Layer};
use crate::embed::kernels::{
    act_bias, act_bias_rounded, layer_norm_rows, residual_layer_norm_rows, Activation,
};
use crate::embed::lowp::{to_bf16_rows, Precision, BF16_PAD_ROWS};

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
        Self::whole(self.states(seqs, None, &|| true))
    }

    /// As `hidden_states`, calling `pause()` before each layer: a background run waits there
    /// (for a chunking the user waits for) with the pass's states kept, instead of holding the
    /// cores for the whole pass. None when `pause()` says to give the pass up (false): its
    /// states are dropped at once.
    pub fn hidden_states_pausing(
        &self,
        seqs: &[Vec<u32>],
        pause: &dyn Fn() -> bool,
    ) -> Option<(Vec<f32>, Vec<usize>)> {
        self.states(seqs, None, pause)
    }

    /// The states of a pass that nothing gives up.
    fn whole<T>(states: Option<T>) -> T {
        states.expect("a pass without pauses runs to its end")
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
        Self::whole(self.states(seqs, types, &|| true))
    }

    fn states(
        &self,
        seqs: &[Vec<u32>],
        types: Option<&[Vec<u32>]>,
        pause: &dyn Fn() -> bool,
    ) -> Option<(Vec<f32>, Vec<usize>)> {
        let c = &self.config;
        let total: usize = seqs.iter().map(Vec::len).sum();
        if total == 0 {
            return Some((Vec::new(), vec![0; seqs.len()]));
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
            total,
            rotary: rotary.as_ref(),
            groups: groups(seqs, 3 * c.hidden),
        };
        let mut scratch = Scratch::new(c, &packed);
        // bf16: the layers' input rounded once here; from then on each layer's last LayerNorm
        // writes the next one's.
        if let Some(sh) = self.layers.first().and_then(|l| l.qkv_w.rounded_stride()) {
            scratch.rounded = vec![0; (total + BF16_PAD_ROWS) * sh];
            to_bf16_rows(&x, c.hidden, &mut scratch.rounded, sh);
        }
        for (n, layer) in self.layers.iter().enumerate() {
            if !pause() {
                return None;
            }
            let last = n + 1 == self.layers.len();
            self.encoder_layer(layer, &packed, &mut x, &mut scratch, last);
        }
        Some((x, starts))
    }

    /// One encoder layer over the packed states `x`: attention, then the feed-forward block,
    /// each added to its input and normalised. With bf16 weights the layer reads its input
    /// rounded from `s.rounded` and, unless it is the `last`, leaves the next layer's there.
    fn encoder_layer(
        &self,
        layer: &Layer,
        p: &PackedSeqs,
        x: &mut [f32],
        s: &mut Scratch,
        last: bool,
    ) {
        let c = &self.config;
        let (h, total) = (c.hidden, p.total);
        let sh = layer.qkv_w.rounded_stride();
        // Q, K and V of a few sequences at a time, attended to while they are still in cache.
        for g in &p.groups {
            let qkv = &mut s.qkv[..g.rows.len() * 3 * h];
            let seqs = &p.seqs[g.seqs.clone()];
            let (rows, bias) = (g.rows.len(), Some(&layer.qkv_b[..]));
            match sh {
                Some(sh) => {
                    let xb = &s.rounded[g.rows.start * sh..];
                    linear_rounded(xb, rows, &layer.qkv_w, bias, qkv, true)
                }
                None => {
                    let x = &x[g.rows.start * h..g.rows.end * h];
                    linear(x, (rows, h, 3 * h), &layer.qkv_w, bias, qkv, true)
                }
            }
            if let Some(r) = p.rotary {
                r.apply(qkv, seqs, &g.starts, h, c.heads);
            }
            let ctx = &mut s.ctx[g.rows.start * h..g.rows.end * h];
            self.attention(qkv, seqs, &g.starts, ctx);
        }
        if self.precision == Precision::F32 {
            // gemm packs the weights on each call: one call over all rows, on the whole pool.
            self.layer_tail(layer, &mut x[..total * h], &s.ctx, &mut s.tail, None, true);
            return;
        }
        let block = tail_rows(c);
        // The next layer's rounded input, a block's rows beside each block (none after the last
        // layer, or for int8).
        let mut next: Vec<Option<&mut [u16]>> = match sh {
            Some(sh) if !last => s.rounded.chunks_mut(block * sh).map(Some).collect(),
            _ => Vec::new(),
        };
        next.resize_with(next.len().max(total.div_ceil(block)), || None);
        x[..total * h]
            .par_chunks_mut(block * h)
            .zip(s.ctx.par_chunks(block * h))
            .zip(next)
            .for_each(|((x, ctx), next)| {
                TAIL.with(|t| match t.try_borrow_mut() {
                    Ok(mut t) => self.layer_tail(layer, x, ctx, &mut t, next, false),
                    Err(_) => self.layer_tail(layer, x, ctx, &mut Tail::default(), next, false),
                })
            });
    }

    /// The rest of a layer for a block of rows: the output projection, LayerNorm with the
    /// residual, the feed-forward block, and LayerNorm with the residual again, into `x`. With
    /// `pool` each step is spread over the thread pool; without, the block stays on this thread
    /// and its intermediates in its cache. With bf16 weights each LayerNorm and the activation
    /// write the next product's input rounded (the last LayerNorm into `next`, when given).
    fn layer_tail(
        &self,
        layer: &Layer,
        x: &mut [f32],
        ctx: &[f32],
        t: &mut Tail,
        next: Option<&mut [u16]>,
        pool: bool,
    ) {
        let c = &self.config;
        let (h, i) = (c.hidden, c.intermediate);
        let rows = x.len() / h;
        // x = LayerNorm(add + x + bias), rows of `h`; 64 rows a task with `pool` (f32 only).
        let norm = |x: &mut [f32],
                    add: &[f32],
                    bias: &[f32],
                    (g, b): (&[f32], &[f32]),
                    rounded: Option<(&mut [u16], usize)>| {
            if pool {
                debug_assert!(rounded.is_none(), "rounded rows are written on one thread");
                x.par_chunks_mut(64 * h)
                    .zip(add.par_chunks(64 * h))
                    .for_each(|(x, a)| residual_layer_norm_rows(x, a, bias, g, b, c.eps, None));
            } else {
                residual_layer_norm_rows(x, add, bias, g, b, c.eps, rounded);
            }
        };
        t.tmp.resize(rows * h, 0.0);
        let strides = layer
            .inter_w
            .rounded_stride()
            .zip(layer.down_w.rounded_stride());
        let Some((sh, si)) = strides.filter(|_| !pool) else {
            // f32 and int8: the products round their own input.
            linear(ctx, (rows, h, h), &layer.out_w, None, &mut t.tmp, pool);
            norm(x, &t.tmp, &layer.out_b, (&layer.ln1_g, &layer.ln1_b), None);
            self.feed_forward(layer, rows, FfnInput::F32(x), t, pool);
            linear(
                &t.inter,
                (rows, i, h),
                &layer.down_w,
                None,
                &mut t.tmp,
                pool,
            );
            norm(x, &t.tmp, &layer.down_b, (&layer.ln2_g, &layer.ln2_b), None);
            return;
        };
        let padded = rows.next_multiple_of(BF16_PAD_ROWS);
        t.rounded_h.resize(padded * sh, 0);
        t.rounded_h[rows * sh..].fill(0);
        // The context rounded into the buffer the first LayerNorm then overwrites.
        to_bf16_rows(ctx, h, &mut t.rounded_h, sh);
        linear_rounded(&t.rounded_h, rows, &layer.out_w, None, &mut t.tmp, false);
        let bits = Some((&mut t.rounded_h[..rows * sh], sh));
        norm(x, &t.tmp, &layer.out_b, (&layer.ln1_g, &layer.ln1_b), bits);
        t.rounded_i.resize(padded * si, 0);
        t.rounded_i[rows * si..].fill(0);
        let input = std::mem::take(&mut t.rounded_h);
        self.feed_forward(layer, rows, FfnInput::Rounded(&input, si), t, false);
        t.rounded_h = input;
        linear_rounded(&t.rounded_i, rows, &layer.down_w, None, &mut t.tmp, false);
        let bits = next.map(|n| (n, sh));
        norm(x, &t.tmp, &layer.down_b, (&layer.ln2_g, &layer.ln2_b), bits);
    }

    /// The feed-forward block's up projection and activation for `rows` rows: into `t.inter`
    /// from f32 rows, or from rounded rows into `t.rounded_i` (rows of the given stride), rounded
    /// for the down projection.
    fn feed_forward(&self, layer: &Layer, rows: usize, input: FfnInput, t: &mut Tail, pool: bool) {
        let c = &self.config;
        let (h, i) = (c.hidden, c.intermediate);
        let up = |out: &mut [f32], n: usize| match input {
            FfnInput::F32(x) => linear(x, (rows, h, n), &layer.inter_w, None, out, pool),
            FfnInput::Rounded(xb, _) => linear_rounded(xb, rows, &layer.inter_w, None, out, pool),
        };
        // Rows of `width` values, 64 rows a task with `pool`.
        let by_rows = |data: &mut [f32], width: usize, f: &(dyn Fn(&mut [f32], usize) + Sync)| {
            if pool {
                data.par_chunks_mut(64 * width)
                    .enumerate()
                    .for_each(|(b, d)| f(d, b * 64));
            } else {
                f(data, 0);
            }
        };
        if c.gated() {
            t.gates.resize(rows * 2 * i, 0.0);
            up(&mut t.gates, 2 * i);
            t.inter.resize(rows * i, 0.0);
            let gates = &t.gates;
            by_rows(&mut t.inter, i, &|o, r0| {
                gate_rows(
                    o,
                    &gates[r0 * 2 * i..][..o.len() * 2],
                    &layer.inter_b,
                    c.act,
                )
            });
            if let FfnInput::Rounded(_, si) = input {
                to_bf16_rows(&t.inter, i, &mut t.rounded_i, si);
            }
            return;
        }
        t.inter.resize(rows * i, 0.0);
        up(&mut t.inter, i);
        match input {
            FfnInput::F32(_) => {
                by_rows(&mut t.inter, i, &|o, _| act_bias(o, &layer.inter_b, c.act))
            }
            FfnInput::Rounded(_, si) => {
                act_bias_rounded(&t.inter, &layer.inter_b, c.act, &mut t.rounded_i, si)
            }
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
}

/// The sequences of a pass, packed one after another without padding.
struct PackedSeqs<'a> {
    seqs: &'a [Vec<u32>],
    /// The rows in all.
    total: usize,
    rotary: Option<&'a Rotary>,
    groups: Vec<Group>,
}

/// Consecutive sequences whose Q, K and V are computed and attended to together.
pub(super) struct Group {
    pub(super) seqs: std::ops::Range<usize>,
    pub(super) rows: std::ops::Range<usize>,
    /// Each sequence's first row, counted from the group's.
    pub(super) starts: Vec<usize>,
}

/// Bytes of Q, K and V a group aims at: about what two cores' second-level caches hold.
pub(super) const GROUP_BYTES: usize = 2 << 20;

/// The sequences cut into groups of consecutive ones, each closed once its Q, K and V (rows of
/// `width` values) reach `GROUP_BYTES` (so a group holds one sequence at least).
pub(super) fn groups(seqs: &[Vec<u32>], width: usize) -> Vec<Group> {
    let target = (GROUP_BYTES / (width * 4)).max(1);
    let mut out: Vec<Group> = Vec::new();
    let mut row = 0;
    for (i, seq) in seqs.iter().enumerate() {
        match out.last_mut() {
            Some(g) if g.rows.len() < target => {
                g.starts.push(row - g.rows.start);
                g.seqs.end = i + 1;
                g.rows.end = row + seq.len();
            }
            _ => out.push(Group {
                seqs: i..i + 1,
                rows: row..row + seq.len(),
                starts: vec![0],
            }),
        }
        row += seq.len();
    }
    out
}

/// What the feed-forward block reads: the f32 rows, or (bf16) the rows already rounded, with the
/// stride its activation's rounded output takes.
#[derive(Clone, Copy)]
enum FfnInput<'a> {
    F32(&'a [f32]),
    Rounded(&'a [u16], usize),
}

/// The buffers a layer writes for the whole pass: one group's Q, K and V, every row's context.
struct Scratch {
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    /// bf16: every row's input to the next layer, rounded (rows of the Q/K/V weights'
    /// `bf16_stride`, padded with `BF16_PAD_ROWS` zero rows).
    rounded: Vec<u16>,
    /// The rest of the layer's buffers for all rows at once (f32 only).
    tail: Tail,
}

/// A thread's buffers for the rest of a layer on a block of rows, kept between blocks, layers
/// and passes (a block's worth: `tail_rows`).
#[derive(Default)]
struct Tail {
    tmp: Vec<f32>,
    inter: Vec<f32>,
    /// A gated feed-forward's gate and value halves.
    gates: Vec<f32>,
    /// bf16: the feed-forward's input and the activation's output, rounded.
    rounded_h: Vec<u16>,
    rounded_i: Vec<u16>,
}

thread_local! {
    static TAIL: std::cell::RefCell<Tail> = std::cell::RefCell::new(Tail::default());
}

/// Floats of a block's feed-forward buffers the tail aims at (1 MB: a core's second-level cache).
const TAIL_FLOATS: usize = 1 << 18;

/// Rows per block of a layer's tail: 64, or 32 when the feed-forward is wide (AMX takes 32 rows
/// at a time; the AVX-512 tiles 6).
fn tail_rows(c: &super::BertConfig) -> usize {
    let width = c.intermediate * if c.gated() { 3 } else { 1 };
    if TAIL_FLOATS / width >= 64 {
        64
    } else {
        32
    }
}

impl Scratch {
    fn new(c: &super::BertConfig, p: &PackedSeqs) -> Scratch {
        let h = c.hidden;
        let group_rows = p.groups.iter().map(|g| g.rows.len()).max().unwrap_or(0);
        Scratch {
            qkv: vec![0.0f32; group_rows * 3 * h],
            ctx: vec![0.0f32; p.total * h],
            rounded: Vec::new(),
            tail: Tail::default(),
        }
    }
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

/// out (rows x n) = xb W^T (+ b) for rows already rounded to bf16 (see `Packed::matmul_rounded`);
/// `w` must hold bf16 weights (`Dense::rounded_stride` said so).
fn linear_rounded(
    xb: &[u16],
    rows: usize,
    w: &Dense,
    b: Option<&[f32]>,
    out: &mut [f32],
    pool: bool,
) {
    let Dense::Packed(p) = w else {
        panic!("linear_rounded: f32 weights take f32 rows");
    };
    p.matmul_rounded(xb, rows, b, out, pool);
}

/// out (rows x n) = x (rows x k) W^T (+ b), with W stored (n x k) as PyTorch's Linear does.
/// Without `b` the bias is left to the next pass over `out`, which folds it in. With `pool` a
/// large product is spread over the thread pool; without, it runs on this thread.
pub(super) fn linear(
    x: &[f32],
    (rows, k, n): (usize, usize, usize),
    w: &Dense,
    b: Option<&[f32]>,
    out: &mut [f32],
    pool: bool,
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
        Dense::Packed(p) if pool => return p.matmul(x, rows, b, out),
        Dense::Packed(p) => return p.matmul_here(x, rows, b, out),
    };
    let out = &mut out[..rows * n];
    if let Some(b) = b {
        for row in out.chunks_exact_mut(n) {
            row.copy_from_slice(b);
        }
    }
    let threads = rayon::current_num_threads();
    let par = if pool && rows * n * k >= 1 << 18 && threads > 1 {
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
