#!/usr/bin/env bash
# pmx report against perf report on the real-program files of the
# differential suite (crates/pmx-cli/tests/perf_diff.rs: Python, gcc's cc1,
# a C++ program, xz, sqlite3, node, Rust, Go; each recorded by pmx and by
# perf): time per file (hyperfine, both tools in one run, paired), with
# pmx's symbol cache warm (its usual state: the first report of a binary
# build fills it) and cold (removed before every run).
# Needs hyperfine and what the suite needs (docs/PERF_DIFF.md).
#
#   bench/programs.sh              # record (once, kept in $OUT) and compare
#   RUNS=20 bench/programs.sh      # hyperfine runs per command (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p pmx-cli
P=$PWD/${CARGO_TARGET_DIR:-target}/release/pmx
OUT=${OUT:-/tmp/pmx-bench-programs}
RUNS=${RUNS:-10}
mkdir -p "$OUT"
CACHE=$OUT/cache
if ! ls "$OUT"/*.perf.data >/dev/null 2>&1; then
  PMX_PERF_DIFF_KEEP=$OUT cargo test -q -p pmx-cli --test perf_diff -- --test-threads=1 >/dev/null
fi
printf '| file | pmx (warm cache) | pmx (cold cache) | perf | perf / pmx warm | perf / pmx cold |\n|---|---|---|---|---|---|\n'
for f in "$OUT"/*.data; do
  name=$(basename "$f")
  # Fill the cache once (what the first report of a build does).
  env XDG_CACHE_HOME="$CACHE" "$P" report -q -i "$f" >/dev/null
  json=$OUT/$name.json
  hyperfine -N -w 2 -r "$RUNS" --export-json "$json" \
    "env XDG_CACHE_HOME=$CACHE $P report -q -i $f" \
    "perf report -i $f --stdio --no-children" >/dev/null 2>&1
  hyperfine -w 1 -r "$RUNS" --export-json "$json.cold" \
    --prepare "rm -rf $CACHE/pmx/symbols" \
    "env XDG_CACHE_HOME=$CACHE $P report -q -i $f" >/dev/null 2>&1
  python3 - "$json" "$json.cold" "$name" <<'EOF'
import json, sys
warm = json.load(open(sys.argv[1]))["results"]
cold = json.load(open(sys.argv[2]))["results"][0]["mean"]
pmx, perf = warm[0]["mean"], warm[1]["mean"]
print(f"| {sys.argv[3]} | {pmx*1e3:.1f} ms | {cold*1e3:.1f} ms | {perf*1e3:.1f} ms | {perf/pmx:.1f}x | {perf/cold:.1f}x |")
EOF
done
