#!/usr/bin/env bash
# pmx report against perf report --stdio --no-children on three files of
# cpu-clock samples with call chains (1k, 160k and 1.25M samples, made
# from one perf recording here: see below): time (hyperfine, paired: both tools in one run per
# file), peak memory (/usr/bin/time -v, the least of 3 runs), the top-20
# rows compared, and pmx's first run after boot (its kernel-symbol cache
# removed before every run) against its second (cache in place).
# Needs hyperfine, Debian's perf (linux-perf), a C compiler and python3.
#
#   bench/report.sh                # record (once, kept in $OUT) and compare
#   RUNS=30 bench/report.sh        # hyperfine runs per command (default 20)
#   SIZES="1k 160k" bench/report.sh
#   PAIRED=1 SIZES="1k 160k 1.25M 10M dwarf" bench/report.sh
#   SIZES="1.25M 10Mx8" ...     # 10Mx8: 8 copies of 1.25M one after the
#                                  # other (its rounds a real recording's)
#                                  # issue 43's figures: pmx and perf
#                                  # alternated (bench/paired.py, ROUNDS,
#                                  # default 5; 2 at 10M), CPU medians,
#                                  # peak RSS, --jobs 1 against --jobs 2
# 10M is resampled too; "dwarf" is a perf record --call-graph dwarf of
# the workload (5 s at 1 kHz).
#   BIG=3 bench/report.sh          # bounded memory: a file of ~3 GB
#                                  # (pmx-perfdata's many_samples example,
#                                  # 11.1M samples per GB), pmx report's
#                                  # peak RSS with its progress line on a
#                                  # terminal (script(1) gives it one); the
#                                  # file is deleted afterwards
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p pmx-cli
P=$PWD/${CARGO_TARGET_DIR:-target}/release/pmx
OUT=${OUT:-/tmp/pmx-bench-report}
RUNS=${RUNS:-20}
mkdir -p "$OUT"
# pmx's kernel-symbol cache for these runs only (removed for "first run").
CACHE=$OUT/cache
PMX="env XDG_CACHE_HOME=$CACHE $P"

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
[ -x "$OUT/work" ] || cc -O1 -fno-omit-frame-pointer -g -o "$OUT/work" "$OUT/work.c"

# One recording (2 × work for 20 s at cpu-clock -c 10000 -g: about 1.25M
# samples on an idle 2-CPU VM, far fewer on a loaded one), then the three
# files from it with bench/resample.py: every side-band record kept, the
# SAMPLE records thinned or repeated evenly to exactly 1,000, 160,000 and
# 1,250,000 (real call chains, maps and symbols; scaled counts).
BASE=$OUT/base.data
if [ ! -s "$BASE" ]; then
  echo "recording: 2 × work for 20 s at cpu-clock -c 10000 -g"
  perf record -q -e cpu-clock -c 10000 -g -o "$BASE" -- \
    sh -c "timeout 20 '$OUT/work' 1000000 & timeout 20 '$OUT/work' 1000000; wait" || true
fi
record() {
  local n
  case $1 in 1k) n=1000 ;; 160k) n=160000 ;; 1.25M) n=1250000 ;; 10M) n=10000000 ;;
    dwarf)
      [ -s "$OUT/dwarf.data" ] || perf record -q -e cpu-clock -F 1000 --call-graph dwarf \
        -o "$OUT/dwarf.data" -- timeout 5 "$OUT/work" 1000000 || true
      return ;;
    10Mx8) # 8 copies of 1.25M in a row, times shifted: a real recording's
      # rounds, 8 times as many (bench/resample.py --copies)
      record 1.25M
      [ -s "$OUT/10Mx8.data" ] || python3 bench/resample.py --copies 8 "$OUT/1.25M.data" "$OUT/10Mx8.data"
      return ;;
  esac
  [ -s "$OUT/$1.data" ] || python3 bench/resample.py "$BASE" "$OUT/$1.data" "$n"
}

peak() { # the least max RSS (KiB) of 3 runs of "$@"
  for _ in 1 2 3; do
    /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1
  done | sort -n | head -1
}

echo "machine: $(nproc) CPUs, $(uname -r), $(perf version), load: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${BIG:-}" ]; then
  big=$OUT/big.data
  cargo run --release -q -p pmx-perfdata --example many_samples -- "$big" $((BIG * 11100000))
  echo "== big: $(stat -c %s "$big") bytes"
  for args in "report -q" "report" "script --jobs 1"; do
    # The progress line goes to the terminal script(1) makes; the peak RSS to a file.
    script -qec "/usr/bin/time -f %M -o $OUT/big.rss $PMX $args -i $big >/dev/null" /dev/null |
      tr '\r' '\n' | grep -v '^$' | tail -2
    echo " pmx $args: peak RSS $(cat "$OUT/big.rss") KiB"
  done
  rm -f "$big"
  exit 0
fi
if [ -n "${PAIRED:-}" ]; then
  for size in ${SIZES:-1k 160k 1.25M 10M dwarf}; do
    record "$size"
    data=$OUT/$size.data
    n=${ROUNDS:-5}
    [ "$size" = 10M ] && n=${ROUNDS:-2}
    echo
    echo "== $size: $(stat -c %s "$data") bytes, $($P report -q -i "$data" --limit 0 | grep -E '^# Samples' | tr '\n' ' ')"
    $PMX report -q -i "$data" >/dev/null   # the kernel-symbol cache in place
    echo " report, flat"
    nice python3 bench/paired.py -n "$n" "pmx=$PMX report -q -i $data" \
      "perf=perf report --stdio --no-children -g none -i $data" "pmx --jobs 1=$PMX report -q --jobs 1 -i $data"
    echo " report, call chains"
    nice python3 bench/paired.py -n "$n" "pmx -g=$PMX report -q -g --no-children -i $data" \
      "perf=perf report --stdio --no-children -g -i $data"
    echo " script"
    nice python3 bench/paired.py -n "$n" "pmx=$PMX script -i $data" "perf=perf script -i $data"
  done
  exit 0
fi
for size in ${SIZES:-1k 160k 1.25M}; do
  record "$size"
  data=$OUT/$size.data
  echo
  echo "== $size: $($P report -q -i "$data" --limit 0 | grep -E '^# (Samples|event)' | tr '\n' ' ')"
  $PMX report -q -i "$data" >/dev/null   # the cache is in place
  hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$OUT/$size.json" \
    --command-name "pmx (second run: cache)" "$PMX report -q -i $data" \
    --command-name "perf" "perf report --stdio --no-children -i $data" \
    --prepare true --prepare true --prepare "rm -f $CACHE/pmx/kallsyms.idx" \
    --command-name "pmx (first run: no cache)" "$PMX report -q -i $data" >/dev/null
  python3 - "$OUT/$size.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
perf = r[1]
for x in r:
    cpu = (x['user'] + x['system']) * 1e3
    print(f"  {x['command']:<28} mean {x['mean']*1e3:8.1f} ms ± {x['stddev']*1e3:6.1f}  min {x['min']*1e3:8.1f} ms"
          f"  user+sys {cpu:8.1f} ms  perf/this: mean {perf['mean']/x['mean']:5.2f}×, min {perf['min']/x['min']:5.2f}×")
EOF
  echo "  peak RSS: pmx $(peak $PMX report -q -i "$data") KiB, perf $(peak perf report --stdio --no-children -i "$data") KiB"
  # The top 20 rows: comm, dso, symbol, overhead.
  $PMX report -q -i "$data" --json --limit 20 > "$OUT/$size.pmx.json"
  perf report --stdio --no-children -g none --percent-limit 0 -i "$data" 2>/dev/null > "$OUT/$size.perf.txt"
  python3 - "$OUT/$size.pmx.json" "$OUT/$size.perf.txt" <<'EOF' || true
import json, re, sys
ours = json.load(open(sys.argv[1]))["events"][0]["rows"][:20]
theirs = []
for line in open(sys.argv[2]):
    m = re.match(r"\s+([\d.]+)%\s+(\S+)\s+(\S+)\s+\[(.)\]\s+(.*?)\s*$", line)
    if m:
        theirs.append((m.group(2), m.group(3), m.group(5), float(m.group(1))))
theirs = theirs[:len(ours)]
same = sum(1 for r, t in zip(ours, theirs) if (r["comm"], r["dso"], r["symbol"]) == t[:3])
worst = max((abs(r["overhead"] - t[3]) for r, t in zip(ours, theirs)), default=0)
print(f"  top {len(ours)}: {same} rows identical in order to perf's; largest overhead difference {worst:.3f} points")
for i, (r, t) in enumerate(zip(ours, theirs)):
    if (r["comm"], r["dso"], r["symbol"]) != t[:3]:
        print(f"    row {i+1}: pmx {r['comm']} {r['dso']} {r['symbol']} {r['overhead']:.2f}% | perf {' '.join(t[:3])} {t[3]:.2f}%")
EOF
done
