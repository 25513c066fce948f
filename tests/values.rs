//! `kc ingest --values` on a committed MoE capture (fixtures/values): the values the
//! model's integer and boolean tensors held reach the op inputs that read them, the plan
//! fills exactly those tier-3 tensors with them (per step, and per unit alone), and a
//! routing op's internal copies replay once, inside the op.

use kc_ir::{DType, NodeKind};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/values")
        .join(name)
}

fn ingest(values: Option<PathBuf>) -> Result<kc_ir::KernelGraph, String> {
    let opts = kc::ingest::IngestOptions {
        shapes: Some(fixture("mixtral2l_b2s256.et.json.gz")),
        values,
        ..Default::default()
    };
    kc::ingest::ingest(&[fixture("mixtral2l_b2s256.pt.trace.json.gz")], &opts)
        .map(|(g, _)| g)
        .map_err(|e| e.to_string())
}

fn i64s(b: &[u8]) -> Vec<i64> {
    b.chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn the_routing_values_reach_the_ops_that_read_them() {
    let g = ingest(Some(fixture("mixtral2l_b2s256.values.bin"))).unwrap();
    let rv = &g.recorded_values;
    assert_eq!(rv.source, "mixtral2l_b2s256.values.bin");
    let named = |op: &str| {
        rv.inputs
            .iter()
            .filter(|r| g.str(g.op(r.op).name) == op)
            .collect::<Vec<_>>()
    };
    // Each of the 3 iterations sorts its 2 layers' 1024 expert choices.
    let sorts: Vec<_> = named("aten::sort")
        .into_iter()
        .filter(|r| r.input == 0 && r.dims == [1024])
        .collect();
    assert!(sorts.len() >= 6, "{}", sorts.len());
    for r in &sorts {
        assert_eq!(r.dtype, DType::I64);
        let ids = i64s(&rv.blobs[r.blob as usize]);
        // Expert ids of 8 experts, as the router chose them: not drawn uniformly (the
        // traced per-expert GEMMs take 11 to 296 tokens).
        assert!(ids.iter().all(|&e| (0..8).contains(&e)));
        let mut count = [0usize; 8];
        for &e in &ids {
            count[e as usize] += 1;
        }
        assert!(
            count.iter().max().unwrap() > &(2 * count.iter().min().unwrap()),
            "{count:?}"
        );
    }
    // The sentinel mask (expert id >= 8) is false everywhere in the model's run, where
    // drawn values would set half of it.
    let masks: Vec<_> = named("aten::masked_fill_")
        .into_iter()
        .filter(|r| r.dtype == DType::Bool)
        .collect();
    assert!(!masks.is_empty());
    for r in masks {
        assert!(rv.blobs[r.blob as usize].iter().all(|&b| b == 0));
    }
    // Iterations saw the same values: their tensors share blobs.
    assert!(rv.blobs.len() * 2 < rv.inputs.len());
}

#[test]
fn the_plan_fills_those_tensors_per_step_and_per_unit() {
    let mut g = ingest(Some(fixture("mixtral2l_b2s256.values.bin"))).unwrap();
    kc::lower::lower(&mut g).unwrap();
    let plan = kc::plan::build::build(&g);
    let v = &plan.values;
    assert_eq!(v.steps.len(), plan.steps.len());
    let (tensors, steps) = v.step_counts();
    assert!(tensors >= 48 && steps >= 48, "{tensors} {steps}");
    // Every filled tensor is one of its step's tier-3 call, with exactly its bytes.
    let mut host_scalars = 0;
    for (i, list) in v.steps.iter().enumerate() {
        let unit = plan.steps[i].unit;
        for sv in list {
            let call = plan.aten_calls[unit as usize].as_ref().expect("tier 3");
            let t = call
                .args
                .iter()
                .flat_map(|a| match a {
                    kc::plan::aten_call::CallArg::Tensor(t) => vec![t],
                    kc::plan::aten_call::CallArg::TensorList(l) => l.iter().collect(),
                    kc::plan::aten_call::CallArg::OptionalTensorList(l) => {
                        l.iter().flatten().collect()
                    }
                    _ => vec![],
                })
                .find(|t| t.slot == sv.slot)
                .expect("a tensor of the call");
            let size = kc_ir::RecordedValues::expected_bytes(
                match t.dtype {
                    kc::plan::types::ElemType::I64 => DType::I64,
                    kc::plan::types::ElemType::I32 => DType::I32,
                    kc::plan::types::ElemType::Bool => DType::Bool,
                    other => panic!("values for a {other:?} tensor"),
                },
                &t.dims,
            );
            assert_eq!(size, Some(v.blobs[sv.blob as usize].len() as u64));
            // Only values that steer kernels: indices, masks, the data of value-dependent
            // ops (the routing's sort and histc), and the Python numbers an op received;
            // not the routing's arithmetic (`add`, `floor_divide`, `cumsum`, `copy_`),
            // which the replay computes.
            assert!(
                t.host_scalar
                    || matches!(
                        t.fill,
                        kc::plan::aten_call::Fill::Indices { .. }
                            | kc::plan::aten_call::Fill::Offsets { .. }
                            | kc::plan::aten_call::Fill::Bool
                    )
                    || ["sort", "histc"].contains(&call.op.as_str()),
                "{} takes values for {:?} data",
                call.op,
                t.fill
            );
            if t.host_scalar {
                host_scalars += 1;
            }
        }
    }
    // The Python numbers the routing's arithmetic received (`floor_divide` by the number of
    // experts, ...) are the model's, not the 1 that stands in for an unrecorded one.
    assert!(host_scalars > 0);
    let labels: std::collections::BTreeSet<&str> = v
        .steps
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, _)| plan.units[plan.steps[i].unit as usize].label.as_str())
        .collect();
    for op in [
        "aten::sort",
        "aten::histc",
        "aten::index",
        "aten::masked_fill_",
    ] {
        assert!(labels.contains(op), "{op} not filled: {labels:?}");
    }
    // Plans keep them through a file, and say so.
    let bytes = kc::plan::encode(&plan).unwrap();
    let back = kc::plan::decode(&bytes, "p").unwrap();
    assert_eq!(&back.values, v);
    let text = kc::plan::show::render_text(&kc::plan::show::summarize(&back, bytes.len() as u64));
    assert!(
        text.contains("recorded values (mixtral2l_b2s256.values.bin)"),
        "{text}"
    );
    // Without the file, nothing is filled and the plan says how integers are drawn.
    let mut g = ingest(None).unwrap();
    kc::lower::lower(&mut g).unwrap();
    let plan = kc::plan::build::build(&g);
    assert!(plan.values.is_empty());
    let text = kc::plan::show::render_text(&kc::plan::show::summarize(&plan, 0));
    assert!(text.contains("recorded values: none"), "{text}");
}

#[test]
fn a_routing_ops_own_copies_replay_once_inside_it() {
    let mut g = ingest(None).unwrap();
    kc::lower::lower(&mut g).unwrap();
    // `sort` copies its input three times (8 KiB each) before sorting: those copies are in
    // the sort's tier-3 instance, whose replay makes them, not copies of their own.
    let sort = g
        .units
        .iter()
        .find(|u| g.str(u.label) == "aten::sort")
        .expect("a sort unit");
    assert_eq!(sort.tier, kc_ir::Tier::Op);
    let copies = sort
        .kernels
        .iter()
        .filter(|k| g.str(**k).starts_with("Memcpy DtoD"))
        .count();
    assert_eq!(copies, 3);
    for id in g.graph.node_indices() {
        if let NodeKind::Memcpy { bytes: 8192, .. } = g.graph[id].kind {
            assert_eq!(g.classification(id).unwrap().tier, kc_ir::Tier::Op);
        }
    }
}

#[test]
fn values_need_their_execution_trace_and_bad_files_are_refused() {
    let opts = kc::ingest::IngestOptions {
        values: Some(fixture("mixtral2l_b2s256.values.bin")),
        ..Default::default()
    };
    let e = kc::ingest::ingest(&[fixture("mixtral2l_b2s256.pt.trace.json.gz")], &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--shapes"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.values.bin");
    let mut bytes = std::fs::read(fixture("mixtral2l_b2s256.values.bin")).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&bad, &bytes).unwrap();
    let e = ingest(Some(bad)).unwrap_err();
    assert!(
        e.contains("bad.values.bin") && e.contains("tensor entry"),
        "{e}"
    );
}

/// T5's relative-position buckets, from a real CUDA-graph capture (fixtures/values/t5_graph,
/// its values file cut to the Python numbers the ops received): the buckets are
/// `0 + (rel > 0) × 16 + where(rel < 8, rel, min(8 + ..., 15))`, gathered from a 32-row bias.
/// The plan gives those numbers the model's values (16, 0, 8), not the 1 that stands in for
/// an unrecorded one: with 1 beside the buckets' recorded starting sum, T5's graph summed
/// 16 + 1 + 15 = 32 and its gather faulted on the H200 (session 19).
#[test]
fn the_python_numbers_an_op_received_take_the_values_the_model_gave_them() {
    let dir = fixture("t5_graph");
    let opts = kc::ingest::IngestOptions {
        shapes: Some(dir.join("t5_graph_capture.et.json.gz")),
        capture: Some(dir.join("t5_graph_capture.pt.trace.json.gz")),
        values: Some(dir.join("t5_graph_capture.values.bin")),
        ..Default::default()
    };
    let (mut g, _) = kc::ingest::ingest(&[dir.join("t5_graph.pt.trace.json.gz")], &opts).unwrap();
    kc::lower::lower(&mut g).unwrap();
    let plan = kc::plan::build::build(&g);
    // The steps before the first gather over 32 buckets: the encoder's bias.
    let gather = plan
        .steps
        .iter()
        .position(|s| {
            plan.aten_calls[s.unit as usize].as_ref().is_some_and(|c| {
                c.op == "gather"
                    && c.args.iter().any(|a| {
                        matches!(a, kc::plan::aten_call::CallArg::Tensor(t)
                            if t.fill == kc::plan::aten_call::Fill::Indices { high: 32 })
                    })
            })
        })
        .expect("the bias gather");
    let mut numbers = Vec::new();
    for (i, step) in plan.steps[..gather].iter().enumerate() {
        let Some(call) = plan.aten_calls[step.unit as usize].as_ref() else {
            continue;
        };
        for a in &call.args {
            let kc::plan::aten_call::CallArg::Tensor(t) = a else {
                continue;
            };
            if !t.host_scalar || t.dtype != kc::plan::types::ElemType::I64 {
                continue;
            }
            let held = plan.values.for_slot(step.unit, Some(i as u32), t.slot);
            let held = held.expect("every integer Python number of the buckets is recorded");
            numbers.push((call.op.clone(), i64s(held)[0]));
        }
    }
    for want in [("mul", 16), ("add", 0), ("div", 8), ("mul", 8), ("add", 8)] {
        assert!(
            numbers.iter().any(|(op, v)| (op.as_str(), *v) == want),
            "{want:?} in {numbers:?}"
        );
    }
    assert!(numbers.iter().all(|(_, v)| *v != 1), "{numbers:?}");
}

/// BERT's embeddings gather its `token_type_ids` buffer (zeros, never written in the step)
/// at the positions, and the gathered values index a two-row embedding. The buffer is not
/// an index where it is read, so as data the model brought in it keeps the model's zeros;
/// drawn small integers indexed past row 1, and the graph's launches faulted on the GPU
/// (session 20, call 5). The positions, indices there, keep theirs too. The plan also draws
/// the buffer as indices below the table (`plan::index_bounds`, the case without values),
/// so the values are assigned again here with the buffer drawn as plain integers: it keeps
/// them as data no op produced, not as an index.
#[test]
fn data_no_op_produced_takes_the_values_the_model_brought_in() {
    let dir = fixture("bert_train");
    let opts = kc::ingest::IngestOptions {
        shapes: Some(dir.join("bert_train.et.json.gz")),
        values: Some(dir.join("bert_train.values.bin")),
        ..Default::default()
    };
    let (mut g, _) = kc::ingest::ingest(&[dir.join("bert_train.pt.trace.json.gz")], &opts).unwrap();
    kc::lower::lower(&mut g).unwrap();
    let plan = kc::plan::build::build(&g);
    let mut buffers = 0;
    for (i, step) in plan.steps.iter().enumerate() {
        let Some(call) = plan.aten_calls[step.unit as usize].as_ref() else {
            continue;
        };
        if call.op != "gather" {
            continue;
        }
        let tensors: Vec<_> = call
            .args
            .iter()
            .filter_map(|a| match a {
                kc::plan::aten_call::CallArg::Tensor(t) => Some(t),
                _ => None,
            })
            .collect();
        // The buffer's gather: integer data [1, 512] at the positions [1, 256].
        let [data, index] = tensors[..] else { continue };
        if data.dtype != kc::plan::types::ElemType::I64 || data.dims != [1, 512] {
            continue;
        }
        let held = plan.values.for_slot(step.unit, Some(i as u32), data.slot);
        let held = i64s(held.expect("the buffer keeps the model's values"));
        assert_eq!(held, vec![0; 512]);
        let positions = plan.values.for_slot(step.unit, Some(i as u32), index.slot);
        assert_eq!(i64s(positions.unwrap()), (0..256).collect::<Vec<i64>>());
        // Alone, the unit takes them too.
        assert!(plan.values.for_slot(step.unit, None, data.slot).is_some());
        buffers += 1;
    }
    // One per profiled iteration.
    assert_eq!(buffers, 3);
    // Drawn as plain integers, the buffer still takes the model's values.
    let mut calls = plan.aten_calls.clone();
    let mut buffer_slots = Vec::new();
    for c in calls.iter_mut().flatten().filter(|c| c.op == "gather") {
        if let Some(kc::plan::aten_call::CallArg::Tensor(t)) = c.args.first_mut() {
            if t.dtype == kc::plan::types::ElemType::I64 && t.dims == [1, 512] {
                t.fill = kc::plan::aten_call::Fill::SmallInts;
                buffer_slots.push(t.slot);
            }
        }
    }
    assert!(!buffer_slots.is_empty());
    let mut order: Vec<usize> = (0..g.instances.len()).collect();
    order.sort_by_key(|&i| (g.instances[i].start_ns, i));
    let again = kc::plan::values::assign(&g, &order, &calls);
    assert_eq!(again.step_counts(), plan.values.step_counts());
    for slot in buffer_slots {
        assert!(again.steps.iter().flatten().any(|v| v.slot == slot));
    }
}

/// Without a values file BERT's `token_type_ids` buffer is drawn, and what its gather moves
/// reaches the two-row token-type table through a copy: drawn as small integers (0-7) it
/// indexed past row 1. The plan draws it below the table's two rows, and the index the
/// copy feeds stays bounded by them.
#[test]
fn without_values_data_moved_into_an_index_is_drawn_below_its_table() {
    use kc::plan::aten_call::{CallArg, Fill};
    let dir = fixture("bert_train");
    let opts = kc::ingest::IngestOptions {
        shapes: Some(dir.join("bert_train.et.json.gz")),
        ..Default::default()
    };
    let (mut g, _) = kc::ingest::ingest(&[dir.join("bert_train.pt.trace.json.gz")], &opts).unwrap();
    kc::lower::lower(&mut g).unwrap();
    let plan = kc::plan::build::build(&g);
    assert!(plan.values.is_empty());
    let fills: Vec<(String, Vec<Fill>)> = plan
        .aten_calls
        .iter()
        .flatten()
        .map(|c| {
            let f = c
                .args
                .iter()
                .filter_map(|a| match a {
                    CallArg::Tensor(t) if t.dtype == kc::plan::types::ElemType::I64 => {
                        Some(t.fill.clone())
                    }
                    _ => None,
                })
                .collect();
            (c.op.clone(), f)
        })
        .collect();
    // The buffer's gather: its data below 2, its positions below 512.
    assert!(
        fills.iter().any(|(op, f)| op == "gather"
            && f[..] == [Fill::Indices { high: 2 }, Fill::Indices { high: 512 }]),
        "{fills:?}"
    );
    // No gather's data is left to small integers.
    assert!(
        !fills
            .iter()
            .any(|(op, f)| op == "gather" && f.first() == Some(&Fill::SmallInts)),
        "{fills:?}"
    );
}
