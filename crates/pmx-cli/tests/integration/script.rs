//! `pmx script` against `perf script` on files recorded here by perf (a
//! program with three functions; with and without call chains): the
//! default output line for line, `-F` subsets, refusals of fields the
//! samples lack, JSON lines that parse and agree with perf's fields, and a
//! closed pipe.
//!
//! What may legitimately differ, and is normalised: an address one tool
//! resolves and the other leaves `[unknown]` (symbol tables differ in
//! what they cover, e.g. a binary's code before its first symbol, or a
//! PLT stub, which perf names `…@plt` and pmx does not), and a PLT entry
//! both name, perf 6.1 without its function (`@plt`). Such lines must
//! still agree on everything around the symbol, and stay rare.

use crate::common::{pmx, PMX};
use pmx_testkit::{cc, perf, text};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

struct Files {
    flat: PathBuf,
    chains: PathBuf,
}

/// The module's two recordings, made once for all its tests (which only
/// read them); `None` (said once) where perf or a C compiler is missing.
fn setup() -> Option<&'static Files> {
    static FILES: OnceLock<Option<Files>> = OnceLock::new();
    let files = FILES.get_or_init(record).as_ref();
    if files.is_none() {
        pmx_testkit::skip("script's recordings could not be made (see above)");
    }
    files
}

/// Record the program twice with perf (cpu-clock at 5 kHz: periods vary):
/// without and with call chains. In `script/` under Cargo's directory for
/// test files, replaced by each run (a static's temporary directory would
/// never be removed).
fn record() -> Option<Files> {
    if !perf::require("") {
        return None;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("script");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = "#include <stdlib.h>\n\
        __attribute__((noipa)) long leaf_a(long n) { long s = 0; for (long i = 0; i < n; i++) s += (i * i) ^ (s >> 3); return s; }\n\
        __attribute__((noipa)) long leaf_b(long n) { long s = 1; for (long i = 0; i < n; i++) s += i ^ s; return s; }\n\
        __attribute__((noipa)) long mid(long n) { return leaf_a(n) + leaf_b(n / 3); }\n\
        int main(void) { long r = 0; for (int k = 0; k < 150; k++) r += mid(1000000); return (int)(r & 1); }\n";
    let Ok(bin) = cc::compile(&dir, "three", src, &["-O1", "-fno-omit-frame-pointer"]) else {
        pmx_testkit::skip("no C compiler");
        return None;
    };
    let flat = dir.join("flat.data");
    let chains = dir.join("chains.data");
    for (out, extra) in [(&flat, &[][..]), (&chains, &["-g"][..])] {
        if let Err(why) = perf::record_cpu_clock(extra, out, &bin) {
            pmx_testkit::skip(why);
            return None;
        }
    }
    Some(Files { flat, chains })
}

fn pmx_script(file: &Path, args: &[&str]) -> String {
    let mut all = vec!["script", "-i", file.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = pmx(&all);
    assert!(o.status.success(), "pmx {all:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

fn perf_script(file: &Path, args: &[&str]) -> String {
    let mut all = vec!["script"];
    all.extend_from_slice(args);
    let o = perf::on_file(&all, file);
    assert!(o.status.success(), "perf {all:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

/// The two outputs line for line: equal, or (rarely) differing only in a
/// symbol that one side leaves `[unknown]`. Returns the lines compared.
fn same_output(ours: &str, theirs: &str, what: &str) -> usize {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    assert_eq!(a.len(), b.len(), "{what}: line counts differ");
    let mut unknown = 0;
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        if x == y {
            continue;
        }
        // Everything around the symbol (the address before it, the binary
        // after it when printed) must agree: one side's `[unknown]` stands
        // where the other names a symbol (perf's `@plt` for a PLT stub).
        let around = |u: &str, named: &str| {
            u.find("[unknown]").is_some_and(|at| {
                let (before, after) = (&u[..at], &u[at + "[unknown]".len()..]);
                named.len() > before.len() + after.len()
                    && named.starts_with(before)
                    && named.ends_with(after)
            })
        };
        // A PLT entry pmx names as objdump does (`__tunable_get_val@plt`)
        // and perf 6.1 prints bare (`@plt`: libc's IRELATIVE slots,
        // docs/PERF_DIFF.md).
        let plt = |l: &str| -> Vec<String> {
            l.split_whitespace()
                .map(|w| match w.find("@plt") {
                    Some(at) => w[at..].to_string(),
                    None => w.to_string(),
                })
                .collect()
        };
        assert!(
            around(x, y) || around(y, x) || (x.contains("@plt") && plt(x) == plt(y)),
            "{what}, line {}:\n pmx:  {x}\n perf: {y}",
            i + 1
        );
        unknown += 1;
    }
    assert!(
        unknown * 100 <= a.len(),
        "{what}: {unknown} of {} lines differ in [unknown]",
        a.len()
    );
    a.len()
}

#[test]
fn default_output_is_perf_scripts() {
    let Some(f) = setup() else { return };
    let n = same_output(
        &pmx_script(&f.flat, &[]),
        &perf_script(&f.flat, &[]),
        "no chains",
    );
    assert!(n > 100, "only {n} samples");
    // The hot leaf is there, with perf's columns: comm %16s, tid %5d,
    // time %12s, period %10u, event, address %16x, sym+0xOFF (dso).
    let ours = pmx_script(&f.flat, &[]);
    let line = ours
        .lines()
        .find(|l| l.contains(" leaf_a+0x"))
        .expect("leaf_a sampled");
    assert!(line.starts_with("           three "), "{line}");
    assert!(line.ends_with("/three)"), "{line}");
    let n = same_output(
        &pmx_script(&f.chains, &[]),
        &perf_script(&f.chains, &[]),
        "chains",
    );
    let chains = pmx_script(&f.chains, &[]);
    assert!(
        chains.contains("\n\t") && chains.contains(" main+0x"),
        "no call chains:\n{}",
        &chains[..chains.len().min(2000)]
    );
    assert!(n > 200);
    // -G hides the chains: then the output is perf's -G output.
    same_output(
        &pmx_script(&f.chains, &["-G"]),
        &perf_script(&f.chains, &["-G"]),
        "-G",
    );
}

#[test]
fn field_subsets_are_perfs() {
    let Some(f) = setup() else { return };
    for spec in [
        "comm,tid,time",
        "pid,tid,period,event",
        "ip,sym",
        "ip,dso",
        "time,ip,sym,symoff,dso",
        "comm,sym",
        "-period,+pid",
        "sw:comm,event",
    ] {
        let what = format!("-F {spec}");
        same_output(
            &pmx_script(&f.flat, &["-F", spec]),
            &perf_script(&f.flat, &["-F", spec]),
            &what,
        );
    }
    let spec = "comm,ip,sym";
    same_output(
        &pmx_script(&f.chains, &["-F", spec]),
        &perf_script(&f.chains, &["-F", spec]),
        "chains -F",
    );
    // Fields the samples lack (no CPU in a per-thread recording), unknown
    // fields and perf fields pmx does not print: usage errors.
    for (spec, says) in [
        ("comm,cpu", "do not have the CPU attribute"),
        ("comm,tdi", "did you mean 'tid'?"),
        ("srcline", "not printed by pmx script"),
        ("comm,+tid", "cannot be mixed"),
    ] {
        let o = pmx(&["script", "-i", f.flat.to_str().unwrap(), "-F", spec]);
        assert_eq!(o.status.code(), Some(2), "-F {spec}");
        assert!(
            text(&o.stderr).contains(says),
            "-F {spec}: {}",
            text(&o.stderr)
        );
        assert!(o.stdout.is_empty());
    }
    assert!(!perf::on_file(&["script", "-F", "comm,cpu"], &f.flat)
        .status
        .success());
}

#[test]
fn json_lines_parse_and_agree_with_perf() {
    let Some(f) = setup() else { return };
    let json = pmx_script(&f.chains, &["--json"]);
    let theirs = perf_script(&f.chains, &["-F", "comm,tid,time,period,event"]);
    let theirs: Vec<&str> = theirs.lines().collect();
    let ours: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(ours.len(), theirs.len());
    for (v, line) in ours.iter().zip(&theirs) {
        let ns = v["time_ns"].as_u64().unwrap();
        let rebuilt = format!(
            "{:>16} {:>5} {:>12}: {:>10} {}: ",
            v["comm"].as_str().unwrap(),
            v["tid"].as_u64().unwrap(),
            format!("{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1000),
            v["period"].as_u64().unwrap(),
            v["event"].as_str().unwrap()
        );
        assert_eq!(&rebuilt, line);
        let chain = v["callchain"].as_array().unwrap();
        assert!(!chain.is_empty());
        assert_eq!(chain[0]["ip"], v["ip"], "{v}");
        assert!(v["ip"].as_str().unwrap().starts_with("0x"));
    }
    let leaf = |name: &str| ours.iter().filter(|v| v["sym"] == name).count();
    assert!(leaf("leaf_a") > leaf("leaf_b") && leaf("leaf_b") > 0);
    // -F applies to JSON too.
    let one = pmx_script(&f.flat, &["--json", "-F", "tid,ip,sym"]);
    let v: serde_json::Value = serde_json::from_str(one.lines().next().unwrap()).unwrap();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["ip", "sym", "tid"]); // sorted by serde_json
}

#[test]
fn a_closed_pipe_ends_it_quietly() {
    let Some(f) = setup() else { return };
    let mut child = Command::new(PMX)
        .args(["script", "-i"])
        .arg(&f.chains)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("cpu-clock"), "{first}");
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{:?}", o.status);
    assert_eq!(text(&o.stderr), "");
}
