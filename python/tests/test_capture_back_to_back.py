"""traces/capture.py's back-to-back measurement of the model, against a simulated GPU (no
torch, no NVML): calls queue on a device that runs them one after another in real time,
drawing 400 W busy and 100 W idle, and an energy counter that advances only every 100 ms.
The energy per call must be the busy power × the call's time: the counter's difference over
the calls *completed* between two ticks, not over those enqueued (session 17)."""
import ast
import statistics
import time
import types
from pathlib import Path

CAPTURE = Path(__file__).resolve().parents[2] / "traces" / "capture.py"
CALL_S, BUSY_W, IDLE_W, TICK_S = 0.002, 400.0, 100.0, 0.1


class Gpu:
    """Calls run back to back from when they are enqueued; `done_at[k]` is call k's end.
    The device runs in real time, so a host that falls behind (a loaded machine) starves
    it as it would a GPU: `idle_s` sums the gaps it sat idle between calls."""

    def __init__(self):
        self.t0 = time.time()
        self.done_at = []
        self.idle_s = 0.0
        self.idle_counted_to = self.t0

    def sat_idle_until(self, now):
        """Counts the time the device sat idle after its last call up to `now`, once: a
        host that falls behind (a loaded machine) starves it before an enqueue, and before
        an event it records on the idle device (the end of a timed window)."""
        if self.done_at and now > self.done_at[-1]:
            self.idle_s += now - max(self.done_at[-1], self.idle_counted_to)
        self.idle_counted_to = max(self.idle_counted_to, now)

    def enqueue(self):
        now = time.time()
        self.sat_idle_until(now)
        start = max(now, self.done_at[-1] if self.done_at else now)
        self.done_at.append(start + CALL_S)

    def last_done(self):
        return self.done_at[-1] if self.done_at else self.t0

    def energy_mj(self):
        # The counter as NVML gives it: the energy up to the last 100 ms tick.
        t = self.t0 + int((time.time() - self.t0) / TICK_S) * TICK_S
        busy = sum(min(max(t - (d - CALL_S), 0.0), CALL_S) for d in self.done_at)
        return int(round(1000.0 * (IDLE_W * (t - self.t0) + (BUSY_W - IDLE_W) * busy)))


def back_to_back(gpu):
    """capture.py's `back_to_back`, its torch and pynvml the simulated GPU's."""
    tree = ast.parse(CAPTURE.read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "back_to_back")

    class Event:
        def __init__(self, enable_timing=False):
            self.at = None

        def record(self):
            # As on a GPU: an event on an idle stream completes when it is recorded.
            now = time.time()
            gpu.sat_idle_until(now)
            self.at = max(now, gpu.last_done())

        def query(self):
            return time.time() >= self.at

        def synchronize(self):
            time.sleep(max(0.0, self.at - time.time()))

        def elapsed_time(self, other):
            return (other.at - self.at) * 1000.0

    torch = types.SimpleNamespace(cuda=types.SimpleNamespace(
        Event=Event, synchronize=lambda: time.sleep(max(0.0, gpu.last_done() - time.time())),
        current_device=lambda: 0))
    pynvml = types.SimpleNamespace(
        nvmlInit=lambda: None, nvmlDeviceGetHandleByIndex=lambda i: 0,
        nvmlDeviceGetTotalEnergyConsumption=lambda h: gpu.energy_mj(),
        nvmlDeviceGetTemperature=lambda h, s: 40, NVML_TEMPERATURE_GPU=0,
        nvmlDeviceGetClockInfo=lambda h, c: 1980, NVML_CLOCK_SM=1)
    import sys
    sys.modules["pynvml"] = pynvml
    try:
        scope = {"torch": torch, "time": time, "statistics": statistics}
        exec(compile(ast.Module(body=[fn], type_ignores=[]), str(CAPTURE), "exec"), scope)
        return scope["back_to_back"](gpu.enqueue, CALL_S * 1e6, seconds=0.3, repeats=2)
    finally:
        del sys.modules["pynvml"]


def test_the_models_energy_per_call_counts_the_calls_completed():
    gpu = Gpu()
    r = back_to_back(gpu)
    assert r["back_to_back_energy_counts"] == "completed"
    # Busy throughout: 400 W × 2 ms = 800 mJ per call, to the grain of one ~2 ms batch in a
    # 0.3 s window. capture.py before session 17 (calls enqueued, those in flight included)
    # read 726 mJ here, 9 % low (its 2 s windows on the GPU: 1-3 %).
    assert abs(r["back_to_back_energy_per_run_mj"] / (BUSY_W * CALL_S * 1000.0) - 1.0) < 0.03, r
    # The time per call is the call's 2 ms, plus what the device sat idle waiting for a
    # host that fell behind (none on an idle machine; a CI run under load read +6 % with
    # the device idle in that measure), never less: the calls launched are what it divides.
    calls = len(gpu.done_at)
    assert r["back_to_back_us"] / (CALL_S * 1e6) > 1.0 - 0.03, r
    assert r["back_to_back_us"] / ((CALL_S + gpu.idle_s / calls) * 1e6) < 1.0 + 0.03, (r, gpu.idle_s)
    assert r["back_to_back_sm_clock_mhz"] == [1980, 1980]
