//! `pmx stat --format perf` against the installed perf (6.1), side by
//! side on the same software events (`-e cycles` is `<not supported>`
//! here): the text table, `-x SEP` and JSON lines in every aggregation
//! this machine has, with `-r` and `-I`. Values differ; the layout must
//! not: every line's words and units in the same order, numbers where
//! perf has numbers, right-aligned numbers ending in the same column and
//! words starting in the same column as perf's, the same CSV fields and
//! the same JSON keys in the same order and spacing.

mod common;

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
                let perf = run("perf", &perf_args);
                let pmx = run(common::PMX, &pmx_args);
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
    std::os::unix::fs::symlink(common::PMX, &perf).unwrap();
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
    assert!(o.status.success(), "{}", common::stderr(&o));
    let line = common::stderr(&o);
    let fields: Vec<&str> = line.trim_end().split(',').collect();
    assert_eq!(fields[1..3], ["msec", "task-clock"], "{line}");
    assert_eq!((fields.len(), fields[6]), (7, "CPUs utilized"), "{line}");
    for args in [&["bench", "internals"][..], &["trace", "true"], &[]] {
        let o = Command::new(&perf).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = common::stderr(&o);
        assert!(err.contains("is not implemented by pmx"), "{args:?}: {err}");
    }
    // perf list --raw-dump: what the stat_all_* scripts loop over.
    let o = Command::new(&perf)
        .args(["list", "--raw-dump", "metrics"])
        .output()
        .unwrap();
    let names = common::stdout(&o);
    assert!(names.split(' ').any(|n| n == "IPC"), "{names}");
    let o = common::pmx(&["list", "--raw-dump", "bogus"]);
    assert_eq!(o.status.code(), Some(2));
    // Under its own name, pmx's formats stay the default.
    let o = common::pmx(&["stat", "-x,", "-e", "task-clock", "--", "true"]);
    assert!(
        common::stderr(&o).contains(",counted,"),
        "{}",
        common::stderr(&o)
    );
}
