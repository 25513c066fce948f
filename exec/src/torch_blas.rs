//! PyTorch's cuBLAS and cuBLASLt settings, computed as libtorch computes them, so that the
//! GEMM back end asks cuBLAS(Lt) the question the model asked and gets the algorithm the
//! model ran. cuBLASLt's heuristic answers by the maximum workspace and the operands'
//! pointer alignment it is told: asked with more workspace than PyTorch allows, it can hand
//! back the traced kernel under another configuration (a split or stream-K schedule whose
//! workspace must be zeroed first: a memset per call that the model's graph does not hold).
//!
//! - cuBLAS's workspace (`CUBLAS_WORKSPACE_CONFIG`, ":SIZE:COUNT" pairs in KiB): 32 MiB on
//!   compute capability 9.x-12.x, ":4096:2:16:8" below (ATen's `parseChosenWorkspaceSize`).
//! - cuBLASLt's (`CUBLASLT_WORKSPACE_SIZE`, KiB): 1 MiB, never more than cuBLAS's
//!   (ATen's `getCUDABlasLtWorkspaceSize`, pytorch/pytorch#73328).
//! - Alignment: the largest power of two up to 256 dividing the address (ATen's
//!   `_getAlignment`); `gemm_and_bias` gives A, B and C their own and D the bias's.
//!
//! The environment read is kc's own: a model run with either variable set is replayed
//! with the same setting (capture.py records both in reference.json's math modes).
//!
//! Invariant: pure functions of their inputs and the two variables; no CUDA.

use kc_core::plan::types::{Plan, UnitCall};
use std::collections::HashMap;

/// cuBLAS's workspace in bytes for compute capability `sm` (major * 10 + minor) and the
/// value of `CUBLAS_WORKSPACE_CONFIG`, as ATen computes it.
pub fn cublas_workspace_bytes(sm: u32, config: Option<&str>) -> usize {
    let default = if (90..130).contains(&sm) {
        4096 * 8 * 1024
    } else {
        4096 * 1024 * 2 + 16 * 1024 * 8
    };
    let Some(config) = config else {
        return default;
    };
    // ":SIZE:COUNT" pairs, sizes in KiB; a value with no pair is ATen's default too.
    let numbers: Vec<Option<usize>> = config.split(':').skip(1).map(|s| s.parse().ok()).collect();
    let mut total = 0usize;
    let mut pairs = 0;
    for pair in numbers.chunks(2) {
        if let [Some(size), Some(count)] = pair {
            total = total.saturating_add(size.saturating_mul(1024).saturating_mul(*count));
            pairs += 1;
        }
    }
    if pairs == 0 {
        default
    } else {
        total
    }
}

/// cuBLASLt's workspace in bytes (the heuristic's maximum and the call's size) for the
/// value of `CUBLASLT_WORKSPACE_SIZE` (KiB), capped at cuBLAS's as ATen caps it.
pub fn cublaslt_workspace_bytes(cublas_bytes: usize, size_kib: Option<&str>) -> usize {
    let kib = size_kib
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(1024);
    kib.saturating_mul(1024).min(cublas_bytes)
}

/// Both workspaces under this process's environment.
pub fn workspaces_from_env(sm: u32) -> (usize, usize) {
    let blas = cublas_workspace_bytes(sm, std::env::var("CUBLAS_WORKSPACE_CONFIG").ok().as_deref());
    let lt = cublaslt_workspace_bytes(
        blas,
        std::env::var("CUBLASLT_WORKSPACE_SIZE").ok().as_deref(),
    );
    (blas, lt)
}

/// The alignment ATen tells cuBLASLt for a pointer: the largest power of two up to 256
/// that divides it.
pub fn alignment(address: u64) -> u32 {
    if address == 0 {
        return 256;
    }
    (1u32 << address.trailing_zeros().min(8)).min(256)
}

/// Per GEMM unit with an epilogue (a cuBLASLt call), the alignments of A, B, C and the
/// bias (ATen's D) over every place its steps take in the memory image: the least of them,
/// so the algorithm chosen once is valid at every place and is the one the model's
/// least-aligned call was given. The image starts on a 512-byte boundary and its storages
/// keep the model's offsets, so these are the model's alignments. Units without a place
/// in the image (own buffers only, 256-byte aligned) get 256.
pub fn lt_operand_alignments(plan: &Plan) -> HashMap<u32, [u32; 4]> {
    let mut out: HashMap<u32, [u32; 4]> = HashMap::new();
    for u in &plan.units {
        if let UnitCall::Gemm(g) = &u.call {
            if g.epilogue != kc_core::plan::types::Epilogue::None {
                out.insert(u.id, [256; 4]);
            }
        }
    }
    let Some(df) = &plan.dataflow else {
        return out;
    };
    for (step, places) in plan.steps.iter().zip(&df.steps) {
        let Some(al) = out.get_mut(&step.unit) else {
            continue;
        };
        let unit = &plan.units[step.unit as usize];
        let UnitCall::Gemm(g) = &unit.call else {
            continue;
        };
        let place = |slot: u32| {
            unit.slots
                .iter()
                .position(|&x| x == slot)
                .and_then(|k| places.operands.get(k).copied().flatten())
        };
        for (i, slot) in [Some(g.a), Some(g.b), Some(g.c), g.bias]
            .into_iter()
            .enumerate()
        {
            if let Some(off) = slot.and_then(place) {
                al[i] = al[i].min(alignment(off));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspaces_follow_aten() {
        // Hopper's 32 MiB, Ampere's ":4096:2:16:8".
        assert_eq!(cublas_workspace_bytes(90, None), 32 << 20);
        assert_eq!(
            cublas_workspace_bytes(80, None),
            4096 * 1024 * 2 + 16 * 1024 * 8
        );
        assert_eq!(cublas_workspace_bytes(90, Some(":4096:8")), 32 << 20);
        assert_eq!(cublas_workspace_bytes(90, Some(":16:8")), 128 << 10);
        assert_eq!(
            cublas_workspace_bytes(90, Some(":4096:2:16:8")),
            8 * 1024 * 1024 + 128 * 1024
        );
        // Unparsable: ATen warns and keeps its default.
        assert_eq!(cublas_workspace_bytes(90, Some("big")), 32 << 20);
        // cuBLASLt: 1 MiB unless set, never more than cuBLAS's.
        assert_eq!(cublaslt_workspace_bytes(32 << 20, None), 1 << 20);
        assert_eq!(cublaslt_workspace_bytes(32 << 20, Some("32768")), 32 << 20);
        assert_eq!(cublaslt_workspace_bytes(128 << 10, Some("1024")), 128 << 10);
        assert_eq!(cublaslt_workspace_bytes(32 << 20, Some("x")), 1 << 20);
    }

    proptest::proptest! {
        /// Whatever the two variables hold, the sizes are computed without a panic, and
        /// cuBLASLt's is never more than cuBLAS's.
        #[test]
        fn any_setting_gives_sizes(config in ".{0,40}", lt in ".{0,12}", sm in 0u32..200) {
            let blas = cublas_workspace_bytes(sm, Some(&config));
            proptest::prop_assert!(cublaslt_workspace_bytes(blas, Some(&lt)) <= blas);
        }

        /// Pairs of any size saturate instead of overflowing.
        #[test]
        fn large_pairs_saturate(config in "(:[0-9]{1,19}){2,6}") {
            let blas = cublas_workspace_bytes(90, Some(&config));
            proptest::prop_assert!(cublaslt_workspace_bytes(blas, None) <= blas);
        }
    }

    #[test]
    fn alignment_is_the_largest_power_of_two_up_to_256() {
        assert_eq!(alignment(0), 256);
        assert_eq!(alignment(512), 256);
        assert_eq!(alignment(256 + 128), 128);
        assert_eq!(alignment(2), 2);
        assert_eq!(alignment(7), 1);
        assert_eq!(alignment(1 << 40), 256);
    }
}
