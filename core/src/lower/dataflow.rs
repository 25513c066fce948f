//! Pass 7, dataflow: gives every operand of every unit invocation an identity and a place,
//! so that the replay runs over the model's memory image: a producer's result is its
//! consumers' input, eight layers read eight weights, and a storage freed and handed out
//! again by PyTorch's caching allocator is one storage here too.
//!
//! - With tensor identities from an Execution Trace of the same run (`kc ingest --shapes
//!   ET`): exact. Each ET storage id is one storage (PyTorch derives the id from the data
//!   pointer, so reuse by the allocator shows as the same id), an operand is placed at its
//!   tensor's byte offset in it, and a storage is as large as the furthest byte any operand
//!   reaches. GEMM operands are found by the op's argument roles ([`gemm::operand_args`]),
//!   copies by source and destination, tier-3 tensors by argument position, tier-3 results
//!   by result position.
//! - Without one: a heuristic. An operand the call writes starts a new storage; an operand
//!   it reads is the latest result on the same stream in the same iteration with the same
//!   byte size and kind (float or not), else a parameter, one per (unit, occurrence within the
//!   iteration, operand), shared by every iteration. A tier-3 op that is not in place is
//!   assumed to produce one result the size of its largest tensor operand (pointwise ops,
//!   norms, softmax); ops that produce other shapes break the chain there, never join wrong
//!   sizes.
//!
//! Either way, integer and boolean tensors (indices, masks) and host memory keep private
//! buffers: the replay fills them once with valid values and must not overwrite them with
//! whatever a float producer wrote. Storages the replay never writes are parameters.
//!
//! Invariant: the result satisfies [`kc_ir::Dataflow`]'s invariant (one place list per
//! instance, one entry per operand of its unit, every place inside its storage); the
//! pipeline's verifier checks it.

use super::{gemm, LowerCtx};
use crate::diag::Diagnostic;
use kc_ir::{
    ArgRefs, Dataflow, DataflowSource, InstancePlaces, KernelGraph, OpArg, OpTensors, Operand,
    OperandMemory, Place, Storage, StorageKind, TensorRef, UnitParams,
};
use std::collections::HashMap;

/// Storages being built: bytes and whether anything replayed writes them.
#[derive(Default)]
struct Storages {
    list: Vec<(u64, bool)>,
}

impl Storages {
    fn add(&mut self) -> u32 {
        self.list.push((0, false));
        (self.list.len() - 1) as u32
    }

    /// Places an operand: grows the storage to hold it and notes a write.
    fn place(&mut self, storage: u32, offset_bytes: u64, o: &Operand, writes: bool) -> Place {
        let s = &mut self.list[storage as usize];
        s.0 = s.0.max(offset_bytes.saturating_add(o.bytes.max(1)));
        s.1 |= writes;
        Place {
            storage,
            offset_bytes,
        }
    }

    fn finish(self) -> Vec<Storage> {
        self.list
            .into_iter()
            .map(|(bytes, written)| Storage {
                kind: if written {
                    StorageKind::Activation
                } else {
                    StorageKind::Parameter
                },
                bytes,
            })
            .collect()
    }
}

/// A unit's memory operands ([`UnitParams::operands`]) with what an aten op writes taken
/// from its schema: every tensor of a mutable argument (`Tensor(a!)`, an optimizer's
/// `Tensor(a!)[] self`, `grads`, `exp_avgs`, an `out=` tensor), beside the first tensor of
/// an in-place op, which the IR alone knows. Without it an optimizer step would write 51
/// of a model's 52 parameters unseen: storages the replay updates would count as never
/// written.
pub fn unit_operands(label: &str, params: &UnitParams) -> Vec<Operand> {
    let mut ops = params.operands(label);
    let UnitParams::Op { args, .. } = params else {
        return ops;
    };
    let recorded: Vec<_> = args
        .iter()
        .map(crate::lower::aten_schema::Recorded::of)
        .collect();
    let Ok(resolved) = crate::lower::aten_schema::resolve(label, &recorded) else {
        return ops;
    };
    let mut k = 0;
    for (a, sa) in args.iter().zip(&resolved.schema.args) {
        for _ in a.tensors() {
            if let Some(o) = ops.get_mut(k) {
                o.writes |= sa.mutable;
            }
            k += 1;
        }
    }
    ops
}

/// Whether an operand may share memory with the model's other tensors: device memory
/// holding floating-point data (or data of unknown kind, for copies and memsets).
fn placeable(o: &Operand) -> bool {
    o.memory == OperandMemory::Device && o.float != Some(false)
}

pub fn run(g: &mut KernelGraph, ctx: &mut LowerCtx) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    if g.instances.is_empty() {
        g.dataflow = Dataflow::default();
        return diags;
    }
    // Replay order: the plan's steps are the instances in start order.
    let mut order: Vec<usize> = (0..g.instances.len()).collect();
    order.sort_by_key(|&i| (g.instances[i].start_ns, i));
    let operands: Vec<Vec<Operand>> = g
        .units
        .iter()
        .map(|u| unit_operands(g.str(u.label), &u.params))
        .collect();
    let (source, storages, places) = if g.tensor_refs.is_empty() {
        let (s, p) = heuristic(g, &order, &operands);
        (DataflowSource::Heuristic, s, p)
    } else {
        let (s, p) = from_execution_trace(g, ctx, &order, &operands, &mut diags);
        (DataflowSource::ExecutionTrace, s, p)
    };
    g.dataflow = Dataflow {
        source,
        storages: storages.finish(),
        instances: places,
    };
    diags
}

/// The tensors one recorded op read and produced.
pub(crate) fn refs_of(g: &KernelGraph, op: kc_ir::OpId) -> Option<&OpTensors> {
    g.tensor_refs
        .binary_search_by_key(&op, |t| t.op)
        .ok()
        .map(|i| &g.tensor_refs[i])
}

fn one(a: Option<&ArgRefs>) -> Option<TensorRef> {
    match a? {
        ArgRefs::One(t) => Some(*t),
        _ => None,
    }
}

/// Each operand's recorded tensor, for a unit of `params` launched by the op `refs`
/// describes (its recorded arguments `args`).
pub(crate) fn recorded_operands(
    kernels: &[kc_ir::CompiledKernel],
    params: &UnitParams,
    op_name: &str,
    args: &[OpArg],
    refs: &OpTensors,
    n: usize,
) -> (Vec<Option<TensorRef>>, Vec<Option<TensorRef>>) {
    let first_output = refs
        .outputs
        .iter()
        .flat_map(ArgRefs::tensors)
        .find(|t| t.on_device)
        .copied();
    let mut v = vec![None; n];
    let mut outputs = Vec::new();
    match params {
        UnitParams::Memcpy { .. } => {
            let dst = first_output.or_else(|| one(refs.inputs.first()));
            let src = refs
                .inputs
                .iter()
                .flat_map(ArgRefs::tensors)
                .find(|t| Some(t.storage) != dst.map(|d| d.storage))
                .copied();
            v = vec![src, dst];
        }
        UnitParams::Memset { .. } => v[0] = first_output.or_else(|| one(refs.inputs.first())),
        UnitParams::Gemm(_) => {
            if let Some((a, b, bias)) = gemm::operand_args(op_name, args) {
                v[0] = one(refs.inputs.get(a));
                v[1] = one(refs.inputs.get(b));
                v[2] = first_output;
                if n > 3 {
                    v[3] = bias.and_then(|i| one(refs.inputs.get(i)));
                }
            }
        }
        UnitParams::Op {
            args: unit_args, ..
        } => {
            // The unit's tensors in argument order, matched position by position; a
            // position whose recorded kind differs (tensor vs list) stays private.
            let mut k = 0;
            for (p, a) in unit_args.iter().enumerate() {
                match (a, refs.inputs.get(p)) {
                    (OpArg::Tensor(_), Some(ArgRefs::One(t))) => {
                        v[k] = Some(*t);
                        k += 1;
                    }
                    (OpArg::TensorList(ts), Some(ArgRefs::List(rs))) if rs.len() == ts.len() => {
                        for r in rs {
                            v[k] = Some(*r);
                            k += 1;
                        }
                    }
                    (OpArg::OptionalTensorList(ts), Some(ArgRefs::List(rs)))
                        if rs.len() == ts.iter().flatten().count() =>
                    {
                        for r in rs {
                            v[k] = Some(*r);
                            k += 1;
                        }
                    }
                    (a, _) => k += a.tensors().len(),
                }
            }
            outputs = refs
                .outputs
                .iter()
                .flat_map(ArgRefs::tensors)
                .map(|t| Some(*t))
                .collect();
        }
        UnitParams::Compiled(c) => {
            // Tensor arguments follow the kernel's pointer parameters that take a
            // recorded argument, in parameter order.
            let positions = kernels.get(c.kernel as usize).map(|k| {
                k.params
                    .iter()
                    .filter(|p| p.is_pointer())
                    .filter_map(|p| match p.source {
                        kc_ir::ParamSource::Arg(a) => Some(a as usize),
                        kc_ir::ParamSource::Scratch => None,
                    })
                    .collect::<Vec<_>>()
            });
            for (k, pos) in positions.into_iter().flatten().enumerate().take(n) {
                v[k] = one(refs.inputs.get(pos));
            }
        }
        UnitParams::Collective(_) | UnitParams::None(_) => {}
    }
    v.truncate(n);
    (v, outputs)
}

fn from_execution_trace(
    g: &KernelGraph,
    ctx: &LowerCtx,
    order: &[usize],
    operands: &[Vec<Operand>],
    diags: &mut Vec<Diagnostic>,
) -> (Storages, Vec<InstancePlaces>) {
    let mut storages = Storages::default();
    let mut by_id: HashMap<u64, u32> = HashMap::new();
    let mut places = vec![InstancePlaces::default(); g.instances.len()];
    for &i in order {
        let inst = &g.instances[i];
        let unit = &g.units[inst.unit.0 as usize];
        let ops = &operands[unit.id.0 as usize];
        let mut p = InstancePlaces {
            operands: vec![None; ops.len()],
            outputs: Vec::new(),
        };
        // GEMM units take the GEMM op's tensors (a cuBLAS call recorded under linear).
        let op = match (&unit.params, ctx.gemm.get(i)) {
            (UnitParams::Gemm(_), Some(Some((gemm_op, _)))) => Some(*gemm_op),
            _ => inst.op,
        };
        let refs = op.and_then(|o| refs_of(g, o));
        if let (Some(op), Some(refs)) = (op, refs) {
            let (recorded, outputs) = recorded_operands(
                &g.compiled_kernels,
                &unit.params,
                g.str(g.op(op).name),
                g.args(op),
                refs,
                ops.len(),
            );
            let mut storage_of = |t: &TensorRef, storages: &mut Storages| {
                *by_id.entry(t.storage).or_insert_with(|| storages.add())
            };
            for (k, (o, t)) in ops.iter().zip(&recorded).enumerate() {
                let Some(t) = t.filter(|t| t.on_device && t.float && placeable(o)) else {
                    continue;
                };
                let s = storage_of(&t, &mut storages);
                p.operands[k] = Some(storages.place(s, t.offset_bytes, o, o.writes));
            }
            p.outputs = outputs
                .iter()
                .map(|t| {
                    let t = t.filter(|t| t.on_device && t.float)?;
                    let s = storage_of(&t, &mut storages);
                    let o = Operand {
                        bytes: t.span_bytes,
                        memory: OperandMemory::Device,
                        writes: true,
                        float: Some(true),
                    };
                    Some(storages.place(s, t.offset_bytes, &o, true))
                })
                .collect();
        } else if !ops.is_empty() && unit.tier.is_replayable() {
            diags.push(Diagnostic::new(
                "dataflow_no_tensor_ids",
                format!("node{}", inst.nodes[0].index()),
                format!(
                    "{}: the Execution Trace names no tensors for this op; its operands keep private buffers",
                    g.str(unit.label)
                ),
            ));
        }
        places[i] = p;
    }
    (storages, places)
}

/// The documented heuristic for traces without tensor identities (see the module docs).
fn heuristic(
    g: &KernelGraph,
    order: &[usize],
    operands: &[Vec<Operand>],
) -> (Storages, Vec<InstancePlaces>) {
    /// How many recent results per stream a read may match.
    const RECENT: usize = 64;
    struct Produced {
        bytes: u64,
        float: Option<bool>,
        storage: u32,
        iteration: Option<u32>,
    }
    let mut storages = Storages::default();
    let mut recent: HashMap<(u32, u32, u64), Vec<Produced>> = HashMap::new();
    let mut parameters: HashMap<(u32, u32, u32, usize), u32> = HashMap::new();
    let mut occurrences: HashMap<(u32, Option<u32>, u32), u32> = HashMap::new();
    let mut places = vec![InstancePlaces::default(); g.instances.len()];
    for &i in order {
        let inst = &g.instances[i];
        let unit = &g.units[inst.unit.0 as usize];
        let ops = &operands[unit.id.0 as usize];
        let iteration = g.graph[inst.nodes[0]].iteration;
        let occurrence = {
            let c = occurrences
                .entry((inst.rank, iteration, unit.id.0))
                .or_insert(0);
            *c += 1;
            *c - 1
        };
        let stream = (inst.rank, inst.device, inst.stream);
        let mut p = InstancePlaces {
            operands: vec![None; ops.len()],
            outputs: Vec::new(),
        };
        let mut produced = Vec::new();
        // Without tensor identities an op's tensor of unknown type may hold indices: it
        // keeps a private buffer (copies and memsets, whose kind is never known, are placed).
        let is_op = matches!(unit.params, UnitParams::Op { .. });
        let placed_here = |o: &Operand| placeable(o) && !(is_op && o.float.is_none());
        for (k, o) in ops.iter().enumerate() {
            if !placed_here(o) {
                continue;
            }
            if o.writes {
                let s = storages.add();
                p.operands[k] = Some(storages.place(s, 0, o, true));
                produced.push(Produced {
                    bytes: o.bytes,
                    float: o.float,
                    storage: s,
                    iteration,
                });
                continue;
            }
            let hit = recent.get(&stream).and_then(|r| {
                r.iter().rev().find(|x| {
                    x.iteration == iteration
                        && x.bytes == o.bytes
                        && (x.float.is_none() || o.float.is_none() || x.float == o.float)
                })
            });
            let s = match hit {
                Some(x) => x.storage,
                None => *parameters
                    .entry((inst.rank, unit.id.0, occurrence, k))
                    .or_insert_with(|| storages.add()),
            };
            p.operands[k] = Some(storages.place(s, 0, o, false));
        }
        // A tier-3 op that is not in place: one result the size of its largest tensor.
        if let UnitParams::Op { .. } = unit.params {
            let in_place = ops.first().is_some_and(|o| o.writes);
            let largest = ops
                .iter()
                .filter(|o| placed_here(o))
                .max_by_key(|o| o.bytes);
            if let (false, Some(o)) = (in_place, largest) {
                let s = storages.add();
                let out = Operand { writes: true, ..*o };
                p.outputs = vec![Some(storages.place(s, 0, &out, true))];
                produced.push(Produced {
                    bytes: o.bytes,
                    float: o.float,
                    storage: s,
                    iteration,
                });
            }
        }
        let r = recent.entry(stream).or_default();
        r.extend(produced);
        if r.len() > RECENT {
            r.drain(..r.len() - RECENT);
        }
        places[i] = p;
    }
    (storages, places)
}
