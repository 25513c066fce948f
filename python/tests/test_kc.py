"""kc's Python API against kc's own command line, on the shared H100 traces and the
committed H100 results: the same numbers through both doors."""
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import kc

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
H100 = ["bloom560m_seq5", "gpt2_train_bf16", "llama7b8l_decode", "resnet50_b32", "multistream_gemm_bf16"]
RESULTS = ROOT / "fixtures" / "results"


def trace(name):
    return SHARED / "traces" / "h100" / f"{name}.pt.trace.json.gz"


def it_steps(kernels):
    """The profiled iterations kernel rows fall in."""
    return set(kernels.query("iteration >= 0")["iteration"])


def records(frame):
    """DataFrame rows as dicts, with pandas' NaN for a missing value read back as None."""
    return [{k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
            for row in frame.to_dict("records")]


def cli(*args, cwd=None):
    """The `kc` command this package installs, with --json; returns the parsed output."""
    out = subprocess.run([sys.executable, "-m", "kc._cli", *map(str, args), "--json"],
                         capture_output=True, text=True, cwd=cwd)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("name", H100)
def test_kernels_match_kc_ingest(name, tmp_path):
    g = kc.ingest(trace(name))
    k = g.kernels()
    s = cli("ingest", trace(name), "-o", tmp_path / "g.kcir")["summary"]
    assert len(k) == s["gpu_ops"]
    assert k["dur_ns"].sum() / 1000.0 == pytest.approx(s["gpu_time_us"], abs=1e-6)
    assert (k["kind"] == "kernel").sum() == s["kernels"]
    assert (k["kind"] == "memcpy").sum() == s["memcpys"]
    assert k[k["kind"] == "kernel"]["name"].nunique() == s["unique_kernel_names"]
    assert g.summary() == s
    # Linked rows name their op; the dtypes are numeric, not objects.
    assert k["op_name"].notna().sum() == s["linked_to_op"]
    assert k["start_ns"].dtype == "int64" and k["grid_x"].dtype == "uint32"
    ops = g.ops()
    assert len(ops) == s["ops_kept"]
    assert ((ops["parent"] >= -1) & (ops["parent"] < len(ops))).all()


@pytest.mark.parametrize("name", ["bloom560m_seq5", "gpt2_train_bf16"])
def test_units_match_kc_lower(name, tmp_path):
    low = kc.lower(kc.ingest(trace(name)))
    cli("ingest", trace(name), "-o", tmp_path / "g.kcir")
    out = cli("lower", "--tiers", tmp_path / "g.kcir", "-o", tmp_path / "l.kcir")
    units = low.units()
    assert records(units) == out["units"]
    assert low.summary() == out["summary"]
    p = kc.plan(low, tmp_path / "p.kcplan")
    shown = cli("plan", "show", tmp_path / "p.kcplan")
    assert records(p.units()) == shown["units"]
    assert kc.read_plan(tmp_path / "p.kcplan").summary() == shown["summary"]
    # The round of every unit, as `kc plan show --round` prints it.
    rounded = cli("plan", "show", tmp_path / "p.kcplan", "--round")
    assert records(kc.read_plan(tmp_path / "p.kcplan").round()) == rounded["round"]["entries"]


def test_results_match_the_committed_files(tmp_path):
    g = kc.read_results(RESULTS / "bloom560m_seq5.graph.json")
    i = kc.read_results(RESULTS / "bloom560m_seq5.iso.json")
    raw = json.loads((RESULTS / "bloom560m_seq5.iso.json").read_text())
    assert g.mode == "graph" and i.mode == "isolated"
    assert len(i.units) == len(raw["units"])
    ok = i.units[i.units["status"] == "ok"]
    assert (ok["mean_us"] * ok["invocations"]).sum() == pytest.approx(raw["isolated"]["predicted_us"], rel=1e-9)
    assert list(i.windows["energy_j"]) == [w["energy_j"] for w in raw["windows"]]
    rep = kc.report(RESULTS / "bloom560m_seq5.graph.json", isolated=RESULTS / "bloom560m_seq5.iso.json",
                    plan=RESULTS / "bloom560m_seq5.kcplan", output=tmp_path / "rep")
    assert rep["time"]["error_pct"] == pytest.approx(-4.99, abs=0.01)
    assert (tmp_path / "rep" / "timeline.svg").exists()


def test_units_after_their_lead_ins_are_columns_and_priced_in_the_prediction(tmp_path):
    # A kc run on an H200 (RegNetY-3.2GF in TF32, session 35) with the units that hold 0.9
    # of the energy measured after the model's steps leading up to them.
    i = kc.read_results(RESULTS / "regnety_tf32_h200.iso.json")
    u = i.units
    led = u[u["after_lead_in_energy_j"].notna() & (u["after_lead_in_capped"] == False)]  # noqa: E712
    assert len(led) == 19
    alone = (led["energy_j"] * led["invocations"]).sum()
    after = (led["after_lead_in_energy_j"] * led["invocations"]).sum()
    assert after / alone - 1 == pytest.approx(-0.0517, abs=0.001)
    rep = kc.report(RESULTS / "regnety_tf32_h200.graph.json", isolated=RESULTS / "regnety_tf32_h200.iso.json",
                    reference=RESULTS / "regnety_tf32_h200.reference.json", reference_entry="regnety_tf32",
                    output=tmp_path / "rep")
    p = rep["prediction"]
    l = p["lead_in_units"]
    # The report's sums (per replay) are the notebook's: Σ per invocation × invocations.
    assert l["alone_j"] == pytest.approx(alone, rel=1e-9)
    assert l["led_j"] == pytest.approx(after, rel=1e-9)
    # −0.35 % before session 39, when the term took out all of the round's slower kernels
    # on these units, not only the part their launches after their lead-ins hold; −0.40 %
    # before session 41 took a unit recorded slower alone than timed at its time alone.
    assert l["taken"] and p["energy_error_pct"] == pytest.approx(-0.43, abs=0.01)


def test_units_at_the_cap_after_their_lead_ins_are_marked_by_their_duty_share(tmp_path):
    # A kc run on an H200 (BERT's graph, session 36): its four GEMMs held down by the power
    # cap alone were measured after their lead-ins at a duty cycle, and the prediction takes
    # them beside the others not held down.
    u = kc.read_results(RESULTS / "bert_graph_h200.iso.json").units
    duty = u[u["after_lead_in_duty_share"].notna()]
    assert len(duty) == 4 and set(duty["label"]) <= {"aten::addmm", "aten::bmm"}
    assert not duty["after_lead_in_capped"].any()
    taken = u[u["after_lead_in_energy_j"].notna() & (u["after_lead_in_capped"] == False)]  # noqa: E712
    rep = kc.report(RESULTS / "bert_graph_h200.graph.json", isolated=RESULTS / "bert_graph_h200.iso.json",
                    reference=RESULTS / "bert_graph_h200.reference.json", reference_entry="bert_infer_graph",
                    output=tmp_path / "rep")
    l = rep["prediction"]["lead_in_units"]
    assert l["at_duty"] == 4
    assert l["led_j"] == pytest.approx((taken["after_lead_in_energy_j"] * taken["invocations"]).sum(), rel=1e-9)


def test_report_gives_the_prediction_from_parts_against_the_model(tmp_path):
    # A kc run on an H100 (Qwen2 decode graph) with the model measured in the same call.
    rep = kc.report(RESULTS / "qwen2_4l_decode_graph.graph.json",
                    isolated=RESULTS / "qwen2_4l_decode_graph.iso.json",
                    reference=RESULTS / "qwen2_4l_decode_graph.reference.json",
                    reference_entry="qwen2_4l_decode_b4_graph", output=tmp_path / "rep")
    p = rep["prediction"]
    assert p["terms_measured"] and p["target"] == "the model (CUDA graph)"
    assert p["plain_us"] + sum(t["us"] for t in p["terms"]) == pytest.approx(p["predicted_us"], rel=1e-12)
    assert p["plain_error_pct"] == pytest.approx(-12.93, abs=0.01)
    assert abs(p["error_pct"]) < 0.1 and p["time_outside"] is False
    assert p["predicted_u_us"] > 0


def test_report_sets_the_methods_spread_over_the_charts_answers_beside_the_bar(tmp_path):
    # The H200 chart's 81 answers (session 49): their spread stands beside the bar, which
    # stays the repeats' own.
    answers = ROOT / "docs" / "results" / "2026-11-29-session49" / "answers.json"
    args = dict(isolated=RESULTS / "qwen2_4l_decode_graph.iso.json",
                reference=RESULTS / "qwen2_4l_decode_graph.reference.json",
                reference_entry="qwen2_4l_decode_b4_graph")
    rep = kc.report(RESULTS / "qwen2_4l_decode_graph.graph.json", output=tmp_path / "m",
                    method_spread=answers, **args)
    plain = kc.report(RESULTS / "qwen2_4l_decode_graph.graph.json", output=tmp_path / "p", **args)
    m = rep["prediction"]["method_spread"]
    assert m["time_answers"] == 81 and m["left_out"] == 0
    assert m["time_sd_pct"] == pytest.approx(0.68, abs=0.01)
    assert m["time_outside"] is False
    assert rep["prediction"]["predicted_u_us"] == plain["prediction"]["predicted_u_us"]
    assert "method_spread" not in plain["prediction"]


def test_bad_input_raises_kc_error_naming_the_file(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": ')
    with pytest.raises(kc.KcError) as e:
        kc.ingest(bad)
    assert "broken.json" in str(e.value) and "byte" in str(e.value)
    with pytest.raises(kc.KcError, match="not a kc plan"):
        kc.read_plan(RESULTS / "bloom560m_seq5.graph.json")
    with pytest.raises(kc.KcError, match="nope.kcplan: cannot read"):
        kc.report(RESULTS / "bloom560m_seq5.graph.json", plan=tmp_path / "nope.kcplan", output=tmp_path / "r")
    other = tmp_path / "other.kcplan"
    kc.plan(kc.lower(kc.ingest(trace("bloom560m_seq5"))), other)
    with pytest.raises(kc.KcError, match="not the plan"):
        kc.report(RESULTS / "bloom560m_seq5.graph.json", plan=other, output=tmp_path / "r")
    hostile = SHARED / "examples" / "hostile" / "report_hang_iso_traced_mean_1e308.json"
    with pytest.raises(kc.KcError, match="traced_mean_us"):
        kc.read_results(hostile)


def test_the_kc_command_is_installed_and_the_same_cli(tmp_path):
    out = subprocess.run([sys.executable, "-m", "kc._cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("kc ")
    bad = subprocess.run([sys.executable, "-m", "kc._cli", "lower", "--tiers", "/dev/zero"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "not a kc graph" in bad.stderr


def test_report_is_safe_from_threads_and_leaves_stdout_alone(tmp_path):
    """kc.report once redirected fds 1 and 2 of the whole process: from threads, calls got
    the other model's report and stdout was gone afterwards."""
    import concurrent.futures as cf

    pairs = {
        "bloom": (RESULTS / "bloom560m_seq5.graph.json", RESULTS / "bloom560m_seq5.iso.json"),
        "gpt2": (RESULTS / "gpt2s_b4s128_et.graph.json", RESULTS / "gpt2s_b4s128_et.iso.json"),
    }
    expect = {k: kc.report(g, isolated=i, output=tmp_path / f"solo_{k}")["time"] for k, (g, i) in pairs.items()}
    assert expect["bloom"] != expect["gpt2"]
    stdout_before = os.fstat(1)

    def one(n):
        k = "bloom" if n % 2 else "gpt2"
        g, i = pairs[k]
        return k, kc.report(g, isolated=i, output=tmp_path / f"r{n}")["time"]

    with cf.ThreadPoolExecutor(4) as ex:
        got = list(ex.map(one, range(24)))
    assert all(t == expect[k] for k, t in got)
    after = os.fstat(1)
    assert (after.st_dev, after.st_ino) == (stdout_before.st_dev, stdout_before.st_ino)


def test_writes_never_replace_an_input_and_paths_are_typed(tmp_path):
    shutil.copy(SHARED / "traces" / "h100" / "multistream_gemm_bf16.pt.trace.json.gz", tmp_path / "t.json.gz")
    src = tmp_path / "t.json.gz"
    before = src.read_bytes()
    g = kc.ingest(src)
    with pytest.raises(kc.KcError, match="refusing to write over an input"):
        g.write(src)
    with pytest.raises(kc.KcError, match="refusing to write over an input"):
        kc.lower(g).write(str(src))
    assert src.read_bytes() == before
    with pytest.raises(TypeError):
        kc.plan(kc.lower(g), None)
    with pytest.raises(TypeError):
        kc.plan(kc.lower(g), 2**70)
    assert not (Path.cwd() / "None").exists()
    with pytest.raises(kc.KcError, match="no trace given"):
        kc.ingest([])
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    with pytest.raises(kc.KcError, match="FIFO"):
        kc.plan(kc.lower(g), fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("name", ["gpt2_train_bf16", "multistream_gemm_bf16"])
def test_analysis_tables_match_kc_analyze_and_the_kernel_rows(name):
    g = kc.ingest(trace(name))
    a = g.analysis()
    assert a == cli("analyze", trace(name))
    k = g.kernels()
    stats = g.kernel_stats()
    # The statistics are the kernel rows grouped by name, whole nanoseconds summed.
    assert stats["count"].sum() == len(k)
    assert stats["total_us"].sum() == pytest.approx(k["dur_ns"].sum() / 1000.0, abs=1e-6)
    top = stats.iloc[0]
    rows = k[k["name"] == top["name"]]["dur_ns"]
    assert top["count"] == len(rows) and top["max_us"] == rows.max() / 1000.0
    # Ops carry their iteration too, the same steps as the kernel rows.
    assert set(g.ops().query("iteration >= 0")["iteration"]) == set(it_steps(k))
    ops = g.op_stats()
    assert ops["total_us"].sum() == pytest.approx(k["dur_ns"].sum() / 1000.0, abs=1e-6)
    it = g.iterations()
    assert ((it["busy_us"] + it["idle_us"] - it["span_us"]).abs() < 1e-6).all()
    assert (it["busy_us"] <= it["kernel_sum_us"] + 1e-6).all()
    # Iteration and correlation ids join the kernel rows with the trace and the tables.
    stepped = k[k["iteration"] >= 0]
    assert set(stepped["iteration"]) == set(it["iteration"].dropna().astype(int))
    assert k["correlation"].dtype == "uint64"
    assert len(g.launch_latency()) >= 1


def test_diff_of_a_trace_with_itself_changes_nothing():
    g = kc.ingest(trace("multistream_gemm_bf16"))
    d = kc.diff(g, g)
    assert d["new_kernels"] == [] and d["vanished_kernels"] == []
    assert all(r["delta_us"] == 0 for r in d["kernels"] + d["ops"])


def test_lowered_kernels_join_their_units():
    low = kc.lower(kc.ingest(trace("bloom560m_seq5")))
    k, u = low.kernels(), low.units()
    assert (k["unit"] >= 0).all()
    joined = k.merge(u[["id", "tier"]], left_on="unit", right_on="id", suffixes=("", "_unit"))
    assert len(joined) == len(k)
    # A unit's tier is the tier of every activity it launched.
    assert (joined["tier"].astype(str) == joined["tier_unit"].astype(str)).mean() > 0.99


def test_recorded_values_reach_the_graph_as_through_the_cli(tmp_path):
    fx = ROOT / "fixtures" / "values"
    t, et, v = (fx / f"mixtral2l_b2s256.{s}" for s in ("pt.trace.json.gz", "et.json.gz", "values.bin"))
    g = kc.ingest(t, shapes=et, values=v)
    s = cli("ingest", t, "--shapes", et, "--values", v, "-o", tmp_path / "g.kcir")["summary"]
    assert g.summary() == s
    assert s["inputs_with_recorded_values"] > 100
    assert "inputs_with_recorded_values" not in kc.ingest(t, shapes=et).summary()


def test_units_over_one_window_are_columns_and_the_pooled_spread_is_the_notebooks(tmp_path):
    # A kc run on an H200 (ResNet-50, session 38): units alone, their launches after their
    # lead-ins and restoring copies measured over one window where the unit's share of the
    # model asked no more; the report gives each the spread of one window pooled over the
    # units measured over two or more, not at a duty cycle.
    u = kc.read_results(RESULTS / "resnet50_h200_s38.iso.json").units
    ok = u[u["status"] == "ok"]
    one = ok[ok["energy_windows"] == 1]
    assert one["energy_sem_j"].isna().all()
    two = ok[(ok["energy_windows"] > 1) & ~ok["at_duty"]]
    rel_sd = (two["energy_sem_j"] * two["energy_windows"] ** 0.5) / two["energy_j"]
    pooled = float((rel_sd**2).mean() ** 0.5)
    led_one = ok[ok["after_lead_in_one_window"] == True]  # noqa: E712
    assert len(led_one) > 0 and led_one["after_lead_in_energy_sem_j"].isna().all()
    copies_one = ok[ok["restoring_copy_one_window"] == True]  # noqa: E712
    rep = kc.report(RESULTS / "resnet50_h200_s38.graph.json", isolated=RESULTS / "resnet50_h200_s38.iso.json",
                    reference=RESULTS / "resnet50_h200_s38.reference.json", reference_entry="resnet50",
                    output=tmp_path / "rep")
    p = rep["prediction"]
    w = p["one_window"]
    assert (w["units"], w["pooled_from"], w["copies"]) == (len(one), len(two), len(copies_one))
    assert w["pooled_rel_sd"] == pytest.approx(pooled, rel=1e-9)
    l = p["lead_in_units"]
    assert l["one_window"] == len(led_one[led_one["after_lead_in_capped"] == False])  # noqa: E712
    assert l["one_window_rel_sd"] == pytest.approx(pooled, rel=1e-9)


def test_units_after_their_lead_ins_recorded_with_cupti_sum_to_the_reports_kernels(tmp_path):
    # A kc run --lead-in-kernels on an H200 (ResNet-50, session 39): both launches of each
    # unit after its lead-ins recorded with CUPTI. The notebook's columns, summed over the
    # units whose kernels were told apart, give the report's lead_in_units.kernels.
    u = kc.read_results(RESULTS / "resnet50_h200_s39.iso.json").units
    split = u[u["after_lead_in_kernels_us"].notna() & u["kernels_us"].notna()]
    assert len(split) > 10
    n = split["invocations"]
    rep = kc.report(RESULTS / "resnet50_h200_s39.graph.json", isolated=RESULTS / "resnet50_h200_s39.iso.json",
                    reference=RESULTS / "resnet50_h200_s39.reference.json", reference_entry="resnet50",
                    output=tmp_path / "rep")
    k = rep["prediction"]["lead_in_units"]["kernels"]
    assert k["units"] == len(split)
    assert k["unit_kernels_us"] == pytest.approx((split["after_lead_in_kernels_us"] * n).sum(), rel=1e-9)
    assert k["alone_kernels_us"] == pytest.approx((split["kernels_us"] * n).sum(), rel=1e-9)
    beyond = split["after_lead_in_lead_ins_kernels_us"] - split["after_lead_in_lead_ins_alone_kernels_us"]
    assert k["lead_ins_kernels_beyond_alone_us"] == pytest.approx((beyond * n).sum(), rel=1e-9)
    gaps = split["after_lead_in_gaps_us"] - split["after_lead_in_lead_ins_alone_gaps_us"]
    assert k["gaps_beyond_alone_us"] == pytest.approx((gaps * n).sum(), rel=1e-9)
    # Its units' own kernels ran as alone, within 1 %, where the launches' difference read
    # longer than alone.
    assert abs(k["unit_kernels_us"] / k["alone_kernels_us"] - 1) < 0.01
    assert k["led_us"] > k["alone_us"]


def test_the_rounds_units_give_the_slower_kernels_term_by_busy_time(tmp_path):
    """ResNeXt-101 32x8d on an H200 (session 40, fixtures/results/README.md): two of its units
    run kernels side by side, and the report splits the round's cost by busy time. The
    notebook's round_units, over the units' invocations, give the report's slower-kernels
    term; by durations they would give far more."""
    res = kc.read_results(RESULTS / "resnext101_h200_s40.iso.json")
    r = res.round_units
    assert len(r) == 42 and r["round_busy_us"].notna().all()
    n = r["unit"].map(res.units.set_index("id")["invocations"])
    busy = ((r["round_busy_us"] - r["alone_busy_us"]) * n).sum()
    durations = ((r["round_us"] - r["alone_us"]) * n).sum()
    rep = kc.report(RESULTS / "resnext101_h200_s40.graph.json", isolated=RESULTS / "resnext101_h200_s40.iso.json",
                    reference=RESULTS / "resnext101_h200_s40.reference.json", reference_entry="resnext101",
                    output=tmp_path / "rep")
    p = rep["prediction"]
    assert p["round_split_by"] == "busy time"
    term = next(t for t in p["terms"] if t["what"].startswith("kernels slower"))
    assert term["us"] == pytest.approx(busy, rel=1e-9)
    assert durations > busy + 100
    # The side-by-side units alone: durations several times their busy time.
    u = res.units
    side = u[u["kernels_us"] > 1.5 * u["mean_us"]]
    assert len(side) == 2 and (side["kernels_us"] > 4 * side["busy_us"]).all()


def test_units_measured_with_each_invocation_from_the_models_values_are_columns(tmp_path):
    """Swin3D-T on an H200 (session 43, fixtures/results/README.md): three units whose launch
    read at one invocation what another wrote were measured with each invocation from the
    model's values. The notebook sees which, what the model's values changed in their
    kernels, and that the round set them against themselves alone at its step; its
    round_units give the report's slower-kernels term."""
    res = kc.read_results(RESULTS / "swin3d_t_h200_s43.iso.json")
    u = res.units
    each = u[u["each_invocation"]]
    assert len(each) == 3 and u.loc[~u["each_invocation"], "model_values_kernels_us"].isna().all()
    softmax = each.set_index("id").loc[108]
    assert softmax["model_values_kernels_us"] - softmax["own_values_kernels_us"] > 19.0
    assert softmax["mean_us"] - softmax["kernels_as_it_ran_us"] > 19.0
    r = res.round_units
    assert set(r.loc[r["alone_at_step"], "unit"]) == set(each["id"])
    n = r["unit"].map(u.set_index("id")["invocations"])
    busy = ((r["round_busy_us"] - r["alone_busy_us"]) * n).sum()
    rep = kc.report(RESULTS / "swin3d_t_h200_s43.graph.json", isolated=RESULTS / "swin3d_t_h200_s43.iso.json",
                    reference=RESULTS / "swin3d_t_h200_s43.reference.json", reference_entry="swin3d_t",
                    output=tmp_path / "rep")
    term = next(t for t in rep["prediction"]["terms"] if t["what"].startswith("kernels slower"))
    assert term["us"] == pytest.approx(busy, rel=1e-9)


def test_units_the_round_ran_over_non_finite_values_are_columns(tmp_path):
    """Mixtral's training step graph on an H200 (session 44, fixtures/results/README.md): the
    round ran half its places to NaN, and 41 units were recorded alone over the values it
    left and over the model's. The notebook sees which, what the values did to their
    kernels, and that the three they changed are taken alone; the report's slower-kernels
    term is their busy time beyond alone."""
    res = kc.read_results(RESULTS / "mixtral_train_graph_h200_s44.iso.json")
    r = res.round_units
    assert r["values_recorded"].sum() == 41 and r["values_set"].sum() == 3
    adamw = r.set_index("unit").loc[148]
    assert adamw["values_set"] and adamw["round_us"] == adamw["alone_us"]
    assert adamw["round_values_kernels_us"] - adamw["model_values_kernels_us"] > 600
    assert adamw["round_as_recorded_us"] == pytest.approx(adamw["round_values_kernels_us"], rel=0.01)
    assert r.loc[~r["values_recorded"], "round_values_kernels_us"].isna().all()
    assert not r["values_in_place"].any() and not r["values_slower_in_round"].any()
    u = res.units.set_index("id")
    n = r["unit"].map(u["invocations"])
    busy = ((r["round_busy_us"] - r["alone_busy_us"]) * n).sum()
    rep = kc.report(RESULTS / "mixtral_train_graph_h200_s44.graph.json",
                    isolated=RESULTS / "mixtral_train_graph_h200_s44.iso.json",
                    reference=RESULTS / "mixtral_train_graph_h200_s44.reference.json",
                    reference_entry="mixtral_train_graph", output=tmp_path / "rep")
    term = next(t for t in rep["prediction"]["terms"] if t["what"].startswith("kernels slower"))
    # One unit recorded slower alone than timed is taken at its time alone in the report's
    # split (1.1 us a cycle, its coverage says): the term is the rest.
    assert term["us"] == pytest.approx(busy, abs=20.0)
    assert rep["prediction"]["round_units_by_values"].startswith("41 units of the round")


def test_a_unit_slower_in_the_round_is_a_column():
    """BLOOM's training step graph on an H200 (session 45, fixtures/results/README.md): its
    fused AdamW ran a third longer in the round than alone with its places' values finite,
    and was recorded alone over the round's values and the model's for it. The notebook
    sees why it was recorded, and that the values did not change it."""
    r = kc.read_results(RESULTS / "bloom_train_graph_h200_s45.iso.json").round_units
    assert r["values_recorded"].sum() == 4 and r["values_slower_in_round"].sum() == 1
    adamw = r.set_index("unit").loc[85]
    assert adamw["values_slower_in_round"] and not adamw["values_set"]
    assert adamw["round_us"] > 1.3 * adamw["alone_us"]
    assert adamw["round_values_kernels_us"] == pytest.approx(adamw["model_values_kernels_us"], rel=0.01)
    # Results from before bound operands were counted read none.
    assert (r["values_bound_operands"] == 0).all()


def test_units_in_the_models_cache_state_are_columns_and_give_the_reports_figure(tmp_path):
    """SqueezeNet 1.1 on an H200 (session 51, fixtures/results/README.md): every unit was
    recorded alone and in the model's cache state. The notebook's columns, set against the
    report's kernels in kc's graph per unit, give the report's per-unit figures, and the
    model's cache state stands nearer kc's graph than the units alone (1.5 against 3.1 %)."""
    res = kc.read_results(RESULTS / "squeezenet_h200_s51.iso.json")
    u = res.units
    assert u["in_model_cache_kernels_us"].notna().sum() == 46
    assert ((u["in_model_cache_cold_share"] >= 0) & (u["in_model_cache_cold_share"] <= 1)).all()
    rep = kc.report(RESULTS / "squeezenet_h200_s51.graph.json", isolated=RESULTS / "squeezenet_h200_s51.iso.json",
                    reference=RESULTS / "squeezenet_h200_s51.reference.json", reference_entry="squeezenet",
                    output=tmp_path / "rep")
    ctx = {r["id"]: r["in_context_mean_us"] for r in rep["units"] if r.get("in_model_cache_vs_in_context_pct") is not None}
    cache = u.set_index("id")["in_model_cache_kernels_us"]
    errs = sorted(abs(100 * (cache[i] / c - 1)) for i, c in ctx.items())
    n = len(errs)
    median = (errs[n // 2] + errs[(n - 1) // 2]) / 2
    t = rep["time"]
    assert t["units_in_model_cache_vs_in_context"] == n == 46
    assert t["unit_in_model_cache_vs_in_context_median_abs_pct"] == pytest.approx(median, rel=1e-9)
    assert t["unit_in_model_cache_vs_in_context_median_abs_pct"] < t["unit_isolated_vs_in_context_median_abs_pct"]


def test_operands_outside_the_image_touched_where_their_producer_is_near(tmp_path):
    """Mistral's decode graph on an H200 (session 52, call 4, fixtures/results/README.md):
    of the units with operands the image does not hold, those whose producer ran less than
    L2 of bytes before had them touched, the rest (made once an iteration, or kept on
    recorded values: the mask's `bitwise_and`s) none; kc's graph's in-context figures are
    the mean of three launches back to back; the report's median over the units the image
    holds all is the median over those columns."""
    res = kc.read_results(RESULTS / "mistral_decode_graph_h200_s52.iso.json")
    u = res.units.set_index("id")
    outside = u[u["in_model_cache_outside_image"] > 0]
    assert len(outside) == 17
    touched = outside["in_model_cache_outside_touched_bytes"]
    assert (touched > 0).sum() == 6 and (touched == 0).sum() == 11
    assert touched.loc[9] == 0 and touched.loc[11] == 0 and touched.loc[8] > 0
    graph = json.loads((RESULTS / "mistral_decode_graph_h200_s52.graph.json").read_text())
    assert graph["graph"]["fidelity"]["launches_averaged"] == 3
    rep = kc.report(RESULTS / "mistral_decode_graph_h200_s52.graph.json",
                    isolated=RESULTS / "mistral_decode_graph_h200_s52.iso.json", output=tmp_path / "rep")
    held = [abs(r["in_model_cache_vs_in_context_pct"]) for r in rep["units"]
            if r.get("in_model_cache_vs_in_context_pct") is not None
            and u.loc[r["id"], "in_model_cache_outside_image"] == 0]
    held.sort()
    n = len(held)
    t = rep["time"]
    assert t["units_in_model_cache_image_held"] == n == 36
    assert t["unit_in_model_cache_image_held_median_abs_pct"] == pytest.approx((held[n // 2] + held[(n - 1) // 2]) / 2, rel=1e-9)


def test_code_evicted_before_the_invocations_whose_code_the_model_left_far(tmp_path):
    """Mistral's decode graph on an H200 (session 53, call 2, fixtures/results/README.md):
    each unit's record in the model's cache state evicted its code before the invocations
    whose step's code the model last ran more than L2 of bytes before; the report gives
    the share over the units it sets against kc's graph. A decode step's head and its
    layers' units ran far (the whole share), units right after a step with their own
    kernels near (none). Session 52's results, which kept the code, say nothing of it."""
    res = kc.read_results(RESULTS / "mistral_decode_graph_h200_s53.iso.json")
    u = res.units.set_index("id")
    evicted, n = u["in_model_cache_code_evicted"], u["in_model_cache_invocations"]
    assert ((evicted >= 0) & (evicted <= n)).all()
    # cos (16) runs once a step after other units; the second arange (3) right after the first.
    assert evicted.loc[16] == n.loc[16] > 0 and evicted.loc[3] == 0
    assert 0 < (evicted == n).sum() < len(u)
    rep = kc.report(RESULTS / "mistral_decode_graph_h200_s53.graph.json",
                    isolated=RESULTS / "mistral_decode_graph_h200_s53.iso.json", output=tmp_path / "rep")
    ids = [r["id"] for r in rep["units"] if r.get("in_model_cache_vs_in_context_pct") is not None]
    share = 100 * evicted.loc[ids].sum() / n.loc[ids].sum()
    assert rep["time"]["in_model_cache_code_evicted_pct"] == pytest.approx(share, rel=1e-9)
    old = kc.read_results(RESULTS / "mistral_decode_graph_h200_s52.iso.json").units
    assert old["in_model_cache_code_evicted"].isna().all()
    rep52 = kc.report(RESULTS / "mistral_decode_graph_h200_s52.graph.json",
                      isolated=RESULTS / "mistral_decode_graph_h200_s52.iso.json", output=tmp_path / "rep52")
    assert "in_model_cache_code_evicted_pct" not in rep52["time"]


def test_the_record_with_the_model_steps_leading_up_to_each_invocation(tmp_path):
    """Mistral's decode graph on an H200, one call (session 54, call 6,
    fixtures/results/README.md): kc's default record in the model's cache state, and with
    the model's steps leading up to each invocation run before it after L2 is turned over
    (--model-cache-lead-ins). Every unit after the first step ran lead-ins; the MLP's silu
    and mul (49, 50), right after the GEMM that writes their input, ran 15-20 % under kc's
    graph without them and within 5 % with them."""
    lead = kc.read_results(RESULTS / "mistral_decode_graph_h200_s54.lead.json").units.set_index("id")
    far = kc.read_results(RESULTS / "mistral_decode_graph_h200_s54.far.json").units.set_index("id")
    steps = lead["in_model_cache_lead_in_steps"]
    assert far["in_model_cache_lead_in_steps"].isna().all()
    assert (steps.dropna() >= 0).all() and (steps > 0).sum() >= len(steps) - 1
    graph = RESULTS / "mistral_decode_graph_h200_s54.graph.json"
    errs = {}
    for way in ("far", "lead"):
        rep = kc.report(graph, isolated=RESULTS / f"mistral_decode_graph_h200_s54.{way}.json",
                        output=tmp_path / way)
        errs[way] = {r["id"]: r["in_model_cache_vs_in_context_pct"] for r in rep["units"]
                     if r.get("in_model_cache_vs_in_context_pct") is not None}
    for unit in (49, 50):
        assert errs["far"][unit] < -10 and abs(errs["lead"][unit]) < 5, (unit, errs["far"][unit], errs["lead"][unit])


def test_the_mask_units_read_their_producers_result_where_no_lead_in_writes_integers_in_place(tmp_path):
    """GPT-2's decode graph on an H200, one call (session 55, call 1,
    fixtures/results/README.md), a model the record with lead-ins was not developed on:
    kc's graph and the record in the model's cache state with the model's steps leading up
    to each invocation, every integer and boolean read on its stand-in
    (--model-cache-lead-ins stand-ins) and on the lead-ins' results (producers, kc's
    default since). The attention mask's second add (4) ran 15 % under kc's graph on its
    stand-in and within 3 % on its producer's result; the adds whose lead-ins bump the
    cache position in place (2, 7) keep their stand-ins, so none of their invocations
    counts as read from producers."""
    graph = RESULTS / "gpt2_decode_graph_h200_s55.graph.json"
    units, errs = {}, {}
    for way in ("lead", "leadp"):
        iso = RESULTS / f"gpt2_decode_graph_h200_s55.{way}.json"
        units[way] = kc.read_results(iso).units.set_index("id")
        rep = kc.report(graph, isolated=iso, output=tmp_path / way)
        errs[way] = {r["id"]: r["in_model_cache_vs_in_context_pct"] for r in rep["units"]
                     if r.get("in_model_cache_vs_in_context_pct") is not None}
        assert rep["time"]["in_model_cache_lead_in_steps"] > 0
    produced = units["leadp"]["in_model_cache_lead_in_reads_from_producers"]
    assert units["lead"]["in_model_cache_lead_in_reads_from_producers"].isna().all()
    assert produced[4] == units["leadp"]["in_model_cache_invocations"][4]
    assert produced[2] == 0 and produced[7] == 0
    assert errs["lead"][4] < -10 and abs(errs["leadp"][4]) < 3, (errs["lead"][4], errs["leadp"][4])


def test_kcs_own_time_per_unit_is_read_from_the_results():
    """GPT-2's decode graph's isolated pass (session 55, call 1, time only): every unit
    measured has its setup before its timed launches; without energy windows none has a
    series, so the fields around one are absent; each unit's whole measurement holds its
    setup."""
    own = kc.read_results(RESULTS / "gpt2_decode_graph_h200_s55.leadp.json").own_time
    assert len(own) == 27
    assert (own["record"] > 0).all() and (own["restore"] >= 0).all()
    assert own["drain"].isna().all() and own["to_series"].isna().all()
    setup = own[["restore", "copies", "census", "capture", "warm", "record"]].sum(axis=1)
    assert (own["wall_ms"] >= setup).all()

