#!/usr/bin/env bash
# pmx report --group (and -M) against plain pmx report on the same
# sample-read group file: about 160k samples of
# {task-clock,page-faults,context-switches}:S recorded by pmx on this
# machine (software events: works without a hardware PMU). Needs
# hyperfine and a C compiler.
#
#   bench/report_group.sh              # record (once) and time
#   DURATION=2 bench/report_group.sh   # seconds of recording (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p pmx-cli
P=${CARGO_TARGET_DIR:-target}/release/pmx
OUT=${OUT:-/tmp/pmx-bench-report-group}
mkdir -p "$OUT"
DATA=$OUT/group.data

# Two hot functions, and fresh pages now and then (page faults to credit).
cat > "$OUT/work.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
__attribute__((noipa)) long leaf_a(long n) { long s = 0; for (long i = 0; i < n; i++) s += (i * i) ^ (s >> 3); return s; }
__attribute__((noipa)) long leaf_b(long n) { long s = 1; for (long i = 0; i < n; i++) s += i ^ s; return s; }
__attribute__((noipa)) long pages(long n) { char *p = malloc(n * 4096); memset(p, 1, n * 4096); long s = p[n]; free(p); return s; }
int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 100;
    long r = 0;
    for (long k = 0; k < rounds; k++) r += leaf_a(1000000) + leaf_b(300000) + pages(64);
    return (int)(r & 1);
}
EOF
cc -O1 -fno-omit-frame-pointer -o "$OUT/work" "$OUT/work.c"

if [ ! -s "$DATA" ]; then
  secs=${DURATION:-2}
  echo "recording: 2 × work for $secs s, {task-clock,page-faults,context-switches}:S -c 10000"
  "$P" record -o "$DATA" -c 10000 -e '{task-clock,page-faults,context-switches}:S' -- \
    sh -c "timeout $secs '$OUT/work' 1000000 & timeout $secs '$OUT/work' 1000000; wait" || true
fi
"$P" report -q -i "$DATA" --limit 0 | grep -E '^# (event|lost|pmx report)'

hyperfine -N --warmup 1 --runs 15 --export-markdown "$OUT/time.md" \
  "$P report -q -i $DATA" \
  "$P report -q --group -i $DATA" \
  "$P report -q -M page_faults_per_second,cs_per_second -i $DATA"
