//! `--stitch-lbr` with pmx as `perf` beside Debian's perf 6.1. An LBR
//! holds at most its depth of calls: a C program whose calls go six
//! deep (`main` → `f1` → … → `f6`) is compiled, and pmx-perfdata's
//! writer writes what `perf record --call-graph lbr` would on a CPU whose
//! LBR holds four (CPU_PMU_CAPS `branches=4`, each stack with `hw_idx`,
//! the slot of its newest entry): a sample in `f4` (the four calls to
//! it), then two in `f6` (the ring has lost `main`'s and `f1`'s calls),
//! then one in `g` (called from `main`, nothing in common), on two
//! threads. perf stitches the calls lost in `f6` from the thread's
//! previous sample; `script` and `report -g` must print what perf prints
//! with `--stitch-lbr`, and the stitched callers must be there only with
//! it.

use super::lbr_stacks::{body, both, code, kernel_functions, kernel_text, same_lines, Code, Setup};
use crate::common::PMX;
use pmx_perfdata::branch::{self, BranchEntry, BranchFlags};
use pmx_perfdata::format::sample_type as st;
use pmx_perfdata::format::{branch_sample_type as bst, callchain, misc, record_type};
use pmx_perfdata::write::{cpu_pmu_caps, BuildIdEntry, Features};
use pmx_perfdata::FileAttr;
use pmx_testkit::perfdata::{comm, mmap2, record as rec, sample_id, SAMPLE_ID_ALL};
use std::path::Path;

const PROGRAM: &str = r#"
__attribute__((noinline)) int f6(int x) { return x * 3 + 1; }
__attribute__((noinline)) int f5(int x) { return f6(x) + 1; }
__attribute__((noinline)) int f4(int x) { return f5(x) * 2; }
__attribute__((noinline)) int f3(int x) { return f4(x) - 1; }
__attribute__((noinline)) int f2(int x) { return f3(x) + 2; }
__attribute__((noinline)) int f1(int x) { return f2(x) * 3; }
__attribute__((noinline)) int g(int x) { return x - 1; }
int main(int argc, char **argv) { (void)argv; return f1(argc) + g(argc); }
"#;

const BASE: u64 = 0x5555_5555_4000;
const PID: u32 = 6161;

/// One sample: its thread, function (the ip a byte or two in), and LBR
/// (calls newest first, `hw_idx`).
struct Sample {
    tid: u32,
    func: &'static str,
    calls: &'static [&'static str],
    hw_idx: u64,
}

/// The samples of the module's story, each of two threads in turn. The
/// LBR's slots (depth 4) fill in call order: `main>f1` 0, `f1>f2` 1,
/// `f2>f3` 2, `f3>f4` 3, then `f4>f5` over slot 0, `f5>f6` over 1.
fn samples() -> Vec<Sample> {
    let f6: &[&str] = &["f5>f6", "f4>f5", "f3>f4", "f2>f3"];
    let story: [(&str, &'static [&'static str], u64); 4] = [
        ("f4", &["f3>f4", "f2>f3", "f1>f2", "main>f1"], 3),
        ("f6", f6, 1),
        ("f6", f6, 1),
        ("g", &["main>g"], 0),
    ];
    let each = story.into_iter().flat_map(|(func, calls, hw_idx)| {
        [PID, PID + 1].map(|tid| Sample {
            tid,
            func,
            calls,
            hw_idx,
        })
    });
    each.collect()
}

/// The file `perf record --call-graph lbr` writes on a CPU whose LBR
/// holds four calls; with `kernel` (two kernel functions of this
/// machine's kallsyms), every third sample (from the second) is taken in the kernel, its
/// chain a kernel part (`ksys_read`, `do_syscall_64`) before the user
/// context.
fn perf_data(prog: &Path, c: &Code, samples: &[Sample], kernel: Option<(u64, u64)>, out: &Path) {
    let text = prog.canonicalize().unwrap();
    let sample_type = st::IP | st::TID | st::TIME | st::CPU | st::PERIOD;
    let sample_type = sample_type | st::CALLCHAIN | st::BRANCH_STACK;
    let flags = SAMPLE_ID_ALL | (1 << 8) | (1 << 9); // mmap, comm
    let mut a = pmx_testkit::perfdata::attr(128, 4000, sample_type, flags);
    a[0..4].copy_from_slice(&0u32.to_le_bytes()); // PERF_TYPE_HARDWARE, cycles
    let filter = bst::USER | bst::CALL_STACK | bst::NO_FLAGS | bst::NO_CYCLES | bst::HW_INDEX;
    a[72..80].copy_from_slice(&filter.to_le_bytes());
    let attrs = vec![FileAttr {
        attr: a,
        ids: vec![],
        name: "cycles".into(),
    }];
    let file = std::fs::File::create(out).unwrap();
    let mut w = pmx_perfdata::Writer::create(file, attrs).unwrap();
    let side = |mut body: Vec<u8>, tid: u32, time| {
        body.extend_from_slice(&sample_id(tid, time, 0));
        body
    };
    for tid in [PID, PID + 1] {
        let mut c = comm(PID, "prog");
        c[4..8].copy_from_slice(&tid.to_le_bytes());
        w.write_record(&rec(record_type::COMM, 0, &side(c, tid, 1)))
            .unwrap();
    }
    // The kernel's map, as perf record synthesizes it.
    if let (Some(_), Some((start, end))) = (kernel, kernel_text()) {
        let mut k = [u32::MAX.to_le_bytes(), 0u32.to_le_bytes()].concat();
        for v in [start, end - start, start] {
            k.extend_from_slice(&v.to_le_bytes());
        }
        k.extend_from_slice(&pmx_testkit::perfdata::padded(b"[kernel.kallsyms]_text"));
        w.write_record(&rec(record_type::MMAP, misc::KERNEL, &side(k, 0, 0)))
            .unwrap();
    }
    let mut map = mmap2(PID, BASE + 0x1000, 0x1000, 5, text.to_str().unwrap());
    map[24..32].copy_from_slice(&0x1000u64.to_le_bytes()); // pgoff
    w.write_record(&rec(record_type::MMAP2, misc::USER, &side(map, PID, 2)))
        .unwrap();
    for (n, s) in samples.iter().enumerate() {
        let uip = BASE + c.functions[s.func] + 1 + u64::from(s.tid - PID);
        // The kernel's chain: its kernel part, the user context and the
        // user ip.
        let (ip, mode, chain) = match kernel {
            Some((kread, ksys)) if n % 3 == 1 => {
                let kip = kread + 4 + n as u64;
                let k = callchain::CONTEXT_KERNEL;
                (
                    kip,
                    misc::KERNEL,
                    vec![k, kip, ksys + 0x40, callchain::CONTEXT_USER, uip],
                )
            }
            _ => (uip, misc::USER, vec![callchain::CONTEXT_USER, uip]),
        };
        let mut body = Vec::new();
        let ids = u64::from(PID) | (u64::from(s.tid) << 32);
        for v in [ip, ids, 1000 + n as u64, 0, 4000, chain.len() as u64] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        for v in chain {
            body.extend_from_slice(&v.to_le_bytes());
        }
        let entries: Vec<BranchEntry> = (s.calls.iter())
            .map(|call| {
                let callee = call.split('>').nth(1).unwrap();
                BranchEntry {
                    from: BASE + c.calls[*call],
                    to: BASE + c.functions[callee],
                    flags: BranchFlags(0),
                }
            })
            .collect();
        branch::encode(&mut body, filter, Some(s.hw_idx), &entries, &[]);
        w.write_record(&rec(record_type::SAMPLE, mode, &body))
            .unwrap();
    }
    let id = pmx_symbols::elf::ElfFile::open(&text).unwrap();
    let features = Features {
        build_ids: vec![BuildIdEntry {
            pid: -1,
            misc: misc::USER,
            build_id: id.build_id().unwrap().to_vec(),
            filename: text.to_str().unwrap().to_string(),
        }],
        cmdline: Some(
            ["perf", "record", "--call-graph", "lbr"]
                .map(String::from)
                .to_vec(),
        ),
        ..Default::default()
    };
    let caps = cpu_pmu_caps(&[("branches", "4"), ("pmu_name", "skylake")]);
    w.finish_with(&features, &[caps]).unwrap();
}

fn setup(what: &str) -> Option<Setup> {
    setup_with(what, None)
}

/// [`setup`], with kernel parts in every third sample's chain.
fn setup_with(what: &str, kernel: Option<(u64, u64)>) -> Option<Setup> {
    if !pmx_testkit::cc::require() || !pmx_testkit::perf::require(what) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let flags = ["-O1", "-fno-optimize-sibling-calls", "-Wl,--build-id"];
    let prog = pmx_testkit::cc::compile(dir.path(), "prog", PROGRAM, &flags).unwrap();
    let data = dir.path().join("lbr.data");
    perf_data(&prog, &code(&prog), &samples(), kernel, &data);
    let as_perf = dir.path().join("perf");
    std::os::unix::fs::symlink(PMX, &as_perf).unwrap();
    Some(Setup { dir, data, as_perf })
}

/// perf script's call chains, one per sample, as function names.
fn chains(script: &str) -> Vec<Vec<String>> {
    (script.split("\n\n").filter(|b| !b.trim().is_empty()))
        .map(|b| {
            (b.lines().skip(1))
                .map(|l| l.split_whitespace().nth(1).unwrap_or(""))
                .map(|f| f.split("+0x").next().unwrap().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn script_stitches_as_perf() {
    let Some(s) = setup("--stitch-lbr in script") else {
        return;
    };
    let (ours, theirs) = both(&s, &["script", "--stitch-lbr"]);
    same_lines(&ours, &theirs, "script --stitch-lbr");
    let stitched = chains(&ours);
    let full = ["f6", "f5", "f4", "f3", "f2", "f1", "main"].map(String::from);
    // Both samples in f6, of both threads: the whole stack.
    assert_eq!(stitched.len(), 8, "{ours}");
    for c in &stitched[2..6] {
        assert_eq!(c, &full, "{ours}");
    }
    // g: nothing in common, nothing stitched.
    assert_eq!(stitched[6], ["g", "main"].map(String::from), "{ours}");
    // Without --stitch-lbr, f6's chains stop at the LBR's depth.
    let (plain, theirs) = both(&s, &["script"]);
    same_lines(&plain, &theirs, "script");
    assert_eq!(chains(&plain)[2], full[..5], "{plain}");
}

#[test]
fn report_stitches_as_perf() {
    let Some(s) = setup("--stitch-lbr in report") else {
        return;
    };
    for args in [
        &["report", "--stdio", "--stitch-lbr", "--no-children"][..],
        &[
            "report",
            "--stdio",
            "--stitch-lbr",
            "-g",
            "caller",
            "--no-children",
        ],
        &["report", "--stdio", "--stitch-lbr", "--children"],
    ] {
        let (ours, theirs) = both(&s, args);
        same_lines(&body(&ours), &body(&theirs), &format!("{args:?}"));
        assert!(ours.contains("main"), "{ours}");
    }
}

/// Every third sample (from the second) taken in the kernel (its chain a kernel part
/// before the user context): the kernel part stays first, the LBR's
/// calls and the stitched callers follow it, in `script` and in `report
/// -g` both ways, as perf 6.1 prints them.
#[test]
fn kernel_parts_stitch_as_perf() {
    let what = "--stitch-lbr with kernel parts";
    let (Some(k), Some(_)) = (kernel_functions(), kernel_text()) else {
        pmx_testkit::skip(format_args!("{what}: /proc/kallsyms hides addresses"));
        return;
    };
    let Some(s) = setup_with(what, Some(k)) else {
        return;
    };
    let (ours, theirs) = both(&s, &["script", "--stitch-lbr"]);
    same_lines(&ours, &theirs, "script --stitch-lbr");
    let stitched = chains(&ours);
    assert_eq!(stitched.len(), 8, "{ours}");
    // The second f6 sample of the first thread (the fifth): in the
    // kernel, its user part stitched whole after the kernel's frames.
    let f6 = [
        "ksys_read",
        "do_syscall_64",
        "f6",
        "f5",
        "f4",
        "f3",
        "f2",
        "f1",
        "main",
    ];
    assert_eq!(stitched[4], f6.map(String::from), "{ours}");
    for args in [
        &["report", "--stdio", "--stitch-lbr", "--no-children"][..],
        &[
            "report",
            "--stdio",
            "--stitch-lbr",
            "--children",
            "-g",
            "callee",
        ],
    ] {
        let (ours, theirs) = both(&s, args);
        same_lines(&body(&ours), &body(&theirs), &format!("{args:?}"));
        assert!(
            ours.contains("ksys_read") && ours.contains("main"),
            "{ours}"
        );
    }
    // Callers first, perf 6.1 looks the kernel part up after the user
    // context (its loop runs from the marker down) and so names no
    // kernel frame of an LBR chain; pmx names them (docs/branches.md).
    let args = [
        "report",
        "--stdio",
        "--stitch-lbr",
        "-g",
        "caller",
        "--no-children",
    ];
    let (ours, theirs) = both(&s, &args);
    let graph = |t: &str| t.split("---main").nth(1).unwrap_or("").to_string();
    assert!(graph(&ours).contains("do_syscall_64"), "{ours}");
    assert!(!graph(&theirs).contains("do_syscall_64"), "{theirs}");
    assert!(graph(&theirs).contains("0xffffffff"), "{theirs}");
}
