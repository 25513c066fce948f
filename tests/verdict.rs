//! One verdict (issue 24, deliverable 1): whether a unit replays is decided once, in
//! lowering, with the plan's own call builder. On every trace of ../shared (the corpus and
//! the examples, with their Execution Traces, Inductor caches and eager twins), the
//! replayable share `kc lower --tiers` states, the one `kc plan show` states and the
//! traced time of the plan's executable steps are the same number, every tier-3 unit of the
//! plan carries its built call, and no unit lowering called replayable is refused by the
//! plan.

use crate::common;

use kc::plan::types::PlanTier;
use std::path::PathBuf;

/// Every (traces, options) the corpus and the examples make.
fn cases() -> Vec<(String, Vec<PathBuf>, kc::ingest::IngestOptions)> {
    let mut v: Vec<(String, Vec<PathBuf>, kc::ingest::IngestOptions)> = common::corpus_traces()
        .into_iter()
        .map(|p| (common::rel(&p), vec![p], Default::default()))
        .collect();
    let ex = common::shared().join("examples/h100t2");
    let opts = |shapes: Option<&str>, eager: Option<&str>, cache: Option<&str>| {
        kc::ingest::IngestOptions {
            shapes: shapes.map(|s| ex.join(s)),
            eager: eager.map(|s| ex.join(s)),
            inductor_cache: cache.map(|s| ex.join(s)),
            ..Default::default()
        }
    };
    for (name, trace, o) in [
        (
            "gpt2s_b4s128_et + ET",
            "gpt2s_b4s128_et.pt.trace.json.gz",
            opts(Some("gpt2s_b4s128_et.et.json.gz"), None, None),
        ),
        (
            "resnet18_b8_cl_et + ET",
            "resnet18_b8_cl_et.pt.trace.json.gz",
            opts(Some("resnet18_b8_cl_et.et.json.gz"), None, None),
        ),
        (
            "gpt2s4l_decode_b4_eager + ET",
            "gpt2s4l_decode_b4_eager.pt.trace.json.gz",
            opts(Some("gpt2s4l_decode_b4_eager.et.json.gz"), None, None),
        ),
        (
            "gpt2s4l_decode_b4_graphreplay + eager",
            "gpt2s4l_decode_b4_graphreplay.pt.trace.json.gz",
            opts(None, Some("gpt2s4l_decode_b4_eager.pt.trace.json.gz"), None),
        ),
        (
            "llama2l_compiled_b2s128 + cache",
            "llama2l_compiled_b2s128.pt.trace.json.gz",
            opts(
                None,
                None,
                Some("llama2l_compiled_b2s128.inductor_cache.tar.gz"),
            ),
        ),
    ] {
        v.push((name.to_string(), vec![ex.join(trace)], o));
    }
    // The modern workloads' fixtures (a fused optimizer, MoE routing), with and without
    // their Execution Traces.
    let modern = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/modern");
    for stem in [
        "llama2l_train_fusedadamw_b4s256",
        "mixtral2l_prefill_b2s256",
    ] {
        let trace = modern.join(format!("{stem}.pt.trace.json.gz"));
        v.push((
            format!("{stem} (no ET)"),
            vec![trace.clone()],
            Default::default(),
        ));
        v.push((
            format!("{stem} + ET"),
            vec![trace],
            kc::ingest::IngestOptions {
                shapes: Some(modern.join(format!("{stem}.et.json.gz"))),
                ..Default::default()
            },
        ));
    }
    // The two-rank tensor-parallel job, as one plan.
    v.push((
        "h200x2 (2 ranks)".into(),
        vec![common::shared().join("traces/h200x2")],
        Default::default(),
    ));
    v
}

#[test]
fn lower_plan_and_steps_state_one_replayable_share() {
    let mut checked = 0;
    let mut with_tier3 = 0;
    for (name, paths, opts) in cases() {
        // Traces kc refuses (CPU-only, empty) have nothing to agree on.
        let Ok((mut g, _)) = kc::ingest::ingest(&paths, &opts) else {
            continue;
        };
        if g.node_count() == 0 {
            continue;
        }
        kc::lower::lower(&mut g).unwrap_or_else(|e| panic!("{name}: lower: {e}"));
        let summary = kc::lower::summary::summarize(&g, &[]);
        let lowered_ns: i64 = g
            .instances
            .iter()
            .filter(|i| g.units[i.unit.0 as usize].tier.is_replayable())
            .map(|i| i.traced_ns)
            .sum();
        let p = kc::plan::build::build(&g);
        p.check()
            .unwrap_or_else(|e| panic!("{name}: plan check: {e}"));
        // The plan refuses nothing lowering accepted.
        for (u, pu) in g.units.iter().zip(&p.units) {
            assert_eq!(
                u.tier.is_replayable(),
                matches!(
                    pu.tier,
                    PlanTier::Runtime | PlanTier::Gemm | PlanTier::AtenOp | PlanTier::Compiled
                ),
                "{name}: unit {} ({}): lowered {:?}, planned {:?}",
                pu.id,
                pu.label,
                u.tier,
                pu.call
            );
        }
        assert_eq!(
            p.header.replayable_traced_ns, lowered_ns,
            "{name}: plan header vs lowering"
        );
        let show = kc::plan::show::summarize(&p, 0);
        assert!(
            (show.replayable_traced_us - lowered_ns as f64 / 1000.0).abs() < 1e-6,
            "{name}: plan show {} us vs lowering {} us",
            show.replayable_traced_us,
            lowered_ns as f64 / 1000.0
        );
        let total_ns = g.gpu_time_ns().max(1);
        assert!(
            (summary.pct_replayable_time - 100.0 * lowered_ns as f64 / total_ns as f64).abs()
                < 1e-9,
            "{name}: kc lower --tiers says {:.4} %",
            summary.pct_replayable_time
        );
        // The plan's executable steps carry exactly that traced time.
        let steps_ns: i64 = p
            .steps
            .iter()
            .filter(|s| {
                matches!(
                    p.units[s.unit as usize].tier,
                    PlanTier::Runtime | PlanTier::Gemm | PlanTier::AtenOp | PlanTier::Compiled
                )
            })
            .map(|s| s.traced_ns)
            .sum();
        assert_eq!(steps_ns, lowered_ns, "{name}: executable steps vs lowering");
        // Every tier-3 unit carries its call, built once, here.
        for u in &p.units {
            assert_eq!(
                p.aten_calls[u.id as usize].is_some(),
                u.tier == PlanTier::AtenOp,
                "{name}: unit {}",
                u.id
            );
        }
        if p.units.iter().any(|u| u.tier == PlanTier::AtenOp) {
            with_tier3 += 1;
        }
        checked += 1;
    }
    eprintln!("one verdict on {checked} traces ({with_tier3} with tier 3)");
    assert!(checked >= 40, "only {checked} traces checked");
    assert!(with_tier3 >= 15, "only {with_tier3} traces with tier 3");
}

/// `decide` walks `RULES` in priority order: the table is sorted, and on real traces the
/// rule chosen for every instance is the first of all the rules that apply to it, with
/// instances where several apply (so the order, not the conditions alone, decides).
#[test]
fn the_order_of_the_rules_decides() {
    use kc::lower::assign_tiers::{decide, facts, RULES};
    assert!(RULES.windows(2).all(|w| w[0].priority >= w[1].priority));
    let mut contested = 0;
    for name in ["gpt2_train_bf16", "bloom560m_seq5", "resnet50_b32"] {
        let (g, ctx, _) = common::lowered(name);
        for i in 0..ctx.instances.len() {
            let f = facts(&g, &ctx, i);
            let applying: Vec<&str> = RULES
                .iter()
                .filter(|r| (r.applies)(&f).is_some())
                .map(|r| r.name)
                .collect();
            let (chosen, _) = decide(&f);
            assert_eq!(Some(&chosen.name), applying.first(), "{name} instance {i}");
            if applying.len() > 1 {
                contested += 1;
            }
        }
    }
    assert!(contested > 0, "no instance where two rules apply");
}
