#!/usr/bin/env bash
# What a command's peak resident memory is made of: RssAnon (heap and
# anonymous maps) and RssFile (the binary, libraries, mapped perf.data
# pages) sampled from /proc/PID/status every few milliseconds while it
# runs, each one's maximum, and VmHWM (the peak of their sum) at the last
# sample. Sampling misses peaks shorter than its period: VmHWM does not.
# Issue 43 (memory flat from 1.25M to 10M samples):
#
#   bench/rss_peak.sh target/release/pmx report -q -i 10M.data
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
"$@" >/dev/null &
pid=$!
anon=0 file=0 hwm=0
while status=$(cat "/proc/$pid/status" 2>/dev/null); do
    read -r a f h < <(awk '/^RssAnon/ {a = $2} /^RssFile/ {f = $2} /^VmHWM/ {h = $2}
                           END {print a + 0, f + 0, h + 0}' <<<"$status")
    [ "$a" -gt "$anon" ] && anon=$a
    [ "$f" -gt "$file" ] && file=$f
    [ "$h" -gt 0 ] && hwm=$h
    grep -q '^State:.*Z' <<<"$status" && break
    sleep 0.005
done
wait "$pid" || true
echo "max RssAnon $anon KiB, max RssFile $file KiB, VmHWM $hwm KiB (last sample)"
