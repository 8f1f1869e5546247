#!/usr/bin/env bash
# The cost of a counter read through each binding, ns per call on the
# same 4-event software group: Rust's Counters::read_into (bench_regions),
# C's pmx_counters_read (bench/capi_read.c against the release libpmx.a),
# and Python's Counters.read_raw()/read() (the package built by
# `pip install ./python`, or target/release/libpmx_py.so). Figures in
# docs/BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --release -p pmx-capi -p pmx-py
cargo run -q --release -p pmx --example bench_regions | grep -E 'read\(2\)|read_into'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -I include bench/capi_read.c target/release/libpmx.a -lpthread -ldl -lm -o "$tmp/capi_read"
"$tmp/capi_read"
mkdir "$tmp/pmx"
cp python/pmx/*.py "$tmp/pmx/"
cp target/release/libpmx_py.so "$tmp/pmx/_pmx.abi3.so"
PYTHONPATH=$tmp python3 - <<'PY'
import statistics, time
import pmx
c = pmx.Counters("task-clock,page-faults,context-switches,cpu-migrations")
c.enable()
def per_call(f, n=20000, runs=41):
    out = []
    for _ in range(runs):
        t = time.thread_time_ns()
        for _ in range(n):
            f()
        out.append((time.thread_time_ns() - t) / n)
    return statistics.median(out)
print(f"Counters.read_raw() (Python, 4 events): {per_call(c.read_raw):.0f} ns")
print(f"Counters.read() (Python, 4 events, dict of Count): {per_call(c.read):.0f} ns")
PY
