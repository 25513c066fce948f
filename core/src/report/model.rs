//! The report's content: actual (graph replay) against predicted (Σ isolated time × count)
//! time and energy, the breakdown by tier, the units that contribute most, traced against
//! replayed time per unit, and the energy detail of the graph windows. This struct is the
//! JSON report (schema in docs/FORMATS.md); Markdown, CSV and SVG render it.
//! Invariant: every optional figure is `None` when the results it needs are missing, never
//! zero.

use crate::results::Results;
use serde::Serialize;

pub const REPORT_SCHEMA_VERSION: u32 = 1;

#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct TimeSummary {
    /// Mean time of one graph replay, microseconds.
    pub actual_us: Option<f64>,
    pub actual_std_us: Option<f64>,
    /// Σ over executed units of isolated mean time × invocations.
    pub predicted_us: Option<f64>,
    /// (predicted − actual) / actual × 100.
    pub error_pct: Option<f64>,
    /// Traced time of the steps the graph replayed, and their critical path.
    pub replayed_traced_us: Option<f64>,
    pub traced_critical_path_us: Option<f64>,
    /// The trace's own GPU time per iteration, first kernel start to last end (for a trace
    /// of CUDA-graph replays: the model's graph on the GPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traced_iteration_span_us: Option<f64>,
    /// Traced time of units not executed (tier 3, collectives, failed), excluded from
    /// both sides of the comparison.
    pub not_executed_traced_us: f64,
    pub units_not_executed: usize,
    /// Σ of the replay's kernel durations inside kc's graph (`kc exec --verify`).
    pub in_context_kernels_us: Option<f64>,
    /// The time in one replay of kc's graph during which one of its kernels ran (the union
    /// of their intervals), where recorded (from session 40).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_context_busy_us: Option<f64>,
    /// GPU activities kc's graph launched in one replay (CUPTI, `--verify`).
    #[serde(default)]
    pub in_context_kernels: Option<u64>,
    /// Per unit, the unit alone against its kernels in kc's graph: the median |error| over
    /// the units both measured, percent, how many, and whether "alone" is CUPTI's kernel
    /// time in isolation (like with like) or the per-invocation time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit_isolated_vs_in_context_median_abs_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units_isolated_vs_in_context: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isolated_vs_in_context_basis: Option<String>,
    /// Per unit, against its kernels in the model's own graph (where set beside kc's,
    /// since session 48): its kernels alone (CUPTI) and its kernels in kc's graph, the
    /// median |error| over the units measured, percent, and how many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit_isolated_vs_model_graph_median_abs_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units_isolated_vs_model_graph: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit_kc_graph_vs_model_graph_median_abs_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units_kc_graph_vs_model_graph: Option<usize>,
    /// Per unit, its kernels in the round (every unit once, in model order, at its places;
    /// CUPTI) against its kernels in kc's graph: the median |error| over the units both
    /// measured, percent, and how many. Units alone repeat one kernel back to back; in the
    /// round each runs after its model neighbours, as in the graph.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit_round_vs_in_context_median_abs_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units_round_vs_in_context: Option<usize>,
    /// Per unit measured after the model's steps leading up to each invocation with its
    /// kernels recorded (`--lead-in-kernels`: the units' producers), its own kernels in
    /// that launch (CUPTI) against its kernels in kc's graph: the median |error| over the
    /// units both measured, percent, and how many (session 44).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit_after_lead_in_vs_in_context_median_abs_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units_after_lead_in_vs_in_context: Option<usize>,
    /// Per unit, alone in the model's cache state (`in_model_cache`) against its
    /// kernels in kc's graph: the median |error|, percent, and over how many units; and the
    /// share of the bytes those units read that the model left to come from memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit_in_model_cache_vs_in_context_median_abs_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units_in_model_cache_vs_in_context: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_model_cache_cold_bytes_pct: Option<f64>,
    /// The share of those units' recorded invocations whose code was evicted first, where
    /// the results say (session 53 on), percent, and where the records say it alike, how
    /// they chose them (`--model-cache-code`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_model_cache_code_evicted_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_model_cache_code: Option<crate::results::fidelity::CodeCache>,
    /// Where those records ran the model's steps leading up to each invocation first
    /// (session 54's `--model-cache-lead-ins`, kc's default since session 55): the steps so
    /// run over their launches, and of their invocations those whose integer and boolean
    /// reads took the lead-ins' results (`--model-cache-lead-ins producers`, the default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_model_cache_lead_in_steps: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_model_cache_lead_in_reads_from_producers: Option<u64>,
    /// The same over the units whose operands the memory image holds all (where the results
    /// say which, since session 51's calls): the others' place in L2 the model's steps do
    /// not tell. The median |error|, percent, and over how many units.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit_in_model_cache_image_held_median_abs_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units_in_model_cache_image_held: Option<usize>,
    /// Which runs of each unit the round counted ([`super::predict::round_runs_words`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round_runs: Option<String>,
    /// Why the per-unit comparisons with kc's graph are no measurement of the units, where
    /// the replay's kernels lined up with the trace's only in part (kernels the trace does
    /// not hold, or an alignment cut short): which kernel a step ran is then a guess.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_context_alignment_caveat: Option<String>,
}

#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct EnergyComparison {
    /// Mean energy of one graph replay over the windows, joules.
    pub actual_j: f64,
    /// Windows the actual figure averages; the CV needs at least two.
    pub windows: usize,
    pub actual_cv: f64,
    pub actual_above_idle_j: f64,
    /// Σ over executed units of energy per invocation × invocations.
    pub predicted_j: Option<f64>,
    pub error_pct: Option<f64>,
}

#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct EnergyDetail {
    pub windows: usize,
    pub duration_s: f64,
    /// Instantaneous power samples taken during the windows.
    pub samples: usize,
    pub total_j: f64,
    pub total_wh: f64,
    pub per_run_j: f64,
    pub avg_power_w: f64,
    pub peak_power_w: f64,
    pub min_power_w: f64,
    pub idle_power_w: Option<f64>,
    /// total − idle power × duration.
    pub above_idle_j: Option<f64>,
    /// The median of the windows' end temperatures, degrees Celsius (NVML), where the
    /// results record them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<f64>,
}

#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct TierRow {
    pub tier: String,
    pub unique_units: usize,
    pub invocations: u64,
    pub traced_us: f64,
    pub predicted_us: Option<f64>,
    pub pct_of_predicted: Option<f64>,
}

#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct UnitRow {
    pub id: u32,
    pub label: String,
    pub tier: String,
    pub family: String,
    pub call: String,
    pub status: String,
    pub invocations: u64,
    pub traced_mean_us: f64,
    pub traced_total_us: f64,
    pub measured_mean_us: Option<f64>,
    pub measured_std_us: Option<f64>,
    /// (measured − traced) / traced × 100.
    pub error_vs_traced_pct: Option<f64>,
    pub predicted_us: Option<f64>,
    pub pct_of_predicted: Option<f64>,
    pub energy_per_invocation_mj: Option<f64>,
    pub predicted_energy_j: Option<f64>,
    /// Traced invocations that started after the GPU sat idle at least
    /// [`IDLE_BEFORE_NS`] (every stream of its rank): in a host-bound trace their traced
    /// duration may carry a start from idle, and is no fair reference (known with the plan).
    pub traced_after_idle: Option<u64>,
    /// The unit's kernels per invocation inside kc's graph (CUPTI, `--verify`), and the
    /// unit alone against it, percent: alone as CUPTI measured it in isolation
    /// (`--isolated --verify`) where it did, else its per-invocation time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_context_mean_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isolated_vs_in_context_pct: Option<f64>,
    /// The unit's kernels per invocation in the round (CUPTI) against in kc's graph,
    /// percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round_vs_in_context_pct: Option<f64>,
    /// Its own kernels per invocation after its lead-ins (CUPTI, `--lead-in-kernels`)
    /// against in kc's graph, percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_lead_in_vs_in_context_pct: Option<f64>,
    /// Its kernels per invocation alone in the model's cache state (CUPTI,
    /// recorded by default since session 51) against in kc's graph, percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_model_cache_vs_in_context_pct: Option<f64>,
    /// Its kernels per invocation alone (CUPTI, `--isolated --verify`), where recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone_kernels_us: Option<f64>,
    /// Its kernels per invocation in the model's own CUDA graph (the profiled replays
    /// capture.py keeps, where all its traced kernels aligned there; since session 48),
    /// and against it, percent: the unit alone (its kernels, CUPTI) and its kernels in
    /// kc's graph.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_model_graph_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isolated_vs_model_graph_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kc_graph_vs_model_graph_pct: Option<f64>,
}

/// Sets each row's kernels elsewhere (`kernels`, by unit: in the round, after its lead-ins)
/// against its kernels in kc's graph, percent, through `set`; returns the |errors| set.
fn set_against_in_context(
    rows: &mut [UnitRow],
    kernels: &std::collections::HashMap<u32, f64>,
    set: fn(&mut UnitRow, f64),
) -> Vec<f64> {
    let mut errors = Vec::new();
    for row in rows {
        let (Some(ctx), Some(&k)) = (row.in_context_mean_us, kernels.get(&row.id)) else {
            continue;
        };
        if let Some(e) = pct(k, ctx).filter(|_| ctx > 0.0) {
            set(row, e);
            errors.push(e.abs());
        }
    }
    errors
}

/// A unit whose kernels alone (CUPTI, `kc exec --isolated --verify`) were not the trace's:
/// another count an invocation, or traced names it did not launch. Its time alone is then
/// not the model's unit's, and kc's graph, which makes the same call, runs it so too.
/// cuDNN's `convolution_backward` launched its bias gradient's reduction a second time
/// this way before session 47 (15 units in 6 answers of sessions 35-39, up to 90 % over
/// their trace).
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct OtherKernels {
    pub id: u32,
    pub label: String,
    pub launched_per_invocation: f64,
    pub traced_per_invocation: u64,
    /// Share of the traced kernels' base names found among the launched ones.
    pub names_matched: f64,
    /// The launched kernels the trace does not hold, readable names, microseconds per
    /// invocation (results of session 46 on).
    pub not_traced: Vec<(String, f64)>,
    /// Its time alone × its invocations, per replay, microseconds.
    pub predicted_us: Option<f64>,
    /// Where its copies and fills alone were another count than traced (session 49): how
    /// many an invocation, and how many the trace holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copies_per_invocation: Option<f64>,
    #[serde(skip_serializing_if = "crate::results::energy::is_zero")]
    pub traced_copies_per_invocation: u64,
}

impl OtherKernels {
    /// "unit 132 aten::convolution_backward: 5 kernels an invocation where the trace holds
    /// 4, at::native::reduce_kernel not traced (53.4 us)"; "unit 54 aten::histc: 2 kernels
    /// an invocation where the trace holds 2, 1 copy or fill where it holds 0".
    pub fn words(&self) -> String {
        let launched = match crate::results::fidelity::whole_count(self.launched_per_invocation) {
            Some(n) => crate::words::count(n as u64, "kernel"),
            None => format!("{:.2} kernels", self.launched_per_invocation),
        };
        let mut s = format!(
            "unit {} {}: {launched} an invocation where the trace holds {}",
            self.id, self.label, self.traced_per_invocation
        );
        if self.names_matched < 1.0 {
            s.push_str(&format!(
                ", {:.0} % of the traced names launched",
                100.0 * self.names_matched
            ));
        }
        if let Some((name, us)) = self.not_traced.first() {
            s.push_str(&format!(", {name} not traced ({us:.1} us)"));
        }
        if let Some(c) = self.copies_per_invocation {
            let copies = match crate::results::fidelity::whole_count(c) {
                Some(1) => "1 copy or fill".to_string(),
                Some(n) => format!("{n} copies and fills"),
                None => format!("{c:.2} copies and fills"),
            };
            s.push_str(&format!(
                ", {copies} where it holds {}",
                self.traced_copies_per_invocation
            ));
        }
        s
    }
}

/// The units whose kernels alone were not the trace's ([`OtherKernels`]), the largest
/// share of the plain sum first.
pub fn units_other_kernels(units: &[crate::results::UnitResult]) -> Vec<OtherKernels> {
    let mut v: Vec<OtherKernels> = units
        .iter()
        .filter_map(|u| {
            let l = u.launches_verified.as_ref()?;
            // The copies' counts only where they are what differs.
            let copies_other = !l.copies_as_traced();
            (!l.as_traced()).then(|| OtherKernels {
                id: u.id,
                label: u.label.clone(),
                launched_per_invocation: l.launched_per_invocation,
                traced_per_invocation: l.traced_per_invocation,
                names_matched: l.names_matched,
                not_traced: l
                    .not_traced
                    .iter()
                    .map(|(n, us)| (crate::results::fidelity::readable_name(n), *us))
                    .collect(),
                predicted_us: u.predicted_us,
                copies_per_invocation: l.copies_per_invocation.filter(|_| copies_other),
                traced_copies_per_invocation: if copies_other {
                    l.traced_copies_per_invocation
                } else {
                    0
                },
            })
        })
        .collect();
    v.sort_by(|a, b| largest_first((a.predicted_us, a.id), (b.predicted_us, b.id)));
    v
}

/// Units by their share of the plain sum, the largest first (none counts as 0), then by
/// id: the order of the report's top units and of [`units_other_kernels`].
fn largest_first(a: (Option<f64>, u32), b: (Option<f64>, u32)) -> std::cmp::Ordering {
    b.0.unwrap_or(0.0)
        .total_cmp(&a.0.unwrap_or(0.0))
        .then(a.1.cmp(&b.1))
}

/// The least difference, as a share of the target, that the report splits into shares of
/// its parts: below it the parts' shares only say how they cancel.
pub const SHARE_FLOOR: f64 = 0.005;

/// The GPU idle before a traced invocation that makes its duration no fair reference.
pub const IDLE_BEFORE_NS: i64 = 50_000;

#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct Report {
    pub schema_version: u32,
    pub device: String,
    pub sources: Vec<String>,
    pub cache: Option<String>,
    /// What the units alone read at their places (context cache), as the isolated results
    /// say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit_values: Option<crate::results::UnitValuesGiven>,
    pub time: TimeSummary,
    pub energy: Option<EnergyComparison>,
    pub energy_detail: Option<EnergyDetail>,
    pub tiers: Vec<TierRow>,
    pub top_units: Vec<UnitRow>,
    pub units: Vec<UnitRow>,
    pub notes: Vec<String>,
    /// Profiled iterations one replay covers (the whole trace is replayed), when known;
    /// per-iteration figures are the per-replay ones divided by it.
    pub iterations_per_replay: Option<u32>,
    /// How the iterations were found ("ProfilerStep markers", "repeating kernel sequence").
    pub iterations_found_by: Option<String>,
    /// kc's figures against the model's own measurement (`--reference`), per iteration.
    pub model: Option<ModelComparison>,
    /// Σ isolated × count of the same plan under other cache states (`kc run` measures
    /// context, warm and cold), beside the one the units' rows come from.
    pub other_isolated: Vec<IsolatedSum>,
    /// The prediction's error, decomposed into measured parts.
    pub error_budget: Option<ErrorBudget>,
    /// What the graph replay launched against the trace (`kc exec --verify`).
    pub fidelity: Option<crate::results::fidelity::Fidelity>,
    /// kc's graph beside the model's own, kernel by kernel (the model's profiled graph
    /// replays and kc's CUPTI record of its graph).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graphs_side_by_side: Option<super::side_by_side::GraphsSideBySide>,
    /// The share of the memory image's float values that were NaN or infinite after the
    /// graph replay, percent: above 1 % the replay's energy is not the model's, and every
    /// table says so beside the figure.
    pub image_nonfinite_pct: Option<f64>,
    /// kc's prediction from parts beside the plain sum, with error bars.
    pub prediction: Option<super::predict::Prediction>,
    /// The units whose kernels alone were not the trace's: every figure says so beside it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub units_other_kernels: Vec<OtherKernels>,
    /// `--kinds-left-out` (a diagnostic): what each kind of unit costs in the model's
    /// program beside its units alone, per replay.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kinds_in_program: Option<super::kinds::KindsInProgram>,
    /// What had not run when a results file read here was written (its `unfinished`): a
    /// file of a run that did not end. Said at the top of the report.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unfinished: Vec<String>,
    /// What the prediction is computed from (kept to recompute it against the model).
    #[serde(skip)]
    pub prediction_inputs: Option<super::predict::PredictionInputs>,
}

impl Report {
    /// What stands beside a replay's figures when they are not the model's: the share of
    /// traced GPU time not executed, a memory image gone non-finite, and units that
    /// launched other kernels than the trace holds. Empty when none holds.
    pub fn caveat(&self) -> String {
        let mut v = Vec::new();
        if let Some(done) = self.time.replayed_traced_us {
            let all = done + self.time.not_executed_traced_us;
            if self.time.not_executed_traced_us > 0.0 && all > 0.0 {
                v.push(format!(
                    "executed {:.1} % of the traced GPU time",
                    100.0 * done / all
                ));
            }
        }
        if let Some(p) = self.image_nonfinite_pct.filter(|&p| p > 1.0) {
            v.push(format!(
                "memory image {p:.1} % non-finite: energy not the model's"
            ));
        }
        if let Some(first) = self.units_other_kernels.first() {
            let us: f64 = self
                .units_other_kernels
                .iter()
                .filter_map(|u| u.predicted_us)
                .sum();
            v.push(format!(
                "{} launched other kernels (or copies and fills) than the trace holds, alone and in kc's graph ({:.1} us of the plain sum a replay; {}): there the replay is not the model's",
                crate::words::count(self.units_other_kernels.len() as u64, "unit"),
                us,
                first.words()
            ));
        }
        if let Some(w) = self.copies_not_as_traced() {
            v.push(w);
        }
        if v.is_empty() {
            String::new()
        } else {
            format!(" ⚠ {}", v.join("; "))
        }
    }

    /// Where kc's graph ran another count of copies and fills than the trace holds for
    /// the replayed steps (CUPTI's copy activity, since session 48): the words beside
    /// every figure. A replay that runs fewer runs less than the model: EfficientNet-B0's
    /// step lost 147 autograd clones a replay before a79957b.
    pub fn copies_not_as_traced(&self) -> Option<String> {
        let f = self.fidelity.as_ref()?;
        let ran = f.copies_launched?;
        (ran != f.copies_traced).then(|| {
            format!(
                "kc's graph ran {} where the trace holds {} for the replayed steps: {}",
                if ran == 1 {
                    "1 copy or fill".to_string()
                } else {
                    format!("{ran} copies and fills")
                },
                f.copies_traced,
                if ran < f.copies_traced {
                    "traced work it did not run"
                } else {
                    "work the trace does not hold"
                }
            )
        })
    }
}

/// Below this share of the model's eager time spent in the GPU's own work (the trace's
/// kernel, copy and fill time per iteration), the eager model waited on its host: its time
/// is the host's launch rate, which no replay of the GPU's work predicts.
pub const HOST_BOUND_BUSY_SHARE: f64 = 0.8;

/// Beyond this relative difference between the kernel time of the model's CUDA graph
/// (profiled by capture.py) and the trace's kernel, copy and fill time per iteration, the
/// graph ran another program than the traced step. Over session 20's 16 other answers (11
/// models, eager traces and graph captures) the two agreed within 3.0 %; BERT's graphs ran
/// +48 % and +168 %.
pub const OTHER_PROGRAM_TOLERANCE: f64 = 0.10;

/// Where the model's own measurements (its capture and each `capture.py --remeasure`)
/// part in energy by more than the prediction's energy target: by how much (`whose`
/// begins the sentence), said beside the model's row and the prediction. Its energy is
/// then that uncertain, whatever kc measures: LLaMA's decode graph drew 3.589 J an
/// iteration captured and 3.876 J measured again right after kc's run, both at 55-56 °C
/// and the same time (session 41).
pub fn measurements_part(run: &super::reference::ModelRun, whose: &str) -> Option<String> {
    let (medians, pct) = run.measurements_energy()?;
    (pct > super::predict::ENERGY_TARGET_PCT).then(|| {
        format!(
            "{whose} {} measurements part by {pct:.1} % in energy ({} J per iteration, the capture first), more than the {:.0} % target: the model's energy is that uncertain",
            medians.len(),
            medians
                .iter()
                .map(|e| format!("{e:.4}"))
                .collect::<Vec<_>>()
                .join(", "),
            super::predict::ENERGY_TARGET_PCT
        )
    })
}

impl Report {
    /// Why the model's figure is not like with like, said beside it and beside the
    /// prediction: the eager model waited on its host (`host_bound_target_of`), its CUDA
    /// graph ran another program than the traced step ([`OTHER_PROGRAM_TOLERANCE`]), or
    /// that graph computed other than the model's eager step (capture.py's
    /// `replay_against_eager`: the decode graphs over a freed KV cache before session 49).
    pub fn target_caveat(&self) -> Option<String> {
        let m = self.model.as_ref()?;
        let graph_not_the_model = || {
            let r = &m.reference;
            r.cuda_graph.time_us?;
            r.cuda_graph
                .replay_against_eager
                .as_ref()?
                .mismatch("the model's CUDA graph")
        };
        self.host_bound_target_of(&m.reference, m.iterations)
            .or_else(|| self.other_program_target_of(&m.reference, m.iterations))
            .or_else(graph_not_the_model)
    }

    /// Where the model's figure is its CUDA graph and that graph's kernels took more than
    /// [`OTHER_PROGRAM_TOLERANCE`] away from the trace's per iteration: its time and energy
    /// are another program's. BERT's graph ran 14.1 ms of kernels per iteration where its
    /// eager trace ran 5.3 ms (session 20): the graph is not the step kc replays.
    fn other_program_target_of(
        &self,
        m: &super::reference::ModelReference,
        iterations: u32,
    ) -> Option<String> {
        m.cuda_graph.time_us?;
        let model = m.cuda_graph.kernel_time_us.filter(|&k| k > 0.0)?;
        let traced = (self.time.replayed_traced_us? + self.time.not_executed_traced_us)
            / f64::from(iterations.max(1));
        if traced <= 0.0 {
            return None;
        }
        let d = model / traced - 1.0;
        (d.abs() > OTHER_PROGRAM_TOLERANCE).then(|| {
            format!(
                "the model's CUDA graph ran another program than the traced step: its GPU work took {model:.1} us per iteration{} where the trace's took {traced:.1} us ({:+.0} %), so its time and energy are not the traced program's; not like with like (trace the graph itself, `traces/capture.py --cuda-graph`, to answer it like with like)",
                m.cuda_graph
                    .kernels_per_replay
                    .map_or(String::new(), |n| format!(" ({n:.0} activities)")),
                100.0 * d
            )
        })
    }

    /// Where the model's CUDA graph ran another count of kernels per iteration than the
    /// traced step (capture.py's `kernels_only_per_replay`, since session 31), every unit
    /// executed: the graph is not quite the traced program, though its kernel time may lie
    /// within [`OTHER_PROGRAM_TOLERANCE`] of the trace's. A model may take another path
    /// under a stream capture: Qwen2's training step traced eager ran 485 GPU activities
    /// per iteration, its graph 502 (session 31); torchvision's ConvNeXt-S and Swin-T steps
    /// with a fused AdamW ran 2 kernels more (session 34). The sentence names no cause,
    /// since kc does not know which path changed. Said beside the model's row
    /// and in the replay caveat, each only where the stronger other-program caveat does not
    /// stand (the callers see to it).
    pub(crate) fn other_kernels_of(
        &self,
        m: &super::reference::ModelReference,
        iterations: u32,
    ) -> Option<String> {
        let model = m.cuda_graph.kernels_only_per_replay?;
        m.cuda_graph.time_us?;
        if self.time.units_not_executed > 0 {
            return None;
        }
        let traced = self.fidelity.as_ref()?.kernels_traced as f64 / f64::from(iterations.max(1));
        ((model - traced).abs() >= 0.5).then(|| {
            format!(
                "the model's CUDA graph ran {model:.0} kernels per iteration where the traced step ran {traced:.0} ({:+.0}): not quite the traced program (a model may take another path under a stream capture); trace the graph itself (`traces/capture.py --cuda-graph`) to answer it like with like",
                model - traced
            )
        })
    }

    /// Where the model's figure is its eager run and the GPU's own work fills less than
    /// [`HOST_BOUND_BUSY_SHARE`] of it: why the comparison is not like with like (said
    /// beside the model's figure and the prediction). A Mixtral-shaped MoE prefill cannot
    /// be captured in a CUDA graph (its routing sizes tensors by their values) and ran
    /// eager at 7.3 ms per iteration for 0.9 ms of GPU work (docs/MEASUREMENTS.md).
    fn host_bound_target_of(
        &self,
        m: &super::reference::ModelReference,
        iterations: u32,
    ) -> Option<String> {
        if m.cuda_graph.time_us.is_some() {
            return None;
        }
        let eager = m.eager.time_us.filter(|&t| t > 0.0)?;
        let traced = self.time.replayed_traced_us? + self.time.not_executed_traced_us;
        let gpu = traced / f64::from(iterations.max(1));
        let share = gpu / eager;
        (share < HOST_BOUND_BUSY_SHARE).then(|| {
            format!(
                "the model ran eager ({}) and its GPU's work ({gpu:.1} us traced per iteration) fills {:.0} % of its {eager:.1} us: its time is its host's, which kc's replay of the GPU's work does not predict; not like with like",
                m.cuda_graph
                    .missing
                    .as_deref()
                    .map_or("no CUDA graph measured".to_string(), |w| format!(
                        "its CUDA graph: {}",
                        crate::analyze::cut(w, 100)
                    )),
                100.0 * share
            )
        })
    }
}

/// One measured part of the error budget, per replay.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct BudgetPart {
    pub what: String,
    pub us: f64,
    /// Share of the whole difference, percent (signed: parts may pull both ways).
    pub pct_of_total: Option<f64>,
}

/// From Σ isolated × count (the prediction) to what it predicts: the model's own
/// measurement when a reference is given, else kc's graph replay; per replay. The parts
/// are differences of measured figures that telescope, so they add up to the total.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct ErrorBudget {
    pub prediction_us: f64,
    pub target: String,
    pub target_us: f64,
    pub total_us: f64,
    pub parts: Vec<BudgetPart>,
    /// total − Σ parts (0 up to rounding).
    pub unexplained_us: f64,
    /// Energy: prediction → kc's graph replay → the model, joules per replay.
    pub energy_parts: Vec<(String, f64)>,
}

/// One isolated run's prediction, per replay.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct IsolatedSum {
    pub cache: String,
    pub predicted_us: f64,
    /// (predicted − graph replay) / graph replay × 100, when the graph was replayed.
    pub error_pct: Option<f64>,
    pub predicted_energy_j: Option<f64>,
}

/// One line of the comparison with the model: a time and an energy per model iteration,
/// and how far each is from the model's (CUDA graph if measured, else eager).
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct ModelRow {
    pub what: String,
    /// What stands beside this row's figures when they are not the model's (a share not
    /// executed, a non-finite memory image); empty otherwise.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub caveat: String,
    pub time_us: Option<f64>,
    pub time_vs_model_pct: Option<f64>,
    pub energy_j: Option<f64>,
    pub energy_vs_model_pct: Option<f64>,
    /// Standard uncertainties of the figures, where they have one (the prediction).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_u_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_u_j: Option<f64>,
}

#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct ModelComparison {
    pub reference: super::reference::ModelReference,
    /// "CUDA graph" or "eager": what the percentages compare with.
    pub basis: String,
    /// Model iterations per replay used to divide kc's per-replay figures, and where that
    /// count came from.
    pub iterations: u32,
    pub iterations_from: String,
    pub rows: Vec<ModelRow>,
}

impl Report {
    /// Adds the comparison with the model's own measurement. kc's per-replay figures are
    /// divided by the iterations the results (or plan) record, else by the reference's
    /// `profiled_iterations` (the trace holds that many).
    pub fn add_reference(&mut self, m: super::reference::ModelReference) -> Result<(), String> {
        let (iterations, from) =
            match (self.iterations_per_replay, m.profiled_iterations) {
                (Some(n), _) if n > 0 => (n, "the plan's iterations".to_string()),
                (_, Some(n)) if n > 0 => (n, "reference.json's profiled_iterations".to_string()),
                _ => return Err(
                    "neither the results nor the reference say how many iterations the trace holds"
                        .into(),
                ),
            };
        if self.iterations_per_replay.is_none() {
            self.set_iterations(iterations, "reference.json's profiled_iterations");
        }
        let per = |x: Option<f64>| x.map(|v| v / f64::from(iterations));
        let mut m = m;
        // The model's energy at the temperature kc's replay ran at, where both record it:
        // every comparison below (rows, error budget, prediction) then reads that figure.
        if let Some(t) = self.energy_detail.as_ref().and_then(|d| d.temperature_c) {
            let run = m.compared_mut();
            run.match_temperature(t);
            if let Some(tm) = run.temperature.as_ref().filter(|tm| !tm.matched) {
                self.notes.push(format!(
                    "against the model: no energy window of the model lay within {} °C of kc's replay ({:.0} °C; the model's {}-{} °C): its nearest windows stand in, and the energies compare only roughly (about half a percent per degree on the H100)",
                    super::reference::TEMPERATURE_MATCH_C,
                    tm.kc_c,
                    tm.model_all_c[0],
                    tm.model_all_c[1]
                ));
            }
        }
        if let Some(w) = m
            .traced_graph_against_eager
            .as_ref()
            .and_then(|c| c.mismatch("the traced CUDA graph"))
        {
            self.notes.push(format!(
                "against the model: ⚠ {w}; kc's recorded values come from an eager run of the step, so kc's replay and the trace ran on different data"
            ));
        }
        let (basis, model) = m.compared();
        let vs = |x: Option<f64>, base: Option<f64>| Some(100.0 * (x? - base?) / base?);
        let caveat = self.caveat();
        let (model_t, model_e) = (model.time_us, model.energy_j);
        let host_bound = self.host_bound_target_of(&m, iterations);
        let other_program = self
            .other_program_target_of(&m, iterations)
            .or_else(|| self.other_kernels_of(&m, iterations));
        // The model's own row says at what temperature its energy stands.
        let at_temperature = |run: &super::reference::ModelRun| {
            let t = run
                .temperature
                .as_ref()
                .map_or(String::new(), super::reference::Temperature::label);
            match (run.energy_counted_enqueued, t.is_empty()) {
                (false, _) => t,
                (true, true) => format!("⚠ {}", super::reference::ENQUEUED_LABEL),
                (true, false) => format!("{t}; ⚠ {}", super::reference::ENQUEUED_LABEL),
            }
        };
        // A model row's caveat: the temperature its energy stands at, then why it is not
        // like with like, where it is not.
        let model_caveat = |run: &super::reference::ModelRun, not_alike: Option<&str>| {
            let mut v = vec![at_temperature(run)];
            v.extend(
                run.replay_against_eager
                    .as_ref()
                    .and_then(|c| c.mismatch("this graph"))
                    .map(|w| format!("⚠ {w}")),
            );
            v.extend(measurements_part(run, "its").map(|w| format!("⚠ {w}")));
            v.extend(not_alike.map(|w| format!("⚠ {w}")));
            v.retain(|s| !s.is_empty());
            v.join("; ")
        };
        let row = |what: &str, t: Option<f64>, e: Option<f64>| ModelRow {
            what: what.to_string(),
            // kc's own figures carry the caveat; the model's say at what temperature
            // their energy stands.
            caveat: if what.starts_with("kc ") || what.starts_with("Σ ") {
                caveat.trim().to_string()
            } else if what.starts_with("model, CUDA graph") {
                model_caveat(&m.cuda_graph, other_program.as_deref())
            } else if what.starts_with("model, eager") {
                model_caveat(&m.eager, host_bound.as_deref())
            } else {
                String::new()
            },
            time_us: t,
            time_vs_model_pct: vs(t, model.time_us),
            energy_j: e,
            energy_vs_model_pct: vs(e, model.energy_j),
            ..Default::default()
        };
        let traced_sum = self
            .time
            .replayed_traced_us
            .map(|t| t + self.time.not_executed_traced_us);
        let mut rows = vec![
            row(
                &format!("model, CUDA graph ({})", m.cuda_graph.timing),
                m.cuda_graph.time_us,
                m.cuda_graph.energy_j,
            ),
            row(
                &format!("model, eager ({})", m.eager.timing),
                m.eager.time_us,
                m.eager.energy_j,
            ),
            row(
                "kc graph replay",
                per(self.time.actual_us),
                per(self.energy.as_ref().map(|e| e.actual_j)),
            ),
            row(
                &format!(
                    "Σ isolated × count ({} cache)",
                    self.cache.as_deref().unwrap_or("-")
                ),
                per(self.time.predicted_us),
                per(self.energy.as_ref().and_then(|e| e.predicted_j)),
            ),
            row(
                "traced iteration, first kernel start to last end",
                self.time.traced_iteration_span_us,
                None,
            ),
            row("traced kernel sum", per(traced_sum), None),
        ];
        for o in &self.other_isolated {
            rows.insert(
                rows.len() - 2,
                row(
                    &format!("Σ isolated × count ({} cache)", o.cache),
                    per(Some(o.predicted_us)),
                    per(o.predicted_energy_j),
                ),
            );
        }
        rows.retain(|r| r.time_us.is_some() || r.energy_j.is_some());
        if self.time.units_not_executed > 0 {
            self.notes.push(format!(
                "against the model: kc's replay and prediction leave out {:.1} us traced per iteration ({}), which the model ran",
                self.time.not_executed_traced_us / f64::from(iterations),
                crate::words::count(self.time.units_not_executed as u64, "unit")
            ));
        }
        self.model = Some(ModelComparison {
            reference: m,
            basis: basis.into(),
            iterations,
            iterations_from: from,
            rows,
        });
        self.compute_error_budget();
        self.compute_prediction();
        // The prediction from parts beside the plain sum, per iteration, with its error bar.
        if let (Some(p), Some(m)) = (
            self.prediction.as_ref().filter(|p| p.terms_measured),
            &mut self.model,
        ) {
            let n = f64::from(iterations);
            let (mt, me) = (model_t, model_e);
            let row = ModelRow {
                what: "kc prediction from parts (Σ isolated + measured terms)".into(),
                caveat: caveat.trim().to_string(),
                time_us: Some(p.predicted_us / n),
                time_vs_model_pct: mt.map(|t| 100.0 * (p.predicted_us / n - t) / t),
                energy_j: p.predicted_energy_j.map(|e| e / n),
                energy_vs_model_pct: p
                    .predicted_energy_j
                    .zip(me)
                    .map(|(e, t)| 100.0 * (e / n - t) / t),
                time_u_us: Some(p.predicted_u_us / n),
                energy_u_j: p.predicted_energy_u_j.map(|u| u / n),
            };
            let at = m
                .rows
                .iter()
                .position(|r| r.what.starts_with("Σ isolated"))
                .unwrap_or(m.rows.len());
            m.rows.insert(at, row);
        }
        Ok(())
    }

    /// Decomposes the prediction's error into measured parts ([`ErrorBudget`]); needs the
    /// prediction and the graph replay, and uses what else was measured.
    pub fn compute_error_budget(&mut self) {
        let (Some(p), Some(g)) = (self.time.predicted_us, self.time.actual_us) else {
            return;
        };
        let mut parts: Vec<(String, f64)> = Vec::new();
        // kc's graph split into its kernels and what lies between them: by the kernels'
        // busy time where recorded, so that kernels side by side count once (ResNeXt-101
        // 32x8d's grouped convolutions: by durations, +2746 us of context per replay and
        // −2152 us of launch and gaps, session 40's call 1), else by their durations.
        // Where the replay's copies and fills on the copy engine were recorded (since
        // session 48), they go with its kernels: the units alone hold the copy units' time,
        // and the model's profiled kernel time holds its copies and fills.
        let copies_us = self.fidelity.as_ref().and_then(|f| f.copies_us);
        let with_copies = |k: f64| k + copies_us.unwrap_or(0.0);
        let split = match (
            self.time.in_context_busy_us,
            self.time.in_context_kernels_us,
            copies_us,
        ) {
            (Some(k), _, None) => Some((
                k,
                "context: the units' kernels in kc's graph (busy time) vs alone",
                "launch and gaps in kc's graph (beyond its kernels' busy time)",
            )),
            (Some(k), _, Some(_)) => Some((
                with_copies(k),
                "context: the units' kernels (busy time), copies and fills in kc's graph vs alone",
                "launch and gaps in kc's graph (beyond its kernels' busy time, copies and fills)",
            )),
            (None, Some(k), _) => Some((
                with_copies(k),
                "context: the units' kernels in kc's graph vs alone",
                "launch, gaps and stream overlap in kc's graph",
            )),
            (None, None, _) => None,
        };
        match split {
            Some((k, context, between)) => {
                parts.push((context.into(), k - p));
                parts.push((between.into(), g - k));
            }
            None => parts.push((
                "kc's graph vs the units alone (context and overhead; --verify splits them)".into(),
                g - p,
            )),
        }
        let iters = self.iterations_per_replay.filter(|&n| n > 0);
        let model = self.model.as_ref().and_then(|m| {
            let run = m.reference.compared().1;
            Some((
                m.basis.clone(),
                run.time_us?,
                run.energy_j,
                run.kernel_time_us,
                f64::from(iters?),
                run.kernels_per_replay,
            ))
        });
        let (target, target_us) = match &model {
            Some((basis, t, _, model_kernels, n, model_count)) => {
                // + 0.0 turns a -0.0 sum into 0.
                let not_replayed = self.time.not_executed_traced_us + 0.0;
                parts.push((
                    "work kc does not replay (its traced time)".into(),
                    not_replayed,
                ));
                match (
                    model_kernels,
                    self.time.in_context_kernels_us.map(with_copies),
                ) {
                    // With the kernels of the model's own run measured, its excess splits
                    // into kernels (the model's vs kc's in context) and the overhead
                    // between them (the model's vs kc's).
                    (Some(mk), Some(k)) => {
                        // Both counts, as measured: the model's graph profiled by capture.py
                        // (kernels, copies and fills) and kc's graph under CUPTI (kernels); a
                        // model's CUDA graph often runs another program than its eager step.
                        let kc_count = self.time.in_context_kernels.map(|c| c as f64 / n);
                        let kc_copies = self
                            .fidelity
                            .as_ref()
                            .filter(|f| f.copies_us.is_some())
                            .and_then(|f| f.copies_launched)
                            .map(|c| c as f64 / n);
                        let what = match (model_count, kc_count, kc_copies) {
                            (Some(mc), Some(kc), Some(cc)) => format!(
                                "the model's kernels, copies and fills vs kc's in context ({mc:.0} GPU activities per iteration in the model's graph, {kc:.0} kernels and {cc:.0} copies and fills in kc's)"
                            ),
                            (Some(mc), Some(kc), None) => format!(
                                "the model's kernels vs kc's in context ({mc:.0} GPU activities per iteration in the model's graph, {kc:.0} kernels in kc's)"
                            ),
                            _ => "the model's kernels vs kc's in context".to_string(),
                        };
                        parts.push((what, mk * n - k - not_replayed));
                        parts.push((
                            "the model's launch and gap overhead vs kc's".into(),
                            (t - mk) * n - (g - k),
                        ));
                    }
                    _ => parts.push((
                        "the model beyond kc's replay of the same work".into(),
                        t * n - g - not_replayed,
                    )),
                }
                (format!("the model ({basis})"), t * n)
            }
            None => ("kc's graph replay".to_string(), g),
        };
        let total = target_us - p;
        let explained: f64 = parts.iter().map(|x| x.1).sum();
        let mut energy_parts = Vec::new();
        if let Some(e) = &self.energy {
            if let Some(pe) = e.predicted_j {
                energy_parts.push(("kc's graph vs the units alone".to_string(), e.actual_j - pe));
                if let Some((_, _, Some(me), _, n, _)) = &model {
                    energy_parts.push((
                        "the model beyond kc's graph (incl. work not replayed)".to_string(),
                        me * n - e.actual_j,
                    ));
                }
            }
        }
        self.error_budget = Some(ErrorBudget {
            prediction_us: p,
            target,
            target_us,
            total_us: total,
            parts: parts
                .into_iter()
                .map(|(what, us)| BudgetPart {
                    what,
                    us,
                    pct_of_total: (total.abs() >= SHARE_FLOOR * target_us.abs())
                        .then(|| 100.0 * us / total),
                })
                .collect(),
            unexplained_us: total - explained,
            energy_parts,
        });
    }

    /// A per-replay figure per model iteration, when the iteration count is known.
    pub fn per_iteration(&self, per_replay: Option<f64>) -> Option<f64> {
        Some(per_replay? / f64::from(self.iterations_per_replay.filter(|&n| n > 0)?))
    }

    /// Adds the prediction of an isolated run of the same plan under another cache state.
    pub fn add_isolated_sum(&mut self, isolated: &Results) {
        let Some(iso) = &isolated.isolated else {
            return;
        };
        self.other_isolated.push(IsolatedSum {
            cache: iso.cache.clone(),
            predicted_us: iso.predicted_us,
            error_pct: self.time.actual_us.and_then(|a| pct(iso.predicted_us, a)),
            predicted_energy_j: iso.predicted_energy_j,
        });
    }

    /// Counts, per unit, the traced invocations that started after the GPU sat idle at
    /// least [`IDLE_BEFORE_NS`] (the plan's steps in start order, per rank), and says how
    /// many units have most of theirs so.
    pub fn mark_traced_after_idle(&mut self, plan: &crate::plan::Plan) {
        let mut after = vec![0u64; plan.units.len()];
        let idle = crate::results::fidelity::idle_before(plan);
        for (s, &i) in plan.steps.iter().zip(&idle) {
            if i >= IDLE_BEFORE_NS {
                if let Some(a) = after.get_mut(s.unit as usize) {
                    *a += 1;
                }
            }
        }
        let mut mostly = 0;
        for u in &mut self.units {
            if let Some(&a) = after.get(u.id as usize) {
                u.traced_after_idle = Some(a);
                if a * 2 > u.invocations {
                    mostly += 1;
                }
            }
        }
        if mostly > 0 {
            self.notes.push(format!(
                "{mostly} units started most of their traced invocations after the GPU sat idle >= {} us (a host-bound trace): their traced durations may carry a start from idle and are no fair reference for the isolated or in-context times (`traced_after_idle` per unit)",
                IDLE_BEFORE_NS / 1000
            ));
        }
    }

    /// Sets, per unit, its kernels in kc's graph (from the fidelity's units) against the
    /// unit alone, and their median |error|. Like with like where the isolated pass
    /// recorded its kernels (CUPTI): a unit's per-invocation time also holds the gap to
    /// its next repetition.
    fn set_isolated_vs_in_context(&mut self, isolated: Option<&Results>) {
        let Some(f) = &self.fidelity else {
            return;
        };
        self.time.in_context_alignment_caveat = (f.cut.is_some() || f.kernels_extra > 0).then(|| {
            format!(
                "the replay's kernels lined up with the trace's only in part ({} launched that the trace does not hold{}{}): which kernels a step ran is a guess past that point, and these per-unit figures are no measurement of the units",
                f.kernels_extra,
                if f.cut.is_some() { "; the alignment was cut short" } else { "" },
                [
                    f.first_extra
                        .as_deref()
                        .map(|x| format!("; it began to slide at {x}")),
                    f.first_mismatch
                        .as_deref()
                        .map(|m| format!("; the first kernel of another name at {m}")),
                ]
                .into_iter()
                .flatten()
                .collect::<String>()
            )
        });
        let alone_kernels: std::collections::HashMap<u32, f64> = isolated
            .map(|i| {
                i.units
                    .iter()
                    .filter_map(|u| Some((u.id, u.launches_verified.as_ref()?.kernels_us)))
                    .collect()
            })
            .unwrap_or_default();
        let cupti = !alone_kernels.is_empty();
        let mut errors = Vec::new();
        for row in &mut self.units {
            row.alone_kernels_us = alone_kernels.get(&row.id).copied();
            let Some(fu) = f.units.iter().find(|x| x.unit == row.id && x.steps > 0) else {
                continue;
            };
            let in_context = fu.in_context_us / fu.steps as f64;
            row.in_context_mean_us = Some(in_context);
            let alone = if cupti {
                alone_kernels.get(&row.id).copied()
            } else {
                row.measured_mean_us
            };
            if let Some(e) = alone
                .filter(|_| in_context > 0.0)
                .and_then(|a| pct(a, in_context))
            {
                row.isolated_vs_in_context_pct = Some(e);
                errors.push(e.abs());
            }
        }
        // The same units' kernels in the round, where CUPTI split the round by unit.
        let transitions = isolated.and_then(|i| i.isolated.as_ref()?.transitions.as_ref());
        let round: std::collections::HashMap<u32, f64> = transitions
            .map(|t| {
                t.round_unit_kernels
                    .iter()
                    .map(|r| (r.unit, r.round_us))
                    .collect()
            })
            .unwrap_or_default();
        let mut round_errors = set_against_in_context(&mut self.units, &round, |row, e| {
            row.round_vs_in_context_pct = Some(e)
        });
        if let Some(m) = crate::results::stats::median(&mut round_errors) {
            self.time.unit_round_vs_in_context_median_abs_pct = Some(m);
            self.time.units_round_vs_in_context = Some(round_errors.len());
            self.time.round_runs = transitions.map(super::predict::round_runs_words);
        }
        // The units measured after their lead-ins, their own kernels in that launch.
        let after_lead_in: std::collections::HashMap<u32, f64> = isolated
            .map(|i| {
                i.units
                    .iter()
                    .filter_map(|u| {
                        Some((u.id, u.after_lead_in.as_ref()?.kernels.as_ref()?.unit_us?))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut lead_errors = set_against_in_context(&mut self.units, &after_lead_in, |row, e| {
            row.after_lead_in_vs_in_context_pct = Some(e)
        });
        if let Some(m) = crate::results::stats::median(&mut lead_errors) {
            self.time.unit_after_lead_in_vs_in_context_median_abs_pct = Some(m);
            self.time.units_after_lead_in_vs_in_context = Some(lead_errors.len());
        }
        // The units alone in the model's cache state, and the share of the bytes read by
        // those set against kc's graph that came from memory.
        let recorded: std::collections::HashMap<u32, crate::results::fidelity::ModelCacheKernels> =
            isolated
                .map(|i| {
                    i.units
                        .iter()
                        .filter_map(|u| Some((u.id, u.launches_verified.as_ref()?.in_model_cache?)))
                        .collect()
                })
                .unwrap_or_default();
        let in_model_cache: std::collections::HashMap<u32, f64> =
            recorded.iter().map(|(&id, c)| (id, c.kernels_us)).collect();
        let mut cache_errors =
            set_against_in_context(&mut self.units, &in_model_cache, |row, e| {
                row.in_model_cache_vs_in_context_pct = Some(e)
            });
        let compared = || {
            self.units
                .iter()
                .filter(|r| r.in_model_cache_vs_in_context_pct.is_some())
                .filter_map(|r| recorded.get(&r.id).map(|c| (r, c)))
        };
        if let Some(m) = crate::results::stats::median(&mut cache_errors) {
            let (cold, read) = compared().fold((0u64, 0u64), |(c, t), (_, k)| {
                (c + k.cold_bytes, t + k.cold_bytes + k.warm_bytes)
            });
            self.time.unit_in_model_cache_vs_in_context_median_abs_pct = Some(m);
            self.time.units_in_model_cache_vs_in_context = Some(cache_errors.len());
            self.time.in_model_cache_cold_bytes_pct =
                (read > 0).then(|| 100.0 * cold as f64 / read as f64);
            let invocations: u64 = compared().map(|(_, k)| u64::from(k.invocations)).sum();
            let evicted = compared()
                .filter_map(|(_, k)| k.code_evicted_invocations.map(u64::from))
                .reduce(|a, b| a + b);
            self.time.in_model_cache_code_evicted_pct = evicted
                .filter(|_| invocations > 0)
                .map(|e| 100.0 * e as f64 / invocations as f64);
            let mut policies = compared().map(|(_, k)| k.code);
            let first = policies.next().flatten();
            self.time.in_model_cache_code = first.filter(|&p| policies.all(|q| q == Some(p)));
            self.time.in_model_cache_lead_in_steps = compared()
                .filter_map(|(_, k)| k.lead_in_steps.map(u64::from))
                .reduce(|a, b| a + b);
            self.time.in_model_cache_lead_in_reads_from_producers = compared()
                .filter_map(|(_, k)| k.lead_in_reads_from_producers.map(u64::from))
                .reduce(|a, b| a + b);
        }
        // Where the results say which units have operands outside the image: the median
        // over those with none.
        if recorded
            .values()
            .any(|c| c.outside_image_operands.is_some())
        {
            let mut held: Vec<f64> = compared()
                .filter(|(_, c)| c.outside_image_operands == Some(0))
                .filter_map(|(r, _)| r.in_model_cache_vs_in_context_pct.map(f64::abs))
                .collect();
            self.time.units_in_model_cache_image_held = Some(held.len());
            self.time.unit_in_model_cache_image_held_median_abs_pct =
                crate::results::stats::median(&mut held);
        }
        let n = errors.len();
        let Some(median) = crate::results::stats::median(&mut errors) else {
            return;
        };
        self.time.unit_isolated_vs_in_context_median_abs_pct = Some(median);
        self.time.units_isolated_vs_in_context = Some(n);
        self.time.isolated_vs_in_context_basis = Some(
            if cupti {
                "kernels alone (CUPTI) vs kernels in kc's graph (CUPTI)"
            } else {
                "time per invocation alone vs kernels in kc's graph (CUPTI)"
            }
            .into(),
        );
    }

    /// Sets each unit whole in the model's own graph ([`super::side_by_side`]) against
    /// that graph: its kernels alone (CUPTI) and its kernels in kc's graph, per invocation.
    pub fn set_against_model_graph(&mut self) {
        let Some(s) = self.graphs_side_by_side.as_ref() else {
            return;
        };
        let its = f64::from(self.iterations_per_replay.unwrap_or(1).max(1));
        let (mut alone, mut kc) = (Vec::new(), Vec::new());
        for w in &s.units_whole {
            let Some(row) = self.units.iter_mut().find(|r| r.id == w.unit) else {
                continue;
            };
            let per_iteration = row.invocations as f64 / its;
            if per_iteration <= 0.0 || w.model_us <= 0.0 {
                continue;
            }
            let model = w.model_us / per_iteration;
            row.in_model_graph_us = Some(model);
            row.isolated_vs_model_graph_pct = row.alone_kernels_us.and_then(|a| pct(a, model));
            row.kc_graph_vs_model_graph_pct = row.in_context_mean_us.and_then(|k| pct(k, model));
            alone.extend(row.isolated_vs_model_graph_pct.map(f64::abs));
            kc.extend(row.kc_graph_vs_model_graph_pct.map(f64::abs));
        }
        self.time.units_isolated_vs_model_graph = Some(alone.len()).filter(|&n| n > 0);
        self.time.unit_isolated_vs_model_graph_median_abs_pct =
            crate::results::stats::median(&mut alone);
        self.time.units_kc_graph_vs_model_graph = Some(kc.len()).filter(|&n| n > 0);
        self.time.unit_kc_graph_vs_model_graph_median_abs_pct =
            crate::results::stats::median(&mut kc);
    }

    /// Takes the iteration count from the plan when the results did not record it.
    pub fn set_iterations(&mut self, count: u32, found_by: &str) {
        if count > 0 {
            self.iterations_per_replay = Some(count);
            self.iterations_found_by = Some(found_by.to_string());
        }
    }
}

/// `a` against `b`, percent (`None` where `b` is zero).
pub(crate) fn pct(a: f64, b: f64) -> Option<f64> {
    (b != 0.0).then(|| 100.0 * (a - b) / b)
}

/// Builds the report from a graph-mode results file, an isolated one, or both.
pub fn build(graph: Option<&Results>, isolated: Option<&Results>) -> Report {
    let any = graph.or(isolated).expect("at least one results file");
    let mut r = Report {
        schema_version: REPORT_SCHEMA_VERSION,
        device: any.device.name.clone(),
        sources: any.plan.sources.clone(),
        cache: isolated
            .and_then(|i| i.isolated.as_ref())
            .map(|s| s.cache.clone()),
        unit_values: isolated
            .and_then(|i| i.isolated.as_ref())
            .and_then(|s| s.unit_values.clone()),
        ..Default::default()
    };
    r.set_iterations(any.plan.iterations, &any.plan.iterations_found_by);
    r.unfinished = [("graph", graph), ("isolated", isolated)]
        .into_iter()
        .filter_map(|(mode, res)| {
            let what = res?.unfinished.as_deref()?;
            Some(format!(
                "the {mode} results were written before the run ended: {what}"
            ))
        })
        .collect();
    if let (Some(g), Some(i)) = (graph, isolated) {
        if g.plan.sources != i.plan.sources || g.plan.units != i.plan.units {
            r.notes
                .push("the graph and isolated results come from different plans".into());
        }
    }
    let units_src = isolated.or(graph).expect("one of them");
    let predicted_total: Option<f64> = isolated
        .and_then(|i| i.isolated.as_ref())
        .map(|s| s.predicted_us);
    r.units = units_src
        .units
        .iter()
        .map(|u| {
            let measured = u.time_us.as_ref().map(|t| t.mean);
            UnitRow {
                id: u.id,
                label: u.label.clone(),
                tier: u.tier.clone(),
                family: u.family.clone(),
                call: u.call.clone(),
                status: u.status.clone(),
                invocations: u.invocations,
                traced_mean_us: u.traced_mean_us,
                traced_total_us: u.traced_mean_us * u.invocations as f64,
                measured_mean_us: measured,
                measured_std_us: u.time_us.as_ref().map(|t| t.std),
                error_vs_traced_pct: measured.and_then(|m| pct(m, u.traced_mean_us)),
                predicted_us: u.predicted_us,
                pct_of_predicted: match (u.predicted_us, predicted_total) {
                    (Some(p), Some(t)) if t > 0.0 => Some(100.0 * p / t),
                    _ => None,
                },
                energy_per_invocation_mj: u.energy.as_ref().map(|e| e.per_item_j.mean * 1000.0),
                predicted_energy_j: u.predicted_energy_j,
                traced_after_idle: None,
                in_context_mean_us: None,
                isolated_vs_in_context_pct: None,
                round_vs_in_context_pct: None,
                after_lead_in_vs_in_context_pct: None,
                in_model_cache_vs_in_context_pct: None,
                alone_kernels_us: None,
                in_model_graph_us: None,
                isolated_vs_model_graph_pct: None,
                kc_graph_vs_model_graph_pct: None,
            }
        })
        .collect();
    let mut top: Vec<UnitRow> = r
        .units
        .iter()
        .filter(|u| u.predicted_us.is_some())
        .cloned()
        .collect();
    top.sort_by(|a, b| largest_first((a.predicted_us, a.id), (b.predicted_us, b.id)));
    top.truncate(10);
    r.top_units = top;
    let mut tiers: Vec<String> = r.units.iter().map(|u| u.tier.clone()).collect();
    tiers.sort();
    tiers.dedup();
    r.tiers = tiers
        .into_iter()
        .map(|t| {
            let us: Vec<&UnitRow> = r.units.iter().filter(|u| u.tier == t).collect();
            let pred: Vec<f64> = us.iter().filter_map(|u| u.predicted_us).collect();
            let predicted = (!pred.is_empty()).then(|| pred.iter().sum::<f64>());
            TierRow {
                tier: t,
                unique_units: us.len(),
                invocations: us.iter().map(|u| u.invocations).sum(),
                traced_us: us.iter().map(|u| u.traced_total_us).sum(),
                predicted_us: predicted,
                pct_of_predicted: match (predicted, predicted_total) {
                    (Some(p), Some(t)) if t > 0.0 => Some(100.0 * p / t),
                    _ => None,
                },
            }
        })
        .collect();
    r.units_other_kernels = units_other_kernels(&units_src.units);
    r.time.units_not_executed = r.units.iter().filter(|u| u.status != "ok").count();
    r.time.not_executed_traced_us = r
        .units
        .iter()
        .filter(|u| u.status != "ok")
        .map(|u| u.traced_total_us)
        .sum();
    r.time.predicted_us = predicted_total;
    if let Some(g) = graph.and_then(|g| g.graph.as_ref()) {
        r.time.actual_us = Some(g.replay_us.mean);
        r.time.actual_std_us = Some(g.replay_us.std);
        r.time.replayed_traced_us = Some(g.replayed_traced_us);
        r.time.in_context_kernels_us = g.fidelity.as_ref().map(|f| f.in_context_kernels_us);
        r.time.in_context_busy_us = g.fidelity.as_ref().and_then(|f| f.in_context_busy_us);
        r.time.in_context_kernels = g.fidelity.as_ref().map(|f| f.kernels_launched);
        r.fidelity = g.fidelity.clone();
        r.image_nonfinite_pct = g
            .memory_image
            .as_ref()
            .and_then(|m| m.nonfinite_share)
            .map(|s| 100.0 * s);
        r.time.traced_critical_path_us = Some(g.replayed_traced_critical_path_us);
        r.time.traced_iteration_span_us = g.traced_iteration_span_us;
        r.time.error_pct = predicted_total.and_then(|p| pct(p, g.replay_us.mean));
        if let Some(e) = &g.energy {
            let predicted = isolated
                .and_then(|i| i.isolated.as_ref())
                .and_then(|s| s.predicted_energy_j);
            r.energy = Some(EnergyComparison {
                actual_j: e.per_item_j.mean,
                windows: e.per_item_j.n,
                actual_cv: e.per_item_j.cv(),
                actual_above_idle_j: e.per_item_above_idle_j.mean,
                predicted_j: predicted,
                error_pct: predicted.and_then(|p| pct(p, e.per_item_j.mean)),
            });
            let ws: Vec<_> = e
                .windows
                .iter()
                .filter_map(|&k| graph.and_then(|g| g.windows.get(k)))
                .collect();
            let duration: f64 = ws.iter().map(|w| w.duration_s).sum();
            let total: f64 = ws.iter().map(|w| w.energy_j).sum();
            let idle = graph.and_then(|g| g.idle.as_ref()).map(|i| i.avg_power_w);
            r.energy_detail = Some(EnergyDetail {
                windows: ws.len(),
                duration_s: duration,
                samples: ws.iter().map(|w| w.power_w.n).sum(),
                total_j: total,
                total_wh: total / 3600.0,
                per_run_j: e.per_item_j.mean,
                avg_power_w: if duration > 0.0 {
                    total / duration
                } else {
                    0.0
                },
                peak_power_w: ws.iter().map(|w| w.power_w.max).fold(f64::NAN, f64::max),
                min_power_w: ws.iter().map(|w| w.power_w.min).fold(f64::NAN, f64::min),
                idle_power_w: idle,
                above_idle_j: idle.map(|p| total - p * duration),
                temperature_c: crate::results::stats::median(
                    &mut ws
                        .iter()
                        .filter_map(|w| w.temperature_c.map(|[_, end]| f64::from(end)))
                        .collect::<Vec<_>>(),
                ),
            });
        }
    } else if let Some(i) = isolated.and_then(|i| i.isolated.as_ref()) {
        r.time.not_executed_traced_us = i.not_executed_traced_us;
    }
    r.set_isolated_vs_in_context(isolated);
    r.kinds_in_program = isolated.and_then(|i| {
        let k = i.isolated.as_ref()?.kinds_left_out.as_ref()?;
        Some(super::kinds::kinds_in_program(k, &i.units))
    });
    if graph.is_none() {
        r.notes
            .push("no graph-mode results: the actual side of the comparison is missing".into());
    }
    if isolated.is_none() {
        r.notes
            .push("no isolated results: the predicted side of the comparison is missing".into());
    }
    // What reading mended in an older kc's figures.
    for res in [graph, isolated].into_iter().flatten() {
        r.notes.extend(res.mended_on_reading.iter().cloned());
    }
    // How each run's windows took their durations (results since session 33): on the
    // counter's period, or as seen where its ticks kept none.
    for (run, res) in [("kc's graph run", graph), ("the isolated run", isolated)] {
        if let Some(n) = res.and_then(|res| crate::results::energy::ticks_note(&res.windows)) {
            r.notes.push(format!("{run}: {n}"));
        }
    }
    // Where kc's own time went in each run before and around its mode's work (results
    // since session 38), then in the isolated pass (since session 31).
    for (run, res) in [("kc's graph run", graph), ("the isolated run", isolated)] {
        if let Some(w) = res.and_then(|res| run_phase_words(run, &res.phases)) {
            r.notes.push(w);
        }
    }
    if let Some(w) =
        isolated.and_then(|i| pass_time_words(i.isolated.as_ref()?, &i.units, &i.windows))
    {
        r.notes.push(w);
    }
    if r.time.units_not_executed > 0 {
        r.notes.push(format!(
            "{} ({:.1} us traced) not executed, left out of both sides",
            crate::words::count(r.time.units_not_executed as u64, "unit"),
            r.time.not_executed_traced_us
        ));
    }
    r.compute_error_budget();
    r.prediction_inputs = super::predict::PredictionInputs::from_results(graph, isolated);
    r.compute_prediction();
    r
}

/// The sentence on where a run's own time went (`Results::phases`): its total and each
/// phase's seconds. None without phases (results of kc before session 38).
pub(crate) fn run_phase_words(run: &str, phases: &[crate::results::PassPhase]) -> Option<String> {
    phase_words(phases).map(|w| format!("kc's own time in {run}: {w}"))
}

/// Phases as a total and each one's seconds: "21.0 s (the units alone 11.8 s, …)"; None
/// without any.
fn phase_words(phases: &[crate::results::PassPhase]) -> Option<String> {
    if phases.is_empty() {
        return None;
    }
    let total: f64 = phases.iter().map(|p| p.seconds).sum();
    let parts: Vec<String> = phases
        .iter()
        .map(|p| format!("{} {:.1} s", p.phase, p.seconds))
        .collect();
    Some(format!("{total:.1} s ({})", parts.join(", ")))
}

/// The sentence on where an isolated pass's time went (`phases`, and the units' own
/// `wall_ms`): each phase's seconds, the units' mean, and of the units' time their energy
/// windows'. None without phases (results of kc before session 31).
pub(crate) fn pass_time_words(
    summary: &crate::results::IsolatedSummary,
    units: &[crate::results::UnitResult],
    windows: &[crate::results::energy::EnergyWindow],
) -> Option<String> {
    let phases = phase_words(&summary.phases)?;
    let walls: Vec<f64> = units.iter().filter_map(|u| u.wall_ms).collect();
    let unit_windows: f64 = units
        .iter()
        .filter_map(|u| u.energy.as_ref())
        .flat_map(|e| e.windows.iter())
        .filter_map(|&w| windows.get(w))
        .map(|w| w.duration_s)
        .sum();
    let per_unit = if walls.is_empty() {
        String::new()
    } else {
        let sum: f64 = walls.iter().sum::<f64>() / 1000.0;
        format!(
            "; the {} units measured took {:.2} s each on average, {:.0} % of it in their energy windows",
            walls.len(),
            sum / walls.len() as f64,
            if sum > 0.0 { 100.0 * unit_windows / sum } else { 0.0 }
        )
    };
    let changeovers = changeover_words(units, windows).unwrap_or_default();
    Some(format!(
        "kc's own time in the isolated pass: {phases}{per_unit}{changeovers}"
    ))
}

/// Between one unit's energy windows and the next unit's, in the order measured: how many
/// changeovers, how many ticks of the energy counter they took (one each is the least: a
/// window begins at a tick after the unit's work began), and, where the results give them
/// (session 55 on), the medians of the units' CUPTI records before their timed launches
/// and of the wait for their last window's launches. None without two units with windows.
fn changeover_words(
    units: &[crate::results::UnitResult],
    windows: &[crate::results::energy::EnergyWindow],
) -> Option<String> {
    let period_ms = 1e3 * crate::results::energy::counter_period_s(windows)?;
    let spans: Vec<(i64, i64)> = units
        .iter()
        .filter_map(|u| {
            let ws = &u.energy.as_ref()?.windows;
            let first = windows.get(*ws.first()?)?;
            let last = windows.get(*ws.last()?)?;
            Some((first.start_unix_ms, last.end_unix_ms))
        })
        .collect();
    let ticks: Vec<i64> = spans
        .windows(2)
        .map(|p| ((p[1].0 - p[0].1) as f64 / period_ms).round().max(1.0) as i64)
        .collect();
    if ticks.is_empty() {
        return None;
    }
    let median_of = |f: fn(&crate::results::UnitSetupMs) -> Option<f64>| {
        let mut v: Vec<f64> = units
            .iter()
            .filter_map(|u| f(u.setup_ms.as_ref()?))
            .collect();
        crate::results::stats::median(&mut v)
    };
    let parts = match (median_of(|s| Some(s.record)), median_of(|s| s.drain)) {
        (Some(record), Some(drain)) => format!(
            ": a median {record:.0} ms of CUPTI records before a unit's timed launches and {drain:.0} ms waiting for its last window's launches (`setup_ms`)"
        ),
        _ => String::new(),
    };
    Some(format!(
        "; between the units' windows {} took {} ticks of the energy counter ({} at the least, one each){parts}",
        crate::words::count(ticks.len() as u64, "changeover"),
        ticks.iter().sum::<i64>(),
        ticks.len()
    ))
}
