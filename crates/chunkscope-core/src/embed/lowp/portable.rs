//! The reduced-precision tiles by plain loops, for CPUs without the instructions: the same sums
//! in the same layout as the AVX-512 and AMX kernels (which tests compare with them).

use super::{bf16_value, Dequant, NR};

/// The bf16 tile by plain loops: the same sums in the same layout.
///
/// # Safety
/// `dst` must hold `r` rows of the tile's columns at stride `n`, valid for writes and written by
/// no one else meanwhile.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn bf16_tile_portable(
    r: usize,
    x: &[u16],
    xs: usize,
    w: &[u16],
    steps: usize,
    dst: *mut f32,
    n: usize,
    cols: usize,
    bias: Option<&[f32]>,
) {
    let mut acc = [0.0f32; NR];
    for i in 0..r {
        acc.fill(0.0);
        let xr = &x[i * xs..];
        for s in 0..steps {
            let (a0, a1) = (bf16_value(xr[2 * s]), bf16_value(xr[2 * s + 1]));
            let ws = &w[s * NR * 2..(s + 1) * NR * 2];
            for (c, a) in acc.iter_mut().enumerate() {
                *a += a0 * bf16_value(ws[2 * c]) + a1 * bf16_value(ws[2 * c + 1]);
            }
        }
        for (c, &a) in acc.iter().enumerate().take(cols) {
            *dst.add(i * n + c) = a + bias.map_or(0.0, |b| b[c]);
        }
    }
}

/// The int8 tile by plain loops.
///
/// # Safety
/// `dst` must hold `r` rows of the tile's columns at stride `n`, valid for writes and written by
/// no one else meanwhile.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn int8_tile_portable(
    r: usize,
    x: &[u8],
    xs: usize,
    w: &[i8],
    steps: usize,
    dst: *mut f32,
    n: usize,
    d: &Dequant,
) {
    let mut acc = [0i32; NR];
    for i in 0..r {
        acc.fill(0);
        let xr = &x[i * xs..];
        for s in 0..steps {
            let a = &xr[4 * s..4 * s + 4];
            let ws = &w[s * NR * 4..(s + 1) * NR * 4];
            for (c, sum) in acc.iter_mut().enumerate() {
                for g in 0..4 {
                    *sum += a[g] as i32 * ws[4 * c + g] as i32;
                }
            }
        }
        for (c, &a) in acc.iter().enumerate().take(d.scale.len()) {
            *dst.add(i * n + c) = d.value(i, c, a);
        }
    }
}
