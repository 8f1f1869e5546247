#!/usr/bin/env bash
# pmx stat start-up against perf, and pmx stat's overhead on a CPU-bound
# workload. Needs hyperfine, python3 and Debian's perf (linux-perf).
# Start-up is measured paired (bench/startup.py: pmx and perf alternated,
# medians of wall and CPU time, the median of the per-pair ratios), on
# the binary `cargo install` installs (the release profile), plus its
# size and page faults.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p pmx-cli
P=target/release/pmx
W=target/release/pmx-workload
echo "pmx: $(stat -c %s $P) bytes; $($P --version)"
python3 bench/startup.py -n 300 -w 20 \
  "$P stat -e task-clock -- true" \
  "perf stat -e task-clock -- true"
perf stat -r 50 -e page-faults,task-clock -- $P stat -e task-clock -- true 2>&1 >/dev/null |
  grep -E 'page-faults|task-clock'
hyperfine -N --warmup 10 --runs 300 \
  "$P stat -e task-clock -- true" \
  "perf stat -e task-clock -- true"
hyperfine -N --warmup 2 --runs 15 \
  "$W work 2500" \
  "$P stat -- $W work 2500" \
  "$P stat -e task-clock,page-faults,context-switches -- $W work 2500"
