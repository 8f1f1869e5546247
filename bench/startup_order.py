#!/usr/bin/env python3
"""Write crates/pmx-cli/startup.order: the functions of a release pmx that
its common short runs execute, one mangled name a line, which the release
link (crates/pmx-cli/build.rs, lld's --symbol-ordering-file) places side by
side at the start of .text. Without it the ~300 functions a `pmx stat -- true`
runs lie across 11 MB of text and the kernel faults in ~47 windows of it;
with it, ~6 (docs/BENCHMARKS.md, issue 43 start-up).

The names carry the crates' hashes, which change with the toolchain and the
dependencies' versions: run this again after either (pkg/check.sh says when
fewer than half of the names are left in the binary), then build again.

    startup_order.py [PMX]    (default target/release/pmx; needs valgrind, nm)

The runs: `stat -e task-clock -- true` (the start-up benchmark), `stat -x,`
of two events, `--version`, `report -h`, then `report --branch-stack` of
../shared's callgraph_and_branch-3.8 file when it is there (issue 41: its
code together, fewer pages of the binary resident), each under callgrind; the names
are those it saw executed that are text symbols of PMX, run by run (a run's
new names sorted after the runs before it), so that the benchmark's own
~330 functions lie together first.
"""
import os
import re
import subprocess
import sys
import tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pmx = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target/release/pmx")
runs = [
    ["stat", "-e", "task-clock", "--", "true"],
    ["stat", "-x,", "-e", "task-clock,page-faults", "--", "true"],
    ["--version"],
    ["report", "-h"],
]
# Then, after the start-up's names, those of a branch report (issue 41):
# on a small file most of its pages of text were faulted in for a few
# functions each (6.3 MiB of pmx's 12 MiB at its exit).
branch = os.path.join(os.path.dirname(root), "shared/data/perfdata/"
                      "perf_data_converter__perf.data.callgraph_and_branch-3.8")
if os.path.exists(branch):
    runs.append(["report", "-q", "-i", branch, "--branch-stack"])
else:
    print(f"{branch}: not found, the order has the start-up's names alone", file=sys.stderr)
nm = subprocess.run(["nm", "--defined-only", pmx], check=True, capture_output=True, text=True)
text = {f[2] for f in (l.split() for l in nm.stdout.splitlines()) if len(f) == 3 and f[1] in "tT"}
names = []
name = re.compile(r"^c?fn=\(\d+\) (.+)$")
with tempfile.TemporaryDirectory() as tmp:
    for i, args in enumerate(runs):
        out = os.path.join(tmp, f"cg.{i}")
        subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no",
                        f"--callgrind-out-file={out}", pmx, *args],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            seen = {m.group(1) for m in map(name.match, f) if m} & text
        names += sorted(seen - set(names))
dest = os.path.join(root, "crates/pmx-cli/startup.order")
with open(dest, "w") as f:
    f.write("".join(n + "\n" for n in names))
print(f"{dest}: {len(names)} functions of {pmx}")
