//! Fault campaign, the precise records (issue 45, item 3): mutants of
//! perf.data files with branch stacks, data addresses and sources, weights,
//! tracepoint data, off-CPU samples and switch/namespace records — the
//! shared recordings from real machines that have them and files pmx
//! records here (`record -d`, `record --off-cpu`, a tracepoint) — through
//! the readers that decode those parts: the memory report
//! (`pmx_precise::mem`), c2c's statistics, the branch report, its blocks
//! (`--total-cycles`), the call graph and `script` with `--stitch-lbr`
//! (a file of LBR call stacks written here is among the sources), and
//! `script` with every record shown. Expected of every case: no panic, no hang (a
//! time bound per case), and a result or an error that names the file.
//! A file without the records a report needs ("no mem data", "no branch
//! stacks") is refused as perf refuses it, whatever the damage.
//!
//! `cargo test` runs a few cases per source; `PMX_FAULTS_LONG=1`
//! (bench/faults.sh) hundreds. A failure prints the source and the seed:
//! `pmx_testkit::mutate::perfdata(&original, seed)` gives the same bytes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::faults_support::*;
use pmx_precise::{branch, c2c, mem};
use pmx_testkit::mutate;

/// The shared recordings with precise records (branch stacks, PEBS
/// weights and sources, switch and namespace records).
const SHARED: &[&str] = &[
    "perf_data_converter__perf.data.branch-4.14",
    "perf_data_converter__perf.data.branch_stack_hw_index",
    "perf_data_converter__perf.data.weight_struct",
    "perf_data_converter__perf.data.ctx_switch_namespaces-4.14",
];

/// pmx's own recordings of the new record kinds, made here.
fn recorded(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let runs: [(&str, Vec<&str>); 3] = [
        (
            "record -d -e page-faults",
            vec![
                "-d",
                "-e",
                "page-faults",
                "-c",
                "1",
                "--",
                WORKLOAD,
                "pages",
                "64",
            ],
        ),
        (
            "record --off-cpu",
            vec!["--off-cpu", "-g", "--", "/bin/sleep", "0.05"],
        ),
        (
            "record -e sched:sched_switch",
            vec!["-e", "sched:sched_switch", "-g", "--", "/bin/sleep", "0.05"],
        ),
    ];
    let mut out = Vec::new();
    for (i, (name, args)) in runs.into_iter().enumerate() {
        let file = dir.join(format!("src{i}.data"));
        let st = Command::new(PMX)
            .arg("record")
            .arg("-o")
            .arg(&file)
            .args(&args)
            .output()
            .unwrap();
        match std::fs::read(&file) {
            Ok(b) if st.status.success() => out.push((format!("pmx {name}"), b)),
            _ => pmx_testkit::skip(format_args!(
                "pmx {name}: it failed here: {}",
                pmx_testkit::text(&st.stderr)
            )),
        }
    }
    out
}

/// The name of [`lbr_call_stacks`]' source.
const LBR: &str = "LBR call stacks (written here)";

/// What `perf record --call-graph lbr` writes on a CPU whose LBR holds
/// four calls (CPU_PMU_CAPS `branches=4`, each stack with `hw_idx` and
/// each entry with its cycles), two threads whose calls go six deep: the
/// file `report --stitch-lbr` stitches and `--total-cycles` tables (no
/// shared recording has LBR call stacks).
pub fn lbr_call_stacks() -> Vec<u8> {
    lbr_file(false, 4000)
}

/// The name of [`lbr_call_stacks_kernel`]'s source.
pub const LBR_KERNEL: &str = "LBR call stacks with kernel parts (written here)";

/// [`lbr_call_stacks`] where every third sample was taken in the kernel
/// (a system call): its chain a kernel part (`PERF_CONTEXT_KERNEL`, two
/// addresses of a `[kernel.kallsyms]` mapping) before the user one, the
/// part perf 6.1 keeps in front of the LBR's calls, stitched or not.
pub fn lbr_call_stacks_kernel() -> Vec<u8> {
    lbr_file(true, 4000)
}

/// The LBR call stacks, kernel parts or not, each sample of `period`.
pub fn lbr_file(kernel: bool, period: u64) -> Vec<u8> {
    use pmx_perfdata::branch::{encode, BranchEntry, BranchFlags};
    use pmx_perfdata::format::sample_type as st;
    use pmx_perfdata::format::{branch_sample_type as bst, callchain, misc, record_type};
    use pmx_testkit::perfdata::{attr, comm, mmap2, record, sample_id, SAMPLE_ID_ALL};
    const BASE: u64 = 0x5555_5555_5000;
    let sample_type = st::IP | st::TID | st::TIME | st::CPU | st::PERIOD;
    let sample_type = sample_type | st::CALLCHAIN | st::BRANCH_STACK;
    let mut a = attr(128, 4000, sample_type, SAMPLE_ID_ALL | 1 << 8 | 1 << 9);
    a[0..4].copy_from_slice(&0u32.to_le_bytes()); // PERF_TYPE_HARDWARE, cycles
    let filter = bst::USER | bst::CALL_STACK | bst::HW_INDEX;
    a[72..80].copy_from_slice(&filter.to_le_bytes());
    let attrs = vec![pmx_perfdata::FileAttr {
        attr: a,
        ids: vec![],
        name: "cycles".into(),
    }];
    let mut w = pmx_perfdata::Writer::create(std::io::Cursor::new(Vec::new()), attrs).unwrap();
    let side = |mut body: Vec<u8>, tid: u32, time: u64| {
        body.extend_from_slice(&sample_id(tid, time, 0));
        body
    };
    for tid in [4545u32, 4546] {
        let mut c = comm(4545, "lbr");
        c[4..8].copy_from_slice(&tid.to_le_bytes());
        let r = record(record_type::COMM, 0, &side(c, tid, 1));
        w.write_record(&r).unwrap();
    }
    let map = mmap2(4545, BASE, 0x4000, 5, "/usr/lib/pmx-faults/lbr");
    let r = record(record_type::MMAP2, misc::USER, &side(map, 4545, 2));
    w.write_record(&r).unwrap();
    const KBASE: u64 = 0xffff_ffff_8100_0000;
    if kernel {
        let mut k = mmap2(u32::MAX, KBASE, 0x100_0000, 5, "[kernel.kallsyms]_text");
        k[4..8].copy_from_slice(&0u32.to_le_bytes());
        let r = record(record_type::MMAP2, misc::KERNEL, &side(k, 0, 3));
        w.write_record(&r).unwrap();
    }
    // Function f<k> at BASE + k·0x100 calls f<k+1> from 0x40 into itself.
    let call = |k: u64, cycles: u16| BranchEntry {
        from: BASE + k * 0x100 + 0x40,
        to: BASE + (k + 1) * 0x100,
        flags: BranchFlags::new(false, false, false, false, cycles, 0, 0, 0, 0),
    };
    for n in 0..48u64 {
        let (tid, deep) = (4545 + (n % 2) as u32, 1 + n / 2 % 6);
        let ip = BASE + deep * 0x100 + 0x10 + n % 5;
        let in_kernel = kernel && n % 3 == 0;
        let kip = KBASE + 0x2000 + (n % 4) * 0x40;
        let mut body = Vec::new();
        let ids = 4545 | u64::from(tid) << 32;
        let sampled = if in_kernel { kip } else { ip };
        for v in [sampled, ids, 1000 + n, 0, period] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        let chain = match in_kernel {
            true => vec![callchain::CONTEXT_KERNEL, kip, KBASE + 0x100]
                .into_iter()
                .chain([callchain::CONTEXT_USER, ip])
                .collect(),
            false => vec![callchain::CONTEXT_USER, ip],
        };
        body.extend_from_slice(&(chain.len() as u64).to_le_bytes());
        for v in chain {
            body.extend_from_slice(&v.to_le_bytes());
        }
        // The newest four calls of the `deep` made, newest first; the
        // LBR's slots fill in call order, so the newest sits at deep - 1.
        let calls: Vec<BranchEntry> = (0..deep)
            .rev()
            .take(4)
            .map(|k| call(k, 3 + (k * n % 40) as u16))
            .collect();
        encode(&mut body, filter, Some((deep - 1) % 4), &calls, &[]);
        let mode = if in_kernel { misc::KERNEL } else { misc::USER };
        let r = record(record_type::SAMPLE, mode, &body);
        w.write_record(&r).unwrap();
    }
    let caps = pmx_perfdata::write::cpu_pmu_caps(&[("branches", "4"), ("pmu_name", "skylake")]);
    let out = w.finish_with(&Default::default(), &[caps]).unwrap();
    out.into_inner()
}

pub fn sources(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = recorded(dir);
    if let Some(shared) = pmx_testkit::shared::shared_data("perfdata") {
        for name in SHARED {
            if let Ok(b) = std::fs::read(shared.join(name)) {
                out.push((name.to_string(), b));
            }
        }
    }
    // Last, so that the other sources keep the seeds of earlier sessions.
    out.push((LBR.to_string(), lbr_call_stacks()));
    out
}

/// Every reader of the precise parts over one file; the first error that
/// is not "this file has none of it".
fn read_all(path: &Path, symfs: &Path) -> Result<(), String> {
    let mut sink = Vec::new();
    let keys = mem::keys::parse(mem::DEFAULT_SORT).unwrap();
    let mut m = mem::MemOptions::new(path.to_path_buf(), keys, mem::DEFAULT_SORT.into());
    m.symfs = Some(symfs.to_path_buf());
    match mem::mem_report(&m) {
        Ok(r) => mem::table::print(&mut sink, &r, Default::default()).unwrap(),
        Err(mem::MemError::NoMemData) => {}
        Err(e) => return Err(e.to_string()),
    }
    let c = c2c::C2cOptions {
        input: path.to_path_buf(),
        ..Default::default()
    };
    match c2c::c2c_report(&c) {
        Ok(r) => {
            c2c::print_stats(&mut sink, &r, Default::default()).unwrap();
            c2c::table::print_tables(&mut sink, &r, &Default::default()).unwrap();
        }
        Err(mem::MemError::NoMemData) => {}
        Err(e) => return Err(e.to_string()),
    }
    let b = pmx_profile::ReportOptions {
        symfs: Some(symfs.to_path_buf()),
        ..pmx_profile::ReportOptions::for_input(path)
    };
    match branch::report(&b, "", &mut |_, _| {}) {
        Ok(r) => branch::table::print(&mut sink, &r).unwrap(),
        Err(branch::BranchError::NoBranches(..)) => {}
        Err(e) => return Err(e.to_string()),
    }
    // `report --total-cycles`: the blocks by the LBR's cycles.
    match branch::blocks::report(&b, &mut |_, _| {}) {
        Ok(r) => {
            branch::blocks::write(&mut sink, &r, false).unwrap();
            branch::blocks::write(&mut sink, &r, true).unwrap();
        }
        Err(branch::BranchError::NoBranches(..)) => {}
        Err(e) => return Err(e.to_string()),
    }
    // `report -g --stitch-lbr`: the call graph with the stitched callers.
    let g = pmx_profile::ReportOptions {
        stacks: true,
        children: true,
        stitch_lbr: true,
        ..b
    };
    let r = pmx_profile::report(&g, &mut |_, _| {}).map_err(|e| e.to_string())?;
    pmx_profile::render::table(&mut sink, &r).unwrap();
    let mut s =
        pmx_profile::script::ScriptOptions::new(path.to_path_buf(), Vec::new(), false, true);
    s.symfs = Some(symfs.to_path_buf());
    (s.show_switch_events, s.show_namespace_events) = (true, true);
    s.stitch_lbr = true;
    pmx_profile::script::script(&s, &mut sink).map_err(|e| e.to_string())?;
    s.json = true;
    pmx_profile::script::script(&s, &mut sink).map_err(|e| e.to_string())?;
    Ok(())
}

#[test]
fn mutated_precise_records_give_a_result_or_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let srcs = sources(dir.path());
    if srcs.is_empty() {
        return;
    }
    let symfs: PathBuf = dir.path().join("symfs");
    std::fs::create_dir_all(&symfs).unwrap();
    // The intact file of LBR call stacks reads: its mutants are not all
    // refused for what the original already lacks.
    let lbr = put(dir.path(), "lbr.data", &lbr_call_stacks());
    read_all(&lbr, &symfs).unwrap();
    let mut t = Tally::new("precise perf.data → mem, c2c, branch, script");
    let base = base_seed();
    // After the others (session 22), which keep the seeds they had.
    let mut srcs = srcs;
    srcs.push((LBR_KERNEL.to_string(), lbr_call_stacks_kernel()));
    for (i, (name, bytes)) in srcs.iter().enumerate() {
        for k in 0..cases(6, 300) {
            let seed = base + (i * 1_000_000 + k) as u64;
            let m = mutate::perfdata(bytes, seed);
            let path = put(dir.path(), &format!("p{}.data", seed % 4), &m.bytes);
            let case = format!("{name} seed {seed} ({})", m.what);
            let shown = path.display().to_string();
            let sym = symfs.clone();
            t.tried += 1;
            t.mutant(seed, &path);
            match bounded(Duration::from_secs(30), move || read_all(&path, &sym)) {
                Outcome::Done(Ok(())) => t.accepted += 1,
                Outcome::Done(Err(msg)) => {
                    t.refused += 1;
                    if !msg.contains(&shown) {
                        t.unclear(&case, &msg);
                    }
                }
                Outcome::Panic(p) => t.panic(&case, &p),
                Outcome::Hang => t.hang(&case),
            }
        }
    }
    eprintln!(
        "sources: {}",
        (srcs.iter().map(|(n, b)| format!("{n} ({} bytes)", b.len())))
            .collect::<Vec<_>>()
            .join(", ")
    );
    t.finish();
}

/// Found by this category's seed 7 (a `record -d` file whose data
/// mapping's file offset became 0xfffffffffffffff8): the memory report
/// added the offset to the address's place in the mapping and overflowed
/// (a panic in a debug build, a wrong number in a release one). perf
/// computes it modulo 2^64; so does pmx now.
#[test]
fn a_data_mapping_at_the_top_file_offset_is_no_overflow() {
    use pmx_perfdata::format::{record_type, sample_type};
    use pmx_testkit::perfdata::{attr, memory_writer, mmap2, record};
    let st = sample_type::IP
        | sample_type::TID
        | sample_type::TIME
        | sample_type::ADDR
        | sample_type::WEIGHT
        | sample_type::DATA_SRC;
    let mut w = memory_writer(attr(128, 1, st, 0));
    let mut map = mmap2(7, 0x7f00_0000, 0x1_0000, 3, "/tmp/pmx-faults-data.bin");
    map[24..32].copy_from_slice(&0xffff_ffff_ffff_fff8u64.to_le_bytes());
    // PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_DATA.
    w.write_record(&record(record_type::MMAP2, 2 | 0x2000, &map))
        .unwrap();
    let mut b = Vec::new();
    for x in [0x401000u64, 7 | 7 << 32, 1000, 0x7f00_0040, 30, 0x68100142] {
        b.extend_from_slice(&x.to_le_bytes());
    }
    w.write_record(&record(record_type::SAMPLE, 2, &b)).unwrap();
    let bytes = w.finish(&Default::default()).unwrap().into_inner();
    let dir = tempfile::tempdir().unwrap();
    let path = put(dir.path(), "top-offset.data", &bytes);
    let keys = mem::keys::parse(mem::DEFAULT_SORT).unwrap();
    let m = mem::MemOptions::new(path.clone(), keys, mem::DEFAULT_SORT.into());
    let r = mem::mem_report(&m).unwrap();
    let mut out = Vec::new();
    mem::table::print(&mut out, &r, Default::default()).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("pmx-faults-data.bin"), "{text}");
}
