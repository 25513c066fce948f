//! `kc._native`: the Python extension over kc's Rust stages. Nothing here re-implements
//! kc: ingest, lowering, planning, results and reports are the library's own functions;
//! this file only moves their answers into Python. Large tables cross as columns (one
//! little-endian buffer per numeric column, codes plus categories for strings), so a
//! million-row DataFrame costs one copy per column, never a Python object per cell.
//! Invariants: every kc error becomes one `KcError` carrying kc's own message (file and
//! offset or event index); ingest releases the GIL while it reads.

use kc::diag::Diagnostic;
use kc_ir::{KernelGraph, StrId};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use std::ffi::OsString;
use std::path::PathBuf;

create_exception!(
    _native,
    KcError,
    PyException,
    "An error kc reported: its message names the file and where."
);

fn err(e: impl std::fmt::Display) -> PyErr {
    KcError::new_err(e.to_string())
}

/// One column of a table: numbers as little-endian bytes, or strings as codes into
/// categories (-1 for a missing value).
enum Col {
    I64(Vec<i64>),
    U64(Vec<u64>),
    U32(Vec<u32>),
    Cat(Vec<i32>, Vec<String>),
}

/// Maps interned string ids to dense category codes, keeping only the strings used.
#[derive(Default)]
struct Categories {
    code_of: Vec<i32>,
    names: Vec<String>,
}

impl Categories {
    fn code(&mut self, g: &KernelGraph, id: StrId) -> i32 {
        let i = id.0 as usize;
        if self.code_of.len() <= i {
            self.code_of.resize(g.strings.len().max(i + 1), -1);
        }
        if self.code_of[i] < 0 {
            self.code_of[i] = self.names.len() as i32;
            self.names.push(g.strings.get(id).to_string());
        }
        self.code_of[i]
    }
}

/// Maps argument lists to category codes of their text, formatting each list once (a
/// model repeats a few hundred lists across a million rows); -1 for no recorded arguments.
struct ShapeCategories {
    code_of: Vec<i32>,
    names: Vec<String>,
}

impl ShapeCategories {
    fn new(g: &KernelGraph) -> Self {
        Self {
            code_of: vec![-1; g.arg_lists.len()],
            names: Vec::new(),
        }
    }

    fn code(&mut self, g: &KernelGraph, args: u32) -> i32 {
        let a = args as usize;
        if a == 0 || a >= self.code_of.len() {
            return -1;
        }
        if self.code_of[a] < 0 {
            self.code_of[a] = self.names.len() as i32;
            self.names.push(kc_ir::text::args_str(&g.arg_lists[a]));
        }
        self.code_of[a]
    }
}

/// `[(name, dtype, bytes, categories or None), ...]` for `kc._frame`.
fn columns<'py>(py: Python<'py>, cols: Vec<(&str, Col)>) -> PyResult<Bound<'py, PyList>> {
    fn bytes<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        let mut out = Vec::with_capacity(v.len() * N);
        for &x in v {
            out.extend_from_slice(&f(x));
        }
        out
    }
    let list = PyList::empty(py);
    for (name, col) in cols {
        let (dtype, data, cats): (&str, Vec<u8>, Option<Vec<String>>) = match col {
            Col::I64(v) => ("<i8", bytes(&v, i64::to_le_bytes), None),
            Col::U64(v) => ("<u8", bytes(&v, u64::to_le_bytes), None),
            Col::U32(v) => ("<u4", bytes(&v, u32::to_le_bytes), None),
            Col::Cat(v, names) => ("cat", bytes(&v, i32::to_le_bytes), Some(names)),
        };
        let item = PyTuple::new(
            py,
            [
                name.into_pyobject(py)?.into_any(),
                dtype.into_pyobject(py)?.into_any(),
                PyBytes::new(py, &data).into_any(),
                cats.into_pyobject(py)?.into_any(),
            ],
        )?;
        list.append(item)?;
    }
    Ok(list)
}

/// An ingested trace: the kernel graph and what ingest noticed on the way.
#[pyclass(module = "kc._native", frozen)]
struct Graph {
    g: KernelGraph,
    diags: Vec<Diagnostic>,
    /// The files it was read from: a write over any of them is refused, as the CLI does.
    inputs: Vec<PathBuf>,
}

/// Refuses an output that is one of `inputs`, or a directory, symlink, device or FIFO.
fn check_output(path: &std::path::Path, inputs: &[PathBuf]) -> PyResult<()> {
    let ins: Vec<&std::path::Path> = inputs.iter().map(PathBuf::as_path).collect();
    kc::files::check_output(path, &ins).map_err(err)
}

#[pymethods]
impl Graph {
    /// The summary `kc ingest --json` prints, as JSON text.
    fn summary_json(&self) -> PyResult<String> {
        serde_json::to_string(&kc::ingest::summary::summarize(&self.g, &self.diags)).map_err(err)
    }

    /// `kc analyze --json`: per-kernel statistics, per-iteration breakdown, launch latency.
    fn analysis_json(&self) -> PyResult<String> {
        // Lowered on a copy, so the roofline knows each kernel's work; the graph stays.
        let mut g = self.g.clone();
        serde_json::to_string(&kc::analyze::analyze_lowered(&mut g)).map_err(err)
    }

    /// `kc diff --json` of this graph (A) against `other` (B).
    fn diff_json(&self, other: &Graph, a_label: &str, b_label: &str) -> PyResult<String> {
        serde_json::to_string(&kc::analyze::diff::diff(
            &self.g, a_label, &other.g, b_label,
        ))
        .map_err(err)
    }

    /// One row per GPU activity (kernel, memcpy, memset, collective), as columns.
    fn kernel_columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        kernel_columns(py, &self.g)
    }

    /// One row per CPU op kept in the graph (ops that launched GPU work and their parents).
    fn op_columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let g = &self.g;
        let mut names = Categories::default();
        let n = g.ops.len();
        let mut name = Vec::with_capacity(n);
        let mut rank = Vec::with_capacity(n);
        let mut tid = Vec::with_capacity(n);
        let mut start = Vec::with_capacity(n);
        let mut dur = Vec::with_capacity(n);
        let mut external = Vec::with_capacity(n);
        let mut parent = Vec::with_capacity(n);
        let mut shape_cats = ShapeCategories::new(g);
        let mut shapes = Vec::with_capacity(g.ops.len());
        // The profiled iteration an op started in (its rank's ProfilerStep range), -1 outside.
        let mut iteration = Vec::with_capacity(n);
        for op in &g.ops {
            iteration.push(
                g.iterations
                    .iter()
                    .find(|it| {
                        it.rank == op.rank && it.start_ns <= op.start_ns && op.start_ns < it.end_ns
                    })
                    .map_or(-1, |it| i64::from(it.step)),
            );
            name.push(names.code(g, op.name));
            rank.push(op.rank);
            tid.push(op.tid);
            start.push(op.start_ns);
            dur.push(op.dur_ns);
            external.push(op.external_id);
            parent.push(op.parent.map_or(-1, |p| i64::from(p.0)));
            shapes.push(shape_cats.code(g, op.args));
        }
        columns(
            py,
            vec![
                ("name", Col::Cat(name, names.names)),
                ("rank", Col::U32(rank)),
                ("tid", Col::U64(tid)),
                ("start_ns", Col::I64(start)),
                ("dur_ns", Col::I64(dur)),
                ("external_id", Col::U64(external)),
                ("parent", Col::I64(parent)),
                ("iteration", Col::I64(iteration)),
                ("shapes", Col::Cat(shapes, shape_cats.names)),
            ],
        )
    }

    /// Writes the graph as a `.kcir` file (what `kc ingest -o` writes); never over one of
    /// the files it was read from.
    fn write(&self, path: PathBuf) -> PyResult<()> {
        check_output(&path, &self.inputs)?;
        kc::ingest::write_graph(&self.g, &path).map_err(err)
    }
}

/// One row per GPU activity (kernel, memcpy, memset, collective), as columns; a lowered
/// graph's rows also carry their unit, tier and instance (to join with `units()`).
fn kernel_columns<'py>(py: Python<'py>, g: &KernelGraph) -> PyResult<Bound<'py, PyList>> {
    let n = g.graph.node_count();
    let (mut name, mut kind) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut rank, mut device, mut stream) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let (mut start, mut dur) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut iteration, mut correlation) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut geo: [Vec<u32>; 6] = Default::default();
    let (mut op_name, mut op_shapes) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut names, mut op_names) = (Categories::default(), Categories::default());
    let kinds = ["kernel", "memcpy", "memset", "collective"];
    let mut shape_cats = ShapeCategories::new(g);
    for node in g.graph.node_weights() {
        name.push(names.code(g, node.kind.name()));
        kind.push(
            kinds
                .iter()
                .position(|k| *k == node.kind.kind_str())
                .unwrap_or(0) as i32,
        );
        rank.push(node.rank);
        device.push(node.device);
        stream.push(node.stream);
        start.push(node.start_ns);
        dur.push(node.dur_ns);
        iteration.push(node.iteration.map_or(-1, i64::from));
        correlation.push(node.correlation);
        let (grid, block) = node
            .kind
            .geometry()
            .map_or(([0; 3], [0; 3]), |k| (k.grid, k.block));
        for (k, v) in grid.iter().chain(&block).enumerate() {
            geo[k].push(*v);
        }
        match node.op.and_then(|o| g.ops.get(o.0 as usize)) {
            Some(op) => {
                op_name.push(op_names.code(g, op.name));
                op_shapes.push(shape_cats.code(g, op.args));
            }
            None => {
                op_name.push(-1);
                op_shapes.push(-1);
            }
        }
    }
    let [gx, gy, gz, bx, by, bz] = geo;
    let mut cols = vec![
        ("name", Col::Cat(name, names.names)),
        (
            "kind",
            Col::Cat(kind, kinds.iter().map(|s| s.to_string()).collect()),
        ),
        ("rank", Col::U32(rank)),
        ("device", Col::U32(device)),
        ("stream", Col::U64(stream)),
        ("start_ns", Col::I64(start)),
        ("dur_ns", Col::I64(dur)),
        ("iteration", Col::I64(iteration)),
        ("correlation", Col::U64(correlation)),
        ("grid_x", Col::U32(gx)),
        ("grid_y", Col::U32(gy)),
        ("grid_z", Col::U32(gz)),
        ("block_x", Col::U32(bx)),
        ("block_y", Col::U32(by)),
        ("block_z", Col::U32(bz)),
        ("op_name", Col::Cat(op_name, op_names.names)),
        ("op_shapes", Col::Cat(op_shapes, shape_cats.names)),
    ];
    if g.classes.len() == n {
        let tiers: Vec<String> = kc_ir::Tier::ALL
            .iter()
            .map(|t| t.as_str().to_string())
            .collect();
        let (mut unit, mut tier, mut instance) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for c in &g.classes {
            instance.push(i64::from(c.instance));
            unit.push(
                g.instances
                    .get(c.instance as usize)
                    .map_or(-1, |i| i64::from(i.unit.0)),
            );
            tier.push(
                tiers
                    .iter()
                    .position(|t| t == c.tier.as_str())
                    .map_or(-1, |p| p as i32),
            );
        }
        cols.push(("unit", Col::I64(unit)));
        cols.push(("instance", Col::I64(instance)));
        cols.push(("tier", Col::Cat(tier, tiers)));
    }
    columns(py, cols)
}

/// A lowered graph: units with tiers.
#[pyclass(module = "kc._native", frozen)]
struct Lowered {
    g: KernelGraph,
    diags: Vec<Diagnostic>,
    inputs: Vec<PathBuf>,
}

#[pymethods]
impl Lowered {
    /// One row per GPU activity with its unit, tier and instance, as columns.
    fn kernel_columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        kernel_columns(py, &self.g)
    }

    /// The summary `kc lower --json` prints, as JSON text.
    fn summary_json(&self) -> PyResult<String> {
        serde_json::to_string(&kc::lower::summary::summarize(&self.g, &self.diags)).map_err(err)
    }

    /// Every unit (the `units` list of `kc lower --json`), as JSON text.
    fn units_json(&self) -> PyResult<String> {
        serde_json::to_string(&kc::lower::summary::unit_rows(&self.g)).map_err(err)
    }

    /// Writes the lowered graph (what `kc lower -o` writes); never over an input.
    fn write(&self, path: PathBuf) -> PyResult<()> {
        check_output(&path, &self.inputs)?;
        kc::ingest::write_graph(&self.g, &path).map_err(err)
    }
}

/// Reads traces into a graph, as `kc ingest` does; the GIL is released while it reads.
#[pyfunction]
#[pyo3(signature = (paths, shapes=None, eager=None, inductor_cache=None, capture=None, values=None))]
fn ingest(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    shapes: Option<PathBuf>,
    eager: Option<PathBuf>,
    inductor_cache: Option<PathBuf>,
    capture: Option<PathBuf>,
    values: Option<PathBuf>,
) -> PyResult<Graph> {
    if paths.is_empty() {
        return Err(err(
            "ingest: no trace given (a path, a list of paths, or a directory)",
        ));
    }
    let mut inputs = paths.clone();
    inputs.extend(
        shapes
            .iter()
            .chain(&eager)
            .chain(&capture)
            .chain(&inductor_cache)
            .chain(&values)
            .cloned(),
    );
    let opts = kc::ingest::IngestOptions {
        shapes,
        values,
        eager,
        capture,
        inductor_cache,
        default_inductor_cache: true,
        ..Default::default()
    };
    let (g, diags) = py
        .allow_threads(|| kc::ingest::ingest(&paths, &opts))
        .map_err(err)?;
    Ok(Graph { g, diags, inputs })
}

/// Reads a `.kcir` graph file.
#[pyfunction]
fn read_graph(py: Python<'_>, path: PathBuf) -> PyResult<Graph> {
    let g = py
        .allow_threads(|| kc::ingest::read_graph(&path))
        .map_err(err)?;
    Ok(Graph {
        g,
        diags: Vec::new(),
        inputs: vec![path],
    })
}

/// Lowers a graph, as `kc lower --tiers` does; the input graph is left as it was.
#[pyfunction]
fn lower(py: Python<'_>, graph: &Graph) -> PyResult<Lowered> {
    let mut g = graph.g.clone();
    let (_, diags) = py.allow_threads(|| kc::lower::lower(&mut g)).map_err(err)?;
    Ok(Lowered {
        g,
        diags,
        inputs: graph.inputs.clone(),
    })
}

/// Builds the plan of a lowered graph and writes it to `path`; returns the summary JSON of
/// `kc plan --json`.
#[pyfunction]
fn plan(lowered: &Lowered, path: PathBuf) -> PyResult<String> {
    check_output(&path, &lowered.inputs)?;
    let p = kc::plan::build::build(&lowered.g);
    p.check().map_err(err)?;
    let bytes = kc::plan::write(&p, &path).map_err(err)?;
    plan_json(&p, bytes)
}

fn plan_json(p: &kc::plan::Plan, bytes: u64) -> PyResult<String> {
    let rank = p.ranks().first().copied().unwrap_or(0);
    serde_json::to_string(&serde_json::json!({
        "summary": kc::plan::show::summarize(p, bytes),
        "units": kc::plan::show::unit_rows(p),
        "round": { "rank": rank, "entries": kc::plan::show::round_rows(p, rank) },
    }))
    .map_err(err)
}

/// Reads a plan file; returns the JSON of `kc plan show --round --json` (summary, units and
/// the round of every unit).
#[pyfunction]
fn read_plan(path: PathBuf) -> PyResult<String> {
    let p = kc::plan::read(&path).map_err(err)?;
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    plan_json(&p, bytes)
}

/// Reads a results file of `kc exec`, checked as `kc report` checks it; returns its JSON.
#[pyfunction]
fn read_results(path: PathBuf) -> PyResult<String> {
    let r = kc::report::read_results(&path).map_err(err)?;
    serde_json::to_string(&r).map_err(err)
}

/// Writes the report of `kc report` into `output` and returns report.json's text. Prints
/// nothing and touches no file descriptor, so threads may call it at once.
#[pyfunction]
#[pyo3(signature = (results, output, isolated=None, plan=None, reference=None, reference_entry=None, method_spread=None))]
#[allow(clippy::too_many_arguments)]
fn report(
    py: Python<'_>,
    results: PathBuf,
    output: PathBuf,
    isolated: Option<PathBuf>,
    plan: Option<PathBuf>,
    reference: Option<PathBuf>,
    reference_entry: Option<String>,
    method_spread: Option<PathBuf>,
) -> PyResult<String> {
    let inputs = kc::report::bundle::Inputs {
        results,
        isolated,
        plan,
        reference,
        reference_entry,
        output,
        switches_by_reach: false,
        switch_energy_from_round: false,
        round_as_recorded: false,
        model_graph: None,
        graph_kernels: None,
        method_spread,
    };
    let (rep, _) = py
        .allow_threads(|| kc::report::bundle::make(&inputs))
        .map_err(err)?;
    serde_json::to_string(&rep).map_err(err)
}

/// Runs the kc command line with these arguments (without the program name); returns
/// the exit code. Output goes to this process's stdout and stderr.
#[pyfunction]
fn run_cli(py: Python<'_>, args: Vec<OsString>) -> i32 {
    let argv: Vec<OsString> = std::iter::once(OsString::from("kc")).chain(args).collect();
    py.allow_threads(|| kc::cli::app::main_with(argv))
}

/// Makes a closed stdout end the process quietly and Ctrl-C remove half-written files,
/// as the `kc` binary does; for the `kc` console script only.
/// `launcher` is the command that starts the package's `kc` again (the interpreter and
/// `-m kc._cli`), which `kc exec --ranks all` runs once per rank.
#[pyfunction]
#[pyo3(signature = (launcher=None))]
fn init_cli(launcher: Option<Vec<String>>) {
    kc::cli::quiet_on_closed_pipe();
    kc::files::clean_up_on_interrupt();
    if let Some((program, args)) = launcher.as_deref().and_then(|l| l.split_first()) {
        kc::cli::ranks::set_rank_launcher(PathBuf::from(program), args.to_vec());
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("KcError", m.py().get_type::<KcError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Graph>()?;
    m.add_class::<Lowered>()?;
    m.add_function(wrap_pyfunction!(ingest, m)?)?;
    m.add_function(wrap_pyfunction!(read_graph, m)?)?;
    m.add_function(wrap_pyfunction!(lower, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(read_plan, m)?)?;
    m.add_function(wrap_pyfunction!(read_results, m)?)?;
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(report, m)?)?;
    m.add_function(wrap_pyfunction!(init_cli, m)?)?;
    Ok(())
}
