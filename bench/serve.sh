#!/usr/bin/env bash
# pmx serve: scrape latency and the daemon's CPU use.
#
#   bench/serve.sh [SCRAPES] [SECONDS]
#
# Starts `pmx serve` (release build) on a loopback port with 8 software
# events on every online CPU, then
#  1. times SCRAPES scrapes (default 2000) back to back, each on a new
#     connection and then on one keep-alive connection: p50, p99, max of
#     the client-side latency (request sent → last byte of the body read),
#     and the daemon's own pmx_scrape_duration_seconds;
#  2. scrapes once a second for SECONDS (default 60) and reads the daemon's
#     utime+stime from /proc/PID/stat before and after: its CPU use at a
#     1 s scrape interval (plus the same time with no scrapes at all).
# The client is a small Python program (python3 is all it needs).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000}
S=${2:-60}
[ -n "${PMX_NO_BUILD:-}" ] || cargo build --release -q
E=task-clock,cpu-clock,context-switches,cpu-migrations,page-faults,minor-faults,major-faults,alignment-faults
LOG=$(mktemp)
"${CARGO_TARGET_DIR:-target}"/release/pmx serve --listen 127.0.0.1:0 -e "$E" 2>"$LOG" &
PID=$!
trap 'kill $PID 2>/dev/null; rm -f "$LOG"' EXIT
for _ in $(seq 100); do grep -q 'listening on' "$LOG" && break; sleep 0.05; done
ADDR=$(grep -o 'http://[^/]*' "$LOG" | head -1 | cut -d/ -f3)
echo "pmx serve pid $PID on $ADDR: $(grep -o '([^)]*)' "$LOG" | head -1), $(nproc) CPUs"
python3 - "$ADDR" "$N" "$S" "$PID" <<'PY'
import os, socket, sys, time

host, port = sys.argv[1].rsplit(":", 1)
n, secs, pid = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
REQ = ("GET /metrics HTTP/1.1\r\nHost: %s\r\nAccept: application/openmetrics-text;version=1.0.0\r\n"
       % sys.argv[1]).encode()

def read_response(s, buf=b""):
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    head, _, body = buf.partition(b"\r\n\r\n")
    length = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(body) < length:
        body += s.recv(65536)
    return body[:length]

def once_new():
    s = socket.create_connection((host, int(port)))
    t = time.perf_counter()
    s.sendall(REQ + b"Connection: close\r\n\r\n")
    body = read_response(s)
    dt = time.perf_counter() - t
    s.close()
    return dt, body

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]

def server_time(body):
    for l in body.decode().splitlines():
        if l.startswith("pmx_scrape_duration_seconds "):
            return float(l.split()[1])

def report(label, lat, srv, body):
    print("%-22s p50 %7.1f µs  p99 %7.1f µs  max %7.1f µs | in the daemon p50 %5.1f µs p99 %5.1f µs | %d series, %d bytes"
          % (label, pct(lat, 50) * 1e6, pct(lat, 99) * 1e6, max(lat) * 1e6,
             pct(srv, 50) * 1e6, pct(srv, 99) * 1e6,
             sum(1 for l in body.decode().splitlines() if l and not l.startswith("#")), len(body)))

for _ in range(50):
    once_new()
lat, srv = [], []
for _ in range(n):
    dt, body = once_new()
    lat.append(dt); srv.append(server_time(body))
report("new connection each", lat, srv, body)

s = socket.create_connection((host, int(port)))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
lat, srv = [], []
for _ in range(n):
    t = time.perf_counter()
    s.sendall(REQ + b"\r\n")
    body = read_response(s)
    lat.append(time.perf_counter() - t); srv.append(server_time(body))
s.close()
report("keep-alive connection", lat, srv, body)

tck = os.sysconf("SC_CLK_TCK")
def cpu():
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tck

def rss():
    for l in open("/proc/%d/status" % pid):
        if l.startswith("VmRSS:"):
            return l.split()[1] + " kB"

for label, scrape in (("no scrapes", False), ("1 s scrape interval", True)):
    c0, t0 = cpu(), time.monotonic()
    k = 0
    while time.monotonic() - t0 < secs:
        if scrape:
            once_new()
        k += 1
        time.sleep(max(0.0, t0 + k - time.monotonic()))
    used = cpu() - c0
    print("%-22s %.3f s CPU over %d s = %.3f%% of one CPU (RSS %s)"
          % (label, used, secs, 100 * used / secs, rss()))
PY
