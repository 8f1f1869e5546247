#!/usr/bin/env bash
# CPU cost of interval mode: pmx stat vs perf stat, -a -A -I 10, 8 software
# events, DURATION seconds each (default 30), in the same run. Reports the
# user+system CPU time of each tool (GNU time's %U %S = getrusage).
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-30}
cargo build --release -q
E=task-clock,cpu-clock,context-switches,cpu-migrations,page-faults,minor-faults,major-faults,alignment-faults
measure() {
  local label=$1; shift
  local t f
  f=$(mktemp)
  /usr/bin/time -o "$f" -f "%U %S" "$@" >/dev/null 2>/dev/null
  t=$(tail -1 "$f"); rm -f "$f"
  awk -v l="$label" -v d="$D" -v t="$t" 'BEGIN { split(t, a, " "); c = a[1] + a[2];
      printf "%-6s user %.2f s  sys %.2f s  total %.2f s = %.3f%% of one CPU over %d s\n", l, a[1], a[2], c, 100 * c / d, d }'
}
measure pmx target/release/pmx stat -a -A -I 10 -e "$E" -x, -o /dev/null --duration "$D"
measure perf perf stat -a -A -I 10 -e "$E" -x, -o /dev/null -- sleep "$D"
