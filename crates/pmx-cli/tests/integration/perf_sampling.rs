//! perf's sampling command lines with pmx as `perf` (a symlink named
//! `perf`: the perf personality) and with Debian's perf on the same
//! files: report's perf flags (`-F`, `-n`, `--no-children`, `-g`,
//! `--comms`/`--dsos` (a one-value filter's `# comm:` line), `-s pid`
//! (threads), `--header-only`, `--stats`, `--tasks`), `evlist
//! -v`, `buildid-list`, `record -z` and `inject` read by perf, and the
//! build-id cache shared both ways (record, rebuild, report: the function
//! still named). Skips without perf or a C compiler.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A program that spins in `noploop` for a second (`alarm`), as perf's
/// pipe_test.sh; `VARIANT` changes its code (and so its build id).
const PROGRAM: &str = r#"
#include <signal.h>
#include <unistd.h>
volatile int done;
static void on_alarm(int sig) { (void)sig; done = 1; }
__attribute__((noinline)) void noploop(void) { while (!done) continue; }
int main(void) { signal(SIGALRM, on_alarm); alarm(1); VARIANT; noploop(); return 0; }
"#;

struct Setup {
    dir: tempfile::TempDir,
    /// The directory holding `perf` → pmx.
    bin: PathBuf,
}

impl Setup {
    fn new() -> Option<Setup> {
        if !pmx_testkit::perf::require("perf's sampling command lines")
            || !pmx_testkit::cc::require()
        {
            return None;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("mkdir");
        std::os::unix::fs::symlink(crate::common::PMX, bin.join("perf")).expect("symlink");
        Some(Setup { dir, bin })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Compile the program with `variant` as its extra statement.
    fn program(&self, variant: &str) -> PathBuf {
        let src = PROGRAM.replace("VARIANT", variant);
        pmx_testkit::cc::compile(self.dir.path(), "prog", &src, &["-O1"]).expect("cc")
    }

    /// `perf ARGS` with pmx as perf (`pmx`) or Debian's perf.
    fn run(&self, pmx: bool, args: &[&str]) -> Output {
        let perf = if pmx {
            self.bin.join("perf")
        } else {
            PathBuf::from("perf")
        };
        let o = Command::new(perf)
            .args(args)
            .current_dir(self.dir.path())
            .env_remove("PMX_EVENTS_DIR")
            .output()
            .expect("run perf");
        assert!(
            o.status.success(),
            "{} perf {args:?}: {}",
            if pmx { "pmx as" } else { "Debian's" },
            crate::common::stderr(&o)
        );
        o
    }

    /// `perf record -q -e task-clock:u -o DATA PROG` with pmx as perf
    /// (`pmx`) or Debian's perf.
    fn record(&self, pmx: bool, data: &str, prog: &Path) {
        let prog = prog.to_str().unwrap();
        let args = ["record", "-q", "-e", "task-clock:u", "-o", data, prog];
        self.run(pmx, &args);
    }

    fn both(&self, args: &[&str]) -> (String, String) {
        let text = |o: Output| crate::common::stdout(&o);
        (text(self.run(false, args)), text(self.run(true, args)))
    }
}

/// The rows of a `--stdio` table (lines not led by `#`), trimmed, with at
/// least `min` percent.
fn rows(out: &str, min: f64) -> Vec<String> {
    (out.lines())
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter(|l| {
            let share = l
                .split_whitespace()
                .next()
                .and_then(|w| w.trim_end_matches('%').parse().ok());
            share.is_none_or(|s: f64| s >= min)
        })
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

fn lines_with<'a>(out: &'a str, prefix: &str) -> Vec<&'a str> {
    out.lines().filter(|l| l.starts_with(prefix)).collect()
}

#[test]
fn report_and_file_commands_match_perf_on_the_same_file() {
    let Some(s) = Setup::new() else { return };
    let prog = s.program("(void)0");
    let data = s.path("t.data");
    let d = data.to_str().unwrap();
    s.record(false, d, &prog);
    // The rows of every share of at least 1% and their shares: the same
    // samples, so the same strings.
    for args in [
        &["-F", "overhead,comm,dso,sym"][..],
        &["-n", "--no-children", "-s", "comm,dso,sym"],
        &["-g", "none", "--no-children", "-F", "overhead,sym"],
        &[
            "--comms",
            "prog",
            "--dsos",
            "prog",
            "-F",
            "overhead,sample,sym",
        ],
    ] {
        let mut full = vec!["report", "-i", d, "--stdio"];
        full.extend_from_slice(args);
        let (perf, pmx) = s.both(&full);
        assert_eq!(
            rows(&perf, 1.0),
            rows(&pmx, 1.0),
            "report {args:?}\nperf:\n{perf}\npmx:\n{pmx}"
        );
        assert!(pmx.contains("noploop"), "{pmx}");
        for head in ["# Samples:", "# Event count", "# Total Lost Samples"] {
            assert_eq!(lines_with(&perf, head), lines_with(&pmx, head), "{args:?}");
        }
    }
    // --header-only: every line pmx prints is perf's.
    let (perf, pmx) = s.both(&["report", "-i", d, "--header-only"]);
    let pmx_lines: Vec<&str> = pmx
        .lines()
        .filter(|l| !l.starts_with("# captured on"))
        .collect();
    assert!(pmx_lines.len() > 15, "{pmx}");
    for l in &pmx_lines {
        assert!(
            perf.lines().any(|p| p == *l),
            "pmx's header line {l:?} is not perf's:\n{perf}"
        );
    }
    for args in [
        &["report", "-i", d, "--stats"][..],
        &["report", "-i", d, "--tasks"],
        &["evlist", "-v", "-i", d],
        &["buildid-list", "-i", d],
    ] {
        let (perf, pmx) = s.both(args);
        assert_eq!(perf, pmx, "{args:?}");
    }
}

#[test]
fn compressed_records_and_inject_are_read_by_perf() {
    let Some(s) = Setup::new() else { return };
    let prog = s.program("(void)0");
    let (z, plain) = (s.path("z.data"), s.path("d.data"));
    let (z, plain) = (z.to_str().unwrap(), plain.to_str().unwrap());
    s.run(
        true,
        &[
            "record",
            "-q",
            "-z",
            "-e",
            "task-clock:u",
            "-o",
            z,
            prog.to_str().unwrap(),
        ],
    );
    let (perf, pmx) = s.both(&["report", "-i", z, "--header", "--stats"]);
    for out in [&perf, &pmx] {
        assert!(
            out.contains("# compressed : Zstd, level = 1, ratio = "),
            "{out}"
        );
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with("COMPRESSED events:")),
            "{out}"
        );
    }
    s.run(true, &["inject", "-i", z, "-o", plain]);
    let (compressed, _) = s.both(&["report", "-i", z, "--stdio", "-F", "overhead,comm,dso,sym"]);
    let (decompressed, _) = s.both(&[
        "report",
        "-i",
        plain,
        "--stdio",
        "-F",
        "overhead,comm,dso,sym",
    ]);
    assert_eq!(rows(&compressed, 0.0), rows(&decompressed, 0.0));
    assert!(compressed.contains("noploop"), "{compressed}");
    let (perf, _) = s.both(&["report", "-i", plain, "--stats"]);
    assert!(
        !perf.contains("COMPRESSED events"),
        "inject wrote compressed records:\n{perf}"
    );
}

/// `report` of `data` with the cache `cache`: its rows.
fn named(s: &Setup, pmx: bool, cache: &Path, data: &str) -> String {
    let c = cache.to_str().unwrap();
    crate::common::stdout(&s.run(
        pmx,
        &[
            "--buildid-dir",
            c,
            "report",
            "-i",
            data,
            "--stdio",
            "-F",
            "overhead,sym",
        ],
    ))
}

#[test]
fn build_id_cache_is_shared_with_perf_and_names_rebuilt_binaries() {
    let Some(s) = Setup::new() else { return };
    for (recorder, reader) in [(true, false), (false, true)] {
        let cache = s.path(&format!("cache-{recorder}"));
        let data = s.path(&format!("a-{recorder}.data"));
        let (c, d) = (cache.to_str().unwrap(), data.to_str().unwrap());
        let prog = s.program("(void)0");
        s.run(
            recorder,
            &[
                "--buildid-dir",
                c,
                "record",
                "-q",
                "-e",
                "task-clock:u",
                "-o",
                d,
                prog.to_str().unwrap(),
            ],
        );
        let listed =
            crate::common::stdout(&s.run(!recorder, &["--buildid-dir", c, "buildid-cache", "-l"]));
        assert!(listed.contains(prog.to_str().unwrap()), "{listed}");
        // The binary rebuilt: another build id at the same path.
        s.program("done = 0");
        for who in [reader, recorder] {
            let rows = named(&s, who, &cache, d);
            assert!(
                rows.contains("[.] noploop"),
                "recorded by pmx: {recorder}, reported by pmx: {who}:\n{rows}"
            );
        }
        // Without the cache pmx cannot name it: the copy is what did.
        let empty = s.path("empty");
        assert!(!named(&s, true, &empty, d).contains("noploop"));
    }
}

/// The options of `perf COMMAND -h` (perf 6.1 prints them on stderr).
fn perf_options(command: &str) -> Vec<String> {
    let o = Command::new("perf")
        .args([command, "-h"])
        .output()
        .expect("perf -h");
    let text = format!("{}{}", crate::common::stdout(&o), crate::common::stderr(&o));
    let mut opts = Vec::new();
    for l in text
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
    {
        for w in l.split_whitespace().take(2) {
            let w = w.trim_end_matches(',');
            let w = w.split(['[', '=']).next().unwrap_or(w);
            if w.starts_with('-') && w.len() > 1 {
                opts.push(w.to_string());
            }
            if !l.starts_with("-") || !w.starts_with('-') || w.starts_with("--") {
                break;
            }
        }
    }
    opts
}

#[test]
fn every_perf_sampling_command_option_is_taken_or_refused_by_name() {
    let Some(s) = Setup::new() else { return };
    for (command, least) in [
        ("record", 60),
        ("report", 60),
        ("script", 60),
        ("annotate", 30),
        ("inject", 15),
        ("evlist", 8),
        ("buildid-list", 6),
    ] {
        let opts = perf_options(command);
        assert!(opts.len() > least, "perf {command} -h: {opts:?}");
        let help = crate::common::stdout(&s.run(true, &[command, "--help"]));
        let taken = |o: &str| {
            (help.split(|c: char| c.is_whitespace() || c == ',' || c == '='))
                .map(|w| w.trim_end_matches(']'))
                .any(|w| w.trim_end_matches("...") == o || w.split('[').next() == Some(o))
        };
        for o in &opts {
            let refused = pmx_args::perf_personality::refused_option(command, o);
            assert!(
                taken(o) || refused.is_some(),
                "perf {command} {o}: neither in pmx's --help nor refused by name"
            );
            // A refused option is refused by the binary, by name, exit 2.
            if let (Some(msg), false) = (refused, taken(o)) {
                let out = Command::new(s.bin.join("perf"))
                    .args([command, o.as_str()])
                    .output()
                    .unwrap();
                assert_eq!(out.status.code(), Some(2), "{command} {o}");
                assert!(
                    crate::common::stderr(&out).contains(&msg),
                    "{command} {o}: {}",
                    crate::common::stderr(&out)
                );
            }
        }
    }
}

#[test]
fn switch_output_writes_files_perf_reports_each_on_its_own() {
    let Some(s) = Setup::new() else { return };
    // A fixed amount of work, not a second of wall time: task-clock
    // samples come per CPU time, so a loaded machine (which gave the
    // program little of its second) makes as many as an idle one. About
    // 0.5 s of CPU here, 2,000 samples of 40 bytes: 6 or 7 files of
    // 16 KiB, and at least 2 on a CPU 3 times as fast.
    let src = "volatile unsigned long sink;\n\
        __attribute__((noinline)) void noploop(void) { for (unsigned long i = 0; i < 600000000UL; i++) sink = i; }\n\
        int main(void) { noploop(); return 0; }\n";
    let prog = pmx_testkit::cc::compile(s.dir.path(), "work", src, &["-O1"]).expect("cc");
    let out = s.path("s.data");
    let args = [
        "record",
        "-q",
        "-N",
        "--switch-output=16K",
        "-e",
        "task-clock:u",
        "-o",
    ];
    let mut args: Vec<&str> = args.to_vec();
    args.extend([out.to_str().unwrap(), prog.to_str().unwrap()]);
    s.run(true, &args);
    let mut files: Vec<PathBuf> = (std::fs::read_dir(s.dir.path()).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("s.data.")
        })
        .collect();
    files.sort();
    assert!(files.len() >= 2, "{files:?}");
    assert!(!out.exists(), "the last file keeps its plain name");
    // Each file on its own: the program's side band is in every one, so
    // every file with samples names the program's function. The last file
    // holds what came after the last switch, perhaps no sample at all (as
    // perf's own last file): read without error by both, nothing more.
    for (i, f) in files.iter().enumerate() {
        let (perf, pmx) = s.both(&[
            "report",
            "-i",
            f.to_str().unwrap(),
            "--stdio",
            "-F",
            "overhead,sym",
        ]);
        let last = i + 1 == files.len();
        if last && rows(&perf, 0.0).is_empty() {
            continue;
        }
        assert!(perf.contains("[.] noploop"), "{}:\n{perf}", f.display());
        assert!(pmx.contains("[.] noploop"), "{}:\n{pmx}", f.display());
    }
}

/// A program with a known call tree: `main` → `a` → `b` → `leaf` (the
/// heaviest), `a` → `c` → `leaf`, `main` → `d`, `main` → `leaf`.
const CALL_TREE: &str = r#"
volatile unsigned long sink;
__attribute__((noinline)) void leaf(int n) { for (int i = 0; i < n; i++) sink += i; }
__attribute__((noinline)) void b(int n) { leaf(n); }
__attribute__((noinline)) void c(int n) { leaf(n); }
__attribute__((noinline)) void a(int n) { b(3 * n); c(n); }
__attribute__((noinline)) void d(int n) { for (int i = 0; i < n; i++) sink ^= i; }
int main(void) { for (int k = 0; k < 150; k++) { a(200000); d(100000); leaf(20000); } return 0; }
"#;

/// The table and the call graphs under its rows, without the tip (it
/// names the tool) and the rows under 0.5% (the dynamic loader's few
/// samples, whose aliases perf and pmx name apart, in an order of ties).
/// perf's `[...]` of `fractal` is sometimes `[...] (inlined)`: its
/// symbol is malloc'ed without its `inlined` flag cleared.
fn tree(out: &str) -> Vec<String> {
    let share = |l: &str| {
        let w = l.split_whitespace().next()?;
        w.strip_suffix('%')?.parse::<f64>().ok()
    };
    // A row under 0.5% goes with the graph under it (fractal's shares
    // are of the row, so small rows have graphs too); a row is indented,
    // a folded chain is not. Blank lines are left out: those at the end
    // follow the last row, which may be a small one.
    let mut keep = true;
    (out.lines())
        .filter(|l| !l.contains("Tip") && !l.starts_with("# To display"))
        .filter(|l| {
            if l.starts_with('#') {
                keep = true;
            } else if let Some(v) = share(l).filter(|_| l.starts_with(' ')) {
                keep = v >= 0.5;
            }
            keep && !l.is_empty()
        })
        .map(|l| match l {
            // Column widths follow the longest names, small rows' too.
            l if l.starts_with("# ..") => "# ..".to_string(),
            l if l.starts_with('#') => l.split_whitespace().collect::<Vec<_>>().join(" "),
            l => l.replace("[...] (inlined)", "[...]"),
        })
        .collect()
}

#[test]
fn call_graphs_under_the_rows_match_perf_on_the_same_file() {
    let Some(s) = Setup::new() else { return };
    let prog = pmx_testkit::cc::compile(
        s.dir.path(),
        "tree",
        CALL_TREE,
        &["-O0", "-fno-omit-frame-pointer"],
    )
    .expect("cc");
    let prog = prog.to_str().unwrap();
    // One file recorded by perf, one by pmx: both have frame-pointer chains.
    for (pmx_records, name) in [(false, "perf.data"), (true, "pmx.data")] {
        let data = s.path(name);
        let d = data.to_str().unwrap();
        let rec = ["record", "-q", "-g", "-e", "task-clock:u", "-o", d, prog];
        s.run(pmx_records, &rec);
        let mut default_graph = String::new();
        for args in [
            &[][..],
            &["--no-children"],
            &["-g", "folded"],
            &["-g", "flat"],
            &["-g", "fractal"],
            &["-g", "caller"],
            &["-g", "callee"],
            &["--no-children", "-g", "caller"],
            &["-G"],
            &["--max-stack", "2"],
            &["--no-children", "--max-stack", "2"],
            &["-g", "graph,20"],
            &["-g", "fractal,30,callee"],
            &["-s", "sym"],
            &["-F", "overhead,sym"],
            &["--percent-limit", "5"],
            &["--percent-limit", "5", "-g", "graph,1"],
            &["-F", "overhead,comm,dso,sym", "-g", "folded"],
        ] {
            let mut full = vec!["report", "-i", d, "--stdio"];
            full.extend_from_slice(args);
            let (perf, pmx) = s.both(&full);
            assert_eq!(
                tree(&perf),
                tree(&pmx),
                "{name}: report {args:?}\nperf:\n{perf}\npmx:\n{pmx}"
            );
            if args.is_empty() {
                default_graph = pmx;
            }
        }
        // The default: children first, callers first, bars and shares.
        let g = &default_graph;
        assert!(g.contains("# Children      Self  Command"), "{g}");
        assert!(g.contains("---main") || g.contains("--main"), "{g}");
        assert!(g.contains("|--") && g.contains("--b\n"), "{g}");
        // Under pmx's own name `-g` is perf's layout too (it printed the
        // flat table before), `-G` as well; without it, pmx's table.
        let own = |args: &[&str]| {
            let o = Command::new(crate::common::PMX).args(args).output();
            crate::common::stdout(&o.expect("run pmx"))
        };
        assert_eq!(&own(&["report", "-g", "-i", d]), g, "{name}: pmx report -g");
        let (_, inverted) = s.both(&["report", "-i", d, "--stdio", "-G"]);
        assert_eq!(
            own(&["report", "-G", "-i", d]),
            inverted,
            "{name}: pmx report -G"
        );
        let flat = own(&["report", "-i", d]);
        assert!(
            !flat.contains("---") && !flat.contains("# Children"),
            "{flat}"
        );
    }
}

/// `work` (and under it `spin` and `other`) runs under a frame whose
/// saved frame pointer and return address are both 0, as a thread's
/// outermost frame can be: the kernel's frame-pointer walk stores the
/// 0 and stops, so every chain ends in a frame at address 0, which no
/// mapping holds. Linked statically, so that no binary's name is as
/// wide as an address (the column widths are what is compared).
#[cfg(target_arch = "x86_64")]
const ZERO_FRAME: &str = r#"
volatile unsigned long sink;
__attribute__((noinline)) void spin(void) { for (long i = 0; i < 200000000; i++) sink += i; }
__attribute__((noinline)) void other(void) { for (long i = 0; i < 100000000; i++) sink ^= i; }
__attribute__((noinline)) void work(void) { spin(); other(); }
int main(void) {
    __asm__ volatile("push %%rbp\n\tsub $8, %%rsp\n\tpush $0\n\tpush $0\n\t"
                     "mov %%rsp, %%rbp\n\tcall work\n\tadd $24, %%rsp\n\tpop %%rbp"
                     ::: "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11",
                         "memory", "cc");
    return 0;
}
"#;

/// A frame at address 0 with no binary (`[unknown]  [.] 0000000000000000`)
/// sizes the columns as perf sizes an entry without a symbol: the Shared
/// Object column at least an address's 16 digits, the Symbol column 22
/// (`[.] 0x` and 16 digits), though the row prints neither `0x` nor a
/// binary. A CI run once failed on a recording that happened to hold
/// such a frame; this one always does. Without graphs (`-g none`) perf
/// orders rows of equal shares by their keys, a row without a binary
/// last (with graphs: a caller above its callees).
#[cfg(target_arch = "x86_64")]
#[test]
fn a_frame_at_address_zero_sizes_the_columns_as_perf() {
    let Some(s) = Setup::new() else { return };
    let flags = ["-static", "-O0", "-fno-omit-frame-pointer", "-mno-red-zone"];
    let prog = match pmx_testkit::cc::compile(s.dir.path(), "zero", ZERO_FRAME, &flags) {
        Ok(p) => p,
        Err(e) => return pmx_testkit::skip(format!("no static C library ({e})")),
    };
    let prog = prog.to_str().unwrap();
    for (pmx_records, name) in [(false, "perf.data"), (true, "pmx.data")] {
        let data = s.path(name);
        let d = data.to_str().unwrap();
        s.run(
            pmx_records,
            &["record", "-q", "-g", "-e", "task-clock:u", "-o", d, prog],
        );
        for args in [
            &[][..],
            &["--no-children"],
            &["-g", "none"],
            &["-g", "none", "-s", "dso,sym"],
            &["-g", "caller"],
            &["-G"],
            &["-s", "sym"],
            &["-s", "dso,sym"],
        ] {
            let mut full = vec!["report", "-i", d, "--stdio"];
            full.extend_from_slice(args);
            let (perf, pmx) = s.both(&full);
            // The frame is there (with --no-children only in the graphs:
            // `0` alone on a line, or after `---`).
            let at_zero = |l: &str| l.trim().trim_start_matches("---") == "0";
            let zero = perf.contains("0000000000000000") || perf.lines().any(at_zero);
            assert!(zero, "{name}: perf report {args:?}: no frame at 0:\n{perf}");
            let lines = |o: &str| -> Vec<String> {
                let keep = |l: &&str| !l.contains("Tip") && !l.starts_with("# To display");
                o.lines().filter(keep).map(String::from).collect()
            };
            assert_eq!(
                lines(&perf),
                lines(&pmx),
                "{name}: report {args:?}\nperf:\n{perf}\npmx:\n{pmx}"
            );
        }
    }
}

/// Two threads, each spinning in a function of its own.
const THREADS: &str = r#"
#include <pthread.h>
volatile unsigned long s1, s2;
__attribute__((noinline)) void one(void) { for (long i = 0; i < 150000000; i++) s1 += i; }
__attribute__((noinline)) void two(void) { for (long i = 0; i < 50000000; i++) s2 += i; }
static void *run(void *p) { (void)p; one(); return 0; }
int main(void) { pthread_t t; pthread_create(&t, 0, run, 0); two(); pthread_join(t, 0); return 0; }
"#;

#[test]
fn tid_filter_matches_perf() {
    let Some(s) = Setup::new() else { return };
    let prog =
        pmx_testkit::cc::compile(s.dir.path(), "th", THREADS, &["-O0", "-pthread"]).expect("cc");
    let data = s.path("th.data");
    let d = data.to_str().unwrap();
    s.record(true, d, &prog);
    // The threads from perf's --tasks: `pid tid ppid |comm`.
    let (tasks, _) = s.both(&["report", "-i", d, "--tasks"]);
    let tids: Vec<String> = (tasks.lines())
        .filter(|l| l.contains("th") && !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().nth(1).map(String::from))
        .collect();
    assert_eq!(tids.len(), 2, "{tasks}");
    let mut seen = Vec::new();
    for t in tids.iter().map(String::as_str).chain([&*tids.join(",")]) {
        let args = ["report", "-i", d, "--stdio", "-n", "--tid", t];
        let (perf, pmx) = s.both(&args);
        assert_eq!(
            rows(&perf, 0.0),
            rows(&pmx, 0.0),
            "--tid {t}\n{perf}\n{pmx}"
        );
        for head in ["# Samples:", "# Event count", "# Overhead"] {
            assert_eq!(lines_with(&perf, head), lines_with(&pmx, head), "--tid {t}");
        }
        seen.push(pmx);
    }
    // Each thread alone shows its own function, both show both.
    let has = |o: &str, f: &str| o.contains(&format!("[.] {f}\n"));
    assert!(has(&seen[0], "one") != has(&seen[0], "two"), "{}", seen[0]);
    assert!(has(&seen[1], "one") != has(&seen[1], "two"), "{}", seen[1]);
    assert!(has(&seen[2], "one") && has(&seen[2], "two"), "{}", seen[2]);
}

/// perf report's text without its tip line (perf picks one at random).
fn without_tip(out: &str) -> Vec<&str> {
    out.lines().filter(|l| !l.starts_with("# (Tip:")).collect()
}

#[test]
fn thread_keys_and_one_value_filters_match_perf_byte_for_byte() {
    let Some(s) = Setup::new() else { return };
    let prog =
        pmx_testkit::cc::compile(s.dir.path(), "th", THREADS, &["-O0", "-pthread"]).expect("cc");
    let data = s.path("th.data");
    let d = data.to_str().unwrap();
    s.record(false, d, &prog);
    // Every line but the tip, trailing blanks included: `-s pid` is
    // perf's thread key (`  TID:th  `, two rows), a one-value filter a
    // `# comm: th` line and no column, padded key cells. Rows under 2%
    // are left out (`--percent-limit`: the columns are still sized by
    // every row): the start-up's one-sample rows tie, and ties may come
    // in another order (docs/perf-sampling.md).
    for args in [
        &["-s", "pid"][..],
        &["-n", "-s", "pid,sym"],
        &["-s", "pid", "--comms", "th"],
        &["-s", "comm"],
        &["-s", "sym,comm"],
        &["--comms", "th"],
        &["--comms", "th", "--dsos", "th"],
        &["--symbols", "one"],
        &["--symbols", "one,two"],
        &["--dsos", "th", "-s", "dso,sym"],
    ] {
        let mut full = vec!["report", "-i", d, "--stdio", "--percent-limit", "2"];
        full.extend_from_slice(args);
        let (perf, pmx) = s.both(&full);
        assert_eq!(
            without_tip(&perf),
            without_tip(&pmx),
            "report {args:?}\nperf:\n{perf}\npmx:\n{pmx}"
        );
    }
    // --stats names the one value too.
    for filter in ["--comms", "--dsos"] {
        let (perf, pmx) = s.both(&["report", "-i", d, "--stats", filter, "th"]);
        assert_eq!(perf, pmx, "--stats {filter} th");
        assert!(pmx.starts_with("# "), "{pmx}");
    }
    let (_, pmx) = s.both(&["report", "-i", d, "--stdio", "-s", "pid"]);
    let threads = (pmx.lines()).filter(|l| l.ends_with(":th     ")).count();
    assert_eq!(threads, 2, "{pmx}");
    let (_, pmx) = s.both(&["report", "-i", d, "--stdio", "--comms", "th"]);
    assert!(
        pmx.contains("\n# comm: th\n") && !pmx.contains("Command"),
        "{pmx}"
    );
    // pmx's own JSON has the thread of each row when sorted by it.
    let o = Command::new(env!("CARGO_BIN_EXE_pmx"))
        .args(["report", "-i", d, "--json", "--sort", "tid"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", pmx_testkit::text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["events"][0]["rows"].as_array().unwrap();
    let tids: std::collections::BTreeSet<u64> = (rows.iter())
        .filter(|r| r["thread_comm"] == "th")
        .filter_map(|r| r["tid"].as_u64())
        .collect();
    assert_eq!(tids.len(), 2, "two threads of th: {rows:?}");
}

#[test]
fn command_column_is_sized_as_perf_sizes_it_across_an_exec() {
    let Some(s) = Setup::new() else { return };
    let prog =
        pmx_testkit::cc::compile(s.dir.path(), "th", THREADS, &["-O0", "-pthread"]).expect("cc");
    // A script with a long name spins, then becomes `th`: its samples
    // are the command `a-long-script-n` of a thread whose last command
    // is `th`. perf sizes the Command column by the latter (7, the
    // heading) and cuts the former to it.
    let script = s.path("a-long-script-name");
    let body = format!(
        "#!/bin/sh\ni=0\nwhile [ $i -lt 200000 ]; do i=$((i+1)); done\nexec {}\n",
        prog.display()
    );
    std::fs::write(&script, body).expect("write script");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let data = s.path("exec.data");
    let d = data.to_str().unwrap();
    s.record(false, d, &script);
    // (Not `-s comm,dso`: perf widens the DSO column to 16 when a row's
    // first sample has no symbol, which dash's samples may or may not
    // be; docs/perf-sampling.md.)
    for args in [&["-s", "comm"][..], &["-s", "pid"], &["-s", "pid,comm"]] {
        let full = [
            &["report", "-i", d, "--stdio", "--percent-limit", "2"][..],
            args,
        ]
        .concat();
        let (perf, pmx) = s.both(&full);
        assert_eq!(
            without_tip(&perf),
            without_tip(&pmx),
            "report {args:?}\nperf:\n{perf}\npmx:\n{pmx}"
        );
    }
    let (_, pmx) = s.both(&["report", "-i", d, "--stdio", "-s", "comm"]);
    assert!(pmx.contains("  a-long-\n"), "{pmx}");
}

#[test]
fn marks_of_addresses_in_no_mapping_match_perf() {
    let Some(s) = Setup::new() else { return };
    let python = Path::new("/usr/bin/python3");
    if !python.exists() {
        eprintln!(
            "skipped: no /usr/bin/python3 (its frame-pointer chains end in unmapped addresses)"
        );
        return;
    }
    let data = s.path("py.data");
    let d = data.to_str().unwrap();
    let code = "sum(range(3000000))";
    let args = ["record", "-q", "-g", "-e", "cpu-clock", "-o", d];
    s.run(
        false,
        &[&args[..], &[python.to_str().unwrap(), "-c", code]].concat(),
    );
    // python3 has no frame pointers: its chains run into addresses no
    // mapping holds (0 among them); perf marks such a row `[k]` or `[.]`
    // by the frame before it, callers first (and the first by the
    // sample's mode), not by the address.
    let unknown = |out: &str| {
        let mut v: Vec<String> = (out.lines())
            .filter(|l| !l.starts_with('#') && l.contains(" [unknown] "))
            .map(String::from)
            .collect();
        v.sort();
        v
    };
    for g in ["none", "graph,0.5,caller"] {
        let (perf, pmx) = s.both(&["report", "-i", d, "--stdio", "-g", g]);
        let (p, x) = (unknown(&perf), unknown(&pmx));
        assert_eq!(p, x, "-g {g}: perf's rows of [unknown], then pmx's");
        if !p.iter().any(|l| l.contains("[k] ")) {
            eprintln!("note: no [unknown] row marked [k] in this recording");
        }
    }
}

/// The function names of the call graphs under the rows, sorted, once each.
fn graph_names(out: &str) -> Vec<String> {
    let mut v: Vec<String> = (out.lines())
        .filter(|l| l.starts_with("    ") && !l.contains("%  "))
        .map(|l| {
            let l = l.trim_start_matches([' ', '|']);
            let l = l.rsplit_once("%--").map_or(l, |(_, n)| n);
            l.trim_start_matches('-').trim().to_string()
        })
        .filter(|l| !l.is_empty())
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn dwarf_call_graphs_name_frames_as_perf_with_inlined_functions() {
    let Some(s) = Setup::new() else { return };
    let prog = s.program("(void)0");
    let p = prog.to_str().unwrap();
    let libc_dbg = Command::new("dpkg")
        .args(["-s", "libc6-dbg"])
        .output()
        .is_ok_and(|o| o.status.success());
    for (pmx, name) in [(false, "perf-dw.data"), (true, "pmx-dw.data")] {
        let data = s.path(name);
        let d = data.to_str().unwrap();
        let rec = [
            "record",
            "-q",
            "--call-graph",
            "dwarf",
            "-e",
            "task-clock:u",
        ];
        s.run(pmx, &[&rec[..], &["-o", d, p]].concat());
        for extra in [
            &["--no-children"][..],
            &["--no-children", "--no-inline"],
            &[],
        ] {
            let args = [&["report", "-i", d, "--stdio"][..], extra].concat();
            let (perf, pmx_out) = s.both(&args);
            assert_eq!(
                graph_names(&perf),
                graph_names(&pmx_out),
                "{name} {extra:?}\nperf:\n{perf}\npmx:\n{pmx_out}"
            );
            // glibc's start-up frame: its DWARF name (another than the
            // symbol's) with libc's debug info, as perf.
            let inlined = pmx_out.contains("__libc_start_main_impl (inlined)");
            let wanted = libc_dbg && !extra.contains(&"--no-inline");
            assert_eq!(inlined, wanted, "{name} {extra:?}\n{pmx_out}");
        }
    }
    if !libc_dbg {
        eprintln!("note: libc6-dbg not installed: glibc's inlined frames not checked");
    }
}

/// A short program that starts many times: the dynamic loader's start-up
/// (`_start` of ld.so) takes a share of its samples beside its own run
/// (`_start` of the program). It leaves through `_exit`, called where the
/// compiler cannot see it does not return (exit handlers' frames are
/// unwound apart by perf and pmx, which is not what this is about).
const SHORT_RUN: &str = r#"
#include <unistd.h>
volatile double sink;
void (*volatile leave)(int) = _exit;
__attribute__((noinline)) void work(void) { for (int i = 1; i < 400000; i++) sink += i * 0.5; }
int main(void) { work(); leave(0); return 0; }
"#;

/// Under each row of a function named `_start`: the row's command,
/// binary and function, then every frame of the call graph below it as
/// its path from the row (`_start/_dl_sysdep_start/dl_main`) with its
/// share (a frame without a share has the one of the frame above it: a
/// chain; a root without one, the row's). Paths, not the bars: a chain perf keeps whole and pmx splits
/// (or the reverse) gives the same paths.
fn start_graphs(out: &str) -> Vec<(String, Vec<(String, f64)>)> {
    let is_row = |l: &str| {
        let mut w = l.split_whitespace();
        l.starts_with(' ') && w.next().is_some_and(|x| x.ends_with('%'))
    };
    let mut graphs = Vec::new();
    let mut cur: Option<(String, Vec<(String, f64)>)> = None;
    // The open frames: (column of the name, name, share).
    let mut open: Vec<(usize, String, f64)> = Vec::new();
    // The row's own share: perf draws a root without a share (`---`)
    // when the root holds all of it.
    let mut row_share = 0.0;
    for l in out.lines() {
        if is_row(l) || l.is_empty() {
            graphs.extend(cur.take());
            open.clear();
            if is_row(l) && l.ends_with("[.] _start") {
                let words: Vec<&str> = l.split_whitespace().collect();
                row_share = words[0].trim_end_matches('%').parse().unwrap_or(0.0);
                cur = Some((words[2..].join(" "), Vec::new()));
            }
            continue;
        }
        let Some((_, frames)) = cur.as_mut() else {
            continue;
        };
        let (col, name, share) = match l.rsplit_once("%--") {
            Some((head, name)) => {
                let share = head.rsplit("--").next().and_then(|v| v.parse::<f64>().ok());
                (head.len() + 3, name.trim(), share)
            }
            None => {
                let name = l.trim_start_matches([' ', '|', '-']);
                (l.len() - name.len(), name.trim(), None)
            }
        };
        if name.is_empty() {
            continue;
        }
        match share {
            // A branch: a child of the nearest open frame left of it.
            Some(v) => {
                while open.last().is_some_and(|f| f.0 >= col) {
                    open.pop();
                }
                open.push((col, name.to_string(), v));
            }
            // A chain's next frame: a child of the line above, same share.
            None => {
                let v = open.last().map_or(row_share, |f| f.2);
                open.push((col, name.to_string(), v));
            }
        }
        let path: Vec<&str> = open.iter().map(|f| f.1.as_str()).collect();
        frames.push((path.join("/"), open.last().map_or(0.0, |f| f.2)));
    }
    graphs.extend(cur);
    graphs
}

/// `a` and `b`'s `_start` graphs agree: the same rows in the same order,
/// and every frame with at least 1% in either is in both, at shares
/// within 0.2 points. A few of the loader's samples are unwound apart by
/// perf's unwinder and pmx's (frames perf shows as `0xffffffffffffffff`),
/// which moves shares by hundredths: a frame at 1.00% in one may be at
/// 0.99% in the other, so no cut-off alone can compare them.
fn same_start_graphs(
    a: &[(String, Vec<(String, f64)>)],
    b: &[(String, Vec<(String, f64)>)],
) -> Result<(), String> {
    let heads =
        |g: &[(String, Vec<(String, f64)>)]| g.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
    if heads(a) != heads(b) {
        return Err(format!("rows {:?} vs {:?}", heads(a), heads(b)));
    }
    for ((head, fa), (_, fb)) in a.iter().zip(b) {
        let find = |f: &[(String, f64)], p: &str| f.iter().find(|x| x.0 == p).map(|x| x.1);
        for (one, other) in [(fa, fb), (fb, fa)] {
            for (path, share) in one.iter().filter(|x| x.1 >= 1.0) {
                match find(other, path) {
                    Some(v) if (v - share).abs() <= 0.2 => {}
                    v => return Err(format!("{head}: {path} at {share}% vs {v:?}")),
                }
            }
        }
    }
    Ok(())
}

#[test]
fn same_named_functions_of_two_binaries_stay_apart_in_the_graphs() {
    let Some(s) = Setup::new() else { return };
    let prog = pmx_testkit::cc::compile(s.dir.path(), "short", SHORT_RUN, &["-O1"]).expect("cc");
    let p = prog.to_str().unwrap();
    let data = s.path("two-starts.data");
    let d = data.to_str().unwrap();
    // Every 20 µs of user time: the loader's few hundred µs per start get
    // samples in each of 40 runs. A real perf's recording, DWARF chains
    // (they reach both `_start`s).
    let runs = format!("for i in $(seq 40); do {p}; done");
    let rec = [
        "record",
        "-q",
        "--call-graph",
        "dwarf",
        "-e",
        "task-clock:u",
    ];
    s.run(
        false,
        &[&rec[..], &["-c", "20000", "-o", d, "sh", "-c", &runs]].concat(),
    );
    for extra in [&["--no-inline"][..], &["--no-inline", "-g", "caller"]] {
        let args = [&["report", "-i", d, "--stdio"][..], extra].concat();
        let (perf, pmx) = s.both(&args);
        let want = start_graphs(&perf);
        if want.len() < 2 {
            eprintln!(
                "skipped: perf shows {} row(s) of a `_start` (the loader's start-up was not sampled)",
                want.len()
            );
            return;
        }
        // The program's `_start` and the loader's, each with its own tree.
        assert!(want.iter().any(|g| g.0.contains("ld-linux")), "{perf}");
        let got = start_graphs(&pmx);
        if let Err(e) = same_start_graphs(&want, &got) {
            panic!("report {extra:?}: {e}\nperf:\n{perf}\npmx:\n{pmx}");
        }
    }
}

#[test]
fn record_cpu_is_perfs_cpu_list() {
    let Some(s) = Setup::new() else { return };
    let data = s.path("cpu.data");
    let d = data.to_str().unwrap();
    // The samples are of whatever ran on CPU 0 (compilers, other tests):
    // the reports look for no binaries (an empty --symfs), or reading
    // their symbols takes both tools most of their time, for a column
    // that needs none.
    let empty = s.path("no-binaries");
    std::fs::create_dir(&empty).unwrap();
    let empty = empty.to_str().unwrap();
    // perf's -C/--cpu LIST, not pmx's event-database --cpu.
    for flag in [&["--cpu", "0"][..], &["--cpu=0"]] {
        let mut args = vec!["record", "-q", "-e", "cpu-clock", "-o", d];
        args.extend_from_slice(flag);
        args.extend(["sleep", "0.3"]);
        s.run(true, &args);
        let report = ["report", "-i", d, "--stdio", "-s", "cpu", "--symfs", empty];
        let (perf, _) = s.both(&report);
        let cpus = rows(&perf, 0.0);
        assert!(!cpus.is_empty(), "{perf}");
        assert!(cpus.iter().all(|r| r.ends_with(" 000")), "{flag:?}: {perf}");
    }
}

/// perf annotate's functions in order (`<name>:` of each disassembly,
/// those with at least `min` samples) and each one's instructions with a
/// share: (address, percent).
fn perf_annotations(out: &str, min: u64) -> Vec<(String, Vec<(u64, f64)>)> {
    let mut v: Vec<(String, Vec<(u64, f64)>)> = Vec::new();
    let mut keep = false;
    for l in out.lines() {
        if let Some(rest) = l.split(" for ").nth(1).filter(|_| l.contains("Percent |")) {
            let n: u64 = rest
                .split(['(', ' '])
                .nth(2)
                .unwrap_or("0")
                .parse()
                .unwrap_or(0);
            keep = n >= min;
            if keep {
                v.push((String::new(), Vec::new()));
            }
        } else if let (true, Some(last)) = (keep, v.last_mut()) {
            let t = l.trim();
            if last.0.is_empty() && t.ends_with(">:") {
                last.0 = t
                    .rsplit('<')
                    .next()
                    .unwrap()
                    .trim_end_matches(">:")
                    .to_string();
            } else if let Some(i) = instruction(t, false) {
                last.1.push(i);
            }
        }
    }
    v
}

/// pmx's annotations: `# pmx annotate: NAME in …` and the instruction
/// lines (`[*+] PERCENT SAMPLES : ADDR: …`).
fn pmx_annotations(out: &str, min: u64) -> Vec<(String, Vec<(u64, f64)>)> {
    let mut v: Vec<(String, Vec<(u64, f64)>)> = Vec::new();
    let mut keep = false;
    for l in out.lines() {
        if let Some(rest) = l.strip_prefix("# pmx annotate: ") {
            v.push((rest.split(" in ").next().unwrap().to_string(), Vec::new()));
        } else if l.starts_with("# ") && l.contains(" samples in ") {
            let n: u64 = l
                .split(": ")
                .nth(1)
                .and_then(|w| w.split(' ').next())
                .unwrap_or("0")
                .parse()
                .unwrap_or(0);
            keep = n >= min;
            if !keep {
                v.pop();
            }
        } else if let (true, Some(last)) = (keep, v.last_mut()) {
            if let Some(i) = instruction(l.trim_start_matches(['*', '+']).trim(), true) {
                last.1.push(i);
            }
        }
    }
    v
}

/// `PERCENT [SAMPLES] : ADDR: …` as (address, percent), shares above 0.
fn instruction(t: &str, samples: bool) -> Option<(u64, f64)> {
    let (head, rest) = t.split_once(" : ")?;
    let pct: f64 = head.split_whitespace().next()?.parse().ok()?;
    if samples && head.split_whitespace().count() != 2 {
        return None;
    }
    let addr = u64::from_str_radix(rest.trim().split(':').next()?.trim(), 16).ok()?;
    (pct > 0.0).then_some((addr, pct))
}

#[test]
fn annotate_without_a_symbol_annotates_every_sampled_function_as_perf() {
    let Some(s) = Setup::new() else { return };
    let prog = pmx_testkit::cc::compile(s.dir.path(), "tree", CALL_TREE, &["-O0"]).expect("cc");
    let data = s.path("a.data");
    let d = data.to_str().unwrap();
    s.record(false, d, &prog);
    let (perf, pmx) = s.both(&["annotate", "-i", d, "--stdio"]);
    let (p, x) = (perf_annotations(&perf, 10), pmx_annotations(&pmx, 10));
    let names = |v: &[(String, Vec<(u64, f64)>)]| v.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(&p), names(&x), "perf:\n{perf}\npmx:\n{pmx}");
    assert!(
        names(&x).starts_with(&["leaf".to_string(), "d".to_string()]),
        "{pmx}"
    );
    for ((name, pi), (_, xi)) in p.iter().zip(&x) {
        let addrs = |v: &[(u64, f64)]| v.iter().map(|i| i.0).collect::<Vec<_>>();
        assert_eq!(addrs(pi), addrs(xi), "{name}\nperf:\n{perf}\npmx:\n{pmx}");
        for (a, b) in pi.iter().zip(xi) {
            assert!(
                (a.1 - b.1).abs() <= 0.011,
                "{name} {:x}: {} vs {}",
                a.0,
                a.1,
                b.1
            );
        }
    }
}

/// A `--stdio` report's rows, each with the call graph under it, sorted
/// (rows of equal share come in another order: docs/perf-sampling.md),
/// without those of the dynamic loader's start-up (whose entry perf and
/// pmx name by two aliases, `_dl_start_user` and `_start`); a PLT entry's
/// name is `@plt` (perf 6.1 names libc's so: docs/memory.md).
fn row_blocks(out: &str) -> Vec<String> {
    let plt = |l: &str| match l.rsplit_once(' ') {
        Some((head, name)) if name.ends_with("@plt") => format!("{head} @plt"),
        _ => l.to_string(),
    };
    let is_row = |l: &str| {
        l.starts_with(' ')
            && l.split_whitespace()
                .next()
                .is_some_and(|x| x.ends_with('%'))
    };
    let mut blocks: Vec<String> = Vec::new();
    for l in out.lines().filter(|l| !l.starts_with('#')) {
        let l = &plt(l);
        match blocks.last_mut() {
            Some(b) if !is_row(l) => {
                b.push_str(l.trim_end());
                b.push('\n');
            }
            _ if is_row(l) => blocks.push(format!("{}\n", l.trim_end())),
            _ => {}
        }
    }
    let mut v: Vec<String> = (blocks.into_iter())
        .map(|b| b.trim_end().to_string())
        .filter(|b| !b.contains("_start") && !b.contains("ld-linux"))
        .collect();
    v.sort();
    v
}

#[test]
fn unnamed_frames_of_a_stripped_program_are_named_as_perf_names_them() {
    let Some(s) = Setup::new() else { return };
    // Debian's sh (dash) is stripped: its functions are addresses. perf
    // prints a chain's unnamed frame at the address the process ran it
    // (`0x55d1c3a0be77`) and makes a row of it, apart from the sample's
    // own row at the binary's offset (`0x000000000000ae77`), which holds
    // the sample's chains; with DWARF chains a caller is named at the
    // call (its return address - 1). `-s dso` counts a sample once per
    // binary on its chain.
    let sh = "/bin/sh";
    let script = "i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done";
    for (name, how) in [("sh-fp.data", "fp"), ("sh-dw.data", "dwarf")] {
        let data = s.path(name);
        let d = data.to_str().unwrap();
        let rec = ["record", "-q", "--call-graph", how, "-e", "task-clock:u"];
        s.run(false, &[&rec[..], &["-o", d, sh, "-c", script]].concat());
        for extra in [
            &[][..],
            &["--no-children"],
            &["-s", "dso"],
            &["-g", "caller"],
        ] {
            let args = [&["report", "-i", d, "--stdio"][..], extra].concat();
            let (perf, pmx) = s.both(&args);
            let absolute = |out: &str| out.contains("[.] 0x00005");
            if extra.is_empty() && !absolute(&perf) {
                eprintln!("note: {sh} has symbols here: no unnamed frame to compare");
            }
            if how == "fp" {
                let (p, x) = (row_blocks(&perf), row_blocks(&pmx));
                assert_eq!(p, x, "{name} {extra:?}\nperf:\n{perf}\npmx:\n{pmx}");
                continue;
            }
            // pmx's unwinder and perf's (libdw) end a few stacks of a
            // stripped program apart: the rows' names and shares, each
            // row of 2% in either present in both within a point.
            let (p, x) = (row_shares(&perf), row_shares(&pmx));
            for (row, share) in p.iter().chain(&x).filter(|(_, v)| **v >= 2.0) {
                let (a, b) = (p.get(row).copied(), x.get(row).copied());
                let close = a.zip(b).is_some_and(|(a, b)| (a - b).abs() <= 1.0);
                assert!(
                    close,
                    "{name} {extra:?} {row} ({share}%): perf {a:?}, pmx {b:?}"
                );
            }
        }
    }
}

/// A `--stdio` report's rows (their key cells) and first share.
fn row_shares(out: &str) -> std::collections::HashMap<String, f64> {
    (out.lines())
        .filter(|l| l.starts_with(' ') && !l.trim_start().starts_with('|'))
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let share = w.next()?.strip_suffix('%')?.parse().ok()?;
            let key: Vec<&str> = w.skip_while(|c| c.ends_with('%')).collect();
            Some((key.join(" "), share))
        })
        .collect()
}
