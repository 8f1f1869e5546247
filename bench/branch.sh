#!/usr/bin/env bash
# pmx report --branch-stack against perf report --branch-stack --stdio
# (issue 41): on the shared callgraph_and_branch-3.8 recording and on a
# file of 1M samples with 16-entry branch stacks written by pmx-perfdata's
# writer (examples/branch_file.rs, branches inside libc's text). Runs
# alternate perf and pmx (RUNS pairs, nice'd); each run's CPU time
# (user+sys) and peak RSS from /usr/bin/time, the load beside each pair.
#
#   bench/branch.sh              # RUNS=3 pairs per file
#   N=200000 RUNS=5 bench/branch.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p pmx-cli
cargo build --release -q -p pmx-perfdata --example branch_file
T=${CARGO_TARGET_DIR:-target}/release
OUT=${OUT:-/tmp/pmx-bench-branch}
RUNS=${RUNS:-3}
N=${N:-1000000}
mkdir -p "$OUT"
LIBC=/usr/lib/x86_64-linux-gnu/libc.so.6
read -r OFF LEN < <(readelf -lW "$LIBC" | awk '/LOAD/ && /R E/ {print $2, $5; exit}')
GEN=$OUT/b$N.data
[ -s "$GEN" ] || "$T/examples/branch_file" "$GEN" "$N" "$LIBC" "${OFF#0x}" "${LEN#0x}"
FILES=("$GEN")
SHARED=../shared/data/perfdata/perf_data_converter__perf.data.callgraph_and_branch-3.8
[ -f "$SHARED" ] && FILES=("$SHARED" "${FILES[@]}")

# One run: "cpu_seconds max_rss_kib".
measure() {
    /usr/bin/time -f "%U %S %M" -o "$OUT/time" nice "$@" >/dev/null 2>&1 || true
    awk '{printf "%.2f %d\n", $1 + $2, $3}' "$OUT/time"
}

for f in "${FILES[@]}"; do
    echo "== $(basename "$f")"
    for _ in $(seq "$RUNS"); do
        load=$(cut -d' ' -f1 /proc/loadavg)
        perf_r=$(measure perf report -i "$f" --branch-stack --stdio)
        pmx_r=$(measure "$T/pmx" report -q -i "$f" --branch-stack)
        echo "load $load  perf: ${perf_r% *} s ${perf_r#* } KiB  pmx: ${pmx_r% *} s ${pmx_r#* } KiB"
    done
done
