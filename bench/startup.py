#!/usr/bin/env python3
"""Start-up, paired: run command A and command B alternately (A B A B …),
N pairs after W warm-up pairs, each with stdin, stdout and stderr on
/dev/null, and print per command the median, the quartiles and the
minimum of the wall time (posix_spawn to wait4) and of the CPU time
(user + sys of the process and what it waited for), then the median of
the per-pair ratios B/A. Alternating keeps a busy host's drift out of
the ratio.

With --bare, A runs under bench/bare_exec.c (compiled here with cc):
a process that forks, execs A and waits, the floor of any launcher, so
`startup.py --bare true 'pmx stat -e task-clock -- true'` measures pmx
against the least a program that starts `true` must cost, both the
same way (one process spawned, itself and what it waited for timed).

    startup.py [-n N] [-w W] [--bare] 'A …' 'B …'
"""
import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import tempfile
import time

p = argparse.ArgumentParser()
p.add_argument("-n", type=int, default=200)
p.add_argument("-w", type=int, default=20)
p.add_argument("--bare", action="store_true",
               help="run A under a bare fork+exec launcher (bench/bare_exec.c)")
p.add_argument("a")
p.add_argument("b")
args = p.parse_args()
null = os.open(os.devnull, os.O_RDWR)


def argv(cmd):
    words = shlex.split(cmd)
    words[0] = shutil.which(words[0]) or words[0]
    return words


def run(words):
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(words[0], words, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, null, 0),
                                       (os.POSIX_SPAWN_DUP2, null, 1),
                                       (os.POSIX_SPAWN_DUP2, null, 2)])
    _, status, ru = os.wait4(pid, 0)
    wall = (time.perf_counter_ns() - t0) / 1e6
    assert os.waitstatus_to_exitcode(status) == 0, f"{words} failed"
    return wall, (ru.ru_utime + ru.ru_stime) * 1e3


a, b = argv(args.a), argv(args.b)
if args.bare:
    here = os.path.dirname(os.path.abspath(__file__))
    bare = os.path.join(tempfile.mkdtemp(prefix="pmx-startup-"), "bare_exec")
    subprocess.run(["cc", "-O2", "-o", bare, os.path.join(here, "bare_exec.c")],
                   check=True)
    a = [bare] + a
    args.a = "bare_exec " + args.a
for _ in range(args.w):
    run(a), run(b)
ra, rb = [], []
for _ in range(args.n):
    ra.append(run(a))
    rb.append(run(b))


def show(name, rs):
    for i, what in ((0, "wall"), (1, "cpu")):
        v = sorted(r[i] for r in rs)
        q = statistics.quantiles(v, n=4)
        print(f"{name:<50} {what:>4}: median {statistics.median(v):7.2f} ms"
              f"  quartiles {q[0]:.2f} … {q[2]:.2f}  min {v[0]:.2f}")


show(args.a, ra)
show(args.b, rb)
for i, what in ((0, "wall"), (1, "cpu")):
    ratios = [y[i] / x[i] for x, y in zip(ra, rb) if x[i] > 0]
    med = statistics.median([r[i] for r in rb]) / statistics.median([r[i] for r in ra])
    print(f"B/A {what}: median of the {len(ratios)} paired ratios "
          f"{statistics.median(ratios):.2f}x, ratio of the medians {med:.2f}x")
