//! Intel AMX tiles for the bf16 and int8 products (Sapphire Rapids and later Xeons). A tile
//! register holds 16 rows of 64 bytes; one `tdpbf16ps` multiplies a 16 x 32 bf16 tile by a
//! 32 x 16 one (pairs of k side by side, which is the panels' layout already) into 16 x 16 f32
//! sums, `tdpbusd` the same for u8 x i8 quads into i32. A block of up to 32 rows and one 64-column
//! panel keeps 4 sums tiles (2 rows x 2 columns of tiles) for each half of the panel, 2 tiles of
//! activations and 2 of weights: the 8 tile registers.
//!
//! Linux hands the tile registers out on request (`arch_prctl(ARCH_REQ_XCOMP_PERM)`), once per
//! process; each thread loads the tile configuration before its first product. Stable Rust has no
//! AMX intrinsics, so the instructions are written as inline assembly.

use std::arch::asm;
use std::cell::Cell;
use std::sync::OnceLock;

/// Bytes of one step of a panel (64 columns of a pair of bf16 or a quad of int8).
const PANEL_ROW: usize = super::NR * 4;
/// Steps per tile: a tile row is 64 bytes of activations, 16 steps of 4 bytes.
const STEPS_PER_TILE: usize = super::STEP_MULTIPLE;
/// Rows per block: two tiles of activations.
const ROWS: usize = super::AMX_ROWS;

/// Whether the CPU has AMX with bf16 and int8 and the kernel lets this process use it.
pub fn available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    // The AMX blocks end in AVX-512F epilogues: that is checked too.
    *OK.get_or_init(|| {
        cpu_has_amx() && std::arch::is_x86_feature_detected!("avx512f") && tiles_granted()
    })
}

fn cpu_has_amx() -> bool {
    // CPUID leaf 7: EDX bit 22 AMX-BF16, bit 24 AMX-TILE, bit 25 AMX-INT8 (asked only where
    // the CPU has leaf 7).
    if std::arch::x86_64::__get_cpuid_max(0).0 < 7 {
        return false;
    }
    let leaf7 = std::arch::x86_64::__cpuid_count(7, 0);
    let bits = (1 << 22) | (1 << 24) | (1 << 25);
    leaf7.edx & bits == bits
}

/// Ask Linux for the tile data state (XFEATURE_XTILEDATA = 18); false where it refuses or where
/// the kernel predates AMX.
fn tiles_granted() -> bool {
    #[cfg(target_os = "linux")]
    {
        const SYS_ARCH_PRCTL: i64 = 158;
        const ARCH_REQ_XCOMP_PERM: i64 = 0x1023;
        const XFEATURE_XTILEDATA: i64 = 18;
        let ret: i64;
        // SAFETY: arch_prctl with ARCH_REQ_XCOMP_PERM only changes which state components this
        // process may use; it reads and writes no memory of ours.
        unsafe {
            asm!(
                "syscall",
                inlateout("rax") SYS_ARCH_PRCTL => ret,
                in("rdi") ARCH_REQ_XCOMP_PERM,
                in("rsi") XFEATURE_XTILEDATA,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        ret == 0
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// Every tile 16 rows of 64 bytes (palette 1).
#[repr(C, align(64))]
struct TileConfig([u8; 64]);

const CONFIG: TileConfig = {
    let mut c = [0u8; 64];
    c[0] = 1;
    let mut t = 0;
    while t < 8 {
        c[16 + 2 * t] = 64;
        c[48 + t] = 16;
        t += 1;
    }
    TileConfig(c)
};

thread_local! {
    static CONFIGURED: Cell<bool> = const { Cell::new(false) };
}

/// Load the tile configuration on this thread, once.
fn configure() {
    CONFIGURED.with(|done| {
        if !done.get() {
            // SAFETY: `available()` was true before any block ran; CONFIG is a valid palette-1
            // configuration, 64 bytes aligned.
            unsafe {
                asm!("ldtilecfg [{}]", in(reg) &CONFIG as *const TileConfig, options(nostack))
            };
            done.set(true);
        }
    });
}

/// Two tile products into two sums tiles: u8 x i8 quads (`tdpbusd`) or bf16 pairs
/// (`tdpbf16ps`); each operand list is "sums, activations, weights".
macro_rules! dot {
    ($int8:expr, $first:literal, $second:literal) => {
        if $int8 {
            asm!(
                concat!("tdpbusd ", $first),
                concat!("tdpbusd ", $second),
                options(nostack)
            )
        } else {
            asm!(
                concat!("tdpbf16ps ", $first),
                concat!("tdpbf16ps ", $second),
                options(nostack)
            )
        }
    };
}

/// Raw sums of a block: 32 rows by one 64-column panel, as f32 bits (bf16) or i32 (int8), rows
/// of 64 values (rows past `r` hold what the padding gave).
pub type Sums = [u32; ROWS * super::NR];

/// Sums of `r` rows (r <= 32) of activations times one panel. `x` is the block's first
/// activation row; rows are `steps * 4` bytes apart and 32 rows are readable (the caller pads);
/// `w` is the panel; `steps` is a multiple of 16. With `INT8` the products are u8 x i8 quads,
/// otherwise bf16 pairs. Only the columns below `cols` are wanted: a panel's second half (columns
/// 32 to 63) is not computed when `cols` <= 32, and reads as zero.
///
/// # Safety
/// `available()` must be true; `x` must point to 32 rows of `steps * 4` bytes and `w` to a
/// panel of `steps` rows of 256 bytes.
pub unsafe fn block<const INT8: bool>(
    r: usize,
    x: *const u8,
    w: *const u8,
    steps: usize,
    cols: usize,
) -> Sums {
    configure();
    let xs = steps * 4;
    let two = r > 16;
    let halves = if cols > super::NR / 2 { 2 } else { 1 };
    // Both halves store all of their four tiles; a half not computed stays zero.
    let mut sums = if halves == 2 {
        std::mem::MaybeUninit::<Sums>::uninit()
    } else {
        std::mem::MaybeUninit::<Sums>::zeroed()
    };
    let out = sums.as_mut_ptr() as *mut u8;
    let out_row = super::NR * 4;
    for half in 0..halves {
        asm!(
            "tilezero tmm0",
            "tilezero tmm1",
            "tilezero tmm2",
            "tilezero tmm3",
            options(nostack)
        );
        for kc in 0..steps / STEPS_PER_TILE {
            let a = x.add(kc * 64);
            let b = w.add(kc * STEPS_PER_TILE * PANEL_ROW + half * 128);
            asm!(
                "tileloadd tmm4, [{a} + {xs}*1]",
                "tileloadd tmm6, [{b} + {ws}*1]",
                "tileloadd tmm7, [{b2} + {ws}*1]",
                a = in(reg) a,
                b = in(reg) b,
                b2 = in(reg) b.add(64),
                xs = in(reg) xs,
                ws = in(reg) PANEL_ROW,
                options(nostack, readonly),
            );
            dot!(INT8, "tmm0, tmm4, tmm6", "tmm1, tmm4, tmm7");
            if two {
                asm!(
                    "tileloadd tmm5, [{a} + {xs}*1]",
                    a = in(reg) a.add(16 * xs),
                    xs = in(reg) xs,
                    options(nostack, readonly),
                );
                dot!(INT8, "tmm2, tmm5, tmm6", "tmm3, tmm5, tmm7");
            }
        }
        let c = out.add(half * 128);
        asm!(
            "tilestored [{c} + {s}*1], tmm0",
            "tilestored [{c1} + {s}*1], tmm1",
            "tilestored [{c2} + {s}*1], tmm2",
            "tilestored [{c3} + {s}*1], tmm3",
            c = in(reg) c,
            c1 = in(reg) c.add(64),
            c2 = in(reg) c.add(16 * out_row),
            c3 = in(reg) c.add(16 * out_row + 64),
            s = in(reg) out_row,
            options(nostack),
        );
    }
    // Every value of the block is written: by the tiles, or zero for a half not computed.
    sums.assume_init()
}
