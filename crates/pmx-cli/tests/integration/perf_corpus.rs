//! Real `perf stat` outputs people published, read back by `pmx analyze`
//! (`tests/data/perf-stat/`, index in its `README.md`).
//!
//! Each output `NN-name.{txt,csv,json}` sits beside `NN-name.meta`: its
//! source address, the CPU it was counted on, the CPU id and tables it is
//! analyzed with, the events perf listed, and every metric perf printed in
//! file order, written from the output: `printed:` lines are metrics pmx
//! must reproduce (within 0.1 percentage point, 0.5 % relative, or half a
//! unit of the last digit perf printed, widened by the precision of the
//! msec clocks perf printed), `none:` lines are metrics pmx cannot
//! compute from the file, with the reason.
//!
//! The outputs whose metrics need a CPU's tables (`tables:` in the
//! `.meta`) read Intel's from `../shared/data/`; the test skips without
//! them.

use crate::common::pmx;
use pmx_testkit::shared::{intel_perfmon, linux_perf_events};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/perf-stat")
}

/// What pmx must make of a metric perf printed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Reproduce it.
    Printed,
    /// Have no value (the file lacks an input, or pmx the metric).
    None,
    /// Compute a different value: perf's own output disagrees with it.
    Differs,
}

/// One `.meta` file.
#[derive(Debug, Default)]
struct Meta {
    source: String,
    analyze_as: String,
    tables: String,
    events: Vec<String>,
    /// (kind, unit, value).
    metrics: Vec<(Kind, String, f64)>,
}

fn meta(path: &Path) -> Meta {
    let text = std::fs::read_to_string(path).unwrap();
    let mut m = Meta::default();
    for line in text.lines() {
        let (k, v) = line
            .split_once(": ")
            .or_else(|| line.strip_suffix(':').map(|k| (k, "")))
            .unwrap_or_else(|| panic!("{line}"));
        match k {
            "source" => m.source = v.to_string(),
            "analyze-as" => m.analyze_as = v.to_string(),
            "tables" => m.tables = v.to_string(),
            "events" => {
                m.events = v
                    .split(", ")
                    .filter(|e| !e.is_empty())
                    .map(str::to_string)
                    .collect()
            }
            "printed" | "none" | "differs" => {
                let kind = match k {
                    "printed" => Kind::Printed,
                    "none" => Kind::None,
                    _ => Kind::Differs,
                };
                let f: Vec<&str> = v.split(" | ").collect();
                m.metrics
                    .push((kind, f[1].to_string(), f[2].parse().unwrap()));
            }
            _ => {}
        }
    }
    m
}

/// The output file a `.meta` describes.
fn output_of(meta: &Path) -> PathBuf {
    let stem = meta.file_stem().unwrap().to_str().unwrap();
    ["txt", "csv", "json"]
        .iter()
        .map(|e| corpus().join(format!("{stem}.{e}")))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("no output for {}", meta.display()))
}

#[test]
fn every_published_output_is_read_and_every_printed_metric_reproduced() {
    let (Some(intel), Some(amd)) = (intel_perfmon(), linux_perf_events()) else {
        return pmx_testkit::skip("Intel's and Linux perf's tables are not in ../shared/data");
    };
    let mut metas: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "meta"))
        .collect();
    metas.sort();
    assert!(metas.len() >= 30, "{} outputs", metas.len());
    // One pmx per output, two at a time (each loads its CPU's tables).
    let runs: Vec<(Meta, PathBuf, std::process::Output)> = std::thread::scope(|s| {
        let handles: Vec<_> = metas
            .chunks(metas.len().div_ceil(2))
            .map(|chunk| {
                let (intel, amd) = (&intel, &amd);
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|mp| {
                            let m = meta(mp);
                            let file = output_of(mp);
                            let mut args = vec![
                                "analyze".to_string(),
                                file.to_str().unwrap().to_string(),
                                "--cpu".to_string(),
                                m.analyze_as.clone(),
                                "--json".to_string(),
                            ];
                            // Only the outputs whose metrics need a CPU's
                            // tables load them (loading is the slow part).
                            let dir = match m.tables.as_str() {
                                "intel-perfmon" => Some(intel),
                                "linux-perf-events" => Some(amd),
                                _ => None,
                            };
                            if let Some(d) = dir {
                                args.push("--events-dir".to_string());
                                args.push(d.to_str().unwrap().to_string());
                            }
                            let args: Vec<&str> = args.iter().map(String::as_str).collect();
                            let out = pmx(&args);
                            (m, file, out)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let (mut reproduced, mut failures) = (0, Vec::new());
    for (m, file, out) in runs {
        assert!(m.source.starts_with("https://"), "{}", file.display());
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let d: Value = serde_json::from_slice(&out.stdout).unwrap();
        let events: Vec<&str> = d["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        let inputs: Vec<String> = m.events.iter().map(|e| one_input(e)).collect();
        assert_eq!(events, inputs, "{name}: events");
        let printed = d["perf_printed"].as_array().unwrap();
        assert_eq!(
            printed.len(),
            m.metrics.len(),
            "{name}: metrics perf printed"
        );
        for (p, (kind, unit, value)) in printed.iter().zip(&m.metrics) {
            assert_eq!(p["perf_unit"].as_str().unwrap(), unit, "{name}");
            let pv = p["perf_value"].as_f64().unwrap();
            assert!((pv - value).abs() < 1e-9, "{name}: {unit} {pv} != {value}");
            match kind {
                Kind::Printed if p["agrees"] == Value::Bool(true) => reproduced += 1,
                Kind::Printed => failures.push(format!(
                    "{name}: {unit}: perf {value}, pmx {}",
                    p["pmx_value"]
                )),
                Kind::None => {
                    assert!(
                        p["pmx_value"].is_null(),
                        "{name}: {unit}: pmx has a value now: {p}"
                    );
                    assert!(p["why_not"].is_string(), "{name}: {unit}");
                }
                Kind::Differs => assert_eq!(p["agrees"], Value::Bool(false), "{name}: {unit}"),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(reproduced >= 90, "{reproduced} metrics reproduced");
}

#[test]
fn the_cpu_comes_from_hybrid_rows_or_from_the_event_tables() {
    let Some(intel) = intel_perfmon() else {
        return pmx_testkit::skip("Intel's tables are not in ../shared/data");
    };
    let dir = intel.to_str().unwrap();
    let hybrid = corpus().join("16-alderlake-perf63.txt");
    let out = pmx(&["analyze", hybrid.to_str().unwrap(), "--events-dir", dir]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(
            "CPU GenuineIntel-6-97 (Alder Lake): the file has perf's hybrid cpu_core/cpu_atom rows"
        ),
        "{text}"
    );
    // Each core type its own metrics: IPC from its own rows (perf's
    // counts: 6,679,379 / 21,257,199 on cpu_core, 753,197 / 2,162,192 on
    // cpu_atom), and the P-core table only on the P-cores.
    let out = pmx(&[
        "analyze",
        hybrid.to_str().unwrap(),
        "--events-dir",
        dir,
        "--json",
    ]);
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    let metric = |name: &str, core: &str| {
        d["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name && m["core_type"] == core)
            .and_then(|m| m["value"].as_f64())
    };
    let ipc_core = metric("IPC", "cpu_core").unwrap();
    let ipc_atom = metric("IPC", "cpu_atom").unwrap();
    assert!(
        (ipc_core - 6_679_379.0 / 21_257_199.0).abs() < 1e-9,
        "{ipc_core}"
    );
    assert!(
        (ipc_atom - 753_197.0 / 2_162_192.0).abs() < 1e-9,
        "{ipc_atom}"
    );
    assert!(metric("Info_Thread_IPC", "cpu_core").is_some());
    assert!(metric("Info_Thread_IPC", "cpu_atom").is_none());
    // The example: Intel event names counted with :u, no CPU in
    // the file; the tables of the CPUs that have both events tell.
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("u.csv");
    std::fs::write(
        &f,
        "4000000,,TOPDOWN.SLOTS:u,1000,100.00,,\n800000,,IDQ_UOPS_NOT_DELIVERED.CORE:u,1000,100.00,,\n",
    )
    .unwrap();
    let out = pmx(&["analyze", f.to_str().unwrap(), "--events-dir", dir]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // On an Intel machine whose own tables have both events, this
    // machine is the answer (and said so); elsewhere the tables tell.
    let here = pmx(&[
        "explain",
        "IDQ_UOPS_NOT_DELIVERED.CORE",
        "--events-dir",
        dir,
    ]);
    let expected = if here.status.success() {
        "(this machine): the file does not say and every event of it is known here"
    } else {
        "the event tables of that CPU have TOPDOWN.SLOTS, IDQ_UOPS_NOT_DELIVERED.CORE"
    };
    assert!(text.contains(expected), "{text}");
    assert!(
        text.contains(
            "TOPDOWN.SLOTS:u: counted with modifier 'u', matched to metric inputs as TOPDOWN.SLOTS"
        ),
        "{text}"
    );
}

/// The input analyze makes of an event perf listed: a line of one box of
/// an uncore PMU (`uncore_m2pcie_1/event=0x1/`) counts, with the other
/// boxes' lines, the PMU's event (`uncore_m2pcie/event=0x1/`; a named
/// event, `uncore_imc_2/NAME/`, is NAME) — docs/groups.md.
fn one_input(event: &str) -> String {
    let Some((pmu, rest)) = event.split_once('/') else {
        return event.to_string();
    };
    let boxed = (pmu.rsplit_once('_')).filter(|(stem, n)| {
        !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
            && (stem.starts_with("uncore_") || stem.starts_with("amd_"))
    });
    match boxed {
        Some((stem, _)) => match rest.strip_suffix('/') {
            Some(named) if !named.is_empty() && !named.contains(['=', ',', '/']) => {
                named.to_string()
            }
            _ => format!("{stem}/{rest}"),
        },
        None => event.to_string(),
    }
}
