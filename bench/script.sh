#!/usr/bin/env bash
# pmx script against perf script on 1M cpu-clock samples with call chains
# (made from bench/report.sh's recording by bench/resample.py): time of
# printing every sample (hyperfine, output to /dev/null), with and without
# call chains, and the JSON lines; peak memory. Run bench/report.sh first
# (it records $OUT/base.data).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p pmx-cli
P=$PWD/${CARGO_TARGET_DIR:-target}/release/pmx
OUT=${OUT:-/tmp/pmx-bench-report}
RUNS=${RUNS:-5}
D=$OUT/1M.data
[ -s "$D" ] || python3 bench/resample.py "$OUT/base.data" "$D" 1000000
echo "machine: $(nproc) CPUs, $(uname -r), $(perf version), load: $(cut -d' ' -f1-3 /proc/loadavg)"
# Same output? (the first 200,000 lines)
cmp <("$P" script -i "$D" | head -200000) <(perf script -i "$D" 2>/dev/null | head -200000) \
  && echo "first 200,000 lines identical"
hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$OUT/script.json" \
  "$P script -i $D" "perf script -i $D" \
  "$P script -G -i $D" "perf script -G -i $D" \
  "$P script --json -i $D"
for cmd in "$P script -i $D" "perf script -i $D"; do
  echo "peak RSS $(/usr/bin/time -f %M $cmd 2>&1 >/dev/null | tail -1) KiB: $cmd"
done
