//! `pmx annotate` on synthetic perf.data files (pmx-perfdata's writer)
//! whose samples fall in a function of this test binary: each sample is
//! credited to the instruction that holds its address, the function is
//! found by name (close names and the hottest functions when not, the
//! binaries when several have it), and JIT code is refused with a reason.

use pmx_perfdata::format::{misc, record_type, sample_type};
use pmx_perfdata::Features;
use pmx_profile::annotate::{annotate, render, AnnotateOptions};
use pmx_profile::AnnotateError;
use pmx_symbols::demangle::demangle;
use pmx_symbols::elf::ElfFile;
use pmx_testkit::perfdata::{self, pid_tid, record as rec, SAMPLE_ID_ALL};
use std::path::{Path, PathBuf};

const ST: u64 = sample_type::IP | sample_type::TID | sample_type::TIME | sample_type::PERIOD;
const BASE: u64 = 0x5555_0000_0000;

/// The function annotated: a loop the compiler keeps.
#[inline(never)]
pub fn annotate_target(n: u64) -> u64 {
    let mut s = 0u64;
    for i in 0..n {
        s = s.wrapping_mul(31).wrapping_add(std::hint::black_box(i));
    }
    s
}

fn sample(pid: u32, ip: u64, time: u64) -> Vec<u8> {
    let mut b = ip.to_le_bytes().to_vec();
    b.extend_from_slice(&pid_tid(pid));
    b.extend_from_slice(&time.to_le_bytes());
    b.extend_from_slice(&1000u64.to_le_bytes());
    rec(record_type::SAMPLE, misc::USER, &b)
}

fn mmap2(pid: u32, path: &Path) -> Vec<u8> {
    let mut b = perfdata::mmap2(pid, BASE, 1 << 30, 5, path.to_str().unwrap());
    b.extend_from_slice(&pid_tid(pid));
    b.extend_from_slice(&1u64.to_le_bytes());
    rec(record_type::MMAP2, misc::USER, &b)
}

/// A perf.data in `dir` with one map per (pid, binary) and the samples (pid, ip).
fn write(dir: &Path, maps: &[(u32, &Path)], samples: &[(u32, u64)]) -> PathBuf {
    let mut w = perfdata::memory_writer(perfdata::attr(128, 1000, ST, SAMPLE_ID_ALL));
    for (pid, path) in maps {
        w.write_record(&mmap2(*pid, path)).unwrap();
    }
    for (i, &(pid, ip)) in samples.iter().enumerate() {
        w.write_record(&sample(pid, ip, 10 + i as u64)).unwrap();
    }
    // Recorded on another host: this kernel's symbols are not loaded
    // (a second in a debug build), the user code is resolved all the same.
    let features = Features {
        hostname: Some("another-host".into()),
        ..Features::default()
    };
    let bytes = w.finish(&features).unwrap().into_inner();
    let file = dir.join("perf.data");
    std::fs::write(&file, bytes).unwrap();
    file
}

/// This binary, `annotate_target`'s demangled name and its process
/// address range `[start, end)` when the whole file is mapped at BASE.
fn target() -> (PathBuf, String, u64, u64) {
    assert!(annotate_target(3) > 0);
    let exe = std::env::current_exe().unwrap();
    let elf = ElfFile::open(&exe).unwrap();
    let s = elf
        .symbols()
        .iter()
        .find(|s| demangle(&s.name).ends_with("annotate_target"))
        .expect("annotate_target in the symbol table")
        .clone();
    let off = elf.vaddr_to_offset(s.start).unwrap();
    (
        exe,
        demangle(&s.name),
        BASE + off,
        BASE + off + (s.end - s.start),
    )
}

fn options(file: &Path, symbol: &str) -> AnnotateOptions {
    AnnotateOptions {
        input: file.to_path_buf(),
        symbol: symbol.to_string(),
        ..AnnotateOptions::default()
    }
}

#[test]
fn samples_go_to_the_instruction_that_holds_them() {
    if !cfg!(target_arch = "x86_64") {
        return pmx_testkit::skip("annotate disassembles x86-64 code only");
    }
    let dir = tempfile::tempdir().unwrap();
    let (exe, name, start, end) = target();
    // 3 samples at the first byte, 2 at the last byte (inside the last
    // instruction, whatever its length), 1 in another function.
    let mut samples = vec![(7, start); 3];
    samples.extend([(7, end - 1), (7, end - 1), (7, BASE + 0x40)]);
    let file = write(dir.path(), &[(7, &exe)], &samples);
    let a = annotate(&options(&file, &name), &mut |_, _| {}).unwrap();
    assert_eq!(a.symbol, name);
    assert_eq!(a.events.len(), 1);
    assert_eq!(
        (a.events[0].name.as_str(), a.events[0].symbol.samples),
        ("cpu-clock", 5)
    );
    assert_eq!(a.events[0].symbol.period, 5000);
    assert_eq!(a.events[0].file.samples, 6);
    let first = &a.instructions[0];
    let last = a.instructions.last().unwrap();
    assert_eq!((first.offset, first.weights[0].samples), (0, 3));
    assert_eq!(last.weights[0].samples, 2);
    assert_eq!(
        last.addr + last.bytes.len() as u64,
        a.end,
        "the last instruction ends the function"
    );
    let total: u64 = a.instructions.iter().map(|i| i.weights[0].samples).sum();
    assert_eq!(total, 5);
    assert!((a.percent(0, 0) - 60.0).abs() < 1e-9);
    // Offsets and bytes tile the function.
    for w in a.instructions.windows(2) {
        assert_eq!(w[0].addr + w[0].bytes.len() as u64, w[1].addr);
    }
    let mut text = Vec::new();
    render::text(&a, false, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert_eq!(
        text.lines().filter(|l| l.contains("skid")).count(),
        1,
        "{text}"
    );
    let marked: Vec<&str> = text.lines().filter(|l| l.starts_with('*')).collect();
    assert_eq!(marked.len(), 2, "{text}");
    assert!(marked[0].contains(" 60.00       3 :"), "{text}");
    // On a terminal: colours instead of marks (red: hot).
    let mut coloured = Vec::new();
    render::text(&a, true, &mut coloured).unwrap();
    let coloured = String::from_utf8(coloured).unwrap();
    let red: Vec<&str> = coloured
        .lines()
        .filter(|l| l.starts_with("\x1b[31m"))
        .collect();
    assert_eq!(red.len(), 2, "{coloured}");
    assert!(red[0].ends_with("\x1b[0m") && !coloured.lines().any(|l| l.starts_with('*')));
}

#[test]
fn names_missing_or_in_several_binaries() {
    let dir = tempfile::tempdir().unwrap();
    let (exe, name, start, _) = target();
    let link = dir.path().join("copy-of-test");
    std::os::unix::fs::symlink(&exe, &link).unwrap();
    let file = write(
        dir.path(),
        &[(7, &exe), (8, &link)],
        &[(7, start), (8, start), (8, start)],
    );
    let err = annotate(&options(&file, &name), &mut |_, _| {}).unwrap_err();
    match &err {
        AnnotateError::Ambiguous { dsos, .. } => {
            assert_eq!(
                dsos,
                &[link.display().to_string(), exe.display().to_string()]
            )
        }
        e => panic!("{e}"),
    }
    assert!(err.to_string().contains("--dso"), "{err}");
    let mut o = options(&file, &name);
    o.dso = Some("copy-of-test".into());
    let a = annotate(&o, &mut |_, _| {}).unwrap();
    assert_eq!(a.events[0].symbol.samples, 2);
    let e = annotate(&options(&file, "annotate_targte"), &mut |_, _| {}).unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with("annotate_targte: no samples in "), "{msg}");
    assert!(msg.contains(&format!("did you mean {name}")), "{msg}");
    assert!(
        msg.contains(&format!("{name} in copy-of-test (2)")),
        "{msg}"
    );
    // The last path component alone names it too.
    o.symbol = "annotate_target".into();
    assert_eq!(annotate(&o, &mut |_, _| {}).unwrap().symbol, name);
}

#[test]
fn jit_code_and_missing_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), &[], &[(7, 0x1000)]);
    let e = annotate(&options(&file, "0x0000000000001000"), &mut |_, _| {}).unwrap_err();
    assert!(
        matches!(e, AnnotateError::NoSymbol { ref top, .. } if top.is_empty()),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("no samples in user code with a readable binary"),
        "{e}"
    );
    let e = annotate(&options(&dir.path().join("none.data"), "f"), &mut |_, _| {}).unwrap_err();
    assert!(e.to_string().contains("none.data: no such file"), "{e}");
}

/// Every instruction of a whole library's `.text` (libm: ~100,000, with
/// SSE, AVX and x87 code) reads as `objdump -d` writes it, in AT&T
/// syntax: same addresses, same text (objdump's `<symbol>` suffixes left
/// out: the library's symbols are not given to the disassembler here).
#[test]
fn objdump_agrees_on_a_whole_library() {
    use object::{Object, ObjectSection};
    use pmx_profile::annotate::{disasm, Syntax};
    let lib = Path::new("/usr/lib/x86_64-linux-gnu/libm.so.6");
    let Ok(bytes) = std::fs::read(lib) else {
        return pmx_testkit::skip(format_args!("{} not here", lib.display()));
    };
    let o = std::process::Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", "-j", ".text"])
        .arg(lib)
        .output();
    let Ok(o) = o.map_err(|e| pmx_testkit::skip(format_args!("no objdump ({e})"))) else {
        return;
    };
    let strip = |t: &str| match t.find(" <") {
        Some(i) if t.ends_with('>') => t[..i].trim_end().to_string(),
        _ => t.trim_end().to_string(),
    };
    let want: Vec<(u64, String)> = pmx_testkit::text(&o.stdout)
        .lines()
        .filter_map(|l| {
            let (a, t) = l.trim_start().split_once(":\t")?;
            Some((u64::from_str_radix(a, 16).ok()?, strip(t)))
        })
        .collect();
    let obj = object::File::parse(&*bytes).unwrap();
    let text = obj.section_by_name(".text").unwrap();
    let got = disasm::disassemble(
        text.data().unwrap(),
        text.address(),
        Syntax::Att,
        &mut |_| None,
    );
    assert!(
        want.len() > 10_000,
        "objdump listed {} instructions",
        want.len()
    );
    assert_eq!(got.len(), want.len());
    for (g, (addr, t)) in got.iter().zip(&want) {
        assert_eq!((g.addr, g.text.as_str()), (*addr, t.as_str()));
    }
}
