//! `script -F brstackinsn`, `brstackoff` and `brcntr` beside Debian's
//! perf 6.1, on branch files of a local program: the program of
//! `optimizers` is compiled (as a PIE and not), its real branches found
//! with `objdump -d`, and a walk over its control flow gives the taken
//! branches an LBR would have recorded; every few dozen branches a sample
//! carries the last 16 with cycle counts, its address on the way to the
//! next branch. perf and pmx must print the same lines; and on the shared
//! branch recordings (whose binaries are not here) as well.

use super::optimizers::{disassemble, walk, Insn, Rng, BASE, PID, PROGRAM};
use crate::common::{stderr, PMX};
use pmx_perfdata::branch::{self, BranchEntry, BranchFlags};
use pmx_perfdata::format::{branch_sample_type as bst, callchain, record_type, sample_type as st};
use pmx_perfdata::write::{BuildIdEntry, Features};
use pmx_perfdata::FileAttr;
use pmx_testkit::perfdata::{padded, pid_tid, record as rec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the text is mapped: a PIE at `BASE`, a fixed binary where it
/// was linked.
fn base(pie: bool) -> u64 {
    if pie {
        BASE
    } else {
        0
    }
}

/// What a branch file holds besides its branches.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Extras {
    /// `PERF_SAMPLE_BRANCH_COUNTERS` words (`brcntr`).
    pub(crate) counters: bool,
    /// Each entry's type (`-j save_type`): the instruction's (`COND`,
    /// `UNCOND`, `CALL`, `RET`), every eleventh entry one of the others
    /// (`SYSCALL` … `EXTEND_ABI` with each `new_type`) so every name shows.
    pub(crate) types: bool,
    /// Each sample's user call chain (`-g`): the walk's return addresses
    /// (and stacks of 2–6 branches, not 16).
    pub(crate) chains: bool,
}

/// The type written for the entry leaving `from` (see [`Extras::types`]);
/// `n` the entry's place in the walk. (type, new_type).
fn entry_type(code: &BTreeMap<u64, Insn>, from: u64, n: usize) -> (u8, u8) {
    if n.is_multiple_of(11) {
        let kind = 7 + ((n / 11) % 9) as u8;
        return (kind, ((n / 99) % 8) as u8);
    }
    let i = &code[&from];
    let kind = match (i.op.as_str(), i.target) {
        ("call", Some(_)) => 4,
        ("call", None) => 5,
        ("ret", _) => 6,
        ("jmp", Some(_)) => 2,
        ("jmp", None) => 3,
        _ => 1,
    };
    (kind, 0)
}

/// The perf.data of a walk over `prog`: a sample every 20–50 branches
/// with the last 16 (newest first), cycles on each, the sample's address
/// the source of the next branch (on the way there).
pub(crate) fn perf_data(
    prog: &Path,
    code: &BTreeMap<u64, Insn>,
    pie: bool,
    extras: Extras,
    out: &Path,
) {
    let counters = extras.counters;
    let text = prog.canonicalize().unwrap();
    let call_work = (code.iter())
        .find(|(_, i)| i.op == "call" && i.callee == "<work>")
        .map(|(a, _)| *a)
        .unwrap();
    let taken = walk(code, call_work, 20_000);
    let b = base(pie);
    let mut sample_type = st::IP | st::TID | st::TIME | st::PERIOD | st::BRANCH_STACK;
    if extras.chains {
        sample_type |= st::CALLCHAIN;
    }
    let mut a = pmx_testkit::perfdata::attr(128, 4000, sample_type, (1 << 18) | (1 << 5));
    a[0..4].copy_from_slice(&0u32.to_le_bytes()); // PERF_TYPE_HARDWARE, cycles
    let mut bst = bst::ANY | bst::USER | if counters { bst::COUNTERS } else { 0 };
    if extras.types {
        bst |= bst::TYPE_SAVE;
    }
    a[72..80].copy_from_slice(&bst.to_le_bytes());
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
    let start = if pie { BASE + 0x1000 } else { 0x40_1000 };
    for v in [start, 0x1000, 0x1000] {
        mmap.extend_from_slice(&v.to_le_bytes());
    }
    mmap.extend_from_slice(&[8, 0, 0, 0, 1, 0, 0, 0]); // maj, min
    mmap.extend_from_slice(&[0u8; 16]); // ino, ino_generation
    mmap.extend_from_slice(&5u32.to_le_bytes()); // PROT_READ | PROT_EXEC
    mmap.extend_from_slice(&2u32.to_le_bytes()); // MAP_PRIVATE
    mmap.extend_from_slice(&padded(text.to_str().unwrap().as_bytes()));
    mmap.extend_from_slice(&trailer(2));
    w.write_record(&rec(record_type::MMAP2, 2, &mmap)).unwrap();
    let mut rng = Rng(11);
    let (mut at, mut n) = (40usize, 0u64);
    // The return addresses of the calls not yet returned from, as of
    // `done` branches into the walk.
    let (mut stack, mut done) = (Vec::new(), 0usize);
    while at + 1 < taken.len() {
        // With call chains, short stacks (2–6) so that part of each
        // chain outlasts perf's cut of as many entries as branches.
        let depth = if extras.chains {
            2 + n as usize % 5
        } else {
            16
        };
        let entries: Vec<BranchEntry> = (0..depth)
            .map(|k| {
                let (from, to) = taken[at - k];
                let mispred = (at - k) % 7 == 0;
                let cycles = (1 + (from ^ to) % 37) as u16;
                let (kind, new) = match extras.types {
                    true => entry_type(code, from, at - k),
                    false => (0, 0),
                };
                let f = BranchFlags::new(mispred, !mispred, false, false, cycles, kind, 0, new, 0);
                BranchEntry {
                    from: b + from,
                    to: b + to,
                    flags: f,
                }
            })
            .collect();
        let mut body = Vec::new();
        let ip = b + taken[at + 1].0;
        for v in [ip, u64::from(PID) | (u64::from(PID) << 32), 1000 + n, 4000] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        if extras.chains {
            for &(from, _) in &taken[done..=at] {
                match code[&from].op.as_str() {
                    "call" => stack.push(code[&from].next),
                    "ret" => drop(stack.pop()),
                    _ => {}
                }
            }
            done = at + 1;
            let chain: Vec<u64> = [callchain::CONTEXT_USER, ip]
                .into_iter()
                .chain(stack.iter().rev().map(|r| b + r))
                .collect();
            body.extend_from_slice(&(chain.len() as u64).to_le_bytes());
            for v in chain {
                body.extend_from_slice(&v.to_le_bytes());
            }
        }
        let words: Vec<u64> = entries.iter().map(|e| counter_word(e.from, e.to)).collect();
        branch::encode(&mut body, bst, None, &entries, &words);
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

/// The counter word written for a branch (`brcntr`): some bits of its ends.
fn counter_word(from: u64, to: u64) -> u64 {
    (from ^ (to >> 2)) & 0xff
}

pub(crate) struct Setup {
    /// Holds the program and the file.
    _dir: tempfile::TempDir,
    pub(crate) data: PathBuf,
}

/// The program built (a PIE or not) and its branch file.
pub(crate) fn setup(what: &str, pie: bool, counters: bool) -> Option<Setup> {
    let extras = Extras {
        counters,
        ..Extras::default()
    };
    setup_with(what, pie, extras)
}

/// [`setup`] with the file's [`Extras`].
pub(crate) fn setup_with(what: &str, pie: bool, extras: Extras) -> Option<Setup> {
    if !pmx_testkit::cc::require() || !pmx_testkit::perf::require(what) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut flags = vec!["-O2", "-g", "-Wl,--build-id"];
    if !pie {
        flags.push("-no-pie");
    }
    let prog = pmx_testkit::cc::compile(dir.path(), "prog", PROGRAM, &flags).unwrap();
    let code = disassemble(&prog);
    let data = dir.path().join("lbr.data");
    perf_data(&prog, &code, pie, extras, &data);
    Some(Setup { _dir: dir, data })
}

/// `script ARGS -i FILE` by pmx (as perf) and by perf.
fn both(args: &[&str], file: &Path) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let as_perf = dir.path().join("perf");
    std::os::unix::fs::symlink(PMX, &as_perf).unwrap();
    let run = |bin: &Path| {
        let o = Command::new(bin)
            .args(args)
            .arg("-i")
            .arg(file)
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
    (run(&as_perf), run(Path::new("perf")))
}

/// The first line where two outputs differ, with its neighbours.
fn first_difference(ours: &str, theirs: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    let i = (a.iter().zip(&b))
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let around = |v: &[&str]| v[i.saturating_sub(3)..(i + 3).min(v.len())].join("\n");
    format!(
        "line {i} (of {} and {}):\n--- pmx\n{}\n--- perf\n{}",
        a.len(),
        b.len(),
        around(&a),
        around(&b)
    )
}

fn assert_same(what: &str, ours: &str, theirs: &str) {
    if ours != theirs {
        panic!("{what}: {}", first_difference(ours, theirs));
    }
}

#[test]
fn brstackinsn_as_perf_prints_it() {
    for pie in [true, false] {
        let Some(s) = setup("brstackinsn against perf", pie, false) else {
            return;
        };
        for fields in [
            "ip,brstackinsn",
            "brstackinsn",
            "ip,sym,brstackinsn,brstackoff",
        ] {
            let (ours, theirs) = both(&["script", "-F", fields], &s.data);
            assert!(theirs.contains(" IPC"), "{theirs}");
            assert!(theirs.matches("insn: ").count() > 1000, "{theirs}");
            assert_same(&format!("pie {pie} -F {fields}"), &ours, &theirs);
        }
    }
}

#[test]
fn brstackoff_as_perf_prints_it() {
    for pie in [true, false] {
        let Some(s) = setup("brstackoff against perf", pie, false) else {
            return;
        };
        for fields in ["ip,brstackoff", "brstackoff", "ip,sym,brstackoff"] {
            let (ours, theirs) = both(&["script", "-F", fields], &s.data);
            assert!(theirs.len() > 1000, "{theirs}");
            assert_same(&format!("pie {pie} -F {fields}"), &ours, &theirs);
        }
    }
}

#[test]
fn brcntr_prints_each_branch_counter_word() {
    let Some(s) = setup("brcntr", true, true) else {
        return;
    };
    let o = pmx_testkit::perf::on_file(&["script", "-F", "ip,brcntr"], &s.data);
    assert!(!o.status.success(), "perf 6.1 has brcntr now?");
    assert!(
        stderr(&o).contains("Invalid field requested"),
        "{}",
        stderr(&o)
    );
    let o = crate::common::pmx(&["script", "-F", "ip,brcntr", "-i", s.data.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = pmx_testkit::text(&o.stdout);
    let mut seen = 0;
    for line in out.lines() {
        for entry in line.split_whitespace().skip(1) {
            let parts: Vec<&str> = entry.split('/').collect();
            let hex = |t: &str| u64::from_str_radix(t.trim_start_matches("0x"), 16).unwrap();
            let (from, to) = (hex(parts[0]), hex(parts[1]));
            let word = counter_word(from, to);
            let want: Vec<String> = (0..4)
                .map(|k| ((word >> (2 * k)) & 3).to_string())
                .collect();
            assert_eq!(parts[2], want.join(":"), "{line}");
            seen += 1;
        }
    }
    assert!(seen > 1000, "{out}");
}

/// The shared recordings (their binaries are not here: no blocks, the
/// ends as offsets, kernel ones from the kernel map's start), and the
/// Arm file's filtered stacks refused as perf refuses them.
#[test]
fn shared_files_as_perf_prints_them() {
    let Some(data) = pmx_testkit::shared::shared_data("perfdata") else {
        pmx_testkit::skip("brstackoff on the shared files: they are absent");
        return;
    };
    if !pmx_testkit::perf::require("brstackoff on the shared files") {
        return;
    }
    for name in [
        "perf_data_converter__perf.data.branch-4.14",
        "perf_data_converter__perf.data.callgraph_and_branch-3.8",
    ] {
        for fields in ["ip,brstackoff", "brstackinsnlen", "ip,sym,brstackinsn"] {
            let (ours, theirs) = both(&["script", "-F", fields], &data.join(name));
            assert!(theirs.lines().count() > 10, "{theirs}");
            assert_same(&format!("{name} -F {fields}"), &ours, &theirs);
        }
    }
    let arm = data.join("perf_data_converter__perf.data.branch_stack_hw_index");
    let (ours, theirs) = both(&["script", "-F", "ip,brstackoff"], &arm);
    assert_same("hw_index -F ip,brstackoff", &ours, &theirs);
    let o = pmx_testkit::perf::on_file(&["script", "-F", "ip,brstackinsn"], &arm);
    assert!(
        stderr(&o).contains("non all-branch filter"),
        "{}",
        stderr(&o)
    );
    let o = crate::common::pmx(&[
        "script",
        "-F",
        "ip,brstackinsn",
        "-i",
        arm.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("-b or -j any"), "{}", stderr(&o));
}
