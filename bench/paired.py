#!/usr/bin/env python3
"""Paired runs: commands alternated round by round (forward, then
reversed), each run's CPU time (user + sys of it and what it waited for),
wall time and peak RSS from wait4; medians per command, the load average
beside the figures, and each command's median CPU against the first's.
Each command runs under /usr/bin/time, whose %M is the peak RSS of the
command alone (a child forked from Python would count Python's pages);
`true` runs in every round too, and its median CPU (the launchers' cost,
a few ms) is taken from each command's ("net").

    paired.py [-n ROUNDS] [--json OUT] NAME=COMMAND NAME=COMMAND ...

COMMAND is split by the shell's rules (no shell runs it); its output goes
to /dev/null. Used by bench/report.sh's paired mode (issue 43)."""
import argparse
import json
import os
import shlex
import statistics
import tempfile
import time

RSS = tempfile.NamedTemporaryFile(prefix="paired-rss-")


def run(argv):
    argv = ["/usr/bin/time", "-f", "%M", "-o", RSS.name] + argv
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_RDWR)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    with open(RSS.name) as f:
        rss = int(f.read().split()[-1])
    return ru.ru_utime + ru.ru_stime, wall, rss, os.waitstatus_to_exitcode(status)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=5, help="rounds (default 5)")
    ap.add_argument("--json", help="write the runs here")
    ap.add_argument("commands", nargs="+", help="NAME=COMMAND")
    a = ap.parse_args()
    cmds = [(c.split("=", 1)[0], shlex.split(c.split("=", 1)[1])) for c in a.commands]
    cmds.append(("(launcher: true)", ["true"]))
    runs = {name: [] for name, _ in cmds}
    load0 = os.getloadavg()
    for r in range(a.n):
        order = cmds if r % 2 == 0 else cmds[::-1]
        for name, argv in order:
            runs[name].append(run(argv))
    load1 = os.getloadavg()
    print(f"  load {load0[0]:.1f} → {load1[0]:.1f} ({a.n} rounds, alternated; launcher "
          f"{statistics.median(x[0] for x in runs[cmds[-1][0]])*1e3:.1f} ms CPU taken off)")
    floor = statistics.median(x[0] for x in runs[cmds[-1][0]])
    base = statistics.median(x[0] for x in runs[cmds[0][0]]) - floor
    for name, _ in cmds[:-1]:
        rs = runs[name]
        cpu = statistics.median(x[0] for x in rs) - floor
        wall = statistics.median(x[1] for x in rs)
        rss = min(x[2] for x in rs)
        bad = sum(1 for x in rs if x[3] != 0)
        note = f"  ({bad} runs failed)" if bad else ""
        print(f"  {name:<24} cpu (net) {cpu*1e3:9.1f} ms  wall {wall*1e3:9.1f} ms  "
              f"peak {rss/1024:8.1f} MiB  cpu ÷ first's: {cpu/base:6.2f}{note}")
    if a.json:
        json.dump({"load": [load0, load1], "runs": runs}, open(a.json, "w"))


main()
