//! Argument lists of modern workloads, on real traces and Execution Traces recorded in the
//! same run (fixtures/modern, README there): a fused optimizer's empty `Tensor[]`, the MoE
//! routing's `Tensor?[] indices`, and a `Tensor?[]` with absent entries. Each replays as
//! tier 3 with the call the plan builds and stores, decided once in lowering.

use kc::plan::aten_call::{CallArg, Fill};
use kc::plan::types::{PlanTier, UnitCall};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/modern")
        .join(name)
}

/// Ingests a fixture (with its Execution Trace unless `without_et`), lowers and plans it.
fn planned(stem: &str, without_et: bool) -> (kc_ir::KernelGraph, kc::plan::Plan) {
    let opts = kc::ingest::IngestOptions {
        shapes: (!without_et).then(|| fixture(&format!("{stem}.et.json.gz"))),
        ..Default::default()
    };
    let (mut g, _) = kc::ingest::ingest(&[fixture(&format!("{stem}.pt.trace.json.gz"))], &opts)
        .unwrap_or_else(|e| panic!("{stem}: {e}"));
    kc::lower::lower(&mut g).unwrap();
    let p = kc::plan::build::build(&g);
    p.check().unwrap();
    (g, p)
}

fn share(p: &kc::plan::Plan) -> f64 {
    p.header.replayable_traced_ns as f64 / p.header.traced_gpu_ns as f64
}

fn unit_of<'a>(p: &'a kc::plan::Plan, op: &str) -> &'a kc::plan::types::PlanUnit {
    p.units
        .iter()
        .find(|u| matches!(&u.call, UnitCall::AtenOp { op: o, .. } if o == op))
        .unwrap_or_else(|| panic!("no tier-3 unit of {op}"))
}

#[test]
fn a_fused_adamw_step_replays_whole_with_its_empty_list() {
    let (_, p) = planned("llama2l_train_fusedadamw_b4s256", false);
    assert_eq!(share(&p), 1.0, "every traced GPU ns replayable");
    let u = unit_of(&p, "aten::_fused_adamw_");
    assert_eq!(u.tier, PlanTier::AtenOp);
    let call = p.aten_calls[u.id as usize]
        .as_ref()
        .expect("the stored call");
    assert_eq!(call.schema_name(), "aten::_fused_adamw_");
    let lists: Vec<usize> = call
        .args
        .iter()
        .filter_map(|a| match a {
            CallArg::TensorList(ts) => Some(ts.len()),
            _ => None,
        })
        .collect();
    // params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs (empty: amsgrad off), state_steps.
    assert_eq!(lists, vec![21, 21, 21, 21, 0, 21], "{lists:?}");
    // Without the Execution Trace, Kineto's empty list cannot be told from one recorded
    // without its tensors: lowering says so, and the plan agrees.
    let (g, p) = planned("llama2l_train_fusedadamw_b4s256", true);
    let refused = p
        .units
        .iter()
        .find(|u| u.label.contains("_fused_adamw_"))
        .expect("the optimizer's unit");
    assert_eq!(refused.tier, PlanTier::NotReplayable);
    let summary = kc::lower::summary::summarize(&g, &[]);
    assert!(summary
        .unreplayable
        .iter()
        .any(|r| r.reason.contains("_fused_adamw_") && r.reason.contains("argument 4")));
    assert!(share(&p) < 1.0);
}

#[test]
fn moe_routing_index_ops_take_their_indices_from_the_execution_trace() {
    let (_, p) = planned("mixtral2l_prefill_b2s256", false);
    assert_eq!(share(&p), 1.0);
    for op in ["aten::index", "aten::_index_put_impl_"] {
        let u = unit_of(&p, op);
        let call = p.aten_calls[u.id as usize].as_ref().unwrap();
        let self_dims = match &call.args[0] {
            CallArg::Tensor(t) => t.dims.clone(),
            other => panic!("{op}: {other:?}"),
        };
        match &call.args[1] {
            CallArg::OptionalTensorList(ts) => {
                assert!(!ts.is_empty());
                for (k, t) in ts.iter().enumerate() {
                    let t = t.as_ref().expect("every entry recorded");
                    // Indices within the dimension they index.
                    assert_eq!(t.fill, Fill::Indices { high: self_dims[k] }, "{op}");
                }
            }
            other => panic!("{op}: indices {other:?}"),
        }
    }
    // Kineto alone records the indices as nothing: not replayable, and said why.
    let (_, p) = planned("mixtral2l_prefill_b2s256", true);
    let u = p
        .units
        .iter()
        .find(|u| u.label.contains("aten::index") && u.tier == PlanTier::NotReplayable)
        .expect("index without the ET");
    match &u.call {
        UnitCall::NotReplayable { reason } => assert!(reason.contains("indices"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

/// A `Tensor?[]` with an absent entry, as PyTorch's Execution Trace writes `x[:, idx]`
/// (`aten::index(self, [None, idx])`): the absent dimension stays whole, the present entry
/// indexes dimension 1.
#[test]
fn an_optional_tensor_list_keeps_its_absent_entries() {
    let v: serde_json::Value = serde_json::json!({
        "shapes": [[8, 300], [[], [64]]],
        "strides": [[300, 1], [[], [1]]],
        "types": ["Tensor(c10::Half)", "GenericList[None,Tensor(long int)]"],
        "values": [[1, 2, 0, 2400, 2, "cuda:0"], ["<None>", [3, 4, 0, 64, 8, "cuda:0"]]]
    });
    let args = kc::ingest::args::typed_args(
        &v["shapes"],
        &v["strides"],
        &v["types"],
        &serde_json::json!(["", ""]),
    );
    match &args[1] {
        kc_ir::OpArg::OptionalTensorList(ts) => {
            assert!(ts[0].is_none());
            assert_eq!(ts[1].as_ref().unwrap().dims, vec![64]);
            assert_eq!(ts[1].as_ref().unwrap().dtype, kc_ir::DType::I64);
        }
        other => panic!("{other:?}"),
    }
    let aten: Vec<kc::plan::types::AtenArg> = {
        let p = kc_ir::UnitParams::Op {
            name: kc_ir::StrId(0),
            args: args.clone(),
        };
        let mut g = kc_ir::KernelGraph::default();
        g.strings.intern("aten::index");
        match kc::plan::calls::unit_call(&g, &p, &[0, 1]) {
            UnitCall::AtenOp { args, .. } => args,
            other => panic!("{other:?}"),
        }
    };
    let call = kc::plan::aten_call::build("aten::index", &aten, &[]).unwrap();
    match &call.args[1] {
        CallArg::OptionalTensorList(ts) => {
            assert!(ts[0].is_none());
            assert_eq!(ts[1].as_ref().unwrap().fill, Fill::Indices { high: 300 });
            assert_eq!(ts[1].as_ref().unwrap().slot, 1);
        }
        other => panic!("{other:?}"),
    }
}

/// The region of `p`'s memory image that holds arena offset `off`.
fn region_at(p: &kc::plan::Plan, off: u64) -> &kc::plan::types::Region {
    let df = p.dataflow.as_ref().expect("a memory image");
    df.regions
        .iter()
        .find(|r| r.offset <= off && off < r.offset + r.bytes.max(1))
        .unwrap_or_else(|| panic!("no region holds offset {off}"))
}

#[test]
fn a_fused_adamw_steps_state_starts_where_the_step_stays_finite() {
    use kc::plan::types::RegionInit;
    let (_, p) = planned("llama2l_train_fusedadamw_b4s256", false);
    let df = p.dataflow.as_ref().unwrap();
    let u = unit_of(&p, "aten::_fused_adamw_");
    // Operands in argument order: params, grads, exp_avgs, exp_avg_sqs, state_steps (21
    // each; max_exp_avg_sqs is empty).
    let (mut moments, mut steps, mut params) = (0, 0, 0);
    for (i, s) in p.steps.iter().enumerate() {
        if s.unit != u.id {
            continue;
        }
        for (k, off) in df.steps[i].operands.iter().enumerate() {
            let Some(off) = off else { continue };
            let init = region_at(&p, *off).init;
            match k / 21 {
                0 => {
                    assert!(
                        matches!(init, RegionInit::Weight { .. }),
                        "param {k}: {init:?}"
                    );
                    params += 1;
                }
                2 | 3 => {
                    assert_eq!(init, RegionInit::Zeros, "moment {k}");
                    moments += 1;
                }
                4 => {
                    assert_eq!(init, RegionInit::Ones, "step count {k}");
                    steps += 1;
                }
                _ => {}
            }
        }
    }
    assert!(
        params > 0 && moments > 0,
        "{params} params, {moments} moments placed"
    );
    eprintln!("{params} parameters, {moments} moments, {steps} step counts placed");
}

#[test]
fn results_the_replay_allocates_are_read_from_regions_of_their_own() {
    use kc::plan::aten_call::Outputs;
    use kc::plan::types::RegionKind;
    let (_, p) = planned("llama2l_train_fusedadamw_b4s256", false);
    let df = p.dataflow.as_ref().unwrap();
    let allocates = |step: u32| {
        let u = p.steps[step as usize].unit as usize;
        matches!(
            p.aten_calls[u].as_ref().map(|c| &c.outputs),
            Some(Outputs::Allocates)
        )
    };
    let detached: Vec<_> = df
        .regions
        .iter()
        .filter(|r| r.kind == RegionKind::Detached)
        .collect();
    // cuDNN attention forward and backward, and embedding_dense_backward, allocate.
    assert!(detached.len() >= 15, "{} detached results", detached.len());
    for r in &detached {
        assert!(allocates(r.first_step), "made by step {}", r.first_step);
        let readers: Vec<usize> = df
            .steps
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.operands
                    .iter()
                    .flatten()
                    .any(|&o| r.offset <= o && o < r.offset + r.bytes)
            })
            .map(|(i, _)| i)
            .collect();
        assert!(!readers.is_empty(), "a detached region nobody reads");
        assert!(
            readers
                .iter()
                .all(|&i| i as u32 > r.first_step && i as u32 <= r.last_step),
            "readers {readers:?} of a result made at step {}",
            r.first_step
        );
    }
    // Each holds values in the element type its readers use.
    assert!(detached
        .iter()
        .all(|r| r.dtype != kc::plan::types::ElemType::Unknown));
}

/// An optimizer step writes every tensor of its mutable lists (the schema's `Tensor(a!)[]`:
/// parameters, gradients, both moments), so the parameters it updates are storages the
/// replay writes. The forward and backward passes read them before the update: those reads
/// take regions of their own that no step writes (each replay reads the same weights, as
/// each iteration of the model read its own), and the state the step updates in place keeps
/// its bytes for the whole replay (no activation packed over a moment).
#[test]
fn an_optimizer_steps_parameters_are_read_before_the_update_from_regions_of_their_own() {
    use kc::plan::types::{Region, RegionKind};
    let (g, p) = planned("llama2l_train_fusedadamw_b4s256", false);
    let operands = |unit: u32| {
        let u = &g.units[unit as usize];
        kc::lower::dataflow::unit_operands(g.str(u.label), &u.params)
    };
    let adamw = unit_of(&p, "aten::_fused_adamw_");
    let writes: Vec<bool> = operands(adamw.id).iter().map(|o| o.writes).collect();
    // params, grads, exp_avgs, exp_avg_sqs written (21 each); state_steps only read.
    assert_eq!(writes.len(), 105);
    assert!(writes[..84].iter().all(|&w| w), "{writes:?}");
    assert!(writes[84..].iter().all(|&w| !w), "{writes:?}");

    let df = p.dataflow.as_ref().unwrap();
    let carried: Vec<&Region> = df
        .regions
        .iter()
        .filter(|r| r.kind == RegionKind::CarriedIn)
        .collect();
    assert!(carried.len() >= 21, "{} carried regions", carried.len());
    let first_update = p.steps.iter().position(|s| s.unit == adamw.id).unwrap();
    let inside = |r: &Region, off: u64| r.offset <= off && off < r.offset + r.bytes;
    let mut reads = 0;
    for (i, s) in p.steps.iter().enumerate() {
        let ops = operands(s.unit);
        for (k, off) in df.steps[i].operands.iter().enumerate() {
            let Some(off) = *off else { continue };
            if carried.iter().any(|r| inside(r, off)) {
                assert!(!ops[k].writes, "step {i} writes a carried region");
                assert!(i < first_update, "step {i} reads one after the update");
                reads += 1;
            }
        }
    }
    assert!(reads >= 21, "{reads} carried reads");

    // The optimizer's moments: regions no other region shares bytes with.
    let mut moments = 0;
    for (i, _) in p
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.unit == adamw.id)
    {
        for off in df.steps[i].operands[42..84].iter().flatten() {
            let r = region_at(&p, *off);
            let shared = df
                .regions
                .iter()
                .filter(|q| *q != r)
                .any(|q| q.offset < r.offset + r.bytes && r.offset < q.offset + q.bytes);
            assert!(!shared, "a moment at {off} shares its bytes");
            moments += 1;
        }
    }
    assert!(moments >= 42, "{moments} moments placed");

    // Left shared, the same reads read the storages the update writes.
    let shared = kc::plan::build::build_with(&g, kc::plan::build::CarriedIn::Shared);
    let sdf = shared.dataflow.as_ref().unwrap();
    assert!(sdf.regions.iter().all(|r| r.kind != RegionKind::CarriedIn));
    let carried_bytes: u64 = carried.iter().map(|r| r.bytes).sum();
    assert!(sdf.arena_bytes + carried_bytes <= df.arena_bytes + 512 * carried.len() as u64);
}

/// Kineto records a list's tensors without their type; with the Execution Trace naming them,
/// a `_foreach_*` op's tensors are placed in the memory image like any other (they were kept
/// on private buffers as if they were integers, so a foreach optimizer updated copies).
#[test]
fn a_foreach_ops_list_tensors_are_placed_in_the_memory_image() {
    let (_, p) = planned("llama2l_train_fusedadamw_b4s256", false);
    let df = p.dataflow.as_ref().unwrap();
    let u = unit_of(&p, "aten::_foreach_add_");
    let (mut placed, mut all) = (0, 0);
    for (i, s) in p.steps.iter().enumerate().filter(|(_, s)| s.unit == u.id) {
        assert_eq!(
            df.steps[i].operands.len(),
            p.units[s.unit as usize].slots.len()
        );
        placed += df.steps[i].operands.iter().flatten().count();
        all += df.steps[i].operands.len();
    }
    assert!(all > 0);
    assert_eq!(placed, all, "{placed} of {all} list tensors placed");
}

/// A foreach AdamW allocates its denominators (`_foreach_sqrt`) and bias corrections
/// (`_foreach_pow`), updates them in place (`div_`, `_foreach_add_`, `_foreach_sub_`) and
/// divides by them (`_foreach_addcdiv_`). Every one of those reads is bound to the result
/// the earlier step allocated: the in-place updates' own results (`div_` returns `self`)
/// must not end it, or the last readers read whatever the forward pass left in the block
/// the allocator had reused (the image went 43 % non-finite).
#[test]
fn a_foreach_optimizers_allocated_results_are_read_where_they_were_allocated() {
    let (_, p) = planned("qwen2_2l_train_foreachadamw_b4s256", false);
    let label = |step: u32| p.units[p.steps[step as usize].unit as usize].label.as_str();
    let bound = |step: u32, k: u32| {
        p.bound_reads
            .iter()
            .find(|b| b.step == step && b.operand == k)
            .map(|b| label(b.producer_step))
    };
    let sqrt = unit_of(&p, "aten::_foreach_sqrt");
    let addcdiv = unit_of(&p, "aten::_foreach_addcdiv_");
    let mut checked = 0;
    for (i, s) in p.steps.iter().enumerate() {
        let i = i as u32;
        if s.unit == addcdiv.id {
            // params, exp_avgs, then the denominators the sqrt allocated.
            let n = addcdiv.slots.len() as u32 / 3;
            for k in 2 * n..3 * n {
                assert_eq!(
                    bound(i, k),
                    Some("aten::_foreach_sqrt"),
                    "step {i} operand {k}"
                );
                checked += 1;
            }
        }
        if label(i) == "aten::_foreach_add_" && bound(i, 0).is_some() {
            // The `+ eps` on the denominators, after their `div_`s.
            for k in 0..p.units[s.unit as usize].slots.len() as u32 {
                assert_eq!(
                    bound(i, k),
                    Some("aten::_foreach_sqrt"),
                    "step {i} operand {k}"
                );
                checked += 1;
            }
        }
    }
    let iterations = p.steps.iter().filter(|s| s.unit == sqrt.id).count();
    assert_eq!(iterations, 3);
    assert_eq!(checked, 2 * iterations * sqrt.slots.len());
    // The readers of the bias corrections `_foreach_pow` allocated, sqrt_ and the div_s
    // that follow it included, read them too.
    assert!(p
        .bound_reads
        .iter()
        .any(|b| label(b.producer_step) == "aten::_foreach_pow" && label(b.step) == "aten::div_"));
}

/// Where the Execution Trace's record replaces Kineto's (the fused optimizer's lists), the
/// scalars stay Kineto's: the ET rounds AdamW's eps of 1e-8 to 0.0, and the optimizer then
/// divides zero by zero on every parameter row without a gradient.
#[test]
fn a_fused_optimizers_eps_keeps_the_traces_own_value() {
    let (_, p) = planned("llama2l_train_fusedadamw_b4s256", false);
    let u = unit_of(&p, "aten::_fused_adamw_");
    let call = p.aten_calls[u.id as usize].as_ref().unwrap();
    let floats: Vec<f64> = call
        .args
        .iter()
        .filter_map(|a| match a {
            CallArg::Float(x) => Some(*x),
            _ => None,
        })
        .collect();
    // lr, beta1, beta2, weight_decay, eps.
    assert_eq!(floats.len(), 5, "{floats:?}");
    assert_eq!(floats[4], 1e-8, "{floats:?}");
    assert_eq!(floats[2], 0.999);
}

/// Kineto records a foreach op's list tensors with shapes but no element types; the ET's
/// types size them (at one byte an element, an optimizer's moments overlapped one another
/// in the memory image and its square roots read negative values).
#[test]
fn a_foreach_ops_list_tensors_take_their_types_from_the_execution_trace() {
    let (_, p) = planned("qwen2_2l_train_foreachadamw_b4s256", false);
    let u = unit_of(&p, "aten::_foreach_sqrt");
    let call = p.aten_calls[u.id as usize].as_ref().unwrap();
    let CallArg::TensorList(ts) = &call.args[0] else {
        panic!("{:?}", call.args[0])
    };
    assert!(ts
        .iter()
        .all(|t| t.dtype == kc::plan::types::ElemType::BF16));
    let first = &ts[0];
    let elems: i64 = first.dims.iter().product();
    assert_eq!(p.buffers[first.slot as usize].bytes, elems as u64 * 2);
    // No two tensors of a step's list overlap in the image.
    let df = p.dataflow.as_ref().unwrap();
    for (i, s) in p.steps.iter().enumerate().filter(|(_, s)| s.unit == u.id) {
        let mut spans: Vec<(u64, u64)> = df.steps[i]
            .operands
            .iter()
            .zip(&p.units[s.unit as usize].slots)
            .filter_map(|(o, &slot)| o.map(|o| (o, o + p.buffers[slot as usize].bytes)))
            .collect();
        spans.sort_unstable();
        assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0), "step {i}");
    }
}

/// The GEMM back end asks cuBLASLt for a bias GEMM's algorithm with the operands'
/// alignments, as PyTorch's `gemm_and_bias` does: on the Qwen2 step (its q/k/v projections
/// carry a bias), every epilogue GEMM unit gets the least alignment of A, B, C and the bias
/// over the places its steps take in the image, and nothing else does. Asked without them
/// (cuBLASLt assumes 256 bytes) and with 64 MiB of workspace, the heuristic had handed a
/// ViT-B/16's bias GEMMs the traced kernels with another launch geometry (39 of 381 launches).
#[test]
fn bias_gemms_are_asked_for_with_the_alignments_of_their_places() {
    use kc::plan::types::Epilogue;
    let (_, p) = planned("qwen2_2l_train_foreachadamw_b4s256", false);
    let al = kc_exec::torch_blas::lt_operand_alignments(&p);
    let lt_units: Vec<u32> = p
        .units
        .iter()
        .filter(|u| matches!(&u.call, UnitCall::Gemm(g) if g.epilogue != Epilogue::None))
        .map(|u| u.id)
        .collect();
    assert!(!lt_units.is_empty());
    let mut keys: Vec<u32> = al.keys().copied().collect();
    keys.sort();
    assert_eq!(keys, lt_units);
    let df = p.dataflow.as_ref().unwrap();
    for (&id, a) in &al {
        let u = &p.units[id as usize];
        let UnitCall::Gemm(g) = &u.call else {
            unreachable!()
        };
        // The least alignment of each operand's places, found here step by step.
        let mut want = [256u32; 4];
        for (s, places) in p.steps.iter().zip(&df.steps) {
            if s.unit != id {
                continue;
            }
            for (i, slot) in [Some(g.a), Some(g.b), Some(g.c), g.bias]
                .into_iter()
                .enumerate()
            {
                let k = slot.and_then(|x| u.slots.iter().position(|&y| y == x));
                if let Some(off) = k.and_then(|k| places.operands[k]) {
                    want[i] = want[i].min(1 << off.trailing_zeros().min(8));
                }
            }
        }
        assert_eq!(*a, want, "unit {id}");
        assert!(a.iter().all(|x| x.is_power_of_two() && *x <= 256));
    }
}

/// The image packs tensors whose lives do not overlap into the same bytes, so after one
/// pass of every step most bytes a step read hold another tensor's values: on this
/// LLaMA-shaped training step 76.7 % of the read bytes (session 29). The spans a unit is
/// given back are those bytes, each once, and a byte no later step writes is never among
/// them.
#[test]
fn most_bytes_a_training_steps_steps_read_are_written_again_later_in_the_pass() {
    use kc::plan::step_values::{reads_rewritten_later, step_spans, unit_step_values};
    let (_, p) = planned("llama2l_train_fusedadamw_b4s256", false);
    let df = p.dataflow.as_ref().expect("the ET gives a memory image");
    let spans = step_spans(&p, df);
    let rewritten = reads_rewritten_later(&spans);
    let read: u64 = spans.iter().flat_map(|s| &s.reads).map(|r| r.1).sum();
    let again: u64 = rewritten.iter().flatten().map(|r| r.1).sum();
    let share = again as f64 / read as f64;
    assert!((0.76..0.78).contains(&share), "{share}");
    // The last step's reads are written by no step after it.
    assert!(rewritten.last().unwrap().is_empty());
    // The spans of the unit with the most steps: within its steps' rewritten reads, no
    // byte twice.
    let mut steps_of = std::collections::BTreeMap::<u32, Vec<u32>>::new();
    for (i, s) in p.steps.iter().enumerate() {
        steps_of.entry(s.unit).or_default().push(i as u32);
    }
    let steps = steps_of.into_values().max_by_key(Vec::len).unwrap();
    assert!(steps.len() > 10);
    let v = unit_step_values(&rewritten, &steps);
    assert!(v.bytes() > 0 && v.shared_bytes > 0);
    let mut seen: Vec<(u64, u64)> = v.spans.iter().map(|&(_, o, l)| (o, o + l)).collect();
    seen.sort();
    assert!(
        seen.windows(2).all(|w| w[0].1 <= w[1].0),
        "a byte given twice"
    );
    for &(st, o, l) in &v.spans {
        assert!(rewritten[st as usize]
            .iter()
            .any(|&(ro, rl)| o >= ro && o + l <= ro + rl));
    }
}

/// Where the model leaves each read in L2 (session 51), on the LLaMA-shaped training step:
/// a GEMM's operands lie in the memory image but for a read bound to a tier-3 result (12
/// of its 138 GEMM steps), the loss's integer targets do not (a tensor of its own), and
/// reads the step just before wrote lie at no distance, dirty.
#[test]
fn the_model_cache_state_knows_which_operands_the_image_holds_and_how_far_each_read_lies() {
    use kc::plan::cache_state::{operands_outside_image, ModelTouches};
    use kc::plan::step_values::step_spans;
    let (_, p) = planned("llama2l_train_fusedadamw_b4s256", false);
    let df = p.dataflow.as_ref().expect("the ET gives a memory image");
    let touches = ModelTouches::of(&step_spans(&p, df));
    let (mut gemm_steps, mut gemm_bound, mut loss_outside, mut near_dirty) = (0, 0, 0, 0);
    for (st, s) in p.steps.iter().enumerate() {
        let u = &p.units[s.unit as usize];
        let outside = operands_outside_image(&p, df, u, st as u32);
        // Never more than the step's operands: its call's tensors (tier 3) or its slots.
        let operands = match p.aten_calls.get(u.id as usize) {
            Some(Some(call)) => call.args.iter().map(|a| a.tensors().len()).sum(),
            _ => u.slots.len(),
        };
        assert!(outside as usize <= operands, "step {st}");
        if matches!(u.call, kc::plan::types::UnitCall::Gemm(_)) {
            // A GEMM's operands lie in the image but for a read bound to a tier-3 result.
            let bound = p.bound_reads.iter().filter(|b| b.step == st as u32).count();
            assert_eq!(outside as usize, bound, "GEMM step {st} ({})", u.label);
            gemm_steps += 1;
            gemm_bound += bound;
        }
        if u.label == "aten::nll_loss_forward" {
            loss_outside += outside;
        }
        let reads = touches.reads_at(st as u32, 1 << 30);
        near_dirty += reads
            .iter()
            .filter(|r| r.bytes_between == 0 && r.last_touch_wrote)
            .count();
    }
    assert!(
        gemm_steps > 10 && gemm_bound < gemm_steps,
        "{gemm_steps} {gemm_bound}"
    );
    assert!(loss_outside > 0);
    assert!(near_dirty > 10, "{near_dirty}");
}

/// Where the model leaves an operand the image does not hold (session 52), on the
/// LLaMA-shaped training step: a read the plan binds to an earlier step's result lies as
/// far as the bytes the steps between touched (unless the executor keeps recorded values
/// in its place), and a tensor of its own that no step makes, an iteration away.
#[test]
fn an_operand_outside_the_image_is_as_far_as_its_producer_or_an_iteration() {
    use kc::plan::cache_state::{held_operand_distance, ModelTouches};
    use kc::plan::step_values::step_spans;
    let (_, p) = planned("llama2l_train_fusedadamw_b4s256", false);
    let df = p.dataflow.as_ref().expect("the ET gives a memory image");
    let touches = ModelTouches::of(&step_spans(&p, df));
    let cap = u64::MAX;
    // The bytes every step but the first touched, walking once round from it.
    let iteration = touches.bytes_between(0, 0, cap);
    let (mut bound, mut near) = (0, 0);
    for b in &p.bound_reads {
        let u = &p.units[p.steps[b.step as usize].unit as usize];
        let slot = u.slots[b.operand as usize];
        let d = held_operand_distance(&p, df, &touches, u, b.step, slot, cap);
        let from_producer = touches.bytes_between(b.producer_step, b.step, cap);
        // The producer's distance, or an iteration where the executor keeps the tensor's
        // recorded values in place of the result.
        assert!(
            d == from_producer || d >= iteration,
            "step {} operand {}: {d} against {from_producer}",
            b.step,
            b.operand
        );
        bound += 1;
        near += usize::from(d < 60 << 20);
    }
    assert!(bound > 10 && near > 0, "{bound} bound reads, {near} near");
    // A tier-3 tensor outside the image that no step makes (an input, a constant): an
    // iteration away.
    let mut unmade = 0;
    for (st, s) in p.steps.iter().enumerate() {
        let st = st as u32;
        let u = &p.units[s.unit as usize];
        let Some(Some(call)) = p.aten_calls.get(u.id as usize) else {
            continue;
        };
        for t in call.args.iter().flat_map(|a| a.tensors()) {
            let placed = df.steps[st as usize].operand_of(u, t.slot).is_some();
            let made = p
                .bound_reads
                .iter()
                .any(|b| b.step == st && u.slots.get(b.operand as usize) == Some(&t.slot));
            if (placed && kc::plan::aten_call::placeable(t)) || made {
                continue;
            }
            assert!(held_operand_distance(&p, df, &touches, u, st, t.slot, cap) >= iteration);
            unmade += 1;
        }
    }
    assert!(unmade > 0);
    assert!(iteration > 60 << 20, "the step touches {iteration} bytes");
}

/// A step's code lies as far as the nearest step before it that launched one of its unit's
/// kernels: nothing between where the step before shares one, an iteration's bytes at most.
#[test]
fn a_steps_code_is_as_far_as_the_last_step_that_ran_one_of_its_kernels() {
    use kc::plan::cache_state::{code_distance, ModelTouches};
    use kc::plan::step_values::step_spans;
    let (_, p) = planned("llama2l_train_fusedadamw_b4s256", false);
    let df = p.dataflow.as_ref().expect("the ET gives a memory image");
    let touches = ModelTouches::of(&step_spans(&p, df));
    let cap = u64::MAX;
    let n = p.steps.len().min(df.steps.len());
    let kernels = |s: usize| &p.units[p.steps[s].unit as usize].kernels;
    let (mut next_to, mut far) = (0, 0);
    for s in 0..n {
        let d = code_distance(&p, &touches, s as u32, cap);
        // Never farther than the step's own previous iteration.
        assert!(
            d <= touches.bytes_between(s as u32, s as u32, cap),
            "step {s}"
        );
        let before = (s + n - 1) % n;
        if kernels(before).iter().any(|k| kernels(s).contains(k)) {
            assert_eq!(d, 0, "step {s} follows a step with one of its kernels");
            next_to += 1;
        } else {
            // Another step lies between: count those more than an H200's L2 away.
            far += usize::from(d >= 60 << 20);
        }
    }
    assert!(
        next_to > 0 && far > 0,
        "{next_to} steps after their own kernels, {far} far"
    );
    assert_eq!(code_distance(&p, &touches, n as u32 + 5, 7), 7);
}

/// The steps leading up to each step (`--model-cache-lead-ins`, the units after their
/// lead-ins): on its own stream, ending with the step just before it, back to the nearest
/// of the last four that shares a place of the image with it; a step with an in-place
/// integer writer among them reads its stand-ins, the others their lead-ins' results.
#[test]
fn a_steps_lead_ins_end_just_before_it_and_reach_back_to_a_place_it_shares() {
    use kc::plan::schedule::{lead_ins_at_places, step_writes_integers};
    let (_, p) = planned("llama2l_train_fusedadamw_b4s256", false);
    let df = p.dataflow.as_ref().expect("the ET gives a memory image");
    let leads = lead_ins_at_places(&p, 0, df, |_| true, 4);
    let places = |s: u32| -> Vec<u64> {
        let st = &df.steps[s as usize];
        st.operands
            .iter()
            .flatten()
            .copied()
            .chain(st.outputs.iter().flatten().map(|o| o.0))
            .collect()
    };
    let shares = |a: u32, b: u32| places(a).iter().any(|x| places(b).contains(x));
    let mut reaching_back = 0;
    for (&s, lead) in &leads {
        assert!(!lead.is_empty() && lead.len() <= 4, "step {s}: {lead:?}");
        assert!(lead.windows(2).all(|w| w[0] < w[1]), "step {s}: {lead:?}");
        assert_eq!(*lead.last().unwrap(), s - 1, "step {s} (one stream)");
        // The first lead-in shares a place with the step, or none of them does and it is
        // the one step before.
        if lead.len() > 1 {
            assert!(shares(lead[0], s), "step {s}: {lead:?}");
            assert!(!lead[1..lead.len() - 1].iter().any(|&l| shares(l, s)));
            reaching_back += 1;
        }
    }
    assert_eq!(
        leads.len(),
        p.steps.len() - 1,
        "every step but the first has lead-ins"
    );
    assert!(reaching_back > 0);
    // The training step's in-place integer writers (its optimizer's counters, its
    // conversions into int64) and the steps that would run one before them.
    let writers: Vec<u32> = (0..p.steps.len() as u32)
        .filter(|&s| step_writes_integers(&p, s))
        .collect();
    let guarded = leads
        .values()
        .filter(|l| l.iter().any(|&x| step_writes_integers(&p, x)))
        .count();
    // Each writer but a last step is the last lead-in of the step after it.
    assert!(
        !writers.is_empty() && guarded >= writers.len() - 1,
        "{writers:?}: {guarded}"
    );
    assert!(!step_writes_integers(&p, p.steps.len() as u32 + 3));
}
