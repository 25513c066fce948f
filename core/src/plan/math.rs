//! The model's math modes, as its kernels show them: whether fp32 matmuls ran in TF32
//! (`torch.backends.cuda.matmul.allow_tf32`, `float32_matmul_precision`), and whether fp32
//! convolutions did (`torch.backends.cudnn.allow_tf32`). A replay that ignores them runs
//! another kernel (an fp32 `ffma` SGEMM where the model ran a TF32 tensor-core one, twice
//! as slow): the plan records what the traced kernels say, and the back ends run under it.
//!
//! Invariant: a mode is inferred only from fp32 kernels that show it; without such a kernel
//! the mode is PyTorch's default (matmul TF32 off, cuDNN TF32 on) and the plan says so.

use serde::{Deserialize, Serialize};

/// The math modes a replay runs under.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MathModes {
    /// fp32 GEMMs in TF32 (cuBLAS `CUBLAS_COMPUTE_32F_FAST_TF32`, libtorch's
    /// `allow_tf32` for cuBLAS).
    pub tf32_matmul: bool,
    /// fp32 convolutions in TF32 (libtorch's cuDNN `allow_tf32`).
    pub tf32_cudnn: bool,
    /// How each was decided: "traced kernels" (with an example) or "PyTorch's default".
    pub matmul_from: String,
    pub cudnn_from: String,
}

impl Default for MathModes {
    fn default() -> Self {
        MathModes {
            tf32_matmul: false,
            tf32_cudnn: true,
            matmul_from: "PyTorch's default (no fp32 GEMM traced)".into(),
            cudnn_from: "PyTorch's default (no fp32 convolution traced)".into(),
        }
    }
}

/// What one kernel name says of the math it ran: `Some((is_conv, tf32))` for an fp32 GEMM
/// or convolution kernel whose name tells, `None` otherwise.
pub fn kernel_math(name: &str) -> Option<(bool, bool)> {
    let n = name.to_ascii_lowercase();
    let conv =
        n.contains("conv") || n.contains("fprop") || n.contains("dgrad") || n.contains("wgrad");
    let gemm = n.contains("gemm") || n.contains("sgemm") || n.contains("nvjet");
    if !(conv || gemm) {
        return None;
    }
    // TF32: cuBLAS/cuDNN kernels name it ("tf32"); CUTLASS's TF32 tensor-op SGEMMs are
    // "tensorop_s1688gemm" (fp32 data on TF32's 16x8x8 MMA; "fp16_s16816" and
    // "tensorop_f16_s1688gemm_f16" are half data accumulated in fp32). Templated kernels
    // name their data type as a parameter ("convolve_sgemm<__half, ...>").
    let half = n.contains("fp16")
        || n.contains("bf16")
        || n.contains("f16f16")
        || n.contains("h1688")
        || n.contains("h16816")
        || n.contains("_f16_")
        || n.contains("__half")
        || n.contains("bfloat16");
    let tf32 = n.contains("tf32") || (n.contains("s1688gemm") && !half);
    // Plain fp32: a single-precision SGEMM, or an xmma/cuDNN kernel of f32 data with ffma.
    let fp32 = !half
        && (n.contains("sgemm")
            || n.contains("f32f32_f32f32")
            || (n.contains("_ffma") && n.contains("f32"))
            || (n.contains("gemm_f32") && !n.contains("tf32")));
    if tf32 {
        Some((conv, true))
    } else if fp32 {
        Some((conv, false))
    } else {
        None
    }
}

/// The modes the traced kernels show (names in any order). A mode several kernels
/// disagree on is TF32 when most of them are.
pub fn infer<'a>(kernels: impl IntoIterator<Item = &'a str>) -> MathModes {
    let mut m = MathModes::default();
    let (mut gemm, mut conv) = ((0u32, 0u32, None), (0u32, 0u32, None));
    for k in kernels {
        let Some((is_conv, tf32)) = kernel_math(k) else {
            continue;
        };
        let c = if is_conv { &mut conv } else { &mut gemm };
        if tf32 {
            c.0 += 1;
        } else {
            c.1 += 1;
        }
        c.2.get_or_insert_with(|| k.chars().take(60).collect::<String>());
    }
    let from = |(t, f, ex): (u32, u32, Option<String>)| {
        format!(
            "traced kernels: {t} fp32 kernels in TF32, {f} without (e.g. {})",
            ex.unwrap_or_default()
        )
    };
    if gemm.0 + gemm.1 > 0 {
        m.tf32_matmul = gemm.0 > gemm.1;
        m.matmul_from = from(gemm);
    }
    if conv.0 + conv.1 > 0 {
        m.tf32_cudnn = conv.0 > conv.1;
        m.cudnn_from = from(conv);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kernel names of a real fp32 ConvNeXt-T captured with TF32 on an H100, and of fp32
    /// GEMMs without it (the replay's ffma SGEMM).
    #[test]
    fn tf32_is_read_from_kernel_names() {
        let tf32 = "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
        let ffma = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x128x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas";
        let cutlass = "cutlass_80_tensorop_s1688gemm_128x128_16x4_tn_align4";
        assert_eq!(kernel_math(tf32), Some((false, true)));
        assert_eq!(kernel_math(ffma), Some((false, false)));
        assert_eq!(kernel_math(cutlass), Some((false, true)));
        assert_eq!(
            kernel_math("void at::native::vectorized_elementwise_kernel<4>"),
            None
        );
        assert_eq!(
            kernel_math("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn"),
            None
        );
        // Half data accumulated in fp32, from a Swin-T fp16 capture on an H100: neither
        // says anything of fp32 math (they had read as TF32 matmuls and fp32 convolutions).
        assert_eq!(
            kernel_math("void cutlass::Kernel2<cutlass_75_tensorop_f16_s1688gemm_f16_256x128_32x3_nn_align8>(cutlass_75_tensorop_f16_s1688gemm_f16_256x128_32x3_nn_align8::Params)"),
            None
        );
        assert_eq!(
            kernel_math("void precomputed_convolve_sgemm<__half, 128, 6, 7, 3, 3, 5, 0, false>(int, int, int, __half const*, int, __half*, __half const*, kernel_conv_params, unsigned long long, int, float, float, int, __half const*, __half const*, bool, int, int)"),
            None
        );
        let m = infer([tf32, cutlass, "void at::native::reduce_kernel<512, 1>"]);
        assert!(m.tf32_matmul && m.matmul_from.starts_with("traced kernels: 2"));
        assert!(m.tf32_cudnn && m.cudnn_from.starts_with("PyTorch's default"));
        assert!(!infer([ffma]).tf32_matmul);
    }
}
