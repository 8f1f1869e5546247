//! `pmx stat --format perf` against the installed perf (6.1), side by
//! side on the same software events (`-e cycles` is `<not supported>`
//! here): the text table, `-x SEP` and JSON lines in every aggregation
//! this machine has, with `-r` and `-I`. Values differ; the layout must
//! not: every line's words and units in the same order, numbers where
//! perf has numbers, right-aligned numbers ending in the same column and
//! words starting in the same column as perf's, the same CSV fields and
//! the same JSON keys in the same order and spacing.

use std::process::Command;

const EVENTS: &str = "task-clock,page-faults,context-switches,cpu-migrations,cycles";

/// A token that stands for a number: digits with `.`/`,` and an optional
/// `%` or sign.
fn is_number(t: &str) -> bool {
    let t = t.trim_end_matches('%').trim_start_matches(['-', '+']);
    !t.is_empty()
        && t.chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == ',')
        && t.chars().any(|c| c.is_ascii_digit())
}

/// perf scales rates by 1000s (`/sec`, `K/sec`, `M/sec`): the value
/// decides which, so compare them as one unit.
fn unit(t: &str) -> &str {
    match t {
        "K/sec" | "M/sec" | "G/sec" => "/sec",
        t => t,
    }
}

/// A text line as its words: numbers as `N` with the column they end in,
/// other words with the column they start in (columns dropped where the
/// value decides the width: the elapsed line's precision with `-r`, and
/// rate units).
fn text_shape(line: &str) -> Vec<(String, Option<usize>)> {
    let fixed = !(line.contains("elapsed") && line.contains(" +- "));
    // `( +- x% )` follows a count whose runs differed, which the values
    // decide: the rows are compared without it.
    let line = match line.find("  ( +-") {
        Some(i) if !line.contains("elapsed") => &line[..i],
        _ => line,
    };
    let mut out = Vec::new();
    let mut start = None;
    let chars: Vec<char> = line.chars().collect();
    for i in 0..=chars.len() {
        let space = i == chars.len() || chars[i] == ' ';
        match (start, space) {
            (None, false) => start = Some(i),
            (Some(s), true) => {
                let word: String = chars[s..i].iter().collect();
                let (w, col) = if is_number(&word) {
                    let pct = if word.ends_with('%') { "%" } else { "" };
                    (format!("N{pct}"), i)
                } else {
                    (unit(&word).to_string(), s)
                };
                let keep = fixed && !word.ends_with("/sec");
                out.push((w, keep.then_some(col)));
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// A `-x` line as its fields: numbers as `N`, the rest as written.
fn csv_shape(line: &str, sep: &str) -> Vec<String> {
    line.split(sep)
        .map(|f| {
            let f = f.trim_start();
            if is_number(f) {
                if f.ends_with('%') { "N%" } else { "N" }.to_string()
            } else {
                unit(f).to_string()
            }
        })
        .collect()
}

/// A JSON line with its values replaced: strings by `S` (keys kept),
/// numbers by `N`; the punctuation and spacing stay.
fn json_shape(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '"' {
            let mut s = String::new();
            while let Some(d) = chars.next() {
                match d {
                    '\\' => s.extend(chars.next()),
                    '"' => break,
                    d => s.push(d),
                }
            }
            let rest: String = chars.clone().take(2).collect();
            if rest == " :" {
                out.push_str(&format!("\"{s}\""));
            } else {
                out.push('S');
            }
        } else if c.is_ascii_digit() || c == '-' {
            while chars
                .peek()
                .is_some_and(|d| d.is_ascii_digit() || *d == '.')
            {
                chars.next();
            }
            out.push('N');
        } else {
            out.push(c);
        }
    }
    out
}

fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .env("LC_ALL", "C")
        .env_remove("PMX_EVENTS_DIR")
        .output()
        .expect("run");
    pmx_testkit::text(&out.stderr)
}

/// perf's and pmx's stderr for their arguments, the two run at once (the
/// layouts are compared, not the values): half the wall time of the
/// hundreds of mostly sleeping runs here.
fn both(perf_args: &[&str], pmx_args: &[&str]) -> (String, String) {
    std::thread::scope(|s| {
        let perf = s.spawn(|| run("perf", perf_args));
        let pmx = run(crate::common::PMX, pmx_args);
        (perf.join().expect("perf's thread"), pmx)
    })
}

/// The lines whose shapes are compared: without blank lines, and for
/// intervals only the distinct shapes (the number of intervals is
/// timing).
fn shapes<T: PartialEq + Clone>(text: &str, shape: impl Fn(&str) -> T, distinct: bool) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        let s = shape(l);
        if !(distinct && out.contains(&s)) {
            out.push(s);
        }
    }
    out
}

#[test]
fn perf_format_has_perfs_layout() {
    if !pmx_testkit::perf::require("the side-by-side layout test") {
        return;
    }
    let cases: &[(&[&str], &[&str])] = &[
        (&[], &["true"]),
        (&["-r", "3"], &["true"]),
        (&["-a"], &["sleep", "0.05"]),
        (&["-a", "-A"], &["sleep", "0.05"]),
        (&["-a", "--per-core"], &["sleep", "0.05"]),
        (&["-a", "--per-socket"], &["sleep", "0.05"]),
        (&["-I", "100"], &["sleep", "0.25"]),
        (&["-I", "100", "-a", "-A"], &["sleep", "0.25"]),
        // No target: system-wide, as perf; the totals after the intervals.
        (&["-I", "100", "--interval-count", "2", "--summary"], &[]),
    ];
    let forms: &[(&[&str], &[&str])] = &[
        (&[], &[]),
        (&["-x,"], &["-x,"]),
        (&["-x;"], &["-x;"]),
        (&["-j"], &["--json"]),
    ];
    let mut failures = Vec::new();
    for (flags, cmd) in cases {
        for (perf_form, pmx_form) in forms {
            let mut perf_args = vec!["stat"];
            perf_args.extend_from_slice(perf_form);
            perf_args.extend_from_slice(flags);
            perf_args.extend(["-e", EVENTS, "--"]);
            perf_args.extend_from_slice(cmd);
            let mut pmx_args = vec!["stat", "--format", "perf"];
            pmx_args.extend_from_slice(pmx_form);
            pmx_args.extend_from_slice(flags);
            pmx_args.extend(["-e", EVENTS, "--"]);
            pmx_args.extend_from_slice(cmd);
            let distinct = flags.contains(&"-I");
            let same = |perf: &str, pmx: &str| match perf_form.first() {
                Some(x) if x.starts_with("-x") => {
                    let sep = &x[2..];
                    shapes(perf, |l| csv_shape(l, sep), distinct)
                        == shapes(pmx, |l| csv_shape(l, sep), distinct)
                }
                Some(_) => shapes(perf, json_shape, distinct) == shapes(pmx, json_shape, distinct),
                None => shapes(perf, text_shape, distinct) == shapes(pmx, text_shape, distinct),
            };
            // On a loaded machine perf itself sometimes prints a CPU's
            // counts as <not counted> (nr 0): a mismatch is tried again
            // before it counts.
            let mut last = None;
            for _ in 0..3 {
                let (perf, pmx) = both(&perf_args, &pmx_args);
                if same(&perf, &pmx) {
                    last = None;
                    break;
                }
                last = Some((perf, pmx));
            }
            if let Some((perf, pmx)) = last {
                failures.push(format!(
                    "perf {}\n--- perf:\n{perf}--- pmx:\n{pmx}",
                    perf_args.join(" ")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `pmx` and Debian's perf run with the same arguments (perf's `-x`/`-j`
/// are pmx's with `--format perf`): `flags`, then perf's form, the
/// events and the command; a pair whose `same` fails three times is
/// returned with both outputs.
fn side_by_side(
    cases: &[(Vec<String>, Vec<String>)],
    events: &str,
    same: impl Fn(&str, &str, &str) -> bool,
) -> Vec<String> {
    let forms: &[&[&str]] = &[&[], &["-x,"], &["-x;"], &["-j"]];
    let mut failures = Vec::new();
    for (flags, cmd) in cases {
        for form in forms {
            let mut args: Vec<&str> = form.to_vec();
            args.extend(flags.iter().map(String::as_str));
            args.extend(["-e", events]);
            // perf wants -G after the events it applies to.
            if let Some(i) = args.iter().position(|a| *a == "-G") {
                let g = args.drain(i..i + 2).collect::<Vec<_>>();
                args.extend(g);
            }
            args.push("--");
            args.extend(cmd.iter().map(String::as_str));
            let perf_args: Vec<&str> = ["stat"].iter().chain(&args).copied().collect();
            let pmx_args: Vec<&str> = ["stat", "--format", "perf"]
                .iter()
                .chain(&args)
                .copied()
                .collect();
            let mut last = None;
            for _ in 0..3 {
                let (perf, pmx) = both(&perf_args, &pmx_args);
                if same(form.first().copied().unwrap_or(""), &perf, &pmx) {
                    last = None;
                    break;
                }
                last = Some((perf, pmx));
            }
            if let Some((perf, pmx)) = last {
                failures.push(format!(
                    "perf {}\n--- perf:\n{perf}--- pmx:\n{pmx}",
                    perf_args.join(" ")
                ));
            }
        }
    }
    failures
}

/// A line with its digits masked: everything else byte for byte.
fn masked(line: &str) -> String {
    line.chars()
        .map(|c| if c.is_ascii_digit() { 'N' } else { c })
        .collect()
}

/// The masked lines of `text`; with `-I` each distinct line once (the
/// number of intervals is timing).
fn masked_lines(text: &str, distinct: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in text.lines().map(masked) {
        if !(distinct && out.contains(&l)) {
            out.push(l);
        }
    }
    out
}

fn case(flags: &[&str], cmd: &[&str]) -> (Vec<String>, Vec<String>) {
    let v = |s: &[&str]| s.iter().map(|s| s.to_string()).collect();
    (v(flags), v(cmd))
}

/// `--metric-only`: perf 6.1's header of units and a line per domain
/// (empty columns for the counters that counted nothing), totals and
/// `-I`, every aggregation this machine has, byte for byte but the
/// digits. `-A`'s header names the hardware metrics perf would show
/// (`GHz`, `insn per cycle`, `branch-misses of all branches`; JSON: every
/// counter's unit).
#[test]
fn metric_only_is_perfs() {
    if !pmx_testkit::perf::require("the side-by-side --metric-only test") {
        return;
    }
    let events = "task-clock,page-faults,context-switches,cycles,instructions,branch-misses";
    let sleep = ["sleep", "0.05"];
    let iv = ["sleep", "0.25"];
    let cases = [
        case(&["--metric-only"], &["true"]),
        case(&["--metric-only", "-a"], &sleep),
        case(&["--metric-only", "-a", "-A"], &sleep),
        case(&["--metric-only", "-a", "--per-core"], &sleep),
        case(&["--metric-only", "-a", "--per-socket"], &sleep),
        case(&["--metric-only", "-a", "--per-die"], &sleep),
        case(&["--metric-only", "-a", "--per-node"], &sleep),
        case(&["--metric-only", "-I", "100", "-a"], &iv),
        case(&["--metric-only", "-I", "100", "-a", "-A"], &iv),
        case(&["--metric-only", "-I", "100", "-a", "--per-core"], &iv),
        case(&["--metric-only", "-I", "100", "-a", "--per-socket"], &iv),
        // --summary: perf's `summary` cells in -x totals, no header after -I.
        case(&["--metric-only", "-a", "-A", "--summary"], &sleep),
        case(
            &[
                "--metric-only",
                "-a",
                "-A",
                "-I",
                "100",
                "--interval-count",
                "2",
                "--summary",
            ],
            &iv,
        ),
    ];
    let failures = side_by_side(&cases, events, |_, perf, pmx| {
        let distinct =
            perf.starts_with('#') || perf.contains("\"interval\"") || perf.starts_with(" time");
        masked_lines(perf, distinct) == masked_lines(pmx, distinct)
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// perf refuses `--metric-only` with `--per-thread` and with `-r`; pmx
/// in perf's layout says the same (exit 2, pmx's status for a usage
/// error; perf's is 234). Its own `--metric-only` table takes `-r`.
#[test]
fn metric_only_refusals_are_perfs() {
    for (flag, value) in [("--per-thread", "-a"), ("-r", "2")] {
        let o = crate::common::pmx(&[
            "stat",
            "--format",
            "perf",
            "--metric-only",
            flag,
            value,
            "true",
        ]);
        assert_eq!(o.status.code(), Some(2), "{flag}");
        let why = format!("--metric-only is not supported with {flag}");
        assert!(
            crate::common::stderr(&o).contains(&why),
            "{}",
            crate::common::stderr(&o)
        );
        if pmx_testkit::perf::available() {
            let perf = run("perf", &["stat", "--metric-only", flag, value, "true"]);
            assert!(perf.contains(&why), "{perf}");
        }
    }
    let o = crate::common::pmx(&["stat", "--metric-only", "-r", "2", "-M", "IPC", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::common::stderr(&o));
}

/// `-I` time stamps: perf's layout prints when the counters were read
/// (perf's `clock_gettime` after each interval's sleep, since the
/// start: at or after the boundary, never the nominal value itself
/// but by chance), pmx's own the interval's boundary on the grid.
#[test]
fn interval_time_stamps_are_read_times_in_perfs_layout() {
    let args = |form: &[&str]| {
        let mut a = vec!["stat", "-I", "100", "--interval-count", "1"];
        a.extend_from_slice(form);
        a.extend(["-e", "task-clock", "-a", "sleep", "1"]);
        crate::common::pmx(&a)
    };
    let perf = crate::common::stderr(&args(&["--format", "perf", "-x,"]));
    let t = perf.split(',').next().unwrap().trim();
    let (secs, nanos) = t.split_once('.').unwrap();
    assert_eq!(nanos.len(), 9, "{perf}");
    let t: f64 = t.parse().unwrap();
    assert!(t >= 0.1 && !(secs == "0" && nanos == "100000000"), "{perf}");
    let own = crate::common::stderr(&args(&["-x,"]));
    assert!(own.starts_with("0.100000,"), "{own}");
}

/// A cgroup v2 directory for the test, removed when dropped.
struct Cgroup {
    name: String,
    dir: std::path::PathBuf,
}

impl Cgroup {
    fn new() -> Result<Cgroup, String> {
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let root = mounts
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.get(2) == Some(&"cgroup2"))
            .map(|f| f[1].to_string())
            .ok_or("no cgroup v2 mount")?;
        let name = format!("pmx-perffmt-{}", std::process::id());
        let dir = std::path::Path::new(&root).join(&name);
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cgroup v2 at {root} is not writable: {e}"))?;
        Ok(Cgroup { name, dir })
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// `-G` and `--for-each-cgroup` in perf's layouts: the cgroup after the
/// event in the text table, the field after the event in `-x`, the
/// `"cgroup"` key in `-j`, with `-A` and `-I`; a command that moves
/// itself into the cgroup and works there is counted.
#[test]
fn cgroups_are_perfs() {
    if !pmx_testkit::perf::require("the side-by-side cgroup test") {
        return;
    }
    let cg = match Cgroup::new() {
        Ok(cg) => cg,
        Err(why) => return pmx_testkit::skip(why),
    };
    let work = env!("CARGO_BIN_EXE_pmx-workload");
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec {work} work 30",
        cg.dir.display()
    );
    let name = cg.name.as_str();
    let busy = ["sh", "-c", script.as_str()];
    let cases = [
        case(&["-a", "-G", name], &busy),
        case(&["-a", "-A", "-G", name], &["sleep", "0.05"]),
        case(&["-I", "100", "-a", "-G", name], &["sleep", "0.25"]),
        case(&["-I", "100", "-a", "-A", "-G", name], &["sleep", "0.25"]),
        case(&["-a", "--for-each-cgroup", name], &["sleep", "0.05"]),
    ];
    let failures = side_by_side(&cases, "task-clock,page-faults", |form, perf, pmx| {
        let distinct = perf.contains("interval") || perf.starts_with('#') || perf.starts_with("  ");
        match form {
            "" => shapes(perf, text_shape, distinct) == shapes(pmx, text_shape, distinct),
            "-j" => shapes(perf, json_shape, distinct) == shapes(pmx, json_shape, distinct),
            x => {
                let sep = &x[2..];
                shapes(perf, |l| csv_shape(l, sep), distinct)
                    == shapes(pmx, |l| csv_shape(l, sep), distinct)
            }
        }
    });
    // perf and pmx name the cgroup (the shapes keep words as written).
    let o = run(
        crate::common::PMX,
        &[
            "stat",
            "--format",
            "perf",
            "-x,",
            "-a",
            "-e",
            "task-clock",
            "-G",
            name,
            "true",
        ],
    );
    assert!(o.contains(&format!(",task-clock,{name},")), "{o}");
    let mo = case(
        &["--metric-only", "-a", "--for-each-cgroup", name],
        &["sleep", "0.05"],
    );
    let mut failures = failures;
    failures.extend(side_by_side(
        &[mo],
        "task-clock,page-faults",
        |_, perf, pmx| masked_lines(perf, false) == masked_lines(pmx, false),
    ));
    drop(cg);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn shapes_see_what_differs() {
    // The shapes catch a column moved by one and a key out of order.
    let perf = "                51      page-faults                      #   72.575 K/sec                  ";
    assert_eq!(
        text_shape(perf),
        text_shape(&perf.replace("   72.575 K", "    1.423 "))
    );
    assert_ne!(text_shape(perf), text_shape(&format!(" {perf}")));
    let j = r#"{"counter-value" : "49.000000", "unit" : "", "event" : "page-faults"}"#;
    assert_eq!(
        json_shape(j),
        r#"{"counter-value" : S, "unit" : S, "event" : S}"#
    );
    assert_ne!(json_shape(j), json_shape(&j.replace(" : ", ": ")));
    assert_eq!(
        csv_shape("49,,page-faults,670911,100.00,73.035,K/sec", ","),
        ["N", "", "page-faults", "N", "N", "N", "/sec"]
    );
}

/// pmx run as `perf` (a symlink): `perf stat` is `pmx stat --format
/// perf`; a perf command pmx does not implement exits 1 (perf's status
/// for an unknown command) saying so.
#[test]
fn the_perf_personality() {
    let dir = tempfile::tempdir().unwrap();
    let perf = dir.path().join("perf");
    std::os::unix::fs::symlink(crate::common::PMX, &perf).unwrap();
    let o = Command::new(&perf)
        .args([
            "--no-pager",
            "stat",
            "-x,",
            "-e",
            "task-clock",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", crate::common::stderr(&o));
    let line = crate::common::stderr(&o);
    let fields: Vec<&str> = line.trim_end().split(',').collect();
    assert_eq!(fields[1..3], ["msec", "task-clock"], "{line}");
    assert_eq!((fields.len(), fields[6]), (7, "CPUs utilized"), "{line}");
    // perf stat --metric-only: perf's metric-only lines (`-A`: the unit
    // of the hardware metric perf would show, an empty column where
    // cycles did not count).
    let o = Command::new(&perf)
        .args([
            "stat",
            "-x,",
            "--metric-only",
            "-a",
            "-A",
            "-e",
            "task-clock,cycles",
            "true",
        ])
        .output()
        .unwrap();
    let lines = crate::common::stderr(&o);
    assert!(lines.starts_with("cpu,GHz,\nCPU0,,\n"), "{lines}");
    for args in [&["bench", "internals"][..], &["trace", "true"], &[]] {
        let o = Command::new(&perf).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = crate::common::stderr(&o);
        assert!(err.contains("is not implemented by pmx"), "{args:?}: {err}");
    }
    // perf list --raw-dump: what the stat_all_* scripts loop over.
    let o = Command::new(&perf)
        .args(["list", "--raw-dump", "metrics"])
        .output()
        .unwrap();
    let names = crate::common::stdout(&o);
    assert!(names.split(' ').any(|n| n == "IPC"), "{names}");
    let o = crate::common::pmx(&["list", "--raw-dump", "bogus"]);
    assert_eq!(o.status.code(), Some(2));
    // Under its own name, pmx's formats stay the default.
    let o = crate::common::pmx(&["stat", "-x,", "-e", "task-clock", "--", "true"]);
    assert!(
        crate::common::stderr(&o).contains(",counted,"),
        "{}",
        crate::common::stderr(&o)
    );
}
