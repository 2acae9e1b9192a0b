//! bf16 products whose two sides are both written during the pass: attention's Q K^T (keys as
//! the panels) and, transposed, its P V (V^T as the activations, the probabilities as the
//! panels). The buffers live with the caller and are reused for every head, layer and batch.

use super::{
    bf16_bits, bf16_tiles, Bf16Shape, Kernel, OutPtr, Precision, TilePlan, NR, STEP_MULTIPLE,
};

/// The two sides of `out (rows x n) = X (rows x k) W^T`, W stored (n x k) as PyTorch's Linear
/// does, rounded to bf16 as they are written. Set the shape, write every row of X and every row
/// (or pair of columns) of W, then `run`. Values past k read as zero.
pub struct Bf16Operands {
    plan: TilePlan,
    rows: usize,
    n: usize,
    k: usize,
    steps: usize,
    /// Rows of `steps` pairs (`plan.padded_rows` of them).
    x: Vec<u16>,
    /// Panels of 64 columns, a pair of k per value (the lower bits the even one): step s,
    /// column c at s * 64 + c within a panel.
    w: Vec<u32>,
    /// One row of W rounded, before it is spread over the steps.
    row: Vec<u16>,
}

impl Default for Bf16Operands {
    fn default() -> Self {
        Bf16Operands::with_kernel(Kernel::best(Precision::Bf16))
    }
}

impl Bf16Operands {
    /// Operands computed by `kernel` (one of `Kernel::available(Precision::Bf16)`).
    pub fn with_kernel(kernel: Kernel) -> Bf16Operands {
        assert!(
            Kernel::available(Precision::Bf16).contains(&kernel),
            "{kernel:?} is not available on this CPU"
        );
        Bf16Operands {
            plan: TilePlan::new(kernel, 0),
            rows: 0,
            n: 0,
            k: 0,
            steps: 0,
            x: Vec::new(),
            w: Vec::new(),
            row: Vec::new(),
        }
    }

    /// Make room for (rows x k) times (n x k)^T. What was written before is garbage from here
    /// on, except that the values past k are zero on both sides.
    pub fn shape(&mut self, rows: usize, n: usize, k: usize) {
        let steps = k.div_ceil(2).next_multiple_of(STEP_MULTIPLE);
        self.plan = TilePlan::new(self.plan.kernel, rows);
        (self.rows, self.n, self.k, self.steps) = (rows, n, k, steps);
        let xs = steps * 2;
        self.x.resize(self.plan.padded_rows * xs, 0);
        self.w.resize(n.div_ceil(NR) * steps * NR, 0);
        // Both sides are zero past k, so no stale value (a NaN, say) meets a real one there.
        // An odd k's last step is cleared whole and its real half written again.
        for row in self.x.chunks_exact_mut(xs) {
            row[k..].fill(0);
        }
        for panel in self.w.chunks_exact_mut(steps * NR) {
            panel[k / 2 * NR..].fill(0);
        }
    }

    /// Row i of X: `scale * src[t]` for t < k.
    #[inline]
    pub fn set_x_row(&mut self, i: usize, src: &[f32], scale: f32) {
        round_scaled(&src[..self.k], scale, self.x_row_mut(i));
    }

    /// Row i of X as bf16 bits (k of them), for a caller that rounds as it computes.
    #[inline]
    pub fn x_row_mut(&mut self, i: usize) -> &mut [u16] {
        let xs = self.steps * 2;
        &mut self.x[i * xs..i * xs + self.k]
    }

    /// Row j of W (n x k): W[j][t] = src[t] for t < k.
    pub fn set_w_row(&mut self, j: usize, src: &[f32]) {
        let (p, c) = (j / NR, j % NR);
        let k = self.k;
        self.row.resize(k.next_multiple_of(2), 0);
        round_scaled(&src[..k], 1.0, &mut self.row[..k]);
        if k % 2 == 1 {
            self.row[k] = 0;
        }
        let panel = &mut self.w[p * self.steps * NR..(p + 1) * self.steps * NR];
        for (s, pair) in self.row.chunks_exact(2).enumerate() {
            panel[s * NR + c] = pair[0] as u32 | (pair[1] as u32) << 16;
        }
    }

    /// Columns t and t + 1 of W (n x k), t even: W[j][t] = even[j], W[j][t + 1] = odd[j] (or 0
    /// without `odd`, for an odd k's last column) for j < n. Attention's V^T, two rows of V at
    /// a time.
    pub fn set_w_cols(&mut self, t: usize, even: &[f32], odd: Option<&[f32]>) {
        assert!(t.is_multiple_of(2) && t < self.k && (odd.is_some() || t + 1 == self.k));
        let s = t / 2;
        for (p, lo) in even[..self.n].chunks(NR).enumerate() {
            let step = &mut self.w[(p * self.steps + s) * NR..][..lo.len()];
            match odd {
                Some(odd) => round_pairs(lo, &odd[p * NR..][..lo.len()], step),
                None => round_pairs(lo, &[0.0; NR][..lo.len()], step),
            }
        }
    }

    /// out (rows x n, rows `stride` apart) = X W^T, on this thread (attention runs one task per
    /// head).
    pub fn run(&self, out: &mut [f32], stride: usize) {
        assert!(
            self.n <= stride && (self.rows == 0 || out.len() >= (self.rows - 1) * stride + self.n)
        );
        // SAFETY: checked just above.
        unsafe { self.run_into(out.as_mut_ptr(), stride) }
    }

    /// As `run`, into a block of a larger output that other threads write beside it.
    ///
    /// # Safety
    /// `out` must address `rows` rows of `n` values, `stride` (>= n) apart, valid for writes and
    /// written by no one else meanwhile.
    pub unsafe fn run_into(&self, out: *mut f32, stride: usize) {
        let shape = Bf16Shape {
            rows: self.rows,
            n: self.n,
            stride,
            steps: self.steps,
        };
        // SAFETY: a u32 is two u16 (the even value in the lower bits, as the kernels read a
        // pair on this little-endian target), and u32's alignment serves u16.
        let w = std::slice::from_raw_parts(self.w.as_ptr() as *const u16, self.w.len() * 2);
        if self.rows > 0 && self.n > 0 {
            bf16_tiles(&self.x, w, shape, None, OutPtr(out), self.plan, false);
        }
    }
}

crate::embed::kernels::multiversion! {
/// dst[i] = bf16 bits of scale * src[i].
pub fn round_scaled(src: &[f32], scale: f32, dst: &mut [u16]) {
    for (o, &v) in dst.iter_mut().zip(src) {
        *o = bf16_bits(v * scale);
    }
}
}

crate::embed::kernels::multiversion! {
/// dst[i] = the bf16 bits of even[i] in the lower half, of odd[i] in the upper: a step of a panel.
pub fn round_pairs(even: &[f32], odd: &[f32], dst: &mut [u32]) {
    for ((o, &a), &b) in dst.iter_mut().zip(even).zip(odd) {
        *o = bf16_bits(a) as u32 | (bf16_bits(b) as u32) << 16;
    }
}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::lowp::tests::data;

    /// X by rows, W by rows and by pairs of columns, at every kernel this CPU runs, with shapes off
    /// every tile edge (odd k, 32 columns or fewer, columns past a panel), each after a larger
    /// shape left its values behind, into rows wider than the product: within bf16's rounding
    /// of an f64 product, and every kernel equal to the portable loops.
    #[test]
    fn both_sides_written_in_place_match_the_product() {
        crate::embed::lowp::tests::say_kernels_not_run(
            "lowp::operands::both_sides_written_in_place_match_the_product",
            &[Precision::Bf16],
        );
        let shapes = [
            (40, 300, 70),
            (7, 70, 33),
            (32, 256, 32),
            (1, 1, 1),
            (33, 130, 64),
            (5, 64, 257),
            (70, 32, 129),
            (13, 20, 9),
            (40, 33, 100),
        ];
        let mut portable = Bf16Operands::with_kernel(Kernel::Portable);
        let mut others: Vec<Bf16Operands> = Kernel::available(Precision::Bf16)
            .into_iter()
            .map(Bf16Operands::with_kernel)
            .collect();
        for (at, &(rows, n, k)) in shapes.iter().enumerate() {
            let x = data(rows * k, at as u32 + 1);
            let w = data(n * k, at as u32 + 100);
            let mut want = vec![0.0f32; rows * n];
            for i in 0..rows {
                for j in 0..n {
                    let dot: f64 = (0..k)
                        .map(|t| 0.5 * x[i * k + t] as f64 * w[j * k + t] as f64)
                        .sum();
                    want[i * n + j] = dot as f32;
                }
            }
            let mut slow = vec![f32::NAN; rows * n];
            for (o, ops) in std::iter::once(&mut portable)
                .chain(others.iter_mut())
                .enumerate()
            {
                ops.shape(rows, n, k);
                for i in 0..rows {
                    ops.set_x_row(i, &x[i * k..(i + 1) * k], 0.5);
                }
                // W by rows on even shapes, by pairs of columns on odd ones.
                if at % 2 == 1 {
                    let col = |t: usize| -> Vec<f32> { (0..n).map(|j| w[j * k + t]).collect() };
                    for t in (0..k).step_by(2) {
                        let odd = (t + 1 < k).then(|| col(t + 1));
                        ops.set_w_cols(t, &col(t), odd.as_deref());
                    }
                } else {
                    for j in 0..n {
                        ops.set_w_row(j, &w[j * k..(j + 1) * k]);
                    }
                }
                // Rows written 3 values apart, the gaps left alone.
                let stride = n + 3;
                let mut wide = vec![f32::NAN; rows * stride];
                ops.run(&mut wide, stride);
                for i in 0..rows {
                    assert!(wide[i * stride + n..(i + 1) * stride]
                        .iter()
                        .all(|v| v.is_nan()));
                }
                let got: Vec<f32> = (0..rows * n)
                    .map(|i| wide[i / n * stride + i % n])
                    .collect();
                let scale = (k as f32).sqrt() * 0.3;
                for i in 0..rows * n {
                    assert!(
                        (got[i] - want[i]).abs() / scale < 0.02,
                        "{:?} {rows}x{n}x{k} at {i}: {} vs {}",
                        ops.plan.kernel,
                        got[i],
                        want[i]
                    );
                }
                if o == 0 {
                    slow = got;
                } else {
                    for i in 0..rows * n {
                        assert!(
                            (got[i] - slow[i]).abs() <= 1e-4 * (1.0 + want[i].abs()),
                            "{:?} {rows}x{n}x{k} at {i}: {} vs portable {}",
                            ops.plan.kernel,
                            got[i],
                            slow[i]
                        );
                    }
                }
            }
        }
    }
}
