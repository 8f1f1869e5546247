#!/usr/bin/env bash
# pmx serve's profiles: the daemon's CPU use while it profiles, against
# its baseline (docs/BENCHMARKS.md, "pmx serve: the pprof endpoint").
#
#   bench/pprof.sh [SECONDS] [PROFILE_SECONDS] [HZ]
#
# Starts `pmx serve` (release build) on a loopback port with perf's
# default events, scrapes /metrics every 15 s throughout, and reads the
# daemon's utime+stime (/proc/PID/stat) over three windows of SECONDS
# (default 120):
#  1. baseline: no profile;
#  2. profiling: profiles of PROFILE_SECONDS (default 30) at HZ (default
#     100) back to back, system-wide, as a scraper would take them
#     (each response's X-Pmx-Timing says how long sampling and the export
#     took);
#  3. sampling only: the same sessions, but the client hangs up half a
#     second before each ends (the session stops, nothing is exported):
#     the session's own cost — /proc read for the processes already
#     there, the rings drained every 100 ms.
# The client is a small Python program (python3 is all it needs).
set -euo pipefail
cd "$(dirname "$0")/.."
S=${1:-120}
P=${2:-30}
HZ=${3:-100}
[ -n "${PMX_NO_BUILD:-}" ] || cargo build --release -q -p pmx-cli
LOG=$(mktemp)
"${CARGO_TARGET_DIR:-target}"/release/pmx serve --listen 127.0.0.1:0 2>"$LOG" &
PID=$!
trap 'kill $PID 2>/dev/null; rm -f "$LOG"' EXIT
for _ in $(seq 200); do grep -q 'listening on' "$LOG" && break; sleep 0.05; done
ADDR=$(grep -o 'http://[^/]*' "$LOG" | head -1 | cut -d/ -f3)
echo "pmx serve pid $PID on $ADDR, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$ADDR" "$S" "$P" "$HZ" "$PID" <<'PY'
import os, socket, sys, threading, time

host, port = sys.argv[1].rsplit(":", 1)
secs, psecs, hz, pid = (int(x) for x in sys.argv[2:6])
tick = os.sysconf("SC_CLK_TCK")

def cpu():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick

def get(path):
    s = socket.create_connection((host, int(port)))
    s.settimeout(600)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    buf = b""
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        buf += b
    s.close()
    head = buf.split(b"\r\n\r\n", 1)[0].decode(errors="replace")
    return head

stop = threading.Event()
def scraper():
    while not stop.is_set():
        get("/metrics")
        stop.wait(15)
threading.Thread(target=scraper, daemon=True).start()

def hang_up(query):
    s = socket.create_connection((host, int(port)))
    s.sendall(f"GET /debug/pprof/profile?{query} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    time.sleep(psecs - 0.5)
    s.close()
    time.sleep(0.5)

def window(name, profile_query, abandon=False):
    t0, c0 = time.time(), cpu()
    timings = []
    while time.time() - t0 < secs:
        if profile_query is None:
            time.sleep(1)
            continue
        if abandon:
            hang_up(profile_query)
            continue
        head = get(f"/debug/pprof/profile?{profile_query}")
        for l in head.split("\r\n"):
            if l.startswith("X-Pmx-Timing:") or l.startswith("X-Pmx-Samples:"):
                timings.append(l.split(":", 1)[1].strip())
        if not head.startswith("HTTP/1.1 200"):
            print("  unexpected:", head.splitlines()[0])
    wall, used = time.time() - t0, cpu() - c0
    print(f"{name}: {used:.2f} s CPU in {wall:.1f} s = {100 * used / wall:.2f}% of one CPU")
    for t in timings:
        print("   ", t)
    return used / wall

base = window("baseline (scrapes only)", None)
prof = window(f"profiling ({psecs} s profiles, {hz} Hz, every CPU)", f"seconds={psecs}&hz={hz}")
own = window(f"sampling only ({psecs} s sessions, {hz} Hz, every CPU, hung up before the export)", f"seconds={psecs}&hz={hz}", abandon=True)
print(f"beyond the baseline: profiling {100 * (prof - base):.2f}%, sampling only {100 * (own - base):.2f}% of one CPU")
stop.set()
PY
