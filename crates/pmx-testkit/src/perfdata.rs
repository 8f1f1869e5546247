//! The pieces of synthetic perf.data files, as bytes for
//! `pmx_perfdata::Writer::write_record`.
//!
//! A test builds the records it needs from these (a header with
//! [`record`], bodies with [`comm`], [`mmap2`], the sample-id trailers
//! [`pid_tid`] and [`sample_id`]), writes them with pmx-perfdata's
//! `Writer` (one event in memory: [`memory_writer`]), and reads the file
//! back with pmx's reader or the installed perf. Samples are left to each
//! test: their layout follows the test's own `sample_type`.

use pmx_perfdata::format::{callchain, misc, record_type, sample_type, EventHeader};
use pmx_perfdata::{FileAttr, Writer};
use std::io::{self, Cursor, Seek, Write};

/// IP, TID, TIME, CPU, PERIOD and CALLCHAIN: the samples of `perf record
/// -g` (and `pmx record -g`) on one event.
pub const CALLCHAIN_SAMPLES: u64 = sample_type::IP
    | sample_type::TID
    | sample_type::TIME
    | sample_type::CPU
    | sample_type::PERIOD
    | sample_type::CALLCHAIN;

/// `attr.flags` bit 18: `sample_id_all` (side-band records carry the
/// sample-id trailer).
pub const SAMPLE_ID_ALL: u64 = 1 << 18;

/// A `perf_event_attr` of `size` bytes for a software `cpu-clock` event
/// (type 1, config 0) sampling every `period` with `sample_type`; `flags`
/// is the bit-field word at byte 40.
pub fn attr(size: u32, period: u64, sample_type: u64, flags: u64) -> Vec<u8> {
    let mut a = vec![0u8; size as usize];
    a[0..4].copy_from_slice(&1u32.to_le_bytes());
    a[4..8].copy_from_slice(&size.to_le_bytes());
    a[16..24].copy_from_slice(&period.to_le_bytes());
    a[24..32].copy_from_slice(&sample_type.to_le_bytes());
    a[40..48].copy_from_slice(&flags.to_le_bytes());
    a
}

/// A record: the 8-byte header (`kind`, `misc`, size) then `body`.
pub fn record(kind: u32, misc: u16, body: &[u8]) -> Vec<u8> {
    let mut r = EventHeader {
        kind,
        misc,
        size: (8 + body.len()) as u16,
    }
    .to_bytes()
    .to_vec();
    r.extend_from_slice(body);
    r
}

/// `s`, NUL-terminated and padded with NULs to a multiple of 8 bytes (the
/// strings of COMM and MMAP2 records).
pub fn padded(s: &[u8]) -> Vec<u8> {
    let mut b = s.to_vec();
    b.push(0);
    b.resize(b.len().next_multiple_of(8), 0);
    b
}

/// `pid` as both pid and tid (a single-threaded process).
pub fn pid_tid(pid: u32) -> Vec<u8> {
    [pid.to_le_bytes(), pid.to_le_bytes()].concat()
}

/// The sample-id trailer for `TID | TIME | CPU`: pid, tid, time, cpu,
/// reserved.
pub fn sample_id(pid: u32, time: u64, cpu: u32) -> Vec<u8> {
    let mut t = pid_tid(pid);
    t.extend_from_slice(&time.to_le_bytes());
    t.extend_from_slice(&u64::from(cpu).to_le_bytes());
    t
}

/// A COMM body (without trailer): pid, tid, the padded name.
pub fn comm(pid: u32, name: &str) -> Vec<u8> {
    let mut b = pid_tid(pid);
    b.extend_from_slice(&padded(name.as_bytes()));
    b
}

/// An MMAP2 body (without trailer) of `path` at `[start, start + len)`,
/// file offset 0, with `prot`, `MAP_PRIVATE`, no device or inode.
pub fn mmap2(pid: u32, start: u64, len: u64, prot: u32, path: &str) -> Vec<u8> {
    let mut b = pid_tid(pid);
    for v in [start, len, 0] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&[0u8; 24]); // maj, min, ino, ino_generation
    b.extend_from_slice(&prot.to_le_bytes());
    b.extend_from_slice(&2u32.to_le_bytes()); // MAP_PRIVATE
    b.extend_from_slice(&padded(path.as_bytes()));
    b
}

/// A writer into memory of a file with one event, `cpu-clock` with id 1
/// and `attr`. (This returns pmx-perfdata's type: pmx-perfdata's own unit
/// tests build the writer themselves.)
pub fn memory_writer(attr: Vec<u8>) -> Writer<Cursor<Vec<u8>>> {
    Writer::create(
        Cursor::new(Vec::new()),
        vec![FileAttr {
            attr,
            ids: vec![1],
            name: "cpu-clock".into(),
        }],
    )
    .unwrap()
}

/// Where [`many_samples`] maps its libraries.
pub const MANY_BASE: u64 = 0x5555_0000_0000;

/// A `perf record -g` sample ([`CALLCHAIN_SAMPLES`], the chain's second
/// entry as IP, period 1000 + time % 7).
fn chain_sample(pid: u32, time: u64, cpu: u32, chain: &[u64], kernel: bool) -> Vec<u8> {
    let mut b = chain[1].to_le_bytes().to_vec();
    b.extend_from_slice(&sample_id(pid, time, cpu));
    b.extend_from_slice(&(1000 + time % 7).to_le_bytes());
    b.extend_from_slice(&(chain.len() as u64).to_le_bytes());
    for c in chain {
        b.extend_from_slice(&c.to_le_bytes());
    }
    let m = if kernel { misc::KERNEL } else { misc::USER };
    record(record_type::SAMPLE, m, &b)
}

/// Writes `n` plain samples into `w` (made with `attr(128, 1000,
/// CALLCHAIN_SAMPLES, SAMPLE_ID_ALL)`): three processes over ~600
/// distinct stacks (a fifth with a kernel part at 0xffffffff81000000),
/// a COMM and an MMAP2 of `/nonexistent/libK.so` every 40,000 samples, a
/// FINISHED_ROUND every 1,000 samples whose times are written a little
/// out of order. The same `n` gives the same bytes; `progress` hears the
/// samples written every 2^20. Tests of many samples and the bench's
/// multi-GB files (pmx-perfdata's `many_samples` example) use it.
pub fn many_samples<W: Write + Seek>(
    w: &mut Writer<W>,
    n: u64,
    progress: &mut dyn FnMut(u64),
) -> io::Result<()> {
    many_samples_named(w, n, u64::MAX, progress)
}

/// [`many_samples`] whose COMMs and MMAP2s reuse `names` names (`progK`
/// and `libK.so` for K modulo `names`; each map still at its own
/// address): with a few names, the distinct commands and binaries of
/// the file stop growing with its length (issue 43's memory bench).
pub fn many_samples_named<W: Write + Seek>(
    w: &mut Writer<W>,
    n: u64,
    names: u64,
    progress: &mut dyn FnMut(u64),
) -> io::Result<()> {
    many_samples_every(w, n, names, 40_000, progress)
}

/// [`many_samples_named`] with a COMM and an MMAP2 every `every`
/// samples instead of 40,000 (the same samples otherwise): long runs of
/// samples with no side-band record between them, or short ones.
pub fn many_samples_every<W: Write + Seek>(
    w: &mut Writer<W>,
    n: u64,
    names: u64,
    every: u64,
    progress: &mut dyn FnMut(u64),
) -> io::Result<()> {
    let (names, every) = (names.max(1), every.max(1));
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..n {
        let time = 1000 + i;
        if i % every == 0 {
            let (pid, k) = (100 + (i / every) as u32 % 3, i / every);
            let mut c = comm(pid, &format!("prog{}", k % names));
            c.extend_from_slice(&sample_id(pid, time, 0));
            w.write_record(&record(record_type::COMM, misc::COMM_EXEC, &c))?;
            let start = MANY_BASE + k * 0x10_0000;
            let mut mm = mmap2(
                pid,
                start,
                0x10_0000,
                5,
                &format!("/nonexistent/lib{}.so", k % names),
            );
            mm.extend_from_slice(&sample_id(pid, time, 0));
            w.write_record(&record(record_type::MMAP2, misc::USER, &mm))?;
        }
        let r = next();
        let pid = 100 + (r % 3) as u32;
        let leaf = MANY_BASE + (r >> 8) % 200 * 0x40;
        let mut chain = vec![
            callchain::CONTEXT_USER,
            leaf,
            MANY_BASE + 0x9000 + (r >> 20) % 3 * 8,
        ];
        let kernel = (r >> 30) % 5 == 0;
        if kernel {
            let k = 0xffff_ffff_8100_0000 + (r >> 33) % 4 * 0x10;
            chain.splice(0..0, [callchain::CONTEXT_KERNEL, k]);
        }
        // Out of order within the round: a little later or earlier.
        let (jitter, cpu) = ((r >> 40) % 5, (r >> 50) as u32 % 4);
        w.write_record(&chain_sample(pid, time + jitter, cpu, &chain, kernel))?;
        if i % 1000 == 999 {
            w.write_record(&record(record_type::FINISHED_ROUND, 0, &[]))?;
        }
        if (i + 1) % (1 << 20) == 0 {
            progress(i + 1);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmx_perfdata::format::record_type;

    #[test]
    fn records_are_sized_and_strings_padded() {
        let r = record(record_type::COMM, 0, &comm(7, "prog"));
        assert_eq!(r.len(), 8 + 8 + 8);
        assert_eq!(u16::from_le_bytes([r[6], r[7]]), 24);
        assert_eq!(padded(b"12345678").len(), 16);
        assert_eq!(sample_id(1, 2, 3).len(), 24);
        assert_eq!(mmap2(1, 0, 4096, 5, "/x").len() % 8, 0);
        assert_eq!(attr(136, 1000, CALLCHAIN_SAMPLES, SAMPLE_ID_ALL).len(), 136);
    }
}
