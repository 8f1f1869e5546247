#!/usr/bin/env bash
# The fault campaign, long version (issue 22): thousands of mutated
# perf.data, CSV and JSON files, hostile HTTP against `pmx serve`, signals
# at random moments, `ulimit -n 32`, outputs to a full device, a read-only
# place, a FIFO, a directory, a link; then `pmx serve` under load (idle
# floods, 20 concurrent keep-alive clients, RSS over 100,000 requests).
#
#   bench/faults.sh [SEED]
#
# `cargo test` runs the same tests with a few cases each; here
# PMX_FAULTS_LONG=1 gives the long counts and SEED (default 0) moves
# every seed (PMX_FAULTS_SEED), so another seed is another campaign. A
# failure prints its seed and what was done to the file: replay it with
# `pmx_testkit::mutate::{perfdata, text}(&original, seed)`.
# Prints the table of docs/RELIABILITY.md (category, cases, panics, hangs,
# unclear errors, data lost, seconds, accepted, refused) and the load
# figures. Exit status: non-zero when any case failed.
set -uo pipefail
cd "$(dirname "$0")/.."
SEED=${1:-0}
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
status=0
PMX_FAULTS_LONG=1 PMX_FAULTS_SEED=$SEED cargo test -q --no-fail-fast -p pmx-cli \
    --test faults -- --nocapture --test-threads 1 >"$LOG" 2>&1 || status=1
cargo test -q -p pmx-cli --test integration serve_load:: -- --include-ignored --nocapture \
    --test-threads 1 >>"$LOG" 2>&1 || status=1
echo "seed $SEED, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| category | cases | panics | hangs | unclear errors | data lost | seconds | ran | refused |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
grep -o 'FAULTS|.*' "$LOG" | cut -d'|' -f2- | awk -F'|' '{ printf "|"; for (i = 1; i <= NF; i++) printf " %s |", $i; print "" }'
echo
grep -oE '(scrape alone|scrape with|20 clients|RSS over|a scrape with).*' "$LOG"
grep -E '^(PANIC|HANG|UNCLEAR ERROR|DATA LOST)' "$LOG" | head -40
[ $status -eq 0 ] || { echo; echo "FAILED: see the cases above"; grep -E 'panicked at|test result: FAILED' "$LOG" | head; }
exit $status
