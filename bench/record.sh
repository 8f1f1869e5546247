#!/usr/bin/env bash
# pmx record against perf record: wall time of a CPU-bound C program alone,
# under each recorder at 4 kHz cpu-clock (with and without -g), and the drain
# throughput at short periods (samples written, LOST records).
# Needs hyperfine, Debian's perf (linux-perf) and a C compiler.
#
#   bench/record.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p pmx-cli
P=$(realpath "${CARGO_TARGET_DIR:-target}/release/pmx")
OUT=${OUT:-/tmp/pmx-bench-record}
mkdir -p "$OUT"
cat > "$OUT/hot.c" <<'C'
static volatile double sink;
__attribute__((noinline)) double step(double x) { return x * 1.0000001 + 0.5; }
__attribute__((noinline)) void hot(long n) { double a = 0; for (long i = 0; i < n; i++) a = step(a); sink = a; }
int main(void) { hot(400000000); return 0; }
C
cc -O1 -fno-omit-frame-pointer -o "$OUT/hot" "$OUT/hot.c"
cd "$OUT"
hyperfine -w 1 -r 5 -N \
  './hot' \
  "$P record -e cpu-clock -o pmx.data -- ./hot" \
  'perf record -q -e cpu-clock -F 4000 -o perf.data -- ./hot' \
  "$P record -g -e cpu-clock -o pmx-g.data -- ./hot" \
  'perf record -q -g -e cpu-clock -F 4000 -o perf-g.data -- ./hot'
for c in 10000 2000 1000; do
  "$P" record -g -e cpu-clock -c "$c" -o "pmx-$c.data" -- ./hot 2>&1 | tail -1
  perf record -g -e cpu-clock -c "$c" -o "perf-$c.data" -- ./hot 2>&1 | tail -1
  echo "perf report --stats, perf's file: $(perf report --stats -i "perf-$c.data" 2>/dev/null | grep -E 'SAMPLE events|LOST events' | tr -s ' ' | tr '\n' ';')"
done
