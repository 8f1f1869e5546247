//! `pmx report --diff BASE NEW` end to end: two builds of one program
//! (at different paths, with their functions at different addresses)
//! whose hot function moves from `alpha` to `beta`; BASE recorded by
//! `pmx record`, NEW by the installed `perf record`. The move shows in the
//! table, the JSON, the folded stacks and the differential flame graph,
//! and the shares and changes equal `perf diff`'s on the same files.

use crate::common::{pmx, PMX};
use pmx_testkit::shared::shared_data;
use pmx_testkit::{cc, perf, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One source, two builds: `-DNEW` adds `new_only` before the others
/// (shifting every address) and swaps the work of alpha and beta.
const SOURCE: &str = "\
#ifdef NEW
__attribute__((noinline)) long new_only(long n) { long s = 5; for (long i = 0; i < n; i++) s += (i * 3) ^ (s >> 1); return s; }
#define HOT_ALPHA 10
#define HOT_BETA 1
#else
__attribute__((noinline)) long old_only(long n) { long s = 5; for (long i = 0; i < n; i++) s += (i * 3) ^ (s >> 1); return s; }
#define HOT_ALPHA 1
#define HOT_BETA 10
#endif
__attribute__((noinline)) long alpha(long n) { long s = 0; for (long i = 0; i < n; i++) s += (i * i) ^ (s >> 3); return s; }
__attribute__((noinline)) long beta(long n) { long s = 0; for (long i = 0; i < n; i++) s += (i * i) ^ (s >> 2); return s; }
__attribute__((noinline)) long common(long n) { long s = 3; for (long i = 0; i < n; i++) s += i ^ s; return s; }
int main(void) {
  long n = 60000000, r = common(n / 4) + alpha(n / HOT_ALPHA) + beta(n / HOT_BETA);
#ifdef NEW
  r += new_only(n / 8);
#else
  r += old_only(n / 8);
#endif
  return r == 42;
}
";

struct Pair {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    base: PathBuf,
    new: PathBuf,
    /// NEW was recorded by perf (else by pmx too).
    by_perf: bool,
}

/// Build both programs as `a/m` and `b/m`; record BASE with pmx and NEW
/// with perf (pmx when perf is not installed).
fn record_pair() -> Option<Pair> {
    if !cc::require() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let flags = ["-O0", "-g", "-fno-omit-frame-pointer"];
    std::fs::create_dir_all(path.join("a")).unwrap();
    std::fs::create_dir_all(path.join("b")).unwrap();
    let a = cc::compile(&path.join("a"), "m", SOURCE, &flags).unwrap();
    let b = cc::compile(
        &path.join("b"),
        "m",
        SOURCE,
        &[&flags[..], &["-DNEW"]].concat(),
    )
    .unwrap();
    let (base, new) = (path.join("base.data"), path.join("new.data"));
    pmx_record(&a, &base);
    let by_perf = perf::available() && perf::record_cpu_clock(&["-g"], &new, &b).is_ok();
    if !by_perf {
        pmx_testkit::skip("NEW from perf record: perf is not installed or cannot sample");
        pmx_record(&b, &new);
    }
    Some(Pair {
        _dir: dir,
        dir: path,
        base,
        new,
        by_perf,
    })
}

fn pmx_record(bin: &Path, out: &Path) {
    let o = Command::new(PMX)
        .args(["record", "-e", "cpu-clock", "-F", "5000", "-g", "-o"])
        .arg(out)
        .arg("--")
        .arg(bin)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        o.status.success() && out.exists(),
        "pmx record: {}",
        text(&o.stderr)
    );
}

fn diff(p: &Pair, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "report",
        "-q",
        "--diff",
        p.base.to_str().unwrap(),
        p.new.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = pmx(&args);
    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    o
}

fn row<'a>(rows: &'a [serde_json::Value], symbol: &str) -> &'a serde_json::Value {
    rows.iter()
        .find(|r| r["symbol"] == symbol && r["dso"] == "m")
        .unwrap_or_else(|| panic!("no row m {symbol}: {rows:#?}"))
}

fn share(v: &serde_json::Value) -> f64 {
    v["share"].as_f64().unwrap()
}

/// `perf diff BASE NEW` (dso,symbol): symbol of `m` → (Baseline, Delta).
fn perf_diff(p: &Pair) -> Vec<(String, Option<f64>, Option<f64>)> {
    let o = Command::new("perf")
        .args(["diff", "-c", "delta"])
        .arg(&p.base)
        .arg(&p.new)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "perf diff: {}", text(&o.stderr));
    // "    66.86%     -60.12%  m   [.] alpha": Baseline or Delta may be blank.
    let pct = |s: &str| s.trim().trim_end_matches('%').parse::<f64>().ok();
    text(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (nums, sym) = l.split_once("[.] ")?;
            let (nums, dso) = nums.trim_end().rsplit_once(' ')?;
            if dso != "m" {
                return None;
            }
            let (b, d) = (nums.get(..10)?, nums.get(10..)?);
            Some((sym.trim().to_string(), pct(b), pct(d)))
        })
        .collect()
}

#[test]
fn the_hot_function_moves_in_text_json_folded_svg_and_as_perf_diff() {
    let Some(p) = record_pair() else { return };

    // JSON: alpha shrank, beta grew, by tens of points; old_only gone,
    // new_only new; common about the same; all in DSO `m`, though the
    // builds are at a/m and b/m and the functions at other addresses.
    // (The flame graph is written by the same run, checked below.)
    let svg = p.dir.join("diff.svg");
    let o = diff(&p, &["--json", "--flamegraph", svg.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["compute"], "delta-abs");
    assert_eq!(v["sort"], serde_json::json!(["dso", "symbol"]));
    let ev = &v["events"][0];
    assert_eq!(ev["name"], "cpu-clock", "{v:#}");
    let rows = ev["rows"].as_array().unwrap();
    let (alpha, beta) = (row(rows, "alpha"), row(rows, "beta"));
    assert_eq!(alpha["change"], "matched");
    assert_eq!(beta["change"], "matched");
    assert!(
        share(&alpha["base"]) > 45.0 && share(&alpha["new"]) < 15.0,
        "{alpha}"
    );
    assert!(
        share(&beta["base"]) < 15.0 && share(&beta["new"]) > 45.0,
        "{beta}"
    );
    assert!(alpha["delta"].as_f64().unwrap() < -35.0);
    assert!(beta["delta"].as_f64().unwrap() > 35.0);
    // The two largest changes come first.
    let first: Vec<&str> = rows[..2]
        .iter()
        .map(|r| r["symbol"].as_str().unwrap())
        .collect();
    assert!(
        first.contains(&"alpha") && first.contains(&"beta"),
        "{first:?}"
    );
    let gone = row(rows, "old_only");
    assert_eq!(gone["change"], "gone");
    assert!(gone["new"].is_null() && share(&gone["base"]) > 2.0);
    assert!((gone["delta"].as_f64().unwrap() + share(&gone["base"])).abs() < 1e-3);
    let new = row(rows, "new_only");
    assert_eq!(new["change"], "new");
    assert!(new["base"].is_null() && new["ratio"].is_null());
    assert!(row(rows, "common")["delta"].as_f64().unwrap().abs() < 10.0);
    // Normalized by each file's own total: each side's shares add up to 100.
    for side in ["base", "new"] {
        let sum: f64 = rows
            .iter()
            .filter(|r| !r[side].is_null())
            .map(|r| share(&r[side]))
            .sum();
        assert!((sum - 100.0).abs() < 0.01, "{side}: {sum}");
    }

    // The table: alpha's and beta's lines, new_only's Baseline says new,
    // old_only's New says gone.
    let o = diff(&p, &[]);
    let t = text(&o.stdout);
    let line = |sym: &str| -> String {
        t.lines()
            .find(|l| !l.starts_with('#') && l.ends_with(&format!("[.] {sym}")))
            .unwrap_or_else(|| panic!("no {sym} in {t}"))
            .to_string()
    };
    assert!(
        t.contains("# Baseline     New  Delta Abs  Shared Object"),
        "{t}"
    );
    let words = |l: String| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert!(words(line("alpha"))[2].starts_with('-'), "{t}");
    assert!(words(line("beta"))[2].starts_with('+'), "{t}");
    assert_eq!(words(line("new_only"))[0], "new");
    assert_eq!(words(line("old_only"))[1], "gone");
    let data: Vec<&str> = t.lines().filter(|l| !l.starts_with('#')).take(2).collect();
    assert!(data.iter().any(|l| l.ends_with("[.] alpha")), "{t}");

    // Folded stacks with both counts: alpha's stack shrank, beta's grew.
    let o = diff(&p, &["--folded"]);
    let f = text(&o.stdout);
    let counts = |leaf: &str| -> (u64, u64) {
        f.lines()
            .filter(|l| {
                l.split(' ')
                    .next()
                    .unwrap()
                    .ends_with(&format!(";main;{leaf}"))
            })
            .map(|l| {
                let n: Vec<u64> = l
                    .rsplitn(3, ' ')
                    .take(2)
                    .map(|x| x.parse().unwrap())
                    .collect();
                (n[1], n[0])
            })
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    };
    let (ab, an) = counts("alpha");
    let (bb, bn) = counts("beta");
    assert!(
        ab > 4 * an && bn > 4 * bb,
        "alpha {ab}→{an}, beta {bb}→{bn}: {f}"
    );
    assert_eq!(counts("new_only").0, 0);
    assert_eq!(counts("old_only").1, 0);

    // The differential flame graph: beta red, alpha blue, a legend, both
    // shares in the tooltips, old_only named as gone.
    let s = std::fs::read_to_string(&svg).unwrap();
    let fill = |name: &str| -> (u8, u8, u8) {
        let g = s
            .split(&format!("<title>{name} — BASE "))
            .nth(1)
            .unwrap_or_else(|| panic!("no {name} box: {s}"));
        let rgb = g
            .split("fill=\"rgb(")
            .nth(1)
            .unwrap()
            .split(')')
            .next()
            .unwrap();
        let c: Vec<u8> = rgb.split(',').map(|x| x.parse().unwrap()).collect();
        (c[0], c[1], c[2])
    };
    let (r, g, b) = fill("beta");
    assert!(r == 255 && g < 120 && b < 120, "beta rgb({r},{g},{b})");
    let (r, g, b) = fill("alpha");
    assert!(b == 255 && r < 120 && g < 120, "alpha rgb({r},{g},{b})");
    assert!(s.contains("<g id=\"legend\">") && s.contains("blue: shrank, red: grew"));
    assert!(s.contains("gone from NEW (no width, not drawn): ") && s.contains("old_only ("));
    let tip = s
        .split("<title>beta — ")
        .nth(1)
        .unwrap()
        .split("</title>")
        .next()
        .unwrap();
    assert!(
        tip.starts_with("BASE ") && tip.contains(" samples), NEW ") && tip.ends_with(" points"),
        "{tip}"
    );

    // --compute ratio and delta.
    let o = diff(&p, &["--compute", "ratio"]);
    let t = text(&o.stdout);
    assert!(
        t.lines().any(|l| l.starts_with("# Baseline ")
            && l.contains(" New ")
            && l.contains(" Ratio  Shared Object")),
        "{t}"
    );
    // A new row has no ratio (N/A, as perf diff) and comes first.
    let first = t.lines().find(|l| !l.starts_with('#')).unwrap();
    assert!(first.contains(" N/A "), "{t}");
    let o = diff(&p, &["--compute", "delta", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let d: Vec<f64> = v["events"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["delta"].as_f64().unwrap())
        .collect();
    assert!(d.windows(2).all(|w| w[0] >= w[1]), "{d:?}");
    assert_eq!(v["events"][0]["rows"][0]["symbol"], "beta");

    // The same shares and changes as perf diff's, to its two decimals.
    if !p.by_perf {
        return;
    }
    let theirs = perf_diff(&p);
    let mut compared = 0;
    // (perf pairs unresolved addresses by address; pmx does not.)
    for (sym, baseline, delta) in theirs.iter().filter(|t| !t.0.starts_with("0x")) {
        let ours = row(rows, sym);
        if let Some(b) = baseline {
            assert!(
                (share(&ours["base"]) - b).abs() <= 0.006,
                "{sym}: {ours} vs perf {b}"
            );
        }
        // perf diff leaves the delta of a row gone from NEW blank.
        if let Some(d) = delta {
            assert!(
                (ours["delta"].as_f64().unwrap() - d).abs() <= 0.011,
                "{sym}: {ours} vs perf {d}"
            );
            compared += 1;
        }
    }
    assert!(compared >= 4, "perf diff rows of m: {theirs:?}");
}

/// Two of perf's own recordings with several events: paired by name
/// without modifiers (cycles:pp with cycles:u), the rest listed.
#[test]
fn events_pair_by_name_across_perf_files() {
    let Some(dir) = shared_data("perfdata") else {
        return;
    };
    let base = dir.join("perf_data_converter__perf.data.lost_samples-4.4");
    let new = dir.join("perf_data_converter__perf.data.piped.header_feautres_group_desc-6.8");
    let o = pmx(&[
        "report",
        "-q",
        "--json",
        "--diff",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cycles:u", "instructions:u"]);
    assert_eq!(
        v["events_only_in_base"],
        serde_json::json!(["branch-instructions:pp"])
    );
    // Sample counts as perf script gives them for each file.
    assert_eq!(v["events"][0]["base"]["samples"], 97);
    assert_eq!(v["events"][0]["new"]["samples"], 11);
    assert_eq!(v["events"][1]["base"]["samples"], 80);
    assert_eq!(v["events"][1]["new"]["samples"], 10);

    // A file compared with itself: every row matched, no change; its
    // unresolved addresses (the binary is not here) are one [unknown] row
    // of their DSO, not rows paired by address.
    let fibo = dir.join("linux-perf-data__fibo.compressed2.pipe.data");
    let f = fibo.to_str().unwrap();
    let o = pmx(&["report", "-q", "--json", "--diff", f, f]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["events"][0]["rows"].as_array().unwrap();
    assert!(
        rows.iter()
            .all(|r| r["change"] == "matched" && r["delta"] == 0.0),
        "{rows:#?}"
    );
    let unknown = rows
        .iter()
        .find(|r| r["dso"] == "fib_example" && r["symbol"] == "[unknown]")
        .expect("fib_example's [unknown] row");
    assert_eq!(unknown["base"], unknown["new"]);
    assert!(rows
        .iter()
        .all(|r| !r["symbol"].as_str().unwrap().starts_with("0x")));

    // No event in common: an error naming both files' events.
    let sleep = dir.join("linux-perf-data__sleep.data");
    let groups = dir.join("perf_data_converter__perf.data.group_desc-4.14");
    let o = pmx(&[
        "report",
        "--diff",
        sleep.to_str().unwrap(),
        groups.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = text(&o.stderr);
    assert!(
        e.contains("have no event in common")
            && e.contains("cycles:Pu")
            && e.contains("branch-misses"),
        "{e}"
    );
}

#[test]
fn bad_diff_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.data");
    let m = missing.to_str().unwrap();
    // One file only, or an unknown computation: usage errors.
    let o = pmx(&["report", "--diff", m]);
    assert_eq!(o.status.code(), Some(2));
    let o = pmx(&["report", "--diff", m, m, "--compute", "wdiff"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("known: delta-abs, delta, ratio"),
        "{}",
        text(&o.stderr)
    );
    let o = pmx(&["report", "--diff", m, m]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains(&format!("{m}: no such file")),
        "{}",
        text(&o.stderr)
    );
    let o = pmx(&["report", "--diff", m, m, "--sort", "dso,bogus"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("bogus"));
}
