//! Which reduced precision a product runs at, and which kernel this CPU computes it with.

#[cfg(target_arch = "x86_64")]
use super::amx;

/// The arithmetic of the dense layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Precision {
    /// The reference: weights as stored (widened to f32), products in f32.
    #[default]
    F32,
    Bf16,
    Int8,
}

impl Precision {
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::Int8 => "int8",
        }
    }

    /// Whether this CPU has the instructions the precision's fast kernel needs (f32: always).
    pub fn accelerated(self) -> bool {
        self == Precision::F32 || Kernel::best(self) != Kernel::Portable
    }

    /// The precision in words for the status line and exports: `int8`, `int8 (AMX)` where AMX
    /// tiles compute it, or `int8 (portable)` where the CPU lacks the instructions (the same
    /// numbers, computed by plain loops).
    pub fn label(self) -> String {
        if self == Precision::F32 {
            return self.as_str().to_string();
        }
        match Kernel::best(self) {
            Kernel::Amx => format!("{} (AMX)", self.as_str()),
            Kernel::Avx512 => self.as_str().to_string(),
            Kernel::Portable => format!("{} (portable)", self.as_str()),
        }
    }
}

/// The code that computes a reduced-precision product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// Plain loops: any CPU.
    Portable,
    /// AVX-512 BF16 (`vdpbf16ps`) or AVX-512 VNNI (`vpdpbusd`) on 6 x 64 tiles.
    Avx512,
    /// AMX tiles (`tdpbf16ps`, `tdpbusd`) on 32 x 64 blocks.
    Amx,
}

impl Kernel {
    /// The fastest kernel this CPU runs for `precision`.
    pub fn best(precision: Precision) -> Kernel {
        *Kernel::available(precision)
            .last()
            .unwrap_or(&Kernel::Portable)
    }

    /// Every kernel this CPU runs for `precision`, slowest first (tests compare them).
    pub fn available(precision: Precision) -> Vec<Kernel> {
        let mut all = vec![Kernel::Portable];
        let avx512 = match precision {
            Precision::F32 => false,
            Precision::Bf16 => has_bf16(),
            Precision::Int8 => has_vnni(),
        };
        if avx512 {
            all.push(Kernel::Avx512);
        }
        #[cfg(target_arch = "x86_64")]
        if precision != Precision::F32 && amx::available() {
            all.push(Kernel::Amx);
        }
        all
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Precision {
    type Err = crate::names::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "f32" | "fp32" => Ok(Precision::F32),
            "bf16" => Ok(Precision::Bf16),
            "int8" => Ok(Precision::Int8),
            other => Err(crate::names::UnknownName::new(
                "precision",
                other,
                "f32, bf16 or int8",
            )),
        }
    }
}

/// The CPU has every feature the AVX-512 bf16 kernels are compiled for (these and the ANN
/// graph's dot product).
pub(crate) fn has_bf16() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

fn has_vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        // Every feature the int8 kernels are compiled for.
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}
