# %% [markdown]
# # kc in a notebook
#
# Run cell by cell in Jupyter or VS Code (`# %%` cells), or as a script, from the checkout
# with `../shared` beside it, after `pip install ./python matplotlib`. It ingests a shared
# H100 trace, shows the tier table, and plots traced against isolated time per unit from
# the results committed in `fixtures/results` (measured on an H100).

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
