//! kc's graph beside the model's own CUDA graph, kernel by kernel. `traces/capture.py`
//! keeps the profiled replays of the model's graph (`cuda_graph.replay_trace`, a Kineto
//! trace); `kc exec --verify` keeps what kc's graph launched (`plan.graph.kernels.json`,
//! CUPTI). Both are one program run back to back on the same GPU in the same call, so set
//! side by side they say where kc's graph and the model's part: kernels one side runs and
//! the other does not, the same kernel running longer on one side, copies and fills.
//!
//! The two kernel sequences are aligned by a shortest edit script (Myers) on each kernel's
//! identifier (its readable base name: the model's are demangled, kc's mangled) and launch
//! geometry; the model's iteration is repeated as often as kc's replay holds iterations.
//! Where kc's plan is given, the model's kernels are aligned with the traced steps too (the
//! same Kineto names), which gives each kernel its unit.
//!
//! Invariant: every figure is per model iteration; a kernel counts as matched only where
//! both sides launched it at the aligned place, so the matched sums hold the same work.

use crate::plan::types::Plan;
use crate::results::fidelity::KernelRecord;
use crate::results::fidelity::{is_driver_copy, is_runtime_copy, readable_name};
use kc_ir::KernelGraph;
use serde::Serialize;
use std::collections::HashMap;

/// One kernel of the model's graph, as its profiled replays ran it.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelKernel {
    /// As the profiler wrote it (demangled).
    pub name: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Median over the replays kept.
    pub dur_us: f64,
}

/// The model's graph, one iteration, from its profiled replays.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelIteration {
    /// Replays of the graph the trace holds, and those the medians come from (the ones of
    /// the most common length, less the first where more than two are left: it ran from an
    /// idle GPU).
    pub replays: usize,
    pub replays_used: usize,
    pub kernels: Vec<ModelKernel>,
    /// Copies and fills per iteration and their time.
    pub copies: usize,
    pub copy_us: f64,
}

/// The profiled replays of a CUDA graph in an ingested trace (the GPU activities each
/// `cudaGraphLaunch` ran, grouped by the launch's correlation), as one iteration; an error
/// where the trace holds no graph replay.
pub fn model_iteration(g: &KernelGraph) -> Result<ModelIteration, String> {
    let mut by_launch: HashMap<u64, Vec<&kc_ir::Node>> = HashMap::new();
    for n in g.graph.node_weights() {
        if g.is_graph_launched(n) {
            by_launch.entry(n.correlation).or_default().push(n);
        }
    }
    if by_launch.is_empty() {
        return Err("holds no CUDA-graph replay (no GPU activity a cudaGraphLaunch ran)".into());
    }
    let mut replays: Vec<Vec<&kc_ir::Node>> = by_launch.into_values().collect();
    for r in &mut replays {
        r.sort_by_key(|n| (n.start_ns, n.stream));
    }
    replays.sort_by_key(|r| r.first().map_or(0, |n| n.start_ns));
    let total = replays.len();
    // The most common length (the smaller on a tie): replays of one graph are alike.
    let mut lengths: HashMap<usize, usize> = HashMap::new();
    for r in &replays {
        *lengths.entry(r.len()).or_default() += 1;
    }
    let modal = lengths
        .iter()
        .max_by_key(|(len, count)| (**count, std::cmp::Reverse(**len)))
        .map(|(len, _)| *len)
        .unwrap_or(0);
    let mut kept: Vec<&Vec<&kc_ir::Node>> = replays.iter().filter(|r| r.len() == modal).collect();
    if kept.len() > 2 {
        kept.remove(0);
    }
    let first = kept[0];
    let name_at = |i: usize| -> &str { g.str(first[i].kind.name()) };
    // Positions whose activity differs between the kept replays make their median
    // meaningless: those replays are left out.
    kept.retain(|r| (0..modal).all(|i| g.str(r[i].kind.name()) == name_at(i)));
    let mut it = ModelIteration {
        replays: total,
        replays_used: kept.len(),
        ..Default::default()
    };
    for i in 0..modal {
        let mut durs: Vec<f64> = kept.iter().map(|r| r[i].dur_ns as f64 / 1000.0).collect();
        let dur_us = crate::results::stats::median(&mut durs).unwrap_or(0.0);
        match &first[i].kind {
            kc_ir::NodeKind::Kernel { geometry, .. } => it.kernels.push(ModelKernel {
                name: name_at(i).to_string(),
                grid: geometry.grid,
                block: geometry.block,
                dur_us,
            }),
            _ => {
                it.copies += 1;
                it.copy_us += dur_us;
            }
        }
    }
    Ok(it)
}

/// The most bytes kc's kernel records may hold, gzipped or not (a replay of 100 000
/// kernels is some 30 MB).
pub const RECORDS_CAP: u64 = 1 << 30;

/// kc's CUPTI record of its graph (`kc exec --kernels-out`, `kc run`'s
/// plan.graph.kernels.json), plain or gzipped, read through [`RECORDS_CAP`]; an error
/// says what is wrong, never a panic.
pub fn read_kernel_records(bytes: &[u8]) -> Result<Vec<KernelRecord>, String> {
    let text;
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(flate2::read::GzDecoder::new(bytes), RECORDS_CAP),
            &mut out,
        )
        .map_err(|e| format!("not a gzip stream: {e}"))?;
        text = out;
        &text[..]
    } else {
        bytes
    };
    serde_json::from_slice(bytes)
        .map_err(|e| format!("not kc's kernel records (kc exec --kernels-out): {e}"))
}

/// Kernels of one identifier and geometry, with their count and time per iteration.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct KernelGroup {
    pub kernel: String,
    pub grid: [u32; 3],
    pub per_iteration: f64,
    pub us: f64,
}

/// Matched kernels of one identifier and geometry: the model's time and kc's, per iteration.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct KernelDiff {
    pub kernel: String,
    pub grid: [u32; 3],
    pub per_iteration: f64,
    pub model_us: f64,
    pub kc_us: f64,
}

/// A unit's matched kernels: the model's time and kc's, per iteration.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct UnitDiff {
    pub unit: u32,
    pub label: String,
    pub kernels_per_iteration: f64,
    pub model_us: f64,
    pub kc_us: f64,
}

/// A unit whose traced kernels the model's graph ran, each at its aligned place: their
/// time there per model iteration.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct UnitInModelGraph {
    pub unit: u32,
    pub kernels_per_iteration: f64,
    pub model_us: f64,
}

/// The two graphs side by side, per model iteration.
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
pub struct GraphsSideBySide {
    /// The model's graph: replays profiled and used, kernels and their time, copies and
    /// fills and theirs.
    pub model_replays: usize,
    pub model_replays_used: usize,
    pub model_kernels: usize,
    pub model_kernel_us: f64,
    pub model_copies: usize,
    pub model_copy_us: f64,
    /// kc's graph (one CUPTI-recorded replay of `kc_iterations` iterations): kernels and
    /// their time; copies and fills the graph ran as driver kernels (CUPTI records no
    /// other copy).
    pub kc_iterations: u32,
    pub kc_kernels: f64,
    pub kc_kernel_us: f64,
    pub kc_driver_copies: f64,
    pub kc_driver_copy_us: f64,
    /// All the copies and fills kc's graph ran and their time, where its verification
    /// recorded copy and fill activity (`fidelity.copies_launched`, since session 48):
    /// the driver's copy kernels and the copy engine's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kc_copies: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kc_copy_us: Option<f64>,
    /// Kernels both launched at the aligned place, and their time on each side.
    pub matched: f64,
    pub matched_model_us: f64,
    pub matched_kc_us: f64,
    /// Kernels only one side launched: how many and their time, and the groups of most
    /// time first.
    pub model_only_kernels: f64,
    pub model_only_us: f64,
    pub kc_only_kernels: f64,
    pub kc_only_us: f64,
    pub model_only: Vec<KernelGroup>,
    pub kc_only: Vec<KernelGroup>,
    /// Matched kernels whose time differs most, and units (with a plan) likewise.
    pub furthest_kernels: Vec<KernelDiff>,
    pub furthest_units: Vec<UnitDiff>,
    /// The model's kernels the traced steps account for (with a plan), per iteration.
    pub model_kernels_in_units: f64,
    /// With a plan: every unit all of whose traced kernels the model's graph ran at their
    /// aligned places, by unit id, with their time there (the reference a unit alone is
    /// set against in the report).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub units_whole: Vec<UnitInModelGraph>,
    /// Where the alignment gave up: the sides differ in more places than it searches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_aligned: Option<String>,
}

impl GraphsSideBySide {
    /// One clause for the sentence beside the prediction: the matched kernels' difference,
    /// the kernels only one side ran, and the model's copies and fills (which CUPTI does
    /// not record of kc's graph unless it ran them as the driver's kernels).
    pub fn summary(&self) -> String {
        let (mn, mu) = (self.model_only_kernels, self.model_only_us);
        let (kn, ku) = (self.kc_only_kernels, self.kc_only_us);
        let kernels = |n: f64| {
            if (n - 1.0).abs() < 1e-9 {
                "kernel"
            } else {
                "kernels"
            }
        };
        format!(
            "kernel by kernel beside the model's graph (per iteration): the {:.0} kernels both ran at the same place took {:+.1} us in kc's ({:.1} against {:.1} us), the model's graph ran {mn:.0} {} kc's did not ({mu:.1} us) and kc's {kn:.0} {} the model's did not ({ku:.1} us), and the model's graph's {} copies and fills took {:.1} us {}",
            self.matched,
            self.matched_kc_us - self.matched_model_us,
            self.matched_kc_us,
            self.matched_model_us,
            kernels(mn),
            kernels(kn),
            self.model_copies,
            self.model_copy_us,
            match (self.kc_copies, self.kc_copy_us) {
                (Some(n), Some(us)) => format!("and kc's graph's {n:.0} took {us:.1} us"),
                _ => "(kc's graph's copies are not in its kernel record)".to_string(),
            }
        )
    }
}

/// How many groups each list keeps.
const LISTED: usize = 8;
/// The most edits the alignment searches: sides this far apart are different programs.
/// Its memory grows with the square (at this bound, 16 M diagonals' ends: 128 MB).
const MAX_EDITS: usize = 4_000;

/// A kernel's identifier for the alignment: the last component of its readable name.
fn identifier(name: &str) -> String {
    let r = readable_name(name);
    r.rsplit("::").next().unwrap_or(&r).to_string()
}

/// The first launch of a record of one graph launched one or more times back to back: a
/// launch runs each of its graph nodes once, so a record whose every node ran `k` times
/// holds `k` launches (`kc exec --verify` records three since session 52, one before).
/// A record whose nodes ran unevenly is kept whole.
pub fn first_launch(records: Vec<KernelRecord>) -> Vec<KernelRecord> {
    let mut runs: std::collections::HashMap<u64, usize> = Default::default();
    for r in &records {
        *runs.entry(r.graph_node).or_default() += 1;
    }
    let k = runs.values().copied().max().unwrap_or(1);
    if k < 2 || runs.values().any(|&c| c != k) {
        return records;
    }
    match crate::results::fidelity::split_launches(&records, k) {
        Some(mut each) => each.swap_remove(0),
        None => records,
    }
}

/// Sets kc's graph (`records`, one replay of `iterations` iterations) beside the model's
/// (`model`, one iteration); `plan` gives the matched kernels their units.
pub fn compare(
    model: &ModelIteration,
    records: &[KernelRecord],
    iterations: u32,
    plan: Option<&Plan>,
) -> GraphsSideBySide {
    let its = iterations.max(1) as usize;
    let per = |x: f64| x / its as f64;
    let mut recs: Vec<&KernelRecord> = records.iter().collect();
    recs.sort_by_key(|r| (r.graph_node, r.start_ns));
    let (copies, kernels): (Vec<&KernelRecord>, Vec<&KernelRecord>) =
        recs.into_iter().partition(|r| is_driver_copy(&r.name));
    let dur = |r: &KernelRecord| r.end_ns.saturating_sub(r.start_ns) as f64 / 1000.0;
    let mut out = GraphsSideBySide {
        model_replays: model.replays,
        model_replays_used: model.replays_used,
        model_kernels: model.kernels.len(),
        model_kernel_us: model.kernels.iter().map(|k| k.dur_us).sum(),
        model_copies: model.copies,
        model_copy_us: model.copy_us,
        kc_iterations: its as u32,
        kc_kernels: per(kernels.len() as f64),
        kc_kernel_us: per(kernels.iter().map(|r| dur(r)).sum()),
        kc_driver_copies: per(copies.len() as f64),
        kc_driver_copy_us: per(copies.iter().map(|r| dur(r)).sum::<f64>() + 0.0),
        ..Default::default()
    };
    // Keys: identifier and geometry, interned.
    let mut keys: HashMap<(String, [u32; 3], [u32; 3]), u32> = HashMap::new();
    let mut key = |name: &str, grid: [u32; 3], block: [u32; 3]| -> u32 {
        let n = keys.len() as u32;
        *keys.entry((identifier(name), grid, block)).or_insert(n)
    };
    let dims = |d: [i32; 3]| d.map(|x| x.max(0) as u32);
    let m_keys: Vec<u32> = (0..its)
        .flat_map(|_| model.kernels.iter())
        .map(|k| key(&k.name, k.grid, k.block))
        .collect();
    let k_keys: Vec<u32> = kernels
        .iter()
        .map(|r| key(&r.name, dims(r.grid), dims(r.block)))
        .collect();
    let Some(pairs) = shortest_edit_pairs(&m_keys, &k_keys, MAX_EDITS) else {
        out.not_aligned = Some(format!(
            "the two graphs differ in more than {MAX_EDITS} places ({} kernels against {}): not set side by side",
            m_keys.len(),
            k_keys.len()
        ));
        return out;
    };
    let m = model.kernels.len().max(1);
    let mk = |i: usize| &model.kernels[i % m];
    // The unit of each of the model's kernels, through the traced steps.
    let (unit_of, traced_of) = plan.map(|p| model_units(p, model, its)).unwrap_or_default();
    out.model_kernels_in_units = per(unit_of.iter().filter(|u| u.is_some()).count() as f64);
    // A unit is whole in the model's graph where as many of its kernels aligned there as
    // the trace holds for it.
    let mut in_model: HashMap<u32, (usize, f64)> = HashMap::new();
    for (i, u) in unit_of.iter().enumerate() {
        if let Some(u) = u {
            let e = in_model.entry(*u).or_default();
            e.0 += 1;
            e.1 += mk(i).dur_us;
        }
    }
    let mut whole: Vec<UnitInModelGraph> = in_model
        .into_iter()
        .filter(|(u, (n, _))| traced_of.get(u) == Some(n))
        .map(|(unit, (n, us))| UnitInModelGraph {
            unit,
            kernels_per_iteration: per(n as f64),
            model_us: per(us),
        })
        .collect();
    whole.sort_by_key(|w| w.unit);
    out.units_whole = whole;
    let mut matched_m = vec![false; m_keys.len()];
    let mut matched_k = vec![false; k_keys.len()];
    let mut by_kernel: HashMap<u32, (String, [u32; 3], usize, f64, f64)> = HashMap::new();
    let mut by_unit: HashMap<u32, (usize, f64, f64)> = HashMap::new();
    for &(i, j) in &pairs {
        matched_m[i] = true;
        matched_k[j] = true;
        let (mu, ku) = (mk(i).dur_us, dur(kernels[j]));
        out.matched += 1.0;
        out.matched_model_us += mu;
        out.matched_kc_us += ku;
        let e = by_kernel
            .entry(m_keys[i])
            .or_insert_with(|| (identifier(&mk(i).name), mk(i).grid, 0, 0.0, 0.0));
        e.2 += 1;
        e.3 += mu;
        e.4 += ku;
        if let Some(Some(u)) = unit_of.get(i) {
            let e = by_unit.entry(*u).or_default();
            e.0 += 1;
            e.1 += mu;
            e.2 += ku;
        }
    }
    out.matched = per(out.matched);
    out.matched_model_us = per(out.matched_model_us);
    out.matched_kc_us = per(out.matched_kc_us);
    let totals = |items: &[(String, [u32; 3], f64)]| -> (f64, f64) {
        // An empty sum is -0.0: `+ 0.0` keeps "0.0" in what is printed.
        (
            per(items.len() as f64),
            per(items.iter().map(|i| i.2).sum::<f64>() + 0.0),
        )
    };
    let only = |items: Vec<(String, [u32; 3], f64)>| -> Vec<KernelGroup> {
        let mut g: HashMap<(String, [u32; 3]), (usize, f64)> = HashMap::new();
        for (name, grid, us) in items {
            let e = g.entry((name, grid)).or_default();
            e.0 += 1;
            e.1 += us;
        }
        let mut v: Vec<KernelGroup> = g
            .into_iter()
            .map(|((kernel, grid), (n, us))| KernelGroup {
                kernel,
                grid,
                per_iteration: per(n as f64),
                us: per(us),
            })
            .collect();
        v.sort_by(|a, b| b.us.total_cmp(&a.us).then_with(|| a.kernel.cmp(&b.kernel)));
        v.truncate(LISTED);
        v
    };
    let model_only: Vec<_> = (0..m_keys.len())
        .filter(|&i| !matched_m[i])
        .map(|i| (identifier(&mk(i).name), mk(i).grid, mk(i).dur_us))
        .collect();
    (out.model_only_kernels, out.model_only_us) = totals(&model_only);
    out.model_only = only(model_only);
    let kc_only: Vec<_> = (0..k_keys.len())
        .filter(|&j| !matched_k[j])
        .map(|j| {
            let r = kernels[j];
            (identifier(&r.name), dims(r.grid), dur(r))
        })
        .collect();
    (out.kc_only_kernels, out.kc_only_us) = totals(&kc_only);
    out.kc_only = only(kc_only);
    let mut kd: Vec<KernelDiff> = by_kernel
        .into_values()
        .map(|(kernel, grid, n, mu, ku)| KernelDiff {
            kernel,
            grid,
            per_iteration: per(n as f64),
            model_us: per(mu),
            kc_us: per(ku),
        })
        .collect();
    keep_furthest(
        &mut kd,
        |k| (k.model_us, k.kc_us),
        |a, b| a.kernel.cmp(&b.kernel),
    );
    out.furthest_kernels = kd;
    if let Some(p) = plan {
        let mut ud: Vec<UnitDiff> = by_unit
            .into_iter()
            .map(|(u, (n, mu, ku))| UnitDiff {
                unit: u,
                label: p
                    .units
                    .get(u as usize)
                    .map_or_else(String::new, |x| x.label.clone()),
                kernels_per_iteration: per(n as f64),
                model_us: per(mu),
                kc_us: per(ku),
            })
            .collect();
        keep_furthest(
            &mut ud,
            |u| (u.model_us, u.kc_us),
            |a, b| a.unit.cmp(&b.unit),
        );
        out.furthest_units = ud;
    }
    out
}

/// Keeps the [`LISTED`] items whose two times (`times`: the model's, kc's) lie furthest
/// apart, furthest first; `tie` orders equal gaps, so the list does not depend on hash
/// order.
fn keep_furthest<T>(
    v: &mut Vec<T>,
    times: impl Fn(&T) -> (f64, f64),
    tie: impl Fn(&T, &T) -> std::cmp::Ordering,
) {
    let gap = |x: &T| {
        let (model, kc) = times(x);
        (kc - model).abs()
    };
    v.sort_by(|a, b| gap(b).total_cmp(&gap(a)).then_with(|| tie(a, b)));
    v.truncate(LISTED);
}

/// The unit of each of the model's kernels repeated `its` times: the traced steps' kernels
/// (plan order by traced start; the same Kineto names as the model's trace) aligned with
/// them by name; and how many kernels the traced steps hold per unit.
fn model_units<'a>(
    plan: &'a Plan,
    model: &'a ModelIteration,
    its: usize,
) -> (Vec<Option<u32>>, HashMap<u32, usize>) {
    let mut steps: Vec<&crate::plan::types::Step> = plan.steps.iter().collect();
    steps.sort_by_key(|s| s.traced_start_ns);
    let mut names: HashMap<&str, u32> = HashMap::new();
    let mut id = |s: &'a str| -> u32 {
        let n = names.len() as u32;
        *names.entry(s).or_insert(n)
    };
    let mut traced: Vec<(u32, u32)> = Vec::new();
    for s in steps {
        let Some(u) = plan.units.get(s.unit as usize) else {
            continue;
        };
        for k in u.kernels.iter().filter(|k| !is_runtime_copy(k)) {
            traced.push((id(k.as_str()), s.unit));
        }
    }
    let m_ids: Vec<u32> = (0..its)
        .flat_map(|_| model.kernels.iter())
        .map(|k| id(k.name.as_str()))
        .collect();
    let t_ids: Vec<u32> = traced.iter().map(|t| t.0).collect();
    let mut out = vec![None; m_ids.len()];
    for (i, j) in shortest_edit_pairs(&m_ids, &t_ids, MAX_EDITS).unwrap_or_default() {
        out[i] = Some(traced[j].1);
    }
    let mut per_unit: HashMap<u32, usize> = HashMap::new();
    for t in &traced {
        *per_unit.entry(t.1).or_default() += 1;
    }
    (out, per_unit)
}

/// The pairs (i, j) with a[i] == b[j] that a shortest edit script from `a` to `b` keeps
/// (Myers' O((n + m) D) greedy algorithm), in order; `None` where it needs more than
/// `max_edits` insertions and deletions. Memory is O(D²): each round keeps only the
/// diagonals it reached.
pub fn shortest_edit_pairs<T: PartialEq>(
    a: &[T],
    b: &[T],
    max_edits: usize,
) -> Option<Vec<(usize, usize)>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let snake = |mut x: isize, mut y: isize| -> isize {
        while x < n && y < m && a[x as usize] == b[y as usize] {
            x += 1;
            y += 1;
        }
        x
    };
    // rounds[d][k + d]: the furthest x on diagonal k (x - y) with d edits.
    let mut rounds: Vec<Vec<isize>> = Vec::new();
    let limit = max_edits.min((n + m) as usize) as isize;
    let mut end = None;
    for d in 0..=limit {
        let mut v = vec![0isize; (2 * d + 1) as usize];
        for k in (-d..=d).step_by(2) {
            let x = if d == 0 {
                0
            } else {
                let prev = &rounds[(d - 1) as usize];
                let at = |k: isize| prev[(k + d - 1) as usize];
                if k == -d || (k != d && at(k - 1) < at(k + 1)) {
                    at(k + 1)
                } else {
                    at(k - 1) + 1
                }
            };
            let x = snake(x, x - k);
            v[(k + d) as usize] = x;
            if x >= n && x - k >= m {
                end = Some(d);
            }
        }
        rounds.push(v);
        if end.is_some() {
            break;
        }
    }
    let d_end = end?;
    let mut pairs = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (1..=d_end).rev() {
        let k = x - y;
        let prev = &rounds[(d - 1) as usize];
        let at = |k: isize| prev[(k + d - 1) as usize];
        let prev_k = if k == -d || (k != d && at(k - 1) < at(k + 1)) {
            k + 1
        } else {
            k - 1
        };
        let prev_x = at(prev_k);
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            x -= 1;
            y -= 1;
            pairs.push((x as usize, y as usize));
        }
        x = prev_x;
        y = prev_y;
    }
    while x > 0 && y > 0 {
        x -= 1;
        y -= 1;
        pairs.push((x as usize, y as usize));
    }
    pairs.reverse();
    Some(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The longest common subsequence's length by dynamic programming, for checking.
    fn lcs_len(a: &[u8], b: &[u8]) -> usize {
        let mut t = vec![vec![0usize; b.len() + 1]; a.len() + 1];
        for i in (0..a.len()).rev() {
            for j in (0..b.len()).rev() {
                t[i][j] = if a[i] == b[j] {
                    1 + t[i + 1][j + 1]
                } else {
                    t[i + 1][j].max(t[i][j + 1])
                };
            }
        }
        t[0][0]
    }

    #[test]
    fn the_edit_script_keeps_a_longest_common_subsequence() {
        let a = b"ABCABBA";
        let b = b"CBABAC";
        let p = shortest_edit_pairs(a, b, 100).unwrap();
        assert_eq!(p.len(), 4);
        assert!(p.iter().all(|&(i, j)| a[i] == b[j]));
        assert!(p.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert_eq!(shortest_edit_pairs::<u8>(&[], &[], 0), Some(vec![]));
        assert_eq!(shortest_edit_pairs(b"AB", b"CD", 3), None);
        assert_eq!(shortest_edit_pairs(b"AB", b"CD", 4), Some(vec![]));
    }

    proptest::proptest! {
        #[test]
        fn the_edit_script_is_as_long_as_the_lcs(
            a in proptest::collection::vec(0u8..4, 0..40),
            b in proptest::collection::vec(0u8..4, 0..40),
        ) {
            let p = shortest_edit_pairs(&a, &b, 200).unwrap();
            proptest::prop_assert_eq!(p.len(), lcs_len(&a, &b));
            proptest::prop_assert!(p.iter().all(|&(i, j)| a[i] == b[j]));
            proptest::prop_assert!(p.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        }
    }

    fn rec(name: &str, node: u64, dur_ns: u64, grid: i32) -> KernelRecord {
        KernelRecord {
            name: name.into(),
            grid: [grid, 1, 1],
            block: [128, 1, 1],
            registers: 32,
            shared_bytes: 0,
            start_ns: node * 10_000,
            end_ns: node * 10_000 + dur_ns,
            graph_node: node,
        }
    }

    fn mk(name: &str, dur_us: f64, grid: u32) -> ModelKernel {
        ModelKernel {
            name: name.into(),
            grid: [grid, 1, 1],
            block: [128, 1, 1],
            dur_us,
        }
    }

    /// kc's graph of two iterations beside the model's one: the model's extra fill kernel
    /// is its own, kc's silu runs shorter, and a copy is a driver copy.
    #[test]
    fn the_graphs_are_set_side_by_side_per_iteration() {
        let model = ModelIteration {
            replays: 5,
            replays_used: 4,
            kernels: vec![
                mk(
                    "void at::native::vectorized_elementwise_kernel<8, silu>(int)",
                    10.0,
                    64,
                ),
                mk(
                    "void at::native::(anonymous namespace)::fill_kernel<float>(float*)",
                    2.0,
                    1,
                ),
                mk("nvjet_sm90_tst_64x8", 30.0, 32),
            ],
            copies: 1,
            copy_us: 4.0,
        };
        let silu = "_ZN2at6native29vectorized_elementwise_kernelILi8EZZZ4siluEEEvi";
        let records = vec![
            rec(silu, 0, 5_000, 64),
            rec("nvjet_sm90_tst_64x8", 1, 31_000, 32),
            rec("memcpy128", 2, 3_000, 4),
            rec(silu, 3, 5_000, 64),
            rec("nvjet_sm90_tst_64x8", 4, 31_000, 32),
        ];
        let s = compare(&model, &records, 2, None);
        assert_eq!(s.model_kernels, 3);
        assert_eq!(s.kc_kernels, 2.0);
        assert_eq!(s.kc_driver_copies, 0.5);
        assert_eq!(s.matched, 2.0);
        assert!((s.matched_model_us - 40.0).abs() < 1e-9);
        assert!((s.matched_kc_us - 36.0).abs() < 1e-9);
        assert_eq!(s.model_only.len(), 1);
        assert_eq!(s.model_only[0].kernel, "fill_kernel");
        assert_eq!(s.model_only[0].per_iteration, 1.0);
        assert_eq!((s.model_only_kernels, s.model_only_us), (1.0, 2.0));
        assert_eq!((s.kc_only_kernels, s.kc_only_us), (0.0, 0.0));
        assert!(
            s.summary()
                .contains("the model's graph ran 1 kernel kc's did not (2.0 us)"),
            "{}",
            s.summary()
        );
        assert!(s.kc_only.is_empty());
        assert_eq!(
            s.furthest_kernels[0].kernel,
            "vectorized_elementwise_kernel"
        );
        assert!((s.furthest_kernels[0].kc_us - 5.0).abs() < 1e-9);
    }

    #[test]
    fn a_record_of_launches_back_to_back_gives_its_first() {
        // Three launches of a graph of two nodes, each later launch 1 ms on.
        let launch = |at: u64| {
            let mut a = rec("gemm", 1, 10_000, 4);
            let mut b = rec("relu", 2, 2_000, 4);
            (a.start_ns, a.end_ns) = (at, at + 10_000);
            (b.start_ns, b.end_ns) = (at + 10_000, at + 12_000 + at / 1_000_000);
            vec![a, b]
        };
        let three: Vec<KernelRecord> = [0, 1_000_000, 2_000_000]
            .iter()
            .flat_map(|&t| launch(t))
            .collect();
        let first = first_launch(three.clone());
        assert_eq!(first, launch(0));
        // One launch stands; nodes that ran unevenly keep the record whole.
        assert_eq!(first_launch(launch(0)), launch(0));
        let mut uneven = three;
        uneven.pop();
        assert_eq!(first_launch(uneven.clone()), uneven);
    }
}
