//! `pmx annotate` end to end: a C function with a hot loop (gcc -O1 -g),
//! recorded here by `pmx record -e cpu-clock`; its instructions are
//! objdump's (same count, addresses and text), most samples fall on the
//! loop's source lines, the shares equal `perf annotate --stdio`'s on the
//! same file, and the JSON schema is stable.

use crate::common::{pmx, PMX};
use pmx_testkit::text;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The program: `hot` spends its time in the loop of the LOOP lines;
/// `main` has a loop too, a static array (a RIP-relative data label),
/// calls through the PLT and a string.
const SOURCE: &str = "#include <stdlib.h>
#include <stdio.h>
__attribute__((noinline)) long hot(long n, long *a) {
    long s = 0;
    for (long i = 0; i < n; i++) { /* LOOP */
        s += a[i & 1023] * 3 + (s >> 3); /* LOOP */
    }
    return s;
}
int main(int argc, char **argv) {
    static long a[1024];
    long n = atol(argv[1]);
    for (long i = 0; i < n / 4; i++) a[i & 1023] += i >> 3;
    long r = hot(n, a);
    printf(\"%ld\\n\", r);
    return (int)(r & 1);
}
";

/// The program built and recorded in a temporary directory: (dir, binary,
/// perf.data), or `None` after a SKIP line.
fn recorded() -> Option<(tempfile::TempDir, PathBuf, PathBuf)> {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("hot.c");
    std::fs::write(&src, SOURCE).unwrap();
    let bin = dir.path().join("hot");
    // A build id of this run's own: the build-id cache (~/.debug) may hold
    // an earlier build of the same source, which would resolve the moved
    // binary below by its id.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let id = format!("-Wl,--build-id=0x{:08x}{nanos:032x}", std::process::id());
    let cc = Command::new("gcc")
        .args(["-O1", "-g", &id, "-o"])
        .arg(&bin)
        .arg(&src)
        .output();
    match cc {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!("gcc failed: {}", text(&o.stderr)),
        Err(e) => {
            pmx_testkit::skip(format_args!("no gcc ({e})"));
            return None;
        }
    }
    let data = dir.path().join("perf.data");
    let o = Command::new(PMX)
        .args(["record", "-N", "-e", "cpu-clock", "-F", "4000", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&bin)
        .arg("150000000")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    if !o.status.success() || !data.exists() {
        pmx_testkit::skip(format_args!("pmx record failed here: {}", text(&o.stderr)));
        return None;
    }
    Some((dir, bin, data))
}

/// `objdump -d`'s instructions of `sym`: (address, text).
fn objdump(bin: &Path, sym: &str) -> Option<Vec<(u64, String)>> {
    let o = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(bin)
        .output()
        .ok()?;
    let all = text(&o.stdout);
    let head = format!("<{sym}>:");
    let body = all.split_once(&head)?.1.split("\n\n").next()?;
    let ins = body.lines().filter_map(|l| {
        let (addr, text) = l.trim().split_once(":\t")?;
        Some((u64::from_str_radix(addr, 16).ok()?, text.trim().to_string()))
    });
    Some(ins.collect())
}

/// `perf annotate --stdio`'s percent per instruction address of `sym`.
fn perf_percents(data: &Path, sym: &str) -> Option<BTreeMap<u64, f64>> {
    let o = Command::new("perf")
        .args(["annotate", "--stdio", "--no-source", "-i"])
        .arg(data)
        .arg(sym)
        .output()
        .ok()?;
    let mut m = BTreeMap::new();
    for line in text(&o.stdout).lines() {
        let Some((pct, rest)) = line.split_once(" : ") else {
            continue;
        };
        let addr = rest
            .trim()
            .split(':')
            .next()
            .and_then(|a| u64::from_str_radix(a, 16).ok());
        if let (Ok(p), Some(a)) = (pct.trim().parse::<f64>(), addr) {
            m.insert(a, p);
        }
    }
    (o.status.success() && !m.is_empty()).then_some(m)
}

/// `ins` (pmx annotate's JSON instructions) are `objdump -d`'s lines of
/// `sym`: as many, the same addresses and text.
fn same_as_objdump(bin: &Path, sym: &str, ins: &[serde_json::Value]) {
    let Some(want) = objdump(bin, sym) else {
        return pmx_testkit::skip(format_args!("objdump cannot list {sym} here"));
    };
    let got: Vec<(u64, String)> = ins
        .iter()
        .map(|i| {
            (
                i["addr"].as_u64().unwrap(),
                i["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(got.len(), want.len(), "{got:#?}\n{want:#?}");
    assert_eq!(got, want);
    if sym == "main" {
        let all: Vec<&str> = got.iter().map(|g| g.1.as_str()).collect();
        assert!(all.iter().any(|t| t.ends_with("@plt>")), "{all:#?}");
        assert!(all.iter().any(|t| t.ends_with("<hot>")), "{all:#?}");
    }
}

#[test]
fn hot_loop_of_a_c_function() {
    let Some((_dir, bin, data)) = recorded() else {
        return;
    };
    let o = pmx(&["annotate", "hot", "--json", "-i", data.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ins = v["instructions"].as_array().unwrap();
    // The instructions are objdump's, in hot and in main.
    same_as_objdump(&bin, "hot", ins);
    let o = pmx(&["annotate", "main", "--json", "-i", data.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let m: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    same_as_objdump(&bin, "main", m["instructions"].as_array().unwrap());
    // Most samples are on the loop's lines.
    let loop_lines: Vec<u64> = (1..)
        .zip(SOURCE.lines())
        .filter(|(_, l)| l.contains("LOOP"))
        .map(|(n, _)| n)
        .collect();
    let total = v["events"][0]["samples"].as_u64().unwrap();
    let in_loop: u64 = ins
        .iter()
        .filter(|i| loop_lines.contains(&i["source"]["line"].as_u64().unwrap_or(0)))
        .map(|i| i["samples"]["cpu-clock"].as_u64().unwrap())
        .sum();
    assert!(total >= 50, "too few samples: {total}");
    assert!(
        in_loop * 10 >= total * 9,
        "{in_loop} of {total} in the loop {loop_lines:?}"
    );
    assert!(ins[0]["source"]["file"]
        .as_str()
        .unwrap()
        .ends_with("hot.c"));
    // perf annotate's shares of the same file, instruction by instruction.
    match perf_percents(&data, "hot") {
        Some(perf) => {
            for i in ins {
                let (a, p) = (
                    i["addr"].as_u64().unwrap(),
                    i["percent"]["cpu-clock"].as_f64().unwrap(),
                );
                assert!(
                    (perf[&a] - p).abs() < 0.011,
                    "{a:#x}: perf {} pmx {p}",
                    perf[&a]
                );
            }
        }
        None => pmx_testkit::skip("perf annotate cannot read the file here"),
    }
}

#[test]
fn json_schema_and_text_layout() {
    let Some((_dir, _bin, data)) = recorded() else {
        return;
    };
    let file = data.to_str().unwrap();
    let o = pmx(&["annotate", "hot", "--json", "-i", file]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&v),
        [
            "arch",
            "build_id",
            "dso",
            "end",
            "events",
            "file",
            "instructions",
            "metrics",
            "path",
            "skid",
            "start",
            "symbol",
            "syntax",
            "warnings"
        ]
    );
    assert_eq!(
        keys(&v["events"][0]),
        [
            "file_period",
            "file_samples",
            "name",
            "period",
            "precise",
            "samples"
        ]
    );
    let with_source = v["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i.get("target").is_some())
        .unwrap();
    assert_eq!(
        keys(with_source),
        [
            "addr", "bytes", "metrics", "offset", "percent", "period", "samples", "source",
            "target", "text"
        ]
    );
    assert_eq!(keys(&with_source["source"]), ["file", "line", "text"]);
    assert_eq!(
        (v["symbol"].as_str(), v["dso"].as_str(), v["arch"].as_str()),
        (Some("hot"), Some("hot"), Some("x86-64"))
    );
    assert_eq!(v["build_id"].as_str().map(str::len), Some(40));
    // `pmx report --annotate` is the same call with report's flags.
    let r = pmx(&["report", "--annotate", "hot", "--json", "-i", file]);
    let rv: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(
        rv, v,
        "report --annotate --json differs from annotate --json"
    );
    let r = pmx(&[
        "report",
        "--annotate",
        "hot",
        "--event",
        "no-such",
        "-i",
        file,
    ]);
    assert!(
        !r.status.success(),
        "an event the file lacks must be refused"
    );
    // Text: one skid note, the hottest instructions marked, jumps as objdump.
    let o = pmx(&["annotate", "hot", "-i", file]);
    let t = text(&o.stdout);
    let r = pmx(&["report", "--annotate", "hot", "-i", file]);
    assert_eq!(
        text(&r.stdout),
        t,
        "report --annotate differs from annotate"
    );
    assert_eq!(t.lines().filter(|l| l.contains("skid")).count(), 1, "{t}");
    assert!(
        t.lines().any(|l| l.starts_with('*') && l.contains(" :  ")),
        "{t}"
    );
    assert!(t.contains(" <hot+0x"), "{t}");
    // The loop body's source line, with its text, before its instructions.
    let body = "s += a[i & 1023] * 3 + (s >> 3);";
    let n = SOURCE.lines().position(|l| l.contains(body)).unwrap() + 1;
    let at = t
        .lines()
        .position(|l| l.contains(&format!("hot.c:{n} ")) && l.contains(body));
    assert!(
        t.lines().nth(at.expect(&t) + 1).unwrap().contains(" :  "),
        "{t}"
    );
    // A name without samples: the close name and the hottest functions
    // (bad input: exit 2).
    let o = pmx(&["annotate", "hto", "-i", file]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(
        e.contains("hto: no samples in")
            && e.contains("did you mean hot?")
            && e.contains("hot in hot ("),
        "{e}"
    );
}

#[test]
fn event_symfs_and_metrics_flags() {
    let Some((dir, bin, data)) = recorded() else {
        return;
    };
    let file = data.to_str().unwrap();
    let json = |args: &[&str]| {
        let o = pmx(&[&["annotate", "hot", "--json", "-i", file], args].concat());
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let plain = json(&[]);
    // --event: the file's event by name; one it lacks is bad input.
    assert_eq!(json(&["--event", "cpu-clock"]), plain);
    let o = pmx(&["annotate", "hot", "--event", "cycles", "-i", file]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("--event cycles: not in"),
        "{}",
        text(&o.stderr)
    );
    // --metrics needs a sample-read group: a cpu-clock file has none.
    let o = pmx(&["annotate", "hot", "--metrics", "IPC", "-i", file]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("no samples of a sample-read group"),
        "{}",
        text(&o.stderr)
    );
    // --symfs: the binary moved under a root at its recorded path; without
    // the flag no sample resolves to hot (exit 2), with it the same
    // instructions.
    let root = dir.path().join("root");
    let under = root.join(bin.strip_prefix("/").unwrap());
    std::fs::create_dir_all(under.parent().unwrap()).unwrap();
    std::fs::rename(&bin, &under).unwrap();
    let o = pmx(&["annotate", "hot", "-i", file]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("hot: no samples"),
        "{}",
        text(&o.stderr)
    );
    let moved = json(&["--symfs", root.to_str().unwrap()]);
    assert_eq!(moved["path"].as_str(), under.to_str());
    assert_eq!(moved["instructions"], plain["instructions"]);
}
