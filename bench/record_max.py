#!/usr/bin/env python3
"""record at the kernel's highest rate on every CPU: pmx record against
perf record, paired (the recorders alternated round by round), each
`record -a -F max -e cpu-clock -o FILE -- sleep S` with the variant's
flags (default: both with --threads, one ring reader per CPU).

For every run: the recorder's CPU time (user + sys of the process and
what it waited for, from wait4: the `sleep` costs nothing), the samples
and the records lost, both read back by perf (`perf script -F cpu` for
the samples per CPU, `--show-lost-events` for the LOST records' counts),
so one reader judges both files. Prints each run, then per variant the
medians, and the load average before and after.

    record_max.py [-n ROUNDS] [-s SECONDS] [--pmx PATH] [--perf PATH]
                  [--variant 'NAME|TOOL|FLAGS' ...]

TOOL is pmx or perf; FLAGS are added after `record`. Run as root (or
with kernel.perf_event_paranoid ≤ -1): -a needs it.
"""
import argparse
import collections
import os
import re
import shlex
import shutil
import statistics
import subprocess
import tempfile
import time

p = argparse.ArgumentParser()
p.add_argument("-n", type=int, default=5, help="rounds")
p.add_argument("-s", type=float, default=5.0, help="seconds per recording")
p.add_argument("--pmx", default="target/release/pmx")
p.add_argument("--perf", default=shutil.which("perf") or "perf")
p.add_argument("--variant", action="append", default=[],
               help="NAME|TOOL|FLAGS, repeatable (default: pmx and perf with --threads)")
args = p.parse_args()
variants = [v.split("|", 2) for v in args.variant] or [
    ["pmx --threads", "pmx", "--threads"],
    ["perf --threads", "perf", "--threads"],
]
tools = {"pmx": os.path.abspath(args.pmx), "perf": args.perf}
work = tempfile.mkdtemp(prefix="pmx-record-max-")
null = os.open(os.devnull, os.O_RDWR)


def load():
    return open("/proc/loadavg").read().split()[0]


def record(tool, flags, out):
    words = [tools[tool], "record", *shlex.split(flags), "-a", "-F", "max",
             "-e", "cpu-clock", "-o", out, "--", "sleep", str(args.s)]
    t0 = time.perf_counter()
    pid = os.posix_spawn(words[0], words, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, null, 0),
                                       (os.POSIX_SPAWN_DUP2, null, 1),
                                       (os.POSIX_SPAWN_DUP2, null, 2)])
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    assert os.waitstatus_to_exitcode(status) == 0, f"{words} failed"
    return wall, ru.ru_utime, ru.ru_stime


def read_back(out):
    """Samples per CPU and records lost, as perf reads the file."""
    cpus = collections.Counter()
    lost = 0
    script = subprocess.run([args.perf, "script", "-i", out, "-F", "cpu",
                             "--show-lost-events"],
                            capture_output=True, text=True, check=True).stdout
    for line in script.splitlines():
        m = re.search(r"PERF_RECORD_LOST lost (\d+)", line)
        if m:
            lost += int(m.group(1))
        else:
            m = re.search(r"\[(\d+)\]", line)
            if m:
                cpus[int(m.group(1))] += 1
    return cpus, lost


print(f"load average before: {load()}")
rows = collections.defaultdict(list)
for r in range(args.n):
    for name, tool, flags in variants:
        out = os.path.join(work, "rec.data")
        wall, user, sys_ = record(tool, flags, out)
        cpus, lost = read_back(out)
        samples = sum(cpus.values())
        per_cpu = "/".join(str(cpus[c]) for c in sorted(cpus))
        rows[name].append((user + sys_, user, sys_, samples, lost, wall))
        print(f"round {r + 1} {name:<18} cpu {user + sys_:6.3f} s (user {user:.3f}"
              f" sys {sys_:.3f})  samples {samples} ({per_cpu})  lost {lost}"
              f"  wall {wall:.2f} s  load {load()}", flush=True)
        shutil.rmtree(out, ignore_errors=True) if os.path.isdir(out) else os.remove(out)
print(f"load average after: {load()}")
for name, _, _ in variants:
    v = rows[name]
    med = [statistics.median(x[i] for x in v) for i in range(5)]
    print(f"{name:<18} median of {len(v)}: cpu {med[0]:.3f} s (user {med[1]:.3f}, sys"
          f" {med[2]:.3f}), samples {med[3]:.0f}, lost {med[4]:.0f}"
          f" (max {max(x[4] for x in v)})")
shutil.rmtree(work, ignore_errors=True)
