//! Tier 3 without libtorch: every aten-op unit of the H100 plans is turned into a call
//! (typed arguments, valid index ranges, inferred dtypes, output policy) or refused with a
//! reason; the outcome per op is snapshot-tested.

use crate::common::*;
use kc::plan::aten_call::{self, CallArg, Fill};
use kc::plan::types::UnitCall;
use std::collections::BTreeMap;

#[test]
fn every_tier3_unit_of_the_h100_plans_maps_to_a_call_or_a_reason() {
    let mut outcome: BTreeMap<String, String> = BTreeMap::new();
    let (mut ok_ns, mut all_ns) = (0i64, 0i64);
    for name in H100 {
        let (g, _, _) = lowered(name);
        let p = kc::plan::build::build(&g);
        for u in &p.units {
            // The plan itself refuses the calls that cannot be built (so exec never meets
            // them): those units carry the same reason.
            if let UnitCall::NotReplayable { reason } = &u.call {
                if let Some((op, why)) = reason
                    .split_once(": ")
                    .filter(|(o, _)| o.starts_with("aten::"))
                {
                    all_ns += u.traced_ns_total;
                    outcome.insert(op.to_string(), format!("refused: {why}"));
                }
                continue;
            }
            let UnitCall::AtenOp { op, args } = &u.call else {
                continue;
            };
            all_ns += u.traced_ns_total;
            let r = aten_call::build(op, args, &u.kernels);
            assert!(r.is_ok(), "a plan holds only tier-3 calls that build: {op}");
            let text = match &r {
                Ok(c) => {
                    ok_ns += u.traced_ns_total;
                    format!("ok: {:?}", c.outputs)
                }
                Err(e) => format!("refused: {e}"),
            };
            let prev = outcome.insert(op.clone(), text.clone());
            if let Some(p) = prev {
                if p != text && p.starts_with("ok") != text.starts_with("ok") {
                    outcome.insert(op.clone(), format!("{p} / {text}"));
                }
            }
        }
    }
    // Every op maps to a call except the optimizer's _foreach_* ops, whose tensor lists the
    // GPT-2 trace recorded without shapes ("Input Dims": [[], ...]); those are refused.
    for (op, r) in &outcome {
        if op.starts_with("aten::_foreach_") {
            assert!(r.contains("without its tensors' shapes"), "{op}: {r}");
        } else if op == "aten::index" {
            // BLOOM's boolean-mask index: Kineto recorded the index list as one value.
            assert!(r.contains("was not recorded"), "{op}: {r}");
        } else {
            assert!(r.starts_with("ok"), "{op}: {r}");
        }
    }
    let share = ok_ns as f64 / all_ns as f64;
    assert!(share > 0.80, "{share}");
    let text: String = outcome.iter().map(|(k, v)| format!("{k}: {v}\n")).collect();
    insta_settings().bind(|| insta::assert_snapshot!("tier3_ops", text));
}

#[test]
fn the_embedding_lookup_of_bloom_reads_valid_rows() {
    let (g, _, _) = lowered("bloom560m_seq5");
    let p = kc::plan::build::build(&g);
    let u = p
        .units
        .iter()
        .find(|u| matches!(&u.call, UnitCall::AtenOp { op, .. } if op == "aten::index_select"))
        .expect("bloom's embedding goes through index_select");
    let UnitCall::AtenOp { op, args } = &u.call else {
        unreachable!()
    };
    let c = aten_call::build(op, args, &[]).unwrap();
    match &c.args[2] {
        CallArg::Tensor(t) => assert_eq!(t.fill, Fill::Indices { high: 250880 }),
        other => panic!("{other:?}"),
    }
}

#[test]
fn zero_dim_operands_are_cpu_scalars_only_where_the_kernel_says_so() {
    let (g, _, _) = lowered("bloom560m_seq5");
    let p = kc::plan::build::build(&g);
    let mut seen = (false, false);
    for u in &p.units {
        let UnitCall::AtenOp { op, args } = &u.call else {
            continue;
        };
        let Ok(c) = aten_call::build(op, args, &u.kernels) else {
            continue;
        };
        let zero_dim: Vec<bool> = c
            .args
            .iter()
            .skip(1)
            .filter_map(|a| match a {
                CallArg::Tensor(t) if t.dims.is_empty() => Some(t.host_scalar),
                _ => None,
            })
            .collect();
        // mul(F16[1, 5, 4096], F64[]) launched AUnaryFunctor: the factor was a Python number.
        if op == "aten::mul" && u.kernels.iter().any(|k| k.contains("AUnaryFunctor")) {
            assert_eq!(zero_dim, vec![true], "{op}");
            seen.0 = true;
        }
        // where(mask, F16[], F16[]) read two GPU tensors (the filled -65504 and 0).
        if op == "aten::where" {
            assert_eq!(zero_dim, vec![false, false], "{op}");
            seen.1 = true;
        }
    }
    assert_eq!(seen, (true, true));
}

/// Every aten op resolves through libtorch's registry, so ops the old hand-bound table
/// lacked replay (ResNet-18 channels-last in inference: `aten::native_batch_norm`, 34.9 % of
/// its GPU time, was unreplayable), and a call that still cannot be made is named when
/// lowering, with its reason (BLOOM's boolean-mask index, whose index list Kineto did not
/// record), so the tier table never promises what exec would then report as not executed.
#[test]
fn every_aten_op_lowers_to_tier_3_unless_its_call_cannot_be_made() {
    let trace = shared().join("examples/h100t2/resnet18_b8_cl_et.pt.trace.json.gz");
    let (mut g, _) = ingest(&[trace]);
    kc::lower::lower(&mut g).unwrap();
    let rows = kc::lower::summary::unit_rows(&g);
    let bn: Vec<_> = rows
        .iter()
        .filter(|u| u.label == "aten::native_batch_norm")
        .collect();
    assert!(!bn.is_empty());
    for u in bn {
        assert_eq!((u.tier.as_str(), u.rule.as_str()), ("3", "aten-op"));
    }
    let s = kc::lower::summary::summarize(&g, &[]);
    assert!(s.pct_replayable_time > 99.99, "{}", s.pct_replayable_time);
    let (g, _, _) = lowered("bloom560m_seq5");
    let rows = kc::lower::summary::unit_rows(&g);
    let index = rows
        .iter()
        .find(|u| u.label == "aten::index")
        .expect("BLOOM's mask index");
    assert_eq!(index.rule, "aten-op-unbound");
    assert!(
        index
            .reason
            .as_deref()
            .unwrap()
            .contains("indices) was not recorded"),
        "{:?}",
        index.reason
    );
}
