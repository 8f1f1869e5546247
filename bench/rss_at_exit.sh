#!/usr/bin/env bash
# Where a command's resident memory is when it exits: its mappings' Rss
# summed by file (the binary, libc, the heap, anonymous maps …), read
# from /proc/PID/smaps when the process calls exit_group (stopped there
# by gdb), with VmHWM (the peak) beside. Issue 41's floor: what
# `pmx report --branch-stack` holds against `pmx --version`.
#
#   bench/rss_at_exit.sh target/release/pmx report -q -i FILE --branch-stack
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
command -v gdb >/dev/null || { echo "$0: needs gdb" >&2; exit 2; }
show=$(mktemp)
trap 'rm -f "$show"' EXIT
cat >"$show" <<'SH'
#!/bin/sh
awk '/^[0-9a-f]+-/ { n = $6; if (n == "") n = "[anon]" }
     /^Rss:/ { rss[n] += $2; t += $2 }
     END { for (n in rss) if (rss[n] >= 16) printf "%8d KiB %s\n", rss[n], n
           printf "%8d KiB total\n", t }' "/proc/$1/smaps" | sort -rn
grep -E 'VmHWM|RssAnon|RssFile' "/proc/$1/status"
SH
chmod +x "$show"
gdb -q -batch -ex 'set pagination off' -ex 'catch syscall exit_group' -ex run \
    -ex "python import gdb; gdb.execute('shell $show ' + str(gdb.selected_inferior().pid) + ' >&2')" \
    -ex kill --args "$@" 2>&1 >/dev/null | grep -E 'KiB|Vm|Rss'
