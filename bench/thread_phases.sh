#!/usr/bin/env bash
# A report's CPU by thread and phase (issue 43, "all cores"): perf
# record -e cpu-clock of the command, then per thread its samples, and
# the main thread's split at its last sample in the replay (reading,
# queueing and counting: Replay::next, Queue::flush, Layout::time,
# count_one, Reader::release_pages) into "replay" and "after" (the
# tables and text built once every record is counted). The main thread
# is the critical path of `--jobs N`; "after" is serial whatever N.
#
#   bench/thread_phases.sh target/release/pmx report -q -g --no-children --jobs 2 -i 1.25M.data
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
period=${PERIOD:-50000}
perf record -q -e cpu-clock -c "$period" -o "$out" -- "$@" >/dev/null
perf script -i "$out" -F comm,tid,time,ip,sym 2>/dev/null | awk -v us="$period" '
    { tid = $2; t = $3 + 0; n[tid]++; name[tid] = $1
      if (tid == main || main == "") { main = tid; m++; T[m] = t
        if ($0 ~ /Replay::next|Queue::flush|Layout::time|count_one|Reader::release_pages/) last = t } }
    END { for (k in n) printf "thread %s %s: %d samples, %.1f ms\n", k, name[k], n[k], n[k] * us / 1e6
          for (i = 1; i <= m; i++) if (T[i] <= last) a++; else b++
          printf "main thread: replay %d samples (%.1f ms), after %d (%.1f ms)\n", a, a * us / 1e6, b, b * us / 1e6 }'
