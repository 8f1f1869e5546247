#!/usr/bin/env bash
# pmx analyze on a 10,000-interval perf stat -x, -I file (Skylake client,
# GenuineIntel-6-5E-3): the file holds the 15 inputs of TMA level 2 in
# Intel's table plus cycles/instructions, one row per event per interval
# (170,000 lines), with a raw r019c column matched by encoding. Times three
# modes, each REPS times (default 5): --tma -l 2, -M IPC,TopdownL1, and the
# default (every metric of the library, totals plus per-interval spread).
# Needs Intel's tables: $PMX_EVENTS_DIR, else ../shared/data/intel-perfmon.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-5}
N=${N:-10000}
E=${PMX_EVENTS_DIR:-../shared/data/intel-perfmon}
[ -f "$E/mapfile.csv" ] || { echo "no Intel tables at $E"; exit 1; }
[ -n "${PMX_NO_BUILD:-}" ] || cargo build --release -q -p pmx-cli
F=$(mktemp --suffix=.csv)
trap 'rm -f "$F"' EXIT
python3 - "$F" "$N" <<'PY'
import sys, random
path, n = sys.argv[1], int(sys.argv[2])
random.seed(1)
ev = ["CPU_CLK_UNHALTED.THREAD", "INST_RETIRED.ANY", "r019c", "UOPS_ISSUED.ANY",
      "UOPS_RETIRED.RETIRE_SLOTS", "INT_MISC.RECOVERY_CYCLES",
      "IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE", "BR_MISP_RETIRED.ALL_BRANCHES",
      "MACHINE_CLEARS.COUNT", "CYCLE_ACTIVITY.STALLS_MEM_ANY", "EXE_ACTIVITY.BOUND_ON_STORES",
      "CYCLE_ACTIVITY.STALLS_TOTAL", "EXE_ACTIVITY.1_PORTS_UTIL", "EXE_ACTIVITY.2_PORTS_UTIL",
      "UOPS_RETIRED.MACRO_FUSED", "cycles", "instructions"]
with open(path, "w") as f:
    for i in range(1, n + 1):
        t = i * 0.01
        clk = 10_000_000 + random.randrange(1_000_000)
        for e in ev:
            v = clk if e in ("CPU_CLK_UNHALTED.THREAD", "cycles") else random.randrange(clk // 20, clk)
            f.write(f"{t:14.9f},{v},,{e},10000000,{random.choice(['100.00', '66.67', '50.00'])},,\n")
PY
echo "$(wc -l <"$F") lines, $(du -h "$F" | cut -f1)"
run() {
  local label=$1; shift
  local best=999999 t
  for _ in $(seq "$REPS"); do
    t=$( { /usr/bin/time -f "%e %M" target/release/pmx analyze "$F" --cpu GenuineIntel-6-5E-3 --events-dir "$E" "$@" >/dev/null; } 2>&1 | tail -1)
    echo "  $label: $t (s, max RSS KiB)"
  done
}
run "--tma -l 2" --tma -l 2
run "-M IPC,TopdownL1" -M IPC,TopdownL1
run "default (all metrics)"
