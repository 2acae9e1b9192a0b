//! The element-wise steps of the forward pass, written so the compiler vectorizes them: LayerNorm,
//! GELU (erf form, rational approximation) and softmax (exp by range reduction and a polynomial).

/// Sum with eight independent accumulators, so the compiler can keep them in one vector register
/// (a single running sum is a dependency chain it may not reorder).
#[inline(always)]
pub fn sum(xs: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let chunks = xs.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            acc[i] += c[i];
        }
    }
    acc.iter().sum::<f32>() + rest.iter().sum::<f32>()
}

/// Sum of squared distances to `mean`, vectorized like `sum`.
#[inline(always)]
fn sum_sq(xs: &[f32], mean: f32) -> f32 {
    let mut acc = [0.0f32; 8];
    let chunks = xs.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            let d = c[i] - mean;
            acc[i] += d * d;
        }
    }
    acc.iter().sum::<f32>() + rest.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>()
}

/// Run `$body` compiled for AVX-512 or AVX2+FMA when the CPU has them (checked once and cached by
/// std), else for the baseline: one source, vectorized as wide as the machine allows.
macro_rules! multiversion {
    ($(#[$m:meta])* pub fn $name:ident($($arg:ident: $ty:ty),*) $body:block) => {
        $(#[$m])*
        pub fn $name($($arg: $ty),*) {
            #[inline(always)]
            fn generic($($arg: $ty),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
                unsafe fn v4($($arg: $ty),*) { generic($($arg),*) }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn v3($($arg: $ty),*) { generic($($arg),*) }
                if std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                    && std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: the CPU supports every feature v4 is compiled for.
                    return unsafe { v4($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                    // SAFETY: as above, for v3.
                    return unsafe { v3($($arg),*) };
                }
            }
            generic($($arg),*)
        }
    };
}

pub(crate) use multiversion;

/// `$body` with `$a` bound to `act`, one match arm per activation: each arm's loop holds a
/// single formula, which the compiler vectorizes.
macro_rules! per_activation {
    ($act:expr, |$a:ident| $body:block) => {
        match $act {
            Activation::Gelu => {
                let $a = Activation::Gelu;
                $body
            }
            Activation::GeluTanh => {
                let $a = Activation::GeluTanh;
                $body
            }
            Activation::Relu => {
                let $a = Activation::Relu;
                $body
            }
            Activation::Silu => {
                let $a = Activation::Silu;
                $body
            }
            Activation::QuickGelu => {
                let $a = Activation::QuickGelu;
                $body
            }
        }
    };
}

/// Clamp without NaN bookkeeping, which would keep the loop scalar.
#[inline(always)]
pub(crate) fn clamp(x: f32, lo: f32, hi: f32) -> f32 {
    let x = if x < lo { lo } else { x };
    if x > hi {
        hi
    } else {
        x
    }
}

multiversion! {
/// LayerNorm of each `gamma.len()`-wide row of `rows` in place.
pub fn layer_norm_rows(rows: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    for row in rows.chunks_exact_mut(gamma.len()) {
        layer_norm(row, gamma, beta, eps);
    }
}
}

multiversion! {
/// `x = LayerNorm(add + (x + bias))` of each row in place: the residual `x`, a projection's output
/// `add` and that projection's bias in one pass. With `rounded` (bits, stride), each finished row
/// is also rounded to bf16 bits there, zero past the row: the next bf16 product's input, written
/// while the row is in cache.
pub fn residual_layer_norm_rows(x: &mut [f32], add: &[f32], bias: &[f32], gamma: &[f32], beta: &[f32], eps: f32, rounded: Option<(&mut [u16], usize)>) {
    let h = gamma.len();
    let mut rounded = rounded.map(|(bits, stride)| bits.chunks_exact_mut(stride));
    for (row, arow) in x.chunks_exact_mut(h).zip(add.chunks_exact(h)) {
        for ((v, a), b) in row.iter_mut().zip(arow).zip(bias) {
            *v = a + (*v + b);
        }
        layer_norm(row, gamma, beta, eps);
        if let Some(bits) = rounded.as_mut().and_then(|r| r.next()) {
            round_row(row, bits);
        }
    }
}
}

multiversion! {
/// The activation of `x + bias`, row by row (`bias.len()` wide), rounded to bf16 bits into rows
/// of `stride` (zero past the row): `act_bias` fused with the next bf16 product's conversion.
pub fn act_bias_rounded(xs: &[f32], bias: &[f32], act: Activation, out: &mut [u16], stride: usize) {
    per_activation!(act, |a| {
        for (row, bits) in xs.chunks_exact(bias.len()).zip(out.chunks_exact_mut(stride)) {
            for ((o, v), b) in bits.iter_mut().zip(row).zip(bias) {
                *o = crate::embed::lowp::bf16_bits(a.apply(v + b));
            }
            bits[bias.len()..].fill(0);
        }
    })
}
}

/// A row rounded to bf16 bits, zero past its end.
#[inline(always)]
fn round_row(row: &[f32], bits: &mut [u16]) {
    for (o, &v) in bits.iter_mut().zip(row) {
        *o = crate::embed::lowp::bf16_bits(v);
    }
    bits[row.len()..].fill(0);
}

/// LayerNorm of one row in place.
#[inline(always)]
pub fn layer_norm(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = sum(row) / n;
    let var = sum_sq(row, mean) / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
        *v = (*v - mean) * inv * g + b;
    }
}

/// erf(x) for f32 by a rational approximation on [-4, 4] (erf is +-1 in f32 beyond); max error a
/// few ulp. Only multiplies, adds and one division, so it vectorizes.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let x = clamp(x, -4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = x2 * p + -2.101_024e-6;
    p = x2 * p + -5.692_506_4e-5;
    p = x2 * p + -7.349_906_3e-4;
    p = x2 * p + -2.954_6e-3;
    p = x2 * p + -1.609_603_3e-2;
    p *= x;
    let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
    q = x2 * q + -1.682_827e-3;
    q = x2 * q + -7.373_329e-3;
    q = x2 * q + -1.426_474e-2;
    p / q
}

/// The feed-forward activation of the BERT family, by the names transformers gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// x/2 (1 + erf(x / sqrt 2)): `gelu`, `gelu_python`.
    Gelu,
    /// x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): `gelu_new`, `gelu_pytorch_tanh`,
    /// `gelu_fast`, `gelu_accurate`.
    GeluTanh,
    /// max(x, 0): `relu`.
    Relu,
    /// x sigmoid(x): `silu`, `swish`.
    Silu,
    /// x sigmoid(1.702 x): `quick_gelu`.
    QuickGelu,
}

impl Activation {
    /// Every name read, for messages.
    pub const NAMES: &'static str = "gelu, gelu_python, gelu_new, gelu_pytorch_tanh, gelu_fast, \
        gelu_accurate, relu, silu, swish, quick_gelu";

    pub fn from_name(name: &str) -> Option<Activation> {
        Some(match name {
            "gelu" | "gelu_python" => Activation::Gelu,
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" | "gelu_accurate" => {
                Activation::GeluTanh
            }
            "relu" => Activation::Relu,
            "silu" | "swish" => Activation::Silu,
            "quick_gelu" => Activation::QuickGelu,
            _ => return None,
        })
    }
}

impl Activation {
    /// The activation of one value (inlined into each kernel's loop, where it vectorizes).
    #[inline(always)]
    pub fn apply(self, x: f32) -> f32 {
        const TANH_C: f32 = 0.797_884_6; // sqrt(2 / pi)
        match self {
            Activation::Gelu => 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2)),
            Activation::GeluTanh => {
                // tanh(y) = 1 - 2 / (e^2y + 1), from the vectorizing exp.
                let y = TANH_C * (x + 0.044_715 * x * x * x);
                0.5 * x * (2.0 - 2.0 / (exp(2.0 * y) + 1.0))
            }
            Activation::Relu => {
                if x > 0.0 {
                    x
                } else {
                    0.0
                }
            }
            Activation::Silu => x / (1.0 + exp(-x)),
            Activation::QuickGelu => x / (1.0 + exp(-1.702 * x)),
        }
    }
}

multiversion! {
/// The activation of `x + bias`, row by row (`bias.len()` wide): the projection's bias folded
/// in.
pub fn act_bias(xs: &mut [f32], bias: &[f32], act: Activation) {
    per_activation!(act, |a| {
        for row in xs.chunks_exact_mut(bias.len()) {
            for (v, b) in row.iter_mut().zip(bias) {
                *v = a.apply(*v + b);
            }
        }
    })
}
}

/// e^x for f32: x = n ln2 + r with |r| <= ln2/2, e^r by a degree-6 polynomial, 2^n from bits.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    const ROUND: f32 = 12_582_912.0; // 1.5 * 2^23: adding and subtracting rounds to an integer
    let x = clamp(x, -87.0, 88.0);
    let shifted = x * LOG2E + ROUND;
    let n = shifted - ROUND;
    // The integer n read from the bits of `shifted` (one unit per ulp there): a float-to-int `as`
    // saturates lane by lane and would keep the loop scalar.
    let n_int = shifted.to_bits() as i32 - ROUND.to_bits() as i32;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    let scale = f32::from_bits(((n_int + 127) as u32) << 23);
    p * scale
}

multiversion! {
/// exp(x - row max) of each `width`-wide row in place, with 1 / (row sum) into `inv_sums`: the
/// softmax without its last pass, so the caller can scale the (narrower) product instead.
pub fn exp_rows(rows: &mut [f32], width: usize, inv_sums: &mut [f32]) {
    for (row, inv) in rows.chunks_exact_mut(width).zip(inv_sums.iter_mut()) {
        let max = row_max(row);
        for v in row.iter_mut() {
            *v = exp(*v - max);
        }
        *inv = 1.0 / sum(row);
    }
}
}

multiversion! {
/// Softmax of one row of scores, rounded to bf16 bits into `out` (the row is left holding the
/// exponentials): what a bf16 product of the probabilities reads.
pub fn softmax_to_bf16(row: &mut [f32], out: &mut [u16]) {
    let max = row_max(row);
    // The exponentials and their sum in one pass, sixteen lanes at a time.
    let mut acc = [0.0f32; 16];
    let mut chunks = row.chunks_exact_mut(16);
    for c in &mut chunks {
        for i in 0..16 {
            c[i] = exp(c[i] - max);
            acc[i] += c[i];
        }
    }
    let mut total: f32 = acc.iter().sum();
    for v in chunks.into_remainder() {
        *v = exp(*v - max);
        total += *v;
    }
    let inv = 1.0 / total;
    for (o, &v) in out.iter_mut().zip(row.iter()) {
        *o = crate::embed::lowp::bf16_bits(v * inv);
    }
}
}

/// Largest value of a row, with eight lanes and no NaN bookkeeping so it vectorizes.
#[inline(always)]
fn row_max(row: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; 8];
    let chunks = row.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            acc[i] = if c[i] > acc[i] { c[i] } else { acc[i] };
        }
    }
    acc.iter()
        .chain(rest)
        .fold(f32::NEG_INFINITY, |m, &v| if v > m { v } else { m })
}

/// Softmax of one row in place.
#[inline(always)]
pub fn softmax(row: &mut [f32]) {
    let max = row_max(row);
    for v in row.iter_mut() {
        *v = exp(*v - max);
    }
    let inv = 1.0 / sum(row);
    for v in row.iter_mut() {
        *v *= inv;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf in f64 by its Taylor series (|x| < 3) or the continued fraction of erfc.
    fn erf64(x: f64) -> f64 {
        if x.abs() < 3.0 {
            let mut sum = 0.0;
            let mut term = x;
            let mut n = 0.0;
            while term.abs() > 1e-17 {
                sum += term / (2.0 * n + 1.0);
                n += 1.0;
                term *= -x * x / n;
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        } else {
            let t = x.abs();
            let mut f = 0.0;
            for k in (1..60).rev() {
                f = (k as f64 / 2.0) / (t + f);
            }
            let erfc = (-t * t).exp() / std::f64::consts::PI.sqrt() / (t + f);
            (1.0 - erfc) * x.signum()
        }
    }

    /// The softmax rounded to bf16 against an f64 softmax, at lengths on and off the 16 lanes
    /// (and a row whose scores span the exponent's range): within bf16's rounding, summing to 1.
    #[test]
    fn softmax_to_bf16_matches_f64() {
        for len in [1usize, 2, 15, 16, 17, 33, 256, 301] {
            let scores: Vec<f32> = (0..len)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) * if len == 301 { 2.0 } else { 0.1 })
                .collect();
            let max = scores.iter().fold(f64::MIN, |m, &v| m.max(v as f64));
            let e: Vec<f64> = scores.iter().map(|&v| (v as f64 - max).exp()).collect();
            let total: f64 = e.iter().sum();
            let mut row = scores.clone();
            let mut out = vec![0u16; len];
            softmax_to_bf16(&mut row, &mut out);
            let mut sum = 0.0f64;
            for (i, &b) in out.iter().enumerate() {
                let got = f32::from_bits((b as u32) << 16) as f64;
                let want = e[i] / total;
                assert!(
                    (got - want).abs() <= want * 2.0 / 256.0 + 1e-30,
                    "len {len} at {i}: {got} vs {want}"
                );
                sum += got;
            }
            assert!(
                (sum - 1.0).abs() < 0.01 * (len as f64).sqrt().max(1.0) / 4.0,
                "len {len}: sum {sum}"
            );
        }
    }

    /// The fused passes give exactly what the separate ones give: the residual LayerNorm (with
    /// and without its rounded copy) and the activation rounded for the next product, at widths
    /// on and off the vector lanes, with the padding past each row zeroed.
    #[test]
    fn fused_rounding_equals_the_separate_passes() {
        use crate::embed::lowp::bf16_bits;
        for h in [5usize, 16, 48, 384] {
            let rows = 7;
            let wave = |seed: usize| -> Vec<f32> {
                (0..rows * h)
                    .map(|i| ((i * 7919 + seed * 104_729) % 2003) as f32 / 500.0 - 2.0)
                    .collect()
            };
            let (x0, add) = (wave(1), wave(2));
            let (gamma, beta, bias) = (
                wave(3)[..h].to_vec(),
                wave(4)[..h].to_vec(),
                wave(5)[..h].to_vec(),
            );
            let mut want = x0.clone();
            for ((w, a), b) in want.iter_mut().zip(&add).zip(bias.iter().cycle()) {
                *w = a + (*w + b);
            }
            for row in want.chunks_exact_mut(h) {
                layer_norm(row, &gamma, &beta, 1e-12);
            }
            let stride = h.next_multiple_of(32);
            let mut plain = x0.clone();
            residual_layer_norm_rows(&mut plain, &add, &bias, &gamma, &beta, 1e-12, None);
            let mut fused = x0.clone();
            let mut bits = vec![u16::MAX; rows * stride];
            residual_layer_norm_rows(
                &mut fused,
                &add,
                &bias,
                &gamma,
                &beta,
                1e-12,
                Some((&mut bits, stride)),
            );
            assert_eq!(plain, want, "width {h}");
            assert_eq!(fused, want, "width {h}");
            for (r, row) in bits.chunks_exact(stride).enumerate() {
                let expect: Vec<u16> = want[r * h..][..h].iter().map(|&v| bf16_bits(v)).collect();
                assert_eq!(&row[..h], &expect[..], "width {h} row {r}");
                assert!(
                    row[h..].iter().all(|&b| b == 0),
                    "width {h} row {r}: padding"
                );
            }
            for act in [
                Activation::Gelu,
                Activation::GeluTanh,
                Activation::Relu,
                Activation::Silu,
            ] {
                let mut plain = add.clone();
                act_bias(&mut plain, &bias, act);
                let mut bits = vec![u16::MAX; rows * stride];
                act_bias_rounded(&add, &bias, act, &mut bits, stride);
                for (r, row) in bits.chunks_exact(stride).enumerate() {
                    let expect: Vec<u16> =
                        plain[r * h..][..h].iter().map(|&v| bf16_bits(v)).collect();
                    assert_eq!(&row[..h], &expect[..], "{act:?} width {h} row {r}");
                    assert!(
                        row[h..].iter().all(|&b| b == 0),
                        "{act:?} width {h} row {r}: padding"
                    );
                }
            }
        }
    }

    #[test]
    fn erf_is_accurate() {
        let mut worst = 0.0f64;
        for i in -6000..=6000 {
            let x = i as f32 / 1000.0;
            worst = worst.max((erf(x) as f64 - erf64(x as f64)).abs());
        }
        assert!(worst < 5e-7, "max erf error {worst}");
    }

    /// Each activation against its formula in f64 (the bias added first), over the range
    /// activations meet; the two GELUs are told apart (they differ by up to about 5e-4).
    #[test]
    fn activations_follow_their_formulas() {
        let sig = |x: f64| 1.0 / (1.0 + (-x).exp());
        let gelu = |x: f64| 0.5 * x * (1.0 + erf64(x / 2f64.sqrt()));
        let tanh_gelu = |x: f64| {
            let c = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
        };
        let cases: [(&str, &dyn Fn(f64) -> f64); 5] = [
            ("gelu", &gelu),
            ("gelu_new", &tanh_gelu),
            ("relu", &|x: f64| x.max(0.0)),
            ("silu", &|x: f64| x * sig(x)),
            ("quick_gelu", &|x: f64| x * sig(1.702 * x)),
        ];
        let xs: Vec<f32> = (-1200..=1200).map(|i| i as f32 / 100.0).collect();
        let bias = [0.25f32];
        for (name, f) in cases {
            let mut got = xs.clone();
            act_bias(&mut got, &bias, Activation::from_name(name).unwrap());
            for (x, g) in xs.iter().zip(&got) {
                let want = f((x + bias[0]) as f64);
                assert!(
                    (*g as f64 - want).abs() <= 2e-6 * (1.0 + want.abs()),
                    "{name}({x} + 0.25) = {g}, want {want}"
                );
            }
        }
        assert!((gelu(1.5) - tanh_gelu(1.5)).abs() > 1e-4);
        assert_eq!(
            Activation::from_name("gelu_pytorch_tanh"),
            Some(Activation::GeluTanh)
        );
        assert_eq!(Activation::from_name("mish"), None);
    }

    #[test]
    fn exp_is_accurate() {
        let mut worst = 0.0f64;
        for i in -8000..=8000 {
            let x = i as f32 / 100.0;
            let want = (x as f64).exp();
            worst = worst.max(((exp(x) as f64) - want).abs() / want);
        }
        assert!(worst < 3e-7, "max relative exp error {worst}");
    }

    #[test]
    fn softmax_and_layer_norm() {
        let mut r = vec![1.0, 2.0, 3.0];
        softmax(&mut r);
        assert!((r.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!((r[2] - 0.665_240_9).abs() < 1e-6);
        let mut v = vec![1.0, 2.0, 3.0, 4.0];
        layer_norm(&mut v, &[1.0; 4], &[0.0; 4], 1e-12);
        assert!(v.iter().sum::<f32>().abs() < 1e-6);
        assert!((v[3] - 1.341_640_8).abs() < 1e-5);
    }
}
