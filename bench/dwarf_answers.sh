#!/usr/bin/env bash
# Issue 43: `report -g` on bench/report.sh's `--call-graph dwarf` file with
# the DWARF answers kept across runs (pmx-symbols' elf/answers.rs) against
# the first run without them, and perf: paired runs (bench/paired.py,
# CPU medians, peak RSS). "cold" removes the kept answers before each run
# (through sh -c, about 1 ms more: "sh" runs `sh -c true` for scale);
# the kernel-symbol cache and the symbol tables stay in place for all.
#
#   bench/dwarf_answers.sh                  # ROUNDS=5 by default
#   PMX=/path/to/pmx bench/dwarf_answers.sh # another build (else target/release)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/pmx-bench-report}
DATA=$OUT/dwarf.data
[ -s "$DATA" ] || { echo "no $DATA: run SIZES=dwarf PAIRED=1 bench/report.sh first" >&2; exit 1; }
P=${PMX:-$PWD/target/release/pmx}
CACHE=$OUT/cache
RUN="env XDG_CACHE_HOME=$CACHE $P report -q -g --no-children -i $DATA"
$RUN >/dev/null   # every cache in place
ls "$CACHE"/pmx/symbols/*.dwarf >/dev/null
echo "answers kept: $(cat "$CACHE"/pmx/symbols/*.dwarf | wc -c) bytes in $(ls "$CACHE"/pmx/symbols/*.dwarf | wc -l) files; $(uptime)"
nice python3 bench/paired.py -n "${ROUNDS:-5}" \
  "warm=$RUN" \
  "cold=sh -c 'rm -f $CACHE/pmx/symbols/*.dwarf; exec $RUN'" \
  "perf=perf report --stdio --no-children -g -i $DATA" \
  "sh=sh -c true"
$RUN >/dev/null   # left warm
