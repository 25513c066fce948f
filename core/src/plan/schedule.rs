//! What the executor enqueues, decided without a GPU: the capture program of graph mode
//! (each executed step on its stream, after the cross-stream waits it needs) and the
//! unroll count of isolated mode. Steps of units the executor cannot run (tier 3 until it
//! lands, collectives, unreplayable) are left out, and the waits they carried are handed on
//! to the steps that followed them, so the replayed graph keeps the trace's ordering.
//!
//! Invariant: in a program, a step only waits on steps enqueued before it, and every
//! executed step appears exactly once.
//!
//! Also the schedule facts the prediction from parts needs: the transitions between
//! different units a replay makes, and the schedule's length from per-step times.

use crate::plan::types::{Plan, Step};
use std::collections::{BTreeSet, HashMap};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProgramOp {
    /// Make `stream` wait for the event recorded after `step`.
    Wait { stream: u32, step: u32 },
    /// Enqueue step `step` (unit `unit`) on `stream`.
    Launch { step: u32, unit: u32, stream: u32 },
    /// Record the event of `step` on `stream` (some later step waits on it).
    Record { step: u32, stream: u32 },
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    pub ops: Vec<ProgramOp>,
    pub launched: usize,
    pub skipped: usize,
    pub streams: usize,
}

/// Builds the graph-mode program for the steps `runs` accepts.
pub fn graph_program(plan: &Plan, runs: impl Fn(&Step) -> bool) -> Program {
    let n = plan.steps.len();
    // For every step: the executed steps it stands for when something waits on it.
    let mut resolved: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); n];
    let mut last_on_stream: Vec<Option<u32>> = vec![None; plan.streams.len()];
    let mut inherited: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); plan.streams.len()];
    let mut waits_of: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); n];
    let mut executed = vec![false; n];
    for (i, s) in plan.steps.iter().enumerate() {
        let mut waits: BTreeSet<u32> = BTreeSet::new();
        for &w in &s.waits_on {
            waits.extend(resolved[w as usize].iter().copied());
        }
        let st = s.stream as usize;
        if runs(s) {
            waits.extend(std::mem::take(&mut inherited[st]));
            // Waiting on work of the same stream is implied by stream order.
            waits.retain(|&w| plan.steps[w as usize].stream != s.stream);
            executed[i] = true;
            resolved[i] = BTreeSet::from([i as u32]);
            waits_of[i] = waits;
            last_on_stream[st] = Some(i as u32);
        } else {
            // A skipped step stands for what came before it on its stream and for its waits.
            let mut r = waits.clone();
            r.extend(last_on_stream[st]);
            r.extend(inherited[st].iter().copied());
            inherited[st].extend(waits);
            resolved[i] = r;
        }
    }
    let waited: BTreeSet<u32> = waits_of.iter().flatten().copied().collect();
    let mut p = Program {
        streams: plan.streams.len(),
        ..Default::default()
    };
    for (i, s) in plan.steps.iter().enumerate() {
        if !executed[i] {
            p.skipped += 1;
            continue;
        }
        for &w in &waits_of[i] {
            p.ops.push(ProgramOp::Wait {
                stream: s.stream,
                step: w,
            });
        }
        p.ops.push(ProgramOp::Launch {
            step: i as u32,
            unit: s.unit,
            stream: s.stream,
        });
        p.launched += 1;
        if waited.contains(&(i as u32)) {
            p.ops.push(ProgramOp::Record {
                step: i as u32,
                stream: s.stream,
            });
        }
    }
    p
}

/// The traced critical path: the longest chain of steps through stream order and
/// cross-stream waits, each step weighing its traced duration if `counts(step)` and
/// nothing otherwise. A perfect replay of those steps cannot be faster.
/// The trace's own time per iteration: from an iteration's first traced start to its last
/// traced end, averaged over the iterations. A model's iteration repeats the same steps,
/// so the plan's steps (in trace order) fall into `iterations` equal blocks; `None` when
/// they do not (or the plan records no iterations). For a trace of CUDA-graph replays this
/// is the model's own graph time on the GPU, launch latency aside.
pub fn iteration_span_ns(plan: &Plan) -> Option<f64> {
    let n = plan.iterations.count as usize;
    if n == 0 || plan.steps.is_empty() || plan.steps.len() % n != 0 {
        return None;
    }
    let per = plan.steps.len() / n;
    let spans: Vec<i64> = plan
        .steps
        .chunks(per)
        .map(|block| {
            let start = block.iter().map(|s| s.traced_start_ns).min().unwrap_or(0);
            let end = block
                .iter()
                .map(|s| s.traced_start_ns + s.traced_ns)
                .max()
                .unwrap_or(0);
            end - start
        })
        .collect();
    Some(spans.iter().sum::<i64>() as f64 / n as f64)
}

pub fn critical_path_ns(plan: &Plan, counts: impl Fn(&Step) -> bool) -> i64 {
    let mut finish = vec![0i64; plan.steps.len()];
    let mut stream_finish = vec![0i64; plan.streams.len()];
    for (i, s) in plan.steps.iter().enumerate() {
        let ready = s
            .waits_on
            .iter()
            .map(|&w| finish[w as usize])
            .chain(std::iter::once(stream_finish[s.stream as usize]))
            .max()
            .unwrap_or(0);
        finish[i] = ready + if counts(s) { s.traced_ns } else { 0 };
        stream_finish[s.stream as usize] = finish[i];
    }
    finish.into_iter().max().unwrap_or(0)
}

/// Consecutive executed steps of one stream that belong to two different units: the
/// transitions a graph replay makes between units, which an isolated unit (repeating
/// itself) never makes. One entry per ordered pair of units, with every occurrence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    pub from_unit: u32,
    pub to_unit: u32,
    /// The (from step, to step) pairs where it happens, in plan order.
    pub occurrences: Vec<(u32, u32)>,
}

/// The transitions between units on `rank`'s streams among the steps `runs` accepts,
/// most frequent first (ties by unit ids). Steps of the same unit back to back are no
/// transition: the isolated measurement already repeats the unit after itself.
pub fn transitions(plan: &Plan, rank: u32, runs: impl Fn(&Step) -> bool) -> Vec<Transition> {
    let mut last: Vec<Option<u32>> = vec![None; plan.streams.len()];
    let mut by_pair: std::collections::HashMap<(u32, u32), Vec<(u32, u32)>> = Default::default();
    for (i, s) in plan.steps.iter().enumerate() {
        if plan.streams[s.stream as usize].rank != rank || !runs(s) {
            continue;
        }
        let slot = &mut last[s.stream as usize];
        if let Some(prev) = *slot {
            let from = plan.steps[prev as usize].unit;
            if from != s.unit {
                by_pair
                    .entry((from, s.unit))
                    .or_default()
                    .push((prev, i as u32));
            }
        }
        *slot = Some(i as u32);
    }
    let mut v: Vec<Transition> = by_pair
        .into_iter()
        .map(|((from_unit, to_unit), occurrences)| Transition {
            from_unit,
            to_unit,
            occurrences,
        })
        .collect();
    v.sort_by(|a, b| {
        b.occurrences
            .len()
            .cmp(&a.occurrences.len())
            .then((a.from_unit, a.to_unit).cmp(&(b.from_unit, b.to_unit)))
    });
    v
}

/// How far back a replay's switches reach: for every switch between different units on a
/// stream (as [`transitions`] counts them), the distinct other units that ran on the rank
/// since the unit switched to last ran (its reuse distance in the plan's order); switches
/// to a unit's first run are counted apart. A unit that recurs within a few units finds
/// its code and data warmer than one that waits for every other unit (as in isolated
/// mode's round of every unit).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwitchReuse {
    pub switches: u64,
    pub to_first_run: u64,
    /// One entry per switch to a unit that ran before, in plan order.
    pub distances: Vec<u32>,
    /// Every switch, in plan order: the step switched to, and its distance (`None` for a
    /// unit's first run).
    pub at_step: Vec<(u32, Option<u32>)>,
}

pub fn switch_reuse(plan: &Plan, rank: u32, runs: impl Fn(&Step) -> bool) -> SwitchReuse {
    let mut out = SwitchReuse::default();
    let mut last_on_stream: Vec<Option<u32>> = vec![None; plan.streams.len()];
    // Each unit's last run, as a position in the rank's executed steps; a Fenwick tree
    // over positions marks every unit's last one, so the distinct units run since a
    // position are the marks after it (log time per step, for plans of 10^5 steps).
    let mut last_run: std::collections::HashMap<u32, usize> = Default::default();
    let n = plan.steps.len() + 1;
    let mut marks = vec![0i64; n + 1];
    let add = |marks: &mut Vec<i64>, mut i: usize, v: i64| {
        while i <= n {
            marks[i] += v;
            i += i & i.wrapping_neg();
        }
    };
    let upto = |marks: &Vec<i64>, mut i: usize| {
        let mut sum = 0;
        while i > 0 {
            sum += marks[i];
            i -= i & i.wrapping_neg();
        }
        sum
    };
    let mut clock = 0usize;
    for (i, s) in plan.steps.iter().enumerate() {
        if plan.streams[s.stream as usize].rank != rank || !runs(s) {
            continue;
        }
        let prev = last_on_stream[s.stream as usize].replace(s.unit);
        let before = last_run.get(&s.unit).copied();
        if prev.is_some_and(|p| p != s.unit) {
            out.switches += 1;
            let distance = before.map(|t| (upto(&marks, clock) - upto(&marks, t)) as u32);
            match distance {
                Some(d) => out.distances.push(d),
                None => out.to_first_run += 1,
            }
            out.at_step.push((i as u32, distance));
        }
        clock += 1;
        if let Some(t) = before {
            add(&mut marks, t, -1);
        }
        add(&mut marks, clock, 1);
        last_run.insert(s.unit, clock);
    }
    out
}

/// One place in the round of every unit ([`round_order`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoundEntry {
    pub unit: u32,
    /// The step whose places (in the memory image) it runs at.
    pub step: u32,
    /// A unit's own first run, whose kernels the round measures; `false` for a lead-in:
    /// the model's step before a counted one, run first so that the counted unit finds in
    /// L2 what the model leaves there for it (its input, just written).
    pub counted: bool,
}

/// Which of a unit's runs the round counts (the others' steps can still be lead-ins).
///
/// A unit's runs differ in the model: T5's first layer runs many of its kernels slower
/// than the other eleven (its units' first runs traced 1.5-2.5 % over their mean per
/// iteration, sessions 22 and 29). On the traced times of 30 plans, four runs spread over
/// each unit's runs came within ±0.6 % of the mean. In kc's rounds they did not help: on
/// the H100 four rounds ran T5's kernels slower than the first runs did and read its
/// graph +3.7 % where the first runs read +1.5 % (the same capture, docs/MEASUREMENTS.md,
/// session 30; why is not measured). The first run stays the
/// default; the others are a diagnostic (`--round-runs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundAt {
    /// Its first run (the round of kc before session 30, and `--round-runs 1`).
    First,
    /// Round `index` of `of`: the run in the middle of the `index`-th of `of` equal parts
    /// of the unit's runs, ⌊(index + ½) · runs / of⌋.
    Stratum { index: usize, of: usize },
}

impl RoundAt {
    /// The `of` rounds spread over the units' runs (one: the first runs).
    pub fn spread(of: usize) -> Vec<RoundAt> {
        match of {
            0 | 1 => vec![RoundAt::First],
            _ => (0..of)
                .map(|index| RoundAt::Stratum { index, of })
                .collect(),
        }
    }

    /// The run counted of a unit that runs `runs` times (0-based).
    pub fn run(self, runs: usize) -> usize {
        match self {
            RoundAt::First => 0,
            RoundAt::Stratum { index, of } => {
                let at = ((index as f64 + 0.5) * runs as f64 / of.max(1) as f64).floor() as usize;
                at.min(runs.saturating_sub(1))
            }
        }
    }
}

/// The round of every unit on `rank` among the steps `runs` accepts: each unit once, at
/// the run `at` picks, in the order the replay runs those; with `lead_in` steps (0: none),
/// a unit whose steps before it on its stream (that many, or as many as ran) are not the
/// round's last entries gets them first, oldest first, as lead-ins. Without lead-ins a unit
/// whose input the model has just written (an SE block's mean after the activation it
/// reads) ran after some other unit's first step and read its input from memory: on EfficientNet-V2-S (H200) the SE means' kernels ran 45 % slower in
/// the round than in kc's graph of the model, and 1 % faster with lead-ins (the same call;
/// docs/MEASUREMENTS.md, session 16).
pub fn round_order(
    plan: &Plan,
    rank: u32,
    runs: impl Fn(&Step) -> bool,
    lead_in: usize,
    at: RoundAt,
) -> Vec<RoundEntry> {
    let mut out: Vec<RoundEntry> = Vec::new();
    let on_rank = |s: &Step| plan.streams[s.stream as usize].rank == rank && runs(s);
    // Each unit's runs, and the one the round counts.
    let mut total: HashMap<u32, usize> = HashMap::new();
    for s in plan.steps.iter().filter(|s| on_rank(s)) {
        *total.entry(s.unit).or_default() += 1;
    }
    let mut seen: HashMap<u32, usize> = HashMap::new();
    // The last `lead_in` steps that ran on each stream, oldest first.
    let mut recent: Vec<std::collections::VecDeque<u32>> =
        vec![Default::default(); plan.streams.len()];
    for (i, s) in plan.steps.iter().enumerate() {
        if !on_rank(s) {
            continue;
        }
        let last = &mut recent[s.stream as usize];
        let run = seen.entry(s.unit).or_default();
        let counted = *run == at.run(total[&s.unit]);
        *run += 1;
        // The steps before a counted run, as the stream left them (only those are read).
        let before: Vec<u32> = if counted {
            last.iter().copied().collect()
        } else {
            Vec::new()
        };
        if lead_in > 0 {
            if last.len() == lead_in {
                last.pop_front();
            }
            last.push_back(i as u32);
        }
        if !counted {
            continue;
        }
        // The round must end with the steps before the unit: what it ends with already (the
        // longest start of them that is its tail) is not run again.
        let kept = (0..=before.len().min(out.len()))
            .rev()
            .find(|&k| {
                out[out.len() - k..]
                    .iter()
                    .map(|e| e.step)
                    .eq(before[..k].iter().copied())
            })
            .unwrap_or(0);
        out.extend(before[kept..].iter().map(|&b| RoundEntry {
            unit: plan.steps[b as usize].unit,
            step: b,
            counted: false,
        }));
        out.push(RoundEntry {
            unit: s.unit,
            step: i as u32,
            counted: true,
        });
    }
    out
}

/// The round's entries with only the lead-ins at the model steps `only` (a diagnostic,
/// `kc exec --round-lead-ins-only`: which lead-in changes a later unit's kernels in the
/// round); every counted entry stays, in order.
pub fn keep_lead_ins(entries: &mut Vec<RoundEntry>, only: &[u32]) {
    entries.retain(|e| e.counted || only.contains(&e.step));
}

/// The model's steps before each step on its stream that lead up to it, among the steps
/// that run (`runs`), this rank's only, oldest first: back to the nearest of the last
/// `max_back` steps that `touches` it (shares a place with it: most often the producer of
/// its input), or the one step before it where none does. A training step's batch norm
/// follows its convolution through the counter it bumps (`num_batches_tracked.add_`), so
/// the step before it is not what wrote its input (session 25).
pub fn lead_ins(
    plan: &Plan,
    rank: u32,
    runs: impl Fn(&Step) -> bool,
    touches: impl Fn(u32, u32) -> bool,
    max_back: usize,
) -> std::collections::HashMap<u32, Vec<u32>> {
    let mut recent: Vec<std::collections::VecDeque<u32>> =
        vec![Default::default(); plan.streams.len()];
    let mut out = std::collections::HashMap::new();
    for (i, s) in plan.steps.iter().enumerate() {
        if plan.streams[s.stream as usize].rank != rank || !runs(s) {
            continue;
        }
        let i = i as u32;
        let last = &mut recent[s.stream as usize];
        // The newest step that touches this one, counted back from the step before it.
        let back = last.iter().rev().position(|&p| touches(p, i)).unwrap_or(0);
        if !last.is_empty() {
            out.insert(
                i,
                last.iter().skip(last.len() - 1 - back).copied().collect(),
            );
        }
        if last.len() == max_back.max(1) {
            last.pop_front();
        }
        last.push_back(i);
    }
    out
}

/// [`lead_ins`] where a step touches another when they share a place of the memory image
/// `df` (an operand or a result): what the units after their lead-ins and the record in
/// the model's cache state with its lead-ins (`--model-cache-lead-ins`) run before each
/// invocation.
pub fn lead_ins_at_places(
    plan: &Plan,
    rank: u32,
    df: &crate::plan::types::PlanDataflow,
    runs: impl Fn(&Step) -> bool,
    max_back: usize,
) -> std::collections::HashMap<u32, Vec<u32>> {
    // Each step's places (operands and results in the image): a step that shares one with
    // a later step is taken for what leads up to it.
    let places: Vec<std::collections::HashSet<u64>> = df
        .steps
        .iter()
        .map(|p| {
            let operands = p.operands.iter().flatten().copied();
            operands
                .chain(p.outputs.iter().flatten().map(|o| o.0))
                .collect()
        })
        .collect();
    let touches = |a: u32, b: u32| match (places.get(a as usize), places.get(b as usize)) {
        (Some(a), Some(b)) => a.iter().any(|x| b.contains(x)),
        _ => false,
    };
    lead_ins(plan, rank, runs, touches, max_back)
}

/// Whether step `step`'s tier-3 call writes integer or boolean data in place
/// ([`crate::plan::aten_call::AtenCall::writes_integers`]): run again before every
/// invocation of a later step, it bumps the indices it writes each time.
pub fn step_writes_integers(plan: &Plan, step: u32) -> bool {
    let Some(s) = plan.steps.get(step as usize) else {
        return false;
    };
    matches!(plan.aten_calls.get(s.unit as usize), Some(Some(call)) if call.writes_integers())
}

/// One launch of a unit after its lead-ins: `unroll` invocations over its `steps` in turn,
/// each after its lead-in steps (`leads`, oldest first) where the launch does not end with
/// them already (what it ends with, the longest start of them that is its tail, is not run
/// again). Each entry is (the lead-in steps run before it, the unit's step).
pub fn led_launch(
    steps: &[u32],
    unroll: u32,
    leads: &std::collections::HashMap<u32, Vec<u32>>,
) -> Vec<(Vec<u32>, u32)> {
    let mut out = Vec::with_capacity(unroll as usize);
    let mut ran: Vec<u32> = Vec::new();
    if steps.is_empty() {
        return out;
    }
    for i in 0..unroll as usize {
        let st = steps[i % steps.len()];
        let lead = leads.get(&st).map_or(&[][..], Vec::as_slice);
        let kept = (0..=lead.len().min(ran.len()))
            .rev()
            .find(|&k| ran[ran.len() - k..] == lead[..k])
            .unwrap_or(0);
        let run: Vec<u32> = lead[kept..].to_vec();
        ran.extend(&run);
        ran.push(st);
        out.push((run, st));
    }
    out
}

/// The kind that holds the labels each under the share [`kind_groups`] keeps apart.
pub const OTHER_KINDS: &str = "every other kind";

/// The kinds of unit to leave out of the program one at a time (`--kinds-left-out`): the
/// units (id, label, weight: their share of the plain sum, any unit) grouped by label,
/// each label whose weight is at least `min_share` of the total its own kind, heaviest
/// first, the rest together as [`OTHER_KINDS`] last. A kind too light to move the
/// program's energy past its noise would say nothing alone.
pub fn kind_groups(units: &[(u32, &str, f64)], min_share: f64) -> Vec<(String, Vec<u32>)> {
    let total: f64 = units.iter().map(|u| u.2.max(0.0)).sum();
    let mut by: std::collections::BTreeMap<&str, (f64, Vec<u32>)> = Default::default();
    for &(id, label, w) in units {
        let e = by.entry(label).or_default();
        e.0 += w.max(0.0);
        e.1.push(id);
    }
    let (mut kept, mut rest) = (Vec::new(), Vec::new());
    for (label, (w, ids)) in by {
        if total > 0.0 && w >= min_share * total {
            kept.push((w, label.to_string(), ids));
        } else {
            rest.extend(ids);
        }
    }
    kept.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut out: Vec<(String, Vec<u32>)> = kept.into_iter().map(|(_, l, i)| (l, i)).collect();
    if !rest.is_empty() {
        rest.sort_unstable();
        out.push((OTHER_KINDS.to_string(), rest));
    }
    out
}

/// A program of `--kinds-left-out`: the steps of `program` in order, each of a unit in
/// `kind` run `times` times in its place (0: left out, 2: doubled), every other step once,
/// and a step in `once` ([`steps_run_once`]: it writes integer or boolean data in place
/// or leads to indices another step reads) once whatever its kind: a second run, or
/// none, would leave indices the model never held.
pub fn kind_program(
    program: &[u32],
    unit_of: impl Fn(u32) -> u32,
    kind: &std::collections::HashSet<u32>,
    once: &std::collections::HashSet<u32>,
    times: usize,
) -> Vec<u32> {
    program
        .iter()
        .flat_map(|&st| {
            let n = if kind.contains(&unit_of(st)) && !once.contains(&st) {
                times
            } else {
                1
            };
            std::iter::repeat_n(st, n)
        })
        .collect()
}

/// What one step reads and writes in the memory image (arena offsets), as
/// [`steps_run_once`] follows data back through a program.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepAccess {
    pub reads: Vec<u64>,
    pub writes: Vec<u64>,
    /// The operands it reads as indices into another tensor and does not write (their
    /// fill is [`Fill::Indices`] or [`Fill::Offsets`]: a gather's or an embedding's
    /// indices, a grouped GEMM's offsets). Out of range, they take the op past its
    /// tensor; a mask or a count read wrong only gives wrong values.
    ///
    /// [`Fill::Indices`]: crate::plan::aten_call::Fill::Indices
    /// [`Fill::Offsets`]: crate::plan::aten_call::Fill::Offsets
    pub index_reads: Vec<u64>,
    /// It writes integer or boolean data into an operand in place (a counter's `add_`,
    /// a conversion's `copy_` into int64).
    pub writes_integers: bool,
}

/// What every step of `plan` reads and writes (one entry per step, in step order): the
/// places `df` gives its operands and results, and the results of earlier steps its reads
/// are bound to ([`crate::plan::types::BoundRead`]: an integer or boolean tensor is never
/// placed in the image, and the executor hands such a read its producer's own result, as
/// the model's step read it), each result keyed apart from the arena's offsets. A bound
/// read the executor does not hand its producer's result
/// ([`crate::plan::aten_call::takes_bound_result`]: recorded values serve it) depends on
/// no step, nor does a read of indices in range whatever their producer read
/// ([`crate::plan::aten_call::indices_in_range_whatever_input`]). A tier-3 step's call
/// says which tensors it writes and their
/// dtypes; a step of any other tier is taken to read and write every operand it has, which
/// keeps a place it may write among those still needed ([`steps_run_once`] never takes it
/// for that place's producer alone).
pub fn step_accesses(plan: &Plan, df: &crate::plan::types::PlanDataflow) -> Vec<StepAccess> {
    // A result of step s, as a place: above every arena offset.
    let result_of = |s: u32| RESULT_PLACE | u64::from(s);
    let mut out: Vec<StepAccess> = (0..plan.steps.len().min(df.steps.len()))
        .map(|st| {
            let unit = &plan.units[plan.steps[st].unit as usize];
            let places = &df.steps[st];
            let outputs = places.outputs.iter().flatten().map(|o| o.0);
            let Some(Some(call)) = plan.aten_calls.get(unit.id as usize) else {
                let all: Vec<u64> = places
                    .operands
                    .iter()
                    .flatten()
                    .copied()
                    .chain(outputs)
                    .collect();
                return StepAccess {
                    reads: all.clone(),
                    writes: all,
                    ..Default::default()
                };
            };
            let mut a = StepAccess {
                writes_integers: call.writes_integers(),
                ..Default::default()
            };
            for (i, arg) in call.args.iter().enumerate() {
                let written = call.writes(i);
                for t in arg.tensors() {
                    let Some(p) = places.operand_of(unit, t.slot) else {
                        continue;
                    };
                    a.reads.push(p);
                    if written {
                        a.writes.push(p);
                    } else if is_index(t) {
                        a.index_reads.push(p);
                    }
                }
            }
            a.writes.extend(outputs);
            a
        })
        .collect();
    for b in &plan.bound_reads {
        let (st, from) = (b.step as usize, b.producer_step as usize);
        if st >= out.len() || from >= out.len() {
            continue;
        }
        let unit = &plan.units[plan.steps[st].unit as usize];
        let Some(&slot) = unit.slots.get(b.operand as usize) else {
            continue;
        };
        // The operand's tensor and whether the step writes it, from its call; a read
        // the executor does not hand its producer's result depends on no step.
        let tensor = plan
            .aten_calls
            .get(unit.id as usize)
            .and_then(Option::as_ref)
            .and_then(|c| {
                c.args.iter().enumerate().find_map(|(i, arg)| {
                    let t = arg.tensors().into_iter().find(|t| t.slot == slot)?;
                    Some((t, c.writes(i)))
                })
            });
        let (index, written) = match tensor {
            Some((t, written)) => {
                let recorded = plan.values.for_slot(unit.id, Some(b.step), slot).is_some();
                let placed = df.steps[st].operand_of(unit, slot).is_some();
                if !crate::plan::aten_call::takes_bound_result(t, recorded, written, placed) {
                    continue;
                }
                (is_index(t), written)
            }
            None => (false, true),
        };
        // Indices in range whatever the producer read need it to have run, not on the
        // model's values: the read depends on no step.
        let producer = &plan.units[plan.steps[from].unit as usize];
        let in_range = plan
            .aten_calls
            .get(producer.id as usize)
            .and_then(Option::as_ref)
            .is_some_and(|c| {
                crate::plan::aten_call::indices_in_range_whatever_input(&c.op, b.output)
            });
        if in_range {
            continue;
        }
        let place = result_of(b.producer_step);
        out[st].reads.push(place);
        if index && !written {
            out[st].index_reads.push(place);
        }
        if !out[from].writes.contains(&place) {
            out[from].writes.push(place);
        }
    }
    out
}

/// The bit that sets a step's result, as a place of [`step_accesses`], apart from the
/// arena's offsets.
const RESULT_PLACE: u64 = 1 << 63;

/// Whether an op reads the tensor as indices into another (the fill the call gives it).
fn is_index(t: &crate::plan::aten_call::TensorInput) -> bool {
    matches!(
        t.fill,
        crate::plan::aten_call::Fill::Indices { .. } | crate::plan::aten_call::Fill::Offsets { .. }
    )
}

/// The steps of `program` that every program of `--kinds-left-out` runs exactly once,
/// whatever their kind: those that write integer or boolean data in place, and, back
/// through the places each reads, every step that produced what an index read takes (T5's
/// relative-position buckets: `arange`, the subtraction, the conversion to float, `log`,
/// the products, the conversion back to int64, `min`, `where`, the bucket `add_`). Left
/// out or run twice, any of them leaves indices the model never held, and a gather then
/// reads past its table: T5's graph ended by SIGSEGV inside the driver with the int64
/// `add_` doubled (session 26) and, once the in-place writers ran once, without its float
/// `copy_`s (session 28). A step that only reads indices (the gather) may go; what it
/// reads may not. Masks are not followed: read wrong, they give wrong values, not a read
/// out of bounds, and on T5's graph they come from the attention scores (`isneginf`,
/// `all`), whose producers are nearly the whole program. Nor are indices in range
/// whatever their producer read (`topk`'s, `sort`'s, a pooling's:
/// [`crate::plan::aten_call::indices_in_range_whatever_input`]): [`step_accesses`] gives
/// such a read no step, since the producer ran in the program measured first and its
/// result stays valid (since session 29; the Mixtral fixture keeps 39 of 552 steps, 404
/// before, and ResNet-50's training step its 159 `num_batches_tracked.add_`s, 887
/// before).
///
/// One pass from the end: a step is kept when it writes integers or writes a place a kept
/// step or an index read needs (then its own reads are needed too, and the places it
/// writes no longer are). Places match by arena offset, as the lead-ins' do, and results
/// by the step that computed them; `access` is [`step_accesses`], by step.
pub fn steps_run_once(program: &[u32], access: &[StepAccess]) -> std::collections::HashSet<u32> {
    let mut needed: std::collections::HashSet<u64> = Default::default();
    let mut once = std::collections::HashSet::new();
    for &st in program.iter().rev() {
        let Some(a) = access.get(st as usize) else {
            continue;
        };
        if a.writes_integers || a.writes.iter().any(|p| needed.contains(p)) {
            once.insert(st);
            for p in &a.writes {
                needed.remove(p);
            }
            needed.extend(a.reads.iter().copied());
        }
        needed.extend(a.index_reads.iter().copied());
    }
    once
}

/// The switches between different units one cycle of a round makes (`units` in cycle
/// order, the last followed by the first): entries of the same unit back to back are no
/// switch, as in [`transitions`]. At least 1, so that it divides.
pub fn switches_per_cycle(units: &[u32]) -> usize {
    let n = units.len();
    (0..n)
        .filter(|&i| units[i] != units[(i + n - 1) % n])
        .count()
        .max(1)
}

/// The schedule's length when every step that `duration_us` gives a time takes that
/// time, after `gap_us(previous step, step)` (indices of the step before it on its stream
/// with a time, and of itself), and starts once its stream
/// and every step it waits on are done; steps without a time take none. Microseconds,
/// with the serial sum of the same times and gaps beside it: with one stream the two are
/// equal; with several, their difference is what the overlap saves.
pub fn simulated_length_us(
    plan: &Plan,
    rank: u32,
    duration_us: impl Fn(&Step) -> Option<f64>,
    gap_us: impl Fn(usize, usize) -> f64,
) -> (f64, f64) {
    let mut finish = vec![0f64; plan.steps.len()];
    // When each stream is free, and its last step with a time (the gap follows it).
    let mut stream_free = vec![0f64; plan.streams.len()];
    let mut stream_last: Vec<Option<usize>> = vec![None; plan.streams.len()];
    let (mut end, mut serial) = (0f64, 0f64);
    for (i, s) in plan.steps.iter().enumerate() {
        let st = s.stream as usize;
        if plan.streams[st].rank != rank {
            continue;
        }
        let mut ready = stream_free[st];
        for &w in &s.waits_on {
            ready = ready.max(finish[w as usize]);
        }
        finish[i] = match duration_us(s) {
            Some(d) => {
                let gap = stream_last[st].map_or(0.0, |p| gap_us(p, i));
                stream_last[st] = Some(i);
                serial += gap + d;
                ready + gap + d
            }
            None => ready,
        };
        stream_free[st] = finish[i];
        end = end.max(finish[i]);
    }
    (end, serial)
}

/// How many times isolated mode repeats a unit inside one captured graph: enough to fill
/// `target_ns` of GPU time at the traced mean, at least 1 and at most `max`.
pub fn unroll_count(traced_mean_ns: f64, target_ns: f64, max: u32) -> u32 {
    if traced_mean_ns <= 0.0 || !traced_mean_ns.is_finite() {
        return max.clamp(1, 100);
    }
    ((target_ns / traced_mean_ns).ceil() as u32).clamp(1, max.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::types::*;

    /// A contiguous tensor argument of a tier-3 call.
    fn tensor_arg(dims: &[i64], dtype: ElemType, slot: u32) -> AtenArg {
        AtenArg::Tensor(TensorArg {
            strides: kc_ir::TensorSpec::contiguous_strides(dims),
            dims: dims.to_vec(),
            dtype,
            slot,
        })
    }

    /// A tier-3 unit with one invocation.
    fn aten_unit(id: u32, call: UnitCall, slots: &[u32]) -> PlanUnit {
        PlanUnit {
            id,
            tier: PlanTier::AtenOp,
            family: String::new(),
            label: String::new(),
            call,
            kernels: vec![],
            invocations: 1,
            traced_ns_total: 0,
            slots: slots.to_vec(),
            cold_rotation: 1,
        }
    }

    /// A memory image of no regions whose steps are placed as `steps` say.
    fn image_of(steps: Vec<StepPlaces>) -> PlanDataflow {
        PlanDataflow {
            derivation: String::new(),
            regions: vec![],
            arena_bytes: 0,
            parameter_bytes: 0,
            peak_activation_bytes: 0,
            steps,
        }
    }

    fn aten_op(op: &str, args: Vec<AtenArg>) -> UnitCall {
        UnitCall::AtenOp {
            op: op.into(),
            args,
        }
    }

    #[test]
    fn a_kind_program_leaves_out_or_doubles_the_kind_but_never_its_steps_run_once() {
        use std::collections::HashSet;
        // Steps 0-5 of units 7, 8, 9, 7, 8, 9; unit 8 is the kind; steps 2 and 4 run once.
        let unit_of = |st: u32| [7, 8, 9, 7, 8, 9][st as usize];
        let program = [0, 1, 2, 3, 4, 5];
        let none = HashSet::new();
        let once: HashSet<u32> = [2, 4].into();
        let kind: HashSet<u32> = [8].into();
        assert_eq!(kind_program(&program, unit_of, &none, &once, 0), program);
        // Unit 8's step 1 goes; its step 4 runs once.
        assert_eq!(
            kind_program(&program, unit_of, &kind, &once, 0),
            [0, 2, 3, 4, 5]
        );
        assert_eq!(
            kind_program(&program, unit_of, &kind, &once, 2),
            [0, 1, 1, 2, 3, 4, 5]
        );
        let with_9: HashSet<u32> = [8, 9].into();
        assert_eq!(
            kind_program(&program, unit_of, &with_9, &once, 0),
            [0, 2, 3, 4]
        );
        let never = HashSet::new();
        assert_eq!(
            kind_program(&program, unit_of, &with_9, &never, 2),
            [0, 1, 1, 2, 2, 3, 4, 4, 5, 5]
        );
    }

    /// T5's relative-position buckets, in miniature: places 10-16 in the image.
    fn bucket_chain() -> Vec<StepAccess> {
        (0..10).map(bucket_step).collect()
    }

    fn bucket_step(step: u32) -> StepAccess {
        let a = |reads: &[u64], writes: &[u64], ints: &[u64], wi: bool| StepAccess {
            reads: reads.to_vec(),
            writes: writes.to_vec(),
            index_reads: ints.to_vec(),
            writes_integers: wi,
        };
        match step {
            0 => a(&[], &[10], &[], false),         // arange -> positions (int64)
            1 => a(&[10], &[11], &[10], false),     // sub -> relative positions
            2 => a(&[11], &[12], &[11], false),     // relative.float()
            3 => a(&[12], &[13], &[], false),       // log, scaled (float)
            4 => a(&[14, 13], &[14], &[], true),    // copy_ into int64 buckets
            5 => a(&[20, 14], &[21], &[14], false), // gather: bias from the table 20
            6 => a(&[21, 30], &[31], &[], false),   // attention scores + bias (float)
            7 => a(&[40], &[41], &[], false),       // an unrelated float step
            8 => a(&[50], &[50], &[], true),        // a counter's add_ (int64)
            _ => a(&[30], &[13], &[], false),       // writes 13 again, after its reader
        }
    }

    #[test]
    fn a_steps_access_comes_from_its_call_and_its_places() {
        use crate::plan::aten_call::build;
        let (t, unit) = (tensor_arg, aten_unit);
        let one = AtenArg::Scalar {
            ty: "Scalar".into(),
            value: "1".into(),
        };
        let select = vec![
            t(&[64, 8], ElemType::F16, 0),
            AtenArg::Scalar {
                ty: "int".into(),
                value: "0".into(),
            },
            t(&[5], ElemType::I64, 1),
        ];
        let add = vec![
            t(&[5], ElemType::I64, 2),
            t(&[5], ElemType::I64, 3),
            one.clone(),
        ];
        // Steps: 0 the gather, 1 the int64 add_, 2 a fill, 3 the gather again, its
        // indices bound to the add_'s result; 4 the add_ again, its operand recorded.
        let mut p = plan(&[
            (0, 0, &[]),
            (1, 0, &[]),
            (2, 0, &[]),
            (0, 0, &[]),
            (1, 0, &[]),
        ]);
        p.units = vec![
            unit(0, aten_op("aten::index_select", select.clone()), &[0, 1]),
            unit(1, aten_op("aten::add_", add.clone()), &[2, 3]),
            unit(
                2,
                UnitCall::Memset {
                    bytes: 8,
                    value: 0,
                    dst: 4,
                },
                &[4],
            ),
        ];
        p.aten_calls = vec![
            Some(build("aten::index_select", &select, &[]).unwrap()),
            Some(build("aten::add_", &add, &[]).unwrap()),
            None,
        ];
        let bound = |step, operand, producer_step| BoundRead {
            step,
            operand,
            producer_step,
            output: 0,
            byte_offset: 0,
        };
        p.bound_reads = vec![bound(3, 1, 1), bound(4, 1, 1)];
        p.values = crate::plan::values::PlanValues {
            source: String::new(),
            blobs: vec![vec![0; 40]],
            steps: vec![
                vec![],
                vec![],
                vec![],
                vec![],
                vec![crate::plan::values::SlotValues { slot: 3, blob: 0 }],
            ],
            units: vec![],
        };
        let placed = |operands: Vec<Option<u64>>, outputs| StepPlaces { operands, outputs };
        let df = image_of(vec![
            placed(vec![Some(100), Some(200)], vec![Some((300, 80))]),
            placed(vec![Some(200), Some(400)], vec![]),
            placed(vec![Some(500)], vec![]),
            placed(vec![Some(100), None], vec![Some((300, 80))]),
            placed(vec![None, None], vec![]),
        ]);
        let a = step_accesses(&p, &df);
        let result_of_1 = RESULT_PLACE | 1;
        // The gather reads its table and its indices, and writes its result.
        assert_eq!((&a[0].reads, &a[0].writes), (&vec![100, 200], &vec![300]));
        assert_eq!(
            (&a[0].index_reads, a[0].writes_integers),
            (&vec![200], false)
        );
        // The int64 add_ writes its first operand in place and reads its second; a later
        // read is bound to its result.
        assert_eq!(
            (&a[1].reads, &a[1].writes),
            (&vec![200, 400], &vec![200, result_of_1])
        );
        assert_eq!((&a[1].index_reads, a[1].writes_integers), (&vec![], true));
        // A step of another tier reads and writes whatever it touches.
        assert_eq!((&a[2].reads, &a[2].writes), (&vec![500], &vec![500]));
        // The second gather's indices are the add_'s result, not a place.
        assert_eq!(a[3].index_reads, vec![result_of_1]);
        // The second add_'s operand comes from recorded values: no step.
        assert!(a[4].reads.is_empty() && a[4].writes_integers);
        // The add_ runs once; so does nothing before it here.
        assert_eq!(steps_run_once(&[0, 1, 2, 3], &a), [1].into());
        assert_eq!(steps_run_once(&[1, 2, 4], &a), [1, 4].into());
    }

    /// A mixture of experts' routing: a gate's scores, `topk` over them, and a gather whose
    /// indices are `topk`'s second output. Those indices are in range whatever the scores
    /// hold, so the walk back from the gather stops there: neither `topk` nor the gate runs
    /// once (on the Mixtral fixture 39 of 552 steps, where following the scores kept 404).
    #[test]
    fn indices_from_topk_lead_back_to_no_step() {
        use crate::plan::aten_call::build;
        let (t, unit) = (tensor_arg, aten_unit);
        let int = |v: &str| AtenArg::Scalar {
            ty: "int".into(),
            value: v.into(),
        };
        let gate = vec![t(&[16, 8], ElemType::F16, 0)];
        let topk = vec![
            t(&[16, 8], ElemType::F16, 1),
            int("2"),
            int("-1"),
            AtenArg::Scalar {
                ty: "bool".into(),
                value: "True".into(),
            },
            AtenArg::Scalar {
                ty: "bool".into(),
                value: "True".into(),
            },
        ];
        let select = vec![
            t(&[64, 8], ElemType::F16, 2),
            int("0"),
            t(&[32], ElemType::I64, 3),
        ];
        // Steps: 0 the gate's scores (sigmoid), 1 topk over them, 2 the gather.
        let mut p = plan(&[(0, 0, &[]), (1, 0, &[]), (2, 0, &[])]);
        p.units = vec![
            unit(0, aten_op("aten::sigmoid", gate.clone()), &[0]),
            unit(1, aten_op("aten::topk", topk.clone()), &[1]),
            unit(2, aten_op("aten::index_select", select.clone()), &[2, 3]),
        ];
        p.aten_calls = vec![
            Some(build("aten::sigmoid", &gate, &[]).unwrap()),
            Some(build("aten::topk", &topk, &[]).unwrap()),
            Some(build("aten::index_select", &select, &[]).unwrap()),
        ];
        let bound = |output| BoundRead {
            step: 2,
            operand: 1,
            producer_step: 1,
            output,
            byte_offset: 0,
        };
        let placed = |operands: Vec<Option<u64>>, outputs| StepPlaces { operands, outputs };
        let df = image_of(vec![
            placed(vec![Some(0)], vec![Some((100, 256))]),
            placed(vec![Some(100)], vec![Some((400, 64))]),
            placed(vec![Some(600), None], vec![Some((900, 64))]),
        ]);
        // Bound to topk's indices (its second output): no dependency.
        p.bound_reads = vec![bound(1)];
        let a = step_accesses(&p, &df);
        assert!(a[2].index_reads.is_empty() && !a[1].writes.contains(&(RESULT_PLACE | 1)));
        assert!(steps_run_once(&[0, 1, 2], &a).is_empty());
        // Bound to its first output instead (values, not indices in range): the walk goes
        // back through topk to the gate.
        p.bound_reads = vec![bound(0)];
        let a = step_accesses(&p, &df);
        assert_eq!(a[2].index_reads, vec![RESULT_PLACE | 1]);
        assert_eq!(steps_run_once(&[0, 1, 2], &a), [0, 1].into());
    }

    proptest::proptest! {
        /// What `steps_run_once` keeps, for any program over a few places: every step that
        /// writes integers in place, and for every place a kept step reads or any step
        /// reads as an index, the latest step before it that writes that place; and
        /// nothing else (each kept step is one of those).
        #[test]
        fn the_steps_run_once_are_exactly_the_producers_of_what_indices_need(
            steps in proptest::collection::vec(
                (
                    proptest::collection::vec(0u64..6, 0..3),
                    proptest::collection::vec(0u64..6, 0..3),
                    proptest::collection::vec(0u64..6, 0..2),
                    proptest::bool::weighted(0.15),
                ),
                0..24,
            )
        ) {
            let access: Vec<StepAccess> = steps
                .iter()
                .map(|(reads, writes, index, wi)| StepAccess {
                    reads: reads.iter().chain(index).copied().collect(),
                    writes: writes.clone(),
                    index_reads: index.clone(),
                    writes_integers: *wi,
                })
                .collect();
            let program: Vec<u32> = (0..access.len() as u32).collect();
            let once = steps_run_once(&program, &access);
            let producer = |at: usize, p: u64| (0..at).rev().find(|&j| access[j].writes.contains(&p));
            let mut wanted = std::collections::HashSet::new();
            for (i, a) in access.iter().enumerate() {
                if a.writes_integers {
                    wanted.insert(i as u32);
                }
            }
            // A fixed point: grow the set by the producers of what its members and the
            // index reads need, until nothing is added.
            loop {
                let before = wanted.len();
                for (i, a) in access.iter().enumerate() {
                    let needs: Vec<u64> = if wanted.contains(&(i as u32)) {
                        a.reads.clone()
                    } else {
                        a.index_reads.clone()
                    };
                    for p in needs {
                        if let Some(j) = producer(i, p) {
                            wanted.insert(j as u32);
                        }
                    }
                }
                if wanted.len() == before {
                    break;
                }
            }
            proptest::prop_assert_eq!(once, wanted);
        }
    }

    #[test]
    fn the_steps_that_lead_to_indices_run_once_and_their_readers_and_the_rest_do_not() {
        let chain = bucket_chain();
        let once = steps_run_once(&[0, 1, 2, 3, 4, 5, 6, 7, 8], &chain);
        let mut got: Vec<u32> = once.into_iter().collect();
        got.sort_unstable();
        // The chain to the buckets (0-4) and the counter (8); not the gather that reads
        // them (5), nor what the gather feeds (6), nor an unrelated step (7).
        assert_eq!(got, [0, 1, 2, 3, 4, 8]);
        // A step that writes a needed place after its reader produced nothing it read.
        let once = steps_run_once(&[0, 1, 2, 3, 4, 9, 5], &chain);
        assert!(once.contains(&3) && !once.contains(&9));
        // With no index read or integer write nothing is kept.
        assert!(steps_run_once(&[3, 6, 7], &chain).is_empty());
        // The gather alone needs its indices' producer, if the program has it.
        assert_eq!(steps_run_once(&[4, 5], &chain), [4].into());
    }

    #[test]
    fn kinds_keep_the_heavy_labels_apart_heaviest_first_and_the_rest_together() {
        let units = [
            (0, "conv", 30.0),
            (1, "bn", 10.0),
            (2, "conv", 20.0),
            (3, "relu", 1.0),
            (4, "add", 1.5),
            (5, "bn", 10.0),
        ];
        let k = kind_groups(&units, 0.05);
        assert_eq!(
            k,
            vec![
                ("conv".to_string(), vec![0, 2]),
                ("bn".to_string(), vec![1, 5]),
                (OTHER_KINDS.to_string(), vec![3, 4]),
            ]
        );
        // Every unit is in exactly one kind; with no floor every label is its own.
        assert_eq!(kind_groups(&units, 0.0).len(), 4);
        assert_eq!(kind_groups(&[], 0.05), vec![]);
        // No weight at all: one kind of every unit.
        assert_eq!(
            kind_groups(&[(7, "a", 0.0), (8, "b", 0.0)], 0.05),
            vec![(OTHER_KINDS.to_string(), vec![7, 8])]
        );
    }

    #[test]
    fn iteration_span_is_the_mean_block_span() {
        let mut p = plan(&[(0, 0, &[]), (1, 0, &[]), (0, 0, &[]), (1, 0, &[])]);
        // Two iterations: steps start at 0, 10 (ends 15) and 100, 130 (ends 145).
        for (s, (start, dur)) in p
            .steps
            .iter_mut()
            .zip([(0, 5), (10, 5), (100, 5), (130, 15)])
        {
            s.traced_start_ns = start;
            s.traced_ns = dur;
        }
        p.iterations.count = 2;
        assert_eq!(iteration_span_ns(&p), Some((15.0 + 45.0) / 2.0));
        p.iterations.count = 3;
        assert_eq!(iteration_span_ns(&p), None);
        p.iterations.count = 0;
        assert_eq!(iteration_span_ns(&p), None);
    }

    #[test]
    fn lead_ins_reach_back_to_the_step_that_touches_the_unit_and_a_launch_runs_them_once() {
        // One stream: u0 u1 u1 u2 u1 u3; step 5 (u3) shares a place with step 3 only.
        let p = plan(&[
            (0, 0, &[]),
            (1, 0, &[]),
            (1, 0, &[]),
            (2, 0, &[]),
            (1, 0, &[]),
            (3, 0, &[]),
        ]);
        let touches = |a: u32, b: u32| (a, b) == (3, 5);
        let leads = lead_ins(&p, 0, |_| true, touches, 4);
        assert_eq!(leads.get(&0), None);
        // No step touches it: the one step before it.
        assert_eq!(leads[&1], vec![0]);
        assert_eq!(leads[&4], vec![3]);
        // Back to step 3, two steps before it.
        assert_eq!(leads[&5], vec![3, 4]);
        // Not further back than `max_back` steps.
        assert_eq!(lead_ins(&p, 0, |_| true, touches, 1)[&5], vec![4]);
        // Steps that do not run are not lead-ins: step 4's is then u1's step 2.
        assert_eq!(lead_ins(&p, 0, |s| s.unit != 2, touches, 4)[&4], vec![2]);
        // The unit u1 at steps 1, 2 and 4: step 2 follows its own step 1, no lead-in.
        let v = |x: &[u32]| x.to_vec();
        assert_eq!(
            led_launch(&[1, 2, 4], 6, &leads),
            vec![
                (v(&[0]), 1),
                (v(&[]), 2),
                (v(&[3]), 4),
                (v(&[0]), 1),
                (v(&[]), 2),
                (v(&[3]), 4)
            ]
        );
        // u3 at step 5: its lead-ins 3 and 4 before each invocation; a lead-in the launch
        // already ends with is not run again (step 9's 5, then 4: only 4).
        assert_eq!(
            led_launch(&[5], 2, &leads),
            vec![(v(&[3, 4]), 5), (v(&[3, 4]), 5)]
        );
        let mut l = leads.clone();
        l.insert(9, vec![5, 4]);
        assert_eq!(
            led_launch(&[5, 9], 2, &l),
            vec![(v(&[3, 4]), 5), (v(&[4]), 9)]
        );
        assert_eq!(led_launch(&[0], 2, &leads), vec![(v(&[]), 0), (v(&[]), 0)]);
    }

    fn plan(steps: &[(u32, u32, &[u32])]) -> Plan {
        Plan {
            header: PlanHeader {
                kc_version: "t".into(),
                sources: vec![],
                devices: vec![],
                cuda_runtime_version: None,
                traced_gpu_ns: 0,
                replayable_traced_ns: 0,
            },
            streams: (0..3)
                .map(|i| PlanStream {
                    rank: 0,
                    device: 0,
                    trace_stream: i,
                })
                .collect(),
            buffers: vec![],
            units: vec![],
            steps: steps
                .iter()
                .map(|&(unit, stream, waits)| Step {
                    unit,
                    stream,
                    waits_on: waits.to_vec(),
                    traced_ns: 1,
                    traced_start_ns: 0,
                })
                .collect(),
            memory: MemoryPlan {
                device_bytes: 0,
                pinned_host_bytes: 0,
                cold_extra_peak_bytes: 0,
                l2_bytes: 0,
            },
            iterations: Default::default(),
            dataflow: None,
            binaries: Vec::new(),
            kernel_geometry: Vec::new(),
            aten_calls: Vec::new(),
            math: Default::default(),
            values: Default::default(),
            bound_reads: Vec::new(),
        }
    }

    /// One stream: u0 u1 u2 u1 u3 u0 u4 (u3's step before it is u1's second run).
    fn units_run_again() -> Plan {
        plan(&[
            (0, 0, &[]),
            (1, 0, &[]),
            (2, 0, &[]),
            (1, 0, &[]),
            (3, 0, &[]),
            (0, 0, &[]),
            (4, 0, &[]),
        ])
    }

    #[test]
    fn keep_lead_ins_drops_only_the_lead_ins_not_asked_for() {
        // Lead-ins at steps 3 (u1) and 5 (u0).
        let p = units_run_again();
        let all = round_order(&p, 0, |_| true, 1, RoundAt::First);
        let steps = |only: &[u32]| {
            let mut e = all.clone();
            keep_lead_ins(&mut e, only);
            e.iter().map(|e| (e.step, e.counted)).collect::<Vec<_>>()
        };
        let counted = [(0, true), (1, true), (2, true), (4, true), (6, true)];
        assert_eq!(
            steps(&[5]),
            vec![
                (0, true),
                (1, true),
                (2, true),
                (4, true),
                (5, false),
                (6, true)
            ]
        );
        assert_eq!(steps(&[]), counted);
        // A counted step named among them changes nothing; every lead-in named keeps all.
        assert_eq!(steps(&[0, 1]), counted);
        let mut e = all.clone();
        keep_lead_ins(&mut e, &[3, 5]);
        assert_eq!(e, all);
    }

    #[test]
    fn round_order_leads_a_unit_in_with_the_step_before_it() {
        let p = units_run_again();
        let e = |unit, step, counted| RoundEntry {
            unit,
            step,
            counted,
        };
        assert_eq!(
            round_order(&p, 0, |_| true, 0, RoundAt::First),
            vec![
                e(0, 0, true),
                e(1, 1, true),
                e(2, 2, true),
                e(3, 4, true),
                e(4, 6, true)
            ]
        );
        assert_eq!(
            round_order(&p, 0, |_| true, 1, RoundAt::First),
            vec![
                e(0, 0, true),
                e(1, 1, true),
                e(2, 2, true),
                e(1, 3, false),
                e(3, 4, true),
                e(0, 5, false),
                e(4, 6, true)
            ]
        );
        // A step that does not run is passed over: u3 then follows u2 directly.
        let r = round_order(&p, 0, |s| s.unit != 1, 1, RoundAt::First);
        assert_eq!(
            r,
            vec![
                e(0, 0, true),
                e(2, 2, true),
                e(3, 4, true),
                e(0, 5, false),
                e(4, 6, true)
            ]
        );
        let units: Vec<u32> = r.iter().map(|x| x.unit).collect();
        assert_eq!(switches_per_cycle(&units), 5);
        // Two steps of lead-in: u3 needs steps 2 and 3 before it; the round ends with step 2
        // already, so only step 3 is run. u4 needs steps 4 and 5: the round ends with 4.
        assert_eq!(
            round_order(&p, 0, |_| true, 2, RoundAt::First),
            vec![
                e(0, 0, true),
                e(1, 1, true),
                e(2, 2, true),
                e(1, 3, false),
                e(3, 4, true),
                e(0, 5, false),
                e(4, 6, true)
            ]
        );
        // Three: u3 needs steps 1, 2 and 3 (the round ends with 1, 2); u4 needs 3, 4 and 5,
        // and the round ends with 3, 4.
        let r3 = round_order(&p, 0, |_| true, 3, RoundAt::First);
        assert_eq!(r3, round_order(&p, 0, |_| true, 2, RoundAt::First));
        // u3's step before it is u0's second run (step 3), which the round does not hold.
        let q = plan(&[
            (0, 0, &[]),
            (1, 0, &[]),
            (2, 0, &[]),
            (0, 0, &[]),
            (3, 0, &[]),
        ]);
        let steps: Vec<u32> = round_order(&q, 0, |_| true, 2, RoundAt::First)
            .iter()
            .map(|x| x.step)
            .collect();
        assert_eq!(steps, vec![0, 1, 2, 3, 4]);
        let steps: Vec<u32> = round_order(&q, 0, |_| true, 3, RoundAt::First)
            .iter()
            .map(|x| x.step)
            .collect();
        assert_eq!(steps, vec![0, 1, 2, 3, 4]);
        assert_eq!(switches_per_cycle(&[0, 1, 1, 2]), 3);
        assert_eq!(switches_per_cycle(&[7]), 1);
    }

    #[test]
    fn rounds_spread_over_the_runs_count_each_unit_once_at_the_middle_of_its_parts() {
        // One stream: u0 runs four times, u1 twice, u2 once, interleaved:
        // steps 0:u0 1:u1 2:u0 3:u2 4:u0 5:u1 6:u0.
        let p = plan(&[
            (0, 0, &[]),
            (1, 0, &[]),
            (0, 0, &[]),
            (2, 0, &[]),
            (0, 0, &[]),
            (1, 0, &[]),
            (0, 0, &[]),
        ]);
        let counted = |at| -> Vec<(u32, u32)> {
            round_order(&p, 0, |_| true, 1, at)
                .iter()
                .filter(|e| e.counted)
                .map(|e| (e.unit, e.step))
                .collect()
        };
        let spread = RoundAt::spread(2);
        assert_eq!(spread.len(), 2);
        // Round 0 of 2: u0's run ⌊0.5 · 4 / 2⌋ = 1 (step 2), u1's ⌊0.5⌋ = 0 (step 1), u2's
        // only run (step 3); in the order the replay runs them.
        assert_eq!(counted(spread[0]), vec![(1, 1), (0, 2), (2, 3)]);
        // Round 1 of 2: u0's run 3 (step 6), u1's run 1 (step 5), u2's again.
        assert_eq!(counted(spread[1]), vec![(2, 3), (1, 5), (0, 6)]);
        // The lead-in of a counted run is the step before it on the stream.
        let r = round_order(&p, 0, |_| true, 1, spread[1]);
        assert_eq!(
            r.iter().map(|e| (e.step, e.counted)).collect::<Vec<_>>(),
            vec![(2, false), (3, true), (4, false), (5, true), (6, true)]
        );
        assert_eq!(RoundAt::spread(1), vec![RoundAt::First]);
        assert_eq!(counted(RoundAt::First), vec![(0, 0), (1, 1), (2, 3)]);
        // More rounds than runs: a unit's runs are taken in turn, never past its last.
        let four = RoundAt::spread(4);
        let u1: Vec<usize> = four.iter().map(|a| a.run(2)).collect();
        assert_eq!(u1, vec![0, 0, 1, 1]);
        assert!(four.iter().all(|a| a.run(1) == 0));
    }

    proptest::proptest! {
        /// Whatever the program, every round counts each unit that runs exactly once, at a
        /// step of its own, in the replay's order; and over `of` rounds a unit of at least
        /// `of` runs is counted at `of` different runs.
        #[test]
        fn every_round_counts_each_unit_once(
            units in proptest::collection::vec(0u32..6, 1..40),
            of in 1usize..6,
            lead_in in 0usize..3,
        ) {
            let steps: Vec<(u32, u32, &[u32])> = units.iter().map(|&u| (u, 0, &[][..])).collect();
            let p = plan(&steps);
            let distinct: BTreeSet<u32> = units.iter().copied().collect();
            let mut at_runs: HashMap<u32, BTreeSet<u32>> = HashMap::new();
            for at in RoundAt::spread(of) {
                let r = round_order(&p, 0, |_| true, lead_in, at);
                let counted: Vec<&RoundEntry> = r.iter().filter(|e| e.counted).collect();
                proptest::prop_assert_eq!(counted.len(), distinct.len());
                let once: BTreeSet<u32> = counted.iter().map(|e| e.unit).collect();
                proptest::prop_assert_eq!(&once, &distinct);
                proptest::prop_assert!(r.iter().all(|e| p.steps[e.step as usize].unit == e.unit));
                proptest::prop_assert!(counted.windows(2).all(|w| w[0].step < w[1].step));
                for e in counted {
                    at_runs.entry(e.unit).or_default().insert(e.step);
                }
            }
            for u in distinct {
                let runs = units.iter().filter(|&&x| x == u).count();
                if runs >= of {
                    proptest::prop_assert_eq!(at_runs[&u].len(), of);
                }
            }
        }
    }

    #[test]
    fn round_order_takes_the_step_before_on_the_same_stream() {
        // s0: u0 . u2; s1: . u1 . : u2's step before it on s0 is u0's, not u1's.
        let p = plan(&[(0, 0, &[]), (1, 1, &[]), (2, 0, &[])]);
        let r = round_order(&p, 0, |_| true, 1, RoundAt::First);
        let steps: Vec<(u32, bool)> = r.iter().map(|x| (x.step, x.counted)).collect();
        assert_eq!(steps, vec![(0, true), (1, true), (0, false), (2, true)]);
    }

    #[test]
    fn transitions_pair_different_units_per_stream() {
        // s0: u0 u1 u0 u1 u1; s1: u2 (waits on step 0). u1->u1 is no transition.
        let p = plan(&[
            (0, 0, &[]),
            (2, 1, &[0]),
            (1, 0, &[]),
            (0, 0, &[]),
            (1, 0, &[]),
            (1, 0, &[]),
        ]);
        let t = transitions(&p, 0, |_| true);
        assert_eq!(
            t,
            vec![
                Transition {
                    from_unit: 0,
                    to_unit: 1,
                    occurrences: vec![(0, 2), (3, 4)]
                },
                Transition {
                    from_unit: 1,
                    to_unit: 0,
                    occurrences: vec![(2, 3)]
                },
            ]
        );
        // A step that does not run joins its neighbours.
        let t = transitions(&p, 0, |s| s.unit != 1);
        assert_eq!(t, vec![]);
    }

    #[test]
    fn switch_reuse_counts_distinct_units_since_the_last_run() {
        // One stream: u0 u1 u0 u2 u1 u1 u0.
        let p = plan(&[
            (0, 0, &[]),
            (1, 0, &[]),
            (0, 0, &[]),
            (2, 0, &[]),
            (1, 0, &[]),
            (1, 0, &[]),
            (0, 0, &[]),
        ]);
        let r = switch_reuse(&p, 0, |_| true);
        // Switches: ->1 (first), ->0 (1 since), ->2 (first), ->1 (0 and 2 since: 2),
        // ->0 (2 and 1 since: 2); 1 -> 1 is no switch.
        assert_eq!(r.switches, 5);
        assert_eq!(r.to_first_run, 2);
        assert_eq!(r.distances, vec![1, 2, 2]);
    }

    #[test]
    fn switch_reuse_agrees_with_counting_by_hand() {
        // Pseudo-random unit sequences on two streams against a direct count.
        let mut x = 12345u64;
        for _ in 0..50 {
            let steps: Vec<(u32, u32, &[u32])> = (0..60)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (((x >> 33) % 7) as u32, ((x >> 20) % 2) as u32, &[][..])
                })
                .collect();
            let p = plan(&steps);
            let got = switch_reuse(&p, 0, |_| true);
            let mut want = Vec::new();
            let mut last: Vec<Option<u32>> = vec![None; 3];
            for (i, &(u, st, _)) in steps.iter().enumerate() {
                let prev = last[st as usize].replace(u);
                if prev.is_some_and(|q| q != u) {
                    if let Some(j) = steps[..i].iter().rposition(|s| s.0 == u) {
                        let mut since: Vec<u32> = steps[j + 1..i].iter().map(|s| s.0).collect();
                        since.sort_unstable();
                        since.dedup();
                        want.push(since.len() as u32);
                    }
                }
            }
            assert_eq!(got.distances, want);
        }
    }

    #[test]
    fn simulated_length_overlaps_streams_and_adds_gaps() {
        // s0: step0 (10) then step2 (10); s1: step1 (5) waits on step0.
        let p = plan(&[(0, 0, &[]), (1, 1, &[0]), (2, 0, &[])]);
        let d = |s: &Step| Some([10.0, 5.0, 10.0][s.unit as usize]);
        assert_eq!(simulated_length_us(&p, 0, d, |_, _| 0.0), (20.0, 25.0));
        assert_eq!(simulated_length_us(&p, 0, d, |_, _| 1.0), (21.0, 26.0));
        // One stream: the plain sum plus the gaps, both ways.
        let p = plan(&[(0, 0, &[]), (1, 0, &[]), (2, 0, &[])]);
        assert_eq!(simulated_length_us(&p, 0, d, |_, _| 0.5), (26.0, 26.0));
        // A step without a time takes none.
        let none = |s: &Step| (s.unit != 1).then_some(10.0);
        assert_eq!(simulated_length_us(&p, 0, none, |_, _| 0.0), (20.0, 20.0));
    }

    #[test]
    fn waits_are_recorded_and_kept() {
        // step0 on s0, step1 on s1 waits on step0, step2 on s0.
        let p = plan(&[(0, 0, &[]), (1, 1, &[0]), (2, 0, &[])]);
        let prog = graph_program(&p, |_| true);
        assert_eq!(
            prog.ops,
            vec![
                ProgramOp::Launch {
                    step: 0,
                    unit: 0,
                    stream: 0
                },
                ProgramOp::Record { step: 0, stream: 0 },
                ProgramOp::Wait { stream: 1, step: 0 },
                ProgramOp::Launch {
                    step: 1,
                    unit: 1,
                    stream: 1
                },
                ProgramOp::Launch {
                    step: 2,
                    unit: 2,
                    stream: 0
                },
            ]
        );
        assert_eq!((prog.launched, prog.skipped), (3, 0));
    }

    #[test]
    fn skipped_steps_hand_their_ordering_on() {
        // s0: step0 (runs), step1 (skipped, unit 9); s1: step2 waits on step1 -> must wait
        // on step0 instead.
        let p = plan(&[(0, 0, &[]), (9, 0, &[]), (2, 1, &[1])]);
        let prog = graph_program(&p, |s| s.unit != 9);
        assert!(prog.ops.contains(&ProgramOp::Wait { stream: 1, step: 0 }));
        assert_eq!((prog.launched, prog.skipped), (2, 1));
        // s1: step0 (runs); s0: step1 (skipped) waits on step0; step2 on s0 inherits it.
        let p = plan(&[(0, 1, &[]), (9, 0, &[0]), (2, 0, &[])]);
        let prog = graph_program(&p, |s| s.unit != 9);
        assert_eq!(
            prog.ops,
            vec![
                ProgramOp::Launch {
                    step: 0,
                    unit: 0,
                    stream: 1
                },
                ProgramOp::Record { step: 0, stream: 1 },
                ProgramOp::Wait { stream: 0, step: 0 },
                ProgramOp::Launch {
                    step: 2,
                    unit: 2,
                    stream: 0
                },
            ]
        );
    }

    #[test]
    fn critical_path_follows_waits() {
        // s0: a(10) then c(1); s1: b(5) waits on a. Path a -> b = 15.
        let mut p = plan(&[(0, 0, &[]), (1, 1, &[0]), (2, 0, &[])]);
        for (s, t) in p.steps.iter_mut().zip([10, 5, 1]) {
            s.traced_ns = t;
        }
        assert_eq!(critical_path_ns(&p, |_| true), 15);
        // Without the wait the streams overlap: max(11, 5).
        p.steps[1].waits_on.clear();
        assert_eq!(critical_path_ns(&p, |_| true), 11);
        assert_eq!(critical_path_ns(&p, |s| s.unit != 0), 5);
    }

    #[test]
    fn unrolling() {
        assert_eq!(unroll_count(10_000.0, 1_000_000.0, 1000), 100);
        assert_eq!(unroll_count(5_000_000.0, 1_000_000.0, 1000), 1);
        assert_eq!(unroll_count(100.0, 1_000_000.0, 1000), 1000);
        assert_eq!(unroll_count(0.0, 1_000_000.0, 1000), 100);
    }
}
