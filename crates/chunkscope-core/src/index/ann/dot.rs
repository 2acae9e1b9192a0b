//! The graph's metric: cosine distance between unit vectors held as bfloat16, and the dot
//! product kernels behind it.

use hnsw_rs::anndists::dist::distances::Distance;

use crate::embed::lowp::bf16_bits;

/// Cosine distance between unit vectors held as bfloat16 (1 - dot, never below 0), the graph's
/// metric. The graph keeps its own copy of every vector in bf16, half the bytes of the flat
/// rows: a search reads a few thousand vectors scattered through memory, so it waits on half the
/// cache lines, and at 10^6 vectors of 384 the copy is 0.77 GB instead of 1.5. Rounding moves a
/// dot product of unit vectors by about 10^-3, which reorders only near-ties among the candidates;
/// their scores, and the order of the hits, come from the flat f32 rows (`exact_dot`).
#[derive(Debug, Clone, Copy, Default)]
pub struct UnitDot;

impl Distance<u16> for UnitDot {
    fn eval(&self, a: &[u16], b: &[u16]) -> f32 {
        (1.0 - fast_dot(a, b)).max(0.0)
    }
}

/// `v` rounded to bf16 (nearest even), appended to `out`.
pub fn push_bf16(v: &[f32], out: &mut Vec<u16>) {
    out.extend(v.iter().map(|&x| bf16_bits(x)));
}

/// A dot product of bf16 vectors: `vdpbf16ps` (32 pairs an instruction) where the CPU has
/// AVX-512 BF16, else 16 independent f32 lanes, which the compiler vectorises (a plain sum does
/// not: float addition is not reassociated). For the graph's navigation only.
#[inline]
pub fn fast_dot(a: &[u16], b: &[u16]) -> f32 {
    type Dot = unsafe fn(&[u16], &[u16]) -> f32;
    static KERNEL: std::sync::OnceLock<Dot> = std::sync::OnceLock::new();
    let kernel = KERNEL.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if crate::embed::lowp::has_bf16() {
                return dot_avx512 as Dot;
            }
            if has!("avx2") && has!("fma") {
                return dot_avx2 as Dot;
            }
        }
        dot_portable as Dot
    });
    // SAFETY: the kernel was chosen for the features this CPU has.
    unsafe { kernel(a, b) }
}

unsafe fn dot_portable(a: &[u16], b: &[u16]) -> f32 {
    dot_lanes(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[u16], b: &[u16]) -> f32 {
    dot_lanes(a, b)
}

/// 32 bf16 pairs multiplied and added into 16 f32 sums per instruction, two sums in flight; the
/// last < 32 values as `dot_lanes` does them.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn dot_avx512(a: &[u16], b: &[u16]) -> f32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let load = |p: &[u16], i: usize| {
        // SAFETY: callers pass i + 32 <= n, within both slices.
        std::mem::transmute::<__m512i, __m512bh>(unsafe {
            _mm512_loadu_si512(p.as_ptr().add(i) as *const __m512i)
        })
    };
    let (mut s0, mut s1) = (_mm512_setzero_ps(), _mm512_setzero_ps());
    let mut i = 0;
    while i + 64 <= n {
        s0 = _mm512_dpbf16_ps(s0, load(a, i), load(b, i));
        s1 = _mm512_dpbf16_ps(s1, load(a, i + 32), load(b, i + 32));
        i += 64;
    }
    if i + 32 <= n {
        s0 = _mm512_dpbf16_ps(s0, load(a, i), load(b, i));
        i += 32;
    }
    _mm512_reduce_add_ps(_mm512_add_ps(s0, s1)) + dot_lanes(&a[i..n], &b[i..n])
}

#[inline(always)]
fn dot_lanes(a: &[u16], b: &[u16]) -> f32 {
    const L: usize = 16;
    let f = |h: u16| f32::from_bits(u32::from(h) << 16);
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; L];
    let (ca, cb) = (a.chunks_exact(L), b.chunks_exact(L));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..L {
            acc[i] += f(x[i]) * f(y[i]);
        }
    }
    let mut tail = 0f32;
    for (x, y) in ra.iter().zip(rb) {
        tail += f(*x) * f(*y);
    }
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::ann::XorShift;
    use crate::index::vector::{exact_dot, unit};

    /// The bf16 dot product equals an f64 sum of the rounded values (every length past and
    /// around the 16 lanes), and for unit vectors stays within 4e-3 of the f32 one.
    #[test]
    fn fast_dot_matches_exact() {
        let mut rng = XorShift::new(3);
        let widen = |v: &[u16]| -> Vec<f64> {
            v.iter()
                .map(|&h| f64::from(f32::from_bits(u32::from(h) << 16)))
                .collect()
        };
        for n in [0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 96, 384, 385, 768] {
            let a: Vec<f32> = unit(&(0..n).map(|_| rng.normal()).collect::<Vec<_>>()).into_owned();
            let b: Vec<f32> = unit(&(0..n).map(|_| rng.normal()).collect::<Vec<_>>()).into_owned();
            let (mut ha, mut hb) = (Vec::new(), Vec::new());
            push_bf16(&a, &mut ha);
            push_bf16(&b, &mut hb);
            let f = fast_dot(&ha, &hb);
            let rounded: f64 = widen(&ha).iter().zip(widen(&hb)).map(|(x, y)| x * y).sum();
            assert!(
                (f64::from(f) - rounded).abs() <= 1e-5,
                "{n}: {f} vs {rounded}"
            );
            // Every kernel this CPU can run, not only the one chosen.
            let mut kernels: Vec<(&str, f32)> =
                vec![("portable", unsafe { dot_portable(&ha, &hb) })];
            #[cfg(target_arch = "x86_64")]
            {
                use std::arch::is_x86_feature_detected as has;
                if has!("avx2") && has!("fma") {
                    kernels.push(("avx2", unsafe { dot_avx2(&ha, &hb) }));
                }
                if crate::embed::lowp::has_bf16() {
                    kernels.push(("avx512", unsafe { dot_avx512(&ha, &hb) }));
                }
            }
            for (name, k) in kernels {
                assert!(
                    (f64::from(k) - rounded).abs() <= 1e-5,
                    "{name} {n}: {k} vs {rounded}"
                );
            }
            let e = exact_dot(&a, &b);
            assert!((f - e).abs() <= 4e-3, "{n}: {f} vs {e}");
            assert!(UnitDot.eval(&ha, &hb) >= 0.0);
        }
    }
}
