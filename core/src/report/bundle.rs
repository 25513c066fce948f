//! The report as files: one list of what `kc report` and `kc run` write (JSON, Markdown,
//! CSV, SVG charts, the Chrome trace), and the whole step from results files to a written
//! report that the CLI and the Python package call.
//!
//! Invariant: every input is read and checked (results schema, graph/isolated pairing,
//! the plan's CRC, the reference entry) before any file is written, and then all files are
//! written or none; nothing here prints or touches a file descriptor, so it is safe to call
//! from several threads at once.

use super::{model, render, svg, trace_out, ReportError};
use crate::results::Results;
use std::path::{Path, PathBuf};

/// The report's files in `dir`: report.json, report.md, units.csv, tiers.svg, scatter.svg,
/// replay.trace.json, and where they apply budget.svg and timeline.svg.
pub fn files(
    rep: &model::Report,
    trace_source: &Results,
    plan: Option<&crate::plan::Plan>,
    dir: &Path,
) -> Vec<(PathBuf, Vec<u8>)> {
    let measured = svg::measured_means(rep);
    let mut files: Vec<(PathBuf, Vec<u8>)> = vec![
        (
            dir.join("report.json"),
            serde_json::to_vec_pretty(rep).unwrap_or_default(),
        ),
        (dir.join("report.md"), render::markdown(rep).into_bytes()),
        (dir.join("units.csv"), render::csv(rep).into_bytes()),
        (dir.join("tiers.svg"), svg::tier_bars(rep).into_bytes()),
        (dir.join("scatter.svg"), svg::scatter(rep).into_bytes()),
        (
            dir.join("replay.trace.json"),
            serde_json::to_vec(&trace_out::chrome_trace(
                trace_source,
                plan.map(|p| (p, &measured)),
            ))
            .unwrap_or_default(),
        ),
    ];
    if rep.error_budget.is_some() {
        files.push((dir.join("budget.svg"), svg::waterfall(rep).into_bytes()));
    }
    if let Some(p) = plan {
        files.push((dir.join("timeline.svg"), svg::timeline(p, rep).into_bytes()));
    }
    files
}

/// Where `kc run` and `kc exec --verify` keep kc's CUPTI record of its graph, beside the
/// graph results.
pub const GRAPH_KERNELS: &str = "plan.graph.kernels.json";

/// What a report is made from (the arguments of `kc report RESULTS`).
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub results: PathBuf,
    pub isolated: Option<PathBuf>,
    pub plan: Option<PathBuf>,
    pub reference: Option<PathBuf>,
    pub reference_entry: Option<String>,
    pub output: PathBuf,
    /// Price each switch between units by how far back it reaches (the rounds of several
    /// sizes, where measured), not at the round of every unit.
    pub switches_by_reach: bool,
    /// Price the switches' energy at the round's own energy, not at the idle power over
    /// their time.
    pub switch_energy_from_round: bool,
    /// Take every unit's kernels in the round as recorded, also where the round ran its
    /// places to non-finite values and the unit was taken alone or at its first cycles'
    /// ([`crate::results::RoundUnitKernels::as_recorded`]).
    pub round_as_recorded: bool,
    /// The model's profiled CUDA-graph replays to set kc's graph beside, kernel by kernel
    /// (default: the reference entry's `replay_trace`, where the file is there).
    pub model_graph: Option<PathBuf>,
    /// kc's CUPTI record of its graph (default: plan.graph.kernels.json beside the graph
    /// results, where it is there).
    pub graph_kernels: Option<PathBuf>,
    /// Other models' answers (`tools/prediction_residuals.py`), whose errors give the
    /// method's own spread beside the prediction's bar ([`super::method_spread`]).
    pub method_spread: Option<PathBuf>,
}

/// Reads and checks the inputs, builds the report and writes its files into
/// `inputs.output`. Returns the report and the files written.
pub fn make(inputs: &Inputs) -> Result<(model::Report, Vec<PathBuf>), ReportError> {
    let first = &inputs.results;
    let first_r = super::read_results(first)?;
    let mut iso_r = match &inputs.isolated {
        Some(p) => Some(super::read_results(p)?),
        None => None,
    };
    if inputs.round_as_recorded {
        let t = iso_r
            .as_mut()
            .and_then(|r| r.isolated.as_mut())
            .and_then(|i| i.transitions.as_mut());
        for k in t.into_iter().flat_map(|t| t.round_unit_kernels.iter_mut()) {
            k.as_recorded();
        }
    }
    let (graph, isolated): (Option<&Results>, Option<&Results>) =
        match (first_r.mode.as_str(), &iso_r) {
            ("graph", i) => (Some(&first_r), i.as_ref()),
            ("isolated", None) => (None, Some(&first_r)),
            (m, _) => {
                return Err(ReportError::Refused(format!(
                    "{}: {} {m} results file cannot be combined with --isolated",
                    first.display(),
                    if m.starts_with(['a', 'e', 'i', 'o', 'u']) {
                        "an"
                    } else {
                        "a"
                    }
                )))
            }
        };
    if let (Some(g), Some(i), Some(ip)) = (graph, isolated, &inputs.isolated) {
        super::check_pair(g, first, i, ip)?;
    }
    if let (Some(i), Some(ip)) = (isolated, &inputs.isolated) {
        if i.mode != "isolated" {
            return Err(ReportError::Refused(format!(
                "{}: not an isolated-mode results file",
                ip.display()
            )));
        }
    }
    let plan = match &inputs.plan {
        Some(p) => Some(super::read_measured_plan(p, &first_r, first)?),
        None => None,
    };
    let mut rep = model::build(graph, isolated);
    if let (None, Some(p)) = (rep.iterations_per_replay, &plan) {
        rep.set_iterations(p.iterations.count, &p.iterations.found_by);
    }
    if let Some(inp) = rep.prediction_inputs.as_mut() {
        inp.price_by_reach = inputs.switches_by_reach;
        inp.switch_energy_from_round = inputs.switch_energy_from_round;
    }
    if let Some(p) = &plan {
        rep.use_plan(p);
    }
    if let Some(rp) = &inputs.reference {
        super::add_reference(&mut rep, rp, inputs.reference_entry.as_deref())?;
    }
    // The two graphs side by side, where both records are there: asked for by name, or
    // found where capture.py and kc run write them.
    let model_graph = inputs.model_graph.clone().or_else(|| {
        inputs
            .reference
            .as_deref()
            .and_then(|r| super::model_graph_of_reference(&rep, r))
    });
    let graph_kernels = inputs.graph_kernels.clone().or_else(|| {
        let p = first.parent()?.join(GRAPH_KERNELS);
        (graph.is_some() && p.is_file()).then_some(p)
    });
    match (&model_graph, &graph_kernels) {
        // Asked for by name, a comparison that cannot be made is an error; found by
        // default, a note.
        (Some(m), Some(k)) => {
            if let Err(e) = super::add_side_by_side(&mut rep, m, k, plan.as_ref()) {
                if inputs.model_graph.is_some() || inputs.graph_kernels.is_some() {
                    return Err(e);
                }
                rep.notes
                    .push(format!("kc's graph not set beside the model's: {e}"));
            }
        }
        (Some(m), None) if inputs.model_graph.is_some() => {
            return Err(ReportError::Refused(format!(
                "{}: the model's graph is set beside kc's CUPTI record of its graph, and there is none (kc exec --verify --kernels-out, or --graph-kernels)",
                m.display()
            )))
        }
        (None, Some(k)) if inputs.graph_kernels.is_some() => {
            return Err(ReportError::Refused(format!(
                "{}: kc's graph is set beside the model's profiled graph replays, and there are none (capture.py's replay_trace, or --model-graph)",
                k.display()
            )))
        }
        _ => {}
    }
    // Last: the side-by-side above builds the prediction again.
    if let Some(mp) = &inputs.method_spread {
        rep.add_method_spread(&super::read_method_spread(mp)?);
    }
    let source = graph.or(isolated).expect("one results file");
    let files = files(&rep, source, plan.as_ref(), &inputs.output);
    let mut read: Vec<&Path> = vec![first.as_path()];
    read.extend(inputs.isolated.as_deref());
    read.extend(inputs.reference.as_deref());
    read.extend(inputs.plan.as_deref());
    read.extend(model_graph.as_deref());
    read.extend(graph_kernels.as_deref());
    read.extend(inputs.method_spread.as_deref());
    for (p, _) in &files {
        crate::files::check_output(p, &read).map_err(ReportError::Refused)?;
    }
    std::fs::create_dir_all(&inputs.output).map_err(|source| ReportError::Write {
        path: inputs.output.display().to_string(),
        source,
    })?;
    super::write_all(&files)?;
    Ok((rep, files.into_iter().map(|(p, _)| p).collect()))
}
