//! The call each unit makes, from its lowered parameters: the plan's [`UnitCall`] with its
//! operands in buffer slots, and for tier 3 the typed call of one libtorch overload
//! ([`super::aten_call::build`]). One function, [`verdict`], says whether a unit's call can
//! be made; lowering asks it before giving a unit a replayable tier and the plan asks it
//! again as it builds, so `kc lower --tiers`, `kc plan show` and the executor state one
//! replayable share.
//!
//! Invariant: [`check`] is a pure function of the unit's parameters, its kernels' names and
//! the job's world size; it never looks at buffer slots, so the verdict made with
//! placeholder slots in lowering is the verdict the plan reaches with real ones.

use super::types::*;
use kc_ir::{
    DType, GemmEpilogue, KernelArg, KernelGraph, MemcpyKind, OpArg, TensorSpec, Tier, Transpose,
    UnitParams,
};

pub fn elem(d: DType) -> ElemType {
    match d {
        DType::F64 => ElemType::F64,
        DType::F32 => ElemType::F32,
        DType::F16 => ElemType::F16,
        DType::BF16 => ElemType::BF16,
        DType::F8E4M3 => ElemType::F8E4M3,
        DType::F8E5M2 => ElemType::F8E5M2,
        DType::I64 => ElemType::I64,
        DType::I32 => ElemType::I32,
        DType::I16 => ElemType::I16,
        DType::I8 => ElemType::I8,
        DType::U8 => ElemType::U8,
        DType::Bool => ElemType::Bool,
        DType::C64 => ElemType::C64,
        DType::C128 => ElemType::C128,
        DType::Unknown => ElemType::Unknown,
    }
}

pub fn tier(t: Tier) -> PlanTier {
    match t {
        Tier::Runtime => PlanTier::Runtime,
        Tier::Gemm => PlanTier::Gemm,
        Tier::Op => PlanTier::AtenOp,
        Tier::Compiled => PlanTier::Compiled,
        Tier::Collective => PlanTier::Collective,
        Tier::Unreplayable => PlanTier::NotReplayable,
    }
}

fn op(t: Transpose) -> Op {
    match t {
        Transpose::N => Op::N,
        Transpose::T => Op::T,
    }
}

/// The call a unit makes, its operands given the slots `slots` (one per
/// [`UnitParams::operands`] entry, in that order).
pub fn unit_call(g: &KernelGraph, params: &UnitParams, slots: &[u32]) -> UnitCall {
    match params {
        UnitParams::Memcpy { kind, bytes } => UnitCall::Memcpy {
            kind: match kind {
                MemcpyKind::HtoD => CopyKind::HtoD,
                MemcpyKind::DtoH => CopyKind::DtoH,
                MemcpyKind::DtoD | MemcpyKind::Unknown => CopyKind::DtoD,
                MemcpyKind::HtoH => CopyKind::HtoH,
                MemcpyKind::PtoP => CopyKind::PtoP,
            },
            bytes: *bytes,
            src: slots[0],
            dst: slots[1],
        },
        UnitParams::Memset { bytes, value } => UnitCall::Memset {
            bytes: *bytes,
            value: *value,
            dst: slots[0],
        },
        UnitParams::Gemm(c) => UnitCall::Gemm(GemmParams {
            transa: op(c.transa),
            transb: op(c.transb),
            m: c.m,
            n: c.n,
            k: c.k,
            lda: c.lda,
            ldb: c.ldb,
            ldc: c.ldc,
            batch: c.batch,
            stride_a: c.stride_a,
            stride_b: c.stride_b,
            stride_c: c.stride_c,
            a_type: elem(c.a_type),
            b_type: elem(c.b_type),
            c_type: elem(c.c_type),
            compute_type: elem(c.compute_type),
            alpha: c.alpha,
            beta: c.beta,
            epilogue: match c.epilogue {
                GemmEpilogue::None => Epilogue::None,
                GemmEpilogue::Bias => Epilogue::Bias,
                GemmEpilogue::BiasGelu => Epilogue::BiasGelu,
                GemmEpilogue::BiasRelu => Epilogue::BiasRelu,
            },
            a: slots[0],
            b: slots[1],
            c: slots[2],
            bias: slots.get(3).copied(),
        }),
        UnitParams::Op { name, args } => {
            let mut next = slots.iter().copied();
            let mut tensor = |t: &TensorSpec| TensorArg {
                dims: t.dims.clone(),
                strides: t.effective_strides(),
                dtype: elem(t.dtype),
                slot: next.next().expect("one slot per tensor operand"),
            };
            UnitCall::AtenOp {
                op: g.str(*name).to_string(),
                args: args
                    .iter()
                    .map(|a| match a {
                        OpArg::Tensor(t) => AtenArg::Tensor(tensor(t)),
                        OpArg::TensorList(ts) => {
                            AtenArg::TensorList(ts.iter().map(&mut tensor).collect())
                        }
                        OpArg::OptionalTensorList(ts) => AtenArg::OptionalTensorList(
                            ts.iter().map(|t| t.as_ref().map(&mut tensor)).collect(),
                        ),
                        OpArg::Scalar { ty, value } => AtenArg::Scalar {
                            ty: ty.clone(),
                            value: value.clone(),
                        },
                        OpArg::ScalarList { ty, value } => AtenArg::ScalarList {
                            ty: ty.clone(),
                            value: value.clone(),
                        },
                        OpArg::None => AtenArg::None,
                        OpArg::Other { ty } => AtenArg::Other { ty: ty.clone() },
                    })
                    .collect(),
            }
        }
        UnitParams::Collective(i) => UnitCall::Collective {
            collective: i.collective.clone(),
            dtype: i.dtype.clone(),
            in_nelems: i.in_nelems,
            out_nelems: i.out_nelems,
            group_size: i.group_size,
        },
        UnitParams::None(r) => UnitCall::NotReplayable {
            reason: r.to_string(),
        },
        UnitParams::Compiled(c) => {
            let mut next = slots.iter().copied();
            UnitCall::Kernel {
                binary: c.kernel,
                grid: c.grid,
                block: c.block,
                args: c
                    .args
                    .iter()
                    .map(|a| match a {
                        KernelArg::Tensor { spec, .. } => KernelArgValue::Pointer {
                            slot: next.next().expect("one slot per tensor argument"),
                            dtype: elem(spec.dtype),
                        },
                        KernelArg::Int { bits: 32, value } => KernelArgValue::I32(*value as i32),
                        KernelArg::Int { value, .. } => KernelArgValue::I64(*value),
                        KernelArg::Float { bits: 32, value } => KernelArgValue::F32(*value as f32),
                        KernelArg::Float { value, .. } => KernelArgValue::F64(*value),
                        KernelArg::Scratch { bytes } => KernelArgValue::Scratch { bytes: *bytes },
                    })
                    .collect(),
            }
        }
    }
}

/// Whether the plan can make `call` (with `kernels`, the unit's kernel names, in a job of
/// `world` ranks), and the typed call for tier 3. Refused: a tier-3 call the recording
/// cannot determine (an overload libtorch lacks, an argument not recorded, a list the
/// executor cannot pass); a collective of a multi-rank job NCCL cannot issue on `world`
/// ranks (decided here, so that no rank finds out while the others wait).
pub fn check(
    call: &UnitCall,
    kernels: &[String],
    world: u32,
) -> Result<Option<super::aten_call::AtenCall>, String> {
    match call {
        UnitCall::AtenOp { op, args } => super::aten_call::build(op, args, kernels).map(Some),
        UnitCall::Collective { .. } if world > 1 => {
            super::collectives::CollectiveCall::from_plan(call, world).map(|_| None)
        }
        _ => Ok(None),
    }
}

/// Lowering's question: would the plan make the call of a unit with these parameters and
/// kernels, in a job of `world` ranks? The same [`check`] the plan runs, on the call built
/// with placeholder slots (the verdict never depends on slots).
pub fn verdict(
    g: &KernelGraph,
    params: &UnitParams,
    kernels: &[String],
    world: u32,
) -> Result<(), String> {
    let n = params.operands("").len();
    let slots: Vec<u32> = (0..n as u32).collect();
    check(&unit_call(g, params, &slots), kernels, world).map(|_| ())
}
