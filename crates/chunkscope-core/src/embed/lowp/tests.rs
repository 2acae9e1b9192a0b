//! Tests of the reduced-precision products: every kernel this CPU runs against an f64 reference
//! and the portable loops, unaligned reads, rounding and the precision names.

use super::*;

/// `len` values in [-1, 1] from `seed`.
pub(super) fn data(len: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s % 20_001) as f32 / 10_000.0 - 1.0
        })
        .collect()
}

fn reference(x: &[f32], rows: usize, w: &[f32], n: usize, k: usize, b: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0; rows * n];
    for r in 0..rows {
        for j in 0..n {
            let dot: f64 = (0..k)
                .map(|i| x[r * k + i] as f64 * w[j * k + i] as f64)
                .sum();
            out[r * n + j] = dot as f32 + b[j];
        }
    }
    out
}

/// Say which kernels of `precisions` this CPU cannot run, so `test` did not check them: one
/// line on stderr and in the test command's list of what did not run (`CHUNKSCOPE_SKIP_LOG`).
pub(super) fn say_kernels_not_run(test: &str, precisions: &[Precision]) {
    for &p in precisions {
        let have = Kernel::available(p);
        let missing: Vec<Kernel> = [Kernel::Portable, Kernel::Avx512, Kernel::Amx]
            .into_iter()
            .filter(|k| !have.contains(k))
            .collect();
        if missing.is_empty() {
            continue;
        }
        let line = format!("NOT RUN {test} {p} kernels {missing:?}: this CPU lacks them");
        eprintln!("{line}");
        if let Some(log) = std::env::var_os("CHUNKSCOPE_SKIP_LOG") {
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
            {
                let _ = writeln!(f, "{line}");
            }
        }
    }
}

/// Every shape edge (rows not a multiple of 6, 16 or 32, columns not of 64 or 16, odd k, k
/// past a tile's depth) and every kernel this CPU runs, against an f64 reference: bf16
/// within its rounding, int8 within its steps, and each kernel equal to the portable loops.
/// The kernels this CPU cannot run are not tested here, and say so.
#[test]
fn products_match_the_reference_at_every_edge() {
    say_kernels_not_run(
        "lowp::products_match_the_reference_at_every_edge",
        &[Precision::Bf16, Precision::Int8],
    );
    for &(rows, n, k) in &[
        (1, 16, 8),
        (7, 70, 33),
        (13, 128, 64),
        (50, 200, 130),
        (97, 64, 384),
        (33, 130, 100),
        (70, 96, 1000),
    ] {
        let x = data(rows * k, 1);
        let w = data(n * k, 2);
        let b = data(n, 3);
        let want = reference(&x, rows, &w, n, k, &b);
        for (p, tol) in [(Precision::Bf16, 0.02), (Precision::Int8, 0.05)] {
            let packed = Packed::new(&w, n, k, p);
            let mut slow = vec![f32::NAN; rows * n];
            packed.matmul_with(&x, rows, Some(&b), &mut slow, Kernel::Portable);
            for kernel in Kernel::available(p) {
                let mut fast = vec![f32::NAN; rows * n];
                packed.matmul_with(&x, rows, Some(&b), &mut fast, kernel);
                let scale = (k as f32).sqrt() * 0.6;
                for i in 0..rows * n {
                    let err = (fast[i] - want[i]).abs() / scale;
                    assert!(
                        err < tol,
                        "{p} {kernel:?} {rows}x{n}x{k} at {i}: {} vs {}",
                        fast[i],
                        want[i]
                    );
                    assert!(
                        (fast[i] - slow[i]).abs() <= 1e-4 * (1.0 + want[i].abs()),
                        "{p} {kernel:?} {rows}x{n}x{k} at {i}: {} vs portable {}",
                        fast[i],
                        slow[i]
                    );
                }
            }
        }
    }
}

/// A product of rows rounded beforehand (`matmul_rounded`) equals the product that rounds
/// its own input, bit for bit, on and off the pool, whatever finite values the padding rows
/// past `rows` hold (a block's buffer keeps the last block's rows there).
#[test]
fn rounded_input_gives_the_same_product() {
    for &(rows, n, k) in &[(1, 16, 8), (13, 70, 33), (45, 384, 384), (97, 200, 130)] {
        let x = data(rows * k, 7);
        let w = data(n * k, 8);
        let b = data(n, 9);
        let packed = Packed::new(&w, n, k, Precision::Bf16);
        let stride = packed.bf16_stride();
        let padded = rows.next_multiple_of(BF16_PAD_ROWS);
        let mut xb = vec![bf16_bits(0.5); padded * stride];
        to_bf16_rows(&x, k, &mut xb, stride);
        for row in xb[..rows * stride].chunks_exact_mut(stride) {
            row[k..].fill(0);
        }
        for pool in [false, true] {
            let mut want = vec![f32::NAN; rows * n];
            packed.product(
                &x,
                rows,
                Some(&b),
                &mut want,
                Kernel::best(Precision::Bf16),
                pool,
            );
            let mut got = vec![f32::NAN; rows * n];
            packed.matmul_rounded(&xb, rows, Some(&b), &mut got, pool);
            assert_eq!(want, got, "{rows}x{n}x{k} pool {pool}");
        }
    }
}

/// The AVX-512 tiles read activations through pointers made from u16 and u8 buffers, which
/// promise no 4-byte alignment: at an odd offset they must give the portable loops' sums (a
/// plain `*ptr` read there is undefined, and debug builds stop on it).
#[cfg(target_arch = "x86_64")]
#[test]
fn tiles_read_activations_at_any_alignment() {
    let (r, steps, cols) = (3, 16, NR);
    let bits = |v: &[f32]| v.iter().map(|&f| bf16_bits(f)).collect::<Vec<u16>>();
    let w16 = bits(&data(steps * NR * 2, 4));
    let x16 = bits(&data(1 + r * steps * 2, 5));
    let w8: Vec<i8> = (0..steps * NR * 4).map(|i| (i % 251) as i8).collect();
    let x8: Vec<u8> = (0..1 + r * steps * 4)
        .map(|i| (i * 7 % 256) as u8)
        .collect();
    let (sx, zp) = (vec![0.01f32; r], vec![3i32; r]);
    let (scale, colsum) = (vec![0.02f32; cols], vec![5i32; cols]);
    let d = Dequant {
        sx: &sx,
        zp: &zp,
        scale: &scale,
        colsum: &colsum,
        bias: None,
    };
    let mut want = vec![0.0f32; r * NR];
    let mut got = vec![0.0f32; r * NR];
    if Kernel::available(Precision::Bf16).contains(&Kernel::Avx512) {
        // SAFETY: the CPU has AVX-512 BF16; every buffer holds r rows of `steps` pairs (from
        // element 1) and r rows of NR outputs.
        unsafe {
            bf16_tile_portable(
                r,
                &x16[1..],
                steps * 2,
                &w16,
                steps,
                want.as_mut_ptr(),
                NR,
                cols,
                None,
            );
            let x = x16.as_ptr().add(1) as *const u32;
            avx512::bf16_tile(
                r,
                x,
                steps,
                w16.as_ptr(),
                steps,
                got.as_mut_ptr(),
                NR,
                cols,
                None,
            );
        }
        assert_eq!(want, got, "bf16 at an odd offset");
    } else {
        eprintln!("NOT RUN lowp::tiles_read_activations_at_any_alignment bf16: no AVX-512 BF16");
    }
    if Kernel::available(Precision::Int8).contains(&Kernel::Avx512) {
        // SAFETY: as above, with AVX-512 VNNI and quads of u8.
        unsafe {
            int8_tile_portable(
                r,
                &x8[1..],
                steps * 4,
                &w8,
                steps,
                want.as_mut_ptr(),
                NR,
                &d,
            );
            let x = x8.as_ptr().add(1) as *const u32;
            avx512::int8_tile(r, x, steps, w8.as_ptr(), steps, got.as_mut_ptr(), NR, &d);
        }
        assert_eq!(want, got, "int8 at an odd offset");
    } else {
        eprintln!("NOT RUN lowp::tiles_read_activations_at_any_alignment int8: no AVX-512 VNNI");
    }
}

#[test]
fn bf16_rounds_to_nearest_even() {
    assert_eq!(bf16_bits(1.0), 0x3f80);
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
    assert_eq!(bf16_bits(1.0 + 1.0 / 256.0), 0x3f80);
    assert_eq!(bf16_bits(1.0 + 3.0 / 256.0), 0x3f82);
    assert_eq!(bf16_value(bf16_bits(-2.5)), -2.5);
}

#[test]
fn precision_words() {
    for p in [Precision::F32, Precision::Bf16, Precision::Int8] {
        assert_eq!(p.as_str().parse::<Precision>(), Ok(p));
    }
    assert!("fp8"
        .parse::<Precision>()
        .unwrap_err()
        .to_string()
        .contains("f32, bf16 or int8"));
}
