//! Sample-read groups end to end: `pmx record -e '{cpu-clock,page-faults}:uS'`
//! on a C program whose functions each touch a known number of fresh pages
//! (one minor fault each) and then spin in place, so every fault is
//! credited, through the page-fault deltas, to the function that made it;
//! the same file read by Debian's perf (`perf report --group --stdio`) and
//! by `pmx report --group` gives the same per-symbol shares. Then a file
//! built by hand with pmx-perfdata's Writer: a `{cycles,instructions}:S`
//! group with known deltas, and `pmx report -M IPC` prints each symbol's
//! exact IPC.

use crate::common::pmx;
use pmx_testkit::{cc, perf, skip, text};
use std::collections::BTreeMap;
use std::path::Path;

// The program stays on one CPU: the members of a sample-read group are
// read per CPU, so faults made on a CPU the thread then leaves are read
// by no later sample (perf's semantics too); under load the scheduler
// moved it and a function's faults went uncredited.
const PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <sched.h>
#include <sys/mman.h>
#define SPIN 40000000L
#define TOUCH_AND_SPIN(n) do { \
    char *p = mmap(0, (n) * 4096L, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); \
    madvise(p, (n) * 4096L, MADV_NOHUGEPAGE); \
    for (long i = 0; i < (n); i++) p[i * 4096L] = 1; \
    for (volatile long k = 0; k < SPIN; k++); \
} while (0)
__attribute__((noinline)) void faults_300(void) { TOUCH_AND_SPIN(300); }
__attribute__((noinline)) void faults_1200(void) { TOUCH_AND_SPIN(1200); }
int main(void) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    sched_setaffinity(0, sizeof one, &one);
    for (volatile long k = 0; k < SPIN; k++);
    faults_300();
    faults_1200();
    return 0;
}
"#;

/// Largest difference of a share: perf prints two decimals, and a name
/// perf shows twice is the sum of two rounded shares.
const TOLERANCE: f64 = 0.021;

/// The row a PLT entry is pooled into on both sides. pmx names each entry
/// as objdump does (`__tunable_get_val@plt`); perf 6.1 prints some of
/// libc's as a bare `@plt` (an `IRELATIVE` slot breaks its pairing with
/// `.rela.plt`: docs/PERF_DIFF.md), so a sample that lands in one (rare,
/// during start-up) would otherwise make the two sets of names differ.
fn pooled(symbol: &str) -> String {
    if symbol.ends_with("@plt") || symbol == ".plt" {
        "(a PLT entry)".to_string()
    } else {
        symbol.to_string()
    }
}

/// `pmx report --json --sort symbol`'s group rows: symbol → (shares, counts).
fn pmx_group_rows(file: &Path) -> BTreeMap<String, (Vec<f64>, Vec<u64>)> {
    let o = pmx(&[
        "report",
        "-q",
        "--json",
        "--group",
        "--sort",
        "symbol",
        "-i",
        file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["events"][0]["group"]["rows"]
        .as_array()
        .expect("a group")
        .clone();
    let mut m: BTreeMap<String, (Vec<f64>, Vec<u64>)> = BTreeMap::new();
    for r in &rows {
        let (Some(shares), Some(counts), Some(symbol)) = (
            r["shares"].as_array(),
            r["counts"].as_array(),
            r["symbol"].as_str(),
        ) else {
            continue;
        };
        let (s, c) = m
            .entry(pooled(symbol))
            .or_insert_with(|| (vec![0.0; shares.len()], vec![0; counts.len()]));
        for (total, x) in s.iter_mut().zip(shares) {
            *total += x.as_f64().unwrap();
        }
        for (total, x) in c.iter_mut().zip(counts) {
            *total += x.as_u64().unwrap();
        }
    }
    m
}

/// `perf report --group --stdio --sort sym`'s rows (`40.14%  77.72%  [.] faults_1200`):
/// symbol → the shares. perf keeps same-named symbols of two binaries
/// apart (the program's `_start` and ld.so's), pmx's `--sort symbol` joins
/// them (README): their shares are summed here, so a name may carry two of
/// perf's two-decimal roundings (see [`TOLERANCE`]).
fn perf_group_rows(file: &Path) -> BTreeMap<String, Vec<f64>> {
    let o = perf::on_file(&["report", "--group", "--stdio", "--sort", "sym"], file);
    let mut m = BTreeMap::new();
    for line in text(&o.stdout).lines().filter(|l| !l.starts_with('#')) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let shares: Vec<f64> = words
            .iter()
            .map_while(|w| w.strip_suffix('%').and_then(|x| x.parse().ok()))
            .collect();
        if shares.len() == 2 && words.len() > 3 {
            let sum: &mut Vec<f64> = m
                .entry(pooled(&words[3..].join(" ")))
                .or_insert_with(|| vec![0.0; 2]);
            for (total, x) in sum.iter_mut().zip(&shares) {
                *total += x;
            }
        }
    }
    m
}

#[test]
fn page_faults_are_credited_to_the_functions_that_made_them() {
    let dir = tempfile::tempdir().unwrap();
    let bin = match cc::compile(dir.path(), "faults", PROGRAM, &["-O1", "-no-pie"]) {
        Ok(b) => b,
        Err(e) => return skip(e),
    };
    let data = dir.path().join("g.data");
    let o = pmx(&[
        "record",
        "-o",
        data.to_str().unwrap(),
        "-e",
        "{cpu-clock,page-faults}:uS",
        "--",
        bin.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rows = pmx_group_rows(&data);
    // Counts from the deltas: exactly the pages each function touched.
    assert_eq!(rows["faults_300"].1[1], 300, "{rows:?}");
    assert_eq!(rows["faults_1200"].1[1], 1200, "{rows:?}");
    if !perf::require("comparing with perf report --group") {
        return;
    }
    let theirs = perf_group_rows(&data);
    assert!(theirs.contains_key("faults_1200"), "perf saw: {theirs:?}");
    assert!(theirs.len() >= 3, "perf saw: {theirs:?}");
    for (sym, (shares, _)) in &rows {
        let p = theirs
            .get(sym)
            .unwrap_or_else(|| panic!("{sym}: not in perf's {theirs:?}"));
        for (a, b) in shares.iter().zip(p) {
            assert!(
                (a - b).abs() < TOLERANCE,
                "{sym}: pmx {shares:?}, perf {p:?}"
            );
        }
    }
}

#[test]
fn a_described_group_side_by_side_as_perf_shows_it() {
    // `{cpu-clock,page-faults}` without :S, recorded by perf: each member
    // samples on its own, GROUP_DESC says they are a group, and
    // `perf report --group` shows the members' shares side by side.
    if !perf::require("recording a described group with perf") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = match cc::compile(dir.path(), "faults", PROGRAM, &["-O1", "-no-pie"]) {
        Ok(b) => b,
        Err(e) => return skip(e),
    };
    let data = dir.path().join("d.data");
    let o = std::process::Command::new("perf")
        .args(["record", "-q", "-o", data.to_str().unwrap()])
        .args(["-e", "{cpu-clock,page-faults}:u", "--"])
        .arg(&bin)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let ours = pmx_group_rows(&data);
    let theirs = perf_group_rows(&data);
    assert!(theirs.contains_key("faults_1200"), "perf saw: {theirs:?}");
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (sym, (shares, _)) in &ours {
        for (a, b) in shares.iter().zip(&theirs[sym]) {
            assert!(
                (a - b).abs() < TOLERANCE,
                "{sym}: pmx {shares:?}, perf {:?}",
                theirs[sym]
            );
        }
    }
    // One table for both, headed as perf heads it.
    let t = text(&pmx(&["report", "-q", "--group", "-i", data.to_str().unwrap()]).stdout);
    let head = |t: &str| {
        let l = t
            .lines()
            .find(|l| l.starts_with("# Samples: "))
            .unwrap_or("");
        l.split_once(" of event").map(|(_, e)| e.to_string())
    };
    let perf_out = perf::on_file(&["report", "--group", "--stdio"], &data);
    assert_eq!(head(&t), head(&text(&perf_out.stdout)), "{t}");
}

#[test]
fn described_groups_of_the_shared_recordings_as_perf_shows_them() {
    // perf 4.14 (file mode) and 6.8 (pipe mode) recordings of `{A,B}`.
    let Some(dir) = pmx_testkit::shared::shared_data("perfdata") else {
        return;
    };
    if !perf::require("comparing described groups with perf report --group") {
        return;
    }
    for name in [
        "perf_data_converter__perf.data.group_desc-4.14",
        "perf_data_converter__perf.data.piped.header_feautres_group_desc-6.8",
    ] {
        let file = dir.join(name);
        let ours = pmx_group_rows(&file);
        let theirs = perf_group_rows(&file);
        assert!(ours.len() >= 5, "{name}: {ours:?}");
        assert_eq!(ours.len(), theirs.len(), "{name}: {ours:?} {theirs:?}");
        for (sym, (shares, _)) in &ours {
            let p = &theirs[sym];
            for (a, b) in shares.iter().zip(p) {
                assert!((a - b).abs() < TOLERANCE, "{name} {sym}: {shares:?} {p:?}");
            }
        }
    }
}

#[test]
fn metrics_come_from_the_recording_cpus_library() {
    // perf 4.14 recorded this file on a Skylake (`GenuineIntel,6,78,3` in
    // its CPUID header): -M names are looked up in that CPU's library,
    // not this machine's, and an unknown one is bad input (exit 2).
    let Some(dir) = pmx_testkit::shared::shared_data("perfdata") else {
        return;
    };
    let file = dir.join("perf_data_converter__perf.data.group_desc-4.14");
    let out = pmx(&["report", "-i", file.to_str().unwrap(), "-M", "IPX"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("-M: unknown metric 'IPX' for GenuineIntel-6-4E-3"),
        "{err}"
    );
    assert!(err.contains("did you mean"), "{err}");
}

/// Little-endian words.
fn words(w: &[u64]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A non-PIE program with `hot_a` and `hot_b`: the binary and their addresses.
fn two_functions(dir: &Path) -> Option<(std::path::PathBuf, u64, u64)> {
    let src = "int hot_a(int n) { volatile int s = 0; for (int i = 0; i < n; i++) s += i; return s; }\n\
               int hot_b(int n) { volatile int s = 1; for (int i = 0; i < n; i++) s *= 3; return s; }\n\
               int main(void) { return (hot_a(10) + hot_b(10)) & 1; }\n";
    let bin = cc::compile(dir, "two", src, &["-O1", "-no-pie"]).ok()?;
    let nm = std::process::Command::new("nm").arg(&bin).output().ok()?;
    let nm = String::from_utf8_lossy(&nm.stdout);
    let addr = |name: &str| {
        nm.lines()
            .find(|l| l.ends_with(&format!(" {name}")))
            .and_then(|l| u64::from_str_radix(l.split_whitespace().next()?, 16).ok())
    };
    Some((bin.clone(), addr("hot_a")?, addr("hot_b")?))
}

/// A `{cycles,instructions}:S` file (ids 1 and 2, read_format
/// `ID|GROUP|LOST`, as perf 6.x writes it) of one thread whose samples
/// carry these running totals: (ip, cycles, instructions).
fn ipc_file(path: &Path, bin: &Path, samples: &[(u64, u64, u64)]) {
    use pmx_perfdata::format::{misc, read_format as rf, record_type, sample_type as st};
    use pmx_testkit::perfdata::{self as pd, sample_id};
    let sample_type = st::IDENTIFIER | st::IP | st::TID | st::TIME | st::CPU | st::READ;
    let attr = |config: u64, period: u64, flags: u64| {
        let mut a = pd::attr(128, period, sample_type, flags | (1 << 18));
        a[0..4].copy_from_slice(&0u32.to_le_bytes()); // PERF_TYPE_HARDWARE
        a[8..16].copy_from_slice(&config.to_le_bytes());
        a[32..40].copy_from_slice(&(rf::ID | rf::GROUP | rf::LOST).to_le_bytes());
        a
    };
    // The leader: disabled, mmap, comm; the member counts only.
    let attrs = vec![
        pmx_perfdata::FileAttr {
            attr: attr(0, 100_000, 1 | (1 << 8) | (1 << 9)),
            ids: vec![1],
            name: "cycles".into(),
        },
        pmx_perfdata::FileAttr {
            attr: attr(1, 0, 0),
            ids: vec![2],
            name: "instructions".into(),
        },
    ];
    let file = std::fs::File::create(path).unwrap();
    let mut w = pmx_perfdata::Writer::create(std::io::BufWriter::new(file), attrs).unwrap();
    let pid = 4242u32;
    let trailer = |time: u64| [sample_id(pid, time, 0), words(&[1])].concat();
    let mut body = pd::comm(pid, "two");
    body.extend(trailer(10));
    w.write_record(&pd::record(record_type::COMM, misc::COMM_EXEC, &body))
        .unwrap();
    let len = (std::fs::metadata(bin).unwrap().len() + 0xfff) & !0xfff;
    let mut body = pd::mmap2(pid, 0x400000, len, 5, bin.to_str().unwrap());
    body.extend(trailer(11));
    w.write_record(&pd::record(record_type::MMAP2, misc::USER, &body))
        .unwrap();
    for (i, &(ip, cycles, instructions)) in samples.iter().enumerate() {
        // identifier, ip, pid/tid, time, cpu/res, then the read field.
        let mut b = words(&[1, ip]);
        b.extend(pd::pid_tid(pid));
        b.extend(words(&[100 + i as u64, 0]));
        // nr, {value, id, lost} per member (a lost count on the member).
        b.extend(words(&[2, cycles, 1, 0, instructions, 2, i as u64]));
        w.write_record(&pd::record(record_type::SAMPLE, misc::USER, &b))
            .unwrap();
    }
    w.finish(&Default::default()).unwrap();
}

#[test]
fn per_symbol_ipc_from_the_deltas_of_a_hand_built_group() {
    let dir = tempfile::tempdir().unwrap();
    let Some((bin, a, b)) = two_functions(dir.path()) else {
        return skip("no C compiler or nm");
    };
    // Deltas: hot_a (1000, 2500), (1000, 2400), (1000, 2600): IPC 7500/3000;
    // hot_b (2000, 1000), (2000, 1500): IPC 2500/4000.
    let data = dir.path().join("ipc.data");
    let totals = [
        (a + 4, 1000, 2500),
        (b + 4, 3000, 3500),
        (a + 8, 4000, 5900),
        (b + 8, 6000, 7400),
        (a + 4, 7000, 10000),
    ];
    ipc_file(&data, &bin, &totals);
    let o = pmx(&[
        "report",
        "-q",
        "-M",
        "IPC",
        "--sort",
        "symbol",
        "-i",
        data.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let row = |sym: &str| {
        out.lines()
            .find(|l| l.ends_with(sym))
            .unwrap_or_else(|| panic!("{sym}:\n{out}"))
            .to_string()
    };
    assert!(
        row("[.] hot_a").contains("  3000 ") && row("[.] hot_a").contains(" 2.500 ±"),
        "{out}"
    );
    assert!(
        row("[.] hot_b").contains("  4000 ") && row("[.] hot_b").contains(" 0.6250 ±"),
        "{out}"
    );
    // The interval, by hand: R = 2.5, residuals y − R·x = 0, −100, 100,
    // Var = 10000 per sample, half-width 1.96·√(3·10000)/3000 = 0.113161.
    let o = pmx(&[
        "report",
        "-q",
        "--json",
        "-M",
        "IPC",
        "--sort",
        "symbol",
        "-i",
        data.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["events"][0]["group"]["rows"].as_array().unwrap();
    let hot_a = rows.iter().find(|r| r["symbol"] == "hot_a").unwrap();
    let ipc = &hot_a["metrics"]["IPC"];
    assert_eq!(ipc["value"].as_f64(), Some(2.5));
    assert!(
        (ipc["high"].as_f64().unwrap() - 2.613161).abs() < 1e-4,
        "{ipc}"
    );
    assert_eq!(
        (ipc["samples"].as_u64(), ipc["few_samples"].as_bool()),
        (Some(3), Some(true))
    );
    assert_eq!(hot_a["counts"], serde_json::json!([3000, 7500]));
    // The per-event header counts every member.
    let plain = text(&pmx(&["report", "-q", "-i", data.to_str().unwrap()]).stdout);
    assert!(
        plain.contains("event 'instructions': 5 samples, event count 10000"),
        "{plain}"
    );
}

#[test]
fn per_event_read_values_count_as_perf_counts_them() {
    // `cpu-clock:S,page-faults:S`: no group, each sample reads its own
    // event's value (read_format ID|LOST); perf weighs each sample by the
    // value's delta, and so does pmx.
    if !perf::require("recording per-event read values with perf") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("s.data");
    let workload = env!("CARGO_BIN_EXE_pmx-workload");
    let o = std::process::Command::new("perf")
        .args([
            "record",
            "-q",
            "-o",
            data.to_str().unwrap(),
            "-e",
            "cpu-clock:S,page-faults:S",
            "--",
        ])
        .args([workload, "pages", "2000"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let theirs = text(&perf::on_file(&["report", "--stdio"], &data).stdout);
    let counts: Vec<&str> = theirs
        .lines()
        .filter_map(|l| l.strip_prefix("# Event count (approx.): "))
        .collect();
    let ours = text(&pmx(&["report", "-q", "-i", data.to_str().unwrap()]).stdout);
    let names = ["cpu-clock:S", "page-faults:S"];
    assert_eq!(counts.len(), 2, "{theirs}");
    for (name, count) in names.iter().zip(&counts) {
        let line = format!("event count {count}");
        assert!(
            ours.lines().any(|l| l.contains(name) && l.ends_with(&line)),
            "{name} {count}:\n{ours}"
        );
    }
}

/// `objdump -d`'s instruction addresses of `sym` in `bin`.
fn instructions(bin: &Path, sym: &str) -> Option<Vec<u64>> {
    let o = std::process::Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(bin)
        .output()
        .ok()?;
    let all = text(&o.stdout);
    let body = all
        .split_once(&format!("<{sym}>:"))?
        .1
        .split("\n\n")
        .next()?;
    let addrs = body.lines().filter_map(|l| {
        let (addr, _) = l.trim().split_once(":\t")?;
        u64::from_str_radix(addr, 16).ok()
    });
    Some(addrs.collect())
}

#[test]
fn per_instruction_ipc_from_the_deltas_of_a_hand_built_group() {
    let dir = tempfile::tempdir().unwrap();
    let Some((bin, _, b)) = two_functions(dir.path()) else {
        return skip("no C compiler or nm");
    };
    let Some(ins) = instructions(&bin, "hot_a").filter(|i| i.len() >= 3) else {
        return skip("objdump cannot list hot_a here");
    };
    // Deltas at hot_a's first instruction: (1000, 2500), (1000, 2400),
    // (1000, 2600): IPC 7500/3000 = 2.5; at its third: (2000, 1000),
    // (2000, 1500): IPC 2500/4000 = 0.625; hot_a: 10000/7000; one sample
    // in hot_b (1000, 100) is not hot_a's.
    let (i0, i2) = (ins[0], ins[2]);
    let totals = [
        (i0, 1000, 2500),
        (i2, 3000, 3500),
        (i0, 4000, 5900),
        (b, 5000, 6000),
        (i2, 7000, 7500),
        (i0, 8000, 10100),
    ];
    let data = dir.path().join("ipc.data");
    ipc_file(&data, &bin, &totals);
    let file = data.to_str().unwrap();
    let o = pmx(&["annotate", "hot_a", "--metrics", "IPC", "-i", file]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let row = |addr: u64| {
        let at = format!(" :  {addr:>8x}:  ");
        out.lines()
            .find(|l| l.contains(&at))
            .unwrap_or_else(|| panic!("{addr:#x}:\n{out}"))
            .to_string()
    };
    // The interval at i0 as report's per row (0.113161); at i2: residuals
    // ∓250, n·Var = 2·125000, half-width 1.96·500/4000 = 0.245.
    assert!(row(i0).contains(" 2.500 ±0.1132* :"), "{out}");
    assert!(row(i2).contains(" 0.6250 ±0.2450* :"), "{out}");
    assert!(!row(ins[1]).contains('±'), "{out}");
    assert!(out.contains("# IPC over hot_a: 1.429 ±"), "{out}");
    assert!(
        out.contains("(5 samples of {cycles,instructions})"),
        "{out}"
    );
    // JSON: the same cells, exact values; report --annotate -M is the same call.
    let o = pmx(&[
        "annotate",
        "hot_a",
        "--metrics",
        "IPC",
        "--json",
        "-i",
        file,
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let at = |addr: u64| {
        let all = v["instructions"].as_array().unwrap();
        all.iter().find(|i| i["addr"] == addr).unwrap().clone()
    };
    let ipc = |addr: u64| at(addr)["metrics"]["IPC"].clone();
    assert_eq!(ipc(i0)["value"].as_f64(), Some(2.5));
    assert!((ipc(i0)["high"].as_f64().unwrap() - 2.613161).abs() < 1e-4);
    assert_eq!(
        (
            ipc(i0)["samples"].as_u64(),
            ipc(i0)["few_samples"].as_bool()
        ),
        (Some(3), Some(true))
    );
    assert_eq!(ipc(i2)["value"].as_f64(), Some(0.625));
    assert!((ipc(i2)["low"].as_f64().unwrap() - 0.38).abs() < 1e-4);
    assert_eq!(ipc(ins[1]), serde_json::Value::Null);
    assert_eq!(at(i2)["period"]["instructions"].as_u64(), Some(2500));
    let whole = &v["metrics"][0];
    assert_eq!(
        (whole["name"].as_str(), whole["samples"].as_u64()),
        (Some("IPC"), Some(5))
    );
    assert!((whole["value"].as_f64().unwrap() - 10000.0 / 7000.0).abs() < 1e-12);
    assert_eq!(
        whole["members"],
        serde_json::json!(["cycles", "instructions"])
    );
    let r = pmx(&[
        "report",
        "--annotate",
        "hot_a",
        "-M",
        "IPC",
        "--json",
        "-i",
        file,
    ]);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&r.stdout).unwrap(),
        v
    );
    // A metric the library does not have: bad input.
    let o = pmx(&["annotate", "hot_a", "--metrics", "NoSuchMetric", "-i", file]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}
