//! The dataflow pass and the plan's memory image (issue 12): exact placement from an
//! Execution Trace recorded in the same run, the heuristic on a trace without one, insta
//! snapshots of the buffer assignment summaries, and a property test that the Execution
//! Trace's tensor reader takes any JSON without panicking.

use crate::common::*;
use kc::plan::show::dataflow_summary;
use kc_ir::{DataflowSource, StorageKind, UnitParams};
use proptest::prelude::*;

fn example(name: &str) -> std::path::PathBuf {
    shared().join("examples/h100t2").join(name)
}

fn lowered_with_et(stem: &str) -> kc_ir::KernelGraph {
    let opts = kc::ingest::IngestOptions {
        shapes: Some(example(&format!("{stem}.et.json.gz"))),
        ..Default::default()
    };
    let (mut g, _) = kc::ingest::ingest(&[example(&format!("{stem}.pt.trace.json.gz"))], &opts)
        .expect("ingest with ET");
    kc::lower::lower(&mut g).expect("lower");
    g
}

#[test]
fn an_execution_trace_places_producers_outputs_where_consumers_read() {
    let g = lowered_with_et("gpt2s_b4s128_et");
    assert!(
        !g.tensor_refs.is_empty(),
        "the ET's tensor ids were attached"
    );
    let df = &g.dataflow;
    assert_eq!(df.source, DataflowSource::ExecutionTrace);
    // Every GEMM's result (C) is read by a later unit invocation at the same place: the
    // model's dataflow, not a private buffer per operand.
    let mut order: Vec<usize> = (0..g.instances.len()).collect();
    order.sort_by_key(|&i| (g.instances[i].start_ns, i));
    let (mut gemm_results, mut consumed) = (0, 0);
    for (pos, &i) in order.iter().enumerate() {
        let unit = &g.units[g.instances[i].unit.0 as usize];
        if !matches!(unit.params, UnitParams::Gemm(_)) {
            continue;
        }
        let Some(c) = df.instances[i].operands[2] else {
            continue;
        };
        gemm_results += 1;
        let read_later = order[pos + 1..].iter().any(|&j| {
            let u = &g.units[g.instances[j].unit.0 as usize];
            let ops = u.params.operands(g.str(u.label));
            df.instances[j]
                .operands
                .iter()
                .zip(&ops)
                .any(|(p, o)| !o.writes && p.map(|p| p.storage) == Some(c.storage))
        });
        consumed += usize::from(read_later);
    }
    assert!(gemm_results >= 50, "{gemm_results} GEMM results placed");
    assert!(
        consumed * 10 >= gemm_results * 9,
        "only {consumed} of {gemm_results} GEMM results are read by a later unit"
    );
    // Weights are parameters: never written, one storage each.
    assert!(df
        .storages
        .iter()
        .any(|s| s.kind == StorageKind::Parameter && s.bytes >= 768 * 2304 * 2));
    let plan = kc::plan::build::build(&g);
    plan.check().expect("a checked plan");
    let s = dataflow_summary(&plan).expect("the plan has a memory image");
    insta::assert_json_snapshot!("dataflow_gpt2s_b4s128_et", s);
}

#[test]
fn without_an_execution_trace_the_heuristic_places_operands() {
    let (g, _, _) = lowered("bloom560m_seq5");
    assert_eq!(g.dataflow.source, DataflowSource::Heuristic);
    let plan = kc::plan::build::build(&g);
    plan.check().expect("a checked plan");
    let s = dataflow_summary(&plan).expect("the plan has a memory image");
    assert_eq!(s.derivation, "heuristic");
    // Packing by liveness keeps the image near the live peak, far below one buffer each.
    assert!(s.arena_bytes - s.parameter_bytes <= s.activation_bytes_unpacked / 2);
    insta::assert_json_snapshot!("dataflow_bloom560m_seq5_heuristic", s);
}

#[test]
fn plan_show_prints_the_memory_image() {
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join("g.kcir");
    let l = dir.path().join("l.kcir");
    let p = dir.path().join("p.kcplan");
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let trace = s(&example("gpt2s_b4s128_et.pt.trace.json.gz"));
    let et = s(&example("gpt2s_b4s128_et.et.json.gz"));
    assert!(kc(&["ingest", &trace, "--shapes", &et, "-o", &s(&g)])
        .status
        .success());
    assert!(kc(&["lower", "--tiers", &s(&g), "-o", &s(&l)])
        .status
        .success());
    assert!(kc(&["plan", &s(&l), "-o", &s(&p)]).status.success());
    let o = kc(&["plan", "show", &s(&p)]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("dataflow (execution trace):") && text.contains("parameters"),
        "{text}"
    );
    let o = kc(&["plan", "--json", "show", &s(&p)]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["summary"]["dataflow"]["derivation"], "execution trace");
    assert!(v.get("round").is_none());
    // The round of every unit, entry by entry: every replayable unit once at its first
    // run, and each lead-in the model's step right before the entry it leads in (one
    // stream).
    let o = kc(&["plan", "show", &s(&p), "--round", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["summary"]["streams"], 1);
    let entries = v["round"]["entries"].as_array().unwrap();
    let counted: Vec<u64> = entries
        .iter()
        .filter(|e| e["lead_in"] == false)
        .map(|e| e["unit"].as_u64().unwrap())
        .collect();
    let replayable = v["units"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["reason"].is_null() && !u["tier"].as_str().unwrap().contains("coll"))
        .count();
    let mut distinct = counted.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!((counted.len(), distinct.len()), (replayable, replayable));
    let mut lead_ins = 0;
    for w in entries.windows(2) {
        if w[0]["lead_in"] == true {
            lead_ins += 1;
            assert_eq!(w[1]["lead_in"], false, "{w:?}");
            assert_eq!(
                w[0]["step"].as_u64().unwrap() + 1,
                w[1]["step"].as_u64().unwrap()
            );
        }
    }
    assert!(lead_ins > 0);
    let o = kc(&["plan", "show", &s(&p), "--round"]);
    let text = String::from_utf8_lossy(&o.stdout);
    let heading = format!(
        "{} units at their first run, {lead_ins} lead-ins",
        counted.len()
    );
    assert!(text.contains(&heading), "{text}");
}

fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e300f64..1e300).prop_map(Value::from),
        prop_oneof![
            Just("Tensor(c10::Half)".to_string()),
            Just("GenericList[Tensor(float),Tensor(long int)]".to_string()),
            Just("cuda:0".to_string()),
            Just("Int".to_string()),
            ".{0,12}"
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..7).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("values".to_string()),
                        Just("shapes".to_string()),
                        Just("strides".to_string()),
                        Just("types".to_string()),
                        Just("inputs".to_string()),
                        Just("outputs".to_string()),
                        Just("name".to_string()),
                        Just("attrs".to_string()),
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    /// The Execution Trace reader (shapes and tensor identities) returns records or an
    /// error for any node content, never panics, and every tensor identity it returns is
    /// internally consistent (no offset or extent overflowed).
    #[test]
    fn execution_trace_nodes_of_any_shape_are_read_without_panic(
        nodes in prop::collection::vec(arb_json(), 0..6),
        name in "aten::[a-z]{1,6}",
    ) {
        let nodes: Vec<serde_json::Value> = nodes
            .into_iter()
            .map(|mut n| {
                if let serde_json::Value::Object(m) = &mut n {
                    m.insert("name".into(), serde_json::Value::String(name.clone()));
                }
                n
            })
            .collect();
        let doc = serde_json::json!({ "schema": "1.1.1-chakra.0.0.4", "nodes": nodes });
        let n = nodes_len(&doc);
        let records = kc::ingest::shapes::from_execution_trace(&doc, "prop.et.json")
            .expect("a document with a nodes array is read");
        // Every node with a name is one record, whatever else it holds.
        prop_assert_eq!(records.len(), n);
    }

    /// A well-formed tensor tuple reads back as its storage, byte offset and extent.
    #[test]
    fn tensor_identities_read_back(
        storage in 0u64..1 << 40,
        offset in 0u64..1 << 20,
        dims in prop::collection::vec(1i64..64, 0..4),
        itemsize in prop_oneof![Just(1u64), Just(2), Just(4), Just(8)],
        on_device in any::<bool>(),
    ) {
        let strides = kc_ir::TensorSpec::contiguous_strides(&dims);
        let numel: i64 = dims.iter().product();
        let device = if on_device { "cuda:0" } else { "cpu" };
        let node = serde_json::json!({
            "id": 1, "name": "aten::relu",
            "inputs": {"values": [[7, storage, offset, numel, itemsize, device]],
                       "shapes": [dims.clone()], "strides": [strides.clone()],
                       "types": ["Tensor(float)"]},
            "outputs": {"values": [], "shapes": [], "types": [], "strides": []},
            "attrs": [{"name": "rf_id", "type": "uint64", "value": 3}]
        });
        let doc = serde_json::json!({ "nodes": [node] });
        let r = kc::ingest::shapes::from_execution_trace(&doc, "t").unwrap();
        let (inputs, _) = r[0].tensors.clone().unwrap();
        let t = inputs[0].tensors()[0];
        prop_assert_eq!(t.storage, storage);
        prop_assert_eq!(t.offset_bytes, offset * itemsize);
        prop_assert_eq!(
            t.span_bytes,
            kc_ir::TensorSpec::storage_elems(&dims, &strides) * itemsize
        );
        prop_assert_eq!(t.on_device, on_device);
        prop_assert!(t.float);
    }
}

fn nodes_len(doc: &serde_json::Value) -> usize {
    doc["nodes"].as_array().map_or(0, |a| {
        a.iter()
            .filter(|n| n.get("name").and_then(|v| v.as_str()).is_some())
            .count()
    })
}

/// Whether step `s`'s operand `k` lies in a detached region of the plan's image.
fn reads_detached(plan: &kc::plan::types::Plan, s: u32, k: u32) -> bool {
    use kc::plan::types::RegionKind;
    let df = plan.dataflow.as_ref().expect("an image");
    df.steps[s as usize]
        .operands
        .get(k as usize)
        .copied()
        .flatten()
        .is_some_and(|off| {
            df.regions.iter().any(|r| {
                r.kind == RegionKind::Detached && r.offset <= off && off < r.offset + r.bytes
            })
        })
}

#[test]
fn gemms_read_an_allocated_result_where_it_was_computed() {
    use kc::plan::types::UnitCall;
    // GPT-2's layer norms and cuDNN attention allocate their results (no `.out` overload
    // of their own); the GEMM after each reads that result: bound to it, not only to the detached region
    // that stands in when it is gone.
    let g = lowered_with_et("gpt2s_b4s128_et");
    let plan = kc::plan::build::build(&g);
    plan.check().expect("a checked plan");
    let unit_of = |s: u32| &plan.units[plan.steps[s as usize].unit as usize];
    let gemm_reads: Vec<_> = plan
        .bound_reads
        .iter()
        .filter(|b| matches!(unit_of(b.step).call, UnitCall::Gemm(_)))
        .collect();
    assert!(
        gemm_reads.len() >= 24,
        "{} GEMM reads bound",
        gemm_reads.len()
    );
    let producers: std::collections::BTreeSet<&str> = gemm_reads
        .iter()
        .map(|b| unit_of(b.producer_step).label.as_str())
        .collect();
    assert_eq!(
        producers.into_iter().collect::<Vec<_>>(),
        ["aten::_cudnn_attention_forward", "aten::native_layer_norm"]
    );
    for b in &gemm_reads {
        assert!(b.producer_step < b.step);
        assert_eq!(
            plan.steps[b.producer_step as usize].stream,
            plan.steps[b.step as usize].stream
        );
        assert!(reads_detached(&plan, b.step, b.operand), "{b:?}");
    }
    // The summary counts these GEMM reads among the float reads bound to their result.
    let s = dataflow_summary(&plan).expect("an image");
    assert!(s.bound_reads >= gemm_reads.len(), "{s:?}");
}

#[test]
fn integer_results_are_read_where_computed() {
    use kc::plan::types::UnitCall;
    // The MoE prefill's routing without its values file: `sort` reads `topk`'s indices,
    // `index` reads what `sort` and `floor_divide` computed, `masked_fill_` the mask `ge`
    // computed; each such read is bound to that result (integer tensors are never placed).
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/values");
    let opts = kc::ingest::IngestOptions {
        shapes: Some(dir.join("mixtral2l_b2s256.et.json.gz")),
        ..Default::default()
    };
    let (mut g, _) = kc::ingest::ingest(&[dir.join("mixtral2l_b2s256.pt.trace.json.gz")], &opts)
        .expect("ingest with ET");
    kc::lower::lower(&mut g).expect("lower");
    let plan = kc::plan::build::build(&g);
    plan.check().expect("a checked plan");
    let df = plan.dataflow.as_ref().expect("an image");
    let op_of = |s: u32| match &plan.units[plan.steps[s as usize].unit as usize].call {
        UnitCall::AtenOp { op, .. } => op.as_str(),
        _ => "",
    };
    let integer: Vec<_> = plan
        .bound_reads
        .iter()
        .filter(|b| df.steps[b.step as usize].operands[b.operand as usize].is_none())
        .collect();
    let pairs: std::collections::BTreeSet<(&str, &str)> = integer
        .iter()
        .map(|b| (op_of(b.producer_step), op_of(b.step)))
        .collect();
    for want in [
        ("aten::topk", "aten::sort"),
        ("aten::sort", "aten::index"),
        ("aten::floor_divide", "aten::index"),
        ("aten::ge", "aten::masked_fill_"),
    ] {
        assert!(
            pairs.contains(&want),
            "{want:?} not bound; bound: {pairs:?}"
        );
    }
    // Two layers, three profiled iterations: every layer's routing is bound.
    assert!(integer.len() >= 60, "{} integer reads bound", integer.len());
    // Each is a read of an integer or boolean tensor, by the call's own argument types.
    let dtype_of = |b: &kc::plan::types::BoundRead| {
        let u = &plan.units[plan.steps[b.step as usize].unit as usize];
        let slot = u.slots[b.operand as usize];
        let UnitCall::AtenOp { args, .. } = &u.call else {
            return None;
        };
        args.iter()
            .flat_map(|a| a.tensors())
            .find(|t| t.slot == slot)
            .map(|t| t.dtype)
    };
    for b in &integer {
        let d = dtype_of(b).unwrap_or_else(|| panic!("{b:?}: no tensor in its slot"));
        assert!(!kc::plan::aten_call::is_float(d), "{b:?}: {d:?}");
        assert!(b.producer_step < b.step);
        assert_eq!(
            plan.steps[b.producer_step as usize].stream,
            plan.steps[b.step as usize].stream
        );
        // Only reads: `copy_`'s destination (operand 0) is written, never bound.
        assert!(!(op_of(b.step) == "aten::copy_" && b.operand == 0), "{b:?}");
    }
    let s = dataflow_summary(&plan).expect("an image");
    assert_eq!(s.integer_reads_bound, integer.len());
}

/// A unit whose invocations' places chain (a result one writes overlaps an operand another
/// reads; alone, later invocations then read what earlier ones wrote, session 42) is counted,
/// on a real step's plan: one unit's result moved onto another invocation's operand makes it
/// chained, and the summary's share is of the chained units' traced time.
#[test]
fn units_whose_places_chain_are_counted() {
    let g = lowered_with_et("gpt2s_b4s128_et");
    let mut plan = kc::plan::build::build(&g);
    let (chained, several) = kc::plan::show::chained_units(&plan);
    assert!(
        several > 0 && chained.len() <= several,
        "{} of {several}",
        chained.len()
    );
    let df = plan.dataflow.clone().expect("an image");
    // A unit of several invocations not chained, with a placed result and a placed operand.
    let (unit, i, j) = plan
        .units
        .iter()
        .filter(|u| !chained.contains(&u.id))
        .find_map(|u| {
            let steps: Vec<usize> = (0..plan.steps.len())
                .filter(|&k| plan.steps[k].unit == u.id)
                .collect();
            let i = *steps
                .iter()
                .find(|&&k| df.steps[k].outputs.iter().flatten().next().is_some())?;
            let j = *steps
                .iter()
                .find(|&&k| k != i && df.steps[k].operands.iter().flatten().next().is_some())?;
            Some((u.id, i, j))
        })
        .expect("a unit of several invocations with placed results and operands");
    let read = *df.steps[j].operands.iter().flatten().next().unwrap();
    let d = plan.dataflow.as_mut().unwrap();
    let out = d.steps[i].outputs.iter_mut().flatten().next().unwrap();
    out.0 = read;
    let (after, _) = kc::plan::show::chained_units(&plan);
    assert!(
        after.contains(&unit),
        "unit {unit} chains once its result lies on its operand"
    );
    let s = dataflow_summary(&plan).expect("an image");
    let traced: f64 = plan
        .steps
        .iter()
        .filter(|s| after.contains(&s.unit))
        .map(|s| s.traced_ns as f64 / 1000.0)
        .sum();
    assert_eq!(s.chained_units, after.len());
    assert!((s.chained_traced_us - traced).abs() < 1e-6);
}
