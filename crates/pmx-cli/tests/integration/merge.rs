//! `pmx stat -o PATTERN --json` under rank variables, then `pmx merge`:
//! one file per rank, the right sums, the rank that did more work named.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const PMX: &str = env!("CARGO_BIN_EXE_pmx");
const WORKLOAD: &str = env!("CARGO_BIN_EXE_pmx-workload");

/// Run one "rank": `pmx stat --json -o PATTERN -- pmx-workload pages N`
/// with only `vars` as job variables.
fn rank_run(dir: &Path, pattern: &str, vars: &[(&str, &str)], pages: u64) -> std::process::Output {
    let mut c = Command::new(PMX);
    c.current_dir(dir)
        .args([
            "stat",
            "--json",
            "-e",
            "page-faults,task-clock",
            "-o",
            pattern,
            "--",
        ])
        .args([WORKLOAD, "pages", &pages.to_string()]);
    for v in [
        "SLURM_PROCID",
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "PMIX_RANK",
        "MV2_COMM_WORLD_RANK",
        "SLURM_JOB_ID",
        "PBS_JOBID",
        "LSB_JOBID",
        "JOB_ID",
    ] {
        c.env_remove(v);
    }
    for (k, v) in vars {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    v
}

fn faults(file: &Path) -> f64 {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "page-faults")
        .unwrap()["value"]
        .as_f64()
        .unwrap()
}

#[test]
fn ranks_write_their_own_files_and_merge_names_the_outlier() {
    let dir = tempfile::tempdir().unwrap();
    let base = 3_000u64;
    for rank in 0..4u64 {
        let pages = if rank == 2 { base * 10 } else { base };
        let r = rank.to_string();
        let out = rank_run(
            dir.path(),
            "out-%h-%p-%r.json",
            &[("SLURM_PROCID", &r), ("SLURM_JOB_ID", "4242")],
            pages,
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let files = json_files(dir.path());
    assert_eq!(files.len(), 4, "{files:?}");
    let host = {
        let out = Command::new("uname").arg("-n").output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let mut expected_sum = 0.0;
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap().to_string();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let rank = v["rank"].as_u64().unwrap();
        let pid = v["pid"].as_u64().unwrap();
        assert_eq!(name, format!("out-{host}-{pid}-{rank}.json"));
        assert_eq!(v["host"], host.as_str());
        assert_eq!(v["job"], "4242");
        let f_faults = faults(f);
        let pages = if rank == 2 { base * 10 } else { base };
        assert!(f_faults >= pages as f64, "rank {rank}: {f_faults} faults");
        expected_sum += f_faults;
    }
    let out = Command::new(PMX)
        .arg("merge")
        .arg("--json")
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(m["members"].as_array().unwrap().len(), 4);
    let pf = m["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "page-faults")
        .unwrap();
    assert_eq!(pf["n"], 4);
    assert!((pf["sum"].as_f64().unwrap() - expected_sum).abs() < 1e-6);
    assert_eq!(pf["max_member"], "rank 2");
    let outliers = pf["outliers"].as_array().unwrap();
    assert_eq!(outliers.len(), 1, "{pf}");
    assert_eq!(outliers[0]["member"], "rank 2");
    assert!(outliers[0]["deviation_pct"].as_f64().unwrap() > 100.0);
    let mean = pf["mean"].as_f64().unwrap();
    assert!((mean - expected_sum / 4.0).abs() < 1e-6);
    // The table says it in words.
    let out = Command::new(PMX)
        .arg("merge")
        .args(&files)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.lines().any(|l| l.contains("page-faults: rank 2 =")),
        "{text}"
    );
    // By host: one member holding the same sum.
    let out = Command::new(PMX)
        .args(["merge", "--by", "host", "--json"])
        .args(&files)
        .output()
        .unwrap();
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(m["members"].as_array().unwrap().len(), 1);
    let pf = m["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "page-faults")
        .unwrap();
    assert!((pf["sum"].as_f64().unwrap() - expected_sum).abs() < 1e-6);
    assert_eq!(pf["max_member"], format!("host {host}"));
    // CSV has a header and one line per event.
    let out = Command::new(PMX)
        .args(["merge", "-x", ","])
        .args(&files)
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(csv.starts_with("kind,name,domain,unit,n,sum,"));
    assert!(
        csv.lines()
            .any(|l| l.starts_with("event,page-faults,,,4,") && l.ends_with(",rank 2")),
        "{csv}"
    );
}

#[test]
fn mpi_variables_and_pattern_errors() {
    let dir = tempfile::tempdir().unwrap();
    // Open MPI's rank wins over the batch script's SLURM_PROCID.
    let out = rank_run(
        dir.path(),
        "r%r.json",
        &[("SLURM_PROCID", "0"), ("OMPI_COMM_WORLD_RANK", "6")],
        10,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("r6.json").exists());
    // No rank variable: a one-rank job, rank 0 in the name, null in the JSON.
    let out = rank_run(dir.path(), "single-%r-100%%.json", &[], 10);
    assert!(out.status.success());
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("single-0-100%.json")).unwrap(),
    )
    .unwrap();
    assert!(v["rank"].is_null());
    // Unknown pattern, %j without a job, a rank that is not a number: 2.
    for (pattern, vars, says) in [
        ("x-%q.json", vec![], "unknown pattern %q"),
        ("x-%j.json", vec![], "SLURM_JOB_ID"),
        ("x-%r.json", vec![("PMI_RANK", "first")], "PMI_RANK=first"),
    ] {
        let out = rank_run(dir.path(), pattern, &vars, 10);
        assert_eq!(out.status.code(), Some(2), "{pattern}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{pattern}"
        );
    }
    // merge: a file that is not a report is bad input; a missing file a failure.
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"not\": \"a report\"}").unwrap();
    let out = Command::new(PMX).arg("merge").arg(&junk).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a pmx stat --json report"));
    let out = Command::new(PMX)
        .args(["merge", "/nonexistent/x.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}
