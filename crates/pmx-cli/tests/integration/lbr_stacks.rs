//! LBR call stacks (`--call-graph lbr`) with pmx as `perf` beside Debian's
//! perf 6.1. A small C program is compiled and its call sites found with
//! `objdump -d`; pmx-perfdata's writer writes the file `perf record
//! --call-graph lbr` writes (`CALLCHAIN | BRANCH_STACK`, the branch filter
//! `USER | CALL_STACK | NO_FLAGS | NO_CYCLES | HW_INDEX`): each sample's
//! branch stack is its user call stack (the newest call first), its call
//! chain the kernel's frames, `PERF_CONTEXT_USER` and a frame-pointer walk
//! that lost the middle frames (as in code built without frame pointers).
//! perf builds the user part from the branch stack (the newest call's
//! target, then every call's source), so the lost frames are back; a
//! kernel thread's sample (no user part) keeps its chain. `report
//! --stdio -g` (with and without `--children`) and `script` must print
//! what perf prints.

use crate::common::{stderr, PMX};
use pmx_perfdata::branch::{self, BranchEntry, BranchFlags};
use pmx_perfdata::format::{branch_sample_type as bst, callchain, record_type};
use pmx_perfdata::format::{misc, sample_type as st};
use pmx_perfdata::write::{BuildIdEntry, Features};
use pmx_perfdata::FileAttr;
use pmx_testkit::perfdata::{comm, mmap2, record as rec, sample_id, SAMPLE_ID_ALL};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROGRAM: &str = r#"
__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int mid(int x) { return leaf(x) + 1; }
__attribute__((noinline)) int top(int x) { return mid(x) * 2; }
__attribute__((noinline)) int side(int x) { return mid(x) - 1; }
int main(int argc, char **argv) { (void)argv; return top(argc) + side(argc); }
"#;

/// Where the program's text is mapped (a PIE's usual base).
const BASE: u64 = 0x5555_5555_4000;
const PID: u32 = 5151;

/// The program's functions (link-time address) and its call sites
/// (`caller>callee` → the call's link-time address).
pub(crate) struct Code {
    pub(crate) functions: BTreeMap<String, u64>,
    pub(crate) calls: BTreeMap<String, u64>,
}

pub(crate) fn code(prog: &Path) -> Code {
    let o = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", "-j", ".text"])
        .arg(prog)
        .output()
        .unwrap();
    let (mut functions, mut calls) = (BTreeMap::new(), BTreeMap::new());
    let mut current = String::new();
    for line in pmx_testkit::text(&o.stdout).lines() {
        // "0000000000001139 <leaf>:"
        if let Some((a, name)) = line.split_once(" <") {
            if let (Ok(a), Some(name)) = (u64::from_str_radix(a, 16), name.strip_suffix(">:")) {
                current = name.to_string();
                functions.insert(current.clone(), a);
                continue;
            }
        }
        let Some((addr, rest)) = line.trim_start().split_once(":\t") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        if let Some(callee) = rest.split_whitespace().nth(2) {
            if rest.starts_with("call") {
                let callee = callee.trim_start_matches('<').trim_end_matches('>');
                calls.insert(format!("{current}>{callee}"), addr);
            }
        }
    }
    Code { functions, calls }
}

/// Two kernel functions of this machine's kallsyms (the kernel part of
/// the chains); `None` when kallsyms hides addresses.
pub(crate) fn kernel_functions() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
    let find = |name: &str| {
        text.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            let (a, t, n) = (w.next()?, w.next()?, w.next()?);
            (n == name && (t == "T" || t == "t") && w.next().is_none())
                .then(|| u64::from_str_radix(a, 16).ok())
                .flatten()
                .filter(|&a| a != 0)
        })
    };
    Some((find("ksys_read")?, find("do_syscall_64")?))
}

/// The kernel's text (`_text`, `_etext`) in this machine's kallsyms.
pub(crate) fn kernel_text() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
    let find = |name: &str| {
        text.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            let (a, _, n) = (w.next()?, w.next()?, w.next()?);
            (n == name)
                .then(|| u64::from_str_radix(a, 16).ok())
                .flatten()
        })
    };
    Some((find("_text")?, find("_etext")?))
}

/// One sample: its mode, ip, call chain and branch stack (from, to).
struct Sample {
    kernel: bool,
    ip: u64,
    chain: Vec<u64>,
    calls: Vec<(u64, u64)>,
}

fn samples(c: &Code, (kread, ksys): (u64, u64), kernel_part: bool) -> Vec<Sample> {
    let f = |n: &str| BASE + c.functions[n];
    let call = |n: &str| BASE + c.calls[n];
    let (user, kernel) = (callchain::CONTEXT_USER, callchain::CONTEXT_KERNEL);
    let mut out = Vec::new();
    // In leaf through top: the walk found main alone above leaf.
    for k in 0..3 {
        let ip = f("leaf") + 1 + k;
        out.push(Sample {
            kernel: false,
            ip,
            chain: vec![user, ip, call("main>top") + 5],
            calls: vec![
                (call("mid>leaf"), f("leaf")),
                (call("top>mid"), f("mid")),
                (call("main>top"), f("top")),
            ],
        });
    }
    // In leaf through side.
    for k in 0..2 {
        let ip = f("leaf") + 2 + k;
        out.push(Sample {
            kernel: false,
            ip,
            chain: vec![user, ip],
            calls: vec![
                (call("mid>leaf"), f("leaf")),
                (call("side>mid"), f("mid")),
                (call("main>side"), f("side")),
            ],
        });
    }
    // In the kernel, called from mid through top.
    for k in 0..if kernel_part { 2 } else { 0 } {
        out.push(Sample {
            kernel: true,
            ip: kread + 4 + k,
            chain: vec![kernel, kread + 4 + k, ksys + 0x40, user, f("mid") + 3],
            calls: vec![(call("top>mid"), f("mid")), (call("main>top"), f("top"))],
        });
    }
    // A kernel thread's: no user part, no branches.
    out.push(Sample {
        kernel: true,
        ip: kread + 8,
        chain: vec![kernel, kread + 8, ksys + 0x40],
        calls: vec![],
    });
    out
}

/// The file `perf record --call-graph lbr -e cycles` writes for `samples`.
fn perf_data(prog: &Path, samples: &[Sample], out: &Path) {
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
    let side = |mut body: Vec<u8>, time| {
        body.extend_from_slice(&sample_id(PID, time, 0));
        body
    };
    w.write_record(&rec(record_type::COMM, 0x2000, &side(comm(PID, "prog"), 1)))
        .unwrap();
    // The kernel's map, as perf record synthesizes it.
    if let Some((start, end)) = kernel_text() {
        let mut k = [u32::MAX.to_le_bytes(), 0u32.to_le_bytes()].concat();
        for v in [start, end - start, start] {
            k.extend_from_slice(&v.to_le_bytes());
        }
        k.extend_from_slice(&pmx_testkit::perfdata::padded(b"[kernel.kallsyms]_text"));
        w.write_record(&rec(record_type::MMAP, misc::KERNEL, &side(k, 0)))
            .unwrap();
    }
    let mut map = mmap2(PID, BASE + 0x1000, 0x1000, 5, text.to_str().unwrap());
    map[24..32].copy_from_slice(&0x1000u64.to_le_bytes()); // pgoff
    w.write_record(&rec(record_type::MMAP2, misc::USER, &side(map, 2)))
        .unwrap();
    for (n, s) in samples.iter().enumerate() {
        let mut body = Vec::new();
        let ids = u64::from(PID) | (u64::from(PID) << 32);
        for v in [s.ip, ids, 1000 + n as u64, (n % 2) as u64, 4000] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        body.extend_from_slice(&(s.chain.len() as u64).to_le_bytes());
        for v in &s.chain {
            body.extend_from_slice(&v.to_le_bytes());
        }
        let entries: Vec<BranchEntry> = (s.calls.iter())
            .map(|&(from, to)| BranchEntry {
                from,
                to,
                flags: BranchFlags(0),
            })
            .collect();
        let idx = entries.len().saturating_sub(1) as u64;
        branch::encode(&mut body, filter, Some(idx), &entries, &[]);
        let mode = if s.kernel { misc::KERNEL } else { misc::USER };
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
    w.finish(&features).unwrap();
}

/// A recording written for a program built here, and pmx as `perf` beside it.
pub(crate) struct Setup {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) data: PathBuf,
    pub(crate) as_perf: PathBuf,
}

fn setup(what: &str, kernel_part: bool) -> Option<Setup> {
    if !pmx_testkit::cc::require() || !pmx_testkit::perf::require(what) {
        return None;
    }
    let Some(kernel) = kernel_functions() else {
        pmx_testkit::skip(format_args!("{what}: /proc/kallsyms hides addresses"));
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let flags = ["-O1", "-fno-optimize-sibling-calls", "-Wl,--build-id"];
    let prog = pmx_testkit::cc::compile(dir.path(), "prog", PROGRAM, &flags).unwrap();
    let data = dir.path().join("lbr.data");
    perf_data(&prog, &samples(&code(&prog), kernel, kernel_part), &data);
    let as_perf = dir.path().join("perf");
    std::os::unix::fs::symlink(PMX, &as_perf).unwrap();
    Some(Setup { dir, data, as_perf })
}

/// `perf ARGS -i FILE` by pmx as perf and by perf: both outputs.
pub(crate) fn both(s: &Setup, args: &[&str]) -> (String, String) {
    let run = |bin: &Path| {
        let o = Command::new(bin)
            .args(args)
            .arg("-i")
            .arg(&s.data)
            .current_dir(s.dir.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{} {args:?}: {}",
            bin.display(),
            stderr(&o)
        );
        pmx_testkit::text(&o.stdout)
    };
    (run(&s.as_perf), run(Path::new("perf")))
}

/// Every line the same, and as many.
pub(crate) fn same_lines(ours: &str, theirs: &str, what: &str) {
    for (i, (x, y)) in ours.lines().zip(theirs.lines()).enumerate() {
        assert_eq!(
            x,
            y,
            "{what}: line {} differs\n{ours}\n--- perf:\n{theirs}",
            i + 1
        );
    }
    assert_eq!(
        ours.lines().count(),
        theirs.lines().count(),
        "{what}\n{ours}"
    );
}

#[test]
fn script_prints_the_call_stacks_perf_builds() {
    let Some(s) = setup("LBR call stacks in script", true) else {
        return;
    };
    let (ours, theirs) = both(&s, &["script"]);
    same_lines(&ours, &theirs, "script");
    // The frames the frame pointers lost are back (the chain alone would
    // go from leaf to main), the kernel part stays.
    let leaf = ours.find("leaf+0x0").unwrap();
    assert!(ours[leaf..]
        .trim_start_matches(|c| c != '\n')
        .trim_start()
        .contains("mid+0x0"));
    assert!(
        ours.contains("side+0x0") && ours.contains("do_syscall_64+0x40"),
        "{ours}"
    );
}

/// perf report's body (the lines not starting with `#`).
pub(crate) fn body(t: &str) -> String {
    (t.lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>())
    .join("\n")
}

#[test]
fn report_call_graphs_are_perfs() {
    let callee: [&[&str]; 3] = [
        &["report", "--stdio", "--no-children"],
        &["report", "--stdio", "-g", "callee", "--no-children"],
        &["report", "--stdio", "-g", "callee"],
    ];
    let caller: [&[&str]; 3] = [
        &["report", "--stdio", "-g"],
        &["report", "--stdio", "-g", "caller", "--no-children"],
        &["report", "--stdio", "--children", "--sort", "sym"],
    ];
    // In caller order perf 6.1 looks the kernel part of an LBR stack up
    // as user addresses (docs/branches.md): with kernel parts, callee
    // order alone is compared.
    for kernel_part in [false, true] {
        let Some(s) = setup("LBR call graphs in report", kernel_part) else {
            return;
        };
        let caller = if kernel_part { &[][..] } else { &caller[..] };
        for args in callee.iter().chain(caller) {
            let (ours, theirs) = both(&s, args);
            let what = format!("{args:?}, kernel parts: {kernel_part}");
            same_lines(&body(&ours), &body(&theirs), &what);
            assert!(ours.contains("mid"), "{ours}");
        }
    }
}

/// `pmx report --folded`: each sample's stack as perf script shows it
/// (root first, `;` between frames, after the command).
#[test]
fn folded_stacks_are_the_lbr_stacks() {
    let Some(s) = setup("LBR folded stacks", true) else {
        return;
    };
    let (_, script) = both(&s, &["script"]);
    let mut want = BTreeMap::<String, u32>::new();
    for block in script.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut lines = block.lines();
        let comm = lines.next().unwrap().split_whitespace().next().unwrap();
        let mut frames: Vec<&str> = lines
            .map(|l| l.split_whitespace().nth(1).unwrap())
            .map(|f| f.split("+0x").next().unwrap())
            .collect();
        frames.push(comm);
        frames.reverse();
        *want.entry(frames.join(";")).or_default() += 1;
    }
    let o = Command::new(PMX)
        .args(["report", "--folded", "-i"])
        .arg(&s.data)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut ours: Vec<String> = pmx_testkit::text(&o.stdout)
        .lines()
        .map(String::from)
        .collect();
    ours.sort();
    let want: Vec<String> = want.iter().map(|(k, n)| format!("{k} {n}")).collect();
    assert_eq!(ours, want);
    assert!(
        want.contains(&"prog;main;top;mid;leaf 3".to_string()),
        "{want:?}"
    );
}
