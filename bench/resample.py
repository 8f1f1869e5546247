#!/usr/bin/env python3
"""Write a copy of a file-mode perf.data with about N samples: every
record is kept, and each SAMPLE record is written 0, 1 or more times so
that the samples are spread evenly (Bresenham) and number exactly N. The
feature sections after the data are moved by the change in size.

    resample.py IN.data OUT.data N

Used by bench/report.sh where recording N samples on a loaded machine is
too slow: the call chains, maps and symbols stay those of a real
recording; only the counts are scaled. Uncompressed files only."""
import struct
import sys

src, dst, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
b = open(src, "rb").read()
assert b[:8] == b"PERFILE2", "not a file-mode perf.data"
data_off, data_size = struct.unpack_from("<QQ", b, 40)
flags = b[72:104]
nfeat = sum(bin(x).count("1") for x in flags)
records = []
pos, end = data_off, data_off + data_size
while pos < end:
    kind, _misc, size = struct.unpack_from("<IHH", b, pos)
    assert size >= 8, f"bad record at {pos}"
    assert kind != 81, "compressed records: record without -z"
    records.append((kind, b[pos:pos + size]))
    pos += size
samples = sum(1 for k, _ in records if k == 9)
out = bytearray(b[:data_off])
acc, written = 0, 0
for kind, rec in records:
    if kind != 9:
        out += rec
        continue
    acc += want
    while acc >= samples:
        acc -= samples
        out += rec
        written += 1
new_size = len(out) - data_off
delta = new_size - data_size
struct.pack_into("<Q", out, 48, new_size)
# The feature index (one {offset, size} per feature bit) then the features.
idx = end
for i in range(nfeat):
    off, size = struct.unpack_from("<QQ", b, idx + 16 * i)
    out += struct.pack("<QQ", off + delta, size)
out += b[idx + 16 * nfeat:]
open(dst, "wb").write(out)
print(f"{dst}: {written} samples (from {samples}), {len(records) - samples} other records")
