//! The optimizers' inputs beside the real tools, on a branch file of a
//! local program: a small C program is compiled (`-O2`, linked with
//! `--emit-relocs` as BOLT wants), its real branches are found with
//! `objdump -d`, and a walk over its control flow (conditional jumps taken
//! or not at random, calls and returns paired) gives the taken branches
//! that an LBR would have recorded; every few dozen branches a sample
//! carries the last 16, as `perf record -b` writes them (MMAP2 of the
//! binary, its build id). Then `perf2bolt-16` (which reads the file
//! through Debian's perf) and `pmx report --bolt` must write the same
//! fdata records (BOLT writes its functions in hash order: compared as
//! multisets), with and without `-nl`; `llvm-bolt-16` must optimize the
//! program with pmx's fdata, and the optimized program print what the
//! original prints.

use crate::common::{pmx, stderr};
use pmx_perfdata::branch::{self, BranchEntry, BranchFlags};
use pmx_perfdata::format::{branch_sample_type as bst, record_type, sample_type as st};
use pmx_perfdata::write::{BuildIdEntry, Features};
use pmx_perfdata::FileAttr;
use pmx_testkit::perfdata::{padded, pid_tid, record as rec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) const PROGRAM: &str = r#"
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) unsigned step(unsigned x) {
  if (x & 1) x = 3 * x + 1; else x >>= 1;
  return x;
}
__attribute__((noinline)) unsigned collatz(unsigned x) {
  unsigned n = 0;
  while (x != 1) { x = step(x); n++; }
  return n;
}
__attribute__((noinline)) unsigned long work(unsigned lim) {
  unsigned long s = 0;
  for (unsigned i = 1; i < lim; i++) {
    unsigned c = collatz(i);
    if (c > 100) s += c; else s ^= c;
  }
  return s;
}
int main(int argc, char **argv) {
  unsigned lim = argc > 1 ? (unsigned)atoi(argv[1]) : 3000;
  printf("%lu\n", work(lim));
  return 0;
}
"#;

/// Where the program's text is mapped (a PIE's usual base).
pub(crate) const BASE: u64 = 0x5555_5555_4000;
pub(crate) const PID: u32 = 4242;

/// One instruction as objdump shows it: address, next address, mnemonic,
/// direct target.
#[derive(Debug, Clone)]
pub(crate) struct Insn {
    pub(crate) next: u64,
    pub(crate) op: String,
    pub(crate) target: Option<u64>,
    pub(crate) callee: String,
}

/// The instructions of `prog`'s `.text`, by address.
pub(crate) fn disassemble(prog: &Path) -> BTreeMap<u64, Insn> {
    let o = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", "-j", ".text"])
        .arg(prog)
        .output()
        .unwrap();
    let text = pmx_testkit::text(&o.stdout);
    let mut out: BTreeMap<u64, Insn> = BTreeMap::new();
    let mut prev: Option<u64> = None;
    for line in text.lines() {
        let Some((addr, rest)) = line.trim_start().split_once(":\t") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let mut op = words.next().unwrap_or("").to_string();
        if op == "bnd" || op == "notrack" {
            op = words.next().unwrap_or("").to_string();
        }
        let target = (words.next()).and_then(|t| u64::from_str_radix(t, 16).ok());
        let callee = words.next().unwrap_or("").to_string();
        if let Some(p) = prev {
            if let Some(i) = out.get_mut(&p) {
                i.next = addr;
            }
        }
        out.insert(
            addr,
            Insn {
                next: addr,
                op,
                target,
                callee,
            },
        );
        prev = Some(addr);
    }
    out
}

/// A small deterministic generator.
pub(crate) struct Rng(pub(crate) u64);
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Walk the program's control flow from `main`'s call of `work`: the
/// taken branches (link-time addresses) in order, and at each the
/// address reached.
pub(crate) fn walk(code: &BTreeMap<u64, Insn>, call_work: u64, branches: usize) -> Vec<(u64, u64)> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let work = code[&call_work].target.unwrap();
    let back = code[&call_work].next;
    let mut out = vec![(call_work, work)];
    let (mut pc, mut stack) = (work, Vec::new());
    while out.len() < branches {
        let Some(i) = code.get(&pc) else { break };
        let taken = match i.op.as_str() {
            "call" => {
                stack.push(i.next);
                i.target
            }
            "ret" => Some(stack.pop().unwrap_or(back)),
            "jmp" => i.target,
            op if op.starts_with('j') => (!rng.next().is_multiple_of(3))
                .then_some(i.target)
                .flatten(),
            _ => None,
        };
        match taken {
            Some(to) if to == back => {
                out.push((pc, back));
                out.push((call_work, work));
                pc = work;
            }
            Some(to) => {
                out.push((pc, to));
                pc = to;
            }
            None => pc = i.next,
        }
    }
    out
}

/// The perf.data of the walk: a sample every 20–50 branches carrying the
/// last 16 (newest first; every fifth mispredicted), at runtime addresses.
fn perf_data(prog: &Path, code: &BTreeMap<u64, Insn>, out: &Path) {
    let text = prog.canonicalize().unwrap();
    let call_work = (code.iter())
        .find(|(_, i)| i.op == "call" && i.callee == "<work>")
        .map(|(a, _)| *a)
        .unwrap();
    let taken = walk(code, call_work, 60_000);
    let sample_type = st::IP | st::TID | st::TIME | st::PERIOD | st::BRANCH_STACK;
    let mut a = pmx_testkit::perfdata::attr(128, 4000, sample_type, (1 << 18) | (1 << 5));
    a[0..4].copy_from_slice(&0u32.to_le_bytes()); // PERF_TYPE_HARDWARE, cycles
    a[72..80].copy_from_slice(&(bst::ANY | bst::USER).to_le_bytes());
    let attrs = vec![FileAttr {
        attr: a,
        ids: vec![],
        name: "cycles:u".into(),
    }];
    let file = std::fs::File::create(out).unwrap();
    let mut w = pmx_perfdata::Writer::create(file, attrs).unwrap();
    let trailer = |time: u64| [pid_tid(PID), time.to_le_bytes().to_vec()].concat();
    let mut comm = pid_tid(PID);
    comm.extend_from_slice(&padded(b"prog"));
    comm.extend_from_slice(&trailer(1));
    w.write_record(&rec(record_type::COMM, 0x2000, &comm))
        .unwrap();
    let mut mmap = pid_tid(PID);
    for v in [BASE + 0x1000, 0x1000, 0x1000] {
        mmap.extend_from_slice(&v.to_le_bytes());
    }
    mmap.extend_from_slice(&[8, 0, 0, 0, 1, 0, 0, 0]); // maj, min
    mmap.extend_from_slice(&[0u8; 16]); // ino, ino_generation
    mmap.extend_from_slice(&5u32.to_le_bytes()); // PROT_READ | PROT_EXEC
    mmap.extend_from_slice(&2u32.to_le_bytes()); // MAP_PRIVATE
    mmap.extend_from_slice(&padded(text.to_str().unwrap().as_bytes()));
    mmap.extend_from_slice(&trailer(2));
    w.write_record(&rec(record_type::MMAP2, 2, &mmap)).unwrap();
    let mut rng = Rng(7);
    let (mut at, mut n) = (40usize, 0u64);
    while at < taken.len() {
        let mut entries: Vec<BranchEntry> = (0..16)
            .map(|k| {
                let (from, to) = taken[at - k];
                let mispred = (at - k) % 5 == 0;
                BranchEntry {
                    from: BASE + from,
                    to: BASE + to,
                    flags: BranchFlags::new(mispred, !mispred, false, false, 0, 0, 0, 0, 0),
                }
            })
            .collect();
        if n % 4 == 1 {
            // An interrupt in the run before the 6th newest branch, and a
            // branch inside the kernel: perf2bolt drops them, llvm-profgen
            // counts the return as a branch from outside.
            let (x, k) = (entries[5].from, 0xffff_ffff_8100_0000u64);
            let irq = |from, to| BranchEntry {
                from,
                to,
                flags: BranchFlags::new(false, true, false, false, 0, 0, 0, 0, 0),
            };
            entries.insert(5, irq(k + 0x40, x));
            entries.insert(6, irq(k + 0x10, k + 0x30));
            entries.insert(7, irq(x, k));
            entries.truncate(16);
        }
        let mut body = Vec::new();
        let ip = BASE + taken[at].1;
        for v in [ip, u64::from(PID) | (u64::from(PID) << 32), 1000 + n, 4000] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        branch::encode(&mut body, bst::ANY | bst::USER, None, &entries, &[]);
        w.write_record(&rec(record_type::SAMPLE, 2, &body)).unwrap();
        at += 20 + (rng.next() % 31) as usize;
        n += 1;
    }
    let id = pmx_symbols::elf::ElfFile::open(&text).unwrap();
    let features = Features {
        build_ids: vec![BuildIdEntry {
            pid: -1,
            misc: 2,
            build_id: id.build_id().unwrap().to_vec(),
            filename: text.to_str().unwrap().to_string(),
        }],
        cmdline: Some(vec!["perf".into(), "record".into(), "-b".into()]),
        ..Default::default()
    };
    w.finish(&features).unwrap();
}

/// fdata's records, sorted (BOLT writes functions in hash order).
fn records(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut v: Vec<String> = text.lines().map(str::to_string).collect();
    v.sort();
    v
}

struct Setup {
    dir: tempfile::TempDir,
    prog: PathBuf,
    data: PathBuf,
}

fn setup(what: &str) -> Option<Setup> {
    if !pmx_testkit::cc::require() || !pmx_testkit::perf::require(what) {
        return None;
    }
    let found = ["/usr/bin/perf2bolt-16", "/usr/lib/llvm-16/bin/perf2bolt"]
        .map(PathBuf::from)
        .into_iter()
        .find(|p| p.exists());
    let Some(perf2bolt) = found.filter(|_| {
        Command::new("llvm-bolt-16")
            .arg("--version")
            .output()
            .is_ok()
    }) else {
        pmx_testkit::skip(format_args!(
            "{what}: perf2bolt-16 or llvm-bolt-16 is absent (Debian's bolt-16)"
        ));
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    // perf2bolt is llvm-bolt under another name, and works as perf2bolt
    // only when it is called by that very name (not perf2bolt-16).
    std::os::unix::fs::symlink(&perf2bolt, dir.path().join("perf2bolt")).unwrap();
    // DWARF 4: create_llvm_prof's reader knows no DWARF 5.
    let flags = ["-O2", "-gdwarf-4", "-Wl,--emit-relocs", "-Wl,--build-id"];
    let prog = pmx_testkit::cc::compile(dir.path(), "prog", PROGRAM, &flags).unwrap();
    let code = disassemble(&prog);
    let data = dir.path().join("lbr.data");
    perf_data(&prog, &code, &data);
    Some(Setup { dir, prog, data })
}

/// perf2bolt's fdata and pmx's for the same file (`extra`: `-nl`).
fn both(s: &Setup, extra: &[&str]) -> (Vec<String>, Vec<String>) {
    let theirs = s.dir.path().join("perf2bolt.fdata");
    let o = Command::new(s.dir.path().join("perf2bolt"))
        .arg("-p")
        .arg(&s.data)
        .arg("-o")
        .arg(&theirs)
        .args(extra)
        .arg(&s.prog)
        .current_dir(s.dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "perf2bolt: {}", stderr(&o));
    let ours = s.dir.path().join("pmx.fdata");
    let mut args = vec!["report", "-i", s.data.to_str().unwrap()];
    args.extend(["--bolt", ours.to_str().unwrap()]);
    args.extend(["--binary", s.prog.to_str().unwrap()]);
    if !extra.is_empty() {
        args.push("--bolt-no-lbr");
    }
    let o = pmx(&args);
    assert!(o.status.success(), "pmx: {}", stderr(&o));
    (records(&theirs), records(&ours))
}

#[test]
fn bolt_fdata_as_perf2bolt_writes_it() {
    let Some(s) = setup("bolt fdata") else { return };
    let (theirs, ours) = both(&s, &[]);
    assert!(theirs.len() > 10, "{theirs:?}");
    assert_eq!(ours, theirs);
    let (theirs, ours) = both(&s, &["-nl"]);
    assert!(theirs.len() > 5, "{theirs:?}");
    assert_eq!(ours, theirs);
    let out = s.dir.path().join("prog.bolt");
    let o = Command::new("llvm-bolt-16")
        .arg(&s.prog)
        .arg("-o")
        .arg(&out)
        .arg("-data")
        .arg(s.dir.path().join("pmx.fdata"))
        .args(["-reorder-blocks=ext-tsp", "-reorder-functions=hfsort"])
        .output()
        .unwrap();
    let said = pmx_testkit::text(&o.stdout) + &stderr(&o);
    assert!(o.status.success(), "llvm-bolt: {said}");
    let used = (said.lines()).find(|l| l.contains("have non-empty execution profile"));
    assert!(used.is_some_and(|l| l.contains(" 4 out of ")), "{said}");
    assert!(
        said.contains("basic block reordering modified layout"),
        "{said}"
    );
    let run = |p: &Path| pmx_testkit::text(&Command::new(p).arg("500").output().unwrap().stdout);
    assert_eq!(run(&out), run(&s.prog));
    assert_eq!(run(&s.prog), "12463\n");
}

/// llvm-profgen (`--skip-symbolization`) on perf's `perf script -F
/// ip,brstack --show-mmap-events` and `pmx report --autofdo` on the same
/// file: the same counts, byte for byte; and the sample profile
/// llvm-profgen symbolizes from each is the same.
#[test]
fn autofdo_counts_as_llvm_profgen_makes_them() {
    if Command::new("llvm-profgen-16")
        .arg("--version")
        .output()
        .is_err()
    {
        pmx_testkit::skip("autofdo: llvm-profgen-16 is absent (Debian's llvm-16)");
        return;
    }
    let Some(s) = setup("autofdo counts") else {
        return;
    };
    let d = s.dir.path();
    let script = pmx_testkit::perf::on_file(
        &["script", "-F", "ip,brstack", "--show-mmap-events"],
        &s.data,
    );
    assert!(script.status.success(), "{}", stderr(&script));
    std::fs::write(d.join("perf.script"), &script.stdout).unwrap();
    let profgen = |args: &[&str]| {
        let o = Command::new("llvm-profgen-16")
            .args(args)
            .arg("--binary")
            .arg(&s.prog)
            .current_dir(d)
            .output()
            .unwrap();
        assert!(o.status.success(), "llvm-profgen: {}", stderr(&o));
    };
    profgen(&[
        "--perfscript=perf.script",
        "--skip-symbolization",
        "--output=theirs.txt",
    ]);
    let ours = d.join("ours.txt");
    let args = [
        "report",
        "-i",
        s.data.to_str().unwrap(),
        "--autofdo",
        ours.to_str().unwrap(),
    ];
    let o = pmx(&args);
    assert!(o.status.success(), "pmx: {}", stderr(&o));
    let theirs = std::fs::read_to_string(d.join("theirs.txt")).unwrap();
    assert!(theirs.lines().count() > 20, "{theirs}");
    assert!(theirs.contains("fffffffffffff001->"), "{theirs}");
    assert_eq!(std::fs::read_to_string(&ours).unwrap(), theirs);
    profgen(&[
        "--perfscript=perf.script",
        "--format=text",
        "--output=theirs.prof",
    ]);
    profgen(&[
        "--unsymbolized-profile=ours.txt",
        "--format=text",
        "--output=ours.prof",
    ]);
    let theirs = std::fs::read_to_string(d.join("theirs.prof")).unwrap();
    assert!(theirs.contains("collatz:"), "{theirs}");
    assert_eq!(
        std::fs::read_to_string(d.join("ours.prof")).unwrap(),
        theirs
    );
}
