//! Markdown (readable in a terminal and on GitHub) and CSV (one row per unit, loads in
//! pandas) renderings of a [`Report`]. Invariant: both show the report's numbers as they
//! are, rounded for display only; a missing figure prints as "-" (Markdown) or an empty
//! field (CSV).

use super::model::{Report, UnitRow};
use std::fmt::Write;

fn f(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}"))
        .unwrap_or_else(|| "-".into())
}

/// A figure with ± two standard uncertainties when it has one, in `unit`; "-" when the
/// figure is missing.
fn spread(v: Option<f64>, u: Option<f64>, digits: usize, unit: &str) -> String {
    let unit = if unit.is_empty() {
        String::new()
    } else {
        format!(" {unit}")
    };
    match (v, u) {
        (Some(v), Some(u)) => format!("{v:.digits$} ± {:.digits$}{unit}", 2.0 * u),
        (Some(v), None) => format!("{v:.digits$}{unit}"),
        _ => "-".into(),
    }
}

fn signed(v: Option<f64>) -> String {
    v.map(|x| format!("{x:+.1} %"))
        .unwrap_or_else(|| "-".into())
}

/// A table cell: whole (Markdown viewers wrap), with pipes escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Long statuses (failure messages, reasons) go to a numbered list under the table, so
/// the table stays readable and no reason is ever cut.
#[derive(Default)]
struct Footnotes(Vec<String>);

impl Footnotes {
    const INLINE: usize = 40;

    fn status(&mut self, s: &str) -> String {
        if s.chars().count() <= Self::INLINE {
            return cell(s);
        }
        let k = match self.0.iter().position(|n| n == s) {
            Some(k) => k,
            None => {
                self.0.push(s.to_string());
                self.0.len() - 1
            }
        };
        let head = s.split([':', '(']).next().unwrap_or(s).trim();
        format!("{} (note {})", cell(head), k + 1)
    }

    fn write(&mut self, o: &mut String) {
        if !self.0.is_empty() {
            let _ = writeln!(o);
            for (k, n) in self.0.drain(..).enumerate() {
                let _ = writeln!(o, "{}. {}", k + 1, n);
            }
        }
    }
}

fn unit_line(o: &mut String, u: &UnitRow, notes: &mut Footnotes) {
    let _ = writeln!(
        o,
        "| {} | {} | {} | {} | {} | {:.2} | {} | {} | {} | {} | {} |",
        u.id,
        u.tier,
        cell(&u.label),
        cell(&u.call),
        u.invocations,
        u.traced_mean_us,
        f(u.measured_mean_us, 2),
        signed(u.error_vs_traced_pct),
        f(u.predicted_us, 1),
        f(u.pct_of_predicted, 1),
        notes.status(&u.status)
    );
}

/// `1 pass`, `2 passes`.
fn passes(n: u32) -> String {
    if n == 1 {
        "1 pass".into()
    } else {
        format!("{n} passes")
    }
}

/// What the units alone read at their places, in one sentence beside the cache policy.
pub fn unit_values_sentence(v: &crate::results::UnitValuesGiven) -> String {
    let mib = |b: u64| format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64);
    if !v.at_steps {
        return "Each unit alone read what one pass of the model's steps left at its places \
                (each place's last writer; `--unit-values after-pass`), not always the values \
                its steps read in the model."
            .to_string();
    }
    let mut s = format!(
        "Each unit alone read the values its steps read in the model: {} that a later step \
         wrote again were given back to {} from {} of the model's steps",
        mib(v.bytes),
        crate::words::count(v.units, "unit"),
        passes(v.passes),
    );
    if v.shared_bytes > 0 {
        s += &format!(
            "; {} that two of a unit's steps read at different times held the earlier step's values",
            mib(v.shared_bytes)
        );
    }
    if v.units_left_out > 0 {
        s += &format!(
            "; **{} read what the pass left** (no room beside the image, or the run's notes say why)",
            crate::words::count(v.units_left_out, "unit")
        );
    }
    s + "."
}

pub fn markdown(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# kc report: {}\n", r.sources.join(", "));
    let _ = writeln!(
        o,
        "Device: {}. Cache policy of the isolated runs: {}.\n",
        r.device,
        r.cache.as_deref().unwrap_or("-")
    );
    if let Some(v) = &r.unit_values {
        let _ = writeln!(o, "{}\n", unit_values_sentence(v));
    }
    for u in &r.unfinished {
        let _ = writeln!(o, "**Not a whole run:** {u}.\n");
    }
    let _ = match (r.iterations_per_replay, &r.iterations_found_by) {
        (Some(n), Some(by)) => writeln!(
            o,
            "One replay runs every step of the trace: {} (found from {by}).\n",
            crate::words::count(n, "profiled model iteration")
        ),
        _ => writeln!(
            o,
            "One replay runs every step of the trace; how many model iterations that is was not \
             recorded (results of an older kc, or a trace whose iterations kc could not find).\n"
        ),
    };
    let _ = writeln!(o, "## Does the sum of isolated units predict the whole?\n");
    let _ = writeln!(
        o,
        "| | actual (graph replay) | predicted (Σ isolated × count) | error |"
    );
    let _ = writeln!(o, "|---|---|---|---|");
    let _ = writeln!(
        o,
        "| time per replay | {} us (std {}){} | {} us | {} |",
        f(r.time.actual_us, 1),
        f(r.time.actual_std_us, 1),
        r.caveat(),
        f(r.time.predicted_us, 1),
        signed(r.time.error_pct)
    );
    if let Some(n) = r.iterations_per_replay {
        let _ = writeln!(
            o,
            "| time per model iteration ({n} per replay) | {} us | {} us | |",
            f(r.per_iteration(r.time.actual_us), 1),
            f(r.per_iteration(r.time.predicted_us), 1),
        );
    }
    if let (Some(e), Some(n)) = (&r.energy, r.iterations_per_replay) {
        let _ = writeln!(
            o,
            "| energy per model iteration ({n} per replay) | {} J | {} J | |",
            f(r.per_iteration(Some(e.actual_j)), 4),
            f(r.per_iteration(e.predicted_j), 4),
        );
    }
    if let Some(e) = &r.energy {
        let cv = if e.windows > 1 {
            format!("cv {:.3}", e.actual_cv)
        } else {
            "1 window".to_string()
        };
        let _ = writeln!(
            o,
            "| energy per replay | {:.4} J ({cv}; {:.4} J above idle){} | {} J | {} |",
            e.actual_j,
            e.actual_above_idle_j,
            r.caveat(),
            f(e.predicted_j, 4),
            signed(e.error_pct)
        );
    }
    if !r.other_isolated.is_empty() {
        let _ = writeln!(
            o,
            "\nThe same units in isolation under other cache states:\n\n| cache | Σ isolated × count per replay | vs graph replay | energy |\n|---|---|---|---|"
        );
        for s in &r.other_isolated {
            let _ = writeln!(
                o,
                "| {} | {:.1} us | {} | {} |",
                s.cache,
                s.predicted_us,
                signed(s.error_pct),
                s.predicted_energy_j
                    .map_or("-".into(), |e| format!("{e:.4} J"))
            );
        }
    }
    prediction(&mut o, r);
    if let Some(m) = &r.model {
        let _ = writeln!(
            o,
            "\n## Against the model's own measurement\n\nPer model iteration ({} per replay, from {}); the model as `traces/capture.py` measured it ({}, entry `{}`). Percentages are against the model's {}.\n",
            m.iterations, m.iterations_from, m.reference.trace, m.reference.entry, m.basis
        );
        let _ = writeln!(o, "| | time per iteration | vs model | energy per iteration | vs model |\n|---|---|---|---|---|");
        for row in &m.rows {
            let _ = writeln!(
                o,
                "| {}{} | {} | {} | {} | {} |",
                row.what,
                if row.caveat.is_empty() {
                    String::new()
                } else {
                    format!(" {}", row.caveat)
                },
                spread(row.time_us, row.time_u_us, 1, "us"),
                signed(row.time_vs_model_pct),
                spread(row.energy_j, row.energy_u_j, 4, "J"),
                signed(row.energy_vs_model_pct)
            );
        }
        for (what, run) in [
            ("CUDA graph", &m.reference.cuda_graph),
            ("eager", &m.reference.eager),
        ] {
            if let (Some(t), Some(e)) = (&run.temperature, run.energy_j) {
                let _ = writeln!(
                    o,
                    "\nThe model's {what} energy is taken at kc's temperature: the median of {} of its {} back-to-back windows ({} measurement{}; {}-{} °C of {}-{} °C) against kc's graph windows at {:.0} °C, {e:.4} J per iteration{}.",
                    t.windows_used,
                    t.windows,
                    run.remeasured + 1,
                    if run.remeasured == 0 { "" } else { "s" },
                    t.model_used_c[0],
                    t.model_used_c[1],
                    t.model_all_c[0],
                    t.model_all_c[1],
                    t.kc_c,
                    run.energy_as_captured_j.map_or(String::new(), |c| format!(
                        " (the capture's own figure {c:.4} J, {:+.1} %)",
                        100.0 * (c - e) / e
                    ))
                );
            }
            if let Some(why) = &run.missing {
                let _ = writeln!(o, "\nThe model's {what} figures are missing: {why}");
            }
        }
    }
    if let Some(f) = &r.fidelity {
        let _ = writeln!(
            o,
            "\n## What the replay launched (CUPTI, one graph replay)\n\n| kernels launched | traced | matched by name | added by the replay | steps aligned | in-context kernels | traced (aligned steps) | step median \\|error\\| |\n|---|---|---|---|---|---|---|---|\n| {} | {} | {} | {} | {} of {} | {:.1} us | {:.1} us | {} |",
            f.kernels_launched,
            f.kernels_traced,
            f.kernels_name_matched,
            f.kernels_extra,
            f.steps_aligned,
            f.steps_with_kernels,
            f.in_context_kernels_us,
            f.aligned_traced_us,
            step_medians(f)
        );
        if let Some(ran) = f.copies_launched {
            let _ = writeln!(
                o,
                "\nCopies and fills (CUPTI's copy and fill activity and the driver's copy kernels, one per graph node): {ran} run, {} traced for the replayed steps{}.",
                f.copies_traced,
                if ran == f.copies_traced { "" } else { " ⚠" }
            );
        }
        if f.kernels_geometry_known > 0 {
            let _ = writeln!(
                o,
                "\nLaunch geometry: {} of the {} name-matched kernels whose traced grid and block the plan records ({:.1} %) launched with the same grid and block.",
                f.kernels_geometry_matched,
                f.kernels_geometry_known,
                100.0 * f.kernels_geometry_matched as f64 / f.kernels_geometry_known as f64
            );
        }
        if let (Some(m), Some(n), Some(basis)) = (
            r.time.unit_isolated_vs_in_context_median_abs_pct,
            r.time.units_isolated_vs_in_context,
            &r.time.isolated_vs_in_context_basis,
        ) {
            let _ = writeln!(
                o,
                "\nPer unit, alone against its kernels inside kc's graph ({basis}): median |error| {m:.1} % over {n} units (`isolated_vs_in_context_pct` per unit in units.csv)."
            );
        }
        if let (Some(c), Some(_)) = (
            &r.time.in_context_alignment_caveat,
            r.time.unit_isolated_vs_in_context_median_abs_pct,
        ) {
            let _ = writeln!(o, "\n⚠ Per unit against kc's graph: {c}.");
        }
        if let (Some(m), Some(n)) = (
            r.time.unit_round_vs_in_context_median_abs_pct,
            r.time.units_round_vs_in_context,
        ) {
            let runs = r
                .time
                .round_runs
                .as_deref()
                .map_or(String::new(), |w| format!(", {w}"));
            let _ = writeln!(
                o,
                "\nPer unit, in the round (every unit once, in model order, at its places{runs}; CUPTI) against its kernels inside kc's graph: median |error| {m:.1} % over {n} units (`round_vs_in_context_pct` per unit in units.csv). Alone, a unit repeats its own kernels back to back; in the round it follows its model neighbours, as in the graph."
            );
        }
        if let (Some(m), Some(n)) = (
            r.time.unit_after_lead_in_vs_in_context_median_abs_pct,
            r.time.units_after_lead_in_vs_in_context,
        ) {
            let _ = writeln!(
                o,
                "\nPer unit, after the model's steps leading up to each invocation (the units measured so, the units' producers; their own kernels in that launch, CUPTI, `--lead-in-kernels`) against its kernels inside kc's graph: median |error| {m:.1} % over {n} units (`after_lead_in_vs_in_context_pct` per unit in units.csv)."
            );
        }
        if let (Some(m), Some(n)) = (
            r.time.unit_in_model_cache_vs_in_context_median_abs_pct,
            r.time.units_in_model_cache_vs_in_context,
        ) {
            let cold = r
                .time
                .in_model_cache_cold_bytes_pct
                .map(|c| format!("; {c:.0} % of the bytes they read came from memory"))
                .unwrap_or_default();
            use crate::results::fidelity::CodeCache;
            let code = match (
                r.time.in_model_cache_code_evicted_pct,
                r.time.in_model_cache_code,
            ) {
                (Some(c), Some(CodeCache::Far)) => format!("; the unit's code evicted from the SMs and L2 before {c:.0} % of the invocations, those whose code the model last ran more than L2 of bytes before"),
                (Some(_), Some(CodeCache::Evicted)) => "; the unit's code evicted from the SMs and L2 before every invocation (`--model-cache-code evicted`)".into(),
                (Some(_), Some(CodeCache::Kept)) => "; the unit's code kept in its SMs between its repeats (`--model-cache-code kept`)".into(),
                (Some(c), None) => format!("; the unit's code evicted from the SMs and L2 before {c:.0} % of the invocations"),
                (None, _) => String::new(),
            };
            let leads = match (
                r.time.in_model_cache_lead_in_steps,
                r.time.in_model_cache_lead_in_reads_from_producers,
            ) {
                (Some(s), None) => format!("; then the model's steps leading up to it ({s} over the launches), their and its integer and boolean reads on their stand-ins (`--model-cache-lead-ins stand-ins`)"),
                (Some(s), Some(p)) => format!("; then the model's steps leading up to it ({s} over the launches), {p} invocations' integer and boolean reads on those steps' results, the others' on their stand-ins (where a lead-in writes integers in place)"),
                (None, _) => String::new(),
            };
            let held = match (
                r.time.unit_in_model_cache_image_held_median_abs_pct,
                r.time.units_in_model_cache_image_held,
            ) {
                (Some(h), Some(k)) => format!("; over the {k} whose operands the memory image holds all, {h:.1} % (where the others' operands lie in L2 the model's steps do not tell, and turning L2 over evicts them)"),
                (None, Some(0)) => "; none of them has all its operands in the memory image".into(),
                _ => String::new(),
            };
            let _ = writeln!(
                o,
                "\nPer unit, alone in the model's cache state (each invocation after L2 was turned over and the reads the model left in L2 were touched again{cold}{code}{leads}; its own kernels, CUPTI, `in_model_cache` in the results) against its kernels inside kc's graph: median |error| {m:.1} % over {n} units{held} (`in_model_cache_vs_in_context_pct` per unit in units.csv)."
            );
        }
        if !f.worst_units.is_empty() {
            let _ = writeln!(o, "\nUnits whose kernels ran furthest from the trace inside kc's graph:\n\n| unit | label | steps | traced us | in context us | median error |\n|---|---|---|---|---|---|");
            for w in f.worst_units.iter().take(5) {
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {:.1} | {:.1} | {:+.1} % |",
                    w.unit, w.label, w.steps, w.traced_us, w.in_context_us, w.median_error_pct
                );
            }
        }
        for x in [&f.cut, &f.first_mismatch].into_iter().flatten() {
            let _ = writeln!(o, "\n{x}");
        }
    }
    if let Some(s) = &r.graphs_side_by_side {
        side_by_side(&mut o, r, s);
    }
    if let Some(b) = &r.error_budget {
        let per_iter = |x: f64| {
            r.per_iteration(Some(x))
                .map_or("-".to_string(), |v| format!("{v:.1}"))
        };
        let _ = writeln!(
            o,
            "\n## Error budget: from the prediction to {}\n\nPer replay: Σ isolated × count {:.1} us → {} {:.1} us, a difference of {:+.1} us ({}), in measured parts:\n\n| part | us per replay | us per iteration | share of the difference |\n|---|---|---|---|",
            b.target,
            b.prediction_us,
            b.target,
            b.target_us,
            b.total_us,
            signed(pct(b.total_us, b.prediction_us))
        );
        for part in &b.parts {
            let _ = writeln!(
                o,
                "| {} | {:+.1} | {} | {} |",
                part.what,
                part.us,
                per_iter(part.us),
                part.pct_of_total
                    .map_or("-".to_string(), |x| format!("{x:.1} %"))
            );
        }
        let _ = writeln!(
            o,
            "| unexplained | {:+.1} | {} | |",
            b.unexplained_us,
            per_iter(b.unexplained_us)
        );
        for (what, j) in &b.energy_parts {
            let _ = writeln!(o, "\nEnergy, {what}: {j:+.4} J per replay.");
        }
    }
    if let Some(k) = &r.kinds_in_program {
        kinds_in_program(&mut o, k, r);
    }
    let _ = writeln!(
        o,
        "\nTraced time of the replayed steps: {} us (critical path {} us). Not executed: {}, {:.1} us traced, left out of both sides.\n",
        f(r.time.replayed_traced_us, 1),
        f(r.time.traced_critical_path_us, 1),
        crate::words::count(r.time.units_not_executed as u64, "unit"),
        // + 0.0 prints an empty sum (-0.0) as 0.0.
        r.time.not_executed_traced_us + 0.0
    );
    let _ = writeln!(o, "## By tier\n");
    let _ = writeln!(
        o,
        "| tier | unique units | invocations | traced us | predicted us | % of predicted |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|");
    for t in &r.tiers {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {:.1} | {} | {} |",
            t.tier,
            t.unique_units,
            t.invocations,
            t.traced_us,
            f(t.predicted_us, 1),
            f(t.pct_of_predicted, 1)
        );
    }
    if let Some(d) = &r.energy_detail {
        let _ = writeln!(o, "\n## Energy of the graph replay windows\n");
        let _ = writeln!(o, "| windows | duration | samples | total | per replay | average | peak | min | idle | above idle |");
        let _ = writeln!(o, "|---|---|---|---|---|---|---|---|---|---|");
        let _ = writeln!(
            o,
            "| {} | {:.2} s | {} | {:.2} J ({:.5} Wh) | {:.4} J | {:.1} W | {:.1} W | {:.1} W | {} W | {} J |",
            d.windows,
            d.duration_s,
            d.samples,
            d.total_j,
            d.total_wh,
            d.per_run_j,
            d.avg_power_w,
            d.peak_power_w,
            d.min_power_w,
            f(d.idle_power_w, 1),
            f(d.above_idle_j, 2)
        );
    }
    let header = "| unit | tier | label | call | invocations | traced us | isolated us | vs traced | predicted us | % of predicted | status |\n|---|---|---|---|---|---|---|---|---|---|---|";
    if !r.top_units.is_empty() {
        let _ = writeln!(
            o,
            "\n## Top units by contribution to the prediction\n\n{header}"
        );
        let mut notes = Footnotes::default();
        for u in &r.top_units {
            unit_line(&mut o, u, &mut notes);
        }
        notes.write(&mut o);
    }
    let _ = writeln!(o, "\n## Every unit: traced against replayed\n\n{header}");
    let mut notes = Footnotes::default();
    for u in &r.units {
        unit_line(&mut o, u, &mut notes);
    }
    notes.write(&mut o);
    if !r.notes.is_empty() {
        let _ = writeln!(o, "\n## Notes\n");
        for n in &r.notes {
            let _ = writeln!(o, "- {n}");
        }
    }
    o
}

pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x}")).unwrap_or_default()
}

pub fn csv(r: &Report) -> String {
    let mut o = String::from(
        "unit,tier,family,label,call,status,invocations,traced_mean_us,traced_total_us,measured_mean_us,measured_std_us,error_vs_traced_pct,predicted_us,pct_of_predicted,energy_per_invocation_mj,predicted_energy_j,in_context_mean_us,isolated_vs_in_context_pct,round_vs_in_context_pct,after_lead_in_vs_in_context_pct,in_model_cache_vs_in_context_pct\n",
    );
    for u in &r.units {
        let _ = writeln!(
            o,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            u.id,
            csv_field(&u.tier),
            csv_field(&u.family),
            csv_field(&u.label),
            csv_field(&u.call),
            csv_field(&u.status),
            u.invocations,
            u.traced_mean_us,
            u.traced_total_us,
            opt(u.measured_mean_us),
            opt(u.measured_std_us),
            opt(u.error_vs_traced_pct),
            opt(u.predicted_us),
            opt(u.pct_of_predicted),
            opt(u.energy_per_invocation_mj),
            opt(u.predicted_energy_j),
            opt(u.in_context_mean_us),
            opt(u.isolated_vs_in_context_pct),
            opt(u.round_vs_in_context_pct),
            opt(u.after_lead_in_vs_in_context_pct),
            opt(u.in_model_cache_vs_in_context_pct)
        );
    }
    o
}

/// `a` as a percentage of `b`, when `b` is not zero.
fn pct(a: f64, b: f64) -> Option<f64> {
    (b != 0.0).then(|| 100.0 * a / b)
}

/// The prediction from parts: the plain sum, each measured term with its share of the
/// gap to the target, the prediction ± two standard uncertainties, and the target.
fn prediction(o: &mut String, r: &Report) {
    let Some(p) = &r.prediction else {
        return;
    };
    let n = r.iterations_per_replay.filter(|&n| n > 0).unwrap_or(1);
    let per = f64::from(n);
    let basis = if n > 1 {
        format!("per model iteration ({n} per replay)")
    } else {
        "per replay".to_string()
    };
    // The prediction's energy bar also holds the price of the terms' time, where it does.
    let pricing = match (p.energy_pricing_u_j, p.predicted_energy_j) {
        (Some(u), Some(e)) if e != 0.0 => format!(
            "; the prediction's energy ± also holds ± {:.4} J ({:.1} %) for the price of the time the terms add, which kc takes at the idle power and which the units' own power bounds (a rectangular spread between the two)",
            2.0 * u / per,
            200.0 * u / e.abs()
        ),
        _ => String::new(),
    };
    // What else the time bar holds (a standard uncertainty `u` of two pricings, a
    // rectangular spread between them), where it does.
    let time_bar_holds = |u: Option<f64>, what: &str| {
        match u {
        Some(u) if p.predicted_us != 0.0 => format!(
            "; the prediction's time ± also holds ± {:.1} us ({:.1} %) for {what} (a rectangular spread between the two)",
            2.0 * u / per,
            200.0 * u / p.predicted_us.abs()
        ),
        _ => String::new(),
    }
    };
    // How the round's cost is shared out.
    let weighting = time_bar_holds(
        p.weighting_u_us,
        "how the round's cost is shared out, by each unit's invocations (the prediction) or per switch as the round's own timing gave it",
    );
    // The clock the cap holds units at in a program at the cap.
    let cap_clock = time_bar_holds(
        p.cap_clock_u_us,
        "the clock the power cap holds the units that drew past it alone at in the model, which asks for more than the limit: their time taken halfway between their duty cycle's and theirs alone at the cap",
    );
    // Units whose record alone at the round's step ran over their timing and the round.
    let at_step = time_bar_holds(
        p.at_step_u_us,
        &format!(
            "units whose kernels alone at the step the round ran them took over {:.0} % longer than both their timed launches alone and their kernels in the round, where over all their steps they did not (the step runs first in the unit's launch alone, and on three models recorded from a launch starting elsewhere such records were the launch's first place, not the step's data; session 51): the round's kernels set against that step (the prediction) or against all their steps",
            100.0 * super::predict::SLOW_ALONE_RECORD
        ),
    );
    // Units measured over one window: the spread their energy was given.
    let one_window = match &p.one_window {
        Some(w) => match w.pooled_rel_sd {
            Some(sd) => format!(
                "; {} units measured over one energy window ({:.1} % of the plain energy){} are given the relative spread of one window pooled over the {} units measured over two or more ({:.1} %{})",
                w.units,
                100.0 * w.energy_j / p.plain_energy_j.unwrap_or(0.0).max(1e-30),
                match w.copies {
                    0 => String::new(),
                    1 => ", and 1 restoring copy from the snapshot so measured and taken off,"
                        .to_string(),
                    k => format!(
                        ", and {k} restoring copies from the snapshot so measured and taken off,"
                    ),
                },
                w.pooled_from,
                100.0 * sd,
                pooled_words(w.pooled_from, w.pooled_dof, w.coverage)
            ),
            None => format!(
                "; {} units measured over one energy window and none over two: the plain energy's spread is unknown",
                w.units
            ),
        },
        None => String::new(),
    };
    let _ = writeln!(
        o,
        "\n## Prediction from parts\n\nThe plain Σ isolated × count (the hypothesis) and kc's prediction from parts: the isolated units plus terms kc measured in the same run on the same GPU, none from the model's program as a whole. {}. Figures {basis}; ± is two standard uncertainties from the spread of the repeats (none where a figure had one window){one_window}{weighting}{at_step}{cap_clock}{pricing}.{}\n",
        upper_first(&p.coverage),
        r.caveat()
    );
    let _ = writeln!(
        o,
        "| | time | share of the gap | energy | vs target (time / energy) |\n|---|---|---|---|---|"
    );
    // Per iteration (or replay), with ± two standard uncertainties where there is one.
    let t = |v: f64, u: Option<f64>| spread(Some(v / per), u.map(|u| u / per), 1, "us");
    let e = |v: Option<f64>, u: Option<f64>| spread(v.map(|v| v / per), u.map(|u| u / per), 4, "J");
    let _ = writeln!(
        o,
        "| Σ isolated × count (plain) | {} | | {} | {} / {} |",
        t(p.plain_us, Some(p.plain_u_us)),
        e(p.plain_energy_j, p.plain_energy_u_j),
        signed(p.plain_error_pct),
        signed(p.plain_energy_error_pct)
    );
    for term in &p.terms {
        // Signed: a term adds. One without its own spread (the round's slower kernels: the
        // round's spread is carried by its gap term) prints without a ±, and one that adds
        // no time (the power limit's, on energy alone) prints none.
        let time = if term.us == 0.0 && term.u_us == 0.0 {
            "-".to_string()
        } else {
            format!(
                "{}{}",
                if term.us >= 0.0 { "+" } else { "" },
                t(term.us, (term.u_us > 0.0).then_some(term.u_us))
            )
        };
        let _ = writeln!(
            o,
            "| + {} | {time} | {} | {} | |",
            cell(&term.what),
            signed(term.pct_of_gap),
            term.energy_j
                .map_or("-".into(), |j| format!("{:+.4} J", j / per)),
        );
    }
    // Without measured terms the prediction is the plain sum: it is not shown twice.
    if p.terms_measured {
        let _ = writeln!(
            o,
            "| **prediction from parts** | **{}** | | **{}** | **{} / {}** |",
            t(p.predicted_us, Some(p.predicted_u_us)),
            e(p.predicted_energy_j, p.predicted_energy_u_j),
            signed(p.error_pct),
            signed(p.energy_error_pct)
        );
    }
    if let Some(tt) = p.target_us {
        let _ = writeln!(
            o,
            "| target: {} | {} | | {} | |",
            p.target,
            t(tt, p.target_u_us),
            e(p.target_energy_j, p.target_energy_u_j),
        );
    }
    if !p.terms_measured {
        return;
    }
    let v = prediction_notes(p);
    if !v.is_empty() {
        let _ = writeln!(o, "\n{}.", v.join("; "));
    }
}

/// "with the method's spread over 80 other models' answers (…), ± 0.69 % in time and ± 2.05 %
/// in energy as one standard deviation, the target's time lies within ±2 of the combined
/// uncertainty, its energy within".
fn method_spread_words(m: &super::method_spread::MethodSpread) -> String {
    let part = |sd: Option<f64>, n: usize, what: &str| match sd {
        Some(s) => format!("± {s:.2} % in {what} (over {n})"),
        None => format!(
            "none in {what} ({n} answers, fewer than {})",
            super::method_spread::MIN_ANSWERS
        ),
    };
    let judged = |o: Option<bool>, what: &str| match o {
        Some(true) => format!("the target's {what} lies outside"),
        Some(false) => format!("the target's {what} lies within"),
        None => String::new(),
    };
    let j: Vec<String> = [
        judged(m.time_outside, "time"),
        judged(m.energy_outside, "energy"),
    ]
    .into_iter()
    .filter(|s| !s.is_empty())
    .collect();
    format!(
        "the method's own spread over other models' answers ({}; this model's {} left out), 1.4826 × their median |error| as one standard deviation: {}, {}{}",
        m.source,
        m.left_out,
        part(m.time_sd_pct, m.time_answers, "time"),
        part(m.energy_sd_pct, m.energy_answers, "energy"),
        if j.is_empty() {
            String::new()
        } else {
            format!("; with it beside the bar, {}", j.join(", "))
        }
    )
}

/// The sentences under the prediction's table: where the target lies against the error bar,
/// the caveats, and the temperatures and clocks the energy windows ran at.
pub(super) fn prediction_notes(p: &super::predict::Prediction) -> Vec<String> {
    let verdict = |outside: Option<bool>, what: &str| match outside {
        Some(true) => format!("the target's {what} lies outside the prediction's error bar"),
        Some(false) => format!("the target's {what} lies within the prediction's error bar"),
        None => String::new(),
    };
    let mut v: Vec<String> = [
        verdict(p.time_outside, "time"),
        verdict(p.energy_outside, "energy"),
    ]
    .into_iter()
    .filter(|s| !s.is_empty())
    .collect();
    if let Some(m) = &p.method_spread {
        v.push(method_spread_words(m));
    }
    if let Some(c) = &p.energy_caveat {
        v.push(c.clone());
    }
    if let Some(c) = &p.values_caveat {
        v.insert(0, format!("⚠ {c}"));
    }
    if let Some(c) = &p.kernels_caveat {
        v.insert(0, format!("⚠ {c}"));
    }
    if let Some(c) = &p.side_by_side_caveat {
        v.insert(0, format!("⚠ {c}"));
    }
    if let Some(c) = &p.round_values_caveat {
        v.insert(0, format!("⚠ {c}"));
    }
    if let Some(c) = &p.target_measurements_caveat {
        v.insert(0, format!("⚠ {c}"));
    }
    if let Some(c) = &p.replay_caveat {
        v.insert(0, format!("⚠ {c}"));
    }
    if let Some(c) = &p.target_caveat {
        v.insert(0, format!("⚠ {c}"));
    }
    if let Some([lo, hi]) = p.units_temperature_c {
        v.push(format!(
            "the units' energy windows ran at {lo}-{hi} °C{}",
            p.graph_temperature_c
                .map_or(String::new(), |[a, b]| format!(
                    ", kc's graph's at {a}-{b} °C"
                ))
        ));
    }
    if let Some([lo, hi]) = p.units_sm_clock_mhz {
        v.push(format!(
            "the units' SM clock {lo:.0}-{hi:.0} MHz (window medians){}",
            p.graph_sm_clock_mhz.map_or(String::new(), |[a, b]| format!(
                ", kc's graph's {a:.0}-{b:.0} MHz"
            ))
        ));
    }
    if let Some(d) = &p.duty_energy {
        v.push(d.clone());
    }
    if let Some(d) = &p.duty_energy_asked {
        v.push(d.clone());
    }
    if let Some(r) = &p.units_restored {
        v.push(r.clone());
    }
    if let Some(r) = &p.units_restored_asked {
        v.push(r.clone());
    }
    if let Some(r) = &p.units_restored_each {
        v.push(r.clone());
    }
    if let Some(r) = &p.round_units_by_values {
        v.push(r.clone());
    }
    if let Some(r) = &p.round_units_by_first_cycle {
        v.push(r.clone());
    }
    if let Some(l) = &p.lead_in_units {
        v.push(lead_in_units_line(l));
    }
    if !p.clock_events.is_empty() {
        v.push(format!("clock held down by {}", p.clock_events.join(", ")));
    }
    v
}

/// The section on what each kind of unit costs in the model's program (a diagnostic):
/// one table in time, one in energy.
fn kinds_in_program(o: &mut String, k: &crate::report::kinds::KindsInProgram, r: &Report) {
    let j = |v: Option<f64>| f(v, 4);
    let graph = match (r.time.actual_us, r.energy.as_ref().map(|e| e.actual_j)) {
        (Some(t), e) => format!("; kc's graph {t:.1} us and {} J", j(e)),
        _ => String::new(),
    };
    let temps = k
        .whole_temperature_c
        .map_or(String::new(), |[a, b]| format!(", at {a:.1} and {b:.1} °C"));
    let _ = writeln!(
        o,
        "\n## Each kind of unit in the model's program (--kinds-left-out, a diagnostic)\n\nThe program of every unit measured ({} steps of one replay, in the plan's order on one stream, from the model's values) took {:.1} us and {} J per launch at the start of the diagnostic and {:.1} us and {} J at its end{temps}{graph}. For each kind, its cost in the program is the whole less the program without it (which also takes from its neighbours what it left them in L2), and a second run's cost the program with each of its steps run twice in its place less the whole (a kernel right after itself, as alone, among the model's other kernels); the whole is taken at each program's turn, between its two measurements. Alone is Σ × invocations of its units alone, the plain sum's figures. Per replay; ± is two standard errors.{}\n",
        k.steps,
        k.whole_first_us,
        j(k.whole_first_j),
        k.whole_last_us,
        j(k.whole_last_j),
        match k.capped_windows {
            0 => String::new(),
            n => format!(" {n} of the programs' windows were held down by the power cap."),
        },
    );
    let _ = writeln!(
        o,
        "| kind | units | invocations | alone us | in the program us | alone vs in the program | a second run us | alone vs a second run |\n|---|---|---|---|---|---|---|---|"
    );
    for c in &k.kinds {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {:.1} | {} | {} | {} | {} |",
            cell(&c.kind),
            c.units,
            c.invocations,
            c.alone_us,
            spread(Some(c.in_program_us), Some(c.in_program_sem_us), 1, ""),
            signed(c.alone_vs_program_time_pct),
            spread(c.second_run_us, c.second_run_sem_us, 1, ""),
            signed(c.alone_vs_second_time_pct),
        );
    }
    let once: Vec<String> = k
        .kinds
        .iter()
        .filter(|c| c.doubled_once > 0)
        .map(|c| format!("{} of {}", c.doubled_once, cell(&c.kind)))
        .collect();
    let _ = writeln!(
        o,
        "| the kinds together beyond their costs one at a time | | | | {:+.1} | | | |\n| **every unit** | | | {:.1} | {:.1} | {} |{}",
        k.interaction_us,
        k.alone_us,
        k.whole_us,
        signed(k.alone_vs_whole_time_pct),
        second_runs_cells(k.second_runs_us.map(|s| format!("{s:.1}")), k.alone_vs_second_runs_time_pct),
    );
    let _ = writeln!(
        o,
        "\n| kind | alone J | in the program J | alone vs in the program | a second run J | alone vs a second run |\n|---|---|---|---|---|---|"
    );
    for c in &k.kinds {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} |",
            cell(&c.kind),
            j(c.alone_j),
            spread(c.in_program_j, c.in_program_sem_j, 4, ""),
            signed(c.alone_vs_program_energy_pct),
            spread(c.second_run_j, c.second_run_sem_j, 4, ""),
            signed(c.alone_vs_second_energy_pct),
        );
    }
    let _ = writeln!(
        o,
        "| the kinds together beyond their costs one at a time | | {} | | | |\n| **every unit** | {} | {} | {} |{}",
        k.interaction_j.map_or("-".to_string(), |x| format!("{x:+.4}")),
        j(k.alone_j),
        j(k.whole_j),
        signed(k.alone_vs_whole_energy_pct),
        second_runs_cells(k.second_runs_j.map(|s| format!("{s:.4}")), k.alone_vs_second_runs_energy_pct),
    );
    if let (Some(t), e) = (
        k.second_runs_vs_whole_time_pct,
        k.second_runs_vs_whole_energy_pct,
    ) {
        let _ = writeln!(
            o,
            "\nThe kinds' second runs together against the whole program: {t:+.1} % in time{}. Where they sum to the whole, a kernel's second run costs what the program draws for it; where they do not, doubling a kind changed what the rest of the program draws, and its second run is not its cost alone.",
            e.map_or(String::new(), |e| format!(", {e:+.1} % in energy"))
        );
    }
    if !once.is_empty() {
        let _ = writeln!(
            o,
            "\nSteps that write integer or boolean data in place or lead to indices another step reads ran once in every program, their kind's left out or doubled too (a second run, or none, would leave indices the model never held), so neither of their kind's costs holds them: {}.",
            once.join(", ")
        );
    }
}

/// The last two cells of the kinds' "every unit" row: the second runs' sum and Σ alone
/// against it, or two empty cells where the results hold no doubled programs.
fn second_runs_cells(sum: Option<String>, alone_vs: Option<f64>) -> String {
    match sum {
        Some(s) => format!(" {s} | {} |", signed(alone_vs)),
        None => " | |".to_string(),
    }
}

/// Under this many units measured over two windows or more, the pooled spread of one
/// window is itself uncertain by a third or more (its degrees of freedom are about the
/// units' count), and the report says so beside it.
const FEW_POOLED: usize = 5;

/// The words beside a pooled spread of one window drawn from `pooled_from` units, at
/// `dof` effective degrees of freedom, widened by `coverage` in the uncertainty.
fn pooled_words(pooled_from: usize, dof: Option<f64>, coverage: Option<f64>) -> String {
    let few = if pooled_from < FEW_POOLED {
        ", from few units: that spread is itself uncertain"
    } else {
        ""
    };
    let widened = match (dof, coverage) {
        (Some(d), Some(k)) if k >= 1.005 => format!(
            "; the uncertainty takes it × {k:.2}, Student's t at its {d:.1} degrees of freedom over the normal's"
        ),
        _ => String::new(),
    };
    format!("{few}{widened}")
}

/// The sentence on the units measured after their lead-ins: their sums beside alone, and
/// whether the prediction took their energy (the producers' term in the table).
fn lead_in_units_line(l: &crate::report::predict::LeadInUnits) -> String {
    let pct = |a: f64, b: f64| 100.0 * (a / b.max(1e-30) - 1.0);
    let energy = if l.alone_j > 0.0 {
        format!(
            "; in energy {:.4} J per replay where alone they gave {:.4} J ({:+.1} %){}{}{}: {}",
            l.led_j,
            l.alone_j,
            pct(l.led_j, l.alone_j),
            match (l.one_window, l.one_window_rel_sd) {
                (0, _) => String::new(),
                (k, Some(sd)) => format!(
                    ", {} with each launch measured over one energy window (their share asked no more), each launch given the pooled spread of one window ({:.1} %{})",
                    crate::words::count(k as u64, "unit"),
                    100.0 * sd,
                    match l.one_window_coverage {
                        Some(c) if c >= 1.005 => format!(", × {c:.2} in the uncertainty"),
                        _ => String::new(),
                    }
                ),
                (k, None) => format!(
                    ", {} with each launch measured over one energy window and no unit alone over two: their spread, and the prediction's in energy, is unknown",
                    crate::words::count(k as u64, "unit")
                ),
            },
            match l.at_duty {
                0 => String::new(),
                k => format!(
                    ", {} of them at a duty cycle, as alone (held down by the power cap back to back)",
                    crate::words::count(k as u64, "unit")
                ),
            },
            match l.capped {
                0 => String::new(),
                k => format!(
                    ", {} held down by the power cap left out (their energy alone stands)",
                    crate::words::count(k as u64, "unit")
                ),
            },
            if l.taken {
                "the prediction takes their energy in place of alone (the units' producers, in the table); their time it takes from the round"
            } else {
                "the prediction does not take them (no terms priced in energy)"
            }
        )
    } else {
        ": none measured in energy; the prediction does not take them".to_string()
    };
    let kernels = l.kernels.as_ref().map_or(String::new(), |k| {
        format!(
            "; recorded with CUPTI (--lead-in-kernels), {} of them: {:.1} us per replay of their launches' difference where alone they gave {:.1} us ({:+.1} %), of which their own kernels {:.1} us where alone {:.1} us ({:+.1} %); the rest is what they did to the launch around them, the lead-ins' kernels {:+.1} us and the gaps between kernels {:+.1} us against the lead-ins alone (the gaps as the recorded launches ran, not the timed ones)",
            crate::words::count(k.units as u64, "unit"),
            k.led_us,
            k.alone_us,
            pct(k.led_us, k.alone_us),
            k.unit_kernels_us,
            k.alone_kernels_us,
            pct(k.unit_kernels_us, k.alone_kernels_us),
            k.lead_ins_kernels_beyond_alone_us,
            k.gaps_beyond_alone_us,
        )
    });
    format!(
        "{} measured after the model's steps leading up to each invocation, less those steps alone: {:.1} us per replay where alone they gave {:.1} us ({:+.1} %){energy}{kernels}",
        crate::words::count(l.units as u64, "unit"),
        l.led_us,
        l.alone_us,
        pct(l.led_us, l.alone_us),
    )
}

/// `s` with its first letter in upper case.
fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The steps' median |error| in context against the trace, and beside it the median
/// weighted by traced time: "3.8 % (1.3 % by traced time)".
pub(crate) fn step_medians(f: &crate::results::fidelity::Fidelity) -> String {
    let plain = match (
        f.step_median_abs_error_pct,
        f.step_time_weighted_median_abs_error_pct,
    ) {
        (Some(m), Some(w)) => format!("{m:.1} % ({w:.1} % by traced time)"),
        (Some(m), None) => format!("{m:.1} %"),
        _ => return "-".to_string(),
    };
    // How many steps the trace itself ran back to back, as the graph runs them: in an
    // eager, host-bound trace almost none, and the others' traced durations started from
    // an idle GPU.
    match (
        f.steps_back_to_back,
        f.step_back_to_back_median_abs_error_pct,
    ) {
        (Some(n), Some(b)) => format!(
            "{plain}; {b:.1} % over the {n} of {} steps the trace ran back to back",
            f.steps_aligned
        ),
        (Some(_), None) => {
            format!(
                "{plain}; none of its {} steps ran back to back in the trace",
                f.steps_aligned
            )
        }
        // Results from before kc counted them.
        (None, _) => plain,
    }
}

/// The section that sets kc's graph beside the model's own, kernel by kernel.
fn side_by_side(o: &mut String, r: &Report, s: &super::side_by_side::GraphsSideBySide) {
    let _ = writeln!(
        o,
        "\n## kc's graph beside the model's, kernel by kernel\n\nPer model iteration: the model's CUDA graph as its profiled replays ran it ({} of {} replays, medians), kc's graph as CUPTI recorded one replay of it ({} iterations). {}\n\n| | kernels | kernel time | copies and fills | their time |\n|---|---|---|---|---|\n| model's graph | {} | {:.1} us | {} | {:.1} us |\n| kc's graph | {:.1} | {:.1} us | {} | {:.1} us |\n| matched (same kernel, same place) | {:.1} | model {:.1} us, kc {:.1} us ({:+.1} us) | | |",
        s.model_replays_used,
        s.model_replays,
        s.kc_iterations,
        if s.kc_copies.is_some() {
            "kc's copies and fills as its verification recorded them (copy and fill activity and the driver's copy kernels)."
        } else {
            "kc's copies and fills only where its graph ran them as the driver's kernels (results before session 48 record no other)."
        },
        s.model_kernels,
        s.model_kernel_us,
        s.model_copies,
        s.model_copy_us,
        s.kc_kernels,
        s.kc_kernel_us,
        s.kc_copies.map_or_else(
            || format!("{:.1} (driver kernels)", s.kc_driver_copies),
            |n| format!("{n:.1}")
        ),
        s.kc_copy_us.unwrap_or(s.kc_driver_copy_us),
        s.matched,
        s.matched_model_us,
        s.matched_kc_us,
        s.matched_kc_us - s.matched_model_us,
    );
    if let Some(why) = &s.not_aligned {
        let _ = writeln!(o, "\n⚠ {why}.");
        return;
    }
    let groups = |o: &mut String, title: &str, g: &[super::side_by_side::KernelGroup]| {
        if g.is_empty() {
            return;
        }
        let _ = writeln!(
            o,
            "\n{title}\n\n| kernel | grid | per iteration | us |\n|---|---|---|---|"
        );
        for k in g {
            let _ = writeln!(
                o,
                "| {} | {}×{}×{} | {:.1} | {:.1} |",
                k.kernel, k.grid[0], k.grid[1], k.grid[2], k.per_iteration, k.us
            );
        }
    };
    if let (Some(m), Some(n)) = (
        r.time.unit_isolated_vs_model_graph_median_abs_pct,
        r.time.units_isolated_vs_model_graph,
    ) {
        let _ = writeln!(
            o,
            "\nPer unit, alone (its kernels, CUPTI) against its kernels in the model's own graph: median |error| {m:.1} % over {n} units{} (`isolated_vs_model_graph_pct` per unit in report.json).",
            match (
                r.time.unit_kc_graph_vs_model_graph_median_abs_pct,
                r.time.units_kc_graph_vs_model_graph
            ) {
                (Some(k), Some(kn)) =>
                    format!("; its kernels in kc's graph against the same, {k:.1} % over {kn}"),
                _ => String::new(),
            }
        );
    }
    groups(o, "Kernels only the model's graph ran:", &s.model_only);
    groups(o, "Kernels only kc's graph ran:", &s.kc_only);
    if !s.furthest_units.is_empty() {
        let _ = writeln!(o, "\nUnits whose matched kernels ran furthest apart ({:.1} of the model's kernels an iteration in a traced unit):\n\n| unit | label | kernels per iteration | model us | kc us | kc − model |\n|---|---|---|---|---|---|", s.model_kernels_in_units);
        for u in &s.furthest_units {
            let _ = writeln!(
                o,
                "| {} | {} | {:.1} | {:.1} | {:.1} | {:+.1} us |",
                u.unit,
                u.label,
                u.kernels_per_iteration,
                u.model_us,
                u.kc_us,
                u.kc_us - u.model_us
            );
        }
    }
    if !s.furthest_kernels.is_empty() {
        let _ = writeln!(o, "\nMatched kernels furthest apart:\n\n| kernel | grid | per iteration | model us | kc us | kc − model |\n|---|---|---|---|---|---|");
        for k in &s.furthest_kernels {
            let _ = writeln!(
                o,
                "| {} | {}×{}×{} | {:.1} | {:.1} | {:.1} | {:+.1} us |",
                k.kernel,
                k.grid[0],
                k.grid[1],
                k.grid[2],
                k.per_iteration,
                k.model_us,
                k.kc_us,
                k.kc_us - k.model_us
            );
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_spread_pooled_from_few_units_is_said_to_be_uncertain_and_how_it_is_widened() {
        // Swin-T's step (session 38) pooled its one-window spread from 2 units.
        assert!(pooled_words(2, None, None).contains("itself uncertain"));
        assert!(pooled_words(FEW_POOLED - 1, None, None).contains("from few units"));
        assert_eq!(pooled_words(FEW_POOLED, None, None), "");
        assert_eq!(
            pooled_words(2, Some(3.04), Some(1.6)),
            ", from few units: that spread is itself uncertain; the uncertainty takes it × 1.60, Student's t at its 3.0 degrees of freedom over the normal's"
        );
        // Widened by under half a percent: not said.
        assert_eq!(pooled_words(13, Some(900.0), Some(1.001)), "");
    }

    #[test]
    fn where_a_runs_own_time_went_is_said_from_its_phases() {
        let phase = |phase: &str, seconds: f64| crate::results::PassPhase {
            phase: phase.into(),
            seconds,
        };
        let phases = vec![
            phase("opening the GPU and its memory", 1.25),
            phase("every unit once", 0.5),
            phase("the capture", 2.0),
        ];
        assert_eq!(
            crate::report::model::run_phase_words("kc's graph run", &phases).unwrap(),
            "kc's own time in kc's graph run: 3.8 s (opening the GPU and its memory 1.2 s, every unit once 0.5 s, the capture 2.0 s)"
        );
        // Results of kc before session 38 have no run phases: nothing said.
        assert_eq!(
            crate::report::model::run_phase_words("kc's graph run", &[]),
            None
        );
    }

    #[test]
    fn an_isolated_passs_changeovers_are_counted_in_ticks_of_the_energy_counter() {
        let summary = crate::results::IsolatedSummary {
            phases: vec![crate::results::PassPhase {
                phase: "the units alone".into(),
                seconds: 1.0,
            }],
            ..Default::default()
        };
        // Three units, each one window of one tick (100 ms); the second starts the tick
        // after the first's end, the third two ticks after the second's.
        let window = |start: i64| crate::results::energy::EnergyWindow {
            start_unix_ms: start,
            end_unix_ms: start + 100,
            duration_s: 0.1,
            ticks: 2,
            ..Default::default()
        };
        let windows = [window(0), window(200), window(500)];
        let unit = |i: usize, record, drain| crate::results::UnitResult {
            wall_ms: Some(300.0),
            energy: Some(crate::results::EnergySummary {
                windows: vec![i],
                ..Default::default()
            }),
            setup_ms: Some(crate::results::UnitSetupMs {
                record,
                drain,
                ..Default::default()
            }),
            ..Default::default()
        };
        let units = [
            unit(0, 30.0, Some(10.0)),
            unit(1, 40.0, Some(20.0)),
            unit(2, 50.0, Some(30.0)),
        ];
        let w = crate::report::model::pass_time_words(&summary, &units, &windows).unwrap();
        assert!(
            w.ends_with("; between the units' windows 2 changeovers took 3 ticks of the energy counter (2 at the least, one each): a median 40 ms of CUPTI records before a unit's timed launches and 20 ms waiting for its last window's launches (`setup_ms`)"),
            "{w}"
        );
        // Results before session 55 give no drain: the ticks alone.
        let older: Vec<_> = units
            .iter()
            .cloned()
            .map(|mut u| {
                u.setup_ms.as_mut().unwrap().drain = None;
                u
            })
            .collect();
        let w = crate::report::model::pass_time_words(&summary, &older, &windows).unwrap();
        assert!(
            w.ends_with(
                "2 changeovers took 3 ticks of the energy counter (2 at the least, one each)"
            ),
            "{w}"
        );
    }

    #[test]
    fn where_an_isolated_passs_time_went_is_said_from_its_phases() {
        let phase = |phase: &str, seconds| crate::results::PassPhase {
            phase: phase.into(),
            seconds,
        };
        let summary = crate::results::IsolatedSummary {
            phases: vec![
                phase("the memory image and its steps", 1.25),
                phase("the units alone", 40.0),
                phase("the round and the graph launch", 2.0),
            ],
            ..Default::default()
        };
        // Two units, 0.5 and 0.3 s, their figures' windows 0.2 and 0.12 s.
        let window = |d| crate::results::energy::EnergyWindow {
            duration_s: d,
            ..Default::default()
        };
        let unit = |wall_ms, windows: Vec<usize>| crate::results::UnitResult {
            wall_ms: Some(wall_ms),
            energy: Some(crate::results::EnergySummary {
                windows,
                ..Default::default()
            }),
            ..Default::default()
        };
        let units = [unit(500.0, vec![0, 1]), unit(300.0, vec![2])];
        let windows = [window(0.1), window(0.1), window(0.12)];
        let w = crate::report::model::pass_time_words(&summary, &units, &windows).unwrap();
        assert_eq!(
            w,
            "kc's own time in the isolated pass: 43.2 s (the memory image and its steps 1.2 s, the units alone 40.0 s, the round and the graph launch 2.0 s); the 2 units measured took 0.40 s each on average, 40 % of it in their energy windows"
        );
        // Results of kc before session 31 have no phases: nothing said.
        assert_eq!(
            crate::report::model::pass_time_words(
                &crate::results::IsolatedSummary::default(),
                &units,
                &windows
            ),
            None
        );
        // Said in the report's notes.
        let iso = crate::results::Results {
            mode: "isolated".into(),
            isolated: Some(summary),
            units: units.to_vec(),
            windows: windows.to_vec(),
            ..Default::default()
        };
        let r = crate::report::model::build(None, Some(&iso));
        assert!(r.notes.iter().any(|n| n == &w), "{:?}", r.notes);
    }

    use super::*;

    #[test]
    fn the_kinds_section_gives_each_kind_in_time_and_energy_and_the_whole() {
        use crate::report::kinds::{KindCost, KindsInProgram};
        let mut r = Report {
            kinds_in_program: Some(KindsInProgram {
                steps: 12,
                whole_first_us: 1000.0,
                whole_last_us: 1010.0,
                whole_first_j: Some(10.0),
                whole_last_j: Some(10.2),
                whole_us: 1005.0,
                whole_j: Some(10.1),
                alone_us: 1100.0,
                alone_j: Some(11.11),
                alone_vs_whole_time_pct: Some(100.0 * (1100.0 / 1005.0 - 1.0)),
                alone_vs_whole_energy_pct: Some(100.0 * (11.11 / 10.1 - 1.0)),
                kinds: vec![KindCost {
                    kind: "aten::a|b".into(),
                    units: 2,
                    invocations: 6,
                    alone_us: 600.0,
                    alone_j: Some(6.6),
                    in_program_us: 500.0,
                    in_program_sem_us: 1.0,
                    in_program_j: Some(5.5),
                    in_program_sem_j: Some(0.05),
                    second_run_us: Some(600.0),
                    second_run_sem_us: Some(2.0),
                    second_run_j: Some(6.0),
                    second_run_sem_j: Some(0.1),
                    alone_vs_program_time_pct: Some(20.0),
                    alone_vs_program_energy_pct: Some(20.0),
                    alone_vs_second_time_pct: Some(0.0),
                    alone_vs_second_energy_pct: Some(10.0),
                    doubled_once: 3,
                }],
                interaction_us: 505.0,
                interaction_j: Some(4.6),
                ..Default::default()
            }),
            ..Default::default()
        };
        // Results before the second runs were summed leave their cells empty.
        let md = markdown(&r);
        assert!(md.contains("| **every unit** | | | 1100.0 | 1005.0 | +9.5 % | | |"));
        assert!(!md.contains("The kinds' second runs together"));
        let k = r.kinds_in_program.as_mut().unwrap();
        k.second_runs_us = Some(1000.0);
        k.second_runs_j = Some(10.5);
        k.alone_vs_second_runs_time_pct = Some(10.0);
        k.alone_vs_second_runs_energy_pct = Some(100.0 * (11.11 / 10.5 - 1.0));
        k.second_runs_vs_whole_time_pct = Some(100.0 * (1000.0 / 1005.0 - 1.0));
        k.second_runs_vs_whole_energy_pct = Some(100.0 * (10.5 / 10.1 - 1.0));
        let md = markdown(&r);
        assert!(md.contains("## Each kind of unit in the model's program"));
        // The pipe in a label is escaped; ± is two standard errors.
        assert!(md.contains(
            "| aten::a\\|b | 2 | 6 | 600.0 | 500.0 ± 2.0 | +20.0 % | 600.0 ± 4.0 | +0.0 % |"
        ));
        assert!(md.contains(
            "| aten::a\\|b | 6.6000 | 5.5000 ± 0.1000 | +20.0 % | 6.0000 ± 0.2000 | +10.0 % |"
        ));
        // Every unit alone against the whole's mean: 1100 against 1005 us, 11.11 against
        // 10.1 J.
        assert!(md.contains("| **every unit** | | | 1100.0 | 1005.0 | +9.5 % | 1000.0 | +10.0 % |"));
        assert!(md.contains("| **every unit** | 11.1100 | 10.1000 | +10.0 % | 10.5000 | +5.8 % |"));
        assert!(md.contains(
            "The kinds' second runs together against the whole program: -0.5 % in time, +4.0 % in energy."
        ));
        assert!(md.contains("so neither of their kind's costs holds them: 3 of aten::a\\|b."));
    }

    #[test]
    fn what_the_units_alone_read_is_said_beside_the_cache_policy() {
        let mut iso = crate::results::Results {
            isolated: Some(crate::results::IsolatedSummary {
                cache: "context".into(),
                unit_values: Some(crate::results::UnitValuesGiven {
                    at_steps: true,
                    units: 40,
                    bytes: 3 << 30,
                    shared_bytes: 512 << 20,
                    passes: 1,
                    units_left_out: 2,
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let r = crate::report::model::build(Some(&crate::results::Results::default()), Some(&iso));
        let md = markdown(&r);
        let top = md.split("## Does the sum").next().unwrap();
        assert!(top.contains(
            "Each unit alone read the values its steps read in the model: 3072 MiB that a later step wrote again were given back to 40 units from 1 pass of the model's steps; 512 MiB that two of a unit's steps read at different times held the earlier step's values; **2 units read what the pass left** (no room beside the image, or the run's notes say why)."
        ), "{top}");
        assert_eq!(
            serde_json::to_value(&r).unwrap()["unit_values"]["passes"],
            serde_json::json!(1)
        );
        // The old behaviour, asked for, is named as such.
        iso.isolated.as_mut().unwrap().unit_values = Some(Default::default());
        let r = crate::report::model::build(None, Some(&iso));
        assert!(markdown(&r).contains(
            "Each unit alone read what one pass of the model's steps left at its places"
        ));
        // Results from before session 29 say nothing of it.
        iso.isolated.as_mut().unwrap().unit_values = None;
        let r = crate::report::model::build(None, Some(&iso));
        assert!(!markdown(&r).contains("Each unit alone read"));
    }

    #[test]
    fn a_results_file_of_a_run_that_did_not_end_is_said_at_the_top() {
        let whole = crate::results::Results::default();
        let mut partial = whole.clone();
        partial.unfinished = Some(
            "the diagnostic of the program without each kind of unit, and the rest of the pass after it, had not run when this was written".into(),
        );
        let r = crate::report::model::build(Some(&whole), Some(&partial));
        assert_eq!(
            r.unfinished,
            vec!["the isolated results were written before the run ended: the diagnostic of the program without each kind of unit, and the rest of the pass after it, had not run when this was written".to_string()]
        );
        let md = markdown(&r);
        let top = md.split("## Does the sum").next().unwrap();
        assert!(
            top.contains(
                "**Not a whole run:** the isolated results were written before the run ended"
            ),
            "{top}"
        );
        // A whole run's report says nothing of it, and its JSON leaves the field out.
        let r = crate::report::model::build(Some(&whole), Some(&whole));
        assert!(r.unfinished.is_empty() && !markdown(&r).contains("Not a whole run"));
        assert!(serde_json::to_value(&r)
            .unwrap()
            .get("unfinished")
            .is_none());
    }

    #[test]
    fn csv_quotes_what_needs_quoting() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
        let mut r = Report::default();
        r.units.push(UnitRow {
            id: 3,
            label: "aten::mm".into(),
            call: "gemm TN m=1, n=2".into(),
            predicted_us: Some(1.5),
            ..Default::default()
        });
        let text = csv(&r);
        let row = text.lines().nth(1).unwrap();
        assert!(
            row.starts_with("3,,,aten::mm,\"gemm TN m=1, n=2\","),
            "{row}"
        );
        // 21 columns, and the row has as many fields once the quoted call counts as one.
        assert_eq!(text.lines().next().unwrap().split(',').count(), 21);
        assert_eq!(row.split(',').count(), 21 + 1);
    }
}
