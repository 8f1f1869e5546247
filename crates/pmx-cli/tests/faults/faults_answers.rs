//! Fault campaign, the DWARF answers kept across runs (session 24;
//! `pmx-symbols/src/elf/answers.rs`: `$XDG_CACHE_HOME/pmx/symbols/
//! BUILDID.dwarf`, the source lines and inline chains a report looked
//! up, read at the next report of the same build). The two-unit program
//! of the DWARF lines category (`faults_types.rs`, [`line_sources`]),
//! recorded with `--call-graph dwarf`, is reported twice with an empty
//! cache directory: `pmx report --stdio -g --inline` (inline chains) and
//! `pmx report --json -g --inline --lines` (chains and each row's
//! source line); then both with one directory, which keeps the answers
//! of the program and of the C library (`libc6-dbg`'s inline frames).
//! Each kept file is mutated ([`pmx_testkit::answers::mutate`]: kinds,
//! addresses, lengths, strings, entries doubled, swapped, removed or cut,
//! the header's words, bits, cuts; then mostly the count, length and
//! checksum written anew, so that the parser behind the checksum is
//! reached) and both reports run again with it in place of the intact
//! one.
//!
//! Expected of every case (one run of `pmx`): no panic, no hang, exit 0
//! (a cache is never a reason to refuse a report), and
//! - a mutant that is not a well-formed file for this build
//!   ([`pmx_testkit::answers::well_formed`]: header, every length, the
//!   order, the checksum) is ignored: the report is the one printed
//!   with no cache, byte for byte, and the file is written again whole
//!   (as that report writes it from nothing). A difference counts as
//!   data lost: a damaged cache changed the answer, or stayed.
//! - a well-formed one (a checksum recomputed over names changed, an
//!   entry removed…) is what the cache says, and the report may show it
//!   (the checksum guards against damage, not a forged file: the
//!   reader's unit test answers from one): every sample must still be
//!   there (the `# Samples` and `# Event count` lines; the JSON's event
//!   periods and the sum of its rows' self periods).
//!
//! `cargo test` runs 2 mutants per kept file; `PMX_FAULTS_LONG=1`
//! (bench/faults.sh) 100. A failure prints the file and the seed, and
//! keeps the mutant (`target/tmp/faults-kept/SEED.data`); `cargo run -p
//! pmx-testkit --example mutant -- answers FILE SEED OUT` writes it again
//! from an intact file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::faults_support::*;
use crate::faults_types::line_sources;
use pmx_testkit::answers;

/// The two reports: inline chains in perf's call-graph text; source
/// lines (and chains) in the JSON.
const REPORTS: [&[&str]; 2] = [
    &["--stdio", "-g", "--inline"],
    &["--json", "-g", "--inline", "--lines"],
];

/// `pmx report ARGS -i DATA` with `cache` as its XDG cache directory.
fn report(args: &[&str], data: &Path, cache: &Path) -> Option<Run> {
    let mut c = Command::new(PMX);
    c.arg("report").args(args).arg("-i").arg(data);
    c.env("XDG_CACHE_HOME", cache);
    run_bounded(&mut c, Duration::from_secs(30))
}

/// The kept answers files under `cache` by name.
fn kept(cache: &Path) -> BTreeMap<String, Vec<u8>> {
    let dir = cache.join("pmx/symbols");
    let Ok(list) = std::fs::read_dir(&dir) else {
        return BTreeMap::new();
    };
    (list.flatten())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            if !name.ends_with(".dwarf") {
                return None;
            }
            Some((name, std::fs::read(e.path()).ok()?))
        })
        .collect()
}

/// A successful run's output (the test's own setup: it must work).
fn output(args: &[&str], data: &Path, cache: &Path) -> String {
    let r = report(args, data, cache).expect("the intact report hung");
    assert!(r.status.success(), "pmx report {args:?}: {}", r.stderr);
    r.stdout
}

/// What every sample gives, whatever the answers: perf's sample and
/// event-count lines, or each JSON event's name, period and the sum of
/// its rows' self periods.
fn totals(out: &str) -> Vec<String> {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(out) {
        let events = v["events"].as_array().cloned().unwrap_or_default();
        return (events.iter())
            .map(|e| {
                let rows = e["rows"].as_array().cloned().unwrap_or_default();
                let own: u64 = rows.iter().filter_map(|r| r["period"].as_u64()).sum();
                format!("{} {} {own}", e["name"], e["period"])
            })
            .collect();
    }
    (out.lines())
        .filter(|l| l.starts_with("# Samples") || l.starts_with("# Event count"))
        .map(str::to_string)
        .collect()
}

/// The first line where `got` and `want` differ.
fn first_difference(got: &str, want: &str) -> String {
    let (mut g, mut w) = (got.lines(), want.lines());
    for n in 1.. {
        match (g.next(), w.next()) {
            (None, None) => break,
            (a, b) if a == b => {}
            (a, b) => return format!("line {n}: {a:?}, without a cache {b:?}"),
        }
    }
    "the same lines".into()
}

/// One source's recording, what each report prints and keeps with no
/// cache, and the answers kept by both.
struct Baseline {
    data: PathBuf,
    /// Per report: its output and the answers files it writes from nothing.
    plain: Vec<(String, BTreeMap<String, Vec<u8>>)>,
    /// The cache directory both reports filled.
    full_dir: PathBuf,
    full: BTreeMap<String, Vec<u8>>,
}

fn baseline(dir: &Path, name: &str, data: &Path) -> Baseline {
    let plain = (REPORTS.iter().enumerate())
        .map(|(i, args)| {
            let empty = dir.join(format!("{name}-empty-{i}"));
            let out = output(args, data, &empty);
            (out, kept(&empty))
        })
        .collect::<Vec<_>>();
    let full_dir = dir.join(format!("{name}-full"));
    for args in REPORTS {
        output(args, data, &full_dir);
    }
    let full = kept(&full_dir);
    // Answered from the kept files, the reports are the same and the
    // files stay as they are.
    for (args, (out, _)) in REPORTS.iter().zip(&plain) {
        let again = output(args, data, &full_dir);
        assert_eq!(
            again,
            *out,
            "{name}: {args:?} from the kept answers: {}",
            first_difference(&again, out)
        );
    }
    assert_eq!(kept(&full_dir), full, "{name}: the kept answers rewritten");
    Baseline {
        data: data.to_path_buf(),
        plain,
        full_dir,
        full,
    }
}

/// Whether a kept file holds a known source line and an inline chain of
/// two frames or more (the reach of the campaign: both kinds are read).
fn holds_lines_and_chains(bytes: &[u8]) -> (bool, bool) {
    let Some(p) = answers::parse(bytes) else {
        return (false, false);
    };
    let line = p.entries.iter().any(|e| e[8] == 0 && e[9] == 1);
    let chain = (p.entries.iter())
        .any(|e| e[8] > 0 && u32::from_le_bytes(e[9..13].try_into().unwrap()) >= 2);
    (line, chain)
}

/// Judge one run of a report with a mutant in place.
fn judge(
    t: &mut Tally,
    case: &str,
    run: Option<Run>,
    forged: bool,
    want: &str,
    written: Option<&Vec<u8>>,
    after: Option<Vec<u8>>,
) {
    let r = match run {
        None => return t.hang(case),
        Some(r) if r.panicked() || r.crashed() => return t.panic(case, &r.stderr),
        Some(r) if !r.status.success() => {
            let what = format!("{}: {}", r.status, r.stderr);
            return t.lost(
                case,
                &format!("the report refused because of its cache: {what}"),
            );
        }
        Some(r) => r,
    };
    t.accepted += 1;
    if forged {
        if totals(&r.stdout) != totals(want) {
            let got = format!(
                "{:?}, without a cache {:?}",
                totals(&r.stdout),
                totals(want)
            );
            t.lost(case, &format!("samples changed: {got}"));
        }
        return;
    }
    if r.stdout != want {
        let at = first_difference(&r.stdout, want);
        t.lost(case, &format!("a damaged cache changed the report: {at}"));
    } else if written.is_some() && after.as_ref() != written {
        let had = after.map_or("no file".into(), |a| format!("{} bytes", a.len()));
        t.lost(
            case,
            &format!("the damaged answers were not written again whole ({had})"),
        );
    }
}

#[test]
fn damaged_dwarf_answers_give_the_report_without_a_cache() {
    let dir = tempfile::tempdir().unwrap();
    let srcs = line_sources(dir.path());
    if srcs.is_empty() {
        return;
    }
    let mut t = Tally::new("damaged DWARF answers cache → report -g --inline, --json --lines");
    let base = base_seed();
    let (mut forged, mut mutants) = (0, 0);
    // Each kept file: the program's first, then the others by name, so
    // that a file's seeds stay the same from run to run.
    let mut files = Vec::new();
    for s in &srcs {
        let b = baseline(dir.path(), &s.name, &s.data);
        let id = pmx_symbols::buildid_cache::build_id_of(&s.bin).expect("a build id");
        let own: String = id.iter().map(|x| format!("{x:02x}")).collect();
        let own = format!("{own}.dwarf");
        let (line, chain) =
            holds_lines_and_chains(b.full.get(&own).expect("the program's answers kept"));
        assert!(
            line && chain,
            "{}: kept answers without lines ({line}) or chains ({chain})",
            s.name
        );
        let mut names: Vec<String> = b.full.keys().cloned().collect();
        names.sort_by_key(|n| (*n != own, n.clone()));
        let b = std::rc::Rc::new(b);
        files.extend(
            names
                .into_iter()
                .map(|n| (s.name.clone(), n, std::rc::Rc::clone(&b))),
        );
    }
    for (i, (src, name, b)) in files.iter().enumerate() {
        let head = answers::parse(&b.full[name])
            .expect("a kept file pmx wrote")
            .head;
        let at = b.full_dir.join("pmx/symbols").join(name);
        for k in 0..cases(2, 100) {
            // After the DWARF categories' sources (+80, +90).
            let seed = base + ((i + 110) * 1_000_000 + k) as u64;
            let m = answers::mutate(&b.full[name], seed);
            assert!(!m.what.is_empty(), "{name}: not a file the mutator reads");
            let wf = answers::well_formed(&m.bytes, &head);
            (mutants, forged) = (mutants + 1, forged + usize::from(wf));
            for (args, (want, written)) in REPORTS.iter().zip(&b.plain) {
                // Every kept file intact but the mutant.
                for (n, bytes) in &b.full {
                    let file = b.full_dir.join("pmx/symbols").join(n);
                    std::fs::write(file, if n == name { &m.bytes } else { bytes }).unwrap();
                }
                let case = format!("{src} {name} seed {seed} {args:?} ({})", m.what);
                t.tried += 1;
                // Kept as it was written should the case fail (the run
                // may write the file again).
                t.mutant(seed, &put(dir.path(), "mutant.dwarf", &m.bytes));
                let run = report(args, &b.data, &b.full_dir);
                let after = std::fs::read(&at).ok();
                judge(&mut t, &case, run, wf, want, written.get(name), after);
            }
        }
    }
    eprintln!("well-formed mutants (answered from the file): {forged} of {mutants}");
    t.finish();
}
