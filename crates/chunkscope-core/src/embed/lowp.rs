//! The dense layers of the forward pass in reduced precision. bf16: weights and activations
//! rounded to bfloat16, products summed in f32. int8: weights quantised per output channel
//! (symmetric), activations per token (asymmetric, 8 bits), products summed in int32 and scaled
//! back. Weights are packed once at load into panels the kernels read in order; the kernels use
//! AMX tiles where the CPU has them (`amx`), else AVX-512 BF16 and AVX-512 VNNI, else plain loops
//! (same numbers, slower). With bf16, attention's products run on the same kernels
//! (`Bf16Operands`); softmax, LayerNorm and GELU compute in f32 and round their output for the
//! next product in the same pass (`Packed::matmul_rounded` reads it); pooling stays in f32.

use rayon::prelude::*;

#[cfg(target_arch = "x86_64")]
mod amx;
mod operands;
mod portable;
mod precision;

pub use operands::Bf16Operands;
pub(crate) use precision::has_bf16;
pub use precision::{Kernel, Precision};

use portable::{bf16_tile_portable, int8_tile_portable};

/// Output columns per panel: four vectors of 16 lanes.
const NR: usize = 64;
/// Rows per tile: 6 x 4 accumulators, 4 weight vectors and a broadcast fit the 32 registers.
const MR: usize = 6;
/// Rows per parallel task when the rows are many (8 tiles).
const ROW_BLOCK: usize = 48;
/// Packed steps are padded with zeros to a multiple of this (an AMX tile's 16 steps).
const STEP_MULTIPLE: usize = 16;
/// Rows per AMX block (two tiles of 16).
const AMX_ROWS: usize = 32;
/// Activations handed to `Packed::matmul_rounded` are padded to a multiple of this many rows.
pub const BF16_PAD_ROWS: usize = AMX_ROWS;

/// bf16 bits of `x`, rounded to nearest even (finite values; what the CPU's conversion does).
#[inline(always)]
pub fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

#[inline(always)]
fn bf16_value(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// A Linear layer's weight (n x k, PyTorch's layout) packed for a reduced precision: panel p
/// (columns 64p..64p+64), step s (2 values of k for bf16, 4 for int8), column c, value g at
/// ((p * steps + s) * 64 + c) * G + g; columns past n and values past k are zero, and the steps
/// are a multiple of 16 (an AMX tile's depth).
pub struct Packed {
    pub n: usize,
    pub k: usize,
    steps: usize,
    data: PackedData,
}

/// How a product is cut into tiles for `kernel`: tiles of at most `mr` rows, `row_block` rows
/// a task, the activations padded to `padded_rows`.
#[derive(Clone, Copy)]
struct TilePlan {
    kernel: Kernel,
    mr: usize,
    row_block: usize,
    padded_rows: usize,
}

impl TilePlan {
    fn new(kernel: Kernel, rows: usize) -> TilePlan {
        match kernel {
            // AMX reads whole blocks of 32 rows: the activations are padded with zero rows.
            Kernel::Amx => TilePlan {
                kernel,
                mr: AMX_ROWS,
                row_block: 2 * AMX_ROWS,
                padded_rows: rows.next_multiple_of(AMX_ROWS),
            },
            _ => TilePlan {
                kernel,
                mr: MR,
                row_block: ROW_BLOCK,
                padded_rows: rows,
            },
        }
    }
}

enum PackedData {
    Bf16(Vec<u16>),
    /// int8 values, each column's scale and the sum of its int8 values (for the activations'
    /// zero point).
    Int8 {
        q: Vec<i8>,
        scale: Vec<f32>,
        colsum: Vec<i32>,
    },
}

impl Packed {
    /// Pack `w` (n x k) for `precision` (bf16 or int8).
    pub fn new(w: &[f32], n: usize, k: usize, precision: Precision) -> Packed {
        assert_eq!(w.len(), n * k);
        let panels = n.div_ceil(NR);
        match precision {
            Precision::Int8 => {
                let steps = k.div_ceil(4).next_multiple_of(STEP_MULTIPLE);
                let mut q = vec![0i8; panels * steps * NR * 4];
                let mut scale = vec![0.0f32; panels * NR];
                let mut colsum = vec![0i32; panels * NR];
                for j in 0..n {
                    let row = &w[j * k..(j + 1) * k];
                    let max = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                    let inv = if max > 0.0 { 127.0 / max } else { 0.0 };
                    scale[j] = max / 127.0;
                    let (p, c) = (j / NR, j % NR);
                    for (kk, v) in row.iter().enumerate() {
                        let v = (v * inv).round().clamp(-127.0, 127.0) as i8;
                        colsum[j] += v as i32;
                        q[((p * steps + kk / 4) * NR + c) * 4 + kk % 4] = v;
                    }
                }
                Packed {
                    n,
                    k,
                    steps,
                    data: PackedData::Int8 { q, scale, colsum },
                }
            }
            _ => {
                let steps = k.div_ceil(2).next_multiple_of(STEP_MULTIPLE);
                let mut data = vec![0u16; panels * steps * NR * 2];
                for j in 0..n {
                    let (p, c) = (j / NR, j % NR);
                    for (kk, &v) in w[j * k..(j + 1) * k].iter().enumerate() {
                        data[((p * steps + kk / 2) * NR + c) * 2 + kk % 2] = bf16_bits(v);
                    }
                }
                Packed {
                    n,
                    k,
                    steps,
                    data: PackedData::Bf16(data),
                }
            }
        }
    }

    /// Bytes the packed weights take.
    pub fn bytes(&self) -> usize {
        match &self.data {
            PackedData::Bf16(d) => d.len() * 2,
            PackedData::Int8 { q, scale, colsum } => q.len() + scale.len() * 4 + colsum.len() * 4,
        }
    }

    /// out (rows x n) = x (rows x k) W^T (+ b), over the thread pool when the product is large.
    pub fn matmul(&self, x: &[f32], rows: usize, bias: Option<&[f32]>, out: &mut [f32]) {
        self.product(x, rows, bias, out, Kernel::best(self.precision()), true)
    }

    /// As `matmul`, on this thread (a task that already has its own block of rows).
    pub fn matmul_here(&self, x: &[f32], rows: usize, bias: Option<&[f32]>, out: &mut [f32]) {
        self.product(x, rows, bias, out, Kernel::best(self.precision()), false)
    }

    /// The row length of activations already rounded to bf16 for this (bf16) product: `k`
    /// rounded up to whole pairs of tile steps. See `matmul_rounded`.
    pub fn bf16_stride(&self) -> usize {
        self.steps * 2
    }

    /// As `matmul_here` (or `matmul` with `pool`), for activations a fused pass already rounded:
    /// `xb` holds `rows` rows of `bf16_stride()` bf16 bits, zero past k, followed by zero (or
    /// any finite) rows up to a multiple of `BF16_PAD_ROWS` (AMX reads whole blocks; what those
    /// rows give is never written). Panics for int8 weights.
    pub fn matmul_rounded(
        &self,
        xb: &[u16],
        rows: usize,
        bias: Option<&[f32]>,
        out: &mut [f32],
        pool: bool,
    ) {
        let PackedData::Bf16(w) = &self.data else {
            panic!("matmul_rounded: the weights are not bf16");
        };
        assert!(out.len() >= rows * self.n && bias.is_none_or(|b| b.len() >= self.n));
        if rows == 0 {
            return;
        }
        let plan = TilePlan::new(Kernel::best(Precision::Bf16), rows);
        self.rounded_product(w, xb, rows, bias, out, (plan, self.spread(rows, pool)));
    }

    /// Whether a product of `rows` rows is worth spreading over the thread pool (with `pool`).
    fn spread(&self, rows: usize, pool: bool) -> bool {
        pool && rows * self.n * self.k >= 1 << 18 && rayon::current_num_threads() > 1
    }

    /// bf16 or int8.
    pub fn precision(&self) -> Precision {
        match self.data {
            PackedData::Bf16(_) => Precision::Bf16,
            PackedData::Int8 { .. } => Precision::Int8,
        }
    }

    /// As `matmul`, computed by `kernel` (one of `Kernel::available`; tests compare them).
    pub fn matmul_with(
        &self,
        x: &[f32],
        rows: usize,
        bias: Option<&[f32]>,
        out: &mut [f32],
        kernel: Kernel,
    ) {
        self.product(x, rows, bias, out, kernel, true)
    }

    fn product(
        &self,
        x: &[f32],
        rows: usize,
        bias: Option<&[f32]>,
        out: &mut [f32],
        kernel: Kernel,
        pool: bool,
    ) {
        let (n, k) = (self.n, self.k);
        assert!(x.len() >= rows * k && out.len() >= rows * n && bias.is_none_or(|b| b.len() >= n));
        // The fast kernels' instructions must exist on this CPU.
        assert!(
            Kernel::available(self.precision()).contains(&kernel),
            "{kernel:?} is not available on this CPU"
        );
        if rows == 0 {
            return;
        }
        let plan = TilePlan::new(kernel, rows);
        let parallel = self.spread(rows, pool);
        match &self.data {
            PackedData::Bf16(w) => self.matmul_bf16(w, x, rows, bias, out, (plan, parallel)),
            PackedData::Int8 { q, scale, colsum } => {
                let weights = (&q[..], &scale[..], &colsum[..]);
                self.matmul_int8(weights, x, rows, bias, out, (plan, parallel))
            }
        }
    }

    /// The bf16 product: the activations rounded to bf16 pairs, then tile by tile.
    fn matmul_bf16(
        &self,
        w: &[u16],
        x: &[f32],
        rows: usize,
        bias: Option<&[f32]>,
        out: &mut [f32],
        (plan, parallel): (TilePlan, bool),
    ) {
        let k = self.k;
        let xs = self.steps * 2;
        let mut xb = vec![0u16; plan.padded_rows * xs];
        if parallel {
            xb.par_chunks_mut(xs * 64)
                .zip(x[..rows * k].par_chunks(k * 64))
                .for_each(|(d, s)| to_bf16_rows(s, k, d, xs));
        } else {
            to_bf16_rows(&x[..rows * k], k, &mut xb, xs);
        }
        self.rounded_product(w, &xb, rows, bias, out, (plan, parallel));
    }

    /// out (rows x n) = xb W^T (+ bias), tile by tile, for activations already rounded.
    fn rounded_product(
        &self,
        w: &[u16],
        xb: &[u16],
        rows: usize,
        bias: Option<&[f32]>,
        out: &mut [f32],
        (plan, parallel): (TilePlan, bool),
    ) {
        let shape = Bf16Shape {
            rows,
            n: self.n,
            stride: self.n,
            steps: self.steps,
        };
        // SAFETY: every caller checked that `out` holds rows x n values; `bf16_tiles` checks `xb`.
        unsafe { bf16_tiles(xb, w, shape, bias, OutPtr(out.as_mut_ptr()), plan, parallel) };
    }

    /// The int8 product: the activations quantized per row (u8 codes, scale, zero point), then
    /// tile by tile, dequantized at the end of each.
    fn matmul_int8(
        &self,
        (q, scale, colsum): (&[i8], &[f32], &[i32]),
        x: &[f32],
        rows: usize,
        bias: Option<&[f32]>,
        out: &mut [f32],
        (plan, parallel): (TilePlan, bool),
    ) {
        let (n, k) = (self.n, self.k);
        let xs = self.steps * 4;
        let mut xq = vec![0u8; plan.padded_rows * xs];
        let mut sx = vec![0.0f32; rows];
        let mut zp = vec![0i32; rows];
        if parallel {
            xq.par_chunks_mut(xs * 64)
                .zip(x[..rows * k].par_chunks(k * 64))
                .zip(sx.par_chunks_mut(64).zip(zp.par_chunks_mut(64)))
                .for_each(|((d, s), (sx, zp))| quantize_rows(s, k, d, xs, sx, zp));
        } else {
            quantize_rows(&x[..rows * k], k, &mut xq, xs, &mut sx, &mut zp);
        }
        // SAFETY: `matmul_with` checked that `out` holds rows x n values.
        let out = OutPtr(out.as_mut_ptr());
        let tile = |r0: usize, r: usize, p: usize, dst: *mut f32| {
            let x = &xq[r0 * xs..];
            let w = &q[p * self.steps * NR * 4..];
            let cols = (n - p * NR).min(NR);
            let cs = Dequant {
                sx: &sx[r0..r0 + r],
                zp: &zp[r0..r0 + r],
                scale: &scale[p * NR..p * NR + cols],
                colsum: &colsum[p * NR..p * NR + cols],
                bias: bias.map(|b| &b[p * NR..p * NR + cols]),
            };
            match plan.kernel {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: as for bf16; quads of u8 codes and of int8 weights.
                Kernel::Amx => unsafe {
                    let sums = amx::block::<true>(
                        r,
                        x.as_ptr(),
                        w.as_ptr() as *const u8,
                        self.steps,
                        cols,
                    );
                    avx512::finish_int8(&sums, r, &cs, dst, n);
                },
                #[cfg(target_arch = "x86_64")]
                Kernel::Avx512 => {
                    // SAFETY: the CPU has AVX-512 VNNI (the kernel was offered); pointers
                    // as for bf16.
                    unsafe {
                        avx512::int8_tile(
                            r,
                            x.as_ptr() as *const u32,
                            xs / 4,
                            w.as_ptr(),
                            self.steps,
                            dst,
                            n,
                            &cs,
                        );
                    }
                }
                // SAFETY: as for bf16.
                _ => unsafe { int8_tile_portable(r, x, xs, w, self.steps, dst, n, &cs) },
            }
        };
        // SAFETY: as above.
        unsafe { tiles((rows, n, n), out, plan, parallel, tile) };
    }
}

/// The shape of a bf16 product: `rows` of activations, `n` output columns written `stride`
/// values apart, `steps` pairs of k per row and per panel column (a multiple of 16).
#[derive(Clone, Copy)]
struct Bf16Shape {
    rows: usize,
    n: usize,
    stride: usize,
    steps: usize,
}

/// out (rows x n at `shape.stride`) = xb W^T (+ bias), tile by tile: `xb` holds the
/// activations as rows of `steps` bf16 pairs (`plan.padded_rows` of them), `w` the panels.
///
/// # Safety
/// `out` must address `rows` rows of `n` values, `stride` (>= n) apart, valid for writes and
/// written by no one else meanwhile.
unsafe fn bf16_tiles(
    xb: &[u16],
    w: &[u16],
    shape: Bf16Shape,
    bias: Option<&[f32]>,
    out: OutPtr,
    plan: TilePlan,
    parallel: bool,
) {
    let Bf16Shape {
        rows,
        n,
        stride,
        steps,
    } = shape;
    let xs = steps * 2;
    assert!(
        xb.len() >= plan.padded_rows * xs
            && w.len() >= n.div_ceil(NR) * steps * NR * 2
            && steps % STEP_MULTIPLE == 0
    );
    tiles((rows, n, stride), out, plan, parallel, |r0, r, p, dst| {
        let x = &xb[r0 * xs..];
        let w = &w[p * steps * NR * 2..];
        let cols = (n - p * NR).min(NR);
        let b = bias.map(|b| &b[p * NR..p * NR + cols]);
        match plan.kernel {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AMX (and so AVX-512) is available (the kernel was offered); `x`
            // holds 32 padded rows of `steps` pairs from r0, `w` the whole panel,
            // `dst` r rows of `cols` values at stride n.
            Kernel::Amx => unsafe {
                let sums = amx::block::<false>(
                    r,
                    x.as_ptr() as *const u8,
                    w.as_ptr() as *const u8,
                    steps,
                    cols,
                );
                avx512::finish_bf16(&sums, r, cols, b, dst, stride);
            },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => {
                // SAFETY: the CPU has AVX-512 BF16 (the kernel was offered); `x`
                // holds r rows of `steps` pairs at stride xs/2 pairs, `w` the panel,
                // `dst` r rows of `cols` values at stride n.
                unsafe {
                    avx512::bf16_tile(
                        r,
                        x.as_ptr() as *const u32,
                        xs / 2,
                        w.as_ptr(),
                        steps,
                        dst,
                        stride,
                        cols,
                        b,
                    );
                }
            }
            // SAFETY: `tiles` hands each tile its own rows and panel of `out`.
            _ => unsafe { bf16_tile_portable(r, x, xs, w, steps, dst, stride, cols, b) },
        }
    });
}

/// Call `tile(first row, rows, panel, out)` for every tile of at most `plan.mr` rows and one
/// panel of an (rows x n) output whose rows are `stride` apart, over the thread pool when
/// `parallel`: by blocks of `plan.row_block` rows when there are many, else by panels too.
///
/// # Safety
/// `out` must address `rows` rows of `n` values, `stride` (>= n) apart, valid for writes and
/// written by no one else meanwhile.
unsafe fn tiles(
    (rows, n, stride): (usize, usize, usize),
    out: OutPtr,
    plan: TilePlan,
    parallel: bool,
    tile: impl Fn(usize, usize, usize, *mut f32) + Sync,
) {
    let (mr, row_block) = (plan.mr, plan.row_block);
    assert!(n <= stride);
    let panels = n.div_ceil(NR);
    let blocks = rows.div_ceil(row_block);
    let threads = rayon::current_num_threads();
    let split_panels = parallel && blocks < 4 * threads;
    let tasks = if split_panels {
        blocks * panels
    } else {
        blocks
    };
    let run = |t: usize| {
        let (block, ps) = if split_panels {
            (t / panels, t % panels..t % panels + 1)
        } else {
            (t, 0..panels)
        };
        let r_end = ((block + 1) * row_block).min(rows);
        for p in ps {
            let mut r0 = block * row_block;
            while r0 < r_end {
                let r = (r_end - r0).min(mr);
                // Each task writes its own rows and panels of `out`.
                // SAFETY: r0 < rows and p * NR < n <= stride, so the offset lies inside `out`
                // (the caller's promise); each task writes its own rows and panels.
                tile(r0, r, p, unsafe { out.at(r0 * stride + p * NR) });
                r0 += r;
            }
        }
    };
    if parallel {
        (0..tasks).into_par_iter().for_each(run);
    } else {
        (0..tasks).for_each(run);
    }
}

#[derive(Clone, Copy)]
struct OutPtr(*mut f32);
// SAFETY: tasks write disjoint tiles of the output.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}
impl OutPtr {
    /// The output from element `i` on.
    ///
    /// # Safety
    /// `i` must lie inside the output this pointer was made from.
    unsafe fn at(self, i: usize) -> *mut f32 {
        self.0.add(i)
    }
}

/// What turns an int8 tile's int32 sums back into values: per row the activation scale and zero
/// point, per column the weight scale, the column's sum and the bias.
struct Dequant<'a> {
    sx: &'a [f32],
    zp: &'a [i32],
    scale: &'a [f32],
    colsum: &'a [i32],
    bias: Option<&'a [f32]>,
}

impl Dequant<'_> {
    /// The value of row i, column c from its int32 sum.
    #[inline(always)]
    fn value(&self, i: usize, c: usize, sum: i32) -> f32 {
        (sum - self.zp[i] * self.colsum[c]) as f32 * self.sx[i] * self.scale[c]
            + self.bias.map_or(0.0, |b| b[c])
    }
}

super::kernels::multiversion! {
/// Rows of `k` f32 values to rows of `stride` bf16 bits (zero past k).
pub fn to_bf16_rows(src: &[f32], k: usize, dst: &mut [u16], stride: usize) {
    for (s, d) in src.chunks_exact(k).zip(dst.chunks_exact_mut(stride)) {
        for (o, &v) in d.iter_mut().zip(s) {
            *o = bf16_bits(v);
        }
    }
}
}

super::kernels::multiversion! {
/// Rows of `k` f32 values to rows of `stride` u8 codes: per row a scale and a zero point such that
/// x = scale * (code - zero point), zero exact, the row's range over 255 steps.
pub fn quantize_rows(src: &[f32], k: usize, dst: &mut [u8], stride: usize, scales: &mut [f32], zps: &mut [i32]) {
    const ROUND: f32 = 12_582_912.0; // 1.5 * 2^23: adding rounds to an integer in the low bits
    for (((s, d), sx), zp) in src.chunks_exact(k).zip(dst.chunks_exact_mut(stride)).zip(scales.iter_mut()).zip(zps.iter_mut()) {
        let mut lo = [0.0f32; 16];
        let mut hi = [0.0f32; 16];
        let chunks = s.chunks_exact(16);
        let rest = chunks.remainder();
        for c in chunks {
            for i in 0..16 {
                lo[i] = if c[i] < lo[i] { c[i] } else { lo[i] };
                hi[i] = if c[i] > hi[i] { c[i] } else { hi[i] };
            }
        }
        let mut min = rest.iter().fold(0.0f32, |m, &v| if v < m { v } else { m });
        let mut max = rest.iter().fold(0.0f32, |m, &v| if v > m { v } else { m });
        for i in 0..16 {
            min = min.min(lo[i]);
            max = max.max(hi[i]);
        }
        let range = max - min;
        let scale = if range > 0.0 { range / 255.0 } else { 1.0 };
        let inv = 1.0 / scale;
        let z = (-min * inv).round().clamp(0.0, 255.0);
        *sx = scale;
        *zp = z as i32;
        for (o, &v) in d.iter_mut().zip(s) {
            let t = v * inv + z;
            let t = super::kernels::clamp(t, 0.0, 255.0);
            *o = ((t + ROUND).to_bits() - ROUND.to_bits()) as u8;
        }
    }
}
}

#[cfg(target_arch = "x86_64")]
mod avx512;

#[cfg(test)]
mod tests;
