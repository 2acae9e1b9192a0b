//! The AVX-512 kernels of the reduced-precision products: a tile of up to 6 rows by a 64-column
//! panel with `vdpbf16ps` (bf16 pairs) or `vpdpbusd` (u8 x i8 quads), and the epilogues that turn
//! an AMX block's sums into values. The callers check the CPU features each one enables.

use super::{Dequant, NR};
use std::arch::x86_64::*;

/// Lanes of a 16-wide vector that hold columns below `cols`, from column `c0`.
#[inline(always)]
fn mask(cols: usize, c0: usize) -> __mmask16 {
    if cols >= c0 + 16 {
        0xffff
    } else {
        ((1u32 << (cols - c0)) - 1) as __mmask16
    }
}

/// An r-row tile (r <= 6) of a bf16 product: `x` holds pairs of bf16 as u32 (`xs` per row),
/// `w` the panel; `dst` gets `cols` values per row at stride `n`, plus the bias. A panel's
/// columns past 32 are not computed when `cols` <= 32 (an attention head of 32 dimensions).
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
pub unsafe fn bf16_tile(
    r: usize,
    x: *const u32,
    xs: usize,
    w: *const u16,
    steps: usize,
    dst: *mut f32,
    n: usize,
    cols: usize,
    bias: Option<&[f32]>,
) {
    macro_rules! by_rows {
        ($v:literal) => {
            match r {
                6 => bf16_rows::<6, $v>(x, xs, w, steps, dst, n, cols, bias),
                5 => bf16_rows::<5, $v>(x, xs, w, steps, dst, n, cols, bias),
                4 => bf16_rows::<4, $v>(x, xs, w, steps, dst, n, cols, bias),
                3 => bf16_rows::<3, $v>(x, xs, w, steps, dst, n, cols, bias),
                2 => bf16_rows::<2, $v>(x, xs, w, steps, dst, n, cols, bias),
                _ => bf16_rows::<1, $v>(x, xs, w, steps, dst, n, cols, bias),
            }
        };
    }
    if cols <= 32 {
        by_rows!(2)
    } else {
        by_rows!(4)
    }
}

/// R rows by the panel's first V vectors of 16 columns.
#[allow(clippy::too_many_arguments)]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn bf16_rows<const R: usize, const V: usize>(
    x: *const u32,
    xs: usize,
    w: *const u16,
    steps: usize,
    dst: *mut f32,
    n: usize,
    cols: usize,
    bias: Option<&[f32]>,
) {
    let mut acc = [[_mm512_setzero_ps(); V]; R];
    let mut wp = w as *const __m512i;
    for s in 0..steps {
        let mut b = [std::mem::transmute::<__m512i, __m512bh>(_mm512_setzero_si512()); V];
        for (v, b) in b.iter_mut().enumerate() {
            *b = std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(wp.add(v)));
        }
        wp = wp.add(NR / 16);
        for (i, row) in acc.iter_mut().enumerate() {
            let a = std::mem::transmute::<__m512i, __m512bh>(_mm512_set1_epi32(
                x.add(i * xs + s).read_unaligned() as i32,
            ));
            for v in 0..V {
                row[v] = _mm512_dpbf16_ps(row[v], a, b[v]);
            }
        }
    }
    for (i, row) in acc.iter().enumerate() {
        for (v, &sum) in row.iter().enumerate() {
            let c0 = v * 16;
            if c0 >= cols {
                break;
            }
            let m = mask(cols, c0);
            let val = match bias {
                Some(b) => _mm512_add_ps(sum, _mm512_maskz_loadu_ps(m, b.as_ptr().add(c0))),
                None => sum,
            };
            _mm512_mask_storeu_ps(dst.add(i * n + c0), m, val);
        }
    }
}

/// An r-row tile of an int8 product: `x` holds quads of u8 codes as u32, `w` the panel's
/// int8 quads; sums are corrected for the rows' zero points and scaled back.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
pub unsafe fn int8_tile(
    r: usize,
    x: *const u32,
    xs: usize,
    w: *const i8,
    steps: usize,
    dst: *mut f32,
    n: usize,
    d: &Dequant,
) {
    match r {
        6 => int8_rows::<6>(x, xs, w, steps, dst, n, d),
        5 => int8_rows::<5>(x, xs, w, steps, dst, n, d),
        4 => int8_rows::<4>(x, xs, w, steps, dst, n, d),
        3 => int8_rows::<3>(x, xs, w, steps, dst, n, d),
        2 => int8_rows::<2>(x, xs, w, steps, dst, n, d),
        _ => int8_rows::<1>(x, xs, w, steps, dst, n, d),
    }
}

#[allow(clippy::too_many_arguments)]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn int8_rows<const R: usize>(
    x: *const u32,
    xs: usize,
    w: *const i8,
    steps: usize,
    dst: *mut f32,
    n: usize,
    d: &Dequant,
) {
    let mut acc = [[_mm512_setzero_si512(); 4]; R];
    let mut wp = w as *const __m512i;
    for s in 0..steps {
        let b = [
            _mm512_loadu_si512(wp),
            _mm512_loadu_si512(wp.add(1)),
            _mm512_loadu_si512(wp.add(2)),
            _mm512_loadu_si512(wp.add(3)),
        ];
        wp = wp.add(4);
        for (i, row) in acc.iter_mut().enumerate() {
            let a = _mm512_set1_epi32(x.add(i * xs + s).read_unaligned() as i32);
            for v in 0..4 {
                row[v] = _mm512_dpbusd_epi32(row[v], a, b[v]);
            }
        }
    }
    for (i, row) in acc.iter().enumerate() {
        for (v, &sum) in row.iter().enumerate() {
            if v * 16 >= d.scale.len() {
                break;
            }
            int8_out(sum, i, v * 16, d, dst.add(i * n));
        }
    }
}

/// Sixteen int32 sums of row i from column c0, corrected for the row's zero point, scaled
/// back and biased, stored into `row` (columns past the panel's are left alone).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn int8_out(sum: __m512i, i: usize, c0: usize, d: &Dequant, row: *mut f32) {
    let m = mask(d.scale.len(), c0);
    let colsum = _mm512_maskz_loadu_epi32(m, d.colsum.as_ptr().add(c0));
    let zp = _mm512_set1_epi32(d.zp[i]);
    let exact = _mm512_sub_epi32(sum, _mm512_mullo_epi32(zp, colsum));
    let scale = _mm512_maskz_loadu_ps(m, d.scale.as_ptr().add(c0));
    let sx = _mm512_set1_ps(d.sx[i]);
    let mut val = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(exact), sx), scale);
    if let Some(b) = d.bias {
        val = _mm512_add_ps(val, _mm512_maskz_loadu_ps(m, b.as_ptr().add(c0)));
    }
    _mm512_mask_storeu_ps(row.add(c0), m, val);
}

/// An AMX block's bf16 sums (f32 bits, rows of 64) of `r` rows and `cols` columns, plus the
/// bias, into `dst` (stride n).
#[target_feature(enable = "avx512f")]
pub unsafe fn finish_bf16(
    sums: &[u32],
    r: usize,
    cols: usize,
    bias: Option<&[f32]>,
    dst: *mut f32,
    n: usize,
) {
    for i in 0..r {
        for c0 in (0..cols).step_by(16) {
            let m = mask(cols, c0);
            let mut val = _mm512_castsi512_ps(_mm512_loadu_si512(
                sums.as_ptr().add(i * NR + c0) as *const __m512i
            ));
            if let Some(b) = bias {
                val = _mm512_add_ps(val, _mm512_maskz_loadu_ps(m, b.as_ptr().add(c0)));
            }
            _mm512_mask_storeu_ps(dst.add(i * n + c0), m, val);
        }
    }
}

/// An AMX block's int8 sums (i32, rows of 64) of `r` rows, turned into values, into `dst`.
#[target_feature(enable = "avx512f")]
pub unsafe fn finish_int8(sums: &[u32], r: usize, d: &Dequant, dst: *mut f32, n: usize) {
    for i in 0..r {
        for c0 in (0..d.scale.len()).step_by(16) {
            let sum = _mm512_loadu_si512(sums.as_ptr().add(i * NR + c0) as *const __m512i);
            int8_out(sum, i, c0, d, dst.add(i * n));
        }
    }
}
