//! Code without a file behind it, in synthetic perf.data files (written
//! with pmx-perfdata's writer): JIT code in an anonymous mapping resolved
//! from a `perf-PID.map` written here, and `[vdso]` addresses resolved
//! from the running kernel's vDSO (only for a file recorded on this
//! kernel, and only when a recorded vDSO build-id matches).

use pmx_perfdata::format::{misc, record_type, sample_type};
use pmx_perfdata::{BuildIdEntry, Features, Reader};
use pmx_profile::{build, Options, Profile, SortKey};
use pmx_symbols::elf::ElfFile;
use pmx_testkit::perfdata::{self, pid_tid, record as rec, SAMPLE_ID_ALL};
use std::io::Cursor;

const ST: u64 = sample_type::IP | sample_type::TID | sample_type::TIME | sample_type::PERIOD;

fn sample(pid: u32, ip: u64, time: u64) -> Vec<u8> {
    let mut b = ip.to_le_bytes().to_vec();
    b.extend_from_slice(&pid_tid(pid));
    b.extend_from_slice(&time.to_le_bytes());
    b.extend_from_slice(&1000u64.to_le_bytes());
    rec(record_type::SAMPLE, misc::USER, &b)
}

/// An MMAP2 of `path` at `[start, start + len)` with `prot`, with the
/// sample_id trailer (pid, tid, time).
fn mmap2(pid: u32, start: u64, len: u64, prot: u32, path: &str) -> Vec<u8> {
    let mut b = perfdata::mmap2(pid, start, len, prot, path);
    b.extend_from_slice(&pid_tid(pid));
    b.extend_from_slice(&1u64.to_le_bytes());
    rec(record_type::MMAP2, misc::USER, &b)
}

/// A file with `maps` then one sample per address (pid, ip).
fn file(maps: &[Vec<u8>], samples: &[(u32, u64)], features: &Features) -> Vec<u8> {
    let mut w = perfdata::memory_writer(perfdata::attr(128, 1000, ST, SAMPLE_ID_ALL));
    for m in maps {
        w.write_record(m).unwrap();
    }
    for (i, &(pid, ip)) in samples.iter().enumerate() {
        w.write_record(&sample(pid, ip, 10 + i as u64)).unwrap();
    }
    w.finish(features).unwrap().into_inner()
}

fn profile(bytes: Vec<u8>) -> Profile {
    let mut r = Reader::new(Cursor::new(bytes)).unwrap();
    let options = Options {
        sort: vec![SortKey::Dso, SortKey::Symbol],
        ..Options::default()
    };
    build(&mut r, &options, &mut |_, _| {}).unwrap()
}

/// (dso, symbol) → samples.
fn rows(p: &Profile) -> Vec<(String, String, u64)> {
    let mut v: Vec<(String, String, u64)> = p.events[0]
        .rows
        .iter()
        .map(|r| {
            (
                r.dso.clone().unwrap_or_default(),
                r.symbol.clone().unwrap_or_default(),
                r.samples,
            )
        })
        .collect();
    v.sort();
    v
}

/// A pid no process has (above the kernel's pid_max limit of 2^22).
const JIT_PID: u32 = 4_194_304 + 4242;

#[test]
fn jit_code_from_perf_pid_map() {
    let map_path = std::path::PathBuf::from(format!("/tmp/perf-{JIT_PID}.map"));
    struct Remove(std::path::PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _cleanup = Remove(map_path.clone());
    // Both spellings of the hex numbers; a name with spaces; a later line
    // reusing part of an earlier function's code wins there; one bad line.
    std::fs::write(
        &map_path,
        "7f0000001000 100 LazyCompile:*hot_loop /app/main.js:12\n\
         0x7f0000001200 0x80 Interpreted:cold\n\
         7f0000002000 1000 Java_old_method\n\
         7f0000002800 40 Java_new_method\n\
         not a line\n",
    )
    .unwrap();
    let base = 0x7f00_0000_0000u64;
    let other = JIT_PID + 1; // no map file: its anonymous code stays unresolved
    let bytes = file(
        &[
            mmap2(JIT_PID, base, 0x10000, 5, "//anon"),
            mmap2(other, base, 0x10000, 5, "//anon"),
        ],
        &[
            (JIT_PID, base + 0x1000),
            (JIT_PID, base + 0x10ff),
            (JIT_PID, base + 0x1040),
            (JIT_PID, base + 0x1230),
            (JIT_PID, base + 0x2010),
            (JIT_PID, base + 0x2810),
            (JIT_PID, base + 0x1180), // between functions
            (JIT_PID, 0x1234),        // in no mapping, not in the map file either
            (other, base + 0x1000),
        ],
        &Features::default(),
    );
    let p = profile(bytes);
    // perf's name for a perf map's functions.
    let dso = format!("[JIT] tid {JIT_PID}");
    let got = rows(&p);
    let want_jit = vec![
        (dso.clone(), "Interpreted:cold".to_string(), 1),
        (dso.clone(), "Java_new_method".to_string(), 1),
        (dso.clone(), "Java_old_method".to_string(), 1),
        (
            dso.clone(),
            "LazyCompile:*hot_loop /app/main.js:12".to_string(),
            3,
        ),
    ];
    let jit_rows: Vec<_> = got.iter().filter(|r| r.0 == dso).cloned().collect();
    assert_eq!(jit_rows, want_jit, "{got:?}");
    // The address between functions and the other process stay unresolved.
    assert_eq!(
        got.iter().filter(|r| r.0 != dso).map(|r| r.2).sum::<u64>(),
        3,
        "{got:?}"
    );
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("1 line(s)") && w.contains(&format!("perf-{JIT_PID}.map"))),
        "{:?}",
        p.warnings
    );
}

/// The running vDSO's image and the address of its `clock_gettime`.
fn vdso_clock_gettime() -> Option<(ElfFile, u64, String)> {
    let image = match pmx_symbols::kernel::running_vdso() {
        Ok(i) => i,
        Err(e) => {
            pmx_testkit::skip(format_args!("no vDSO here: {e}"));
            return None;
        }
    };
    let elf = ElfFile::from_bytes(image, "[vdso]").unwrap();
    let sym = elf
        .symbols()
        .iter()
        .find(|s| s.name.ends_with("clock_gettime"))
        .expect("the vDSO has clock_gettime")
        .clone();
    let off = elf.vaddr_to_offset(sym.start).unwrap();
    Some((elf, off, sym.name))
}

#[test]
fn vdso_addresses_from_the_running_kernel() {
    let Some((elf, off, name)) = vdso_clock_gettime() else {
        return;
    };
    // perf shows the global name, not its weak alias.
    assert_eq!(name, "__vdso_clock_gettime");
    let base = 0x7fff_f7fc_1000u64;
    let maps = [mmap2(9, base, 0x2000, 5, "[vdso]")];
    let samples = [(9, base + off), (9, base + off + 1)];
    let resolved = |features: &Features| {
        let p = profile(file(&maps, &samples, features));
        rows(&p)
            .into_iter()
            .find(|r| r.0 == "[vdso]")
            .map(|r| (r.1, r.2))
    };
    // Recorded here (no host information says otherwise).
    assert_eq!(
        resolved(&Features::default()),
        Some((name.clone(), 2)),
        "recorded here"
    );
    // Recorded on another kernel: left unresolved.
    let elsewhere = Features {
        hostname: Some("some-other-host".into()),
        osrelease: Some("1.2.3-other".into()),
        ..Features::default()
    };
    let (sym, n) = resolved(&elsewhere).unwrap();
    assert!(sym.starts_with("0x") && n == 1, "{sym}");
    // ... unless the recorded vDSO build-id is this one.
    if let Some(id) = elf.build_id() {
        let with_id = |id: Vec<u8>| Features {
            build_ids: vec![BuildIdEntry {
                pid: -1,
                build_id: id,
                filename: "[vdso]".into(),
                misc: misc::USER,
            }],
            ..elsewhere.clone()
        };
        assert_eq!(resolved(&with_id(id.to_vec())), Some((name.clone(), 2)));
        let (sym, _) = resolved(&with_id(vec![0xab; 20])).unwrap();
        assert!(sym.starts_with("0x"), "{sym}");
    }
}
