"""kc in Python: the same Rust stages as the `kc` command, with answers as pandas DataFrames.

    import kc
    g = kc.ingest("trace.pt.trace.json.gz")          # Graph (the GIL is released while it reads)
    g.summary()                                       # dict, as `kc ingest --json`
    g.kernels()                                       # DataFrame: one row per GPU activity
    low = kc.lower(g)                                 # Lowered
    low.units()                                       # DataFrame: one row per replay unit
    kc.plan(low, "trace.kcplan")                      # dict, as `kc plan --json`
    r = kc.read_results("trace.graph.json")          # Results: .units, .windows DataFrames
    kc.report("trace.graph.json", isolated="trace.isolated.warm.json", output="report")

Every error kc reports raises `kc.KcError` with kc's own message, which names the file and
the byte offset or event index of the problem.
"""
import json as _json
from pathlib import Path as _Path

import numpy as _np
import pandas as _pd

from . import _native
from ._native import KcError

__version__ = _native.__version__

__all__ = [
    "KcError",
    "Graph",
    "Lowered",
    "Plan",
    "Results",
    "ingest",
    "read_graph",
    "lower",
    "plan",
    "read_plan",
    "read_results",
    "report",
]


def _frame(columns):
    """A DataFrame from the native column list: numbers arrive as one little-endian buffer
    per column, strings as int32 codes into their categories (-1 = missing)."""
    data = {}
    for name, dtype, payload, categories in columns:
        if dtype == "cat":
            codes = _np.frombuffer(payload, dtype="<i4")
            data[name] = _pd.Categorical.from_codes(codes, categories=categories)
        else:
            data[name] = _np.frombuffer(payload, dtype=dtype)
    return _pd.DataFrame(data, copy=False)


def _path(p, what="path"):
    """A path argument as text: a str or an os.PathLike, nothing else (`None` or a number
    would otherwise become a file named 'None' or '1180591620717411303424')."""
    import os

    if isinstance(p, str):
        return p
    if isinstance(p, os.PathLike):
        return os.fspath(p)
    raise TypeError(f"{what} must be a str or os.PathLike, not {type(p).__name__}")


def _opt_path(p, what):
    return None if p is None else _path(p, what)


def _paths(path_or_paths):
    if isinstance(path_or_paths, (str, _Path)) or hasattr(path_or_paths, "__fspath__"):
        return [_path(path_or_paths)]
    paths = [_path(p) for p in path_or_paths]
    if not paths:
        raise KcError("ingest: no trace given (a path, a list of paths, or a directory)")
    return paths


class Graph:
    """A kernel graph: every GPU activity of the trace(s), linked to the op that launched it."""

    def __init__(self, native):
        self._g = native

    def summary(self):
        """The ingest summary as a dict (the same as `kc ingest --json` prints under `summary`)."""
        return _json.loads(self._g.summary_json())

    def kernels(self):
        """One row per GPU activity: name, kind (kernel/memcpy/memset/collective), rank,
        device, stream, start_ns, dur_ns, iteration (ProfilerStep number, -1 outside any),
        correlation (CUPTI's id, to join with the trace), grid_x..z, block_x..z, op_name
        (the launching aten op, missing when unlinked) and op_shapes (its recorded
        arguments)."""
        return _frame(self._g.kernel_columns())

    def analysis(self):
        """`kc analyze --json` as a dict: kernels, iterations, launch_latency,
        traced_iteration_mean_us, gpu_time_us."""
        return _json.loads(self._g.analysis_json())

    def kernel_stats(self):
        """One row per kernel name: kind, count, total_us, mean_us, p50_us, p90_us, min_us,
        max_us, share_pct (of the trace's GPU time), largest total first."""
        return _pd.DataFrame(self.analysis()["kernels"])

    def op_stats(self):
        """One row per launching op name: count (invocations) and the GPU time of each
        invocation (the sum of the activities it launched): total_us, mean_us, p50_us,
        p90_us, min_us, max_us, share_pct; "(no op)" for activities without one."""
        return _pd.DataFrame(self.analysis()["ops"])

    def iterations(self):
        """One row per rank and profiled iteration: span_us (first start to last end),
        busy_us, idle_us, idle_pct, kernel_sum_us, kernel/memcpy/memset/collective_us (busy
        by kind), compute_comm_overlap_us, concurrent_us (two or more streams at once),
        streams, activities."""
        return _pd.DataFrame(self.analysis()["iterations"])

    def launch_latency(self):
        """One row per launch API: count and the wait from the launch call to the GPU start
        (mean, p50, p90, max; microseconds) and the call's own mean duration."""
        return _pd.DataFrame(self.analysis()["launch_latency"])

    def ops(self):
        """One row per CPU op kept in the graph: name, rank, tid, start_ns, dur_ns,
        external_id, parent (row index of the enclosing op, -1 for none), iteration (the
        ProfilerStep it started in, -1 outside any) and shapes."""
        return _frame(self._g.op_columns())

    def write(self, path):
        """Writes the graph as a `.kcir` file, as `kc ingest -o PATH` does."""
        self._g.write(_path(path))

    def __repr__(self):
        s = self.summary()
        return f"<kc.Graph: {s['gpu_ops']} GPU ops, {s['gpu_time_us']:.1f} us of GPU time>"


class Lowered:
    """A lowered graph: every GPU activity classified, grouped into replay units with tiers."""

    def __init__(self, native):
        self._l = native

    def summary(self):
        """The tier table as a dict (the same as `kc lower --json` prints under `summary`)."""
        return _json.loads(self._l.summary_json())

    def kernels(self):
        """The rows of `Graph.kernels()` with, for each GPU activity, its `unit` (the id in
        `units()`), its `instance` (the invocation it belongs to) and its `tier`."""
        return _frame(self._l.kernel_columns())

    def units(self):
        """One row per unique replay unit: id, tier, rule, family, label, call, invocations,
        traced_us_total, traced_us_mean, reason (why it cannot be replayed, else missing),
        kernels (the kernel names one invocation launches)."""
        return _pd.DataFrame(_json.loads(self._l.units_json()))

    def write(self, path):
        """Writes the lowered graph, as `kc lower -o PATH` does."""
        self._l.write(_path(path))


class Plan:
    """A replay plan as `kc plan show --json` describes it."""

    def __init__(self, shown):
        self._shown = shown

    def summary(self):
        """Units per tier, memory, streams, steps, iterations, sizes (a dict)."""
        return self._shown["summary"]

    def units(self):
        """One row per unit of the plan: id, tier, family, label, call, invocations, traced
        time, reason, kernels, buffers."""
        return _pd.DataFrame(self._shown["units"])

    def round(self):
        """The round of every unit the isolated pass measures, as `kc plan show --round`
        prints it, one row per entry: entry, step, unit, label, lead_in (the model's step
        before a unit's first run, run first and not counted; its step is what
        `kc exec --round-lead-ins-only` takes)."""
        return _pd.DataFrame(self._shown["round"]["entries"])


class Results:
    """A results file of `kc exec` (graph or isolated mode), checked as `kc report` checks it."""

    def __init__(self, raw):
        self.raw = raw
        self.mode = raw["mode"]

    @property
    def units(self):
        """One row per unit: id, label, tier, call, invocations, traced_mean_us, status,
        mean_us (isolated mean per invocation, missing where not measured), predicted_us,
        energy_j (isolated energy per invocation), predicted_energy_j, and where the unit
        was measured after the model's steps leading up to it (the units' producers, kc's
        default since session 35) after_lead_in_us and after_lead_in_energy_j per invocation
        (their lead-ins alone taken off), after_lead_in_capped (the power cap held a
        window down: the prediction keeps its energy alone) and after_lead_in_duty_share
        (since session 36, where the unit alone was priced at a duty cycle and so were both
        its launches after its lead-ins: the share of each launch they took; else missing).
        Since session 38 also: energy_windows (the windows its energy came from; one where
        its share of the model asked no more) and energy_sem_j (missing over one window),
        at_duty (its energy measured at a duty cycle), after_lead_in_energy_sem_j and
        after_lead_in_one_window (each launch over one window: no standard error, the report
        gives each launch the run's pooled spread of one window), and for a unit measured
        again from the model's values restoring_copy_energy_j and restoring_copy_one_window
        (its copy from the snapshot, per launch, taken off). Since session 39: kernels_us
        (its kernels per invocation alone, CUPTI, with --verify) and, with
        --lead-in-kernels, what its launches after its lead-ins are made of per invocation:
        after_lead_in_kernels_us (its own kernels there) and after_lead_in_lead_ins_kernels_us
        (its lead-ins' kernels there; both missing where the kernels were not told apart by
        step), after_lead_in_lead_ins_alone_kernels_us (the lead-ins' kernels alone), and
        after_lead_in_gaps_us and after_lead_in_lead_ins_alone_gaps_us (the recorded
        launches' gaps between kernels, with the unit and of the lead-ins alone). Since
        session 40: busy_us (the time per invocation alone during which one of its kernels
        ran, the union of their intervals: under kernels_us where they ran side by side)
        and after_lead_in_busy_us (the same of its own kernels after its lead-ins). Since
        session 43: each_invocation (its launch read at one invocation what another wrote,
        and the model's values changed its kernels: it was measured with each invocation
        from them, its time as it ran plus that change) and, for such a unit, its kernels
        per invocation as it ran (kernels_as_it_ran_us), after a copy of its reads before
        each invocation over its own values (own_values_kernels_us) and over the model's
        (model_values_kernels_us). Since session 51: its kernels alone in the model's cache
        state (in_model_cache_kernels_us and in_model_cache_busy_us, every invocation after
        L2 was turned over as the model's steps before it leave it) and the share of its
        read bytes the model left to come from memory (in_model_cache_cold_share), and the
        operands over its launch the memory image does not hold
        (in_model_cache_outside_image, where the results say); since session 52 the bytes
        of those libtorch holds that were touched before each invocation, the model leaving
        them in L2 (in_model_cache_outside_touched_bytes, over the launch); since session
        53 the invocations over the launch whose code was evicted first, the model having
        last run it more than L2 of bytes before (in_model_cache_code_evicted; None in
        results before, which kept it); since session 54, with --model-cache-lead-ins, the
        model's steps run before its invocations over the launch, after L2 was turned over
        (in_model_cache_lead_in_steps; None where none ran), kc's default since session
        55, and the invocations over the launch whose integer and boolean reads took those
        steps' results (in_model_cache_lead_in_reads_from_producers; None where all read
        their stand-ins, the model's values, as with --model-cache-lead-ins stand-ins)."""
        rows = []
        for u in self.raw["units"]:
            t = u.get("time_us") or {}
            e = (u.get("energy") or {}).get("per_item_j") or {}
            a = u.get("after_lead_in") or {}
            r = u.get("restoring") or {}
            k = a.get("kernels") or {}
            each = r.get("each_invocation") or {}
            cache = (u.get("launches_verified") or {}).get("in_model_cache") or {}
            read = (cache.get("warm_bytes") or 0) + (cache.get("cold_bytes") or 0)
            windows = e.get("n")
            rows.append(
                {
                    "id": u["id"],
                    "label": u["label"],
                    "tier": u["tier"],
                    "family": u["family"],
                    "call": u["call"],
                    "invocations": u["invocations"],
                    "traced_mean_us": u["traced_mean_us"],
                    "status": u["status"],
                    "mean_us": t.get("mean"),
                    "std_us": t.get("std"),
                    "predicted_us": u.get("predicted_us"),
                    "energy_j": e.get("mean"),
                    "predicted_energy_j": u.get("predicted_energy_j"),
                    "after_lead_in_us": a.get("time_us"),
                    "after_lead_in_energy_j": a.get("energy_j"),
                    "after_lead_in_capped": bool(a.get("capped_windows")) if a else None,
                    "after_lead_in_duty_share": a.get("duty_share"),
                    "energy_windows": windows,
                    "energy_sem_j": e["std"] / windows ** 0.5 if windows and windows > 1 else None,
                    "at_duty": bool(u.get("energy_at_duty")),
                    "after_lead_in_energy_sem_j": a.get("energy_sem_j"),
                    "after_lead_in_one_window": bool(a.get("one_window")) if a else None,
                    "restoring_copy_energy_j": r.get("copy_energy_j"),
                    "restoring_copy_one_window": bool(r.get("copy_one_window")) if r else None,
                    "kernels_us": (u.get("launches_verified") or {}).get("kernels_us"),
                    "after_lead_in_kernels_us": k.get("unit_us"),
                    "after_lead_in_lead_ins_kernels_us": k.get("lead_ins_us"),
                    "after_lead_in_lead_ins_alone_kernels_us": k.get("lead_ins_alone_us"),
                    "after_lead_in_gaps_us": k.get("led_gaps_us"),
                    "after_lead_in_lead_ins_alone_gaps_us": k.get("lead_ins_alone_gaps_us"),
                    "busy_us": (u.get("launches_verified") or {}).get("busy_us"),
                    "after_lead_in_busy_us": k.get("unit_busy_us"),
                    "each_invocation": bool(each),
                    "kernels_as_it_ran_us": each.get("kernels_as_it_ran_us"),
                    "own_values_kernels_us": each.get("own_values_kernels_us"),
                    "model_values_kernels_us": each.get("model_values_kernels_us"),
                    "in_model_cache_kernels_us": cache.get("kernels_us"),
                    "in_model_cache_busy_us": cache.get("busy_us"),
                    "in_model_cache_cold_share": cache.get("cold_bytes", 0) / read if read else None,
                    "in_model_cache_outside_image": cache.get("outside_image_operands"),
                    "in_model_cache_outside_touched_bytes": cache.get("outside_image_touched_bytes"),
                    "in_model_cache_invocations": cache.get("invocations"),
                    "in_model_cache_code_evicted": cache.get("code_evicted_invocations"),
                    "in_model_cache_lead_in_steps": cache.get("lead_in_steps"),
                    "in_model_cache_lead_in_reads_from_producers": cache.get("lead_in_reads_from_producers"),
                }
            )
        return _pd.DataFrame(rows)

    @property
    def round_units(self):
        """One row per unit the round of every unit told apart (isolated results with
        --verify, every unit having launched as many kernels as alone): unit, round_us and
        alone_us (its kernels' durations per invocation in the round and alone, CUPTI), and
        since session 40 round_busy_us and alone_busy_us (their busy times, which the
        prediction takes where every row has them). As recorded: since session 41 the report
        takes a unit whose busy time alone exceeds both its time alone and its busy time in
        the round by over 5 % at its time alone (its record ran at another clock), and says
        so in its coverage. Since session 43 alone_at_step: alone is the unit at the step the
        round ran it (a unit measured with each invocation from the model's values), not its
        mean over its steps. Since session 44, for a unit the round ran over non-finite values
        and that was recorded alone over them and over the model's: values_recorded,
        round_values_kernels_us and model_values_kernels_us (its kernels alone over each),
        round_as_recorded_us (its kernels in the round as recorded) and values_set (they
        changed its kernels, and round_us is then its kernels alone); since session 45
        values_in_place (its reads did not fit beside the image: recorded in place, one
        launch each way from an idle GPU with no copies), values_slower_in_round (checked
        because its kernels ran at least 5 % and 20 us longer in the round than alone) and
        values_bound_operands (operands of its step bound to results an earlier step
        allocates, which the round read from its own memory pool and the record over the
        round's values does not hold). Empty without a round so recorded."""
        t = ((self.raw.get("isolated") or {}).get("transitions") or {})
        keep = ["unit", "round_us", "alone_us", "round_busy_us", "alone_busy_us", "alone_at_step",
                "values_recorded", "round_values_kernels_us", "model_values_kernels_us",
                "round_as_recorded_us", "values_set", "values_in_place", "values_slower_in_round",
                "values_bound_operands"]
        rows = []
        for r in t.get("round_unit_kernels", []):
            v = r.get("values") or {}
            rows.append({c: r.get(c) for c in keep[:5]} | {
                "alone_at_step": bool(r.get("alone_at_step")),
                "values_recorded": bool(v),
                "round_values_kernels_us": v.get("round_values_kernels_us"),
                "model_values_kernels_us": v.get("model_values_kernels_us"),
                "round_as_recorded_us": v.get("round_as_recorded_us"),
                "values_set": bool(v.get("set")),
                "values_in_place": bool(v.get("in_place")),
                "values_slower_in_round": bool(v.get("slower_in_round")),
                "values_bound_operands": int(v.get("bound_operands") or 0),
            })
        return _pd.DataFrame(rows, columns=keep)

    @property
    def own_time(self):
        """kc's own time per unit of an isolated pass, milliseconds (`setup_ms`, `wall_ms`;
        kc's cost, not a figure of the unit): one row per unit measured, id, label, wall_ms
        (the unit's whole measurement, since session 31), the setup before its timed
        launches (restore, copies, census, capture, warm, record: since session 23), and
        around its energy series (enqueue_timed, to_series, queued, drain, after: since
        session 55; between, probe, join: after session 55's calls). None where the results
        do not say."""
        keep = ["restore", "copies", "census", "capture", "warm", "record", "enqueue_timed",
                "to_series", "queued", "drain", "after", "between", "probe", "join"]
        rows = [{"id": u["id"], "label": u["label"], "wall_ms": u.get("wall_ms")}
                | {k: (u["setup_ms"] or {}).get(k) for k in keep}
                for u in self.raw["units"] if u.get("setup_ms")]
        return _pd.DataFrame(rows, columns=["id", "label", "wall_ms"] + keep)

    @property
    def windows(self):
        """One row per energy window: label, start, end, duration_s, energy_j, avg_power_w,
        ticks, completed."""
        keep = ["label", "start", "end", "start_unix_ms", "end_unix_ms", "duration_s", "energy_j",
                "avg_power_w", "ticks", "completed"]
        return _pd.DataFrame([{k: w.get(k) for k in keep} for w in self.raw["windows"]])

    def __repr__(self):
        return f"<kc.Results: {self.mode} run of {', '.join(self.raw['plan']['sources'])} on {self.raw['device']['name']}>"


def ingest(path_or_paths, shapes=None, eager=None, inductor_cache=None, capture=None, values=None):
    """Reads Kineto traces (one file per rank, or a directory) into a `Graph`, as `kc ingest`
    does; `shapes` is an Execution Trace or a kc JSONL shape log; `capture` is the profiled
    capture of the CUDA graph a trace replays (`kc ingest --capture`; `shapes` is then the
    capture's ET); `eager` is the eager twin of a trace of CUDA-graph replays, whose ops its
    kernels take (`kc ingest --eager`); `inductor_cache` is the Inductor cache (directory or
    .tar.gz) of a torch.compile'd trace's Triton kernels (`kc ingest --inductor-cache`);
    `values` is the values file traces/capture.py writes beside the Execution Trace given as
    `shapes` (`kc ingest --values`)."""
    return Graph(_native.ingest(_paths(path_or_paths), _opt_path(shapes, "shapes"),
                                _opt_path(eager, "eager"), _opt_path(inductor_cache, "inductor_cache"),
                                _opt_path(capture, "capture"), _opt_path(values, "values")))


def diff(a, b):
    """Compares two `Graph`s of the same model (`kc diff --json`): per iteration, per op and
    per kernel name, with the kernels only one side launched, as a dict."""
    return _json.loads(a._g.diff_json(b._g, "A", "B"))


def read_graph(path):
    """Reads a `.kcir` file written by `kc ingest` or `Graph.write`."""
    return Graph(_native.read_graph(_path(path)))


def lower(graph):
    """Lowers a `Graph` (left unchanged) into a `Lowered` graph, as `kc lower --tiers` does."""
    return Lowered(_native.lower(graph._g))


def plan(lowered, path):
    """Builds the replay plan of a `Lowered` graph, writes it to `path` and returns the
    `Plan` (what `kc plan --json` prints)."""
    return Plan(_json.loads(_native.plan(lowered._l, _path(path))))


def read_plan(path):
    """Reads a `.kcplan` file."""
    return Plan(_json.loads(_native.read_plan(_path(path))))


def read_results(path):
    """Reads a results file of `kc exec` (schema-checked; absurd figures refused)."""
    return Results(_json.loads(_native.read_results(_path(path))))


def report(results, isolated=None, plan=None, output="kc-report", reference=None, reference_entry=None,
           method_spread=None):
    """Writes the report of `kc report` (JSON, Markdown, CSV, SVG, Chrome trace) into
    `output` and returns report.json as a dict (its `prediction`: the plain Σ isolated ×
    count and kc's prediction from parts, each term and figure with its standard
    uncertainty, against the target); `reference` is capture.py's reference.json
    (the model's own measurement), `reference_entry` the entry to use; `method_spread`
    other models' answers (tools/prediction_residuals.py), whose errors give the method's
    own spread beside the prediction's bar (`prediction.method_spread`). Raises `KcError`
    with kc's message when kc refuses the inputs. Safe to call from several threads: it
    prints nothing and leaves the process's file descriptors alone."""
    text = _native.report(
        _path(results, "results"),
        _path(output, "output"),
        _opt_path(isolated, "isolated"),
        _opt_path(plan, "plan"),
        _opt_path(reference, "reference"),
        reference_entry,
        _opt_path(method_spread, "method_spread"),
    )
    return _json.loads(text)
