//! The writer's files are read by the installed `perf` (script and report)
//! and by this crate's reader. A tiny non-PIE C program gives a real binary
//! with a known symbol to map and sample in.

use pmx_perfdata::format::{misc, record_type};
use pmx_perfdata::{BuildIdEntry, Features, FileAttr, Writer};
use pmx_testkit::perfdata::{self, sample_id};
use pmx_testkit::{cc, perf};
use std::path::{Path, PathBuf};
use std::process::Command;

const ST: u64 = perfdata::CALLCHAIN_SAMPLES;

/// A 136-byte cpu-clock attr (as pmx-perf gives the kernel), period 250000,
/// sample_id_all, mmap2, comm, task.
fn cpu_clock_attr() -> Vec<u8> {
    let flags: u64 =
        (1 << 0) | (1 << 1) | (1 << 8) | (1 << 9) | (1 << 13) | (1 << 18) | (1 << 23) | (1 << 24);
    perfdata::attr(136, 250_000, ST, flags)
}

/// Compile a non-PIE program with a function `hot_spot`; returns the
/// binary and the address of `hot_spot`.
fn build_program(dir: &Path) -> Option<(PathBuf, u64)> {
    let bin = cc::compile(
        dir,
        "hot",
        "int hot_spot(int n) { volatile int s = 0; for (int i = 0; i < n; i++) s += i; return s; }\n\
         int main(void) { return hot_spot(1000) & 1; }\n",
        &["-O1", "-g", "-no-pie", "-fno-omit-frame-pointer"],
    )
    .ok()?;
    let nm = Command::new("nm").arg(&bin).output().ok()?;
    let text = String::from_utf8_lossy(&nm.stdout);
    let addr = text
        .lines()
        .find(|l| l.ends_with(" hot_spot"))
        .and_then(|l| u64::from_str_radix(l.split_whitespace().next()?, 16).ok())?;
    Some((bin, addr))
}

/// Build a file: COMM, MMAP2 of the binary, `n` samples in hot_spot
/// (with a call chain user marker, hot_spot, main).
fn build_file(path: &Path, bin: &Path, hot: u64, n: u64) {
    let pid = 4242u32;
    let mut recs = Vec::new();
    let mut body = perfdata::comm(pid, "hot");
    body.extend_from_slice(&sample_id(pid, 1000, 0));
    recs.push(perfdata::record(record_type::COMM, misc::COMM_EXEC, &body));
    let size = std::fs::metadata(bin).unwrap().len();
    let len = (size + 0xfff) & !0xfff;
    // PROT_READ|PROT_EXEC
    let mut body = perfdata::mmap2(pid, 0x400000, len, 5, bin.to_str().unwrap());
    body.extend_from_slice(&sample_id(pid, 1001, 0));
    recs.push(perfdata::record(record_type::MMAP2, misc::USER, &body));
    for i in 0..n {
        let mut s = (hot + 4).to_le_bytes().to_vec();
        s.extend_from_slice(&sample_id(pid, 2000 + i * 250_000, (i % 2) as u32));
        s.extend_from_slice(&250_000u64.to_le_bytes());
        s.extend_from_slice(&2u64.to_le_bytes());
        s.extend_from_slice(&pmx_perfdata::format::callchain::CONTEXT_USER.to_le_bytes());
        s.extend_from_slice(&(hot + 4).to_le_bytes());
        recs.push(perfdata::record(record_type::SAMPLE, misc::USER, &s));
    }
    let file = std::fs::File::create(path).unwrap();
    let attr = FileAttr {
        attr: cpu_clock_attr(),
        ids: vec![17, 18],
        name: "cpu-clock".into(),
    };
    let mut w = Writer::create(std::io::BufWriter::new(file), vec![attr]).unwrap();
    for r in &recs {
        w.write_record(r).unwrap();
    }
    assert_eq!(
        w.data_size(),
        recs.iter().map(|r| r.len() as u64).sum::<u64>()
    );
    let features = Features {
        hostname: Some("testhost".into()),
        osrelease: Some("6.1.0-test".into()),
        version: Some("pmx-test".into()),
        arch: Some("x86_64".into()),
        nrcpus: Some((2, 4)),
        cpudesc: Some("Test CPU @ 1GHz".into()),
        cpuid: Some("GenuineIntel,6,85,4".into()),
        total_mem_kib: Some(1 << 20),
        cmdline: Some(vec!["pmx".into(), "record".into(), "./hot".into()]),
        build_ids: vec![BuildIdEntry {
            pid: -1,
            misc: misc::USER,
            build_id: vec![0x11; 20],
            filename: "/nonexistent/binary".into(),
        }],
        sample_time: Some((2000, 2000 + (n - 1) * 250_000)),
        group_desc: Vec::new(),
        tracing_data: None,
    };
    w.finish(&features).unwrap();
}

#[test]
fn perf_script_and_report_read_the_written_file() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some((bin, hot)) = build_program(dir.path()) else {
        pmx_testkit::skip("no C compiler / nm");
        return;
    };
    let file = dir.path().join("perf.data");
    build_file(&file, &bin, hot, 25);

    let out = perf::on_file(&["script", "-G", "-F", "comm,pid,ip,sym,event"], &file);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "perf script failed: {stderr}");
    assert!(
        !stderr.to_lowercase().contains("warning"),
        "perf warned: {stderr}"
    );
    let lines: Vec<&str> = stdout.lines().filter(|l| l.contains("cpu-clock")).collect();
    assert_eq!(lines.len(), 25, "{stdout}");
    assert!(
        lines
            .iter()
            .all(|l| l.contains("hot") && l.contains("hot_spot")),
        "{stdout}"
    );

    let out = perf::on_file(&["report", "--stdio", "--header-only"], &file);
    let header = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for want in [
        "hostname : testhost",
        "os release : 6.1.0-test",
        "perf version : pmx-test",
        "arch : x86_64",
        "nrcpus online : 2",
        "nrcpus avail : 4",
        "cpudesc : Test CPU @ 1GHz",
        "cpuid : GenuineIntel,6,85,4",
        "total memory : 1048576 kB",
        "cmdline : pmx record ./hot",
        "event : name = cpu-clock",
    ] {
        assert!(header.contains(want), "missing {want:?} in:\n{header}");
    }
    assert!(header.contains("id = { 17, 18 }"), "{header}");
}

#[test]
fn own_reader_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let bin = std::env::current_exe().unwrap();
    let file = dir.path().join("perf.data");
    build_file(&file, &bin, 0x401000, 10);
    let mut r = pmx_perfdata::Reader::open(&file).unwrap();
    assert_eq!(r.events().len(), 1);
    assert_eq!(r.events()[0].name, "cpu-clock");
    assert_eq!(r.events()[0].ids, vec![17, 18]);
    assert_eq!(
        r.events()[0].attr.size,
        128,
        "written as 128 bytes for perf 6.1"
    );
    let f = r.features();
    assert_eq!(f.hostname.as_deref(), Some("testhost"));
    assert_eq!(f.nrcpus, Some((2, 4)));
    assert_eq!(f.cmdline.as_ref().unwrap().len(), 3);
    assert_eq!(f.build_ids[0].filename, "/nonexistent/binary");
    assert_eq!(f.build_ids[0].build_id, vec![0x11; 20]);
    assert_eq!(f.sample_time, Some((2000, 2000 + 9 * 250_000)));
    let (mut samples, mut comms, mut mmaps) = (0, 0, 0);
    while let Some(rec) = r.next_record().unwrap() {
        match rec {
            pmx_perfdata::Record::Sample(s) => {
                assert_eq!(s.ip, 0x401004);
                assert_eq!(s.pid, 4242);
                assert_eq!(s.period, 250_000);
                assert_eq!(s.callchain().collect::<Vec<_>>().len(), 2);
                samples += 1;
            }
            pmx_perfdata::Record::Comm(c) => {
                assert_eq!(c.comm, b"hot");
                assert_eq!(c.id.time, Some(1000));
                comms += 1;
            }
            pmx_perfdata::Record::Mmap(m) => {
                assert_eq!(m.start, 0x400000);
                assert_eq!(m.id.time, Some(1001));
                mmaps += 1;
            }
            _ => {}
        }
    }
    assert_eq!((samples, comms, mmaps), (10, 1, 1));
}

/// A file `perf record` wrote: the MMAP2 record of the program carries
/// the device and inode of its file, as `stat` shows them.
#[test]
fn perfs_mmap2_records_carry_the_files_inode() {
    use std::os::unix::fs::MetadataExt;
    if !perf::require("") || !cc::require() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some((bin, _)) = build_program(dir.path()) else {
        pmx_testkit::skip("the C program did not build");
        return;
    };
    let data = dir.path().join("perf.data");
    if let Err(e) = perf::record_cpu_clock(&[], &data, &bin) {
        pmx_testkit::skip(e);
        return;
    }
    let meta = std::fs::metadata(&bin).unwrap();
    let mut r = pmx_perfdata::Reader::open(&data).unwrap();
    let mut seen = 0;
    while let Some(rec) = r.next_record().unwrap() {
        if let pmx_perfdata::Record::Mmap(m) = rec {
            if m.filename == bin.to_str().unwrap().as_bytes() {
                let inode = m.inode.expect("an MMAP2 record with the inode");
                assert_eq!(inode.ino, meta.ino());
                // glibc's gnu_dev_major/minor of st_dev.
                let dev = meta.dev();
                let maj = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
                let min = (dev & 0xff) | ((dev >> 12) & !0xff);
                assert_eq!((u64::from(inode.maj), u64::from(inode.min)), (maj, min));
                seen += 1;
            }
        }
    }
    assert!(seen > 0, "no MMAP2 record of {}", bin.display());
}
