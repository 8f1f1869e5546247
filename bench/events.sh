#!/usr/bin/env bash
# Cold-start timings of the event database (issue: list/explain well under
# 100 ms). Needs hyperfine and ../shared/data/intel-perfmon.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
E=$(realpath ../shared/data/intel-perfmon)
P=target/release/pmx
hyperfine -N --warmup 5 --runs 100 \
  "$P list --cpu GenuineIntel-6-8F-0 --events-dir $E" \
  "$P explain --cpu GenuineIntel-6-8F-0 --events-dir $E LONGEST_LAT_CACHE.MISS:u" \
  "$P explain --cpu GenuineIntel-6-55-4 --events-dir $E LONGEST_LAT_CACHE.MISS:u" \
  "$P explain RETIRED_INSTRUCTIONS" \
  "$P list"
