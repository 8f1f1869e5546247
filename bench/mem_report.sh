#!/usr/bin/env bash
# pmx report --mem-mode against perf report --mem-mode on a 1M-sample
# memory file written by pmx-perfdata's writer (crates/pmx-precise/
# examples/mem_file.rs: PEBS-like loads of one process over libc's text,
# its data, a heap and a stack). Paired runs, alternating the tools, each
# timed by /usr/bin/time (user + sys CPU time, wall time, peak RSS), the
# load average beside each pair; the outputs compared first. Run it with
# `nice` on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p pmx-cli
cargo build --release -q -p pmx-precise --example mem_file
T=${CARGO_TARGET_DIR:-target}/release
OUT=${OUT:-/tmp/pmx-bench-mem}
# pmx under perf's name: perf's layout (the address in symbol_daddr),
# the same work as perf's.
mkdir -p "$OUT/bin" && ln -sf "$PWD/$T/pmx" "$OUT/bin/perf"
P=$OUT/bin/perf
N=${N:-1000000}
RUNS=${RUNS:-3}
SORT=${SORT:-}
mkdir -p "$OUT"
D=$OUT/mem$N.data
[ -s "$D" ] || "$T/examples/mem_file" "$D" "$N"
echo "machine: $(nproc) CPUs, $(uname -r), $(perf version), file: $(du -h "$D" | cut -f1), $N samples"
args=(report --mem-mode --stdio -i "$D")
[ -n "$SORT" ] && args+=(--sort "$SORT")
# perf's and pmx's tables, but the tips (a random line in perf's).
if cmp -s <("$P" "${args[@]}" 2>/dev/null | grep -v '^# (Tip') \
          <(perf "${args[@]}" 2>/dev/null | grep -v '^# (Tip'); then
  echo "outputs identical (but the tip line)"
else
  echo "outputs differ:"; diff <("$P" "${args[@]}" 2>/dev/null) <(perf "${args[@]}" 2>/dev/null) | head -10
fi
run() { /usr/bin/time -f "%U %S %e %M" "$@" >/dev/null 2>"$OUT/time.txt" || true; tail -1 "$OUT/time.txt"; }
echo "run tool user sys wall peak_kib load1"
for i in $(seq "$RUNS"); do
  for tool in "$P" perf; do
    name=$([ "$tool" = perf ] && echo perf || echo pmx)
    echo "$i $name $(run "$tool" "${args[@]}") $(cut -d' ' -f1 /proc/loadavg)"
  done
done
