//! Metrics come from every `--events-dir`, for every command that loads
//! them (`stat -M`, `analyze`, `tma`, `serve -M`): Intel's perfmon tables
//! and Linux perf's AMD tables given together, in either order, each serve
//! their own CPU. Through the real binary.

use crate::common::{analyze_data, pmx, stderr, stdout};
use pmx_testkit::shared::{intel_perfmon, linux_perf_events};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Both tables directories, or `None` (skipped) when either is missing.
fn both() -> Option<[String; 2]> {
    let (i, p) = (intel_perfmon()?, linux_perf_events()?);
    Some([i.display().to_string(), p.display().to_string()])
}

/// `--events-dir A --events-dir B` in both orders.
fn orders(dirs: &[String; 2]) -> [Vec<String>; 2] {
    let flags = |a: &str, b: &str| {
        vec![
            "--events-dir".to_string(),
            a.to_string(),
            "--events-dir".to_string(),
            b.to_string(),
        ]
    };
    [flags(&dirs[0], &dirs[1]), flags(&dirs[1], &dirs[0])]
}

fn run(args: &[&str], dirs: &[String]) -> std::process::Output {
    let mut a: Vec<&str> = args.to_vec();
    let at = a.iter().position(|x| *x == "--").unwrap_or(a.len());
    for (i, d) in dirs.iter().enumerate() {
        a.insert(at + i, d);
    }
    pmx(&a)
}

/// The tree's line for `node`.
fn line<'a>(text: &'a str, node: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(node))
        .unwrap_or("")
}

/// `pmx analyze --tma`: perf's Zen 4 tree (values of `zen4_pipeline_l1.csv`
/// worked out in `analyze.rs`: frontend 25 %, retiring 40 %) and Intel's
/// Skylake tree (`skl_l1.csv`: Retiring 32.5 %), whichever directory comes
/// first.
#[test]
fn analyze_reads_both_directories_in_either_order() {
    let Some(dirs) = both() else { return };
    for flags in orders(&dirs) {
        let zen4 = analyze_data("zen4_pipeline_l1.csv");
        let f: Vec<&str> = flags.iter().map(String::as_str).collect();
        let mut a = vec![
            "analyze",
            zen4.to_str().unwrap(),
            "--cpu",
            "AuthenticAMD-25-11-1",
        ];
        a.extend(["--tma", "-l", "1"]);
        let o = run(&a, &flags);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{f:?}: {}", stderr(&o));
        assert!(out.contains("x86/amdzen4/pipeline.json"), "{f:?}: {out}");
        assert!(line(&out, "frontend_bound").contains("25.0%"), "{out}");
        assert!(line(&out, "retiring").contains("40.0%"), "{out}");

        let skl = analyze_data("skl_l1.csv");
        let mut a = vec![
            "analyze",
            skl.to_str().unwrap(),
            "--cpu",
            "GenuineIntel-6-5E-3",
        ];
        a.extend(["--tma", "-l", "1"]);
        let o = run(&a, &flags);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{f:?}: {}", stderr(&o));
        assert!(out.contains("SKL/metrics/skylake_metrics.json"), "{out}");
        assert!(line(&out, "Retiring").contains("32.5%"), "{f:?}: {out}");
    }
}

/// `pmx stat -M` and `pmx tma` on this machine's CPU (an AMD, through
/// CPUID): the AMD metric is found in perf's tables whether they come
/// first or second. Without a PMU the metric has no value, with the reason.
#[test]
fn stat_and_tma_read_both_directories_in_either_order() {
    let Some(dirs) = both() else { return };
    let host = pmx(&["info", "--json"]);
    if !stdout(&host).contains("AuthenticAMD") {
        pmx_testkit::skip("stat -M part: this machine is not an AMD CPU");
        return;
    }
    for flags in orders(&dirs) {
        // branch_misprediction_ratio is a metric of every amdzenN table.
        let o = run(
            &["stat", "-M", "branch_misprediction_ratio", "--", "true"],
            &flags,
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{flags:?}: {err}");
        assert!(!err.contains("unknown metric"), "{flags:?}: {err}");
        assert!(
            (stdout(&o) + &err).contains("branch_misprediction_ratio"),
            "{flags:?}: {err}"
        );
        // Zen 5's tree by name: its inputs are perf's table's events.
        let o = run(
            &[
                "tma",
                "-l",
                "2",
                "--cpu",
                "AuthenticAMD-26-2-1",
                "--",
                "true",
            ],
            &flags,
        );
        let out = stdout(&o) + &stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{flags:?}: {out}");
        assert!(
            out.contains("de_no_dispatch_per_slot.backend_stalls"),
            "{out}"
        );
    }
    // The name is really looked up: a misspelling is refused.
    let o = run(
        &["stat", "-M", "branch_misprediction_ratoi", "--", "true"],
        &orders(&dirs)[0],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("branch_misprediction_ratio"),
        "{}",
        stderr(&o)
    );
}

/// `pmx serve -M`: the metric is known in both orders (the daemon starts, or
/// stops for another reason than an unknown metric); a misspelled one is
/// refused with exit 2.
#[test]
fn serve_reads_both_directories_in_either_order() {
    let Some(dirs) = both() else { return };
    let host = pmx(&["info", "--json"]);
    if !stdout(&host).contains("AuthenticAMD") {
        pmx_testkit::skip("serve -M: this machine is not an AMD CPU");
        return;
    }
    let serve = |metric: &str, flags: &[String]| -> (Option<i32>, String) {
        let mut child = Command::new(crate::common::PMX)
            .args(["serve", "--listen", "127.0.0.1:0", "-M", metric])
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn pmx serve");
        let deadline = Instant::now() + Duration::from_secs(3);
        let code = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st.code();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut err = String::new();
        use std::io::Read;
        let _ = child.stderr.take().unwrap().read_to_string(&mut err);
        (code, err)
    };
    for flags in orders(&dirs) {
        let (_, err) = serve("branch_misprediction_ratio", &flags);
        assert!(!err.contains("unknown metric"), "{flags:?}: {err}");
        assert!(!err.contains("panicked"), "{flags:?}: {err}");
    }
    let (code, err) = serve("branch_misprediction_ratoi", &orders(&dirs)[1]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("unknown metric"), "{err}");
}
