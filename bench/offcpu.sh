#!/usr/bin/env bash
# Off-CPU recording's overhead and loss (docs/BENCHMARKS.md, "record
# --off-cpu under heavy switching").
#
#   bench/offcpu.sh [ROUNDS] [LOOPS]
#
# The workload is perf's pipe ping-pong, `perf bench sched pipe -l LOOPS`
# (default 200000): two tasks waking each other through pipes, every
# round trip two sleeps and two wake-ups. Each round (default 3) runs it
#  1. alone;
#  2. under `pmx record --off-cpu -g` (pmx's default ring);
#  3. under `pmx record --off-cpu -g -m 128` (perf's default ring);
#  4. under `perf record -e sched:sched_switch -g` (perf's way to the same
#     stacks without BPF).
# and prints the workload's wall time (its own "Total time"), the CPU
# seconds of everything (`/usr/bin/time`: user + system of the recorder,
# the workload and what the kernel did for them), and the records lost
# the recorder reports. The overhead of a recorder is its CPU seconds
# less the workload's alone.
set -euo pipefail
cd "$(dirname "$0")/.."
R=${1:-3}
L=${2:-200000}
[ -n "${PMX_NO_BUILD:-}" ] || cargo build --release -q -p pmx-cli
PMX=${PMX:-"${CARGO_TARGET_DIR:-target}"/release/pmx}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
run() {
    local name=$1
    shift
    /usr/bin/time -f "%e %U %S" -o "$DIR/time" "$@" >"$DIR/out" 2>"$DIR/err" || true
    local total cpu lost
    total=$(awk '/Total time:/ { print $3 }' "$DIR/out" "$DIR/err" | head -1)
    cpu=$(awk '{ printf "%.2f", $2 + $3 }' "$DIR/time")
    lost=$(grep -o '[0-9]* records lost\|lost [0-9]* chunks\|Lost [0-9]* events' "$DIR/err" | grep -o '[0-9]*' | head -1 || true)
    printf '%-28s %8s s %8s CPU s  lost %s\n' "$name" "$total" "$cpu" "${lost:-0}"
}
W=(perf bench sched pipe -l "$L")
for r in $(seq "$R"); do
    echo "# round $r"
    run "alone" "${W[@]}"
    run "pmx --off-cpu -g" "$PMX" record --off-cpu -g -o "$DIR/p.data" -- "${W[@]}"
    run "pmx --off-cpu -g -m 128" "$PMX" record --off-cpu -g -m 128 -o "$DIR/p.data" -- "${W[@]}"
    run "perf -e sched:sched_switch -g" perf record -e sched:sched_switch -g -o "$DIR/f.data" -- "${W[@]}"
done
