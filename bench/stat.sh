#!/usr/bin/env bash
# pmx stat start-up against perf, and pmx stat's overhead on a CPU-bound
# workload. Needs hyperfine and Debian's perf (linux-perf).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
P=target/release/pmx
W=target/release/pmx-workload
hyperfine -N --warmup 10 --runs 300 \
  "$P stat -e task-clock -- true" \
  "perf stat -e task-clock -- true"
hyperfine -N --warmup 2 --runs 15 \
  "$W work 2500" \
  "$P stat -- $W work 2500" \
  "$P stat -e task-clock,page-faults,context-switches -- $W work 2500"
