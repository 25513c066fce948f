//! Lowered graph -> replay plan: unique units with their calls and buffer slots, every
//! invocation as a step on its stream with its cross-stream waits, and the memory the
//! replay needs. Invariant: the plan holds every unit instance of the graph exactly once as
//! a step, so sum(unit invocations) == steps, and the plan passes [`Plan::check`].

use super::memory::{self, Slots};
use super::types::*;
use kc_ir::{
    DType, GemmEpilogue, KernelGraph, MemcpyKind, OpArg, TensorSpec, Tier, Transpose, UnitParams,
};
use petgraph::visit::EdgeRef;
use std::collections::{BTreeSet, HashMap};

fn elem(d: DType) -> ElemType {
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

fn tier(t: Tier) -> PlanTier {
    match t {
        Tier::Runtime => PlanTier::Runtime,
        Tier::Gemm => PlanTier::Gemm,
        Tier::Op => PlanTier::AtenOp,
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

fn tensor_arg(t: &TensorSpec, slots: &mut Slots, used: &mut Vec<u32>) -> TensorArg {
    let slot = slots.add(t.storage_bytes(), Location::Device);
    used.push(slot);
    TensorArg {
        dims: t.dims.clone(),
        strides: t.effective_strides(),
        dtype: elem(t.dtype),
        slot,
    }
}

/// The call a unit makes, with its operands given slots.
fn unit_call(
    g: &KernelGraph,
    params: &UnitParams,
    slots: &mut Slots,
    used: &mut Vec<u32>,
) -> UnitCall {
    match params {
        UnitParams::Memcpy { kind, bytes } => {
            let (src_loc, dst_loc, kind) = match kind {
                MemcpyKind::HtoD => (Location::PinnedHost, Location::Device, CopyKind::HtoD),
                MemcpyKind::DtoH => (Location::Device, Location::PinnedHost, CopyKind::DtoH),
                MemcpyKind::DtoD | MemcpyKind::Unknown => {
                    (Location::Device, Location::Device, CopyKind::DtoD)
                }
                MemcpyKind::HtoH => (Location::PinnedHost, Location::PinnedHost, CopyKind::HtoH),
                MemcpyKind::PtoP => (Location::Device, Location::Device, CopyKind::PtoP),
            };
            let src = slots.add(*bytes, src_loc);
            let dst = slots.add(*bytes, dst_loc);
            used.extend([src, dst]);
            UnitCall::Memcpy {
                kind,
                bytes: *bytes,
                src,
                dst,
            }
        }
        UnitParams::Memset { bytes, value } => {
            let dst = slots.add(*bytes, Location::Device);
            used.push(dst);
            UnitCall::Memset {
                bytes: *bytes,
                value: *value,
                dst,
            }
        }
        UnitParams::Gemm(c) => {
            let (arows, acols) = if c.transa == Transpose::N {
                (c.m, c.k)
            } else {
                (c.k, c.m)
            };
            let (brows, bcols) = if c.transb == Transpose::N {
                (c.k, c.n)
            } else {
                (c.n, c.k)
            };
            let sz = |d: DType| u64::from(d.size_bytes().max(1));
            let a = slots.add(
                memory::matrix_elems(arows, acols, c.lda, c.batch, c.stride_a) * sz(c.a_type),
                Location::Device,
            );
            let b = slots.add(
                memory::matrix_elems(brows, bcols, c.ldb, c.batch, c.stride_b) * sz(c.b_type),
                Location::Device,
            );
            let cc = slots.add(
                memory::matrix_elems(c.m, c.n, c.ldc, c.batch, c.stride_c) * sz(c.c_type),
                Location::Device,
            );
            used.extend([a, b, cc]);
            let bias = (c.epilogue != GemmEpilogue::None).then(|| {
                let s = slots.add(c.m as u64 * sz(c.c_type), Location::Device);
                used.push(s);
                s
            });
            UnitCall::Gemm(GemmParams {
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
                a,
                b,
                c: cc,
                bias,
            })
        }
        UnitParams::Op { name, args } => UnitCall::AtenOp {
            op: g.str(*name).to_string(),
            args: args
                .iter()
                .map(|a| match a {
                    OpArg::Tensor(t) => AtenArg::Tensor(tensor_arg(t, slots, used)),
                    OpArg::TensorList(ts) => {
                        AtenArg::TensorList(ts.iter().map(|t| tensor_arg(t, slots, used)).collect())
                    }
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
        },
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
    }
}

/// Builds the plan of a lowered graph.
pub fn build(g: &KernelGraph) -> Plan {
    let l2 = g
        .meta
        .ranks
        .iter()
        .flat_map(|r| r.devices.iter())
        .find_map(|d| d.l2_cache_bytes)
        .unwrap_or(memory::DEFAULT_L2_BYTES);
    let mut slots = Slots::default();
    let mut units = Vec::with_capacity(g.units.len());
    for u in &g.units {
        let mut used = Vec::new();
        let mut call = unit_call(g, &u.params, &mut slots, &mut used);
        let mut unit_tier = tier(u.tier);
        // The tier-3 call must be buildable from what the trace recorded (index lists,
        // scalars the binding can pass): decided here, so exec never finds it out.
        if let UnitCall::AtenOp { op, args } = &call {
            let kernels: Vec<String> = u.kernels.iter().map(|k| g.str(*k).to_string()).collect();
            if let Err(reason) = crate::exec::aten::build(op, args, &kernels) {
                call = UnitCall::NotReplayable {
                    reason: format!("{op}: {reason}"),
                };
                unit_tier = PlanTier::NotReplayable;
            }
        }
        let device_bytes: u64 = used
            .iter()
            .map(|&s| &slots.buffers[s as usize])
            .filter(|b| b.location == Location::Device)
            .map(|b| b.bytes)
            .sum();
        units.push(PlanUnit {
            id: u.id.0,
            tier: unit_tier,
            family: u.family.as_str().to_string(),
            label: g.str(u.label).to_string(),
            call,
            kernels: u.kernels.iter().map(|k| g.str(*k).to_string()).collect(),
            invocations: u.invocations,
            traced_ns_total: u.traced_ns_total,
            slots: used,
            cold_rotation: memory::cold_rotation(device_bytes, l2),
        });
    }
    // Streams in (rank, device, stream) order.
    let keys: BTreeSet<(u32, u32, u64)> = g
        .instances
        .iter()
        .map(|i| (i.rank, i.device, i.stream))
        .collect();
    let stream_index: HashMap<(u32, u32, u64), u32> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (*k, i as u32))
        .collect();
    let streams = keys
        .iter()
        .map(|&(rank, device, trace_stream)| PlanStream {
            rank,
            device,
            trace_stream,
        })
        .collect();
    // Steps in instance order, which is trace start order; waits from cross-stream edges.
    let mut instance_order: Vec<usize> = (0..g.instances.len()).collect();
    instance_order.sort_by_key(|&i| (g.instances[i].start_ns, i));
    let mut step_of_instance = vec![0u32; g.instances.len()];
    for (s, &i) in instance_order.iter().enumerate() {
        step_of_instance[i] = s as u32;
    }
    let t0 = instance_order
        .first()
        .map(|&i| g.instances[i].start_ns)
        .unwrap_or(0);
    let mut steps: Vec<Step> = instance_order
        .iter()
        .map(|&i| {
            let inst = &g.instances[i];
            Step {
                unit: inst.unit.0,
                stream: stream_index[&(inst.rank, inst.device, inst.stream)],
                waits_on: Vec::new(),
                traced_ns: inst.traced_ns,
                traced_start_ns: inst.start_ns - t0,
            }
        })
        .collect();
    for e in g.graph.edge_references() {
        let (a, b) = (e.source().index(), e.target().index());
        let (ia, ib) = (
            g.classes[a].instance as usize,
            g.classes[b].instance as usize,
        );
        let (sa, sb) = (step_of_instance[ia], step_of_instance[ib]);
        if sa < sb && steps[sa as usize].stream != steps[sb as usize].stream {
            let w = &mut steps[sb as usize].waits_on;
            if !w.contains(&sa) {
                w.push(sa);
            }
        }
    }
    for s in &mut steps {
        s.waits_on.sort_unstable();
    }
    let device_bytes = slots
        .buffers
        .iter()
        .filter(|b| b.location == Location::Device)
        .map(|b| b.bytes)
        .sum();
    let pinned_host_bytes = slots
        .buffers
        .iter()
        .filter(|b| b.location == Location::PinnedHost)
        .map(|b| b.bytes)
        .sum();
    let cold_extra_peak_bytes = units
        .iter()
        .map(|u| {
            let dev: u64 = u
                .slots
                .iter()
                .map(|&s| &slots.buffers[s as usize])
                .filter(|b| b.location == Location::Device)
                .map(|b| b.bytes)
                .sum();
            dev * u64::from(u.cold_rotation.saturating_sub(1))
        })
        .max()
        .unwrap_or(0);
    let traced_gpu_ns = g.gpu_time_ns();
    // After the plan's own refusals (tier-3 calls it cannot build), not the IR's tiers.
    let replayable_traced_ns = units
        .iter()
        .filter(|u| {
            matches!(
                u.tier,
                PlanTier::Runtime | PlanTier::Gemm | PlanTier::AtenOp
            )
        })
        .map(|u| u.traced_ns_total)
        .sum();
    Plan {
        header: PlanHeader {
            kc_version: env!("CARGO_PKG_VERSION").to_string(),
            sources: g
                .meta
                .ranks
                .iter()
                .map(|r| SourceId {
                    file: r.source.clone(),
                    bytes: r.source_bytes,
                    crc32_first_mib: r.source_crc32,
                    rank: r.rank,
                })
                .collect(),
            devices: g
                .meta
                .ranks
                .iter()
                .flat_map(|r| {
                    r.devices.iter().map(move |d| PlanDevice {
                        rank: r.rank,
                        name: d.name.clone(),
                        total_global_mem: d.total_global_mem,
                        compute_capability: (d.compute_major, d.compute_minor),
                        num_sms: d.num_sms,
                    })
                })
                .collect(),
            cuda_runtime_version: g.meta.ranks.first().and_then(|r| r.cuda_runtime_version),
            traced_gpu_ns,
            replayable_traced_ns,
        },
        streams,
        buffers: slots.buffers,
        units,
        steps,
        memory: MemoryPlan {
            device_bytes,
            pinned_host_bytes,
            cold_extra_peak_bytes,
            l2_bytes: l2,
        },
        iterations: PlanIterations {
            count: g.iterations_per_rank(),
            found_by: g.iterations_found_by().to_string(),
        },
    }
}
