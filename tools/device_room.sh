#!/usr/bin/env bash
# Makes room in the working tree for a GPU call: the device tool copies the tracked and
# untracked-not-ignored files (64 MiB at most), and docs/results' raw archives of earlier
# sessions are most of them and not needed there. `aside KEEP` moves every folder of
# docs/results but KEEP (the session's own, which holds its run.sh) to ASIDE
# (/tmp/kc-results-aside unless set); `back` moves them home. The tests need them home.
#   bash tools/device_room.sh aside 2026-11-30-session55   # before `run`
#   bash tools/device_room.sh back                         # after it
set -euo pipefail
cd "$(dirname "$0")/.."
aside=${ASIDE:-/tmp/kc-results-aside}
case ${1:?aside KEEP or back} in
aside)
  keep=${2:?the session folder under docs/results to keep}
  [ -d "docs/results/$keep" ] || { echo "docs/results/$keep: no such folder" >&2; exit 1; }
  mkdir -p "$aside"
  for d in docs/results/*/; do
    name=$(basename "$d")
    [ "$name" = "$keep" ] && continue
    [ -e "$aside/$name" ] && { echo "$aside/$name exists: move it back first" >&2; exit 1; }
    mv "$d" "$aside/"
  done
  du -sh docs/results ;;
back)
  [ -d "$aside" ] || exit 0
  for d in "$aside"/*/; do
    [ -d "$d" ] || continue
    name=$(basename "$d")
    [ -e "docs/results/$name" ] && { echo "docs/results/$name exists: not moved back" >&2; exit 1; }
    mv "$d" docs/results/
  done
  rmdir "$aside" 2>/dev/null || true ;;
*) echo "usage: $0 aside KEEP | back" >&2; exit 2 ;;
esac
