# %% [markdown]
# # kc in a notebook
#
# Run cell by cell in Jupyter or VS Code (`# %%` cells), or as a script, from the checkout
# with `../shared` beside it, after `pip install ./python matplotlib`. It ingests a shared
# H100 trace, shows the tier table, and plots traced against isolated time per unit from
# the results committed in `fixtures/results` (measured on an H100); then the prediction
# from parts of an H200 run against the model's own CUDA graph, term by term, the round's
# slower kernels by durations and by busy time, each unit alone and in the model's cache
# state against its kernels in kc's graph, that record with each unit's code kept or
# evicted where the model's is far, and with the model's steps leading up to each
# invocation run before it.

# %%
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # a file, also without a display; drop this line in a notebook
import matplotlib.pyplot as plt

import kc

root = Path(__file__).resolve().parents[1] if "__file__" in globals() else Path.cwd()
trace = root.parent / "shared" / "traces" / "h100" / "bloom560m_seq5.pt.trace.json.gz"

# %% The kernels of the trace, one row each
g = kc.ingest(trace)
kernels = g.kernels()
print(g)
print(kernels.groupby("name", observed=True)["dur_ns"].agg(["count", "sum"])
      .sort_values("sum", ascending=False).head(8))

# %% The tier table: what kc can replay, and through which API
low = kc.lower(g)
tiers = low.summary()["tiers"]
print(f"{'tier':<13} {'API':<20} {'units':>6} {'invocations':>12} {'% time':>7}")
for t in tiers.values():
    print(f"{t['tier']:<13} {t['api']:<20} {t['unique_units']:>6} {t['invocations']:>12} {t['pct_gpu_time']:>7.2f}")

# %% Traced against isolated time per unit (results measured on an H100)
results = kc.read_results(root / "fixtures" / "results" / "bloom560m_seq5.iso.json")
units = results.units.dropna(subset=["mean_us"])
fig, ax = plt.subplots(figsize=(6, 5))
for tier, rows in units.groupby("tier"):
    ax.scatter(rows["traced_mean_us"], rows["mean_us"], label=f"tier {tier}", s=18)
lo = min(units["traced_mean_us"].min(), units["mean_us"].min()) / 2
hi = max(units["traced_mean_us"].max(), units["mean_us"].max()) * 2
ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="isolated = traced")
ax.set(xscale="log", yscale="log", xlabel="traced mean per invocation (us)",
       ylabel="isolated mean per invocation (us)", title="BLOOM-560M on an H100: per unit")
ax.legend()
# Written where the notebook runs, never into the checkout's tracked files.
out = Path.cwd() / "kc_notebook_scatter.png"
fig.savefig(out, dpi=110, bbox_inches="tight")
print("chart written to", out)
print("predicted (sum of isolated time x count):", round((units["mean_us"] * units["invocations"]).sum(), 1), "us")
print("wrote", out)

# %% The prediction from parts on an H200 run (ResNeXt-101 32x8d, session 40)
# `kc report` on the graph replay and the isolated pass of one `kc run`, against the model's
# own CUDA graph measured in the same call: the plain sum, each measured term, and the
# prediction, per replay. Written where the notebook runs.
f = root / "fixtures" / "results"
rep = kc.report(f / "resnext101_h200_s40.graph.json", isolated=f / "resnext101_h200_s40.iso.json",
                reference=f / "resnext101_h200_s40.reference.json", reference_entry="resnext101",
                output=Path.cwd() / "kc_notebook_report")
p = rep["prediction"]
print(f"{'':58} {'us':>9} {'J':>8}")
print(f"{'plain: sum of isolated x count':58} {p['plain_us']:9.1f} {p['plain_energy_j']:8.4f}")
for t in p["terms"]:
    print(f"{'+ ' + t['what'][:56]:58} {t['us']:+9.1f} {t.get('energy_j') or 0.0:+8.4f}")
print(f"{'prediction from parts':58} {p['predicted_us']:9.1f} {p['predicted_energy_j']:8.4f}")
print(f"{'the model (its CUDA graph, same call)':58} {p['target_us']:9.1f} {p['target_energy_j']:8.4f}")
print(f"error: plain {p['plain_error_pct']:+.1f} / {p['plain_energy_error_pct']:+.1f} %, "
      f"prediction {p['error_pct']:+.1f} / {p['energy_error_pct']:+.1f} % (time / energy); "
      f"the round split by {p['round_split_by']}")

# %% The round's units: kernels side by side count once by busy time
iso = kc.read_results(f / "resnext101_h200_s40.iso.json")
r = iso.round_units.merge(iso.units[["id", "label", "invocations"]], left_on="unit", right_on="id")
r["by_durations_us"] = (r["round_us"] - r["alone_us"]) * r["invocations"]
r["by_busy_us"] = (r["round_busy_us"] - r["alone_busy_us"]) * r["invocations"]
print(r.sort_values("by_durations_us", key=abs, ascending=False)
      [["unit", "label", "invocations", "by_durations_us", "by_busy_us"]].head(6).round(1))
print("slower kernels per replay: by durations", round(r["by_durations_us"].sum(), 1),
      "us, by busy time", round(r["by_busy_us"].sum(), 1), "us")

# %% Per unit: alone, and alone in the model's cache state, against kc's graph (H200)
# SqueezeNet 1.1 (session 51): each unit's kernels alone repeat its own reads from L2; in
# the model's cache state every invocation runs after L2 is turned over as the model's
# steps before it leave it, the reads the model left in L2 touched again (CUPTI both).
sq = kc.report(f / "squeezenet_h200_s51.graph.json", isolated=f / "squeezenet_h200_s51.iso.json",
               reference=f / "squeezenet_h200_s51.reference.json", reference_entry="squeezenet",
               output=Path.cwd() / "kc_notebook_report_squeezenet")
t = sq["time"]
print(f"median |error| per unit against kc's graph: alone {t['unit_isolated_vs_in_context_median_abs_pct']:.1f} %, "
      f"in the model's cache state {t['unit_in_model_cache_vs_in_context_median_abs_pct']:.1f} % "
      f"over {t['units_in_model_cache_vs_in_context']} units "
      f"({t['in_model_cache_cold_bytes_pct']:.0f} % of the bytes read from memory)")
rows = [u for u in sq["units"] if u.get("in_model_cache_vs_in_context_pct") is not None]
fig, ax = plt.subplots(figsize=(6, 4))
ctx = [u["in_context_mean_us"] for u in rows]
ax.scatter(ctx, [u["isolated_vs_in_context_pct"] for u in rows], s=14, label="alone")
ax.scatter(ctx, [u["in_model_cache_vs_in_context_pct"] for u in rows], s=14,
           label="alone in the model's cache state")
ax.axhline(0, color="k", lw=0.8)
ax.set(xscale="log", xlabel="its kernels in kc's graph per invocation (us)",
       ylabel="against kc's graph (%)", title="SqueezeNet 1.1 on an H200: per unit")
ax.legend()
out = Path.cwd() / "kc_notebook_per_unit.png"
fig.savefig(out, dpi=110, bbox_inches="tight")
print("wrote", out)

# %% The unit's code: kept in its SMs between repeats, or evicted where the model's is far
# Mistral's decode graph (session 51's kept plan) on an H200: recorded in the model's cache
# state with each unit's code kept (session 52, call 4) and with it evicted before the
# invocations whose step's code the model last ran more than L2 of bytes before (session 53,
# call 2; kc's default). Two calls on two cards: each against its own kc graph.
runs = {}
for s, way in (("s52", "code kept"), ("s53", "code evicted where far")):
    rep = kc.report(f / f"mistral_decode_graph_h200_{s}.graph.json",
                    isolated=f / f"mistral_decode_graph_h200_{s}.iso.json",
                    output=Path.cwd() / f"kc_notebook_report_mistral_{s}")
    runs[way] = {u["id"]: u for u in rep["units"] if u.get("in_model_cache_vs_in_context_pct") is not None}
    t = rep["time"]
    share = t.get("in_model_cache_code_evicted_pct")
    print(f"{way}: median |error| {t['unit_in_model_cache_vs_in_context_median_abs_pct']:.1f} % over "
          f"{t['units_in_model_cache_vs_in_context']} units"
          + (f", code evicted before {share:.0f} % of the invocations" if share is not None else ""))
fig, ax = plt.subplots(figsize=(6, 4))
for way, us in runs.items():
    ax.scatter([u["in_context_mean_us"] for u in us.values()],
               [u["in_model_cache_vs_in_context_pct"] for u in us.values()], s=14, label=way)
ax.axhline(0, color="k", lw=0.8)
ax.set(xscale="log", xlabel="its kernels in kc's graph per invocation (us)",
       ylabel="in the model's cache state against kc's graph (%)",
       title="Mistral decode graph on an H200: per unit")
ax.legend()
out = Path.cwd() / "kc_notebook_code.png"
fig.savefig(out, dpi=110, bbox_inches="tight")
print("wrote", out)

# %% The record with the model's steps leading up to each invocation (H200, one call)
# Mistral's decode graph again (session 54, call 6): kc's default record and the same with
# the steps leading up to each invocation run before it after L2 is turned over
# (--model-cache-lead-ins, then a diagnostic, kc's default since session 55), both against
# the same call's kc graph. The MLP's
# silu and mul after the GEMM that writes their input come to kc's graph with them.
lead = {}
for way in ("far", "lead"):
    rep = kc.report(f / "mistral_decode_graph_h200_s54.graph.json",
                    isolated=f / f"mistral_decode_graph_h200_s54.{way}.json",
                    output=Path.cwd() / f"kc_notebook_report_mistral_s54_{way}")
    lead[way] = {u["id"]: u for u in rep["units"] if u.get("in_model_cache_vs_in_context_pct") is not None}
    t = rep["time"]
    print(f"{way}: median |error| {t['unit_in_model_cache_vs_in_context_median_abs_pct']:.1f} % over "
          f"{t['units_in_model_cache_vs_in_context']} units")
fig, ax = plt.subplots(figsize=(5, 5))
ids = sorted(set(lead["far"]) & set(lead["lead"]))
x = [lead["far"][i]["in_model_cache_vs_in_context_pct"] for i in ids]
y = [lead["lead"][i]["in_model_cache_vs_in_context_pct"] for i in ids]
ax.scatter(x, y, s=14)
for i, a, b in zip(ids, x, y):
    if abs(a - b) > 8:
        ax.annotate(lead["far"][i]["label"].replace("aten::", ""), (a, b), fontsize=7)
lim = max(map(abs, x + y)) * 1.1
ax.plot([-lim, lim], [-lim, lim], color="k", lw=0.6)
ax.axhline(0, color="gray", lw=0.5)
ax.set(xlim=(-lim, lim), ylim=(-lim, lim), xlabel="kc's default record against kc's graph (%)",
       ylabel="with the lead-ins (%)", title="Mistral decode graph on an H200: per unit")
out = Path.cwd() / "kc_notebook_lead_ins.png"
fig.savefig(out, dpi=110, bbox_inches="tight")
print("wrote", out)

# %% kc's own time per unit (an isolated pass's `setup_ms`)
# GPT-2's decode graph (session 55, call 1, time only, the record's lead-ins as kc's default
# since): what each unit's measurement spent before its timed launches, the CUPTI records
# (its kernels, and its record in the model's cache state) the most of it.
own = kc.read_results(f / "gpt2_decode_graph_h200_s55.leadp.json").own_time
print(own[["wall_ms", "restore", "census", "capture", "warm", "record"]].median().round(1).to_string())
