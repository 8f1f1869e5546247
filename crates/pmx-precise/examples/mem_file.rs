//! Writes a memory-access recording with pmx-perfdata's writer, for
//! `bench/mem_report.sh`: `mem_file OUT N` — one process mapping libc
//! (its text sampled, its data, a heap and a stack accessed), N PEBS-like
//! load samples (`IP|TID|TIME|ADDR|WEIGHT|DATA_SRC`, raw event 0x1cd)
//! with a spread of code and data addresses, weights and eight data
//! sources (L1, LFB, L2, L3 hits and snoops, local DRAM, remote cache
//! HITM, a locked access, an STLB miss). Deterministic (a fixed LCG).

use pmx_perfdata::attr::FileAttr;
use pmx_perfdata::format::{record_type, sample_type};
use pmx_perfdata::write::Writer;
use pmx_testkit::perfdata::{attr, comm, mmap2, record};

const LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(out), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<u64>().ok()))
    else {
        eprintln!("usage: mem_file OUT NUMBER_OF_SAMPLES");
        std::process::exit(2);
    };
    let st = sample_type::IP
        | sample_type::TID
        | sample_type::TIME
        | sample_type::ADDR
        | sample_type::WEIGHT
        | sample_type::DATA_SRC;
    let mut a = attr(128, 10007, st, 0);
    a[0..4].copy_from_slice(&4u32.to_le_bytes()); // PERF_TYPE_RAW
    a[8..16].copy_from_slice(&0x1cdu64.to_le_bytes());
    let file = std::fs::File::create(out)?;
    let name = "cpu/mem-loads,ldlat=30/P".to_string();
    let attrs = vec![FileAttr {
        attr: a,
        ids: vec![1],
        name,
    }];
    let mut w = Writer::create(std::io::BufWriter::new(file), attrs)?;
    let pid = 4242u32;
    let libc_len = std::fs::metadata(LIBC)
        .map_or(2 << 20, |m| m.len())
        .next_multiple_of(4096);
    let (libc, heap, stack) = (
        0x7f12_3400_0000u64,
        0x5555_5600_0000u64,
        0x7ffd_0000_0000u64,
    );
    w.write_record(&record(record_type::COMM, 0, &comm(pid, "memhog")))?;
    w.write_record(&record(
        record_type::MMAP2,
        2,
        &mmap2(pid, libc, libc_len, 5, LIBC),
    ))?;
    w.write_record(&record(
        record_type::MMAP2,
        2,
        &mmap2(pid, heap, 64 << 20, 3, "[heap]"),
    ))?;
    w.write_record(&record(
        record_type::MMAP2,
        2,
        &mmap2(pid, stack, 1 << 20, 3, "[stack]"),
    ))?;
    const SOURCES: [u64; 8] = [
        0x6810_0142,
        0x6810_0242,
        0x6810_0442,
        0x6810_0842,
        0x6808_1022,
        0x1_0680_1042,
        0x6a10_0142,
        0x6820_0142,
    ];
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 11
    };
    let mut body = Vec::with_capacity(56);
    for i in 0..n {
        let r = next();
        let ip = libc + 0x28000 + (r % 0x150000);
        let addr = match r % 10 {
            0..=4 => heap + (next() % (64 << 20)) / 8 * 8,
            5..=7 => libc + (next() % libc_len) / 8 * 8,
            _ => stack + (next() % (1 << 20)) / 8 * 8,
        };
        body.clear();
        let tid = u64::from(pid) | u64::from(pid) << 32;
        let weight = 5 + (r >> 20) % 400;
        for v in [
            ip,
            tid,
            1_000_000 + i * 100,
            addr,
            weight,
            SOURCES[(r >> 40) as usize % 8],
        ] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        w.write_record(&record(record_type::SAMPLE, 2, &body))?;
    }
    w.finish(&Default::default())?;
    Ok(())
}
