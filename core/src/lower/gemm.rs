//! GEMM recovery: from a recorded aten op (mm, addmm, bmm, baddbmm, linear, matmul) and the
//! kernels it launched, the exact cuBLAS/cuBLASLt call PyTorch issued.
//!
//! PyTorch computes a row-major `C[M,N] = A[M,K] @ B[K,N]` with column-major cuBLAS as
//! `C^T = B^T A^T`: cuBLAS sees m = N, n = M, k = K, its "A" operand is the op's second
//! matrix and its "B" operand the first (`addmm_out_cuda_impl`, `prepare_matrix_for_cublas`
//! in aten/src/ATen/native/cuda/Blas.cpp). An operand stored row-major (stride[1] == 1) is
//! passed as 'n' with ld = stride[0]; one stored column-major (stride[0] == 1) as 't' with
//! ld = stride[1]; anything else is first copied to a contiguous row-major buffer.
//!
//! Invariant: a [`GemmCall`] is returned only when every parameter is determined by the
//! recorded shapes, strides, dtypes and scalars; otherwise the error says what is missing.

use kc_ir::{DType, GemmCall, GemmEpilogue, OpArg, TensorSpec, Transpose};

/// `Tensor::is_contiguous` for a 2-D view: dims of size 1 do not constrain their stride.
fn is_contiguous(dims: &[i64], strides: &[i64]) -> bool {
    let mut expected = 1;
    for i in (0..dims.len()).rev() {
        if dims[i] != 1 {
            if strides[i] != expected {
                return false;
            }
            expected *= dims[i];
        }
    }
    true
}

/// `Tensor::is_non_overlapping_and_dense` for a 2-D view: row- or column-major packed.
fn is_dense_2d(d: &[i64], s: &[i64]) -> bool {
    is_contiguous(d, s) || is_contiguous(&[d[1], d[0]], &[s[1], s[0]])
}

/// `prepare_matrix_for_cublas` (Blas.cpp) for an operand of a 2-D GEMM whose result is
/// row-major (`transpose_result` true, always so for the fresh contiguous outputs of
/// mm/addmm): returns cuBLAS's transpose flag for it and its leading dimension.
fn operand_2d(t: &TensorSpec) -> (Transpose, i64) {
    let s = t.effective_strides();
    let (d, st) = (&t.dims[..], &s[..]);
    // `transpose_tensor` as prepare_matrix_for_cublas sets it, before the flip that
    // transpose_result applies.
    let dense = is_dense_2d(d, st);
    let col_major = st[0] == 1 && st[1] >= d[0].max(1);
    let row_major = st[1] == 1 && st[0] >= d[1].max(1);
    // Row-major by strides, or copied to a contiguous buffer first, both make it true.
    let transpose_tensor = if dense {
        is_contiguous(d, st)
    } else {
        !col_major
    };
    let copied = !(dense || col_major || row_major);
    let transpose = !transpose_tensor;
    // ld = stride(transpose == transpose_result ? 1 : 0), with transpose_result true.
    let ld = if copied {
        d[1]
    } else if transpose {
        st[1]
    } else {
        st[0]
    };
    (
        if transpose {
            Transpose::T
        } else {
            Transpose::N
        },
        ld,
    )
}

/// `prepare_batch_matrix_for_cublas` (Blas.cpp): an operand of a batched GEMM seen as a
/// `rows x cols` cuBLAS matrix.
fn operand_batched(
    t: &TensorSpec,
    transpose_result: bool,
    rows: i64,
    cols: i64,
) -> (Transpose, i64) {
    let s = t.effective_strides();
    let (fast, lead) = if transpose_result { (2, 1) } else { (1, 2) };
    if s[fast] == 1 && s[lead] >= rows.max(1) {
        (Transpose::N, s[lead])
    } else if s[lead] == 1 && s[fast] >= cols.max(1) {
        (Transpose::T, s[fast])
    } else {
        // Copied contiguous; ld is the copy's stride[1].
        (
            if transpose_result {
                Transpose::N
            } else {
                Transpose::T
            },
            t.dims[2],
        )
    }
}

/// `_cublasAdjustLdLevel3` (CUDABlas.cpp): cuBLAS checks leading dimensions even where a
/// dimension of 1 makes them irrelevant, so PyTorch replaces them with valid ones.
fn adjust_ld(c: &mut GemmCall) {
    if c.n <= 1 {
        c.ldc = c.m.max(1);
    }
    if c.transa == Transpose::T {
        if c.m <= 1 {
            c.lda = c.k.max(1);
        }
    } else if c.k <= 1 {
        c.lda = c.m.max(1);
    }
    if c.transb == Transpose::T {
        if c.k <= 1 {
            c.ldb = c.n.max(1);
        }
    } else if c.n <= 1 {
        c.ldb = c.k.max(1);
    }
}

fn scalar(args: &[OpArg], i: usize, default: f64) -> Result<f64, String> {
    match args.get(i) {
        None | Some(OpArg::None) => Ok(default),
        Some(a) => match a.scalar_value() {
            None => Ok(default),
            Some("True" | "true") => Ok(1.0),
            Some("False" | "false") => Ok(0.0),
            Some(v) => v
                .parse::<f64>()
                .map_err(|_| format!("scalar argument {i} is not a number: {v:?}")),
        },
    }
}

fn tensor<'a>(args: &'a [OpArg], i: usize, what: &str) -> Result<&'a TensorSpec, String> {
    match args.get(i) {
        Some(OpArg::Tensor(t)) => Ok(t),
        _ => Err(format!("argument {i} ({what}) is not a recorded tensor")),
    }
}

fn compute_type(d: DType) -> Result<DType, String> {
    match d {
        DType::F16 | DType::BF16 | DType::F32 => Ok(DType::F32),
        DType::F64 => Ok(DType::F64),
        other => Err(format!("no cuBLAS GEMM for dtype {}", other.short())),
    }
}

/// Whether PyTorch's CUDA `addmm` (libtorch 2.x, `addmm_out_cuda_impl`) adds a vector bias
/// in cuBLASLt's epilogue for this call rather than copying it into the result and calling
/// the GEMM with beta 1: beta 1, a floating-point type cuBLASLt takes, and both matrices
/// larger than one row and one column (the bias being a vector of the output's columns
/// is checked by the caller). Contiguity is not recorded; the copy path would have traced
/// a copy kernel inside the op, and such an instance is not all GEMM kernels, so it never
/// reaches GEMM recovery.
fn pytorch_uses_lt_bias(c: &GemmCall) -> bool {
    let lt_type = matches!(c.c_type, DType::F32 | DType::F64 | DType::F16 | DType::BF16);
    c.beta == 1.0 && c.batch == 1 && lt_type && c.m > 1 && c.n > 1 && c.k > 1
}

fn epilogue_of(kernels: &[&str], has_bias: bool) -> GemmEpilogue {
    let lower: Vec<String> = kernels.iter().map(|k| k.to_ascii_lowercase()).collect();
    let any = |w: &str| lower.iter().any(|k| k.contains(w));
    if !has_bias || !any("bias") {
        GemmEpilogue::None
    } else if any("gelu") {
        GemmEpilogue::BiasGelu
    } else if any("relu") {
        GemmEpilogue::BiasRelu
    } else {
        GemmEpilogue::Bias
    }
}

/// A 2-D GEMM `out[M,N] = mat1[M,K] @ mat2[K,N]` (row-major output), as cuBLAS sees it.
fn gemm_2d(mat1: &TensorSpec, mat2: &TensorSpec) -> Result<GemmCall, String> {
    if mat1.dims.len() != 2 || mat2.dims.len() != 2 {
        return Err(format!(
            "expected 2-D matrices, got {}-D and {}-D",
            mat1.dims.len(),
            mat2.dims.len()
        ));
    }
    let (m, k) = (mat1.dims[0], mat1.dims[1]);
    let (k2, n) = (mat2.dims[0], mat2.dims[1]);
    if k != k2 {
        return Err(format!("inner dimensions differ: {k} vs {k2}"));
    }
    if m <= 0 || n <= 0 || k <= 0 {
        return Err("empty GEMM".into());
    }
    if mat1.dtype != mat2.dtype {
        return Err(format!(
            "mixed dtypes {} and {}",
            mat1.dtype.short(),
            mat2.dtype.short()
        ));
    }
    // The fresh contiguous result makes transpose_result true: cuBLAS computes
    // C^T = mat2^T mat1^T, so its A operand is mat2 and its B operand mat1.
    let (transa, lda) = operand_2d(mat2);
    let (transb, ldb) = operand_2d(mat1);
    let mut c = GemmCall {
        transa,
        transb,
        m: n,
        n: m,
        k,
        lda,
        ldb,
        ldc: n,
        batch: 1,
        stride_a: 0,
        stride_b: 0,
        stride_c: 0,
        a_type: mat2.dtype,
        b_type: mat1.dtype,
        c_type: mat1.dtype,
        compute_type: compute_type(mat1.dtype)?,
        alpha: 1.0,
        beta: 0.0,
        epilogue: GemmEpilogue::None,
    };
    adjust_ld(&mut c);
    Ok(c)
}

/// A batched GEMM `out[B,M,N] = b1[B,M,K] @ b2[B,K,N]`.
fn gemm_batched(b1: &TensorSpec, b2: &TensorSpec) -> Result<GemmCall, String> {
    if b1.dims.len() != 3 || b2.dims.len() != 3 {
        return Err(format!(
            "expected 3-D batches, got {}-D and {}-D",
            b1.dims.len(),
            b2.dims.len()
        ));
    }
    let (b, m, k) = (b1.dims[0], b1.dims[1], b1.dims[2]);
    let (bb, k2, n) = (b2.dims[0], b2.dims[1], b2.dims[2]);
    if b != bb || k != k2 {
        return Err(format!(
            "batch or inner dimensions differ: [{b},{m},{k}] @ [{bb},{k2},{n}]"
        ));
    }
    if b <= 0 || m <= 0 || n <= 0 || k <= 0 {
        return Err("empty GEMM".into());
    }
    if b1.dtype != b2.dtype {
        return Err(format!(
            "mixed dtypes {} and {}",
            b1.dtype.short(),
            b2.dtype.short()
        ));
    }
    // The result [b, m, n] is contiguous; bmm_out_cuda tests column-major first, which a
    // contiguous result passes only when n == 1. Otherwise transpose_result is true and
    // the operands swap as in the 2-D case.
    let transpose_result = n != 1;
    let (first, second, cm, cn) = if transpose_result {
        (b2, b1, n, m)
    } else {
        (b1, b2, m, n)
    };
    let (transa, lda) = operand_batched(first, transpose_result, cm, k);
    let (transb, ldb) = operand_batched(second, transpose_result, k, cn);
    let batch_stride = |t: &TensorSpec| -> i64 { t.effective_strides()[0] };
    let mut c = GemmCall {
        transa,
        transb,
        m: cm,
        n: cn,
        k,
        lda,
        ldb,
        ldc: if transpose_result { n } else { 1 },
        batch: b,
        stride_a: batch_stride(first),
        stride_b: batch_stride(second),
        stride_c: m * n,
        a_type: first.dtype,
        b_type: second.dtype,
        c_type: b1.dtype,
        compute_type: compute_type(b1.dtype)?,
        alpha: 1.0,
        beta: 0.0,
        epilogue: GemmEpilogue::None,
    };
    adjust_ld(&mut c);
    Ok(c)
}

/// Ops whose GEMMs tier 2 replays.
pub fn is_gemm_op(op: &str) -> bool {
    matches!(
        op,
        "aten::mm"
            | "aten::addmm"
            | "aten::addmm_"
            | "aten::bmm"
            | "aten::baddbmm"
            | "aten::baddbmm_"
            | "aten::linear"
            | "aten::matmul"
            | "aten::_addmm_activation"
    )
}

/// Which recorded arguments of `op` are cuBLAS's A and B operands and the epilogue's bias,
/// following [`recover`]: a row-major result makes cuBLAS compute `C^T = B^T A^T`, so A is
/// the op's second matrix and B its first, except for a batched GEMM with a column result.
pub fn operand_args(op: &str, args: &[OpArg]) -> Option<(usize, usize, Option<usize>)> {
    let last_dim =
        |i: usize| -> Option<i64> { args.get(i)?.tensor().and_then(|t| t.dims.last().copied()) };
    let batched = |first: usize| -> Option<(usize, usize, Option<usize>)> {
        Some(if last_dim(first + 1)? != 1 {
            (first + 1, first, None)
        } else {
            (first, first + 1, None)
        })
    };
    match op {
        "aten::mm" => Some((1, 0, None)),
        "aten::addmm" | "aten::addmm_" | "aten::_addmm_activation" => Some((2, 1, Some(0))),
        "aten::linear" => Some((1, 0, Some(2))),
        "aten::bmm" => batched(0),
        "aten::baddbmm" | "aten::baddbmm_" => batched(1),
        "aten::matmul" => {
            let rank = |i: usize| args.get(i).and_then(OpArg::tensor).map(|t| t.dims.len());
            match (rank(0)?, rank(1)?) {
                (3, 3) => batched(0),
                (_, 2) => Some((1, 0, None)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Recovers the cuBLAS call of `op` with `args`, given the names of the kernels it launched.
pub fn recover(op: &str, args: &[OpArg], kernels: &[&str]) -> Result<GemmCall, String> {
    let call = match op {
        "aten::mm" => gemm_2d(tensor(args, 0, "self")?, tensor(args, 1, "mat2")?)?,
        "aten::bmm" => gemm_batched(tensor(args, 0, "self")?, tensor(args, 1, "mat2")?)?,
        "aten::addmm" | "aten::addmm_" | "aten::_addmm_activation" => {
            let bias = tensor(args, 0, "self")?;
            let mut c = gemm_2d(tensor(args, 1, "mat1")?, tensor(args, 2, "mat2")?)?;
            c.beta = scalar(args, 3, 1.0)?;
            c.alpha = scalar(args, 4, 1.0)?;
            let is_vector_bias = bias.dims.len() == 1 && bias.dims[0] == c.m;
            c.epilogue = match epilogue_of(kernels, is_vector_bias) {
                // Kernel names need not say "bias" (Hopper's fp32 and TF32 kernels do not):
                // where PyTorch takes cuBLASLt's bias epilogue by its own rule, so does the
                // replay. Otherwise the GEMM would read C with beta 1, which PyTorch never
                // filled with the bias, and add whatever C held: values that grow replay
                // after replay, and a C read the model never made.
                GemmEpilogue::None if is_vector_bias && pytorch_uses_lt_bias(&c) => {
                    let gelu = op == "aten::_addmm_activation"
                        && scalar(args, 5, 0.0).is_ok_and(|use_gelu| use_gelu != 0.0);
                    match (op, gelu) {
                        ("aten::_addmm_activation", true) => GemmEpilogue::BiasGelu,
                        ("aten::_addmm_activation", false) => GemmEpilogue::BiasRelu,
                        _ => GemmEpilogue::Bias,
                    }
                }
                e => e,
            };
            if c.epilogue != GemmEpilogue::None {
                // cuBLASLt adds the bias in the epilogue; C is not read.
                c.beta = 0.0;
            }
            c
        }
        "aten::baddbmm" | "aten::baddbmm_" => {
            let mut c = gemm_batched(tensor(args, 1, "batch1")?, tensor(args, 2, "batch2")?)?;
            c.beta = scalar(args, 3, 1.0)?;
            c.alpha = scalar(args, 4, 1.0)?;
            c
        }
        "aten::linear" => {
            let input = tensor(args, 0, "input")?;
            let weight = tensor(args, 1, "weight")?;
            if weight.dims.len() != 2 || input.dims.is_empty() {
                return Err("linear needs a 2-D weight and a non-scalar input".into());
            }
            let k = *input.dims.last().unwrap_or(&0);
            let rows: i64 = input.dims[..input.dims.len() - 1].iter().product();
            let mat1 = TensorSpec {
                dims: vec![rows, k],
                strides: vec![k, 1],
                dtype: input.dtype,
            };
            // weight.t(): [K, N] with strides swapped.
            let ws = weight.effective_strides();
            let mat2 = TensorSpec {
                dims: vec![weight.dims[1], weight.dims[0]],
                strides: vec![ws[1], ws[0]],
                dtype: weight.dtype,
            };
            if input.strides.len() == input.dims.len()
                && input.strides != TensorSpec::contiguous_strides(&input.dims)
            {
                return Err("linear on a non-contiguous input (reshape copies)".into());
            }
            let mut c = gemm_2d(&mat1, &mat2)?;
            let has_bias = matches!(args.get(2), Some(OpArg::Tensor(_)));
            c.epilogue = epilogue_of(kernels, has_bias);
            if has_bias && c.epilogue == GemmEpilogue::None {
                return Err("linear with a bias applied outside the GEMM".into());
            }
            c
        }
        "aten::matmul" => {
            let a = tensor(args, 0, "self")?;
            let b = tensor(args, 1, "other")?;
            match (a.dims.len(), b.dims.len()) {
                (2, 2) => gemm_2d(a, b)?,
                (3, 3) => gemm_batched(a, b)?,
                (d, 2)
                    if d > 2
                        && a.strides.len() == d
                        && a.strides == TensorSpec::contiguous_strides(&a.dims) =>
                {
                    let k = a.dims[d - 1];
                    let rows: i64 = a.dims[..d - 1].iter().product();
                    let folded = TensorSpec {
                        dims: vec![rows, k],
                        strides: vec![k, 1],
                        dtype: a.dtype,
                    };
                    gemm_2d(&folded, b)?
                }
                (x, y) => return Err(format!("matmul of {x}-D and {y}-D tensors is not one GEMM")),
            }
        }
        other => return Err(format!("{other} is not a GEMM op")),
    };
    if call.a_type == DType::Unknown {
        return Err("operand dtype not recorded".into());
    }
    Ok(call)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(dims: &[i64], strides: &[i64], dtype: DType) -> OpArg {
        OpArg::Tensor(TensorSpec {
            dims: dims.to_vec(),
            strides: strides.to_vec(),
            dtype,
        })
    }

    fn s(v: &str) -> OpArg {
        OpArg::Scalar {
            ty: "Scalar".into(),
            value: v.into(),
        }
    }

    /// mm of two row-major matrices: cuBLAS computes C^T = B^T A^T with no transposes.
    #[test]
    fn mm_row_major() {
        let c = recover(
            "aten::mm",
            &[
                t(&[64, 32], &[32, 1], DType::F16),
                t(&[32, 128], &[128, 1], DType::F16),
            ],
            &[],
        )
        .unwrap();
        assert_eq!((c.transa, c.transb), (Transpose::N, Transpose::N));
        assert_eq!((c.m, c.n, c.k), (128, 64, 32));
        assert_eq!((c.lda, c.ldb, c.ldc), (128, 32, 128));
        assert_eq!((c.alpha, c.beta), (1.0, 0.0));
        assert_eq!(c.compute_type, DType::F32);
    }

    /// addmm(bias, x, W^T) as nn.Linear issues it: W^T is a column-major view, so cuBLAS
    /// gets 'T' for its A operand (the bloom trace's nvjet `..._bias_TNT` kernels).
    #[test]
    fn addmm_transposed_weight_with_bias_epilogue() {
        let c = recover(
            "aten::addmm",
            &[
                t(&[3072], &[1], DType::F16),
                t(&[5, 1024], &[1024, 1], DType::F16),
                t(&[1024, 3072], &[1, 1024], DType::F16),
                s("1"),
                s("1"),
            ],
            &["nvjet_sm90_hsh_64x8_64x16_4x1_v_bz_bias_TNT"],
        )
        .unwrap();
        assert_eq!((c.transa, c.transb), (Transpose::T, Transpose::N));
        assert_eq!((c.m, c.n, c.k), (3072, 5, 1024));
        assert_eq!((c.lda, c.ldb, c.ldc), (1024, 1024, 3072));
        assert_eq!(c.epilogue, GemmEpilogue::Bias);
        assert_eq!(c.beta, 0.0);
    }

    /// A vector bias with beta 1 is added in cuBLASLt's epilogue, as PyTorch does, also where
    /// the kernel's name does not say so (Hopper's TF32 kernels): C is not read.
    #[test]
    fn a_vector_bias_is_added_in_the_epilogue_as_pytorch_adds_it() {
        let hopper = "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
        let args = |bias: &[i64], beta: &str| {
            vec![
                t(bias, &[1], DType::F32),
                t(&[3152, 768], &[768, 1], DType::F32),
                t(&[768, 2304], &[1, 768], DType::F32),
                s(beta),
                s("1"),
            ]
        };
        let c = recover("aten::addmm", &args(&[2304], "1"), &[hopper]).unwrap();
        assert_eq!(c.epilogue, GemmEpilogue::Bias);
        assert_eq!(c.beta, 0.0);
        // PyTorch copies the bias into C for other betas: C is read with that beta.
        let c = recover("aten::addmm", &args(&[2304], "0.5"), &[hopper]).unwrap();
        assert_eq!((c.epilogue, c.beta), (GemmEpilogue::None, 0.5));
        // `_addmm_activation` names its activation in its sixth argument.
        let mut a = args(&[2304], "1");
        a.push(s("True"));
        let c = recover("aten::_addmm_activation", &a, &[hopper]).unwrap();
        assert_eq!(c.epilogue, GemmEpilogue::BiasGelu);
    }

    /// Without a bias epilogue kernel, addmm keeps beta: C is pre-filled with the bias.
    #[test]
    fn addmm_scalars_are_kept() {
        let c = recover(
            "aten::addmm",
            &[
                t(&[8, 16], &[16, 1], DType::F32),
                t(&[8, 4], &[1, 8], DType::F32),
                t(&[4, 16], &[16, 1], DType::F32),
                s("0.5"),
                s("2"),
            ],
            &["ampere_sgemm_32x32_sliced1x4_nn"],
        )
        .unwrap();
        assert_eq!((c.transa, c.transb), (Transpose::N, Transpose::T));
        assert_eq!((c.lda, c.ldb), (16, 8));
        assert_eq!((c.alpha, c.beta), (2.0, 0.5));
        assert_eq!(c.epilogue, GemmEpilogue::None);
    }

    /// bmm of q @ k^T, as attention issues it: k^T is a transposed view.
    #[test]
    fn bmm_strided_batches() {
        let c = recover(
            "aten::bmm",
            &[
                t(&[16, 5, 64], &[320, 64, 1], DType::F16),
                t(&[16, 64, 5], &[320, 1, 64], DType::F16),
            ],
            &[],
        )
        .unwrap();
        assert_eq!((c.m, c.n, c.k, c.batch), (5, 5, 64, 16));
        assert_eq!((c.transa, c.transb), (Transpose::T, Transpose::N));
        assert_eq!((c.lda, c.ldb, c.ldc), (64, 64, 5));
        assert_eq!((c.stride_a, c.stride_b, c.stride_c), (320, 320, 25));
    }

    /// bmm with a [b, m, 1] result: the contiguous result passes bmm's column-major test,
    /// so cuBLAS is not given the swapped operands (llama decode's attention-score bmm).
    #[test]
    fn bmm_with_a_column_result_is_not_swapped() {
        let c = recover(
            "aten::bmm",
            &[
                t(&[64, 1, 1], &[1, 1, 1], DType::F32),
                t(&[64, 1, 64], &[64, 64, 1], DType::F32),
            ],
            &[],
        )
        .unwrap();
        // result [64, 1, 64]: n = 64 != 1, so transpose_result holds here.
        assert_eq!((c.m, c.n, c.k), (64, 1, 1));
        let d = recover(
            "aten::bmm",
            &[
                t(&[8, 64, 128], &[8192, 128, 1], DType::F16),
                t(&[8, 128, 1], &[128, 1, 1], DType::F16),
            ],
            &[],
        )
        .unwrap();
        assert_eq!((d.m, d.n, d.k), (64, 1, 128));
        assert_eq!((d.transa, d.lda), (Transpose::T, 128));
        assert_eq!(d.ldc, 64);
    }

    /// A size-1 dimension leaves a row vector "contiguous" whatever its stride, and
    /// _cublasAdjustLdLevel3 fixes the leading dimensions cuBLAS would reject.
    #[test]
    fn degenerate_vectors_follow_pytorch() {
        let c = recover(
            "aten::mm",
            &[
                t(&[1, 4096], &[4096, 1], DType::F16),
                t(&[4096, 11008], &[1, 4096], DType::F16),
            ],
            &[],
        )
        .unwrap();
        assert_eq!((c.transa, c.transb), (Transpose::T, Transpose::N));
        assert_eq!((c.m, c.n, c.k), (11008, 1, 4096));
        assert_eq!((c.lda, c.ldb, c.ldc), (4096, 4096, 11008));
    }

    #[test]
    fn baddbmm_and_failures() {
        let c = recover(
            "aten::baddbmm",
            &[
                t(&[16, 5, 5], &[25, 5, 1], DType::F16),
                t(&[16, 5, 64], &[320, 64, 1], DType::F16),
                t(&[16, 64, 5], &[320, 5, 1], DType::F16),
                s("0.0"),
                s("0.125"),
            ],
            &[],
        )
        .unwrap();
        assert_eq!((c.alpha, c.beta), (0.125, 0.0));
        assert!(recover(
            "aten::mm",
            &[
                t(&[4, 3], &[3, 1], DType::F16),
                t(&[4, 3], &[3, 1], DType::F16)
            ],
            &[]
        )
        .is_err());
        assert!(recover("aten::mm", &[t(&[4, 3], &[3, 1], DType::F16)], &[]).is_err());
        assert!(recover("aten::add", &[], &[]).is_err());
    }
}
