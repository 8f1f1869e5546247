//! `pmx report` end to end: every real recording in `../shared/data/perfdata`
//! (per-event sample counts equal to `perf script`'s where perf 6.1 reads
//! the file), recordings made here with perf of a program with one hot
//! function (file mode, pipe mode, zstd), folded stacks, flame graphs and
//! bad input.

use crate::common::{pmx, PMX};
use pmx_testkit::shared::shared_data;
use pmx_testkit::text;
use pmx_testkit::{cc, perf};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn shared() -> Option<PathBuf> {
    shared_data("perfdata")
}

/// Per-event sample counts from `pmx report --json`.
fn pmx_counts(file: &Path) -> BTreeMap<String, u64> {
    let o = pmx(&["report", "--json", "-q", "-i", file.to_str().unwrap()]);
    assert!(
        o.status.success(),
        "pmx report {}: {}",
        file.display(),
        text(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["samples"].as_u64().unwrap() > 0)
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["samples"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Per-event sample counts from `perf script -F event`, or `None` when
/// perf cannot read the file.
fn perf_counts(file: &Path) -> Option<BTreeMap<String, u64>> {
    let o = perf::try_on_file(&["script", "-G", "-F", "event"], file).ok()?;
    if !o.status.success() {
        return None;
    }
    let mut m = BTreeMap::new();
    for line in text(&o.stdout).lines() {
        let name = line.trim().trim_end_matches(':').trim();
        if !name.is_empty() {
            *m.entry(name.to_string()).or_insert(0) += 1;
        }
    }
    Some(m)
}

#[test]
fn reads_every_shared_recording_and_matches_perf_script() {
    let Some(dir) = shared() else { return };
    let perf = perf::available();
    let mut compared = 0;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 7, "{files:?}");
    for f in &files {
        let ours = pmx_counts(f);
        assert!(!ours.is_empty(), "{}: no samples", f.display());
        // Table and folded output work on every file too.
        let o = pmx(&["report", "-q", "-i", f.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(text(&o.stdout).contains("# Samples:"));
        if !perf {
            continue;
        }
        match perf_counts(f) {
            Some(theirs) => {
                assert_eq!(ours, theirs, "{}: pmx vs perf script", f.display());
                compared += 1;
            }
            None => eprintln!(
                "{}: perf 6.1 cannot read it; pmx counts {ours:?}",
                f.display()
            ),
        }
    }
    if perf {
        assert!(
            compared >= 5,
            "only {compared} files compared with perf script"
        );
    }
}

#[test]
fn shared_compressed_pipe_file() {
    let Some(dir) = shared() else { return };
    let f = dir.join("linux-perf-data__fibo.compressed2.pipe.data");
    let o = pmx(&["report", "--json", "-i", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["mode"], "pipe");
    assert_eq!(v["host"]["hostname"], "arthur-des");
    let ev = &v["events"][0];
    assert_eq!(ev["name"], "cycles:P");
    assert_eq!(ev["samples"], 547);
    // Standard input: the same stream piped.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cat '{}' | '{PMX}' report --json -i -",
            f.display()
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let w: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(w["events"][0]["samples"], 547);
}

/// A program with one hot function, compiled with frame pointers.
fn hot_program(dir: &Path) -> Option<PathBuf> {
    cc::compile(
        dir,
        "hot",
        "#include <stdlib.h>\n\
         __attribute__((noinline)) long hot_function(long n) { long s = 0; for (long i = 0; i < n; i++) s += (i * i) ^ (s >> 3); return s; }\n\
         __attribute__((noinline)) long cold_function(long n) { long s = 1; for (long i = 0; i < n; i++) s += i ^ s; return s; }\n\
         int main(int argc, char **argv) { long n = argc > 1 ? atol(argv[1]) : 60000000; return (int)((hot_function(n) + cold_function(n / 20)) & 1); }\n",
        &["-O0", "-g", "-fno-omit-frame-pointer"],
    )
    .ok()
}

/// `perf record` the hot program; `extra` are more perf flags. Returns
/// false when perf cannot sample here.
fn record(bin: &Path, out: &Path, extra: &[&str]) -> bool {
    let mut args = vec!["-g"];
    args.extend_from_slice(extra);
    match perf::record_cpu_clock(&args, out, bin) {
        Ok(()) => true,
        Err(why) => {
            eprintln!("{why}");
            false
        }
    }
}

struct Recording {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    bin: PathBuf,
}

fn setup() -> Option<Recording> {
    if !perf::require("") {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let Some(bin) = hot_program(&path) else {
        pmx_testkit::skip("no C compiler");
        return None;
    };
    Some(Recording {
        _dir: dir,
        dir: path,
        bin,
    })
}

#[test]
fn hot_function_first_with_callchains_folded_and_flamegraph() {
    let Some(r) = setup() else { return };
    let data = r.dir.join("perf.data");
    if !record(&r.bin, &data, &[]) {
        return;
    }
    let f = data.to_str().unwrap();
    let o = pmx(&["report", "--json", "-i", f]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ev = &v["events"][0];
    assert_eq!(ev["name"], "cpu-clock");
    let top = &ev["rows"][0];
    assert_eq!(top["symbol"], "hot_function", "{ev:#}");
    assert_eq!(top["dso"], "hot");
    assert_eq!(top["comm"], "hot");
    assert!(top["overhead"].as_f64().unwrap() > 60.0, "{top}");
    assert_eq!(
        Some(ev["samples"].as_u64().unwrap()),
        perf_counts(&data).map(|m| m["cpu-clock"])
    );

    // The table names it first too, with perf's [.] marker.
    let o = pmx(&["report", "-i", f, "--lines"]);
    let table = text(&o.stdout);
    let first = table
        .lines()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
        .unwrap();
    assert!(
        first.contains("[.] hot_function") && first.contains("hot.c:"),
        "{table}"
    );

    // Folded stacks: hot_function called from main.
    let o = pmx(&["report", "--folded", "-i", f]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let folded = text(&o.stdout);
    let hot: u64 = folded
        .lines()
        .filter(|l| l.starts_with("hot;") && l.contains(";main;hot_function"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(hot * 2 > ev["samples"].as_u64().unwrap(), "{folded}");

    // Flame graph SVG.
    let svg = r.dir.join("flame.svg");
    let o = pmx(&[
        "report",
        "-q",
        "-i",
        f,
        "--flamegraph",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(
        s.starts_with("<?xml") && s.contains("<title>hot_function (") && s.contains(">main</text>"),
        "{s}"
    );

    // --children: main holds most samples inclusively, none itself.
    let o = pmx(&["report", "--json", "--children", "-i", f]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["events"][0]["rows"].as_array().unwrap();
    let main = rows
        .iter()
        .find(|r| r["symbol"] == "main")
        .expect("main row");
    assert!(
        main["children"].as_f64().unwrap() > 60.0 && main["overhead"].as_f64().unwrap() < 5.0,
        "{main}"
    );

    // --sort pid,symbol and --percent-limit.
    let o = pmx(&[
        "report",
        "--json",
        "--sort",
        "pid,sym",
        "--percent-limit",
        "50",
        "-i",
        f,
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["events"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert!(rows[0]["pid"].as_u64().unwrap() > 0 && rows[0]["comm"].is_null());
}

#[test]
fn pipe_mode_and_zstd_give_perf_script_counts() {
    let Some(r) = setup() else { return };
    // Pipe mode: perf record -o - > file, read from the file and from stdin.
    let pipe = r.dir.join("pipe.data");
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "perf record -q -e cpu-clock -F 5000 -g -o - -- '{}' > '{}'",
            r.bin.display(),
            pipe.display()
        ))
        .status()
        .unwrap();
    assert!(status.success());
    let ours = pmx_counts(&pipe);
    assert_eq!(Some(ours.clone()), perf_counts(&pipe));
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cat '{}' | '{PMX}' report --json -i -",
            pipe.display()
        ))
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["events"][0]["samples"].as_u64(),
        ours.get("cpu-clock").copied()
    );
    assert_eq!(v["events"][0]["rows"][0]["symbol"], "hot_function");

    // A pipe stream cut inside a record (the writer was stopped): the
    // complete records stand, as perf script reads them, with a warning.
    let bytes = std::fs::read(&pipe).unwrap();
    let cut = r.dir.join("cut.pipe");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3 + 3]).unwrap();
    let o = pmx(&["report", "--json", "-i", cut.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["truncated"]["stream_cut"], true, "{v}");
    assert!(text(&o.stderr).contains("the stream is truncated"));
    let ours = pmx_counts(&cut);
    assert!(ours["cpu-clock"] > 0);
    if let Some(theirs) = perf_counts(&cut) {
        assert_eq!(ours, theirs);
    }

    // zstd-compressed records (perf record -z).
    let z = r.dir.join("z.data");
    if !record(&r.bin, &z, &["-z"]) {
        return;
    }
    let ours = pmx_counts(&z);
    assert_eq!(Some(ours), perf_counts(&z));
    let o = pmx(&["report", "-i", z.to_str().unwrap()]);
    assert!(
        text(&o.stdout).contains("zstd-compressed"),
        "{}",
        text(&o.stdout)
    );
}

/// `pmx record`'s files (written with pmx-perfdata's writer) read the same
/// in pmx report and perf script.
#[test]
fn reads_pmx_record_files() {
    let Some(r) = setup() else { return };
    let data = r.dir.join("pmx.data");
    let o = Command::new(PMX)
        .args(["record", "-e", "cpu-clock", "-F", "5000", "-g", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&r.bin)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    if !o.status.success() && !data.exists() {
        pmx_testkit::skip(format_args!("pmx record failed here: {}", text(&o.stderr)));
        return;
    }
    let ours = pmx_counts(&data);
    assert_eq!(Some(ours), perf_counts(&data));
    let o = pmx(&["report", "--json", "-i", data.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["events"][0]["rows"][0]["symbol"], "hot_function", "{v:#}");
}

/// File offset and size of every SAMPLE record, from `perf report -D`.
fn perf_sample_records(file: &Path) -> Vec<(u64, u64)> {
    perf_records(file, "PERF_RECORD_SAMPLE", "")
}

/// File offset and size of every record of `kind` (a `perf report -D`
/// record name prefix) whose dump line contains `needle`.
fn perf_records(file: &Path, kind: &str, needle: &str) -> Vec<(u64, u64)> {
    let o = perf::on_file(&["report", "-D"], file);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let hex = |t: &str| u64::from_str_radix(t.trim_start_matches("0x"), 16).ok();
    let mut out = Vec::new();
    for line in text(&o.stdout).lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        for i in 0..t.len().saturating_sub(2) {
            if t[i + 2].starts_with(kind) && t[i + 1].starts_with("[0x") && line.contains(needle) {
                let size = hex(t[i + 1].trim_start_matches('[').trim_end_matches("]:"));
                if let (Some(off), Some(size)) = (hex(t[i]), size) {
                    out.push((off, size));
                }
            }
        }
    }
    out
}

/// A recording cut inside its data section (as a full disk or a killed
/// copy leaves it) or with data size 0 (perf record killed): the complete
/// samples before the cut are reported, with a warning.
#[test]
fn truncated_and_unfinished_recordings() {
    let Some(r) = setup() else { return };
    let data = r.dir.join("perf.data");
    if !record(&r.bin, &data, &[]) {
        return;
    }
    let bytes = std::fs::read(&data).unwrap();
    let data_offset = u64::from_le_bytes(bytes[40..48].try_into().unwrap());
    let data_end = data_offset + u64::from_le_bytes(bytes[48..56].try_into().unwrap());
    let samples = perf_sample_records(&data);
    // The program's mapping is written by the CPU that ran its exec, and a
    // loaded machine can drain that CPU's buffer after others' samples: a
    // cut before the mapping leaves the program's samples `[unknown]`
    // (perf's report too), so the symbol checks start after it.
    let mapped = perf_records(&data, "PERF_RECORD_MMAP", "/hot")
        .iter()
        .map(|(off, size)| off + size)
        .max()
        .expect("the program's mappings");
    let full = pmx_counts(&data)["cpu-clock"];
    assert_eq!(samples.len() as u64, full);
    let span = data_end - data_offset;
    let cut_file = r.dir.join("cut.data");
    for cut in [
        data_offset + span / 4,
        data_offset + span / 2 + 5,
        data_offset + span * 3 / 4 + 1,
        data_end - 3,
    ] {
        std::fs::write(&cut_file, &bytes[..cut as usize]).unwrap();
        let want = samples.iter().filter(|(o, s)| o + s <= cut).count() as u64;
        let o = pmx(&["report", "--json", "-i", cut_file.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "cut {cut}: {}", text(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let ev = &v["events"][0];
        assert_eq!(ev["samples"].as_u64(), Some(want), "cut at {cut}");
        assert!(want <= full && want > 0);
        // Early in the data the samples taken before the program reaches
        // its loop (perf-exec, the loader) can outweigh it, or on a loaded
        // machine be all there is; it is there from the half on, and first
        // once most of the recording is in.
        let rows = ev["rows"].as_array().unwrap();
        if cut >= data_offset + span / 2 && cut >= mapped {
            assert!(
                rows.iter().any(|r| r["symbol"] == "hot_function"),
                "cut at {cut}: {ev:#}"
            );
        }
        if cut >= data_offset + span * 3 / 4 && cut >= mapped {
            assert_eq!(rows[0]["symbol"], "hot_function", "cut at {cut}: {ev:#}");
        }
        assert_eq!(v["truncated"]["declared_data_end"].as_u64(), Some(data_end));
        assert!(
            text(&o.stderr).contains("the file is truncated: ")
                && text(&o.stderr).contains("missing"),
            "{}",
            text(&o.stderr)
        );
    }
    // Data size 0, as a killed perf record leaves it, features not written.
    let cut = data_offset + span / 2;
    let mut unfinished = bytes[..cut as usize].to_vec();
    unfinished[48..56].fill(0);
    std::fs::write(&cut_file, &unfinished).unwrap();
    let o = pmx(&["report", "-i", cut_file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let table = text(&o.stdout);
    let want = samples.iter().filter(|(o, s)| o + s <= cut).count();
    assert!(
        table.contains("# WARNING: the file is truncated: ")
            && table.contains("data size is 0")
            && table.contains(&format!("# Samples: {want} of event 'cpu-clock'")),
        "{table}"
    );
}

/// `[vdso]` rows of `perf report --stdio --sort dso,sym`: symbol → overhead.
fn perf_vdso_rows(file: &Path) -> BTreeMap<String, f64> {
    let o = perf::on_file(&["report", "--stdio", "--sort", "dso,sym"], file);
    assert!(o.status.success(), "{}", text(&o.stderr));
    text(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains("[vdso]"))
        .filter_map(|l| {
            let pct = l
                .split_whitespace()
                .next()?
                .trim_end_matches('%')
                .parse()
                .ok()?;
            let sym = l.split_once("[.] ")?.1.trim().to_string();
            Some((sym, pct))
        })
        .collect()
}

/// A program spending its time in the vDSO's clock_gettime: pmx names
/// the vDSO's functions as perf report does, with the same overheads.
#[test]
fn vdso_symbols_match_perf_report() {
    let Some(r) = setup() else { return };
    let bin = cc::compile(
        &r.dir,
        "vdso",
        "#include <time.h>\n\
         int main(void) { struct timespec t, s; long n = 0; clock_gettime(CLOCK_MONOTONIC, &s);\n\
         do { clock_gettime(CLOCK_MONOTONIC, &t); n++; } while ((t.tv_sec - s.tv_sec) * 1000000000L + (t.tv_nsec - s.tv_nsec) < 300000000L);\n\
         return n == 0; }\n",
        &["-O1"],
    )
    .unwrap();
    let data = r.dir.join("vdso.data");
    if let Err(why) = perf::record_cpu_clock(&[], &data, &bin) {
        pmx_testkit::skip(why);
        return;
    }
    let theirs = perf_vdso_rows(&data);
    let o = pmx(&[
        "report",
        "--json",
        "--sort",
        "dso,sym",
        "-i",
        data.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ours: BTreeMap<String, f64> = v["events"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["dso"] == "[vdso]")
        .map(|r| {
            (
                r["symbol"].as_str().unwrap().to_string(),
                r["overhead"].as_f64().unwrap(),
            )
        })
        .collect();
    let top = ours
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(s, p)| (s.clone(), *p));
    let (sym, pct) = top.expect("a [vdso] row");
    assert!(sym.contains("clock_gettime") && pct > 30.0, "{ours:?}");
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>(),
        "pmx {ours:?} vs perf {theirs:?}"
    );
    for (s, p) in &theirs {
        assert!(
            (ours[s] - p).abs() < 0.01,
            "{s}: pmx {} vs perf {p}",
            ours[s]
        );
    }
}

#[test]
fn bad_input_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.data");
    let o = pmx(&["report", "-i", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("no such file"),
        "{}",
        text(&o.stderr)
    );

    let junk = dir.path().join("junk.data");
    std::fs::write(&junk, b"definitely not a perf.data file").unwrap();
    let o = pmx(&["report", "-i", junk.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("not a perf.data file"),
        "{}",
        text(&o.stderr)
    );

    if let Some(shared) = shared() {
        // A truncated real file is read as far as it goes, with a warning;
        // a corrupt record in it is an error with the offset, never a panic.
        let bytes =
            std::fs::read(shared.join("perf_data_converter__perf.data.lost_samples-4.4")).unwrap();
        let cut = dir.path().join("cut.data");
        let mut half = bytes[..bytes.len() / 2].to_vec();
        std::fs::write(&cut, &half).unwrap();
        let o = pmx(&["report", "-i", cut.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert!(
            text(&o.stdout).contains("# WARNING: the file is truncated: ")
                && text(&o.stderr).contains("truncated"),
            "{}",
            text(&o.stdout)
        );
        let data_offset = u64::from_le_bytes(half[40..48].try_into().unwrap()) as usize;
        half[data_offset + 6..data_offset + 8].copy_from_slice(&3u16.to_le_bytes());
        std::fs::write(&cut, &half).unwrap();
        let o = pmx(&["report", "-i", cut.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1));
        assert!(
            text(&o.stderr).contains(&format!("at byte {data_offset:#x}: record of type")),
            "{}",
            text(&o.stderr)
        );

        let f = shared.join("perf_data_converter__perf.data.group_desc-4.14");
        let o = pmx(&["report", "--event", "nosuch", "-i", f.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2));
        assert!(
            text(&o.stderr).contains("cache-references"),
            "{}",
            text(&o.stderr)
        );
    }

    let o = pmx(&[
        "report",
        "--sort",
        "comm,bogus",
        "-i",
        junk.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("bogus"));
    let o = pmx(&["report", "--no-such-flag"]);
    assert_eq!(o.status.code(), Some(2));
}

/// The table header's sample count is shortened as perf's `convert_unit`
/// shortens it, a unit taken only past 1000 (`1000 `, then `1K`): pmx
/// under perf's name beside perf on files of 999 to 2001 samples written
/// by pmx-perfdata's writer.
#[test]
fn samples_header_shortens_counts_as_perf_does() {
    use pmx_perfdata::format::{misc, record_type, sample_type};
    use pmx_testkit::perfdata::{attr, memory_writer, record};
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let as_perf = dir.path().join("perf");
    std::os::unix::fs::symlink(PMX, &as_perf).unwrap();
    let header = |out: &[u8]| {
        (text(out).lines())
            .find(|l| l.starts_with("# Samples:"))
            .map(String::from)
    };
    for (n, want) in [
        (999u64, "999 "),
        (1000, "1000 "),
        (1001, "1K"),
        (2000, "2K"),
        (2001, "2K"),
    ] {
        let st = sample_type::IP | sample_type::TID | sample_type::TIME | sample_type::PERIOD;
        let mut w = memory_writer(attr(128, 1, st, 0));
        for i in 0..n {
            let mut b = Vec::new();
            for x in [0x40_1000 + i % 7, 7 | 7 << 32, 1000 + i, 1] {
                b.extend_from_slice(&x.to_le_bytes());
            }
            (w.write_record(&record(record_type::SAMPLE, misc::USER, &b))).unwrap();
        }
        let path = dir.path().join(format!("{n}.data"));
        std::fs::write(&path, w.finish(&Default::default()).unwrap().into_inner()).unwrap();
        let theirs = header(&perf::on_file(&["report", "--stdio"], &path).stdout);
        let want = format!("# Samples: {want} of event 'cpu-clock'");
        assert_eq!(theirs.as_deref(), Some(want.as_str()), "perf, {n} samples");
        let o = Command::new(&as_perf)
            .args(["report", "--stdio", "-i"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert_eq!(header(&o.stdout), theirs, "{n} samples");
    }
}
