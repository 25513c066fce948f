#!/usr/bin/env bash
# kc's tests, as the README gives them and CI runs them (no GPU; ../shared beside the
# checkout): the Rust workspace's test targets, then the Python package built with the
# README's `pip install ./python` into a fresh virtualenv and its pytest suite. Prints one
# total line at the end, whether the tests pass or fail, and exits non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
work=$(mktemp -d)
trap 'rm -rf "$log" "$work"' EXIT
cargo test --workspace --release --locked --tests --no-fail-fast 2>&1 | tee "$log"
rust_status=${PIPESTATUS[0]}
py_status=0
if venv_err=$(python3 -m venv "$work/venv" 2>&1); then
    echo "== Python package: pip install ./python into a fresh virtualenv"
    if "$work/venv/bin/pip" install -q ./python pytest 2>&1 | tail -n 5; [ "${PIPESTATUS[0]}" -eq 0 ]; then
        (cd python && "$work/venv/bin/python" -m pytest -q -p no:cacheprovider tests) 2>&1 | tee -a "$log"
        py_status=${PIPESTATUS[0]}
    else
        echo "test result: FAILED. 0 passed; 1 failed (pip install ./python)" | tee -a "$log"
        py_status=1
    fi
else
    # Said as it failed: a full disk reads differently from a Python without venv.
    echo "python3 -m venv failed ($(echo "$venv_err" | tail -n 1)): the Python package tests did not run" | tee -a "$log"
    py_status=1
fi
awk '/^test result:/ { p += $4; f += $6; next }
     /^[0-9]+ (passed|failed)/ || / in [0-9.]+s/ {
         for (i = 1; i < NF; i++) {
             if ($(i+1) ~ /^passed/) p += $i
             if ($(i+1) ~ /^failed/) f += $i
         }
     }
     END { printf "%d passed, %d failed\n", p, f }' "$log"
[ "$rust_status" -eq 0 ] && [ "$py_status" -eq 0 ]
