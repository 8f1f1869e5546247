//! Sample-read groups end to end: `pmx record -e '{cpu-clock,page-faults}:uS'`
//! on a C program whose functions each touch a known number of fresh pages
//! (one minor fault each) and then spin in place, so every fault is
//! credited, through the page-fault deltas, to the function that made it;
//! the same file read by Debian's perf (`perf report --group --stdio`) and
//! by `pmx report --group` gives the same per-symbol shares. Then a file
//! built by hand with pmx-perfdata's Writer: a `{cycles,instructions}:S`
//! group with known deltas, and `pmx report -M IPC` prints each symbol's
//! exact IPC.

mod common;
use common::pmx;
use pmx_testkit::{cc, perf, skip, text};
use std::collections::BTreeMap;
use std::path::Path;

const PROGRAM: &str = r#"
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
    for (volatile long k = 0; k < SPIN; k++);
    faults_300();
    faults_1200();
    return 0;
}
"#;

/// `pmx report --json`'s group rows: symbol → (shares, counts).
fn pmx_group_rows(file: &Path) -> BTreeMap<String, (Vec<f64>, Vec<u64>)> {
    let o = pmx(&["report", "-q", "--json", "--group", "-i", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["events"][0]["group"]["rows"].as_array().expect("a group").clone();
    rows.iter()
        .filter_map(|r| {
            let shares = r["shares"].as_array()?.iter().map(|x| x.as_f64().unwrap()).collect();
            let counts = r["counts"].as_array()?.iter().map(|x| x.as_u64().unwrap()).collect();
            Some((r["symbol"].as_str()?.to_string(), (shares, counts)))
        })
        .collect()
}

/// `perf report --group --stdio --sort sym`'s rows (`40.14%  77.72%  [.] faults_1200`):
/// symbol → the shares.
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
            m.insert(words[3..].join(" "), shares);
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
        "record", "-o", data.to_str().unwrap(), "-e", "{cpu-clock,page-faults}:uS", "--",
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
        let p = theirs.get(sym).unwrap_or_else(|| panic!("{sym}: not in perf's {theirs:?}"));
        for (a, b) in shares.iter().zip(p) {
            assert!((a - b).abs() < 0.011, "{sym}: pmx {shares:?}, perf {p:?}");
        }
    }
}
