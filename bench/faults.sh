#!/usr/bin/env bash
# The fault campaign, long version (issue 22): thousands of mutated
# perf.data, CSV and JSON files, hostile HTTP against `pmx serve`, signals
# at random moments, `ulimit -n 32`, outputs to a full device, a read-only
# place, a FIFO, a directory, a link; then `pmx serve` under load (idle
# floods, 20 concurrent keep-alive clients, RSS over 100,000 requests).
#
#   bench/faults.sh [SEEDS] [FILTER…]     e.g.  nice -n 10 bench/faults.sh 1-20
#
# SEEDS is one seed (default 0), a range `A-B` or a comma list (`1-6,8`);
# each seed is a campaign of its own (its mutants are seeds SEED×10⁹ +
# source×10⁶ + case, so no two seeds share one) and prints its own table.
# FILTER (test-name filters such as `faults_perfdata:: faults_precise::`,
# as separate words or one quoted string; the module names are the
# categories) runs some categories only. `cargo test` runs the
# same tests with a few cases each; here PMX_FAULTS_LONG=1 gives the long
# counts. The test binary is built once, before the first seed, and run
# directly for each (an edit during a campaign changes no later seed). Built with the `faults` profile (Cargo.toml: optimized, with
# debug assertions and overflow checks on, so an overflow still panics as
# in a debug build). `pmx serve` under load runs once, after the last
# seed (SERVE_LOAD=0 leaves it out). A failure prints its seed and what
# was done to the file: replay it with
# `pmx_testkit::mutate::{perfdata, text}(&original, seed)`.
# Prints the table of docs/RELIABILITY.md per seed (category, cases,
# panics, hangs, unclear errors, data lost, seconds, ran, refused) and the
# load figures. Exit status: non-zero when any case failed.
set -uo pipefail
cd "$(dirname "$0")/.."
SPEC=${1:-0}
FILTER="${*:2}"
seeds=()
IFS=',' read -ra parts <<<"$SPEC"
for p in "${parts[@]}"; do
    if [[ $p =~ ^([0-9]+)-([0-9]+)$ ]]; then
        for ((s = BASH_REMATCH[1]; s <= BASH_REMATCH[2]; s++)); do seeds+=("$s"); done
    elif [[ $p =~ ^[0-9]+$ ]]; then
        seeds+=("$p")
    else
        echo "bench/faults.sh: '$p' is not a seed, a range A-B or a comma list" >&2
        exit 2
    fi
done
status=0
# Build the campaign's test binary once and run that file for every seed:
# with `cargo test` per seed an edit made during a campaign was rebuilt
# mid-way, and later seeds ran other code than the first. The binary runs
# from the package's directory, as `cargo test` runs it.
test_binary() { # the executable of test target $1 of pmx-cli (faults profile)
    cargo test -q --profile faults -p pmx-cli --test "$1" --no-run --message-format=json |
        grep -F '"kind":["test"]' | grep -F "\"name\":\"$1\"" |
        grep -o '"executable":"[^"]*"' | tail -1 | cut -d'"' -f4
}
FAULTS_BIN=$(test_binary faults)
[ -x "$FAULTS_BIN" ] || { echo "bench/faults.sh: the faults test binary did not build" >&2; exit 1; }
# A copy, so that a build during the campaign (which replaces the file at
# its path) changes no later seed; the `pmx` binary the cases run is
# target/faults/pmx, baked into the test binary: do not build the faults
# profile while a campaign runs.
COPY=$(mktemp -d)
trap 'rm -rf "$COPY"' EXIT
cp "$FAULTS_BIN" "$COPY/faults" && FAULTS_BIN_PATH=$FAULTS_BIN && FAULTS_BIN=$COPY/faults
LOG=$COPY/log
SERVE_BIN=
if [ "${SERVE_LOAD:-1}" != 0 ]; then
    SERVE_BIN=$(test_binary integration)
    [ -x "$SERVE_BIN" ] || { echo "bench/faults.sh: the integration test binary did not build" >&2; exit 1; }
fi
echo "campaign binary: $FAULTS_BIN_PATH ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo ', with uncommitted changes'))"
for SEED in "${seeds[@]}"; do
    seed_status=0
    (cd crates/pmx-cli && PMX_FAULTS_LONG=1 PMX_FAULTS_SEED=$SEED "$FAULTS_BIN" $FILTER \
        --nocapture --test-threads 1) >"$LOG" 2>&1 || seed_status=1
    echo "seed $SEED, profile faults, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M) UTC"
    echo
    echo "| category | cases | panics | hangs | unclear errors | data lost | seconds | ran | refused |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    grep -o 'FAULTS|.*' "$LOG" | cut -d'|' -f2- | awk -F'|' '{ printf "|"; for (i = 1; i <= NF; i++) printf " %s |", $i; print "" }'
    echo
    grep -E '^(PANIC|HANG|UNCLEAR ERROR|DATA LOST)' "$LOG" | head -40
    if [ $seed_status -ne 0 ]; then
        status=1
        echo "seed $SEED FAILED: see the cases above"
        grep -E 'panicked at|test result: FAILED|overflowed its stack|fatal runtime error|process didn.t exit' "$LOG" | head
        echo
    fi
done
if [ "${SERVE_LOAD:-1}" != 0 ]; then
    (cd crates/pmx-cli && "$SERVE_BIN" serve_load:: --include-ignored --nocapture \
        --test-threads 1) >"$LOG" 2>&1 || status=1
    grep -oE '(scrape alone|scrape with|20 clients|RSS over|a scrape with).*' "$LOG"
fi
exit $status
