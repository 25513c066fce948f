//! What the replay launched, against what the trace recorded (`kc exec --verify`): the
//! kernels CUPTI saw in one graph replay, assigned to the plan's steps in capture order,
//! give per step the in-context duration (the sum of the step's kernels as they ran inside
//! kc's graph), and in total how much of the graph replay is kernels (the rest is launch
//! and gap overhead) and how far the in-context kernels are from the traced ones (the
//! context effect). No CUDA here: the records come from [`super::cupti`] (or a fixture).
//!
//! Invariant: kernels are assigned to steps in capture order: where the replay launched as
//! many kernels as the trace holds, a step takes the next launched kernels whole where they
//! are its own by name in any order (a library that forks inside the op launches them in
//! another order than the trace lists them); else each traced kernel takes the next
//! launched kernel of its name within a few places (what it skips is counted as launched
//! but not traced, and timed with its step), else the next launched kernel (another name at
//! that position: cuBLASLt or cuDNN picked another algorithm); a replay that runs out of
//! kernels cuts the alignment there.

use crate::results::stats::{median, weighted_median};
use serde::{Deserialize, Serialize};

/// How far ahead a traced kernel looks for a launched kernel of its name.
const WINDOW: usize = 4;

/// One kernel the replay launched, as CUPTI records it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelRecord {
    /// As the driver knows it (mangled for C++ kernels).
    pub name: String,
    pub grid: [i32; 3],
    pub block: [i32; 3],
    pub registers: u16,
    pub shared_bytes: i32,
    pub start_ns: u64,
    pub end_ns: u64,
    /// The kernel node's id in the executable graph (capture order).
    pub graph_node: u64,
}

/// A copy or fill the GPU ran, as CUPTI's memcpy and memset activity records it
/// (`--verify`, graph mode, since session 48).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CopyRecord {
    /// A fill (memset), else a copy.
    pub fill: bool,
    pub bytes: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// The copy or fill node's id in the executable graph.
    pub graph_node: u64,
}

/// The time of the copies and fills one replay ran that no kernel record holds (a node
/// recorded as the driver's copy kernel is in the kernels' time), microseconds.
pub fn copies_beyond_kernels_us(kernels: &[KernelRecord], copies: &[CopyRecord]) -> f64 {
    let as_kernels: std::collections::BTreeSet<u64> = kernels
        .iter()
        .filter(|k| is_driver_copy(&k.name))
        .map(|k| k.graph_node)
        .collect();
    copies
        .iter()
        .filter(|c| !as_kernels.contains(&c.graph_node))
        .map(|c| c.end_ns.saturating_sub(c.start_ns) as f64 / 1000.0)
        .sum::<f64>()
        + 0.0
}

/// The copies and fills in records of one or more launches: each copy or fill activity,
/// and each driver copy kernel whose graph node no copy activity was recorded for (a node
/// CUPTI records both ways counts once a launch). Over one graph replay, the copy and fill
/// nodes it ran.
pub fn copies_in(kernels: &[KernelRecord], copies: &[CopyRecord]) -> u64 {
    let nodes: std::collections::BTreeSet<u64> = copies.iter().map(|c| c.graph_node).collect();
    copies.len() as u64
        + kernels
            .iter()
            .filter(|k| is_driver_copy(&k.name) && !nodes.contains(&k.graph_node))
            .count() as u64
}

/// One replayed step as the trace recorded it.
#[derive(Clone, Debug)]
pub struct TracedStep<'a> {
    pub unit: u32,
    pub label: &'a str,
    /// Demangled kernel names of one invocation, in launch order (memcpy/memset excluded).
    pub kernels: Vec<&'a str>,
    /// The copies and fills among the invocation's traced activities, which a graph may run
    /// as driver kernels ([`is_driver_copy`]).
    pub copies: usize,
    /// The traced launch geometry of each of `kernels` (empty when the plan does not
    /// record it: plans before version 5).
    pub geometry: Vec<Option<crate::plan::types::LaunchDims>>,
    pub traced_ns: i64,
    /// How long its rank's GPU sat idle in the trace before this invocation started
    /// (0 when it started as the previous one ended): a kernel the trace ran after a gap
    /// is no like-with-like reference for the same kernel inside a graph, where it runs
    /// back to back.
    pub idle_before_ns: i64,
}

/// The most idle time before a traced invocation for it to count as run back to back,
/// like the invocations inside a graph replay.
pub const BACK_TO_BACK_IDLE_NS: i64 = 2_000;

/// Per plan step, how long its rank's GPU sat idle in the trace before it started (the
/// steps in trace start order; 0 for a rank's first step).
pub fn idle_before(plan: &crate::plan::types::Plan) -> Vec<i64> {
    let mut busy_until: std::collections::HashMap<u32, i64> = Default::default();
    plan.steps
        .iter()
        .map(|s| {
            let rank = plan.streams.get(s.stream as usize).map_or(0, |x| x.rank);
            let end = busy_until.entry(rank).or_insert(i64::MIN);
            let idle = if *end == i64::MIN {
                0
            } else {
                (s.traced_start_ns - *end).max(0)
            };
            *end = (*end).max(s.traced_start_ns + s.traced_ns);
            idle
        })
        .collect()
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UnitFidelity {
    pub unit: u32,
    pub label: String,
    pub steps: u64,
    /// Median of in-context / traced − 1 over the unit's aligned steps whose kernels all
    /// matched the trace's by name (`steps` of them), percent.
    pub median_error_pct: f64,
    pub traced_us: f64,
    pub in_context_us: f64,
}

/// The fidelity section of graph-mode results.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fidelity {
    /// Kernels the replay launched in one graph replay, and kernels the trace holds for
    /// the replayed steps.
    pub kernels_launched: u64,
    pub kernels_traced: u64,
    /// Aligned kernels whose traced name's base identifier appears in the launched name.
    pub kernels_aligned: u64,
    pub kernels_name_matched: u64,
    /// Of the name-matched kernels whose traced geometry the plan records, those launched
    /// with the same grid and block.
    #[serde(default)]
    pub kernels_geometry_known: u64,
    #[serde(default)]
    pub kernels_geometry_matched: u64,
    /// Launched kernels the trace does not have (a step took them on its way to its own).
    pub kernels_extra: u64,
    /// Steps aligned, of the replayed steps with kernels.
    pub steps_aligned: u64,
    pub steps_with_kernels: u64,
    /// Σ of the launched kernels' durations in one replay (in context), and the traced
    /// time of the aligned steps, microseconds.
    pub in_context_kernels_us: f64,
    /// The time in one replay during which one of those kernels ran (the union of their
    /// intervals), microseconds, from session 40: under `in_context_kernels_us` where
    /// kernels ran side by side, whose durations count the overlap; absent before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_context_busy_us: Option<f64>,
    pub aligned_traced_us: f64,
    pub aligned_in_context_us: f64,
    /// First kernel of the replay to last kernel's end, microseconds.
    pub kernel_span_us: f64,
    /// Median over aligned steps of |in-context / traced − 1|, percent.
    pub step_median_abs_error_pct: Option<f64>,
    /// The same median with each step weighted by its traced time: half the traced time
    /// lies in steps at most this far off. The plain median counts a 3 us kernel as much as
    /// a 3 ms one, and short kernels are the ones a few hundred nanoseconds move by percents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_time_weighted_median_abs_error_pct: Option<f64>,
    /// The plain median over the aligned steps the trace ran back to back (its GPU idle
    /// at most [`BACK_TO_BACK_IDLE_NS`] before them), as a graph runs them, and how many
    /// steps that is: in an eager trace the others started after a gap, and their traced
    /// duration is no like-with-like reference for a graph replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_back_to_back_median_abs_error_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_back_to_back: Option<u64>,
    /// Units weighing most in |in-context − traced|, worst first (at most 10).
    pub worst_units: Vec<UnitFidelity>,
    /// Every unit with aligned steps, by unit id: its kernels' in-context time in the
    /// graph, to set beside the unit alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub units: Vec<UnitFidelity>,
    /// Copies the graph runs as driver kernels (`memcpy32_post`, `memcpy128`: how CUDA runs
    /// a device-to-device memcpy node), which the trace records as copies, not kernels:
    /// counted here, not in `kernels_launched` or `kernels_extra`; a step that traced copies
    /// takes as many at its place, and a traced kernel's search skips them.
    #[serde(default)]
    pub copy_kernels: u64,
    /// Copies and fills the trace holds for the replayed steps, and (where CUPTI recorded
    /// copy and fill activity, since session 48) those the replay ran: the graph's nodes
    /// recorded as a copy or fill, or as the driver's copy kernel, each once. A unit whose
    /// replay makes fewer copies than the trace holds for it (an in-place op's autograd
    /// clone, folded into the op's unit before a79957b) shows here, where the kernels alone
    /// cannot show it.
    #[serde(default)]
    pub copies_traced: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copies_launched: Option<u64>,
    /// Their time in the replay, microseconds, beyond the driver's copy kernels (which
    /// `in_context_kernels_us` holds): the copy engine's copies and fills, which no kernel
    /// record shows (since session 48).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copies_us: Option<f64>,
    /// Where the alignment was cut (the replay launched fewer kernels), if it was.
    pub cut: Option<String>,
    /// The first aligned step whose launched kernel has another name than the traced one.
    pub first_mismatch: Option<String>,
    /// The first step that found its kernel only past launched kernels the trace does not
    /// hold (counted in `kernels_extra`): the step and the first of them (from session 46).
    /// Kernels are matched by base name, so a step that launched a kernel of another name
    /// (BLOOM's `sub(1, x)` on a GPU scalar) leaves the next steps each taking the one after
    /// theirs, and `first_mismatch` comes only where that runs out, steps later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_extra: Option<String>,
    /// Launches the in-context figures are the mean of (each unit's, the sums and the
    /// span), recorded back to back after one from an idle GPU, as timed replays run
    /// (session 52 on); the medians and counts are those of the first of these launches.
    /// Absent where one launch from an idle GPU was recorded (before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launches_averaged: Option<u32>,
}

/// [`measure`] over several launches of one graph recorded back to back (`launches`, each
/// one launch's records): the first launch's alignment, counts and medians, with the
/// in-context durations (each unit's, the sums, the span) the mean over the launches.
/// A unit's mean takes the launches that aligned all its steps as the first did, and a
/// launch cut short of the first's alignment counts toward none of them. `None` without
/// launches.
pub fn measure_back_to_back(
    steps: &[TracedStep<'_>],
    launches: &[Vec<KernelRecord>],
) -> Option<Fidelity> {
    let each: Vec<Fidelity> = launches.iter().map(|l| measure(steps, l)).collect();
    let mut f = each.first()?.clone();
    let alike: Vec<&Fidelity> = each
        .iter()
        .filter(|g| g.cut == f.cut && g.steps_aligned == f.steps_aligned)
        .collect();
    let n = alike.len() as f64;
    let mean = |x: &dyn Fn(&Fidelity) -> f64| alike.iter().map(|g| x(g)).sum::<f64>() / n;
    f.in_context_kernels_us = mean(&|g| g.in_context_kernels_us);
    f.aligned_in_context_us = mean(&|g| g.aligned_in_context_us);
    f.kernel_span_us = mean(&|g| g.kernel_span_us);
    if alike.iter().all(|g| g.in_context_busy_us.is_some()) {
        f.in_context_busy_us = Some(mean(&|g| g.in_context_busy_us.unwrap_or(0.0)));
    }
    for u in &mut f.units {
        let same: Vec<f64> = alike
            .iter()
            .filter_map(|g| {
                let i = g.units.binary_search_by_key(&u.unit, |v| v.unit).ok()?;
                let v = &g.units[i];
                (v.steps == u.steps).then_some(v.in_context_us)
            })
            .collect();
        u.in_context_us = same.iter().sum::<f64>() / same.len().max(1) as f64;
    }
    for w in &mut f.worst_units {
        if let Ok(i) = f.units.binary_search_by_key(&w.unit, |v| v.unit) {
            w.in_context_us = f.units[i].in_context_us;
        }
    }
    f.launches_averaged = Some(alike.len() as u32);
    Some(f)
}

/// One unit replayed alone (`kc exec --isolated --verify`): the kernels its unrolled
/// launches ran, per invocation, against the kernels the trace holds for one invocation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UnitLaunches {
    pub launched_per_invocation: f64,
    pub traced_per_invocation: u64,
    /// Share of the traced kernels' base names found among the launched kernels' names.
    pub names_matched: f64,
    /// Mean summed kernel duration per invocation, inside the unit's own graph.
    pub kernels_us: f64,
    /// Mean time per invocation during which at least one of its kernels ran (the union
    /// of their intervals), from session 39: under `kernels_us` where kernels ran side by
    /// side (ResNeXt-101 32x8d's grouped convolutions: durations 5.4-6.7 × the unit's
    /// time). The round's split by busy time takes it against the round's recorded span
    /// less its gaps. Absent in earlier results, and in session 39-40's where the unit
    /// launched no kernels (a copy node): 0 there since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_us: Option<f64>,
    /// Its kernels at each step its launch ran, so that the round's kernels at a step are
    /// set against the same step's alone, not against the mean over steps whose data take
    /// the kernels other times. Sessions 43-48: only for a unit measured with each
    /// invocation from the model's values ([`super::EachInvocation`]); from session 49 for
    /// every unit measured at its places in the memory image, not for one measured again
    /// with every launch restoring the model's values (which records no steps).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_step: Vec<StepKernels>,
    /// A diagnostic (`kc exec --by-step-rotated`, from session 50): the same record by step
    /// from a launch of the unit's steps in the same order but starting at its second, so
    /// that each step runs at another place of its launch. Set against `by_step`, a step
    /// whose record moves with its place is slowed by the place (the launch's first), not
    /// by its data: ResNeXt-101 32x8d's grouped convolution recorded 96.9 us at its first
    /// step, first in its launch, and 46-50 us at the others (session 50).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_step_rotated: Vec<StepKernels>,
    /// Its kernels alone in the model's cache state (recorded by default since session 51;
    /// `--no-alone-in-model-cache` skips it): each invocation after L2 is turned over and
    /// the reads the model left in L2 are touched again, the rest left to come from memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_model_cache: Option<ModelCacheKernels>,
    /// From session 46, where the trace holds kernels for the unit: the launched kernels
    /// whose name holds none of the traced ones' base names, by name (as the driver knows
    /// it, cut to 100 characters), with their time per invocation, microseconds; the
    /// longest first, at most [`NOT_TRACED_NAMES`]. Convolution backwards alone launched a
    /// kernel more than traced and ran up to 90 % over their trace on ConvNeXt, Swin-T and
    /// ViT-B/16 steps; which kernel it was is read here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_traced: Vec<(String, f64)>,
    /// From session 48, where the unit's graph alone holds no restoring copies: the copies
    /// and fills its launches ran per invocation (CUPTI's copy and fill activity and the
    /// driver's copy kernels, [`copies_in`]), and those the trace holds for one invocation.
    /// Judged by [`UnitLaunches::as_traced`] since session 49, whose GPU runs found the
    /// count as traced on 1 141 of 1 145 units recorded over twelve isolated passes; the
    /// other four (`aten::histc` of both mixtures of experts, two passes each: a fill the
    /// model's graph does not run) ran it in kc's graph too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copies_per_invocation: Option<f64>,
    #[serde(default, skip_serializing_if = "super::energy::is_zero")]
    pub traced_copies_per_invocation: u64,
}

/// A unit's kernels alone in the model's cache state ([`UnitLaunches::in_model_cache`]).
/// A unit alone repeats its own steps, so every read it makes is in L2 from the invocation
/// before; in the model a read arrives from memory where the model's steps touched more
/// than L2 between it and the last touch of its bytes (`plan::cache_state`). Recorded from
/// a launch whose every invocation runs after a read over a scratch twice L2, as many of
/// its bytes written back as the model's steps before it leave dirty, and a touch of each
/// read the model left in L2 (written back where its last touch wrote it), the touches'
/// kernels left out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelCacheKernels {
    /// Mean summed kernel duration per invocation.
    pub kernels_us: f64,
    /// Mean time per invocation during which at least one of its kernels ran.
    pub busy_us: Option<f64>,
    /// Invocations a launch ran (a cycle of the unit's steps, at most its unroll).
    pub invocations: u32,
    /// Reads, over the launch's invocations, the model left in L2 (touched again), and
    /// their bytes; the reads it did not (left to come from memory), and theirs.
    pub warm_reads: u32,
    pub warm_bytes: u64,
    pub cold_reads: u32,
    pub cold_bytes: u64,
    /// The L2 the reads' distances were judged against, bytes.
    pub l2_bytes: u64,
    /// Bytes left dirty in L2 before the invocations, over the launch: as many as the
    /// model's steps before each wrote among the last L2 of bytes they touched.
    #[serde(default)]
    pub dirty_bytes: u64,
    /// Operands of the launch's invocations the memory image does not hold
    /// (`plan::cache_state::operands_outside_image`): where they lie in L2 the model's
    /// steps do not tell, and turning L2 over evicts them. `None` in results before it
    /// was recorded (after session 51's calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside_image_operands: Option<u32>,
    /// Bytes of those operands the executor holds (a back end's own tensors) touched as
    /// read just before each invocation, over the launch: those the plan binds to a step
    /// less than L2 of bytes before (the rest count among the cold reads). `None` in
    /// results before they were touched (session 52) and with them left evicted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside_image_touched_bytes: Option<u64>,
    /// How the reads' distances were counted; absent in results before session 52,
    /// which summed them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distance: Option<ReuseDistance>,
    /// Present where the held operands were touched as written, each sector's word stored
    /// back unchanged, as their producer left them (`--model-cache-held-written`, a
    /// diagnostic); absent where touched as read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_written: Option<bool>,
    /// The SM ids `[lo, hi)` whose blocks alone touched those held operands
    /// (`--model-cache-held-on-sms`, a diagnostic); absent where any SM's did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_on_sms: Option<[u32; 2]>,
    /// The model's steps run before the invocations over the launch, after L2 was turned
    /// over and their reads touched, each invocation's steps leading up to it as the lead-in
    /// pass takes them, then a marker kernel (session 54's diagnostic, kc's default since
    /// session 55; `--model-cache-lead-ins none` runs none); absent where none ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_in_steps: Option<u32>,
    /// With `--model-cache-lead-ins producers` (the default since session 55; in session 54
    /// `--model-cache-lead-in-reads-from-producers`): the invocations over the launch
    /// whose integer and boolean reads took their lead-ins' results (none of their
    /// lead-ins writes integers in place); the others' stayed on their stand-ins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_in_reads_from_producers: Option<u32>,
    /// Present where each invocation's lead-up ended with a touch of one sector, so that
    /// the kernel just before the unit was a small one (`--model-cache-small-predecessor`,
    /// a diagnostic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub small_predecessor: Option<bool>,
    /// Where the record left the unit's code before each invocation; absent in results
    /// before session 53, which kept it in the SMs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<CodeCache>,
    /// The invocations, over the launch, whose lead-up started with a kernel of long
    /// straight-line code on every SM and L2 turned over after it, so that the unit
    /// fetched its code from memory (session 53 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_evicted_invocations: Option<u32>,
    /// Present where each invocation's lead-up started with a read of one word a page of
    /// a large scratch (`--model-cache-tlb-evicted`, a diagnostic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tlb_evicted: Option<bool>,
    /// Present where each invocation's lead-up ended with a kernel that took all the shared
    /// memory a block may have on every SM (`--model-cache-smem-predecessor`, a
    /// diagnostic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smem_predecessor: Option<bool>,
}

/// Where the record in the model's cache state leaves a unit's code before an invocation
/// (`plan::cache_state::code_distance`, METHOD "Cache policy").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum CodeCache {
    /// Evicted before the invocations whose step's code the model last ran more than L2
    /// of bytes before, so that it comes from memory as in the model; kept before the
    /// others.
    Far,
    /// Evicted before every invocation (a diagnostic).
    Evicted,
    /// Kept: the unit's repeats leave it in the SMs' instruction caches (session 52's way,
    /// a diagnostic).
    Kept,
}

/// What the record in the model's cache state runs between the turnover of L2 and the
/// unit (METHOD "Cache policy").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum RecordLeadIns {
    /// Nothing: the unit's reads touched, then the unit (sessions 51-54's default, a
    /// diagnostic).
    None,
    /// The model's steps leading up to each invocation (as the lead-in pass takes them),
    /// then a marker kernel, then the unit; every integer and boolean read (indices, masks)
    /// on its stand-in, the model's values (session 54's call 6, a diagnostic).
    StandIns,
    /// Those lead-ins, their and the unit's integer and boolean reads taking the lead-ins'
    /// results as kc's graph does, in every invocation none of whose lead-ins writes
    /// integers in place (where one does, a run before every invocation would bump the
    /// indices it writes again each time, so those stay on their stand-ins).
    Producers,
}

/// How a read's distance from its last touch is counted (`plan::cache_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum ReuseDistance {
    /// Every step's touched bytes added: a byte touched twice counts twice (an upper
    /// bound), each read whole.
    Summed,
    /// The distinct bytes touched between, byte by byte of the read (a stack distance).
    Distinct,
}

/// How many of a unit's kernels the trace does not hold [`UnitLaunches::not_traced`] names.
pub const NOT_TRACED_NAMES: usize = 4;

/// A unit's kernels alone at one of its steps, per invocation, microseconds: the mean over
/// the recorded launches' invocations at that step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepKernels {
    pub step: u32,
    pub kernels_us: f64,
    pub busy_us: f64,
}

impl UnitLaunches {
    /// Its kernels (durations, busy time) at `step` where recorded by step, else `None`.
    pub fn at_step(&self, step: u32) -> Option<StepKernels> {
        self.by_step.iter().find(|s| s.step == step).copied()
    }

    /// Its kernels per invocation where a whole count (`None` where the invocations of a
    /// launch ran different counts): what tells a launch's kernels apart by step.
    pub fn whole_per_invocation(&self) -> Option<usize> {
        whole_count(self.launched_per_invocation)
    }

    /// Whether it launched alone exactly the traced kernels: as many an invocation, and
    /// every traced name among them; and, where they were recorded, as many copies and
    /// fills as the trace holds.
    pub fn as_traced(&self) -> bool {
        self.names_matched >= 1.0
            && whole_count(self.launched_per_invocation)
                == Some(self.traced_per_invocation as usize)
            && self.copies_as_traced()
    }

    /// Whether its copies and fills an invocation are the trace's, where recorded (true
    /// where not).
    pub fn copies_as_traced(&self) -> bool {
        self.copies_per_invocation
            .is_none_or(|c| whole_count(c) == Some(self.traced_copies_per_invocation as usize))
    }
}

/// A count per invocation that is whole (`None` where the invocations ran different
/// counts, or it is negative).
pub fn whole_count(per_invocation: f64) -> Option<usize> {
    let l = per_invocation;
    ((l - l.round()).abs() < 1e-6 && l >= 0.0).then_some(l.round() as usize)
}

/// The time during which at least one of `records` ran (the union of their intervals),
/// nanoseconds.
pub fn busy_ns(records: &[KernelRecord]) -> u64 {
    busy_of(records.iter())
}

/// [`busy_ns`] of records held by reference.
fn busy_of<'r>(records: impl Iterator<Item = &'r KernelRecord>) -> u64 {
    let mut spans: Vec<(u64, u64)> = records.map(|r| (r.start_ns, r.end_ns)).collect();
    spans.sort_unstable();
    let (mut busy, mut open): (u64, Option<(u64, u64)>) = (0, None);
    for (s, e) in spans {
        open = match open {
            Some((os, oe)) if s <= oe => Some((os, oe.max(e))),
            Some((os, oe)) => {
                busy += oe.saturating_sub(os);
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    busy + open.map_or(0, |(s, e)| e.saturating_sub(s))
}

/// Measures one unit's isolated launch: `records` of `invocations` invocations.
pub fn unit_launches(traced: &[&str], records: &[KernelRecord], invocations: u32) -> UnitLaunches {
    let n = f64::from(invocations.max(1));
    let matched = traced
        .iter()
        .filter(|k| records.iter().any(|r| r.name.contains(base_name(k))))
        .count();
    UnitLaunches {
        launched_per_invocation: records.len() as f64 / n,
        traced_per_invocation: traced.len() as u64,
        names_matched: if traced.is_empty() {
            1.0
        } else {
            matched as f64 / traced.len() as f64
        },
        kernels_us: records.iter().map(dur_us).sum::<f64>() / n,
        busy_us: Some(busy_ns(records) as f64 / 1000.0 / n),
        by_step: Vec::new(),
        by_step_rotated: Vec::new(),
        in_model_cache: None,
        not_traced: not_traced(traced, records, n),
        copies_per_invocation: None,
        traced_copies_per_invocation: 0,
    }
}

/// The launched kernels whose name holds none of `traced`'s base names, by name, with
/// their time per invocation (`n` of them), the longest first ([`UnitLaunches::not_traced`]);
/// none where the trace holds no kernel for the unit.
fn not_traced(traced: &[&str], records: &[KernelRecord], n: f64) -> Vec<(String, f64)> {
    if traced.is_empty() {
        return Vec::new();
    }
    let bases: Vec<&str> = traced.iter().map(|k| base_name(k)).collect();
    let mut by_name: Vec<(String, f64)> = Vec::new();
    for r in records
        .iter()
        .filter(|r| !bases.iter().any(|b| r.name.contains(b)))
    {
        let name: String = r.name.chars().take(100).collect();
        match by_name.iter_mut().find(|(k, _)| *k == name) {
            Some((_, us)) => *us += dur_us(r) / n,
            None => by_name.push((name, dur_us(r) / n)),
        }
    }
    by_name.sort_by(|a, b| b.1.total_cmp(&a.1));
    by_name.truncate(NOT_TRACED_NAMES);
    by_name
}

/// A unit's kernels by step from `launches` recorded launches (`records`, in any order),
/// each running the steps `steps` in turn with `per_invocation` kernels each: every
/// position's kernels ([`kernels_by_position`]), averaged over the positions of one step,
/// in the order the steps first run. `None` where the records do not split so.
pub fn kernels_by_step(
    records: &[KernelRecord],
    per_invocation: usize,
    steps: &[u32],
    launches: u32,
) -> Option<Vec<StepKernels>> {
    let per = vec![per_invocation; steps.len()];
    let at = kernels_by_position(records, &per, launches)?;
    let mut out: Vec<(StepKernels, u32)> = Vec::new();
    for (&step, p) in steps.iter().zip(&at) {
        let i = match out.iter().position(|(s, _)| s.step == step) {
            Some(i) => i,
            None => {
                out.push((
                    StepKernels {
                        step,
                        ..Default::default()
                    },
                    0,
                ));
                out.len() - 1
            }
        };
        out[i].0.kernels_us += p.kernels_us;
        out[i].0.busy_us += p.busy_us;
        out[i].1 += 1;
    }
    Some(
        out.into_iter()
            .map(|(mut s, n)| {
                s.kernels_us /= f64::from(n);
                s.busy_us /= f64::from(n);
                s
            })
            .collect(),
    )
}

/// The recorded launch's own timeline, per cycle: the gaps between consecutive kernels
/// (the next one's start after the last end, where it starts later) and the span from the
/// first kernel's start to the last one's end, microseconds; `None` without records. The
/// round's gap term is a residual of its event-timed launches less these kernels; the
/// same launch's own gaps tell whether the recorded launch ran like the timed ones.
pub fn gaps_and_span_us(records: &[KernelRecord], cycles: u32) -> Option<(f64, f64)> {
    let first = records.iter().map(|r| r.start_ns).min()?;
    let mut ran: Vec<&KernelRecord> = records.iter().collect();
    ran.sort_by_key(|r| (r.start_ns, r.graph_node));
    let (mut gaps_ns, mut last_end) = (0u64, first);
    for r in ran {
        gaps_ns += r.start_ns.saturating_sub(last_end);
        last_end = last_end.max(r.end_ns);
    }
    let n = f64::from(cycles.max(1)) * 1000.0;
    Some((gaps_ns as f64 / n, (last_end - first) as f64 / n))
}

/// The records a unit's launch ran after a marker: in start order, those that are not the
/// device core's own (`own`, by name) and that follow a `marker` record with none of the
/// device core's own between. A launch that runs other work before each invocation (the
/// model's steps leading up to it, `--model-cache-lead-ins`) ends it with the marker, so
/// that the invocation's kernels are told from that work's whatever their names.
pub fn after_markers(
    mut records: Vec<KernelRecord>,
    own: &[&str],
    marker: &str,
) -> Vec<KernelRecord> {
    records.sort_by_key(|k| k.start_ns);
    let mut after_marker = false;
    records.retain(|k| {
        if own.contains(&k.name.as_str()) {
            after_marker = k.name == marker;
            return false;
        }
        after_marker
    });
    records
}

/// The records of `launches` back-to-back launches of one graph, split by launch: in the
/// order they ran, `records.len() / launches` each; `None` where the records do not split
/// evenly (a launch that ran another number of kernels: no launch can be told apart then).
pub fn split_launches(records: &[KernelRecord], launches: usize) -> Option<Vec<Vec<KernelRecord>>> {
    if launches == 0 || records.is_empty() || records.len() % launches != 0 {
        return None;
    }
    let mut ran: Vec<KernelRecord> = records.to_vec();
    ran.sort_by_key(|r| (r.start_ns, r.graph_node));
    let each = ran.len() / launches;
    Some(ran.chunks(each).map(<[KernelRecord]>::to_vec).collect())
}

/// Launches of one graph recorded back to back, the first (from an idle GPU, unlike timed
/// launches, which run back to back) kept apart: the records the figures come from and how
/// many launches they hold, those launches' records apart (for each one's own timeline;
/// empty where the records did not split evenly by launch) and the first launch's.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedLaunches {
    pub records: Vec<KernelRecord>,
    pub launches: u32,
    pub each: Vec<Vec<KernelRecord>>,
    pub first: Option<Vec<KernelRecord>>,
}

impl RecordedLaunches {
    /// `n` launches' records, split by launch ([`split_launches`]), the first kept apart;
    /// where they do not split evenly, every record stands as the launches' together.
    pub fn after_first(records: Vec<KernelRecord>, n: usize) -> Self {
        match split_launches(&records, n) {
            Some(mut each) if n > 1 => {
                let first = each.remove(0);
                RecordedLaunches {
                    records: each.concat(),
                    launches: n as u32 - 1,
                    each,
                    first: Some(first),
                }
            }
            _ => RecordedLaunches {
                records,
                launches: n as u32,
                each: Vec::new(),
                first: None,
            },
        }
    }
}

/// [`gaps_and_span_us`] of each of several launches (`cycles` cycles each), averaged:
/// each launch's own timeline, so that what lies between launches is no gap; `None`
/// without launches.
pub fn gaps_and_span_us_by_launch(
    launches: &[Vec<KernelRecord>],
    cycles: u32,
) -> Option<(f64, f64)> {
    let each: Vec<(f64, f64)> = launches
        .iter()
        .map(|l| gaps_and_span_us(l, cycles))
        .collect::<Option<_>>()?;
    let n = each.len() as f64;
    (!each.is_empty()).then(|| {
        (
            each.iter().map(|x| x.0).sum::<f64>() / n,
            each.iter().map(|x| x.1).sum::<f64>() / n,
        )
    })
}

/// One position's kernels per invocation in a recorded launch, microseconds: their
/// durations summed, and their busy time (the union of their intervals, per cycle), which
/// is less where they ran side by side.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PositionKernels {
    pub kernels_us: f64,
    pub busy_us: f64,
}

/// Each position's kernels per invocation in a round (`per_invocation[i]` kernels per
/// cycle for the unit at position i, `cycles` cycles), from one launch's records in the
/// order they ran; `None` where the records do not hold exactly that many kernels (a
/// unit that launched another count than alone: no position can be told apart then).
/// Kernels are told apart by their order of starting: a position's kernels may run side
/// by side, but not beside another position's, which the stream orders after them.
pub fn kernels_by_position(
    records: &[KernelRecord],
    per_invocation: &[usize],
    cycles: u32,
) -> Option<Vec<PositionKernels>> {
    let each = kernels_by_position_each_cycle(records, per_invocation, cycles)?;
    Some(mean_of_cycles(&each, |_| true))
}

/// Each position's kernels in every cycle apart (`cycles` of them, in the order they
/// ran), as [`kernels_by_position`] tells them apart; `None` where it would.
pub fn kernels_by_position_each_cycle(
    records: &[KernelRecord],
    per_invocation: &[usize],
    cycles: u32,
) -> Option<Vec<Vec<PositionKernels>>> {
    let per_cycle: usize = per_invocation.iter().sum();
    if per_cycle == 0 || cycles == 0 || records.len() != per_cycle * cycles as usize {
        return None;
    }
    let mut ran: Vec<&KernelRecord> = records.iter().collect();
    ran.sort_by_key(|r| (r.start_ns, r.graph_node));
    let mut next = ran.into_iter();
    let mut chunk: Vec<&KernelRecord> = Vec::new();
    let mut out = Vec::with_capacity(cycles as usize);
    for _ in 0..cycles {
        let mut cycle = vec![PositionKernels::default(); per_invocation.len()];
        for (slot, &k) in cycle.iter_mut().zip(per_invocation) {
            chunk.clear();
            for _ in 0..k {
                chunk.push(next.next()?);
            }
            slot.kernels_us = chunk.iter().map(|r| dur_us(r)).sum::<f64>();
            slot.busy_us = busy_of(chunk.iter().copied()) as f64 / 1000.0;
        }
        out.push(cycle);
    }
    Some(out)
}

/// Each position's mean over the cycles `pick` takes (by their index in the order they
/// ran); empty where it takes none.
pub fn mean_of_cycles(
    each: &[Vec<PositionKernels>],
    pick: impl Fn(usize) -> bool,
) -> Vec<PositionKernels> {
    let taken: Vec<&Vec<PositionKernels>> = each
        .iter()
        .enumerate()
        .filter(|(i, _)| pick(*i))
        .map(|(_, c)| c)
        .collect();
    let Some(first) = taken.first() else {
        return Vec::new();
    };
    let n = taken.len() as f64;
    let mut out = vec![PositionKernels::default(); first.len()];
    for cycle in &taken {
        for (slot, p) in out.iter_mut().zip(cycle.iter()) {
            slot.kernels_us += p.kernels_us;
            slot.busy_us += p.busy_us;
        }
    }
    for p in &mut out {
        p.kernels_us /= n;
        p.busy_us /= n;
    }
    out
}

/// What both recorded launches of a unit after its lead-ins are made of
/// ([`super::LeadInKernels`]), per invocation of the unit (`invocations` a launch):
/// `positions` gives each step of the launch with lead-ins, in the order it runs, its
/// kernels per invocation alone and whether it is the unit's own step (`None` where a
/// step's count is unknown: the kernels are then not told apart by step). `None` where
/// either launch's records did not split by launch.
pub fn lead_in_kernels(
    led: &RecordedLaunches,
    lead_ins: &RecordedLaunches,
    positions: Option<&[(usize, bool)]>,
    invocations: u32,
) -> Option<super::LeadInKernels> {
    let (led_gaps, _) = gaps_and_span_us_by_launch(&led.each, 1)?;
    let (lead_ins_gaps, _) = gaps_and_span_us_by_launch(&lead_ins.each, 1)?;
    let n = f64::from(invocations.max(1));
    let lead_ins_alone = unit_launches(&[], &lead_ins.records, lead_ins.launches).kernels_us;
    let split = positions.and_then(|p| {
        let per: Vec<usize> = p.iter().map(|x| x.0).collect();
        let by = kernels_by_position(&led.records, &per, led.launches)?;
        let sum = |own: bool, of: fn(&PositionKernels) -> f64| -> f64 {
            by.iter()
                .zip(p)
                .filter(|(_, x)| x.1 == own)
                .map(|(v, _)| of(v))
                .sum()
        };
        Some((
            sum(true, |v| v.kernels_us) / n,
            sum(false, |v| v.kernels_us) / n,
            sum(true, |v| v.busy_us) / n,
        ))
    });
    Some(super::LeadInKernels {
        unit_us: split.map(|s| s.0),
        unit_busy_us: split.map(|s| s.2),
        lead_ins_us: split.map(|s| s.1),
        lead_ins_alone_us: lead_ins_alone / n,
        led_gaps_us: led_gaps / n,
        lead_ins_alone_gaps_us: lead_ins_gaps / n,
    })
}

/// The identifier a kernel name is known by: the last `::` segment before its template
/// arguments or parameters ("vectorized_elementwise_kernel", "nvjet_hsh_128x256_..."). An
/// `(anonymous namespace)` on the way is a namespace, not the parameters: before session
/// 48 it ended the name there and gave "", which every launched name contains.
pub fn base_name(demangled: &str) -> &str {
    const ANONYMOUS: &str = "(anonymous namespace)";
    let s = demangled.trim();
    let s = s.strip_prefix("void ").unwrap_or(s);
    let mut from = 0;
    let end = loop {
        match s[from..].find(['<', '(']) {
            Some(p) if s[from + p..].starts_with(ANONYMOUS) => from += p + ANONYMOUS.len(),
            Some(p) => break from + p,
            None => break s.len(),
        }
    };
    let head = &s[..end];
    head.rsplit("::").next().unwrap_or(head).trim()
}

/// A kernel's qualified name for a reader: an Itanium-mangled name (`_ZN2at6native13reduce_
/// kernelILi128E...`, as the driver reports some kernels) gives its nested name's
/// components ("at::native::reduce_kernel"); any other name gives its base name. Never
/// fails: a name it cannot read is given back as it is.
pub fn readable_name(name: &str) -> String {
    let s = name.trim();
    let Some(rest) = s.strip_prefix("_Z") else {
        return base_name(s).to_string();
    };
    let (mut rest, nested) = match rest.strip_prefix('N') {
        Some(r) => (r, true),
        None => (rest, false),
    };
    let mut parts: Vec<&str> = Vec::new();
    loop {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        // A component has a length of at least one.
        let Some(len) = rest[..digits].parse::<usize>().ok().filter(|&n| n > 0) else {
            break;
        };
        let Some(part) = rest.get(digits..digits + len) else {
            break;
        };
        parts.push(part);
        rest = &rest[digits + len..];
        if !nested {
            break;
        }
    }
    if parts.is_empty() {
        s.to_string()
    } else {
        parts.join("::")
    }
}

/// The replayed steps as the trace recorded them, in the order the replay launches them
/// (`launches`: (unit, step) in capture order).
pub fn traced_steps<'a>(
    plan: &'a crate::plan::types::Plan,
    launches: impl Iterator<Item = (u32, u32)>,
) -> Vec<TracedStep<'a>> {
    let idle = idle_before(plan);
    launches
        .map(|(unit, step)| {
            let u = &plan.units[unit as usize];
            let dims = plan.kernel_geometry.get(unit as usize);
            let kept: Vec<(usize, &str)> = u
                .kernels
                .iter()
                .enumerate()
                .map(|(k, n)| (k, n.as_str()))
                .filter(|(_, k)| !is_runtime_copy(k))
                .collect();
            TracedStep {
                unit,
                label: &u.label,
                copies: u.kernels.len() - kept.len(),
                kernels: kept.iter().map(|(_, n)| *n).collect(),
                geometry: dims.map_or_else(Vec::new, |d| {
                    kept.iter()
                        .map(|(k, _)| d.get(*k).copied().flatten())
                        .collect()
                }),
                traced_ns: plan.steps[step as usize].traced_ns,
                idle_before_ns: idle.get(step as usize).copied().unwrap_or(0),
            }
        })
        .collect()
}

/// Where the replay launched a kernel of the name `base` nearest to record `at` (in the
/// order the alignment reads them: by graph node, then start): what a first mismatch says,
/// since a kernel launched a record or two away is an order the replay changed, and one
/// launched nowhere a kernel it did not launch.
fn nearest_launch(recs: &[&KernelRecord], at: usize, base: &str) -> String {
    let hit = (0..recs.len())
        .filter(|&j| recs[j].name.contains(base))
        .min_by_key(|&j| j.abs_diff(at));
    match hit {
        None => "the traced kernel's name is launched nowhere in the replay".into(),
        Some(j) => format!(
            "the traced kernel's name is launched {} record{} {} (graph node {})",
            j.abs_diff(at),
            if j.abs_diff(at) == 1 { "" } else { "s" },
            if j < at { "earlier" } else { "later" },
            recs[j].graph_node
        ),
    }
}

/// Assigns `records` (one replay's kernels) to `steps` (the replayed steps in capture
/// order) and measures the replay against the trace.
pub fn measure(steps: &[TracedStep<'_>], records: &[KernelRecord]) -> Fidelity {
    let mut recs: Vec<&KernelRecord> = records.iter().collect();
    recs.sort_by_key(|r| (r.graph_node, r.start_ns));
    let in_context_kernels_us = recs.iter().map(|r| dur_us(r)).sum();
    let copies = recs.iter().filter(|r| is_driver_copy(&r.name)).count();
    let mut f = Fidelity {
        copy_kernels: copies as u64,
        kernels_launched: (recs.len() - copies) as u64,
        kernels_traced: steps.iter().map(|s| s.kernels.len() as u64).sum(),
        copies_traced: steps.iter().map(|s| s.copies as u64).sum(),
        steps_with_kernels: steps.iter().filter(|s| !s.kernels.is_empty()).count() as u64,
        in_context_kernels_us,
        in_context_busy_us: Some(busy_of(recs.iter().copied()) as f64 / 1000.0),
        kernel_span_us: match (
            recs.iter().map(|r| r.start_ns).min(),
            recs.iter().map(|r| r.end_ns).max(),
        ) {
            (Some(a), Some(b)) => (b.saturating_sub(a)) as f64 / 1000.0,
            _ => 0.0,
        },
        ..Default::default()
    };
    let none_extra = f.kernels_launched == f.kernels_traced;
    let mut errors = Vec::new();
    let mut weighted = Vec::new();
    let mut back_to_back = Vec::new();
    let mut per_unit: std::collections::BTreeMap<u32, (String, Vec<f64>, f64, f64)> =
        Default::default();
    let mut at = 0usize;
    for (i, s) in steps.iter().enumerate() {
        // The step's own copies, where the graph ran them as driver kernels.
        let first = at;
        let mut own_copies = 0;
        while own_copies < s.copies && at < recs.len() && is_driver_copy(&recs[at].name) {
            at += 1;
            own_copies += 1;
        }
        let n = s.kernels.len();
        if n == 0 {
            continue;
        }
        if recs.len() < at + n {
            f.cut = Some(format!(
                "step {i} ({}): the replay launched {} kernels, fewer than the trace's steps hold",
                s.label,
                recs.len()
            ));
            break;
        }
        // A library that forks inside the op (cuDNN's grouped convolutions over streams of
        // its own) launched the step's kernels in another order than the trace lists them
        // (by their start on several streams): where the step's next kernels are its own by
        // name in any order, they are taken whole. Taken one by one, a kernel of a name the
        // step holds twice took the later one and the rest of the replay slid (RegNetX-3.2GF:
        // 251 kernels counted extra and the alignment cut at step 656 of 789, session 42).
        // Only where the replay launched as many kernels as the trace holds: then no kernel
        // is extra, while a kernel the replay adds (a fill before its step's own, of a name
        // the step holds) would be taken for the step's and push its last one on.
        let mut matched = 0usize;
        let whole = none_extra.then(|| whole_step(&recs, at, s)).flatten();
        if let Some((pairs, end)) = &whole {
            for &(j, r) in pairs {
                if let Some(Some(g)) = s.geometry.get(j) {
                    f.kernels_geometry_known += 1;
                    if same_geometry(recs[r], g) {
                        f.kernels_geometry_matched += 1;
                    }
                }
            }
            matched = n;
            at = *end;
        }
        // Else each traced kernel takes the next launched kernel of its name within a short
        // window (kernels the replay launched and the trace does not have, such as a
        // workspace memset before a cuDNN convolution, go to the step they precede), else
        // the next launched kernel whatever its name (another algorithm at that position).
        for (j, k) in s.kernels.iter().enumerate().filter(|_| whole.is_none()) {
            let base = base_name(k);
            // Up to WINDOW kernels ahead; driver copies on the way neither count toward the
            // window nor as extra kernels.
            let mut hit = None;
            let (mut d, mut seen, mut copies_on_way) = (0usize, 0usize, 0usize);
            while seen < WINDOW && at + d < recs.len() {
                let r = recs[at + d];
                if is_driver_copy(&r.name) {
                    copies_on_way += 1;
                } else if r.name.contains(base) {
                    hit = Some(d);
                    break;
                } else {
                    seen += 1;
                }
                d += 1;
            }
            match hit {
                Some(d) => {
                    if let Some(Some(g)) = s.geometry.get(j) {
                        f.kernels_geometry_known += 1;
                        if same_geometry(recs[at + d], g) {
                            f.kernels_geometry_matched += 1;
                        }
                    }
                    if d > copies_on_way && f.first_extra.is_none() {
                        let skipped = recs[at..at + d].iter().find(|r| !is_driver_copy(&r.name));
                        f.first_extra = skipped.map(|r| {
                            format!(
                                "step {i} ({}): {} kernel(s) the trace does not hold launched before its {base}, the first {} (graph node {})",
                                s.label,
                                d - copies_on_way,
                                r.name.chars().take(80).collect::<String>(),
                                r.graph_node
                            )
                        });
                    }
                    f.kernels_extra += (d - copies_on_way) as u64;
                    at += d + 1;
                    matched += 1;
                }
                None => {
                    // Another kernel at this position: it stands for the traced one.
                    while at < recs.len() && is_driver_copy(&recs[at].name) {
                        at += 1;
                    }
                    at += 1;
                }
            }
            // Kernels that skipped ahead can leave later ones of the step without records.
            if at > recs.len() {
                break;
            }
        }
        let mine = &recs[first..at.min(recs.len())];
        f.kernels_aligned += n as u64;
        f.kernels_name_matched += matched as u64;
        f.steps_aligned += 1;
        if matched < n && f.first_mismatch.is_none() {
            f.first_mismatch = Some(format!(
                "step {i} ({}): traced {} / launched {}{}; {}",
                s.label,
                s.kernels[0].chars().take(80).collect::<String>(),
                mine.first()
                    .map_or(String::new(), |r| r.name.chars().take(80).collect()),
                mine.first()
                    .map_or(String::new(), |r| format!(" (graph node {})", r.graph_node)),
                nearest_launch(&recs, first, base_name(s.kernels[0]))
            ));
        }
        let in_context: f64 = mine.iter().map(|r| dur_us(r)).sum();
        let traced = s.traced_ns as f64 / 1000.0;
        f.aligned_traced_us += traced;
        f.aligned_in_context_us += in_context;
        if traced > 0.0 {
            let e = (in_context / traced - 1.0) * 100.0;
            errors.push(e.abs());
            weighted.push((e.abs(), traced));
            if s.idle_before_ns <= BACK_TO_BACK_IDLE_NS {
                back_to_back.push(e.abs());
            }
            // A unit's figures come from its steps whose kernels all matched the trace's
            // by name: where another kernel stands at a step's position the records after
            // it may belong to other steps (on a BLOOM training step one mismatch at step
            // 117 put half the units 50-90 % off, session 14), and their durations are not
            // this unit's.
            if matched == n {
                let u = per_unit
                    .entry(s.unit)
                    .or_insert_with(|| (s.label.to_string(), Vec::new(), 0.0, 0.0));
                u.1.push(e);
                u.2 += traced;
                u.3 += in_context;
            }
        }
    }
    f.step_median_abs_error_pct = median(&mut errors);
    f.step_time_weighted_median_abs_error_pct = weighted_median(&mut weighted);
    f.steps_back_to_back = Some(back_to_back.len() as u64);
    f.step_back_to_back_median_abs_error_pct = median(&mut back_to_back);
    let mut units: Vec<UnitFidelity> = per_unit
        .into_iter()
        .map(|(unit, (label, mut e, t, c))| UnitFidelity {
            unit,
            label,
            steps: e.len() as u64,
            median_error_pct: median(&mut e).unwrap_or(0.0),
            traced_us: t,
            in_context_us: c,
        })
        .collect();
    units.sort_by_key(|u| u.unit);
    f.units = units.clone();
    units.sort_by(|a, b| {
        (b.in_context_us - b.traced_us)
            .abs()
            .total_cmp(&(a.in_context_us - a.traced_us).abs())
    });
    units.truncate(10);
    f.worst_units = units;
    f
}

/// The step's kernels as the next launched ones from `at`, in any order: each traced
/// kernel paired with a launched one of its name among the next `n` that are not driver
/// copies (those on the way go with the step), and where that ends; `None` where no such
/// pairing exists (another kernel among them: the one-by-one search tells what it is).
/// A pairing, not first come first served: a base name can lie inside another kernel's
/// name (cutlass's `Kernel` in cuDNN's `cudnnKernelDataType_t`).
fn whole_step(
    recs: &[&KernelRecord],
    at: usize,
    s: &TracedStep<'_>,
) -> Option<(Vec<(usize, usize)>, usize)> {
    let n = s.kernels.len();
    let block: Vec<usize> = (at..recs.len())
        .filter(|&r| !is_driver_copy(&recs[r].name))
        .take(n)
        .collect();
    if block.len() < n {
        return None;
    }
    let fits: Vec<Vec<usize>> = s
        .kernels
        .iter()
        .map(|k| {
            let base = base_name(k);
            (0..n)
                .filter(|&b| recs[block[b]].name.contains(base))
                .collect()
        })
        .collect();
    // Kuhn's augmenting paths: a step holds at most some hundred kernels.
    fn augment(
        j: usize,
        fits: &[Vec<usize>],
        seen: &mut [bool],
        owner: &mut [Option<usize>],
    ) -> bool {
        for &b in &fits[j] {
            if !seen[b] {
                seen[b] = true;
                if owner[b].is_none_or(|o| augment(o, fits, seen, owner)) {
                    owner[b] = Some(j);
                    return true;
                }
            }
        }
        false
    }
    let mut owner: Vec<Option<usize>> = vec![None; n];
    for j in 0..n {
        if !augment(j, &fits, &mut vec![false; n], &mut owner) {
            return None;
        }
    }
    let pairs = owner
        .iter()
        .enumerate()
        .map(|(b, j)| (j.expect("a full pairing owns every kernel"), block[b]))
        .collect();
    Some((pairs, block[n - 1] + 1))
}

/// Whether a launched kernel ran with the traced grid and block.
fn same_geometry(r: &KernelRecord, g: &crate::plan::types::LaunchDims) -> bool {
    let same =
        |a: &[i32; 3], b: &[u32; 3]| a.iter().zip(b).all(|(x, y)| i64::from(*x) == i64::from(*y));
    same(&r.grid, &g.grid) && same(&r.block, &g.block)
}

fn dur_us(r: &KernelRecord) -> f64 {
    r.end_ns.saturating_sub(r.start_ns) as f64 / 1000.0
}

/// Whether a launched kernel is the CUDA driver's own, running a copy or fill node of the
/// graph (`memcpy32_post`, `memcpy128`, ...): driver kernels have plain names, while every
/// library's kernels are mangled or carry their library's prefix.
pub fn is_driver_copy(name: &str) -> bool {
    (name.starts_with("memcpy") || name.starts_with("memset"))
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether a traced kernel name is a copy or fill the runtime did, not a kernel launch.
pub fn is_runtime_copy(name: &str) -> bool {
    name.starts_with("Memcpy") || name.starts_with("Memset")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &str, node: u64, start: u64, dur: u64) -> KernelRecord {
        KernelRecord {
            name: name.into(),
            grid: [1, 1, 1],
            block: [128, 1, 1],
            registers: 32,
            shared_bytes: 0,
            start_ns: start,
            end_ns: start + dur,
            graph_node: node,
        }
    }

    #[test]
    fn only_the_kernels_after_a_marker_are_the_units() {
        let own = ["touch", "mark"];
        // Two invocations: own work, a lead-in of the same kernel as the unit, the marker,
        // the unit; the second without a lead-in. Given out of start order.
        let records = vec![
            rec("add", 9, 70, 5),
            rec("touch", 1, 0, 5),
            rec("add", 2, 10, 5),
            rec("mark", 3, 20, 1),
            rec("add", 4, 30, 5),
            rec("gemm", 5, 36, 5),
            rec("touch", 6, 50, 5),
            rec("mark", 8, 60, 1),
        ];
        let kept = after_markers(records, &own, "mark");
        let got: Vec<(&str, u64)> = kept.iter().map(|k| (k.name.as_str(), k.start_ns)).collect();
        assert_eq!(got, vec![("add", 30), ("gemm", 36), ("add", 70)]);
        // Without a marker nothing is the unit's.
        let none = after_markers(
            vec![rec("touch", 1, 0, 5), rec("add", 2, 10, 5)],
            &own,
            "mark",
        );
        assert!(none.is_empty());
    }

    #[test]
    fn back_to_back_launches_average_each_units_in_context_time() {
        let step = |unit: u32, k: &'static str| TracedStep {
            unit,
            label: "op",
            kernels: vec![k],
            copies: 0,
            traced_ns: 10_000,
            idle_before_ns: 0,
            geometry: Vec::new(),
        };
        let steps = vec![step(0, "gemm"), step(1, "relu"), step(0, "gemm")];
        // Three launches; unit 1's relu takes 2, 4 and 6 us, the GEMMs 10 us each.
        let launch = |at: u64, relu: u64| {
            vec![
                rec("gemm", 0, at, 10_000),
                rec("relu", 1, at + 10_000, relu),
                rec("gemm", 2, at + 20_000, 10_000),
            ]
        };
        let launches = vec![
            launch(0, 2_000),
            launch(100_000, 4_000),
            launch(200_000, 6_000),
        ];
        let f = measure_back_to_back(&steps, &launches).unwrap();
        assert_eq!(f.launches_averaged, Some(3));
        let relu = f.units.iter().find(|u| u.unit == 1).unwrap();
        assert!((relu.in_context_us - 4.0).abs() < 1e-9);
        let gemm = f.units.iter().find(|u| u.unit == 0).unwrap();
        assert!((gemm.in_context_us - 20.0).abs() < 1e-9);
        assert!((f.in_context_kernels_us - 24.0).abs() < 1e-9);
        // The first launch's median stands (relu 2 us against 10 traced: 80 % off).
        assert_eq!(f.kernels_launched, 3);
        // A launch cut short counts toward none of the means.
        let mut cut = launches.clone();
        cut[2].truncate(1);
        let g = measure_back_to_back(&steps, &cut).unwrap();
        assert_eq!(g.launches_averaged, Some(2));
        let relu = g.units.iter().find(|u| u.unit == 1).unwrap();
        assert!((relu.in_context_us - 3.0).abs() < 1e-9);
        assert!(measure_back_to_back(&steps, &[]).is_none());
    }

    #[test]
    fn a_units_launches_after_its_lead_ins_are_told_apart_into_its_kernels_the_lead_ins_and_gaps() {
        // Two invocations a launch, each a lead-in of one kernel (2 us) then the unit's
        // two kernels (3 us and 1 us); 1 us between kernels with lead-ins, none alone.
        // Three launches recorded, the first from idle kept apart.
        let launch = |at: u64| -> Vec<KernelRecord> {
            let mut v = Vec::new();
            let mut t = at;
            for (i, d) in [2_000u64, 3_000, 1_000, 2_000, 3_000, 1_000]
                .into_iter()
                .enumerate()
            {
                v.push(rec("k", i as u64, t, d));
                t += d + 1_000;
            }
            v
        };
        let alone = |at: u64| -> Vec<KernelRecord> {
            vec![rec("l", 0, at, 2_000), rec("l", 1, at + 2_000, 2_000)]
        };
        let led = RecordedLaunches::after_first(
            [launch(0), launch(100_000), launch(200_000)].concat(),
            3,
        );
        let leads =
            RecordedLaunches::after_first([alone(0), alone(100_000), alone(200_000)].concat(), 3);
        let positions = [(1, false), (2, true), (1, false), (2, true)];
        let k = lead_in_kernels(&led, &leads, Some(&positions), 2).unwrap();
        assert!((k.unit_us.unwrap() - 4.0).abs() < 1e-9);
        assert!((k.lead_ins_us.unwrap() - 2.0).abs() < 1e-9);
        assert!((k.lead_ins_alone_us - 2.0).abs() < 1e-9);
        assert!((k.led_gaps_us - 2.5).abs() < 1e-9);
        assert_eq!(k.lead_ins_alone_gaps_us, 0.0);
        // A step whose count is unknown, or a count the records do not hold: the kernels
        // are not told apart by step, the rest stands.
        let k = lead_in_kernels(&led, &leads, None, 2).unwrap();
        assert!(k.unit_us.is_none() && k.lead_ins_us.is_none());
        assert!((k.lead_ins_alone_us - 2.0).abs() < 1e-9);
        let wrong = [(1, false), (3, true)];
        assert!(lead_in_kernels(&led, &leads, Some(&wrong), 2)
            .unwrap()
            .unit_us
            .is_none());
        // Records that do not split by launch give nothing.
        let uneven = RecordedLaunches::after_first(launch(0)[..5].to_vec(), 3);
        assert!(lead_in_kernels(&uneven, &leads, Some(&positions), 2).is_none());
    }

    proptest::proptest! {
        /// Whatever the kernels' intervals, their busy time lies between the longest one
        /// and both their durations' sum and their span, and does not depend on their
        /// order.
        #[test]
        fn busy_time_lies_between_the_longest_kernel_and_the_sum_and_span(
            spans in proptest::collection::vec((0u64..1_000_000, 0u64..200_000), 1..40),
        ) {
            let recs: Vec<KernelRecord> = spans
                .iter()
                .enumerate()
                .map(|(i, (s, d))| rec("k", i as u64, *s, *d))
                .collect();
            let busy = busy_ns(&recs);
            let sum: u64 = spans.iter().map(|(_, d)| d).sum();
            let longest = spans.iter().map(|(_, d)| *d).max().unwrap();
            let first = spans.iter().map(|(s, _)| *s).min().unwrap();
            let last = spans.iter().map(|(s, d)| s + d).max().unwrap();
            proptest::prop_assert!(busy >= longest && busy <= sum && busy <= last - first);
            let mut reversed = recs.clone();
            reversed.reverse();
            proptest::prop_assert_eq!(busy_ns(&reversed), busy);
        }

        /// A round's positions, each of kernels that may overlap one another but start
        /// after the position before it ends (the stream orders them): each position's busy
        /// time lies between its longest kernel and its durations' sum, and the positions'
        /// busy times add up to the round's span less its gaps.
        #[test]
        fn a_rounds_positions_are_busy_for_their_own_union(
            positions in proptest::collection::vec(
                proptest::collection::vec((0u64..3_000, 1u64..5_000), 1..5), 1..6),
            gap in 0u64..2_000,
        ) {
            let (mut recs, mut at, mut longest) = (Vec::new(), 0u64, Vec::new());
            for p in &positions {
                let end = p.iter().map(|(s, d)| at + s + d).max().unwrap();
                for (s, d) in p {
                    recs.push(rec("k", recs.len() as u64, at + s, *d));
                }
                longest.push(p.iter().map(|(_, d)| *d).max().unwrap() as f64 / 1000.0);
                at = end + gap;
            }
            let per: Vec<usize> = positions.iter().map(Vec::len).collect();
            let by = kernels_by_position(&recs, &per, 1).unwrap();
            for (p, l) in by.iter().zip(&longest) {
                proptest::prop_assert!(p.busy_us >= l - 1e-9 && p.busy_us <= p.kernels_us + 1e-9);
            }
            let (gaps, span) = gaps_and_span_us(&recs, 1).unwrap();
            let busy: f64 = by.iter().map(|p| p.busy_us).sum();
            proptest::prop_assert!((busy - (span - gaps)).abs() < 1e-6, "{busy} {span} {gaps}");
        }
    }

    #[test]
    fn kernels_side_by_side_are_busy_for_their_union_not_their_sum() {
        // Three kernels of one invocation, two of them overlapping: 0-10 and 4-12 us, then
        // 20-25 us. Their durations sum to 23 us; the GPU was busy 17 us.
        let recs = [
            rec("a", 1, 0, 10_000),
            rec("b", 2, 4_000, 8_000),
            rec("c", 3, 20_000, 5_000),
        ];
        assert_eq!(busy_ns(&recs), 17_000);
        let u = unit_launches(&[], &recs, 1);
        assert!((u.kernels_us - 23.0).abs() < 1e-9);
        assert!((u.busy_us.unwrap() - 17.0).abs() < 1e-9);
        // Back to back, the two agree; a kernel inside another adds nothing.
        let back = [rec("a", 1, 0, 10_000), rec("b", 2, 10_000, 5_000)];
        assert_eq!(busy_ns(&back), 15_000);
        let inside = [rec("a", 1, 0, 10_000), rec("b", 2, 2_000, 3_000)];
        assert_eq!(busy_ns(&inside), 10_000);
        assert_eq!(busy_ns(&[]), 0);
        // A unit of no kernels (a copy the graph runs as a copy node) is busy for none:
        // without it, a round holding such a unit could not be split by busy time
        // (Swin-T's in TF32, session 40).
        assert_eq!(unit_launches(&[], &[], 1).busy_us, Some(0.0));
    }

    #[test]
    fn an_isolated_unit_launch_is_measured_per_invocation() {
        let recs = [
            rec("memset32", 1, 0, 1_000),
            rec("_Z20nhwcAddPaddingKernelI6__halfEvi", 2, 1_000, 5_000),
            rec("_Z20nhwcAddPaddingKernelI6__halfEvi", 3, 6_000, 5_000),
        ];
        let u = unit_launches(&["void nhwcAddPaddingKernel<__half>(int)"], &recs, 2);
        assert_eq!(u.launched_per_invocation, 1.5);
        assert_eq!(u.whole_per_invocation(), None);
        assert_eq!(unit_launches(&[], &recs, 3).whole_per_invocation(), Some(1));
        assert_eq!(u.names_matched, 1.0);
        assert!((u.kernels_us - 5.5).abs() < 1e-9);
        // The memset is no traced kernel's: named, with its time per invocation.
        assert_eq!(u.not_traced, vec![("memset32".to_string(), 0.5)]);
        assert!(unit_launches(&[], &recs, 3).not_traced.is_empty());
    }

    #[test]
    fn readable_names_unmangle_the_nested_name_and_keep_the_rest() {
        // As kc-zq's `not_traced` held it on ConvNeXt-T (session 47), cut to 100 characters.
        assert_eq!(
            readable_name("_ZN2at6native13reduce_kernelILi128ELi4ENS0_8ReduceOpIN3c108BFloat16ENS0_14func_wrapper_tIS4_ZNS0_11s"),
            "at::native::reduce_kernel"
        );
        assert_eq!(readable_name("_Z11fill_kernelPfi"), "fill_kernel");
        assert_eq!(
            readable_name("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int)"),
            "vectorized_elementwise_kernel"
        );
        // Cut inside a component, or no component at all: given back as it is.
        assert_eq!(readable_name("_ZN2at6nat"), "at");
        assert_eq!(readable_name("_ZN"), "_ZN");
        assert_eq!(readable_name("_Z99x"), "_Z99x");
    }

    proptest::proptest! {
        /// Any name, mangled-looking or not, reads without a panic into a non-empty name of
        /// its own characters (and `::`), and a mangled name that parses into exactly its
        /// components.
        #[test]
        fn readable_names_never_fail_and_keep_to_the_names_own_parts(
            tail in "[0-9A-Za-z_]{0,40}",
            parts in proptest::collection::vec("[a-z_]{1,12}", 0..4),
            nested in proptest::bool::ANY,
        ) {
            for name in [format!("_Z{tail}"), format!("_ZN{tail}"), tail.clone()] {
                let r = readable_name(&name);
                proptest::prop_assert!(!r.is_empty() || name.is_empty(), "{name} -> {r}");
                proptest::prop_assert!(
                    r.chars().all(|c| c == ':' || name.contains(c)),
                    "{name} -> {r}"
                );
            }
            let mangled: String = parts.iter().map(|p| format!("{}{p}", p.len())).collect();
            let name = format!("_Z{}{mangled}E", if nested { "N" } else { "" });
            let r = readable_name(&name);
            match (parts.first(), nested) {
                (None, _) => proptest::prop_assert_eq!(r, name),
                (Some(first), false) => proptest::prop_assert_eq!(&r, first),
                (Some(_), true) => proptest::prop_assert_eq!(r, parts.join("::")),
            }
        }
    }

    /// A copy node CUPTI recorded both as copy activity and as the driver's kernel counts
    /// once; a fill counts; kernels do not.
    #[test]
    fn copies_in_are_the_copy_and_fill_nodes() {
        let copy = |node: u64, fill: bool| CopyRecord {
            fill,
            bytes: 4096,
            start_ns: node * 10,
            end_ns: node * 10 + 5,
            graph_node: node,
        };
        let kernels = [
            rec("memcpy128", 3, 30, 5),
            rec("_ZN2at6native29vectorized_elementwise_kernel", 4, 40, 5),
            rec("memcpy32_post", 9, 90, 5),
        ];
        let copies = [copy(3, false), copy(5, true), copy(7, false)];
        assert_eq!(copies_in(&kernels, &copies), 4);
        // Node 3 ran as the driver's kernel: its time is the kernels'.
        assert!((copies_beyond_kernels_us(&kernels, &copies) - 0.010).abs() < 1e-12);
        assert_eq!(copies_in(&kernels, &[]), 2);
        assert_eq!(copies_in(&[], &[]), 0);
        // Over two launches of one graph: every record counts, a node recorded both ways
        // once a launch.
        let twice: Vec<CopyRecord> = copies.iter().chain(copies.iter()).cloned().collect();
        let kernels_twice: Vec<KernelRecord> =
            kernels.iter().chain(kernels.iter()).cloned().collect();
        assert_eq!(copies_in(&kernels_twice, &twice), 8);
        // The replayed steps' traced copies.
        let plan_steps = [TracedStep {
            unit: 0,
            label: "aten::silu_",
            kernels: vec!["void at::native::vectorized_elementwise_kernel<8, silu>(int)"],
            copies: 1,
            geometry: Vec::new(),
            traced_ns: 10_000,
            idle_before_ns: 0,
        }];
        let f = measure(
            &plan_steps,
            &[rec(
                "_ZN2at6native29vectorized_elementwise_kernel",
                1,
                10,
                5,
            )],
        );
        assert_eq!(f.copies_traced, 1);
        assert_eq!(f.copies_launched, None);
    }

    #[test]
    fn base_names_are_what_mangled_names_contain() {
        assert_eq!(
            base_name("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"),
            "vectorized_elementwise_kernel"
        );
        assert_eq!(
            base_name("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN"),
            "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN"
        );
        assert_eq!(
            base_name("void cutlass::Kernel2<cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8::Params)"),
            "Kernel2"
        );
        // Kernels in an anonymous namespace (Qwen2's training step, session 48).
        assert_eq!(
            base_name("void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>(at::native::(anonymous namespace)::OpaqueType<2u>*, unsigned int)"),
            "CatArrayBatchedCopy"
        );
        assert_eq!(
            base_name("void (anonymous namespace)::softmax_warp_forward<float>(float*)"),
            "softmax_warp_forward"
        );
    }

    /// Many short steps far off and one long step close: the plain median is the short
    /// steps', the weighted one the long step's.
    #[test]
    fn the_time_weighted_median_is_where_half_the_traced_time_lies() {
        let mut v = [(5.0, 1.0), (4.0, 1.0), (4.5, 1.0), (1.0, 10.0)];
        assert_eq!(weighted_median(&mut v), Some(1.0));
        let mut plain = v.map(|x| x.0);
        assert_eq!(median(&mut plain), Some(4.25));
        assert_eq!(weighted_median(&mut []), None);
    }

    #[test]
    fn a_recorded_launchs_gaps_and_span_are_taken_from_its_own_timeline() {
        // Two cycles: kernels of 10, 5 and 10 us, gaps of 2, 0 (the next starts as one ends)
        // and 3 us, and a kernel that starts before the one before it ended (overlap: no
        // gap, the span runs to the later end).
        let r = vec![
            rec("a", 0, 0, 10_000),
            rec("b", 1, 12_000, 5_000),
            rec("c", 2, 17_000, 10_000),
            rec("d", 3, 30_000, 10_000),
            rec("e", 4, 35_000, 10_000),
        ];
        let (gaps, span) = gaps_and_span_us(&r, 2).unwrap();
        assert!(
            (gaps - 2.5).abs() < 1e-9,
            "(2 + 3) us over two cycles: {gaps}"
        );
        assert!((span - 22.5).abs() < 1e-9, "45 us over two cycles: {span}");
        // Out of order in the slice, the same.
        let mut rev = r.clone();
        rev.reverse();
        assert_eq!(gaps_and_span_us(&rev, 2), Some((gaps, span)));
        assert_eq!(gaps_and_span_us(&[], 2), None);
    }

    #[test]
    fn records_align_to_steps_in_capture_order() {
        let steps = [
            TracedStep {
                geometry: Vec::new(),
                copies: 0,
                unit: 0,
                label: "aten::mm",
                kernels: vec!["nvjet_hsh_a"],
                traced_ns: 10_000,
                idle_before_ns: 0,
            },
            TracedStep {
                geometry: Vec::new(),
                copies: 0,
                unit: 1,
                label: "aten::add",
                kernels: vec!["void at::native::vectorized_elementwise_kernel<4>(int)"],
                traced_ns: 2_000,
                // The trace ran it after its GPU sat idle 30 us.
                idle_before_ns: 30_000,
            },
            TracedStep {
                geometry: Vec::new(),
                copies: 0,
                unit: 0,
                label: "aten::mm",
                kernels: vec!["nvjet_hsh_a"],
                traced_ns: 10_000,
                idle_before_ns: 0,
            },
        ];
        // Out of order by node id: capture order is what counts.
        let recs = [
            rec(
                "_ZN2at6native29vectorized_elementwise_kernelILi4EEEvi",
                2,
                11_500,
                2_400,
            ),
            rec("nvjet_hsh_a", 1, 0, 11_000),
            rec("nvjet_hsh_a", 3, 14_000, 9_000),
        ];
        let f = measure(&steps, &recs);
        assert_eq!((f.kernels_launched, f.kernels_traced), (3, 3));
        assert_eq!((f.kernels_aligned, f.kernels_name_matched), (3, 3));
        assert_eq!(f.steps_aligned, 3);
        assert!((f.in_context_kernels_us - 22.4).abs() < 1e-9);
        // One after another, they are busy for their durations.
        assert!((f.in_context_busy_us.unwrap() - 22.4).abs() < 1e-9);
        assert!((f.kernel_span_us - 23.0).abs() < 1e-9);
        assert!((f.aligned_traced_us - 22.0).abs() < 1e-9);
        // |errors|: 10 %, 20 %, 10 % -> median 10 %.
        assert!((f.step_median_abs_error_pct.unwrap() - 10.0).abs() < 1e-9);
        // Weighted by traced time (10, 2 and 10 us) the 20 % step weighs least.
        assert!((f.step_time_weighted_median_abs_error_pct.unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(f.worst_units[0].label, "aten::add");
        assert!(f.cut.is_none());
        // Back to back in the trace: the two mm steps (10 % each), not the add after a gap.
        assert_eq!(f.steps_back_to_back, Some(2));
        assert!((f.step_back_to_back_median_abs_error_pct.unwrap() - 10.0).abs() < 1e-9);
    }

    /// On a real training step's plan (fixtures/modern, a LLaMA-shaped step with fused
    /// AdamW): a rank's first step follows no idle time, no step a negative one, and the
    /// idle times are the gaps between one step's traced end and the next's start.
    #[test]
    fn idle_before_is_the_traced_gap_on_the_rank() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/modern");
        let opts = crate::ingest::IngestOptions {
            shapes: Some(dir.join("llama2l_train_fusedadamw_b4s256.et.json.gz")),
            ..Default::default()
        };
        let (mut g, _) = crate::ingest::ingest(
            &[dir.join("llama2l_train_fusedadamw_b4s256.pt.trace.json.gz")],
            &opts,
        )
        .unwrap();
        crate::lower::lower(&mut g).unwrap();
        let p = crate::plan::build::build(&g);
        let idle = idle_before(&p);
        assert_eq!(idle.len(), p.steps.len());
        assert_eq!(idle[0], 0);
        assert!(idle.iter().all(|&i| i >= 0));
        // One stream here: each gap is the next start minus the latest end so far.
        let mut end = p.steps[0].traced_start_ns + p.steps[0].traced_ns;
        for (s, &i) in p.steps.iter().zip(&idle).skip(1) {
            assert_eq!(i, (s.traced_start_ns - end).max(0));
            end = end.max(s.traced_start_ns + s.traced_ns);
        }
        // An eager training step leaves its GPU idle before many of its steps.
        let gaps = idle.iter().filter(|&&i| i > BACK_TO_BACK_IDLE_NS).count();
        assert!(gaps > 0 && gaps < idle.len(), "{gaps} of {}", idle.len());
    }

    #[test]
    fn other_kernels_are_counted_and_missing_ones_cut_the_alignment() {
        let steps = [
            TracedStep {
                geometry: Vec::new(),
                copies: 0,
                unit: 0,
                label: "aten::mm",
                kernels: vec!["nvjet_hsh_a"],
                traced_ns: 10_000,
                idle_before_ns: 0,
            },
            TracedStep {
                geometry: Vec::new(),
                copies: 0,
                unit: 1,
                label: "aten::add",
                kernels: vec!["void at::native::elementwise_kernel<128, 2>(int)"],
                traced_ns: 2_000,
                idle_before_ns: 0,
            },
        ];
        let recs = [
            rec("nvjet_hsh_a", 1, 0, 9_000),
            rec("_Z10other_kerneli", 2, 9_500, 1_000),
        ];
        let f = measure(&steps, &recs);
        assert_eq!((f.steps_aligned, f.kernels_name_matched), (2, 1));
        let m = f.first_mismatch.as_deref().unwrap();
        assert!(
            m.contains("aten::add") && m.contains("(graph node 2)"),
            "{m}"
        );
        assert!(m.ends_with("launched nowhere in the replay"), "{m}");
        // A kernel the replay launched out of the trace's order: the mismatch says where.
        let step = |label, kernel| TracedStep {
            geometry: Vec::new(),
            copies: 0,
            unit: 0,
            label,
            kernels: vec![kernel],
            traced_ns: 1_000,
            idle_before_ns: 0,
        };
        let add = "void at::native::elementwise_kernel<128, 2>(int)";
        let moved = [
            step("aten::mm", "nvjet_hsh_a"),
            step("aten::add", add),
            step("aten::mm", "nvjet_hsh_c"),
        ];
        let recs = [
            rec(add, 1, 0, 1_000),
            rec("nvjet_hsh_a", 2, 1_000, 1_000),
            rec("nvjet_hsh_c", 3, 2_000, 1_000),
        ];
        let f = measure(&moved, &recs);
        // The step before it found its own one record on, past the add's kernel.
        let x = f.first_extra.as_deref().unwrap();
        assert!(
            x.starts_with("step 0 (aten::mm): 1 kernel(s) the trace does not hold launched before its nvjet_hsh_a")
                && x.contains("elementwise_kernel")
                && x.ends_with("(graph node 1)"),
            "{x}"
        );
        let m = f.first_mismatch.unwrap();
        assert!(
            m.starts_with("step 1 (aten::add)")
                && m.ends_with("launched 2 records earlier (graph node 1)"),
            "{m}"
        );
        // The mismatched step's kernel is no figure of its unit's: only unit 0 has one.
        assert_eq!(f.units.iter().map(|u| u.unit).collect::<Vec<_>>(), [0]);
        let f = measure(&steps, &recs[..1]);
        assert!(f.cut.as_deref().unwrap().contains("fewer"));
        // A kernel the trace does not have (cuDNN's workspace memset) goes with its step.
        let conv = [TracedStep {
            geometry: Vec::new(),
            copies: 0,
            unit: 0,
            label: "aten::cudnn_convolution",
            kernels: vec!["void nhwcAddPaddingKernel<__half>(int)"],
            traced_ns: 5_000,
            idle_before_ns: 0,
        }];
        let recs = [
            rec("memset32", 1, 0, 1_000),
            rec("_Z20nhwcAddPaddingKernelI6__halfEvi", 2, 1_000, 5_000),
        ];
        let f = measure(&conv, &recs);
        assert_eq!((f.kernels_extra, f.kernels_name_matched), (0, 1));
        assert_eq!((f.copy_kernels, f.kernels_launched), (1, 1));
        assert!((f.aligned_in_context_us - 6.0).abs() < 1e-9);
    }

    /// RegNetX-3.2GF's grouped convolution as its trace lists it (fixtures/modern, step 18):
    /// cuDNN ran it over two streams of its own, so the trace lists its eight kernels by
    /// their starts, interleaved, while the replay launched each stream's four in turn. Its
    /// two transposes share a base name with the two back: taken one by one, the second
    /// took a transpose back, the step counted two kernels extra and every step after slid.
    #[test]
    fn a_forked_steps_kernels_in_another_order_are_its_own_and_the_next_step_stays_aligned() {
        let t_in = "void cudnn::engines_precompiled::genericTranspose_kernel<__nv_bfloat16, float, float, true, (cudnnKernelDataType_t)2>(int)";
        let convert = "void cudnn::engines_precompiled::convertTensor_kernel<__nv_bfloat16, float, float, (cudnnKernelDataType_t)2>(float)";
        let gemm = "void cutlass__5x_cudnn::Kernel<cutlass_tensorop_s1688fprop_optimized_tf32_256x64_16x4_nhwc_align4>(int)";
        let t_out = "void cudnn::engines_precompiled::genericTranspose_kernel<float, __nv_bfloat16, float, true, (cudnnKernelDataType_t)0>(int)";
        let bn = "void at::native::batch_norm_transform_input_channels_last_kernel<c10::BFloat16, float, c10::BFloat16, 4>(int)";
        let steps = [
            TracedStep {
                geometry: Vec::new(),
                copies: 0,
                unit: 12,
                label: "aten::cudnn_convolution",
                kernels: vec![t_in, t_in, convert, gemm, convert, gemm, t_out, t_out],
                traced_ns: 40_000,
                idle_before_ns: 0,
            },
            TracedStep {
                geometry: Vec::new(),
                copies: 0,
                unit: 4,
                label: "aten::native_batch_norm",
                kernels: vec![bn],
                traced_ns: 5_000,
                idle_before_ns: 0,
            },
        ];
        let (m_in, m_convert, m_gemm, m_out, m_bn) = (
            "_ZN5cudnn19engines_precompiled23genericTranspose_kernelI13__nv_bfloat16ffLb1EL21cudnnKernelDataType_t2EEEvi",
            "_ZN5cudnn19engines_precompiled20convertTensor_kernelI13__nv_bfloat16ffL21cudnnKernelDataType_t2EEEvf",
            "_ZN17cutlass__5x_cudnn6KernelI51cutlass_tensorop_s1688fprop_optimized_tf32_256x64_16x4_nhwc_align4EEvi",
            "_ZN5cudnn19engines_precompiled23genericTranspose_kernelIf13__nv_bfloat16fLb1EL21cudnnKernelDataType_t0EEEvi",
            "_ZN2at6native45batch_norm_transform_input_channels_last_kernelIN3c108BFloat16EfS3_Li4EEEvi",
        );
        // Capture order: one stream's four kernels, then the other's (side by side in time).
        let mut recs = Vec::new();
        for (branch, start) in [(0u64, 0u64), (1, 1_000)] {
            for (k, name) in [m_in, m_convert, m_gemm, m_out].iter().enumerate() {
                recs.push(rec(
                    name,
                    1 + branch * 4 + k as u64,
                    start + k as u64 * 10_000,
                    9_000,
                ));
            }
        }
        recs.push(rec(m_bn, 9, 42_000, 5_000));
        let f = measure(&steps, &recs);
        assert_eq!((f.kernels_extra, f.kernels_name_matched), (0, 9));
        assert!(f.cut.is_none() && f.first_mismatch.is_none());
        // Each step holds its own kernels: the convolution's eight, the batch norm's one.
        let unit = |u: u32| f.units.iter().find(|x| x.unit == u).unwrap();
        assert!((unit(12).in_context_us - 72.0).abs() < 1e-9);
        assert!((unit(4).in_context_us - 5.0).abs() < 1e-9);
        // A driver's fill on the way goes with the step; the step is still taken whole.
        let mut other = recs.clone();
        other.insert(0, rec("memset32_aligned1D", 0, 0, 500));
        let g = measure(&steps, &other);
        assert_eq!(
            (g.copy_kernels, g.kernels_name_matched, g.kernels_extra),
            (1, 9, 0)
        );
        // A kernel the replay adds, of a name a step holds: one by one, as before, it is
        // counted extra and the next step keeps its own kernel.
        let add = [
            TracedStep {
                geometry: Vec::new(),
                copies: 0,
                unit: 0,
                label: "aten::add",
                kernels: vec![bn, t_out],
                traced_ns: 10_000,
                idle_before_ns: 0,
            },
            TracedStep {
                geometry: Vec::new(),
                copies: 0,
                unit: 1,
                label: "aten::mul",
                kernels: vec![bn],
                traced_ns: 5_000,
                idle_before_ns: 0,
            },
        ];
        let recs = [
            rec(m_out, 1, 0, 1_000),
            rec(m_bn, 2, 1_000, 4_000),
            rec(m_out, 3, 5_000, 5_000),
            rec(m_bn, 4, 10_000, 3_000),
        ];
        let h = measure(&add, &recs);
        assert_eq!((h.kernels_extra, h.kernels_name_matched), (1, 3));
        let unit = |u: u32| h.units.iter().find(|x| x.unit == u).unwrap().in_context_us;
        assert!((unit(0) - 10.0).abs() < 1e-9 && (unit(1) - 3.0).abs() < 1e-9);
    }

    #[test]
    fn copies_the_graph_runs_as_driver_kernels_go_to_their_steps() {
        // A copy of its own (tier 1), then `sort`, whose replay copies its input three times
        // before its two kernels: the graph runs every copy as `memcpy32_post`.
        let steps = [
            TracedStep {
                geometry: Vec::new(),
                copies: 1,
                unit: 0,
                label: "Memcpy DtoD (Device -> Device)",
                kernels: vec![],
                traced_ns: 1_000,
                idle_before_ns: 0,
            },
            TracedStep {
                geometry: Vec::new(),
                copies: 3,
                unit: 1,
                label: "aten::sort",
                kernels: vec![
                    "void (anonymous namespace)::elementwise_kernel_with_index<int>(int)",
                    "void at::native::radixSortKVInPlace<-2>(int)",
                ],
                traced_ns: 33_000,
                idle_before_ns: 0,
            },
        ];
        let mut recs: Vec<KernelRecord> = (0..4)
            .map(|k| rec("memcpy32_post", k, k * 1_000, 1_000))
            .collect();
        recs.push(rec(
            "_ZN50_GLOBAL__N_elementwise_kernel_with_indexIiEEvi",
            4,
            4_000,
            1_000,
        ));
        recs.push(rec(
            "_ZN2at6native18radixSortKVInPlaceILin2EEEvi",
            5,
            5_000,
            28_000,
        ));
        let f = measure(&steps, &recs);
        assert_eq!((f.kernels_launched, f.copy_kernels), (2, 4));
        assert_eq!((f.kernels_name_matched, f.kernels_extra), (2, 0));
        assert!(f.first_mismatch.is_none());
        // The sort step holds its three copies and its kernels: 3 + 1 + 28 us.
        assert!(
            (f.aligned_in_context_us - 32.0).abs() < 1e-9,
            "{}",
            f.aligned_in_context_us
        );
        assert!(is_driver_copy("memcpy128") && !is_driver_copy("_Z6memcpyv"));
    }

    #[test]
    fn launches_gaps_are_each_launchs_own() {
        // Two launches of one cycle: kernels of 10 us with a 2 us gap, then 4 us; 1000 us
        // between the launches (a copy) is no gap.
        let r = |start: u64, us: u64| rec("k", 0, start, us * 1000);
        let a = vec![r(0, 10), r(12_000, 10)];
        let b = vec![r(1_022_000, 10), r(1_036_000, 10)];
        let (g, span) = gaps_and_span_us_by_launch(&[a, b], 1).unwrap();
        assert!(
            (g - 3.0).abs() < 1e-9 && (span - 23.0).abs() < 1e-9,
            "{g} {span}"
        );
        assert_eq!(gaps_and_span_us_by_launch(&[], 1), None);
    }

    #[test]
    fn the_first_of_launches_back_to_back_is_kept_apart_where_they_split() {
        let k = |node: u64, start: u64| rec("k", node, start, 1_000);
        // Three launches of two kernels, out of order: the first launch's are kept apart,
        // the other two give the figures.
        let recs = vec![
            k(1, 22_000),
            k(0, 0),
            k(0, 10_000),
            k(1, 2_000),
            k(0, 20_000),
            k(1, 12_000),
        ];
        let r = RecordedLaunches::after_first(recs.clone(), 3);
        assert_eq!(r.launches, 2);
        let starts = |v: &[KernelRecord]| v.iter().map(|x| x.start_ns).collect::<Vec<_>>();
        assert_eq!(starts(r.first.as_deref().unwrap()), vec![0, 2_000]);
        assert_eq!(starts(&r.records), vec![10_000, 12_000, 20_000, 22_000]);
        assert_eq!(r.each.len(), 2);
        // Five records cannot be three launches of one graph: all stand together, as
        // three launches, none apart.
        let r = RecordedLaunches::after_first(recs[..5].to_vec(), 3);
        assert_eq!((r.launches, r.records.len(), r.each.len()), (3, 5, 0));
        assert!(r.first.is_none());
    }

    #[test]
    fn back_to_back_launches_are_split_in_the_order_they_ran() {
        let k = |node: u64, start: u64| rec("k", node, start, 1_000);
        // Two launches of a graph of two kernels, delivered out of order.
        let recs = vec![k(1, 12_000), k(0, 0), k(1, 2_000), k(0, 10_000)];
        let v = split_launches(&recs, 2).unwrap();
        let starts: Vec<Vec<u64>> = v
            .iter()
            .map(|l| l.iter().map(|r| r.start_ns).collect())
            .collect();
        assert_eq!(starts, vec![vec![0, 2_000], vec![10_000, 12_000]]);
        // Three records cannot be two launches of one graph.
        assert_eq!(split_launches(&recs[..3], 2), None);
        assert_eq!(split_launches(&recs, 0), None);
        assert_eq!(split_launches(&[], 2), None);
    }

    proptest::proptest! {
        /// Launches of one graph back to back, their records shuffled: split, each launch
        /// holds the graph's kernels in order, every launch ends before the next begins,
        /// and the launches' gaps never count the time between launches.
        #[test]
        fn launches_back_to_back_split_whole_and_in_order(
            durations in proptest::collection::vec(1u64..50, 1..12),
            gaps in proptest::collection::vec(0u64..5, 12),
            launches in 1usize..6,
            between in 100u64..10_000,
            seed in 0u64..1_000,
        ) {
            let mut recs = Vec::new();
            let mut t = 0u64;
            for _ in 0..launches {
                for (node, &d) in durations.iter().enumerate() {
                    recs.push(rec("k", node as u64, t * 1000, d * 1000));
                    t += d + gaps[node];
                }
                t += between;
            }
            let n = recs.len();
            recs.rotate_left(seed as usize % n);
            let split = split_launches(&recs, launches).unwrap();
            proptest::prop_assert_eq!(split.len(), launches);
            for (i, l) in split.iter().enumerate() {
                let nodes: Vec<u64> = l.iter().map(|r| r.graph_node).collect();
                proptest::prop_assert_eq!(nodes, (0..durations.len() as u64).collect::<Vec<_>>());
                if let Some(next) = split.get(i + 1) {
                    proptest::prop_assert!(l.last().unwrap().end_ns <= next[0].start_ns);
                }
            }
            let within: u64 = gaps[..durations.len() - 1].iter().sum();
            let (g, _) = gaps_and_span_us_by_launch(&split, 1).unwrap();
            proptest::prop_assert!((g - within as f64).abs() < 1e-9, "{} {}", g, within);
        }
    }

    #[test]
    fn a_rounds_kernels_are_told_apart_by_position_when_every_unit_launched_its_count() {
        let k = |start: u64, us: u64| KernelRecord {
            name: "k".into(),
            start_ns: start,
            end_ns: start + us * 1000,
            ..Default::default()
        };
        // Two cycles of a unit of one kernel and one of two: records arrive out of order.
        let recs = vec![
            k(0, 10),
            k(30_000, 12),
            k(10_000, 2),
            k(20_000, 3),
            k(50_000, 4),
            k(42_000, 5),
        ];
        let v = kernels_by_position(&recs, &[1, 2], 2).unwrap();
        let durations: Vec<f64> = v.iter().map(|p| p.kernels_us).collect();
        assert_eq!(durations, vec![11.0, 7.0]);
        // Run one after another, a position's kernels are busy for their durations.
        assert_eq!(v[0].busy_us, v[0].kernels_us);
        assert_eq!(v[1].busy_us, v[1].kernels_us);
        // Side by side, for the union of their intervals: the second position's two
        // kernels overlap by 1 us in the first cycle and by 2 us in the second.
        let side = vec![
            k(0, 10),
            k(10_000, 5),
            k(14_000, 3),
            k(30_000, 12),
            k(42_000, 4),
            k(44_000, 4),
        ];
        let v = kernels_by_position(&side, &[1, 2], 2).unwrap();
        assert_eq!(v[1].kernels_us, 8.0);
        assert_eq!(v[1].busy_us, 6.5);
        assert_eq!(v[0].busy_us, 11.0);
        // A count other than alone's tells no position apart.
        assert_eq!(kernels_by_position(&recs[..5], &[1, 2], 2), None);
        assert_eq!(kernels_by_position(&recs, &[0, 0], 2), None);
    }

    #[test]
    fn each_launchs_first_cycle_is_told_apart_from_the_cycles_after_it() {
        let k = |start: u64, us: u64| KernelRecord {
            name: "k".into(),
            start_ns: start,
            end_ns: start + us * 1000,
            ..Default::default()
        };
        // Two launches of three cycles of one unit of one kernel: the first cycle of each
        // launch runs 10 us, the cycles after it 13 us (a run-away value, say).
        let mut recs = Vec::new();
        for launch in 0..2u64 {
            for cycle in 0..3u64 {
                let us = if cycle == 0 { 10 } else { 13 };
                recs.push(k((launch * 3 + cycle) * 20_000, us));
            }
        }
        recs.reverse();
        let each = kernels_by_position_each_cycle(&recs, &[1], 6).unwrap();
        assert_eq!(each.len(), 6);
        let durations: Vec<f64> = each.iter().map(|c| c[0].kernels_us).collect();
        assert_eq!(durations, vec![10.0, 13.0, 13.0, 10.0, 13.0, 13.0]);
        let first = mean_of_cycles(&each, |i| i % 3 == 0);
        assert_eq!(first[0].kernels_us, 10.0);
        assert_eq!(first[0].busy_us, 10.0);
        let all = kernels_by_position(&recs, &[1], 6).unwrap();
        assert_eq!(all, mean_of_cycles(&each, |_| true));
        assert_eq!(all[0].kernels_us, 12.0);
        assert!(mean_of_cycles(&each, |_| false).is_empty());
    }

    #[test]
    fn a_units_kernels_alone_are_told_apart_by_the_step_each_invocation_ran() {
        let k = |start: u64, us: u64| KernelRecord {
            start_ns: start,
            end_ns: start + us * 1000,
            ..Default::default()
        };
        // A launch of four invocations over two steps (7, 9, 7, 9), one kernel each, two
        // launches: the masked step (9) runs its kernel twice as long as the plain one.
        let recs = vec![
            k(0, 29),
            k(30_000, 60),
            k(91_000, 29),
            k(121_000, 58),
            k(180_000, 31),
            k(212_000, 62),
            k(275_000, 29),
            k(305_000, 60),
        ];
        let v = kernels_by_step(&recs, 1, &[7, 9, 7, 9], 2).unwrap();
        assert_eq!(v.iter().map(|s| s.step).collect::<Vec<_>>(), vec![7, 9]);
        assert_eq!(v[0].kernels_us, 29.5);
        assert_eq!(v[1].kernels_us, 60.0);
        assert_eq!(v[1].busy_us, 60.0);
        let l = UnitLaunches {
            by_step: v,
            ..Default::default()
        };
        assert_eq!(l.at_step(9).map(|s| s.kernels_us), Some(60.0));
        assert_eq!(l.at_step(8), None);
        // Records that do not split into the launches' invocations give none.
        assert_eq!(kernels_by_step(&recs[..7], 1, &[7, 9, 7, 9], 2), None);
    }
}
