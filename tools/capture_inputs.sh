# Sourced by tools/capture_and_replay.sh and tools/capture_and_run.sh (not run alone): runs
# traces/capture.py for NAME into OUT with the capture arguments, then sets `inputs` to the
# kc ingest options its files call for: the Execution Trace (--shapes) and the recorded values
# (--values), for a CUDA-graph capture the profiled capture and its ET (--capture, --shapes),
# and the Inductor cache.
# Expects `out`, `name`, `py` and `here` set, and the capture arguments as "$@".
mkdir -p "$out"
"$py" "$here/traces/capture.py" "$@" --name "$name" --out "$out" > "$out/$name.capture.log" 2>&1
inputs=()
[ -f "$out/$name.et.json.gz" ] && inputs=(--shapes "$out/$name.et.json.gz")
# The values the step's integer tensors held (indices, MoE routing), beside its ET.
[ -f "$out/$name.et.json.gz" ] && [ -f "$out/$name.values.bin" ] && inputs+=(--values "$out/$name.values.bin")
# A CUDA-graph capture (--cuda-graph): the graph's replays, linked through its profiled capture.
if [ -f "$out/${name}_capture.pt.trace.json.gz" ]; then
    inputs=(--capture "$out/${name}_capture.pt.trace.json.gz")
    [ -f "$out/${name}_capture.et.json.gz" ] && inputs+=(--shapes "$out/${name}_capture.et.json.gz")
    # Its integer tensors' values, keyed by the capture ET's nodes.
    [ -f "$out/${name}_capture.et.json.gz" ] && [ -f "$out/${name}_capture.values.bin" ] && inputs+=(--values "$out/${name}_capture.values.bin")
fi
[ -f "$out/$name.inductor_cache.tar.gz" ] && inputs+=(--inductor-cache "$out/$name.inductor_cache.tar.gz")
true
