//! Write a perf.data file of N samples with 16-entry branch stacks, as
//! `perf record -b -e cycles:u` writes them, inside BINARY's executable
//! segment (mapped at 0x7f0000000000 in one process): the branch
//! benchmark's input (`bench/branch.sh`).
//!
//! `cargo run --release --example branch_file -- OUT N BINARY TEXT_OFFSET TEXT_LEN`
//! (the executable segment's file offset and length, as `readelf -l` shows).

use pmx_perfdata::branch::{encode, BranchEntry, BranchFlags};
use pmx_perfdata::format::EventHeader;
use pmx_perfdata::format::{branch_sample_type as bst, misc, record_type, sample_type as st};
use pmx_perfdata::{FileAttr, Writer};

const PID: u32 = 3000;
const BASE: u64 = 0x7f00_0000_0000;

fn record(kind: u32, m: u16, body: &[u8]) -> Vec<u8> {
    let head = EventHeader {
        kind,
        misc: m,
        size: (8 + body.len()) as u16,
    };
    [&head.to_bytes()[..], body].concat()
}

fn padded(s: &[u8]) -> Vec<u8> {
    let mut b = s.to_vec();
    b.push(0);
    b.resize(b.len().next_multiple_of(8), 0);
    b
}

fn main() -> std::io::Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() != 5 {
        eprintln!("usage: branch_file OUT N BINARY TEXT_OFFSET TEXT_LEN");
        std::process::exit(2);
    }
    let n: u64 = a[1].parse().expect("N");
    let num = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex");
    let (off, len) = (num(&a[3]), num(&a[4]));
    let sample_type = st::IP | st::TID | st::TIME | st::PERIOD | st::BRANCH_STACK;
    let mut attr = vec![0u8; 128];
    attr[4..8].copy_from_slice(&128u32.to_le_bytes());
    attr[16..24].copy_from_slice(&4000u64.to_le_bytes());
    attr[24..32].copy_from_slice(&sample_type.to_le_bytes());
    // exclude_kernel, mmap, comm, sample_id_all
    let flags: u64 = (1 << 5) | (1 << 8) | (1 << 9) | (1 << 18);
    attr[40..48].copy_from_slice(&flags.to_le_bytes());
    attr[72..80].copy_from_slice(&(bst::ANY | bst::USER).to_le_bytes());
    let attrs = vec![FileAttr {
        attr,
        ids: vec![],
        name: "cycles:u".into(),
    }];
    let mut w = Writer::create(std::fs::File::create(&a[0])?, attrs)?;
    let ids = [PID.to_le_bytes(), PID.to_le_bytes()].concat();
    let trailer = |t: u64| [&ids[..], &t.to_le_bytes()].concat();
    let comm = [&ids[..], &padded(b"bench"), &trailer(0)].concat();
    w.write_record(&record(record_type::COMM, 0, &comm))?;
    let mut map = ids.clone();
    for v in [BASE + off, len, off, 0, 0, 0] {
        map.extend_from_slice(&v.to_le_bytes());
    }
    map.extend_from_slice(&5u32.to_le_bytes());
    map.extend_from_slice(&2u32.to_le_bytes());
    map.extend_from_slice(&padded(a[2].as_bytes()));
    map.extend_from_slice(&trailer(0));
    w.write_record(&record(record_type::MMAP2, misc::USER, &map))?;
    // Branches among a few thousand sites (a program's hot paths), chosen
    // by a xorshift generator: the same file every time.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let site = |r: u64| BASE + off + (r % 4096) * (len / 4096);
    let mut body = Vec::new();
    for i in 0..n {
        let entries: Vec<BranchEntry> = (0..16)
            .map(|_| {
                let r = next();
                let mispred = r % 7 == 0;
                BranchEntry {
                    from: site(r >> 8),
                    to: site(r >> 24),
                    flags: BranchFlags::new(
                        mispred,
                        !mispred,
                        false,
                        false,
                        (r >> 40) as u16 & 63,
                        0,
                        0,
                        0,
                        0,
                    ),
                }
            })
            .collect();
        body.clear();
        let ip = entries[0].to;
        let tid = u64::from(PID) | (u64::from(PID) << 32);
        for v in [ip, tid, 1000 + i, 4000] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        encode(&mut body, bst::ANY | bst::USER, None, &entries, &[]);
        w.write_record(&record(record_type::SAMPLE, misc::USER, &body))?;
    }
    w.finish(&Default::default())?;
    Ok(())
}
