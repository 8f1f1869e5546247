#!/usr/bin/env bash
# pmx report against perf report on about one million cpu-clock samples
# with call chains recorded on this machine: time (hyperfine), peak memory
# (/usr/bin/time -v) and the top-20 symbols with their percentages.
# Needs hyperfine, Debian's perf (linux-perf), a C compiler and python3.
#
#   bench/report.sh            # record (once) and compare
#   DURATION=20 bench/report.sh   # seconds of recording (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p pmx-cli
P=${CARGO_TARGET_DIR:-target}/release/pmx
OUT=${OUT:-/tmp/pmx-bench-report}
mkdir -p "$OUT"
DATA=$OUT/big.data

# A workload with a few functions of different weights and real call chains.
cat > "$OUT/work.c" <<'EOF'
#include <stdlib.h>
__attribute__((noipa)) long leaf_a(long n) { long s = 0; for (long i = 0; i < n; i++) s += (i * i) ^ (s >> 3); return s; }
__attribute__((noipa)) long leaf_b(long n) { long s = 1; for (long i = 0; i < n; i++) s += i ^ s; return s; }
__attribute__((noipa)) long mid(long n) { return leaf_a(n) + leaf_b(n / 3); }
__attribute__((noipa)) long top(long n) { return mid(n) + leaf_b(n / 10); }
int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 100;
    long r = 0;
    for (long k = 0; k < rounds; k++) r += top(10000000);
    return (int)(r & 1);
}
EOF
cc -O1 -fno-omit-frame-pointer -g -o "$OUT/work" "$OUT/work.c"

if [ ! -s "$DATA" ]; then
  # Both CPUs busy for DURATION seconds at a 10 µs cpu-clock period: the
  # sampling itself slows the program, so the sample count depends on the
  # machine (about 1M on a 2-CPU VM for 20 s).
  secs=${DURATION:-20}
  echo "recording: 2 × work for $secs s at cpu-clock -c 10000 -g"
  perf record -q -e cpu-clock -c 10000 -g -o "$DATA" -- \
    sh -c "timeout $secs '$OUT/work' 1000000 & timeout $secs '$OUT/work' 1000000; wait" || true
fi
"$P" report -q -i "$DATA" --limit 0 | grep -E '^# (event|lost|pmx report)'

echo
echo "== time"
hyperfine -N --warmup 1 --runs 5 --export-markdown "$OUT/time.md" \
  "$P report -q -i $DATA" \
  "perf report --stdio --no-children -i $DATA" \
  "perf report --stdio --no-children -g none -i $DATA"

echo
echo "== peak memory (max RSS, KiB)"
for cmd in "$P report -q -i $DATA" "perf report --stdio --no-children -i $DATA"; do
  rss=$( { /usr/bin/time -v $cmd >/dev/null 2>/dev/null; } 2>&1 | awk -F: '/Maximum resident/ {print $2+0}' || true)
  [ -n "$rss" ] || rss=$( (/usr/bin/time -v $cmd >/dev/null) 2>&1 | awk -F: '/Maximum resident/ {print $2+0}')
  echo "$rss  $cmd"
done

echo
echo "== top 20: pmx vs perf (comm, dso, symbol, overhead)"
"$P" report -q -i "$DATA" --json --limit 20 > "$OUT/pmx.json"
perf report --stdio --no-children -g none --percent-limit 0 -i "$DATA" 2>/dev/null > "$OUT/perf.txt"
python3 - "$OUT/pmx.json" "$OUT/perf.txt" <<'EOF'
import json, re, sys
ours = json.load(open(sys.argv[1]))["events"][0]["rows"][:20]
theirs = []
for line in open(sys.argv[2]):
    m = re.match(r"\s+([\d.]+)%\s+(\S+)\s+(\S+)\s+\[(.)\]\s+(.*?)\s*$", line)
    if m:
        theirs.append((m.group(2), m.group(3), m.group(5), float(m.group(1))))
theirs = theirs[:20]
worst = 0.0
same = 0
for i, r in enumerate(ours):
    key = (r["comm"], r["dso"], r["symbol"])
    match = [t for t in theirs if t[:3] == key]
    d = abs(match[0][3] - r["overhead"]) if match else None
    if match:
        same += 1
        worst = max(worst, d)
    print(f"{i+1:2} {r['overhead']:7.2f}%  {'%.2f%%' % match[0][3] if match else '   -   ':>8}  {r['comm']:<8} {r['dso']:<22} {r['symbol']}")
print(f"{same}/{len(ours)} of pmx's top rows are in perf's top {len(theirs)}; largest difference {worst:.3f} points")
sys.exit(0 if same == len(ours) and worst <= 0.1 else 1)
EOF
