#!/usr/bin/env bash
# Off-CPU recording's overhead and loss (docs/BENCHMARKS.md, "record
# --off-cpu under heavy switching").
#
#   bench/offcpu.sh [ROUNDS] [LOOPS]
#
# The workload is perf's pipe ping-pong, `perf bench sched pipe -l LOOPS`
# (default 200000): two processes waking each other through pipes, as
# fast as they can. Each round (default 3) runs,
# alternating the recorders:
#  1. the workload alone;
#  2. `pmx record --off-cpu -g` (pmx's default ring);
#  3. the same with perf's default ring, `-m 128`;
#  4. `perf record -e sched:sched_switch -g` (perf's way to the same
#     stacks without BPF; it also records preemptions).
# Printed per run: the workload's wall time (its own "Total time"); the
# CPU seconds (user + system) of the recorder alone — the whole run's
# less the workload's, each measured by /usr/bin/time, the workload's
# from inside the recording; the workload's own CPU seconds (the kernel
# writes the samples in the workload's context, so that cost is there);
# the waits recorded (pmx: offcpu-time samples; perf: its sched_switch
# samples whose prev_state is S or D) of the waits there were (the
# workload's voluntary context switches, from its rusage: about one per
# loop, not two — on a shared CPU the woken task preempts the waker,
# which leaves in state R, not waiting); the records lost as the
# recorder says (pmx's summary, perf's LOST records from `perf report
# --stats`). `uptime` is printed before each round: record the load
# beside the figures. Run it with `nice` on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
R=${1:-3}
L=${2:-200000}
[ -n "${PMX_NO_BUILD:-}" ] || cargo build --release -q -p pmx-cli
PMX=${PMX:-"${CARGO_TARGET_DIR:-target}"/release/pmx}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
T=(/usr/bin/time -f "%e %U %S %w")
W=(perf bench sched pipe -l "$L")
cpu() { awk '{ printf "%.2f", $2 + $3 }' "$1"; }
# run NAME RECORDER… : the recorder runs `time -o inner WORKLOAD`.
run() {
    local name=$1
    shift
    rm -f "$DIR/inner"
    "${T[@]}" -o "$DIR/outer" "$@" "${T[@]}" -o "$DIR/inner" "${W[@]}" \
        >"$DIR/out" 2>"$DIR/err" || true
    local total wl rec waits lost
    total=$(awk '/Total time:/ { print $3 }' "$DIR/out" "$DIR/err" | head -1)
    wl=$(cpu "$DIR/inner")
    if [ "$name" = alone ]; then
        rec=-
        waits=-
        lost=-
    else
        rec=$(awk -v a="$(cpu "$DIR/outer")" -v b="$wl" 'BEGIN { printf "%.2f", a - b }')
        case $name in
        pmx*)
            waits=$(grep -o 'offcpu-time [0-9]*' "$DIR/err" | grep -o '[0-9]*$' || echo 0)
            lost=$(grep -o '[0-9]* records lost' "$DIR/err" | grep -o '^[0-9]*' || echo 0)
            ;;
        perf*)
            waits=$(perf script -i "$DIR/f.data" -F trace 2>/dev/null | grep -c 'prev_state=[SD]' || true)
            lost=$(perf report -i "$DIR/f.data" --stats 2>/dev/null |
                awk '/LOST events:/ { print $3; exit }')
            ;;
        esac
    fi
    printf '%-36s %7s s wall %6s recorder CPU s %6s workload CPU s  waits %7s of %7s  lost %s\n' \
        "$name" "$total" "$rec" "$wl" "$waits" "$(awk '{ print $4 }' "$DIR/inner")" "${lost:-0}"
}
for r in $(seq "$R"); do
    echo "# round $r: $(uptime)"
    run "alone" env
    run "pmx record --off-cpu -g" "$PMX" record --off-cpu -g -o "$DIR/p.data" --
    run "pmx record --off-cpu -g -m 128" "$PMX" record --off-cpu -g -m 128 -o "$DIR/p.data" --
    run "perf record -e sched:sched_switch -g" perf record -e sched:sched_switch -g -o "$DIR/f.data" --
done
