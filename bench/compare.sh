#!/usr/bin/env bash
# Two pmx builds side by side in the same hyperfine runs: `pmx stat`
# start-up, `pmx record` of a CPU-bound program, `pmx report` of a
# perf.data with call chains. For checking that a change made nothing
# slower. Needs hyperfine, Debian's perf and a C compiler.
#
#   OLD=/path/to/old/pmx bench/compare.sh    # NEW defaults to this tree's release build
set -euo pipefail
cd "$(dirname "$0")/.."
: "${OLD:?set OLD to the pmx binary to compare with}"
cargo build --release -q -p pmx-cli
NEW=${NEW:-$(realpath "${CARGO_TARGET_DIR:-target}/release/pmx")}
OUT=${OUT:-/tmp/pmx-bench-compare}
mkdir -p "$OUT"
cat > "$OUT/hot.c" <<'C'
static volatile double sink;
__attribute__((noinline)) double step(double x) { return x * 1.0000001 + 0.5; }
__attribute__((noinline)) void hot(long n) { double a = 0; for (long i = 0; i < n; i++) a = step(a); sink = a; }
int main(int argc, char **argv) { (void)argv; hot(argc > 1 ? 400000000L : 200000000L); return 0; }
C
cc -O1 -fno-omit-frame-pointer -o "$OUT/hot" "$OUT/hot.c"
cd "$OUT"
[ -s big.data ] || perf record -q -e cpu-clock -c 20000 -g -o big.data -- ./hot long 2>/dev/null
echo "== stat start-up"
hyperfine -N --warmup 10 --runs 200 \
  "$OLD stat -e task-clock -- true" "$NEW stat -e task-clock -- true"
echo "== record (cpu-clock, -g)"
hyperfine -N --warmup 1 --runs 5 \
  "$OLD record -g -e cpu-clock -o old.data -- ./hot" \
  "$NEW record -g -e cpu-clock -o new.data -- ./hot"
echo "== report"
hyperfine -N --warmup 2 --runs 15 \
  "$OLD report -q -i big.data" "$NEW report -q -i big.data"
cmp <("$OLD" report -q -i big.data) <("$NEW" report -q -i big.data) && echo "report output identical"
