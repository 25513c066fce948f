//! Tier 2: GEMMs through cuBLAS (`cublasGemmEx`, strided batched) and, for epilogues
//! (bias), cuBLASLt, with every parameter the lowering recovered, set up as PyTorch sets
//! them (`crate::torch_blas`: its cuBLAS workspace, cuBLASLt's heuristic asked with its
//! workspace and the operands' alignments), so that the heuristic's first answer is the
//! algorithm the model ran, launch geometry included. That candidate is checked under
//! CUPTI: when its kernel is not the traced one, the first candidate whose kernel has the
//! traced kernel's name is taken instead, and the results' notes say so.
//!
//! Pitfall from ../shared/gpu/NOTES.md: cuBLAS gets a user workspace on every stream before
//! any capture (without one a capture fails with CUBLAS_STATUS_INTERNAL_ERROR).
//!
//! Invariant: every cuBLAS/cuBLASLt status is checked; every handle, descriptor and
//! workspace made here is destroyed with the back end.

use super::{At, Backend};
use crate::device::Device;
use crate::ExecError;
use cudarc::cublas::sys as cb;
use cudarc::cublaslt::sys as lt;
use cudarc::driver::sys as cu;
use kc_core::plan::types::{ElemType, Epilogue, GemmParams, Op, PlanUnit, UnitCall};
use std::collections::HashMap;
use std::ffi::c_void;

fn blas_err(s: cb::cublasStatus_t, what: &str) -> Result<(), ExecError> {
    if s == cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(ExecError::Cublas {
            what: what.to_string(),
            status: format!("{s:?}"),
        })
    }
}

fn lt_err(s: lt::cublasStatus_t, what: &str) -> Result<(), ExecError> {
    if s == lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(ExecError::Cublas {
            what: what.to_string(),
            status: format!("{s:?}"),
        })
    }
}

fn blas_type(t: ElemType) -> Result<cb::cudaDataType_t, ExecError> {
    Ok(match t {
        ElemType::F16 => cb::cudaDataType_t::CUDA_R_16F,
        ElemType::BF16 => cb::cudaDataType_t::CUDA_R_16BF,
        ElemType::F32 => cb::cudaDataType_t::CUDA_R_32F,
        ElemType::F64 => cb::cudaDataType_t::CUDA_R_64F,
        other => {
            return Err(ExecError::OutOfRange {
                what: "GEMM element type",
                value: format!("{other:?}"),
            })
        }
    })
}

fn lt_type(t: ElemType) -> Result<lt::cudaDataType_t, ExecError> {
    Ok(match t {
        ElemType::F16 => lt::cudaDataType_t::CUDA_R_16F,
        ElemType::BF16 => lt::cudaDataType_t::CUDA_R_16BF,
        ElemType::F32 => lt::cudaDataType_t::CUDA_R_32F,
        ElemType::F64 => lt::cudaDataType_t::CUDA_R_64F,
        other => {
            return Err(ExecError::OutOfRange {
                what: "GEMM element type",
                value: format!("{other:?}"),
            })
        }
    })
}

fn blas_op(o: Op) -> cb::cublasOperation_t {
    match o {
        Op::N => cb::cublasOperation_t::CUBLAS_OP_N,
        Op::T => cb::cublasOperation_t::CUBLAS_OP_T,
    }
}

/// cuBLASLt takes the transpose attributes as `cublasOperation_t` values in an int32.
fn lt_op(o: Op) -> i32 {
    blas_op(o) as i32
}

/// A cuBLASLt matmul prepared once per unit (descriptors and the heuristic's algorithm).
struct LtPlan {
    desc: lt::cublasLtMatmulDesc_t,
    a: lt::cublasLtMatrixLayout_t,
    b: lt::cublasLtMatrixLayout_t,
    c: lt::cublasLtMatrixLayout_t,
    algo: lt::cublasLtMatmulAlgo_t,
    /// cuBLASLt's heuristic candidates, best first (`algo` is one of them).
    candidates: Vec<lt::cublasLtMatmulAlgo_t>,
}

/// cuBLAS handles and workspaces per stream, cuBLASLt's handle and each unit's prepared
/// matmul.
pub struct Blas {
    blas: Vec<cb::cublasHandle_t>,
    lt: lt::cublasLtHandle_t,
    workspaces: Vec<cu::CUdeviceptr>,
    lt_plans: HashMap<u32, LtPlan>,
    /// cuBLAS's workspace per stream and the part cuBLASLt is told of, as PyTorch sizes
    /// them on this GPU (`crate::torch_blas`); cuBLASLt shares cuBLAS's, as in PyTorch.
    workspace_bytes: usize,
    lt_workspace_bytes: usize,
    /// Per cuBLASLt unit, the alignments of A, B, C and the bias its places give.
    lt_alignments: HashMap<u32, [u32; 4]>,
    /// What choosing cuBLASLt algorithms by the traced kernel's name found, per unit.
    choices: Vec<String>,
    /// fp32 GEMMs in TF32, as the model ran them (the plan's math modes).
    tf32: bool,
}

impl Blas {
    /// One cuBLAS handle and workspace per stream of `dev` (PyTorch's size on this GPU),
    /// and cuBLASLt's handle; records cuBLAS's version in the device's facts.
    pub fn new(dev: &mut Device) -> Result<Blas, ExecError> {
        // SAFETY: probing for the libraries loads nothing we rely on; handle creation and
        // settings with valid out-pointers, on this device's streams.
        unsafe {
            if !cb::is_culib_present() || !lt::is_culib_present() {
                return Err(ExecError::NoCublas);
            }
            let (workspace_bytes, lt_workspace_bytes) =
                crate::torch_blas::workspaces_from_env(dev.facts.sm);
            let mut b = Blas {
                blas: Vec::new(),
                lt: std::ptr::null_mut(),
                workspaces: Vec::new(),
                lt_plans: HashMap::new(),
                workspace_bytes,
                lt_workspace_bytes,
                lt_alignments: HashMap::new(),
                choices: Vec::new(),
                tf32: false,
            };
            for &s in &dev.streams.clone() {
                let mut h: cb::cublasHandle_t = std::ptr::null_mut();
                blas_err(cb::cublasCreate_v2(&mut h), "cublasCreate")?;
                b.blas.push(h);
                // A workspace of 0 bytes (`CUBLAS_WORKSPACE_CONFIG=:0:0`) is PyTorch's to
                // choose too; the allocation itself needs a byte.
                let ws = dev.alloc_raw(workspace_bytes.max(1) as u64)?;
                b.workspaces.push(ws);
                blas_err(
                    cb::cublasSetWorkspace_v2(h, ws as *mut c_void, workspace_bytes),
                    "cublasSetWorkspace",
                )?;
                blas_err(
                    cb::cublasSetStream_v2(h, s as cb::cudaStream_t),
                    "cublasSetStream",
                )?;
            }
            let mut v = 0;
            if let Some(&h) = b.blas.first() {
                if cb::cublasGetVersion_v2(h, &mut v) == cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
                    dev.facts.cublas_version = Some(v);
                }
            }
            lt_err(lt::cublasLtCreate(&mut b.lt), "cublasLtCreate")?;
            Ok(b)
        }
    }

    /// Takes, among cuBLASLt's heuristic candidates, the first whose kernel has the traced
    /// GEMM kernel's name (each candidate runs once, eagerly, under CUPTI), so that the replay
    /// launches the kernel the model launched; keeps the first candidate, and says so, when
    /// none does or CUPTI is not there.
    fn choose_lt_algorithm(&mut self, dev: &Device, unit: &PlanUnit, g: &GemmParams) {
        // The GEMM's own kernel: cuBLASLt's memset of its workspace, traced under the same
        // op, belongs to the unit too (lowering gives it to the GEMM) but is no candidate's.
        let Some(traced) = unit
            .kernels
            .iter()
            .find(|k| !kc_core::results::fidelity::is_runtime_copy(k))
        else {
            return;
        };
        let want = kc_core::results::fidelity::base_name(traced).to_string();
        let n = self
            .lt_plans
            .get(&unit.id)
            .map_or(0, |p| p.candidates.len());
        let mut seen = Vec::new();
        for k in 0..n {
            if let Some(p) = self.lt_plans.get_mut(&unit.id) {
                p.algo = p.candidates[k];
            }
            let ran = crate::device::cupti::record(|| {
                // SAFETY: the unit's buffers are allocated; the call runs eagerly on
                // stream 0 outside any capture.
                unsafe { self.lt_gemm(dev, unit, g, 0, At::Slots(0))? };
                dev.synchronize()
            });
            let names = match ran {
                Ok(r) => r,
                Err(e) => {
                    self.choices.push(format!(
                        "unit {} {}: cuBLASLt's first algorithm kept ({e})",
                        unit.id, unit.label
                    ));
                    break;
                }
            };
            if names.iter().any(|r| r.name.contains(&want)) {
                if k > 0 {
                    self.choices.push(format!(
                        "unit {} {}: cuBLASLt candidate {} of {n} launches the traced {want}",
                        unit.id,
                        unit.label,
                        k + 1
                    ));
                }
                return;
            }
            seen.extend(names.into_iter().map(|r| r.name));
        }
        if let Some(p) = self.lt_plans.get_mut(&unit.id) {
            p.algo = p.candidates[0];
        }
        if !seen.is_empty() {
            self.choices.push(format!(
                "unit {} {}: none of cuBLASLt's {n} candidates launches the traced {want} (first: {})",
                unit.id,
                unit.label,
                seen[0].chars().take(80).collect::<String>()
            ));
        }
    }

    /// Descriptors and cuBLASLt's candidates for `g`, the heuristic asked as PyTorch's
    /// `gemm_and_bias` asks it: PyTorch's workspace and the operands' alignments
    /// (`align`: A, B, C, and the bias for D), so that its first candidate is the
    /// algorithm the model ran.
    fn lt_plan(&self, g: &GemmParams, align: [u32; 4]) -> Result<LtPlan, ExecError> {
        // SAFETY: descriptor calls with valid handles and attribute buffers of the sizes
        // cuBLASLt documents for each attribute.
        unsafe {
            let mut desc: lt::cublasLtMatmulDesc_t = std::ptr::null_mut();
            lt_err(
                lt::cublasLtMatmulDescCreate(
                    &mut desc,
                    if self.tf32 && g.a_type == ElemType::F32 && g.b_type == ElemType::F32 {
                        lt::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32
                    } else {
                        lt::cublasComputeType_t::CUBLAS_COMPUTE_32F
                    },
                    lt::cudaDataType_t::CUDA_R_32F,
                ),
                "cublasLtMatmulDescCreate",
            )?;
            let set = |attr: lt::cublasLtMatmulDescAttributes_t, v: &i32| {
                lt_err(
                    lt::cublasLtMatmulDescSetAttribute(
                        desc,
                        attr,
                        v as *const i32 as *const c_void,
                        4,
                    ),
                    "cublasLtMatmulDescSetAttribute",
                )
            };
            set(
                lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
                &lt_op(g.transa),
            )?;
            set(
                lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB,
                &lt_op(g.transb),
            )?;
            let epi = match g.epilogue {
                Epilogue::None => lt::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_DEFAULT,
                Epilogue::Bias => lt::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_BIAS,
                Epilogue::BiasGelu => lt::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_BIAS,
                Epilogue::BiasRelu => lt::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU_BIAS,
            };
            let epi_v = epi as u32;
            lt_err(
                lt::cublasLtMatmulDescSetAttribute(
                    desc,
                    lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_EPILOGUE,
                    &epi_v as *const u32 as *const c_void,
                    4,
                ),
                "cublasLtMatmulDescSetAttribute(EPILOGUE)",
            )?;
            let layout = |t: ElemType,
                          rows: i64,
                          cols: i64,
                          ld: i64|
             -> Result<lt::cublasLtMatrixLayout_t, ExecError> {
                let mut l: lt::cublasLtMatrixLayout_t = std::ptr::null_mut();
                lt_err(
                    lt::cublasLtMatrixLayoutCreate(
                        &mut l,
                        lt_type(t)?,
                        rows as u64,
                        cols as u64,
                        ld,
                    ),
                    "cublasLtMatrixLayoutCreate",
                )?;
                Ok(l)
            };
            let (ar, ac) = if g.transa == Op::N {
                (g.m, g.k)
            } else {
                (g.k, g.m)
            };
            let (br, bc) = if g.transb == Op::N {
                (g.k, g.n)
            } else {
                (g.n, g.k)
            };
            let a = layout(g.a_type, ar, ac, g.lda)?;
            let b = layout(g.b_type, br, bc, g.ldb)?;
            let c = layout(g.c_type, g.m, g.n, g.ldc)?;
            let mut pref: lt::cublasLtMatmulPreference_t = std::ptr::null_mut();
            lt_err(
                lt::cublasLtMatmulPreferenceCreate(&mut pref),
                "cublasLtMatmulPreferenceCreate",
            )?;
            let ws = self.lt_workspace_bytes as u64;
            lt_err(
                lt::cublasLtMatmulPreferenceSetAttribute(
                    pref,
                    lt::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    &ws as *const u64 as *const c_void,
                    8,
                ),
                "cublasLtMatmulPreferenceSetAttribute",
            )?;
            use lt::cublasLtMatmulPreferenceAttributes_t as Pref;
            for (attr, a) in [
                Pref::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                Pref::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                Pref::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                Pref::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
            ]
            .into_iter()
            .zip(align)
            {
                lt_err(
                    lt::cublasLtMatmulPreferenceSetAttribute(
                        pref,
                        attr,
                        &a as *const u32 as *const c_void,
                        4,
                    ),
                    "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)",
                )?;
            }
            const CANDIDATES: usize = 8;
            let mut results: [lt::cublasLtMatmulHeuristicResult_t; CANDIDATES] = std::mem::zeroed();
            let mut found = 0;
            lt_err(
                lt::cublasLtMatmulAlgoGetHeuristic(
                    self.lt,
                    desc,
                    a,
                    b,
                    c,
                    c,
                    pref,
                    CANDIDATES as i32,
                    results.as_mut_ptr(),
                    &mut found,
                ),
                "cublasLtMatmulAlgoGetHeuristic",
            )?;
            lt::cublasLtMatmulPreferenceDestroy(pref);
            if found == 0 {
                return Err(ExecError::NoLtAlgorithm);
            }
            let candidates: Vec<lt::cublasLtMatmulAlgo_t> = results
                [..(found as usize).min(CANDIDATES)]
                .iter()
                .map(|r| r.algo)
                .collect();
            Ok(LtPlan {
                desc,
                a,
                b,
                c,
                algo: candidates[0],
                candidates,
            })
        }
    }

    unsafe fn gemm(
        &self,
        dev: &Device,
        unit: &PlanUnit,
        g: &GemmParams,
        s: usize,
        at: At<'_>,
    ) -> Result<(), ExecError> {
        let h = self.blas[s];
        let (a, b, c) = (
            dev.addr(unit, g.a, at),
            dev.addr(unit, g.b, at),
            dev.addr(unit, g.c, at),
        );
        let f64_compute = g.compute_type == ElemType::F64;
        let (alpha32, beta32) = (g.alpha as f32, g.beta as f32);
        let (alpha64, beta64) = (g.alpha, g.beta);
        let (pa, pb): (*const c_void, *const c_void) = if f64_compute {
            (&alpha64 as *const f64 as _, &beta64 as *const f64 as _)
        } else {
            (&alpha32 as *const f32 as _, &beta32 as *const f32 as _)
        };
        let compute = if f64_compute {
            cb::cublasComputeType_t::CUBLAS_COMPUTE_64F
        } else if self.tf32 && g.a_type == ElemType::F32 && g.b_type == ElemType::F32 {
            cb::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32
        } else {
            cb::cublasComputeType_t::CUBLAS_COMPUTE_32F
        };
        let dims = |x: i64| -> Result<i32, ExecError> {
            i32::try_from(x).map_err(|_| ExecError::OutOfRange {
                what: "GEMM dimension (int32)",
                value: x.to_string(),
            })
        };
        if g.batch == 1 {
            blas_err(
                cb::cublasGemmEx(
                    h,
                    blas_op(g.transa),
                    blas_op(g.transb),
                    dims(g.m)?,
                    dims(g.n)?,
                    dims(g.k)?,
                    pa,
                    a as *const c_void,
                    blas_type(g.a_type)?,
                    dims(g.lda)?,
                    b as *const c_void,
                    blas_type(g.b_type)?,
                    dims(g.ldb)?,
                    pb,
                    c as *mut c_void,
                    blas_type(g.c_type)?,
                    dims(g.ldc)?,
                    compute,
                    cb::cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
                ),
                "cublasGemmEx",
            )
        } else {
            blas_err(
                cb::cublasGemmStridedBatchedEx(
                    h,
                    blas_op(g.transa),
                    blas_op(g.transb),
                    dims(g.m)?,
                    dims(g.n)?,
                    dims(g.k)?,
                    pa,
                    a as *const c_void,
                    blas_type(g.a_type)?,
                    dims(g.lda)?,
                    g.stride_a,
                    b as *const c_void,
                    blas_type(g.b_type)?,
                    dims(g.ldb)?,
                    g.stride_b,
                    pb,
                    c as *mut c_void,
                    blas_type(g.c_type)?,
                    dims(g.ldc)?,
                    g.stride_c,
                    dims(g.batch)?,
                    compute,
                    cb::cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
                ),
                "cublasGemmStridedBatchedEx",
            )
        }
    }

    unsafe fn lt_gemm(
        &self,
        dev: &Device,
        unit: &PlanUnit,
        g: &GemmParams,
        s: usize,
        at: At<'_>,
    ) -> Result<(), ExecError> {
        let id = unit.id;
        let p = self.lt_plans.get(&id).ok_or(ExecError::NotPrepared {
            unit: id,
            what: "the cuBLASLt matmul",
        })?;
        let bias = g.bias.map(|b| dev.addr(unit, b, at)).unwrap_or(0);
        lt_err(
            lt::cublasLtMatmulDescSetAttribute(
                p.desc,
                lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                &bias as *const u64 as *const c_void,
                8,
            ),
            "cublasLtMatmulDescSetAttribute(BIAS_POINTER)",
        )?;
        let (alpha, beta) = (g.alpha as f32, g.beta as f32);
        let c = dev.addr(unit, g.c, at);
        lt_err(
            lt::cublasLtMatmul(
                self.lt,
                p.desc,
                &alpha as *const f32 as *const c_void,
                dev.addr(unit, g.a, at) as *const c_void,
                p.a,
                dev.addr(unit, g.b, at) as *const c_void,
                p.b,
                &beta as *const f32 as *const c_void,
                c as *const c_void,
                p.c,
                c as *mut c_void,
                p.c,
                &p.algo,
                self.workspaces[s] as *mut c_void,
                self.lt_workspace_bytes,
                dev.streams[s] as lt::cudaStream_t,
            ),
            "cublasLtMatmul",
        )
    }
}

impl Backend for Blas {
    fn name(&self) -> &'static str {
        "cuBLAS/cuBLASLt"
    }

    fn makes(&self, call: &UnitCall) -> bool {
        matches!(call, UnitCall::Gemm(_))
    }

    fn load(
        &mut self,
        _dev: &mut Device,
        plan: &kc_core::plan::types::Plan,
    ) -> Result<(), ExecError> {
        self.tf32 = plan.math.tf32_matmul;
        self.lt_alignments = crate::torch_blas::lt_operand_alignments(plan);
        if !self.lt_alignments.is_empty() {
            let below = self
                .lt_alignments
                .values()
                .filter(|a| a.iter().any(|&x| x < 256))
                .count();
            self.choices.push(format!(
                "cuBLAS(Lt) set up as PyTorch sets it on this GPU: {} MiB cuBLAS workspace per stream, cuBLASLt's heuristic and calls given {} KiB; {} of {} cuBLASLt units' operands aligned below 256 bytes in the image, the heuristic told so",
                self.workspace_bytes >> 20,
                self.lt_workspace_bytes >> 10,
                below,
                self.lt_alignments.len()
            ));
        }
        Ok(())
    }

    fn prepare(&mut self, dev: &mut Device, unit: &PlanUnit) -> Result<(), ExecError> {
        if let UnitCall::Gemm(g) = &unit.call {
            if g.epilogue != Epilogue::None && !self.lt_plans.contains_key(&unit.id) {
                let align = self
                    .lt_alignments
                    .get(&unit.id)
                    .copied()
                    .unwrap_or([256; 4]);
                let p = self.lt_plan(g, align)?;
                self.lt_plans.insert(unit.id, p);
                self.choose_lt_algorithm(dev, unit, g);
            }
        }
        Ok(())
    }

    fn enqueue(
        &self,
        dev: &Device,
        unit: &PlanUnit,
        s: usize,
        at: At<'_>,
    ) -> Result<(), ExecError> {
        // SAFETY: the operands are live slots (or image places) of the sizes the plan
        // computed; the handles belong to this back end and the stream to `dev`.
        unsafe {
            match &unit.call {
                UnitCall::Gemm(g) if g.epilogue == Epilogue::None => self.gemm(dev, unit, g, s, at),
                UnitCall::Gemm(g) => self.lt_gemm(dev, unit, g, s, at),
                _ => Ok(()),
            }
        }
    }

    fn reserved_bytes(&self) -> u64 {
        (self.workspaces.len() * self.workspace_bytes) as u64
    }

    fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.choices)
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        // SAFETY: destroys what `new` and `prepare` made; the device is synchronised first
        // (by `Gpu`'s drop). Errors are ignored while dropping.
        unsafe {
            for (_, p) in self.lt_plans.drain() {
                lt::cublasLtMatmulDescDestroy(p.desc);
                lt::cublasLtMatrixLayoutDestroy(p.a);
                lt::cublasLtMatrixLayoutDestroy(p.b);
                lt::cublasLtMatrixLayoutDestroy(p.c);
            }
            for h in self.blas.drain(..) {
                cb::cublasDestroy_v2(h);
            }
            if !self.lt.is_null() {
                lt::cublasLtDestroy(self.lt);
            }
            for w in self.workspaces.drain(..) {
                cu::cuMemFree_v2(w);
            }
        }
    }
}
