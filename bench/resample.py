#!/usr/bin/env python3
"""Write a copy of a file-mode perf.data with about N samples: every
record is kept, and each SAMPLE record is written 0, 1 or more times so
that the samples are spread evenly (Bresenham) and number exactly N. The
feature sections after the data are moved by the change in size.

    resample.py IN.data OUT.data N

Used by bench/report.sh where recording N samples on a loaded machine is
too slow: the call chains, maps and symbols stay those of a real
recording; only the counts are scaled. Uncompressed files only.

    resample.py --copies K IN.data OUT.data

A longer recording instead: the data section written K times one after
the other, each copy's times (samples' and side-band records') shifted
past the previous copy's last time, so the file reads as K recordings
of the same processes in a row. Its rounds are the source's (the
FINISHED_ROUND records kept as they are, K times), not K times bigger
as N = K × the source's samples makes them: the fair file for "memory
flat as the recording grows" (issue 43). Records without a time (the
header-like ones perf writes once: ID_INDEX, THREAD_MAP, CPU_MAP,
EVENT_UPDATE, FINISHED_INIT, TIME_CONV...) are kept in the first copy
only; FINISHED_ROUND in every copy. All events must have one
sample_type (the time's place), as a `perf record -e EV` file has."""
import struct
import sys

FINISHED_ROUND = 68
SAMPLE = 9
# sample_type bits before TIME in a sample, and after it in the
# sample_id_all trailer (perf_event.h's order).
IDENTIFIER, IP, TID, TIME, ID, CPU, STREAM_ID = 1 << 16, 1, 2, 4, 64, 128, 512


def read_file(src):
    b = open(src, "rb").read()
    assert b[:8] == b"PERFILE2", "not a file-mode perf.data"
    data_off, data_size = struct.unpack_from("<QQ", b, 40)
    nfeat = sum(bin(x).count("1") for x in b[72:104])
    records = []
    pos, end = data_off, data_off + data_size
    while pos < end:
        kind, _misc, size = struct.unpack_from("<IHH", b, pos)
        assert size >= 8, f"bad record at {pos}"
        assert kind != 81, "compressed records: record without -z"
        records.append((kind, pos, size))
        pos += size
    return b, data_off, data_size, nfeat, records


def finish(b, out, data_off, data_size, nfeat, dst):
    """The data section's new size and the feature index moved by it."""
    new_size = out.tell() - data_off
    delta = new_size - data_size
    idx = data_off + data_size
    for i in range(nfeat):
        off, size = struct.unpack_from("<QQ", b, idx + 16 * i)
        out.write(struct.pack("<QQ", off + delta, size))
    out.write(b[idx + 16 * nfeat:])
    out.seek(48)
    out.write(struct.pack("<Q", new_size))


def resample(src, dst, want):
    b, data_off, data_size, nfeat, records = read_file(src)
    samples = sum(1 for k, _, _ in records if k == SAMPLE)
    acc, written = 0, 0
    with open(dst, "wb") as out:
        out.write(b[:data_off])
        for kind, pos, size in records:
            rec = b[pos:pos + size]
            if kind != SAMPLE:
                out.write(rec)
                continue
            acc += want
            while acc >= samples:
                acc -= samples
                out.write(rec)
                written += 1
        finish(b, out, data_off, data_size, nfeat, dst)
    print(f"{dst}: {written} samples (from {samples}), {len(records) - samples} other records")


def time_places(b):
    """(offset of the time in a SAMPLE, offset from the end of the time
    in another kernel record, or None) from the file's attrs."""
    attr_size = struct.unpack_from("<Q", b, 16)[0]
    attrs_off, attrs_size = struct.unpack_from("<QQ", b, 24)
    types = set()
    id_all = set()
    for a in range(attrs_off, attrs_off + attrs_size, attr_size):
        sample_type = struct.unpack_from("<Q", b, a + 24)[0]
        flags = struct.unpack_from("<Q", b, a + 40)[0]
        types.add(sample_type)
        id_all.add(bool(flags & (1 << 18)))
    assert len(types) == 1 and len(id_all) == 1, "events with different sample_types"
    st, all_ = types.pop(), id_all.pop()
    assert st & TIME, "samples without a time"
    in_sample = 8 + 8 * sum(1 for bit in (IDENTIFIER, IP, TID) if st & bit)
    after = 8 * sum(1 for bit in (TIME, ID, STREAM_ID, CPU, IDENTIFIER) if st & bit)
    return in_sample, (after if all_ else None)


def copies(src, dst, k):
    b, data_off, data_size, nfeat, records = read_file(src)
    in_sample, from_end = time_places(b)

    def time_at(kind, pos, size):
        if kind == SAMPLE:
            return pos + in_sample
        if kind < 64 and from_end is not None:
            return pos + size - from_end
        return None

    last = max(struct.unpack_from("<Q", b, t)[0]
               for t in (time_at(*r) for r in records) if t is not None)
    shift = last + 1
    samples = 0
    with open(dst, "wb") as out:
        out.write(b[:data_off])
        for c in range(k):
            for kind, pos, size in records:
                at = time_at(kind, pos, size)
                if at is None and kind != FINISHED_ROUND and c > 0:
                    continue
                rec = bytearray(b[pos:pos + size])
                if at is not None and c > 0:
                    t = struct.unpack_from("<Q", b, at)[0]
                    struct.pack_into("<Q", rec, at - pos, t + c * shift)
                out.write(rec)
                samples += kind == SAMPLE
        finish(b, out, data_off, data_size, nfeat, dst)
    print(f"{dst}: {k} copies, {samples} samples, times shifted by {shift} ns a copy")


if sys.argv[1] == "--copies":
    copies(sys.argv[3], sys.argv[4], int(sys.argv[2]))
else:
    resample(sys.argv[1], sys.argv[2], int(sys.argv[3]))
