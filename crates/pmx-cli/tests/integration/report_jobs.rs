//! `pmx report --jobs N` and `pmx script --jobs N` (issue 43): the plain
//! samples of a mapped file are counted (report) or their lines
//! formatted (script) on N threads, and every form is the one a single
//! job prints, byte for byte: the table, `-g`, `--folded` and `--json`,
//! script's default lines, `-F` fields and `--json`, on every shared
//! recording and on a generated file of 120,000 samples (pmx-testkit's
//! `many_samples`: three processes, a COMM and an MMAP2 every 40,000
//! samples, kernel and user stacks, rounds out of order). And two jobs
//! really are two threads: the kernel's `task:task_newtask` tracepoint,
//! counted by `pmx stat` over the command, sees threads made with
//! `--jobs 2` and none with `--jobs 1`.

use crate::common::{pmx, stderr, PMX};
use pmx_testkit::perfdata::{self, SAMPLE_ID_ALL};
use pmx_testkit::shared::shared_data;
use std::path::Path;

/// The report forms compared.
const FORMS: [&[&str]; 4] = [&[], &["-g"], &["--folded"], &["--json"]];

/// `pmx report -q FORM -i FILE --jobs N`: exit status and stdout.
fn report(file: &Path, form: &[&str], jobs: &str) -> (Option<i32>, Vec<u8>, String) {
    let mut args = vec!["report", "-q", "-i", file.to_str().unwrap(), "--jobs", jobs];
    args.extend_from_slice(form);
    let o = pmx(&args);
    (o.status.code(), o.stdout.clone(), stderr(&o))
}

/// Every form with one job and with two: the same bytes. Returns the
/// one-job outputs of the forms that succeeded.
fn same_with_two_jobs(file: &Path) -> Vec<Vec<u8>> {
    same_with_jobs(file, &["2"])
}

/// Every form with one job and with each of `jobs`: the same bytes.
fn same_with_jobs(file: &Path, jobs: &[&str]) -> Vec<Vec<u8>> {
    let mut ok = Vec::new();
    for form in FORMS {
        let one = report(file, form, "1");
        for n in jobs {
            let other = report(file, form, n);
            assert!(
                one.0 == other.0 && one.1 == other.1,
                "{} {form:?}: --jobs 1 and --jobs {n} differ (status {:?} / {:?}; {})",
                file.display(),
                one.0,
                other.0,
                other.2
            );
        }
        if one.0 == Some(0) {
            ok.push(one.1);
        }
    }
    ok
}

/// The script forms compared.
const SCRIPT_FORMS: [&[&str]; 3] = [&[], &["-F", "comm,tid,time,ip,sym,dso,period"], &["--json"]];

/// Every script form with one job and with two: the same bytes. Returns
/// the one-job outputs of the forms that succeeded.
fn script_same_with_two_jobs(file: &Path) -> Vec<Vec<u8>> {
    script_same_with_jobs(file, &["2"])
}

/// Every script form with one job and with each of `jobs`: the same
/// bytes. Returns the one-job outputs of the forms that succeeded.
fn script_same_with_jobs(file: &Path, jobs: &[&str]) -> Vec<Vec<u8>> {
    let mut ok = Vec::new();
    for form in SCRIPT_FORMS {
        let run = |jobs| {
            let mut args = vec!["script", "-i", file.to_str().unwrap(), "--jobs", jobs];
            args.extend_from_slice(form);
            pmx(&args)
        };
        let one = run("1");
        for n in jobs {
            let two = run(n);
            assert!(
                one.status.code() == two.status.code() && one.stdout == two.stdout,
                "{} script {form:?}: --jobs 1 and --jobs {n} differ (status {:?} / {:?}; {})",
                file.display(),
                one.status.code(),
                two.status.code(),
                stderr(&two)
            );
        }
        if one.status.success() {
            ok.push(one.stdout);
        }
    }
    ok
}

/// A file of 120,000 generated samples in `dir`.
fn generated(dir: &Path) -> std::path::PathBuf {
    let st = perfdata::CALLCHAIN_SAMPLES;
    let mut w = perfdata::memory_writer(perfdata::attr(128, 1000, st, SAMPLE_ID_ALL));
    perfdata::many_samples(&mut w, 120_000, &mut |_| {}).unwrap();
    let bytes = w.finish(&Default::default()).unwrap().into_inner();
    let file = dir.join("many.data");
    std::fs::write(&file, bytes).unwrap();
    file
}

/// Threads (and processes) `pmx ARGS` made: `task:task_newtask` counted
/// by `pmx stat`; `None` where the tracepoint cannot be counted here.
fn new_tasks(args: &[&str]) -> Option<u64> {
    let mut stat = vec!["stat", "-x", ",", "-e", "task:task_newtask", "--", PMX];
    stat.extend_from_slice(args);
    let o = pmx(&stat);
    let err = stderr(&o);
    // `-x ,`: the value two fields before the event's name.
    let line = err.lines().find(|l| l.contains("task:task_newtask"))?;
    let fields: Vec<&str> = line.split(',').collect();
    let at = fields.iter().position(|f| *f == "task:task_newtask")?;
    fields.get(at.checked_sub(2)?)?.trim().parse().ok()
}

#[test]
fn two_jobs_count_and_format_on_two_threads() {
    let dir = tempfile::tempdir().unwrap();
    let file = generated(dir.path());
    let f = file.to_str().unwrap();
    let report = |jobs| new_tasks(&["report", "-q", "--jobs", jobs, "-i", f]);
    let script = |jobs| new_tasks(&["script", "--jobs", jobs, "-i", f, "-F", "comm,ip,sym"]);
    let Some(one) = report("1") else {
        pmx_testkit::skip("task:task_newtask cannot be counted here (no tracefs?)");
        return;
    };
    assert_eq!(one, 0, "pmx report --jobs 1 made no thread");
    let two = report("2").unwrap();
    assert!(two >= 1, "pmx report --jobs 2 counted on one thread only");
    assert_eq!(script("1"), Some(0), "pmx script --jobs 1 made no thread");
    let two = script("2").unwrap();
    assert!(two >= 1, "pmx script --jobs 2 formatted on one thread only");
}

/// One rule for both commands: one job unless told (no thread made),
/// `--jobs 0` the machine's cores (threads made where there are two).
#[test]
fn the_default_is_one_job_and_jobs_0_the_cores() {
    let dir = tempfile::tempdir().unwrap();
    let file = generated(dir.path());
    let f = file.to_str().unwrap();
    let script = ["script", "-i", f, "-F", "comm,ip,sym"];
    let Some(report) = new_tasks(&["report", "-q", "-i", f]) else {
        pmx_testkit::skip("task:task_newtask cannot be counted here (no tracefs?)");
        return;
    };
    assert_eq!(report, 0, "pmx report made a thread by default");
    assert_eq!(
        new_tasks(&script),
        Some(0),
        "pmx script made a thread by default"
    );
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return pmx_testkit::skip("one CPU: --jobs 0 is one job");
    }
    let all = new_tasks(&["report", "-q", "--jobs", "0", "-i", f]).unwrap();
    assert!(all >= 1, "pmx report --jobs 0 counted on one thread only");
    let all = new_tasks(&[&script[..], &["--jobs", "0"]].concat()).unwrap();
    assert!(all >= 1, "pmx script --jobs 0 formatted on one thread only");
}

#[test]
fn a_generated_file_scripts_the_same_with_one_job_and_two() {
    let dir = tempfile::tempdir().unwrap();
    let outs = script_same_with_two_jobs(&generated(dir.path()));
    assert_eq!(outs.len(), SCRIPT_FORMS.len(), "every form reads the file");
    let lines = outs[2].iter().filter(|&&b| b == b'\n').count();
    assert_eq!(lines, 120_000, "a JSON line per sample");
}

#[test]
fn shared_recordings_script_the_same_with_one_job_and_two() {
    let Some(dir) = shared_data("perfdata") else {
        return;
    };
    let mut read = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        read += usize::from(script_same_with_two_jobs(&path).len() == SCRIPT_FORMS.len());
    }
    assert!(read >= 5, "only {read} shared recordings were scripted");
}

#[test]
fn a_generated_file_reports_the_same_with_one_job_and_two() {
    let dir = tempfile::tempdir().unwrap();
    let file = generated(dir.path());
    let outs = same_with_two_jobs(&file);
    assert_eq!(outs.len(), FORMS.len(), "every form reads the file");
    let json: serde_json::Value = serde_json::from_slice(&outs[3]).unwrap();
    assert_eq!(
        json["events"][0]["samples"], 120_000,
        "every sample counted"
    );
    let folded = String::from_utf8_lossy(&outs[2]);
    assert!(
        folded.contains("prog2;"),
        "three processes' stacks: {folded:.300}"
    );
}

/// Long runs of samples between the side-band records (a COMM and an
/// MMAP2 every 100,000 samples): batches counted on the threads while the
/// replay reads on, merged in order before each map applies.
#[test]
fn long_runs_between_maps_report_the_same_with_one_job_two_and_three() {
    let dir = tempfile::tempdir().unwrap();
    let st = perfdata::CALLCHAIN_SAMPLES;
    let mut w = perfdata::memory_writer(perfdata::attr(128, 1000, st, SAMPLE_ID_ALL));
    perfdata::many_samples_every(&mut w, 250_000, u64::MAX, 100_000, &mut |_| {}).unwrap();
    let file = dir.path().join("runs.data");
    std::fs::write(&file, w.finish(&Default::default()).unwrap().into_inner()).unwrap();
    let outs = same_with_jobs(&file, &["2", "3"]);
    assert_eq!(outs.len(), FORMS.len(), "every form reads the file");
    let json: serde_json::Value = serde_json::from_slice(&outs[3]).unwrap();
    assert_eq!(
        json["events"][0]["samples"], 250_000,
        "every sample counted"
    );
}

/// script's pipeline: batches formatted on the jobs while the replay
/// reads on, over long runs of samples (a COMM and an MMAP2 every
/// 100,000) and short ones (every 3,000: each map sends the batch being
/// filled, its chains' lines resolved with the maps before it).
#[test]
fn long_and_short_runs_between_maps_script_the_same_with_one_job_two_and_three() {
    let dir = tempfile::tempdir().unwrap();
    let st = perfdata::CALLCHAIN_SAMPLES;
    for (n, every) in [(250_000, 100_000), (45_000, 3_000)] {
        let mut w = perfdata::memory_writer(perfdata::attr(128, 1000, st, SAMPLE_ID_ALL));
        perfdata::many_samples_every(&mut w, n, u64::MAX, every, &mut |_| {}).unwrap();
        let file = dir.path().join(format!("runs{every}.data"));
        std::fs::write(&file, w.finish(&Default::default()).unwrap().into_inner()).unwrap();
        let outs = script_same_with_jobs(&file, &["2", "3"]);
        assert_eq!(outs.len(), SCRIPT_FORMS.len(), "every form reads the file");
        let lines = outs[2].iter().filter(|&&b| b == b'\n').count();
        assert_eq!(lines as u64, n, "a JSON line per sample");
        let text = String::from_utf8_lossy(&outs[0]);
        let named = text.matches("(/nonexistent/lib0.so)\n").count() as u64;
        // pid 100 (a third of the samples) has it mapped: two frames each.
        assert!(
            named >= n / 2,
            "the chains name the first map's binary: {text:.300}"
        );
    }
}

#[test]
fn shared_recordings_report_the_same_with_one_job_and_two() {
    let Some(dir) = shared_data("perfdata") else {
        return;
    };
    let mut read = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        read += usize::from(same_with_two_jobs(&entry.unwrap().path()).len() == FORMS.len());
    }
    assert!(read >= 5, "only {read} shared recordings were reported");
}
