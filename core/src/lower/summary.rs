//! The tier table `kc lower` prints (tier, API, unique units, invocations, % of
//! invocations, % of traced GPU time), unreplayable work grouped by reason, and the
//! per-kernel classification rows that snapshot tests pin. Invariant: percentages are of
//! the whole graph's instances and traced GPU time, so the tier rows sum to 100 %.

use super::{assign_tiers, family, name, LowerCtx};
use crate::diag::{Diagnostic, DiagnosticSummary};
use kc_ir::{KernelGraph, Tier, UnitParams};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct TierRow {
    pub tier: String,
    pub api: String,
    pub unique_units: u64,
    pub invocations: u64,
    pub pct_invocations: f64,
    pub gpu_time_us: f64,
    pub pct_gpu_time: f64,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ReasonRow {
    pub reason: String,
    pub invocations: u64,
    pub gpu_time_us: f64,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct LowerSummary {
    pub tiers: BTreeMap<String, TierRow>,
    pub unique_units: usize,
    pub invocations: u64,
    pub gpu_time_us: f64,
    /// Share of traced GPU time in tiers 1-4.
    pub pct_replayable_time: f64,
    pub unreplayable: Vec<ReasonRow>,
    pub gemm_units: u64,
    /// Recorded on an AMD GPU (ROCm): tiers name the HIP libraries, and replay needs CUDA.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub rocm: bool,
    pub diagnostics: DiagnosticSummary,
}

/// One unique replay unit as `kc lower --json` lists it.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct UnitRow {
    pub id: u32,
    pub tier: String,
    /// The rule that decided the tier (`kc lower --explain` documents it).
    pub rule: String,
    pub family: String,
    pub label: String,
    /// What one invocation replays: the cuBLAS call, the aten op with its arguments, the
    /// copy; empty for unreplayable units.
    pub call: String,
    pub invocations: u64,
    pub traced_us_total: f64,
    pub traced_us_mean: f64,
    /// Why the unit cannot be replayed (unreplayable units only).
    pub reason: Option<String>,
    pub kernels: Vec<String>,
}

/// Every unit of a lowered graph, in id order.
pub fn unit_rows(g: &KernelGraph) -> Vec<UnitRow> {
    let mut rule = vec![None; g.units.len()];
    for inst in &g.instances {
        let u = inst.unit.0 as usize;
        if rule.get(u).is_some_and(Option::is_none) {
            rule[u] = inst
                .nodes
                .first()
                .and_then(|n| g.classes.get(n.index()))
                .map(|c| g.strings.get(c.rule).to_string());
        }
    }
    g.units
        .iter()
        .map(|u| {
            let (call, reason) = match &u.params {
                UnitParams::Memcpy { kind, bytes } => (format!("memcpy {kind:?} {bytes} B"), None),
                UnitParams::Memset { bytes, value } => {
                    (format!("memset {bytes} B to {value}"), None)
                }
                UnitParams::Gemm(c) => (c.describe(), None),
                UnitParams::Op { name, args } => (
                    format!("{}({})", g.strings.get(*name), kc_ir::text::args_str(args)),
                    None,
                ),
                UnitParams::Collective(c) => (
                    format!(
                        "{} {} in {} out {}",
                        c.collective,
                        c.dtype,
                        c.in_nelems.map_or("?".into(), |n| n.to_string()),
                        c.out_nelems.map_or("?".into(), |n| n.to_string())
                    ),
                    None,
                ),
                UnitParams::None(r) => (String::new(), Some(r.to_string())),
                UnitParams::Compiled(c) => (c.describe(&g.compiled_kernels), None),
            };
            UnitRow {
                id: u.id.0,
                tier: u.tier.as_str().to_string(),
                rule: rule
                    .get(u.id.0 as usize)
                    .cloned()
                    .flatten()
                    .unwrap_or_default(),
                family: u.family.as_str().to_string(),
                label: g.strings.get(u.label).to_string(),
                call,
                invocations: u.invocations,
                traced_us_total: u.traced_ns_total as f64 / 1000.0,
                traced_us_mean: u.traced_ns_mean() / 1000.0,
                reason,
                kernels: u
                    .kernels
                    .iter()
                    .map(|k| g.strings.get(*k).to_string())
                    .collect(),
            }
        })
        .collect()
}

pub fn summarize(g: &KernelGraph, diags: &[Diagnostic]) -> LowerSummary {
    let total_inv = g.instances.len() as u64;
    let total_ns: i64 = g.instances.iter().map(|i| i.traced_ns).sum();
    let rocm = g.meta.ranks.iter().any(|r| r.rocm);
    let mut tiers = BTreeMap::new();
    for t in Tier::ALL {
        let units: Vec<_> = g.units.iter().filter(|u| u.tier == t).collect();
        let inv: u64 = units.iter().map(|u| u.invocations).sum();
        let ns: i64 = units.iter().map(|u| u.traced_ns_total).sum();
        tiers.insert(
            t.as_str().to_string(),
            TierRow {
                tier: t.as_str().to_string(),
                api: t.api_on(rocm).to_string(),
                unique_units: units.len() as u64,
                invocations: inv,
                pct_invocations: pct(inv as f64, total_inv as f64),
                gpu_time_us: ns as f64 / 1000.0,
                pct_gpu_time: pct(ns as f64, total_ns as f64),
            },
        );
    }
    let mut reasons: BTreeMap<String, (u64, i64)> = BTreeMap::new();
    for u in g.units.iter().filter(|u| u.tier == Tier::Unreplayable) {
        let why = match &u.params {
            UnitParams::None(r) => r.to_string(),
            _ => "unknown".into(),
        };
        let e = reasons.entry(why).or_default();
        e.0 += u.invocations;
        e.1 += u.traced_ns_total;
    }
    let mut unreplayable: Vec<ReasonRow> = reasons
        .into_iter()
        .map(|(reason, (inv, ns))| ReasonRow {
            reason,
            invocations: inv,
            gpu_time_us: ns as f64 / 1000.0,
        })
        .collect();
    unreplayable.sort_by(|a, b| {
        b.gpu_time_us
            .total_cmp(&a.gpu_time_us)
            .then(a.reason.cmp(&b.reason))
    });
    let replayable_ns: i64 = g
        .units
        .iter()
        .filter(|u| u.tier.is_replayable())
        .map(|u| u.traced_ns_total)
        .sum();
    LowerSummary {
        tiers,
        unique_units: g.units.len(),
        invocations: total_inv,
        gpu_time_us: total_ns as f64 / 1000.0,
        pct_replayable_time: pct(replayable_ns as f64, total_ns as f64),
        rocm,
        unreplayable,
        gemm_units: g.units.iter().filter(|u| u.tier == Tier::Gemm).count() as u64,
        diagnostics: DiagnosticSummary::of(diags),
    }
}

fn pct(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        100.0 * a / b
    } else {
        0.0
    }
}

pub fn render_text(s: &LowerSummary) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "  {:<13} {:<19} {:>8} {:>11} {:>8} {:>12} {:>8}",
        "tier", "API", "unique", "invocations", "% inv", "traced us", "% time"
    );
    for t in Tier::ALL {
        let r = &s.tiers[t.as_str()];
        let _ = writeln!(
            o,
            "  {:<13} {:<19} {:>8} {:>11} {:>8.2} {:>12.1} {:>8.2}",
            r.tier,
            r.api,
            r.unique_units,
            r.invocations,
            r.pct_invocations,
            r.gpu_time_us,
            r.pct_gpu_time
        );
    }
    let _ = writeln!(
        o,
        "  {:<13} {:<19} {:>8} {:>11} {:>8.2} {:>12.1} {:>8.2}",
        "total", "", s.unique_units, s.invocations, 100.0, s.gpu_time_us, 100.0
    );
    let _ = writeln!(
        o,
        "\n  replayable (tiers 1-4): {:.2} % of traced GPU time",
        s.pct_replayable_time
    );
    if s.rocm {
        let _ = writeln!(
            o,
            "  recorded on an AMD GPU (ROCm): kc replays on NVIDIA GPUs through CUDA only, so \
             this plan runs the same ops and GEMMs there, not on the GPU that was traced"
        );
    }
    if !s.unreplayable.is_empty() {
        let _ = writeln!(o, "\n  unreplayable, by reason");
        for r in &s.unreplayable {
            let _ = writeln!(
                o,
                "  {:>8} inv {:>11.1} us  {}",
                r.invocations, r.gpu_time_us, r.reason
            );
        }
    }
    if s.diagnostics.total > 0 {
        let _ = writeln!(o, "\n  diagnostics: {}", s.diagnostics.total);
        for (k, d) in &s.diagnostics.by_kind {
            let _ = writeln!(o, "    {k:<24}{:>8}  e.g. {}", d.count, d.example);
        }
    }
    o
}

/// One row per distinct kernel name: how it was classified. Snapshot tests pin these.
#[derive(Serialize, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ClassRow {
    pub name: String,
    pub family: String,
    pub family_rule: String,
    /// Tiers with the rule that gave them, e.g. "2 cublas-gemm"; a name can land in
    /// several when its ops differ.
    pub tiers: Vec<String>,
    pub count: u64,
}

pub fn classification_rows(g: &KernelGraph, ctx: &LowerCtx) -> Vec<ClassRow> {
    let mut rows: BTreeMap<String, ClassRow> = BTreeMap::new();
    for id in g.graph.node_indices() {
        let c = &g.classes[id.index()];
        let name = g.str(g.graph[id].kind.name()).to_string();
        let row = rows.entry(name.clone()).or_insert_with(|| ClassRow {
            name,
            family: c.family.as_str().to_string(),
            family_rule: ctx.family_rule[id.index()].to_string(),
            tiers: Vec::new(),
            count: 0,
        });
        row.count += 1;
        let t = format!("{} {}", c.tier.as_str(), g.str(c.rule));
        if !row.tiers.contains(&t) {
            row.tiers.push(t);
            row.tiers.sort();
        }
    }
    rows.into_values().collect()
}

/// Items joined by ", ", or "none".
fn listed<T: std::fmt::Display>(items: impl Iterator<Item = T>) -> String {
    let v: Vec<String> = items.map(|x| x.to_string()).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// `kc lower --explain NAME`: the parsed name and the rules that fired, for every kernel
/// whose name contains `needle` (or for `needle` itself when none does).
pub fn explain(g: &KernelGraph, ctx: &LowerCtx, needle: &str) -> String {
    let mut o = String::new();
    let rows: Vec<ClassRow> = classification_rows(g, ctx)
        .into_iter()
        .filter(|r| r.name.contains(needle))
        .collect();
    let names: Vec<String> = if rows.is_empty() {
        vec![needle.to_string()]
    } else {
        rows.iter().map(|r| r.name.clone()).collect()
    };
    for (k, n) in names.iter().enumerate().take(10) {
        let p = name::parse(n);
        let _ = writeln!(o, "kernel: {n}");
        if p.opaque {
            let _ = writeln!(o, "  parsed: not C++ grammar; read as one opaque name");
        } else {
            let _ = writeln!(
                o,
                "  parsed: {}{}",
                p.scope.iter().map(|s| format!("{s}::")).collect::<String>(),
                p.base
            );
        }
        if !p.template_args.is_empty() {
            let _ = writeln!(o, "  template arguments: {}", p.template_args.join(", "));
        }
        let _ = writeln!(
            o,
            "  element types: {}; integer arguments: {}",
            listed(p.dtypes.iter().map(|d| d.short())),
            listed(p.int_args.iter())
        );
        if let Some(v) = &p.vendor {
            let _ = writeln!(
                o,
                "  library {}: SM {}, tiles {}, layout {}, flags {}",
                v.library,
                v.sm.map_or("not named".to_string(), |s| s.to_string()),
                listed(v.tiles.iter()),
                v.layout.as_deref().unwrap_or("not named"),
                listed(v.flags.iter())
            );
        }
        match rows.get(k) {
            Some(r) => {
                let _ = writeln!(o, "  family: {} (rule {})", r.family, r.family_rule);
                for t in &r.tiers {
                    let rule_name = t.split_once(' ').map(|x| x.1).unwrap_or("");
                    let doc = assign_tiers::rule(rule_name)
                        .map(|r| (r.priority, r.doc))
                        .unwrap_or((0, ""));
                    let _ = writeln!(o, "  tier {t} (priority {}): {}", doc.0, doc.1);
                }
                let _ = writeln!(o, "  occurrences: {}", r.count);
            }
            None => {
                let _ = match family::family_from_name(n, &p) {
                    Some((rule, f)) => writeln!(
                        o,
                        "  not in this graph; from its name alone: family {} (rule {rule})",
                        f.as_str()
                    ),
                    None => writeln!(
                        o,
                        "  not in this graph; its name alone decides no family (the launching op would)"
                    ),
                };
            }
        }
        let _ = writeln!(o);
    }
    if names.len() > 10 {
        let _ = writeln!(
            o,
            "... and {} more kernel names contain {needle:?}",
            names.len() - 10
        );
    }
    o
}
