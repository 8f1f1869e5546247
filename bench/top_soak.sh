#!/usr/bin/env bash
# pmx top's memory over a long run with a changing workload (issue 33):
# `pmx top --stdio -F 4000 -d 2` of every CPU for SECONDS (default 600)
# while a short `sh` starts every 0.2 s (a new pid, comm and mappings each
# time) and a spinning C program is restarted every 30 s. Prints VmRSS and
# the file-backed part of it every 30 s, then GNU time's peak RSS and CPU
# times. A benchmark, not a test: the figures go to docs/BENCHMARKS.md.
#
#   bench/top_soak.sh [SECONDS] [PMX]      (PMX: target/release/pmx)
set -euo pipefail
secs=${1:-600}
pmx=$(realpath "${2:-target/release/pmx}")
tmp=$(mktemp -d)
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  pkill -f "$tmp/spin" 2>/dev/null || true
  rm -rf "$tmp"
}
pids=()
trap cleanup EXIT
cat >"$tmp/spin.c" <<'C'
__attribute__((noinline)) unsigned long soak_spin(unsigned long n) {
    volatile unsigned long x = 1;
    for (unsigned long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1;
    return x;
}
int main(void) { for (;;) soak_spin(1000000); }
C
cc -O1 -o "$tmp/spin" "$tmp/spin.c"
(while :; do sh -c true; sleep 0.2; done) &
pids+=($!)
(while :; do timeout 30 "$tmp/spin" || true; done) &
pids+=($!)
/usr/bin/time -v -o "$tmp/time" timeout -s INT "$secs" "$pmx" top --stdio -F 4000 -d 2 \
  >/dev/null 2>"$tmp/err" &
top_job=$!
sleep 2
top=$(pgrep -n -f "^$pmx top --stdio") || { cat "$tmp/err"; exit 1; }
echo "pmx top: pid $top, $secs s; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%6s %10s %12s\n' time "VmRSS MB" "file MB"
for ((t = 30; t < secs; t += 30)); do
  sleep 30
  [ -e "/proc/$top/status" ] || break
  rss=$(awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$top/status")
  file=$(awk '/^RssFile/ {print int($2 / 1024)}' "/proc/$top/status")
  printf '%5ds %10s %12s\n' "$t" "$rss" "$file"
done
wait "$top_job" || true
grep -E 'Maximum resident|User time|System time|Elapsed' "$tmp/time"
tail -3 "$tmp/err"
