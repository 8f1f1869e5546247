//! Fault campaign, perf.data (issue 22, item 3): mutants of pmx's and
//! perf's recordings (bit flips, truncation, zeroed ranges, extreme values
//! in the header's and the records' size fields, records duplicated and
//! swapped) through `pmx_profile::report` and its renderers (and the
//! branch report, `pmx_precise::branch`, of files with branch stacks). Expected of
//! every case: no panic, no hang (a time bound per case), and either a
//! report or an error that names the file. Since session 23 each profile
//! is built again with two jobs (`report --jobs 2`: the mapped data
//! section shared with a counting thread, its pages read ahead) and the
//! full cases run `script` with one job and two: the same result, else
//! the case counts as data lost.
//!
//! `cargo test` runs a few hundred mutants; `PMX_FAULTS_LONG=1`
//! (bench/faults.sh) thousands. A failure prints the source and the seed:
//! `pmx_testkit::mutate::perfdata(&original, seed)` gives the same bytes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::faults_support::*;
use pmx_perfdata::Reader;
use pmx_profile::{build, report, KernelSymbols, MachineId, Options, ReportOptions, SortKey};
use pmx_symbols::kernel::Kallsyms;
use pmx_testkit::mutate;
use std::collections::BTreeSet;
use std::sync::Arc;

fn options(input: &Path, symfs: &Path) -> ReportOptions {
    ReportOptions {
        stacks: true,
        children: true,
        // Binaries are looked up in an empty directory: the campaign is
        // about the file, and each case stays fast.
        symfs: Some(symfs.to_path_buf()),
        ..ReportOptions::for_input(input)
    }
}

/// The recordings to mutate: one by pmx, one by the installed perf, and
/// the shared reference files (perf's, from other projects' test suites).
fn sources(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let pmx_file = dir.join("pmx.data");
    let st = Command::new(PMX)
        .args(["record", "-e", "cpu-clock", "-F", "2000", "-g", "-o"])
        .arg(&pmx_file)
        .args(["--", WORKLOAD, "spin", "0.2"])
        .output()
        .unwrap();
    match std::fs::read(&pmx_file) {
        Ok(b) => out.push(("pmx record".to_string(), b)),
        Err(_) => pmx_testkit::skip(format_args!(
            "pmx's recording: pmx record failed here: {}",
            pmx_testkit::text(&st.stderr)
        )),
    }
    let perf_file = dir.join("perf.data");
    let perf = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-F", "2000", "-g", "-o"])
        .arg(&perf_file)
        .args(["--", WORKLOAD, "spin", "0.2"])
        .output();
    match (perf, std::fs::read(&perf_file)) {
        (Ok(_), Ok(b)) => out.push(("perf record".to_string(), b)),
        _ => pmx_testkit::skip("perf's own recording: perf is not installed or failed"),
    }
    if let Some(shared) = pmx_testkit::shared::shared_data("perfdata") {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&shared)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        for f in files {
            let b = std::fs::read(&f).unwrap();
            // The 1.2 MB file costs a second a case in a debug build.
            if b.len() <= 300_000 {
                out.push((f.file_name().unwrap().to_string_lossy().into_owned(), b));
            }
        }
    }
    out
}

/// The bulk of the cases: the reader and the profile builder that
/// `report` runs, with this machine's kernel symbols parsed once (parsing
/// /proc/kallsyms takes a second in a debug build); the error is the
/// reader's, which `report` prefixes with the file. The profile built by
/// `jobs` counting threads (0: one), as text (a kernel row's example
/// address, shown nowhere, left out: any address its symbol merged).
fn build_case(path: &Path, symfs: &Path, ks: &Kallsyms, jobs: usize) -> Result<String, String> {
    let mut reader = Reader::open(path).map_err(|e| e.to_string())?;
    let opts = Options {
        sort: vec![SortKey::Comm, SortKey::Dso, SortKey::Symbol],
        stacks: true,
        binary_stacks: true,
        children: true,
        lines: false,
        inline: false,
        kallsyms: KernelSymbols::Given(ks.clone()),
        this_machine: MachineId::current(),
        root: Some(symfs.to_path_buf()),
        tids: None,
        symbols: Default::default(),
        jobs,
        stitch_lbr: false,
    };
    let mut p = build(&mut reader, &opts, &mut |_, _| {}).map_err(|e| e.to_string())?;
    for e in &mut p.events {
        (e.rows.iter_mut().filter(|r| r.kernel)).for_each(|r| r.example = (0, 0));
    }
    Ok(format!("{p:?}"))
}

/// [`build_case`] with one job, then (session 23) with two, `report
/// --jobs 2`'s pipeline (the mapped data section shared with a counting
/// thread, its pages read ahead): the same profile, or the same error.
/// `Ok(Some(what))`: the two differ.
fn build_cases(path: &Path, symfs: &Path, ks: &Kallsyms) -> Result<Option<String>, String> {
    let one = build_case(path, symfs, ks, 0)?;
    Ok(match build_case(path, symfs, ks, 2) {
        Ok(two) if two == one => None,
        Ok(_) => Some("--jobs 2 built another profile than one job".into()),
        Err(e) => Some(format!("--jobs 2 refused what one job read: {e}")),
    })
}

/// Every `report_every`th case goes through `pmx_profile::report` itself
/// and the renderers, then `script`: its error must name the file.
/// `Ok(Some(what))`: `script` with two jobs differs from one.
fn report_case(path: &Path, symfs: &Path) -> Result<Option<String>, String> {
    let r = report(&options(path, symfs), &mut |_, _| {}).map_err(|e| e.to_string())?;
    let mut sink = Vec::new();
    pmx_profile::render::table(&mut sink, &r).unwrap();
    let _ = pmx_profile::render::json(&r).to_string();
    // The branch report too (`report -b`), for files with branch stacks.
    use pmx_precise::branch::{self, BranchError};
    match branch::report(&options(path, symfs), "", &mut |_, _| {}) {
        Ok(b) => {
            branch::table::print(&mut sink, &b).unwrap();
            let _ = branch::table::json(&b).to_string();
        }
        Err(BranchError::NoBranches(..)) => {}
        Err(e) => return Err(e.to_string()),
    }
    script_jobs(path, symfs)
}

/// `script` (perf's fields, call chains: the chains' text cached per
/// stack) with one job, then (session 23) with two: the same lines, or
/// the same error.
fn script_jobs(path: &Path, symfs: &Path) -> Result<Option<String>, String> {
    let run = |jobs| {
        let mut s = pmx_profile::script::ScriptOptions::new(path.into(), vec![], false, true);
        (s.symfs, s.jobs) = (Some(symfs.to_path_buf()), jobs);
        let mut out = Vec::new();
        pmx_profile::script::script(&s, &mut out).map(|_| out)
    };
    let one = run(1).map_err(|e| e.to_string())?;
    Ok(match run(2) {
        Ok(two) if two == one => None,
        Ok(_) => Some("script --jobs 2 printed other lines than one job".into()),
        Err(e) => Some(format!("script --jobs 2 refused what one job read: {e}")),
    })
}

struct Case<'a> {
    dir: &'a Path,
    name: &'a str,
    original: &'a [u8],
    seed: u64,
    full: bool,
}

fn check_case(t: &mut Tally, c: Case, ks: &Arc<Kallsyms>, errors: &mut BTreeSet<String>) {
    let m = mutate::perfdata(c.original, c.seed);
    let path = put(c.dir, &format!("m{}.data", c.seed % 4), &m.bytes);
    let case = format!("{} seed {} ({})", c.name, c.seed, m.what);
    let shown = path.display().to_string();
    let (symfs, ks, full) = (c.dir.to_path_buf(), Arc::clone(ks), c.full);
    t.tried += 1;
    t.mutant(c.seed, &path);
    let outcome = bounded(Duration::from_secs(30), move || {
        if full {
            report_case(&path, &symfs)
        } else {
            build_cases(&path, &symfs, &ks)
        }
    });
    match outcome {
        Outcome::Done(Ok(None)) => t.accepted += 1,
        Outcome::Done(Ok(Some(what))) => {
            t.accepted += 1;
            t.lost(&case, &what);
        }
        Outcome::Done(Err(msg)) => {
            t.refused += 1;
            // An error must say what is wrong (and, from `report`, where).
            let clear = msg.len() > 10 && (!full || msg.contains(&shown));
            if !clear {
                t.unclear(&case, &msg);
            }
            errors.insert(msg.replace(&shown, "FILE"));
        }
        Outcome::Panic(p) => t.panic(&case, &p),
        Outcome::Hang => t.hang(&case),
    }
}

fn campaign(per_source: usize, report_every: usize) {
    let dir = tempfile::tempdir().unwrap();
    let srcs = sources(dir.path());
    assert!(!srcs.is_empty(), "no recording to mutate");
    let ks = Arc::new(Kallsyms::load());
    let mut t = Tally::new("perf.data → report");
    let mut errors = BTreeSet::new();
    let base = base_seed();
    for (i, (name, bytes)) in srcs.iter().enumerate() {
        for k in 0..per_source {
            let case = Case {
                dir: dir.path(),
                name,
                original: bytes,
                seed: base + (i * 1_000_000 + k) as u64,
                full: (i * per_source + k).is_multiple_of(report_every),
            };
            check_case(&mut t, case, &ks, &mut errors);
        }
    }
    eprintln!(
        "sources: {}",
        srcs.iter()
            .map(|(n, b)| format!("{n} ({} bytes)", b.len()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    eprintln!("{} distinct errors, e.g.:", errors.len());
    for e in errors.iter().step_by((errors.len() / 12).max(1)) {
        eprintln!("  {e}");
    }
    t.finish();
}

#[test]
fn mutated_perf_data_gives_a_report_or_an_error_naming_the_file() {
    campaign(cases(25, 400), cases(1_000_000, 25));
}

/// Found by the long campaign's seed 5 (issue 45): a mutant of the shared
/// `branch-4.14` recording (seed 5004000066: a word of an MMAP record
/// became 0xffffffffffffffff, a file offset near 2^64) whose mapping was
/// then split by a later one: the split's file offset was added without
/// wrapping and overflowed (a panic with overflow checks, a wrong offset
/// without). Computed modulo 2^64 now, as the other offsets of the maps.
#[test]
fn a_split_mapping_at_the_top_file_offset_is_no_overflow() {
    let Some(shared) = pmx_testkit::shared::shared_data("perfdata") else {
        return;
    };
    let original =
        std::fs::read(shared.join("perf_data_converter__perf.data.branch-4.14")).unwrap();
    let m = mutate::perfdata(&original, 5_004_000_066);
    let dir = tempfile::tempdir().unwrap();
    let path = put(dir.path(), "split.data", &m.bytes);
    let ks = Kallsyms::load();
    // A report or a refusal: either, but no panic.
    let _ = build_cases(&path, dir.path(), &ks);
}
