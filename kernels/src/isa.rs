//! The instruction sets a `#[kernel]` is compiled for, and the one it runs with.
//!
//! An OpenCL runtime compiles kernels when the program runs, for the processor it runs on; a
//! Rust program is compiled once, by default for the baseline of its target (on x86-64, SSE2:
//! four `f32` lanes). So the `#[kernel]` macro compiles each work-group function more than
//! once: on x86-64 for the baseline, for x86-64-v3 (AVX2 and FMA: eight lanes) and for
//! x86-64-v4 (AVX-512: sixteen lanes), and a launch runs the best one the processor has, read
//! once from CPUID. Floating-point results do not depend on the version: Rust never fuses a
//! multiply and an add that the source writes apart, and the lanes only change how many
//! work-items one instruction serves, not the order of each work-item's operations.
//!
//! `NUMATASK_KERNEL_ISA=baseline`, `v3` or `v4`, read once, caps the choice (never above
//! what the processor has), to compare the versions or run the one a test targets.

use std::sync::atomic::{AtomicU8, Ordering};

/// A version of a kernel's work-group function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Isa {
    /// The target's baseline (SSE2 on x86-64; every target other than x86-64).
    Baseline = 1,
    /// x86-64-v3: AVX, AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE.
    V3 = 2,
    /// x86-64-v4: v3 and AVX-512 F, BW, CD, DQ, VL.
    V4 = 3,
}

impl Isa {
    /// The name `NUMATASK_KERNEL_ISA` takes.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Baseline => "baseline",
            Isa::V3 => "v3",
            Isa::V4 => "v4",
        }
    }
}

static CHOSEN: AtomicU8 = AtomicU8::new(0);

/// The version `#[kernel]` work-group functions run: the best the processor supports, capped
/// by `NUMATASK_KERNEL_ISA`.
#[inline]
pub fn kernel_isa() -> Isa {
    match CHOSEN.load(Ordering::Relaxed) {
        1 => Isa::Baseline,
        2 => Isa::V3,
        3 => Isa::V4,
        _ => choose(),
    }
}

#[cold]
fn choose() -> Isa {
    let best = detected();
    let isa = match std::env::var("NUMATASK_KERNEL_ISA").as_deref() {
        Ok("baseline") => Isa::Baseline,
        Ok("v3") => best.min(Isa::V3),
        Ok("v4") | Ok("") | Err(_) => best,
        Ok(other) => {
            eprintln!(
                "numatask: NUMATASK_KERNEL_ISA={other:?} is not baseline, v3 or v4; using {}",
                best.name()
            );
            best
        }
    };
    CHOSEN.store(isa as u8, Ordering::Relaxed);
    isa
}

#[cfg(target_arch = "x86_64")]
fn detected() -> Isa {
    use std::arch::is_x86_feature_detected as has;
    let v3 = has!("avx")
        && has!("avx2")
        && has!("fma")
        && has!("bmi1")
        && has!("bmi2")
        && has!("f16c")
        && has!("lzcnt")
        && has!("movbe");
    let v4 = v3
        && has!("avx512f")
        && has!("avx512bw")
        && has!("avx512cd")
        && has!("avx512dq")
        && has!("avx512vl");
    if v4 {
        Isa::V4
    } else if v3 {
        Isa::V3
    } else {
        Isa::Baseline
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detected() -> Isa {
    Isa::Baseline
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chosen_version_is_one_the_processor_has() {
        let chosen = kernel_isa();
        assert!(chosen <= detected(), "{chosen:?} above {:?}", detected());
        // Read once: the same answer afterwards.
        assert_eq!(kernel_isa(), chosen);
        match std::env::var("NUMATASK_KERNEL_ISA").as_deref() {
            Ok("baseline") => assert_eq!(chosen, Isa::Baseline),
            Ok("v3") => assert_eq!(chosen, detected().min(Isa::V3)),
            _ => assert_eq!(chosen, detected()),
        }
    }
}
