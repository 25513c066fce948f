"""traces/capture.py's check of a model's CUDA graph against its eager step (session 50):
it judges the difference between the two outputs by its root mean square against the
eager output's, and records the largest difference beside it. A graph that reads memory
its capture freed differs at the scale of the output (the decode graphs before session 49:
132 % of the largest value); a graph whose kernels round a few elements apart differs more
at those elements than over the output. No torch needed: the verdict is computed from the
figures."""
import ast
import math
from pathlib import Path

CAPTURE = Path(__file__).resolve().parents[2] / "traces" / "capture.py"


def capture_namespace(*names):
    tree = ast.parse(CAPTURE.read_text())
    keep = [n for n in tree.body
            if (isinstance(n, ast.FunctionDef) and n.name in names)
            or (isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "REPLAY_MATCH_RMS" for t in n.targets))]
    ns = {"math": math}
    exec(compile(ast.Module(body=keep, type_ignores=[]), str(CAPTURE), "exec"), ns)
    return ns


NS = capture_namespace("replay_verdict", "finite_or_none")
verdict = NS["replay_verdict"]


def test_a_graph_reading_freed_memory_does_not_match():
    v = verdict(diff_max=4.4, eager_max=3.34, diff_rms=0.9, eager_rms=1.0, finite=True)
    assert v["checked"] and not v["matches"]
    assert math.isclose(v["relative"], 4.4 / 3.34)
    assert math.isclose(v["relative_rms"], 0.9)


def test_a_few_elements_rounded_apart_match_and_the_largest_difference_is_kept():
    # Made up: 1.4 % at the largest element, 0.3 % over the output.
    v = verdict(diff_max=0.046875, eager_max=3.34375, diff_rms=0.003, eager_rms=1.0, finite=True)
    assert v["matches"]
    assert math.isclose(v["relative"], 0.046875 / 3.34375)
    assert v["relative"] > 0.01  # what the largest difference alone would have refused
    assert v["tolerance_relative_rms"] == NS["REPLAY_MATCH_RMS"] == 0.01


def test_a_difference_past_the_tolerance_in_rms_does_not_match():
    # BERT's 12-layer bf16 graph, session 50: 1.3 % in root mean square, 1.4 % at most.
    v = verdict(diff_max=0.046875, eager_max=3.34375, diff_rms=0.0131, eager_rms=1.0, finite=True)
    assert not v["matches"]


def test_an_output_that_is_not_finite_never_matches_and_its_figures_are_none():
    v = verdict(diff_max=float("nan"), eager_max=3.0, diff_rms=float("nan"), eager_rms=1.0, finite=False)
    assert not v["matches"]
    assert v["relative"] is None and v["relative_rms"] is None and v["max_abs_diff"] is None


def test_an_all_zero_eager_output_is_judged_by_the_difference_itself():
    assert verdict(0.0, 0.0, 0.0, 0.0, True)["matches"]
    assert not verdict(1.0, 0.0, 1.0, 0.0, True)["matches"]
