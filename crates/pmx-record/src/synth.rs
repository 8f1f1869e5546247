//! Records synthesized the way perf does, for what existed before the
//! recording started: COMM and MMAP2 records from `/proc/PID/…`, the
//! kernel's map from `/proc/kallsyms`, each with the `sample_id_all`
//! trailer the kernel would have appended.

use pmx_perf::mmap::record as rt;
use pmx_perf::{record_misc, sample_type};

/// The `sample_id_all` trailer of a synthesized record: the fields the
/// kernel would append, in its order (TID, TIME, ID, STREAM_ID, CPU,
/// IDENTIFIER). Time 0 sorts synthesized records before every sample.
pub(super) fn id_trailer(st: u64, pid: i32, tid: i32, id: u64) -> Vec<u8> {
    let mut v = Vec::new();
    if st & sample_type::TID != 0 {
        v.extend_from_slice(&pid.to_ne_bytes());
        v.extend_from_slice(&tid.to_ne_bytes());
    }
    if st & sample_type::TIME != 0 {
        v.extend_from_slice(&0u64.to_ne_bytes());
    }
    if st & sample_type::ID != 0 {
        v.extend_from_slice(&id.to_ne_bytes());
    }
    if st & sample_type::STREAM_ID != 0 {
        v.extend_from_slice(&id.to_ne_bytes());
    }
    if st & sample_type::CPU != 0 {
        v.extend_from_slice(&0u64.to_ne_bytes());
    }
    if st & sample_type::IDENTIFIER != 0 {
        v.extend_from_slice(&id.to_ne_bytes());
    }
    v
}

/// A record: header, body, the NUL-terminated string padded to 8 bytes,
/// and the trailer. `None` when it would not fit a record's u16 size.
pub(super) fn build_record(
    type_: u32,
    misc: u16,
    body: &[u8],
    name: &str,
    trailer: &[u8],
) -> Option<Vec<u8>> {
    let mut v = Vec::with_capacity(8 + body.len() + name.len() + 8 + trailer.len());
    v.extend_from_slice(&type_.to_ne_bytes());
    v.extend_from_slice(&misc.to_ne_bytes());
    v.extend_from_slice(&0u16.to_ne_bytes());
    v.extend_from_slice(body);
    v.extend_from_slice(name.as_bytes());
    v.push(0);
    while v.len() % 8 != 0 {
        v.push(0);
    }
    v.extend_from_slice(trailer);
    let size = u16::try_from(v.len()).ok()?;
    v[6..8].copy_from_slice(&size.to_ne_bytes());
    Some(v)
}

/// A PERF_RECORD_COMM for `tid` of process `pid`.
pub(super) fn comm_record(pid: i32, tid: i32, comm: &str, trailer: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    body.extend_from_slice(&pid.to_ne_bytes());
    body.extend_from_slice(&tid.to_ne_bytes());
    build_record(rt::COMM, 0, &body, comm, trailer)
}

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MapLine {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) prot: u32,
    pub(super) shared: bool,
    pub(super) pgoff: u64,
    pub(super) maj: u32,
    pub(super) min: u32,
    pub(super) ino: u64,
    pub(super) name: String,
}

/// Parse one `/proc/PID/maps` line: `start-end perms offset maj:min inode
/// [path]`.
pub(super) fn parse_map_line(line: &str) -> Option<MapLine> {
    let mut it = line.splitn(6, ' ');
    let range = it.next()?;
    let perms = it.next()?.as_bytes();
    let pgoff = u64::from_str_radix(it.next()?, 16).ok()?;
    let dev = it.next()?;
    let ino = it.next()?.parse().ok()?;
    let name = it.next().unwrap_or("").trim_start().to_string();
    let (s, e) = range.split_once('-')?;
    let (maj, min) = dev.split_once(':')?;
    if perms.len() < 4 {
        return None;
    }
    let mut prot = 0;
    for (i, bit) in [libc::PROT_READ, libc::PROT_WRITE, libc::PROT_EXEC]
        .iter()
        .enumerate()
    {
        if perms[i] != b'-' {
            prot |= *bit as u32;
        }
    }
    Some(MapLine {
        start: u64::from_str_radix(s, 16).ok()?,
        end: u64::from_str_radix(e, 16).ok()?,
        prot,
        shared: perms[3] == b's',
        pgoff,
        maj: u32::from_str_radix(maj, 16).ok()?,
        min: u32::from_str_radix(min, 16).ok()?,
        ino,
        name,
    })
}

/// A PERF_RECORD_MMAP2 for a mapping of process `pid`, as perf
/// synthesizes it (anonymous executable memory is `//anon`).
pub(super) fn mmap2_record(pid: i32, m: &MapLine, trailer: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    body.extend_from_slice(&pid.to_ne_bytes());
    body.extend_from_slice(&pid.to_ne_bytes());
    body.extend_from_slice(&m.start.to_ne_bytes());
    body.extend_from_slice(&(m.end - m.start).to_ne_bytes());
    body.extend_from_slice(&m.pgoff.to_ne_bytes());
    body.extend_from_slice(&m.maj.to_ne_bytes());
    body.extend_from_slice(&m.min.to_ne_bytes());
    body.extend_from_slice(&m.ino.to_ne_bytes());
    body.extend_from_slice(&0u64.to_ne_bytes()); // ino_generation
    body.extend_from_slice(&m.prot.to_ne_bytes());
    let flags = if m.shared {
        libc::MAP_SHARED
    } else {
        libc::MAP_PRIVATE
    } as u32;
    body.extend_from_slice(&flags.to_ne_bytes());
    let name = if m.name.is_empty() {
        "//anon"
    } else {
        m.name.as_str()
    };
    // A mapping that is not executable is data (`PERF_RECORD_MISC_MMAP_DATA`).
    let misc = if m.prot & libc::PROT_EXEC as u32 == 0 {
        record_misc::USER | record_misc::MMAP_DATA
    } else {
        record_misc::USER
    };
    build_record(rt::MMAP2, misc, &body, name, trailer)
}

/// The length of the kernel's text (`_etext - _text`) from the `Kernel
/// code` line of `/proc/iomem` (its physical range is `_text` to
/// `_etext - 1`): perf 6.1's kernel map ends at `_etext`, found by reading
/// all of `/proc/kallsyms`, which costs a third of a second here while
/// `iomem` is a few lines. `None` when the ranges are hidden (all zero
/// without root).
pub(super) fn kernel_text_len(iomem: &str) -> Option<u64> {
    let line = iomem
        .lines()
        .find(|l| l.trim_end().ends_with(": Kernel code"))?;
    let (range, _) = line.trim_start().split_once(" : ")?;
    let (a, b) = range.split_once('-')?;
    let (a, b) = (
        u64::from_str_radix(a, 16).ok()?,
        u64::from_str_radix(b, 16).ok()?,
    );
    (b > a).then(|| b - a + 1)
}

/// The kernel's map as perf synthesizes it: a PERF_RECORD_MMAP for pid -1
/// named `[kernel.kallsyms]_text`, from `_text` to `_etext` (as perf 6.1;
/// to the end of the address space, as older perf, when `/proc/iomem`
/// hides the kernel's range), with `pgoff` = the address of `_text`
/// (perf's relocation reference). `None` when `/proc/kallsyms` hides the
/// addresses.
pub(super) fn kernel_mmap_record(trailer: &[u8]) -> Result<Vec<u8>, String> {
    use std::io::BufRead;
    let file = std::fs::File::open("/proc/kallsyms")
        .map_err(|e| format!("cannot read /proc/kallsyms ({e})"))?;
    // `_text` is among the first lines: stop there rather than have the
    // kernel format all of its ~100k symbols (a third of a second, while
    // the events already run and fill the rings).
    let (mut text, mut stext) = (None, None);
    for line in std::io::BufReader::new(file).lines() {
        let line = line.map_err(|e| format!("cannot read /proc/kallsyms ({e})"))?;
        let mut f = line.split_whitespace();
        let (Some(addr), Some(_kind), Some(sym)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let addr = u64::from_str_radix(addr, 16).ok();
        match sym {
            "_text" => {
                text = addr;
                break;
            }
            "_stext" if stext.is_none() => stext = addr,
            _ => {}
        }
    }
    let (sym, addr) = match (text, stext) {
        (Some(a), _) => ("_text", a),
        (None, Some(a)) => ("_stext", a),
        (None, None) => return Err("/proc/kallsyms has neither _text nor _stext".to_string()),
    };
    if addr == 0 {
        return Err("/proc/kallsyms shows every address as 0 (kernel.kptr_restrict; run as root or set it to 0)".to_string());
    }
    let mut body = Vec::new();
    body.extend_from_slice(&(-1i32).to_ne_bytes());
    body.extend_from_slice(&0i32.to_ne_bytes());
    body.extend_from_slice(&addr.to_ne_bytes());
    let len = std::fs::read_to_string("/proc/iomem")
        .ok()
        .and_then(|t| kernel_text_len(&t))
        .filter(|&l| l <= u64::MAX - addr)
        .unwrap_or(u64::MAX - addr);
    body.extend_from_slice(&len.to_ne_bytes());
    body.extend_from_slice(&addr.to_ne_bytes());
    build_record(
        rt::MMAP,
        record_misc::KERNEL,
        &body,
        &format!("[kernel.kallsyms]{sym}"),
        trailer,
    )
    .ok_or_else(|| "kernel map record too large".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tally::{c_string_at, u64_at};
    use pmx_perf::mmap::RecordHeader;

    #[test]
    fn maps_lines_parse() {
        let m = parse_map_line(
            "7f1c2a000000-7f1c2a1b5000 r-xp 00028000 fd:01 1837278                    /usr/lib/x86_64-linux-gnu/libc.so.6",
        )
        .unwrap();
        assert_eq!(m.start, 0x7f1c2a000000);
        assert_eq!(m.end, 0x7f1c2a1b5000);
        assert_eq!(m.prot, (libc::PROT_READ | libc::PROT_EXEC) as u32);
        assert!(!m.shared);
        assert_eq!(m.pgoff, 0x28000);
        assert_eq!((m.maj, m.min, m.ino), (0xfd, 1, 1837278));
        assert_eq!(m.name, "/usr/lib/x86_64-linux-gnu/libc.so.6");
        let anon = parse_map_line("7ffd1000-7ffd3000 rw-s 00000000 00:00 0 ").unwrap();
        assert!(anon.shared);
        assert_eq!(anon.name, "");
        assert!(parse_map_line("garbage").is_none());
    }

    #[test]
    fn kernel_text_from_iomem() {
        let iomem = "00000000-00000fff : Reserved\n\
                     00100000-bffdffff : System RAM\n  \
                     01000000-02277287 : Kernel code\n  \
                     02400000-02e0cfff : Kernel rodata\n";
        // perf 6.1's map of the same kernel: [0xffffffff81000000(0x1277288)].
        assert_eq!(kernel_text_len(iomem), Some(0x1277288));
        let hidden = "00000000-00000000 : System RAM\n  00000000-00000000 : Kernel code\n";
        assert_eq!(kernel_text_len(hidden), None);
        assert_eq!(kernel_text_len("garbage"), None);
    }

    #[test]
    fn trailer_follows_the_kernel_order() {
        let st = sample_type::IP
            | sample_type::TID
            | sample_type::TIME
            | sample_type::CPU
            | sample_type::IDENTIFIER;
        let t = id_trailer(st, 7, 8, 99);
        assert_eq!(t.len(), 8 + 8 + 8 + 8);
        assert_eq!(i32::from_ne_bytes(t[0..4].try_into().unwrap()), 7);
        assert_eq!(i32::from_ne_bytes(t[4..8].try_into().unwrap()), 8);
        assert_eq!(u64::from_ne_bytes(t[8..16].try_into().unwrap()), 0);
        assert_eq!(u64::from_ne_bytes(t[24..32].try_into().unwrap()), 99);
        assert!(id_trailer(sample_type::IP, 1, 1, 1).is_empty());
    }

    #[test]
    fn synthesized_records_are_aligned_and_sized() {
        let r = comm_record(5, 6, "worker", &[]).unwrap();
        assert_eq!(r.len() % 8, 0);
        let h = RecordHeader::parse(&r).unwrap();
        assert_eq!((h.type_, h.misc, h.size as usize), (rt::COMM, 0, r.len()));
        assert_eq!(c_string_at(&r, 16).unwrap(), "worker");
        let m = MapLine {
            start: 0x1000,
            end: 0x3000,
            prot: 5,
            shared: false,
            pgoff: 0,
            maj: 1,
            min: 2,
            ino: 3,
            name: String::new(),
        };
        let r = mmap2_record(5, &m, &[0; 16]).unwrap();
        assert_eq!(r.len() % 8, 0);
        assert_eq!(c_string_at(&r, 72).unwrap(), "//anon");
        assert_eq!(u64_at(&r, 24), Some(0x2000), "len");
        assert!(build_record(1, 0, &[], &"x".repeat(70_000), &[]).is_none());
    }
}
