//! Fault campaign, the precise records through the views that print them
//! (issue 45, item 3): the mutants of `faults_precise`'s sources (branch
//! stacks, LBR call stacks, PEBS weights and data sources, off-CPU
//! samples, tracepoint data, switch and namespace records), and the
//! shared recording with call chains and branch stacks together
//! (`callgraph_and_branch-3.8`), and (session 22) LBR call stacks with
//! kernel parts written here,
//! through `report -g` (call graphs, children, with the branch-stack
//! rows of `report --branch-stack` when the file has them; stitched,
//! `--stitch-lbr`, when it has LBR call stacks), `report
//! --branch-history` (callee order as `-g fractal`, `flat`, `folded`,
//! `graph,2`, caller order with and without children, each `--json`
//! too), `script -F
//! +brstack,+brstacksym,+addr,+data_src,+weight,+trace` (text and JSON)
//! and, on a file with branch stacks, `script -F
//! +brstackinsn,+brstackinsnlen,+brstackoff,+brcntr`; on a file with
//! memory samples, `report --sort type,typeoff` and `annotate --json`'s
//! memory columns (both with the binaries where the recording says, so
//! pmx's own `record -d` file reads the workload's code and DWARF).
//! Expected of every case: no panic, no hang, and a result or an error
//! that names the file. A field asked of `script` that the mutant's
//! attr no longer carries is refused as perf refuses it ("samples of 'E'
//! do not have the ADDR attribute set"): that error names the event.
//!
//! `cargo test` runs two cases per source; `PMX_FAULTS_LONG=1`
//! (bench/faults.sh) 150. A failure prints the source and the seed:
//! `pmx_testkit::mutate::perfdata(&original, seed)` gives the same bytes.

use std::path::Path;
use std::time::Duration;

use crate::faults_support::*;
use pmx_perfdata::format::{branch_sample_type, sample_type};
use pmx_perfdata::Reader;
use pmx_testkit::mutate;

/// The `-F` specs for a source, one `script` run each: the fields that
/// print what the precise records carry; the data ones only when every
/// event of the original has them (perf refuses a field an event's
/// samples lack); the branch fields read from the binaries (and
/// `brcntr`) only when every event has branch stacks of every taken
/// branch.
fn fields_of(original: &Path) -> Vec<String> {
    let mut f = vec!["+brstack", "+brstacksym", "+trace"];
    let events = Reader::open(original)
        .map(|r| r.events().to_vec())
        .unwrap_or_default();
    let all =
        |bits: u64| !events.is_empty() && events.iter().all(|e| e.attr.sample_type & bits != 0);
    if all(sample_type::ADDR) {
        f.push("+addr");
    }
    if all(sample_type::DATA_SRC) {
        f.push("+data_src");
    }
    if all(sample_type::WEIGHT | sample_type::WEIGHT_STRUCT) {
        f.push("+weight");
    }
    let mut specs = vec![f.join(",")];
    // The instructions between branches need every taken branch: perf
    // and pmx refuse them of stacks recorded with a filter (an LBR call
    // stack), whatever the damage.
    let any = (events.iter()).all(|e| e.attr.branch_sample_type & branch_sample_type::ANY != 0);
    if all(sample_type::BRANCH_STACK) && any {
        specs.push("+brstackinsn,+brstackinsnlen,+brstackoff,+brcntr".into());
    }
    specs
}

/// Found by this category's seed 4 (session 20), on the LBR call stacks
/// written here: `-F +brstackinsn` was asked of a file whose stacks were
/// recorded with a filter (`CALL_STACK`), which pmx refuses as perf does,
/// and every mutant counted as an unclear error. The intact file is
/// asked the fields it can print, and prints them.
#[test]
fn the_fields_asked_are_those_the_intact_file_prints() {
    let dir = tempfile::tempdir().unwrap();
    let original = put(
        dir.path(),
        "lbr.data",
        &crate::faults_precise::lbr_call_stacks(),
    );
    let fields = fields_of(&original);
    assert!(
        fields.iter().all(|f| !f.contains("brstackinsn")),
        "{fields:?}"
    );
    let symfs = dir.path().join("symfs");
    std::fs::create_dir_all(&symfs).unwrap();
    view_all(&original, &symfs, &fields).unwrap();
}

/// Found by this category's seed 9 (session 21): `branch-4.14` seed
/// 9053000146 (its attr's `branch_sample_type` made 1, user branches
/// only) was asked `-F +brstackinsn` as its original is, and pmx refused
/// it as perf does ("brstackinsn needs every taken branch …"): a refusal
/// by the mutant's attrs, like a data field its sample_type lost, and no
/// unclear error.
#[test]
fn a_branch_filter_the_mutant_changed_is_a_refusal_by_its_attrs() {
    let Some(shared) = pmx_testkit::shared::shared_data("perfdata") else {
        return;
    };
    let original = std::fs::read(shared.join("perf_data_converter__perf.data.branch-4.14"))
        .expect("branch-4.14 among the shared recordings");
    let dir = tempfile::tempdir().unwrap();
    let fields = fields_of(&put(dir.path(), "original.data", &original));
    assert!(
        fields.iter().any(|f| f.contains("brstackinsn")),
        "{fields:?}"
    );
    let m = mutate::perfdata(&original, 9_053_000_146);
    let path = put(dir.path(), "v.data", &m.bytes);
    let symfs = dir.path().join("symfs");
    std::fs::create_dir_all(&symfs).unwrap();
    view_all(&path, &symfs, &fields).unwrap();
}

/// `report --sort type,typeoff` and `annotate --json` (every sampled
/// function, with its memory columns) over a file with memory samples.
fn view_memory(path: &Path) -> Result<(), String> {
    use pmx_precise::mem::{self, MemError};
    let keys = mem::keys::parse("type,typeoff").unwrap();
    let m = mem::MemOptions::new(path.to_path_buf(), keys, "type,typeoff".into());
    match mem::mem_report(&m) {
        Ok(r) => mem::table::print(&mut Vec::new(), &r, Default::default()).unwrap(),
        Err(MemError::NoMemData) => return Ok(()),
        Err(e) => return Err(e.to_string()),
    }
    let a = pmx_profile::annotate::AnnotateOptions {
        input: path.to_path_buf(),
        ..Default::default()
    };
    let all = pmx_profile::annotate_all(&a, &mut |_, _| {}).map_err(|e| e.to_string())?;
    for (_, one) in all {
        // A function whose code cannot be read is a warning of its own.
        if let Ok(one) = one {
            let _ = pmx_profile::annotate::render::json(&one).to_string();
        }
    }
    Ok(())
}

/// `report --branch-history` over a file with branch stacks, as the CLI
/// asks it (`pmx_precise::branch::tables`): callee order drawn as
/// `-g fractal`, `flat`, `folded` and `graph,2` with `--json`, caller
/// order as `-g caller` (perf's default with children) and without
/// children (`--no-children`).
fn view_history(opts: &pmx_profile::ReportOptions, sink: &mut Vec<u8>) -> Result<(), String> {
    use pmx_precise::branch::{self, BranchError, Table, Tables};
    use pmx_profile::perf_text::graph::{Graph, GraphMode};
    let g = |mode, caller, threshold| Graph {
        mode,
        caller: Some(caller),
        threshold,
        ..Graph::default()
    };
    let callee = [
        g(GraphMode::Fractal, false, 0.5),
        g(GraphMode::Flat, false, 0.5),
        g(GraphMode::Folded, false, 0.5),
        g(GraphMode::Graph, false, 2.0),
    ];
    let runs: [(&[Graph], bool); 3] = [
        (&callee, true),
        (&[g(GraphMode::Graph, true, 0.5)], true),
        (&[g(GraphMode::Graph, true, 0.5)], false),
    ];
    for (graphs, children) in runs {
        let table = Table::of(false, Some(graphs[0]), children);
        match branch::tables(opts, "", table, &mut |_, _| {}) {
            Ok(Tables::History(r, _)) => {
                for g in graphs {
                    r.write(sink, g).map_err(|e| e.to_string())?;
                }
                r.write_json(sink).map_err(|e| e.to_string())?;
            }
            Ok(_) => return Err("--branch-history made another table".into()),
            Err(BranchError::NoBranches(..)) => return Ok(()),
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

/// `report -g` (and `--branch-stack`, `--branch-history`) and `script
/// -F` over one file.
fn view_all(path: &Path, symfs: &Path, fields: &[String]) -> Result<(), String> {
    let mut sink = Vec::new();
    let opts = pmx_profile::ReportOptions {
        stacks: true,
        graphs: true,
        children: true,
        symfs: Some(symfs.to_path_buf()),
        ..pmx_profile::ReportOptions::for_input(path)
    };
    let r = pmx_profile::report(&opts, &mut |_, _| {}).map_err(|e| e.to_string())?;
    pmx_profile::render::table(&mut sink, &r).unwrap();
    let _ = pmx_profile::render::json(&r).to_string();
    use pmx_precise::branch::{self, BranchError};
    match branch::report(&opts, "", &mut |_, _| {}) {
        Ok(b) => {
            branch::table::print(&mut sink, &b).unwrap();
            let _ = branch::table::json(&b).to_string();
        }
        Err(BranchError::NoBranches(..)) => {}
        Err(e) => return Err(e.to_string()),
    }
    view_history(&opts, &mut sink)?;
    // `report -g --stitch-lbr` (kernel parts kept before the stitched
    // user ones) where the mutant still has LBR call stacks.
    let lbr = |r: Reader| {
        (r.events().iter()).any(|e| e.attr.branch_sample_type & branch_sample_type::CALL_STACK != 0)
    };
    if Reader::open(path).is_ok_and(lbr) {
        let stitched = pmx_profile::ReportOptions {
            stitch_lbr: true,
            ..opts
        };
        let r = pmx_profile::report(&stitched, &mut |_, _| {}).map_err(|e| e.to_string())?;
        pmx_profile::render::table(&mut sink, &r).unwrap();
        let _ = pmx_profile::render::json(&r).to_string();
    }
    for spec in fields {
        let (path, spec) = (path.to_path_buf(), vec![spec.clone()]);
        let mut s = pmx_profile::script::ScriptOptions::new(path, spec, false, true);
        s.symfs = Some(symfs.to_path_buf());
        for json in [false, true] {
            s.json = json;
            match pmx_profile::script::script(&s, &mut sink) {
                Ok(_) => {}
                // A field the mutant's attrs no longer allow, refused as
                // perf refuses it: the data fields of an event whose
                // sample_type lost them, the instructions of a file whose
                // branch_sample_type lost ANY (views seed 9).
                Err(pmx_profile::script::ScriptError::Fields(m))
                    if m.starts_with("samples of '")
                        || m.starts_with("brstackinsn needs every taken branch") => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    view_memory(path)
}

#[test]
fn mutated_precise_records_print_or_give_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut srcs = crate::faults_precise::sources(dir.path());
    // Its last source, the LBR call stacks written here, stays last, so
    // that the others keep the seeds of earlier sessions.
    let lbr = srcs.pop();
    if let Some(shared) = pmx_testkit::shared::shared_data("perfdata") {
        let name = "perf_data_converter__perf.data.callgraph_and_branch-3.8";
        if let Ok(b) = std::fs::read(shared.join(name)) {
            srcs.push((name.to_string(), b));
        }
    }
    srcs.extend(lbr);
    // After the others (session 22), which keep the seeds they had.
    let kernel = crate::faults_precise::lbr_call_stacks_kernel();
    srcs.push((crate::faults_precise::LBR_KERNEL.to_string(), kernel));
    if srcs.is_empty() {
        return;
    }
    let symfs = dir.path().join("symfs");
    std::fs::create_dir_all(&symfs).unwrap();
    let mut t = Tally::new("precise perf.data → report -g/-b, script -F");
    let base = base_seed();
    for (i, (name, bytes)) in srcs.iter().enumerate() {
        let fields = fields_of(&put(dir.path(), "original.data", bytes));
        for k in 0..cases(2, 150) {
            // Seeds of their own: faults_precise's sources are 0–6 here too.
            let seed = base + ((i + 50) * 1_000_000 + k) as u64;
            let m = mutate::perfdata(bytes, seed);
            let path = put(dir.path(), &format!("v{}.data", seed % 4), &m.bytes);
            let case = format!("{name} seed {seed} ({})", m.what);
            let shown = path.display().to_string();
            let (sym, f) = (symfs.clone(), fields.clone());
            t.tried += 1;
            t.mutant(seed, &path);
            match bounded(Duration::from_secs(30), move || view_all(&path, &sym, &f)) {
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
        // Where a long run is (a seed takes an hour or more), and
        // whether it has failed so far.
        let failed = t.panics + t.hangs + t.unclear + t.lost;
        let secs = t.started.map_or(0, |s| s.elapsed().as_secs());
        eprintln!(
            "views: source {i} ({name}) done, {} cases, {failed} failed, {secs} s",
            t.tried
        );
    }
    eprintln!(
        "sources: {}",
        (srcs.iter().map(|(n, b)| format!("{n} ({} bytes)", b.len())))
            .collect::<Vec<_>>()
            .join(", ")
    );
    t.finish();
}

/// The views added in session 22 reach what they are for on the intact
/// files: `--branch-history`'s chains of a file with call chains (the
/// shared `callgraph_and_branch-3.8` and the LBR call stacks with kernel
/// parts written here: frames noted `(calltrace)`, every graph and the
/// JSON written), and the stitched `-g` of the latter keeps its kernel
/// part (`[kernel.kallsyms]`).
#[test]
fn the_history_and_stitch_views_reach_files_with_call_chains() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = vec![(
        "lbr-kernel",
        crate::faults_precise::lbr_call_stacks_kernel(),
    )];
    match pmx_testkit::shared::shared_data("perfdata") {
        Some(shared) => {
            let name = "perf_data_converter__perf.data.callgraph_and_branch-3.8";
            files.push(("callgraph", std::fs::read(shared.join(name)).unwrap()));
        }
        None => pmx_testkit::skip("callgraph_and_branch-3.8: ../shared is absent"),
    }
    for (name, bytes) in files {
        let path = put(dir.path(), &format!("{name}.data"), &bytes);
        let opts = pmx_profile::ReportOptions::for_input(&path);
        let mut out = Vec::new();
        view_history(&opts, &mut out).unwrap();
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains(" (calltrace)"), "{name}: {text}");
        // Four callee graphs and caller twice, each with its JSON.
        assert_eq!(text.matches("\"events\"").count(), 3, "{name}");
        let symfs = dir.path().join("symfs");
        std::fs::create_dir_all(&symfs).unwrap();
        view_all(&path, &symfs, &fields_of(&path)).unwrap();
    }
    let path = put(
        dir.path(),
        "k.data",
        &crate::faults_precise::lbr_call_stacks_kernel(),
    );
    let opts = pmx_profile::ReportOptions {
        stacks: true,
        children: true,
        stitch_lbr: true,
        ..pmx_profile::ReportOptions::for_input(&path)
    };
    let r = pmx_profile::report(&opts, &mut |_, _| {}).unwrap();
    let json = pmx_profile::render::json(&r).to_string();
    assert!(json.contains("kernel.kallsyms"), "{json}");
}

/// Found by this category's seed 28 (session 22): a `record -d` file
/// whose sample's period became 2⁶⁴−1 (seed 28050000131) made
/// `--branch-history`'s event total overflow, a panic with overflow
/// checks; its rows, merged JSON chains and the graph's nodes summed the
/// same way. They saturate now, as the other reports' totals: every
/// sample here has a period of 2⁶⁴−1, through every view of the history.
#[test]
fn a_period_of_2_64_is_no_overflow_in_the_branch_history() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = crate::faults_precise::lbr_file(true, u64::MAX);
    let path = put(dir.path(), "huge.data", &bytes);
    let mut out = Vec::new();
    view_history(&pmx_profile::ReportOptions::for_input(&path), &mut out).unwrap();
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("\"period\": 18446744073709551615"), "{text}");
}
