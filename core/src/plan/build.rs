//! Lowered graph -> replay plan: unique units with their calls and buffer slots, every
//! invocation as a step on its stream with its cross-stream waits, and the memory the
//! replay needs. Invariant: the plan holds every unit instance of the graph exactly once as
//! a step, so sum(unit invocations) == steps, and the plan passes [`Plan::check`].

use super::aten_call::AtenCall;
use super::calls::{tier, unit_call};
use super::memory::{self, Slots};
use super::types::*;
use kc_ir::{DataflowSource, KernelGraph, OperandMemory, StorageKind};
use petgraph::visit::EdgeRef;
use std::collections::{BTreeSet, HashMap};

/// Where reads of values carried in from before the replay live ([`super::carry`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum CarriedIn {
    /// In regions of their own that nothing writes (the default): every replay reads the
    /// same values.
    #[default]
    Own,
    /// In their storage, as the model's addresses have them: each replay reads what the
    /// previous one left.
    Shared,
}

/// Builds the plan of a lowered graph, carried-in reads in regions of their own.
pub fn build(g: &KernelGraph) -> Plan {
    build_with(g, CarriedIn::Own)
}

/// Builds the plan of a lowered graph, carried-in reads placed as `carried_in` says.
pub fn build_with(g: &KernelGraph, carried_in: CarriedIn) -> Plan {
    let l2 = g
        .meta
        .ranks
        .iter()
        .flat_map(|r| r.devices.iter())
        .find_map(|d| d.l2_cache_bytes)
        .unwrap_or(memory::DEFAULT_L2_BYTES);
    let mut slots = Slots::default();
    let mut units = Vec::with_capacity(g.units.len());
    let mut aten_calls = Vec::with_capacity(g.units.len());
    for u in &g.units {
        let used: Vec<u32> = u
            .params
            .operands(g.str(u.label))
            .iter()
            .map(|o| {
                let location = match o.memory {
                    OperandMemory::Device => Location::Device,
                    OperandMemory::PinnedHost => Location::PinnedHost,
                };
                slots.add(o.bytes, location)
            })
            .collect();
        let mut call = unit_call(g, &u.params, &used);
        let mut unit_tier = tier(u.tier);
        // The call is built here, once, and stored: lowering gave the unit its tier only
        // after the same builder accepted it (`calls::verdict`), so a refusal here would be
        // a lowering defect; it is still never passed on to the executor.
        let kernels: Vec<String> = u.kernels.iter().map(|k| g.str(*k).to_string()).collect();
        let built = super::calls::check(&call, &kernels, g.meta.ranks.len().max(1) as u32);
        let mut aten_call = None;
        match built {
            Ok(c) => aten_call = c,
            Err(reason) => {
                call = UnitCall::NotReplayable {
                    reason: format!("{}: {reason}", g.str(u.label)),
                };
                unit_tier = PlanTier::NotReplayable;
            }
        }
        aten_calls.push(aten_call);
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
                PlanTier::Runtime | PlanTier::Gemm | PlanTier::AtenOp | PlanTier::Compiled
            )
        })
        .map(|u| u.traced_ns_total)
        .sum();
    let (dataflow, bound_reads) = place(g, &instance_order, &units, &aten_calls, carried_in);
    super::index_bounds::bound_moved_indices(&mut aten_calls, &steps, &units, &bound_reads);
    let values = super::values::assign(g, &instance_order, &aten_calls);
    // Each unit's first invocation, for its traced launch geometry.
    let mut first_instance: Vec<Option<usize>> = vec![None; g.units.len()];
    for (k, i) in g.instances.iter().enumerate() {
        if let Some(slot) = first_instance.get_mut(i.unit.0 as usize) {
            slot.get_or_insert(k);
        }
    }
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
        dataflow,
        aten_calls,
        math: super::math::infer(g.graph.node_weights().map(|n| g.strings.get(n.kind.name()))),
        values,
        bound_reads,
        kernel_geometry: g
            .units
            .iter()
            .map(|u| {
                let first = first_instance
                    .get(u.id.0 as usize)
                    .copied()
                    .flatten()
                    .map(|k| &g.instances[k]);
                first.map_or_else(Vec::new, |i| {
                    i.nodes
                        .iter()
                        .map(|n| {
                            g.graph[*n].kind.geometry().map(|k| LaunchDims {
                                grid: k.grid,
                                block: k.block,
                            })
                        })
                        .collect()
                })
            })
            .collect(),
        binaries: g
            .compiled_kernels
            .iter()
            .map(|k| KernelBinary {
                name: k.name.clone(),
                cubin: k.cubin.clone(),
                arch: k.arch,
                shared_bytes: k.shared_bytes,
                num_warps: k.num_warps,
                origin: k.origin.clone(),
            })
            .collect(),
    }
}

/// Each operand's element type and, should it be a parameter, the values PyTorch would
/// initialise it with, by the operand's role in the call (operand order as in `slots`).
fn operand_roles(call: &UnitCall) -> Vec<(ElemType, RegionInit)> {
    use RegionInit::*;
    match call {
        UnitCall::Memcpy { .. } => vec![(ElemType::Unknown, Uniform); 2],
        UnitCall::Memset { .. } => vec![(ElemType::Unknown, Uniform)],
        UnitCall::Gemm(c) => {
            // A is the weight of a linear layer (see `lower::gemm::operand_args`).
            let w = Weight {
                fan_in: c.k.max(1) as u64,
            };
            vec![
                (c.a_type, w),
                (c.b_type, Uniform),
                (c.c_type, Uniform),
                (c.c_type, w),
            ]
        }
        UnitCall::AtenOp { op, args } => {
            let mut v = Vec::new();
            for (pos, a) in args.iter().enumerate() {
                for t in a.tensors() {
                    v.push((t.dtype, tensor_role(op, pos, t)));
                }
            }
            v
        }
        UnitCall::Kernel { args, .. } => args
            .iter()
            .filter_map(|a| match a {
                KernelArgValue::Pointer { dtype, .. } => Some((*dtype, Uniform)),
                _ => None,
            })
            .collect(),
        UnitCall::Collective { .. } | UnitCall::NotReplayable { .. } => Vec::new(),
    }
}

/// The role of an op's tensor argument at `pos`, for the ops whose parameters must hold
/// particular values (a normalisation's variance must be positive) or scale.
fn tensor_role(op: &str, pos: usize, t: &TensorArg) -> RegionInit {
    use RegionInit::*;
    let fan_in = || Weight {
        fan_in: t.dims.iter().skip(1).product::<i64>().max(1) as u64,
    };
    match (op, pos) {
        ("aten::layer_norm" | "aten::native_layer_norm", 2) => Ones,
        ("aten::layer_norm" | "aten::native_layer_norm", 3) => Zeros,
        ("aten::rms_norm" | "aten::_fused_rms_norm", 2) => Ones,
        ("aten::group_norm", 2) | ("aten::native_group_norm", 1) => Ones,
        ("aten::group_norm", 3) | ("aten::native_group_norm", 2) => Zeros,
        (
            "aten::batch_norm"
            | "aten::native_batch_norm"
            | "aten::_native_batch_norm_legit"
            | "aten::_native_batch_norm_legit_no_training"
            | "aten::cudnn_batch_norm"
            | "aten::miopen_batch_norm",
            p,
        ) => match p {
            1 | 4 => Ones,
            2 | 3 => Zeros,
            _ => Uniform,
        },
        (
            "aten::convolution"
            | "aten::_convolution"
            | "aten::conv1d"
            | "aten::conv2d"
            | "aten::conv3d"
            | "aten::cudnn_convolution"
            | "aten::cudnn_convolution_relu"
            | "aten::cudnn_convolution_add_relu",
            1,
        ) => fan_in(),
        // An optimizer step's state: parameters as initialised, moments from zero (the
        // second moment is square-rooted), step counts from one (the bias correction
        // divides by 1 - beta^step), a tensor learning rate small.
        ("aten::_fused_adamw_" | "aten::_fused_adam_", p) => match p {
            0 => fan_in(),
            2..=4 => Zeros,
            5 => Ones,
            6 => Small,
            _ => Uniform,
        },
        ("aten::_fused_sgd_", p) => match p {
            0 => fan_in(),
            2 => Zeros,
            _ => Uniform,
        },
        // Mixed precision's loss scale: found_inf zero, scales one.
        ("aten::_amp_foreach_non_finite_check_and_unscale_", 1) => Zeros,
        ("aten::_amp_foreach_non_finite_check_and_unscale_", 2) => Ones,
        ("aten::_amp_update_scale_", 0) => Ones,
        ("aten::_amp_update_scale_", 1 | 2) => Zeros,
        // Powers of the betas by the step count (capturable Adam's bias correction).
        ("aten::_foreach_pow", 1) => Ones,
        // A foreach Adam's first moments (`_foreach_lerp_(exp_avgs, grads, 1 - beta1)`), from
        // zero as the fused optimizers' are: a moment drawn at random over a row that gets
        // no gradient (an embedding's unused tokens) keeps a second moment of zero there,
        // and the update m / (sqrt(v) + eps) moves that row by lr / eps on every step.
        ("aten::_foreach_lerp_", 0) => Zeros,
        // A foreach optimizer's step counts: 0-dim tensors it increments first thing
        // (`_foreach_add_(state_steps, 1)`). From one, as for the fused optimizers: a count
        // of zero makes the bias correction 1 - beta^0 = 0 and every update infinite.
        ("aten::_foreach_add_", 0) if t.dims.is_empty() => Ones,
        // Square roots and logarithms of state (Adam's second moment): positive values.
        (op, _)
            if op.starts_with("aten::_foreach_sqrt")
                || op == "aten::sqrt"
                || op == "aten::rsqrt"
                || op == "aten::log" =>
        {
            Ones
        }
        _ => Uniform,
    }
}

/// The arena of graph mode: parameters side by side, then activations packed by liveness
/// over the steps ([`kc_ir::dataflow::pack_by_liveness`]), and each step's operands and
/// results as arena offsets (`None` when the graph has no dataflow), and the tier-3 reads
/// of allocated results that read the result itself ([`bound_reads`]).
fn place(
    g: &KernelGraph,
    instance_order: &[usize],
    units: &[PlanUnit],
    aten_calls: &[Option<AtenCall>],
    carried_in: CarriedIn,
) -> (Option<PlanDataflow>, Vec<BoundRead>) {
    let df = &g.dataflow;
    if df.source == DataflowSource::None {
        return (None, Vec::new());
    }
    let kind: Vec<StorageKind> = df.storages.iter().map(|st| st.kind).collect();
    // Lifetimes in step order; a unit the plan refused (NotReplayable) touches nothing.
    let n = df.storages.len();
    let mut first = vec![u32::MAX; n];
    let mut last = vec![0u32; n];
    for (step, &i) in instance_order.iter().enumerate() {
        let unit = &units[g.instances[i].unit.0 as usize];
        if !unit.tier.is_replayable() {
            continue;
        }
        let p = &df.instances[i];
        for pl in p.operands.iter().chain(&p.outputs).flatten() {
            let s = pl.storage as usize;
            first[s] = first[s].min(step as u32);
            last[s] = last[s].max(step as u32);
        }
    }
    let used = |s: usize| first[s] != u32::MAX;
    // Per unit, once: its operands as lowering sees them (which it writes, how far they
    // reach).
    let operands: Vec<Vec<kc_ir::Operand>> = g
        .units
        .iter()
        .map(|u| crate::lower::dataflow::unit_operands(g.str(u.label), &u.params))
        .collect();
    // Reads of values carried in from before the replay get regions of their own that keep
    // their storage's starting values (see `carry`).
    let carried = match carried_in {
        CarriedIn::Own => super::carry::carry(g, instance_order, units, &operands),
        CarriedIn::Shared => super::carry::Carry::default(),
    };
    // How long each storage's bytes must hold its values, for packing: from its first
    // touch that stays in it to its last. A storage whose first such touch reads (an
    // optimizer's update of its parameters and moments, a running statistic, a read left
    // shared) holds state from one replay to the next: it keeps its bytes for the whole
    // replay, so no activation packed beside it overwrites that state.
    let (mut live_first, mut live_last) = (vec![u32::MAX; n], vec![0u32; n]);
    let mut carries_state = vec![false; n];
    for (step, &i) in instance_order.iter().enumerate() {
        let unit = &units[g.instances[i].unit.0 as usize];
        if !unit.tier.is_replayable() {
            continue;
        }
        let p = &df.instances[i];
        let ops = &operands[unit.id as usize];
        let in_place = updates_in_place(&unit.call);
        let touches = p
            .operands
            .iter()
            .enumerate()
            .filter(|(k, _)| !carried.moved.contains_key(&(step as u32, *k)))
            .filter_map(|(k, pl)| {
                let writes = ops.get(k).is_some_and(|o| o.writes);
                pl.map(|pl| (pl.storage as usize, !writes || in_place))
            })
            .chain(
                p.outputs
                    .iter()
                    .flatten()
                    .map(|pl| (pl.storage as usize, false)),
            );
        for (s, reads) in touches {
            if live_first[s] == u32::MAX {
                carries_state[s] = reads;
            }
            live_first[s] = live_first[s].min(step as u32);
            live_last[s] = live_last[s].max(step as u32);
        }
    }
    let end_step = instance_order.len().saturating_sub(1) as u32;
    for s in (0..n).filter(|&s| carries_state[s]) {
        (live_first[s], live_last[s]) = (0, end_step);
    }
    let round = |b: u64| b.max(1).div_ceil(512) * 512;
    // Each rank's storages are laid out from offset 0 on their own (a rank's GPU holds only
    // its own image: `Plan::dataflow_of_rank`); a storage belongs to the rank of its first
    // step.
    let storage_rank: Vec<u32> = {
        let mut r = vec![0u32; n];
        for (step, &i) in instance_order.iter().enumerate() {
            let p = &df.instances[i];
            for pl in p.operands.iter().chain(&p.outputs).flatten() {
                let s = pl.storage as usize;
                if first[s] == step as u32 {
                    r[s] = g.instances[i].rank;
                }
            }
        }
        r
    };
    let mut ranks: Vec<u32> = (0..n)
        .filter(|&s| used(s))
        .map(|s| storage_rank[s])
        .collect();
    ranks.sort_unstable();
    ranks.dedup();
    let mut offset = vec![0u64; n];
    let mut rank_end: HashMap<u32, u64> = HashMap::new();
    let (mut parameter_bytes, mut peak) = (0u64, 0u64);
    for &rank in &ranks {
        let mine = |s: &usize| used(*s) && storage_rank[*s] == rank;
        let mut params = 0u64;
        for s in (0..n)
            .filter(mine)
            .filter(|&s| kind[s] == StorageKind::Parameter)
        {
            offset[s] = params;
            params += round(df.storages[s].bytes);
        }
        let activations: Vec<usize> = (0..n)
            .filter(mine)
            .filter(|&s| kind[s] == StorageKind::Activation)
            .collect();
        let items: Vec<(u64, u32, u32)> = activations
            .iter()
            .map(|&s| {
                // `carry` moves a storage's reads only where a replayed write stays in it,
                // so every used storage keeps a touch.
                debug_assert!(
                    live_first[s] != u32::MAX,
                    "storage {s} without a kept touch"
                );
                (df.storages[s].bytes, live_first[s], live_last[s])
            })
            .collect();
        let (packed, packed_bytes, rank_peak) = kc_ir::dataflow::pack_by_liveness(&items);
        for (k, &s) in activations.iter().enumerate() {
            offset[s] = params + packed[k];
        }
        rank_end.insert(rank, params + packed_bytes);
        parameter_bytes = parameter_bytes.max(params);
        peak = peak.max(rank_peak);
    }
    // Each storage's element type and starting values, from the calls that touch it.
    let mut dtype = vec![ElemType::Unknown; n];
    let mut init = vec![RegionInit::Uniform; n];
    // A storage whose first touch is a read holds state the replay did not compute
    // (weights, an optimiser's moments, a KV cache): it starts with values by role.
    let mut state = vec![None::<bool>; n];
    // Per unit, once: their element types and roles as the plan's call gives them.
    let roles: Vec<Vec<(ElemType, RegionInit)>> =
        units.iter().map(|u| operand_roles(&u.call)).collect();
    for &i in instance_order {
        let unit = &units[g.instances[i].unit.0 as usize];
        let p = &df.instances[i];
        if !unit.tier.is_replayable() || p.operands.len() != unit.slots.len() {
            continue;
        }
        for (k, pl) in p.operands.iter().enumerate() {
            let Some(pl) = pl else { continue };
            let s = pl.storage as usize;
            let (t, role) = roles[unit.id as usize]
                .get(k)
                .copied()
                .unwrap_or((ElemType::Unknown, RegionInit::Uniform));
            if dtype[s] == ElemType::Unknown {
                dtype[s] = t;
            }
            let written = operands[unit.id as usize].get(k).is_some_and(|o| o.writes);
            // An in-place op reads what it updates (`mul_` of Adam's second moment), so
            // a storage it touches first is state, and takes its role from it.
            let reads = !written || updates_in_place(&unit.call);
            let is_state = *state[s].get_or_insert(reads);
            if init[s] == RegionInit::Uniform && is_state && reads {
                init[s] = role;
            }
        }
    }
    // Reads of results the replay allocates outside the image get regions of their own,
    // after each rank's storages.
    let detached =
        super::detach::detach(g, instance_order, units, aten_calls, &operands, &|u, k| {
            roles[u.id as usize]
                .get(k)
                .map_or(ElemType::Unknown, |r| r.0)
        });
    let mut detached_offset = vec![0u64; detached.results.len()];
    for (r, d) in detached.results.iter().enumerate() {
        if d.bytes == 0 {
            continue;
        }
        let end = rank_end.entry(d.rank).or_insert(0);
        detached_offset[r] = *end;
        *end += round(d.bytes);
    }
    // Carried regions come after the detached results.
    let mut carried_offset = vec![0u64; carried.regions.len()];
    for (r, c) in carried.regions.iter().enumerate() {
        let end = rank_end.entry(c.rank).or_insert(0);
        carried_offset[r] = *end;
        *end += round(c.end - c.start);
    }
    let arena_bytes = rank_end.values().copied().max().unwrap_or(0);
    let carried_regions = carried
        .regions
        .iter()
        .zip(&carried_offset)
        .map(|(c, &offset)| Region {
            dtype: dtype[c.storage as usize],
            init: init[c.storage as usize],
            offset,
            bytes: c.end - c.start,
            kind: RegionKind::CarriedIn,
            first_step: c.first_step,
            last_step: c.last_step,
        });
    let detached_regions = detached
        .results
        .iter()
        .zip(&detached_offset)
        .filter(|(d, _)| d.bytes > 0)
        .map(|(d, &offset)| Region {
            dtype: d.dtype,
            init: RegionInit::Uniform,
            offset,
            bytes: d.bytes,
            kind: RegionKind::Detached,
            first_step: d.first_step,
            last_step: d.last_step,
        });
    let regions = (0..n)
        .filter(|&s| used(s))
        .map(|s| Region {
            dtype: dtype[s],
            init: init[s],
            offset: offset[s],
            bytes: df.storages[s].bytes,
            kind: match kind[s] {
                StorageKind::Parameter => RegionKind::Parameter,
                StorageKind::Activation => RegionKind::Activation,
            },
            first_step: first[s],
            last_step: last[s],
        })
        .chain(detached_regions)
        .chain(carried_regions)
        .collect();
    let steps = instance_order
        .iter()
        .enumerate()
        .map(|(step, &i)| {
            let unit = &units[g.instances[i].unit.0 as usize];
            let p = &df.instances[i];
            if !unit.tier.is_replayable() || p.operands.len() != unit.slots.len() {
                return StepPlaces::default();
            }
            StepPlaces {
                operands: p
                    .operands
                    .iter()
                    // Lowering grew every storage to hold its operands (the verifier
                    // checked it), so each place holds its slot's bytes.
                    .enumerate()
                    .map(|(k, pl)| {
                        pl.map(|pl| {
                            let key = (step as u32, k);
                            match (detached.moved.get(&key), carried.moved.get(&key)) {
                                (Some(&(r, rel)), _) => detached_offset[r] + rel,
                                (None, Some(&(r, rel))) => carried_offset[r] + rel,
                                (None, None) => offset[pl.storage as usize] + pl.offset_bytes,
                            }
                        })
                    })
                    .collect(),
                outputs: p
                    .outputs
                    .iter()
                    .map(|pl| {
                        pl.map(|pl| {
                            let s = pl.storage as usize;
                            (
                                offset[s] + pl.offset_bytes,
                                df.storages[s].bytes.saturating_sub(pl.offset_bytes),
                            )
                        })
                    })
                    .collect(),
            }
        })
        .collect();
    let mut bound = bound_reads(g, instance_order, units, &detached);
    bound.extend(super::integer_reads::integer_reads(
        g,
        instance_order,
        units,
        &operands,
    ));
    bound.sort_unstable_by_key(|b| (b.step, b.operand));
    (
        Some(PlanDataflow {
            derivation: df.source.as_str().to_string(),
            regions,
            // The largest rank's image: every rank's regions lie inside it.
            arena_bytes,
            parameter_bytes,
            peak_activation_bytes: peak,
            steps,
        }),
        bound,
    )
}

/// The detached reads any replayed step makes of a result an earlier tier-3 step allocated
/// on the same stream: libtorch hands the executor the producer's result tensor, so a
/// tier-3 reader reads it where it is, as the model did, and a reader of another tier (a
/// GEMM reading a layer norm's or cuDNN attention's result) takes its address. Without
/// them such a GEMM read a detached region no step wrote since the image was filled: not
/// the model's values, and from DRAM where the model's GEMM read the result from L2
/// (Swin-T: DRAM reads +12 … +34 % per iteration under Nsight Compute). A detached region
/// then only serves the eager run before capture and reads whose result is not live.
fn bound_reads(
    g: &KernelGraph,
    instance_order: &[usize],
    units: &[PlanUnit],
    detached: &super::detach::Detachment,
) -> Vec<BoundRead> {
    let stream_of = |step: u32| {
        let i = &g.instances[instance_order[step as usize]];
        (i.rank, i.device, i.stream)
    };
    let mut v: Vec<BoundRead> = detached
        .moved
        .iter()
        .filter_map(|(&(step, k), &(r, rel))| {
            let unit = &units[g.instances[instance_order[step as usize]].unit.0 as usize];
            let d = &detached.results[r];
            // Any replayed reader: tier 3 takes the result tensor, tiers 1, 2 and 4 its
            // address (exec falls back to the detached region when it is not live).
            (unit.tier.is_replayable()
                && d.first_step < step
                && stream_of(d.first_step) == stream_of(step))
            .then_some(BoundRead {
                step,
                operand: k as u32,
                producer_step: d.first_step,
                output: d.output,
                byte_offset: rel,
            })
        })
        .collect();
    v.sort_unstable_by_key(|b| (b.step, b.operand));
    v
}

/// Whether `call` reads the tensors it writes (an in-place update such as `mul_` or an
/// optimizer step), as opposed to overwriting them (`copy_`, `fill_`, a GEMM's C).
pub(super) fn updates_in_place(call: &UnitCall) -> bool {
    let UnitCall::AtenOp { op, .. } = call else {
        return false;
    };
    const OVERWRITES: &[&str] = &[
        "aten::copy_",
        "aten::zero_",
        "aten::fill_",
        "aten::normal_",
        "aten::uniform_",
        "aten::bernoulli_",
        "aten::random_",
        "aten::exponential_",
        "aten::_foreach_copy_",
        "aten::_foreach_zero_",
    ];
    op.ends_with('_') && !op.ends_with("__") && !OVERWRITES.contains(&op.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(dims: &[i64]) -> TensorArg {
        TensorArg {
            dims: dims.to_vec(),
            strides: Vec::new(),
            dtype: ElemType::F32,
            slot: 0,
        }
    }

    /// A foreach optimizer's step counts (0-dim tensors it increments) start from one; the
    /// parameters it adds to keep their uniform starting values.
    #[test]
    fn a_foreach_optimizers_step_counts_start_from_one() {
        assert_eq!(
            tensor_role("aten::_foreach_add_", 0, &tensor(&[])),
            RegionInit::Ones
        );
        assert_eq!(
            tensor_role("aten::_foreach_add_", 0, &tensor(&[896, 896])),
            RegionInit::Uniform
        );
        assert_eq!(
            tensor_role("aten::_fused_adamw_", 5, &tensor(&[])),
            RegionInit::Ones
        );
    }

    /// The first moments a foreach Adam lerps towards the gradients start from zero, as
    /// the fused optimizers' do; the gradients it reads keep drawn values.
    #[test]
    fn a_foreach_adams_first_moments_start_from_zero() {
        let t = tensor(&[151936, 896]);
        assert_eq!(
            tensor_role("aten::_foreach_lerp_", 0, &t),
            RegionInit::Zeros
        );
        assert_eq!(
            tensor_role("aten::_foreach_lerp_", 1, &t),
            RegionInit::Uniform
        );
        assert_eq!(tensor_role("aten::_fused_adamw_", 2, &t), RegionInit::Zeros);
    }
}
