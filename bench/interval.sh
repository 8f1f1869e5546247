#!/usr/bin/env bash
# CPU cost of interval mode: pmx stat vs perf stat, -a -A -I 10, 8 software
# events, DURATION seconds each (default 30), in the same run. Each tool's
# own CPU time is measured two ways: GNU time (%U+%S, getrusage) and an
# outer `perf stat -e task-clock` (exact ns).
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-30}
[ -n "${PMX_NO_BUILD:-}" ] || cargo build --release -q
E=task-clock,cpu-clock,context-switches,cpu-migrations,page-faults,minor-faults,major-faults,alignment-faults
measure() {
  local label=$1; shift
  local f g
  f=$(mktemp); g=$(mktemp)
  /usr/bin/time -o "$f" -f "%U %S" perf stat -x, -o "$g" -e task-clock -- "$@" >/dev/null 2>/dev/null
  awk -v l="$label" -v d="$D" -v t="$(tail -1 "$f")" -v tc="$(grep task-clock "$g" | cut -d, -f1)" \
    'BEGIN { printf "%-13s task-clock %8.1f ms = %.2f%% of one CPU over %d s (getrusage incl. the outer perf: %s s)\n", l, tc, tc / (10 * d), d, t }'
  rm -f "$f" "$g"
}
measure pmx target/release/pmx stat -a -A -I 10 -e "$E" -x, -o /dev/null --duration "$D"
# The same without the per-CPU tickers (group reads across CPUs), to compare.
PMX_NO_TICKER=1 measure pmx-no-ticker target/release/pmx stat -a -A -I 10 -e "$E" -x, -o /dev/null --duration "$D"
measure perf perf stat -a -A -I 10 -e "$E" -x, -o /dev/null -- sleep "$D"
