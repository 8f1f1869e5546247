//! `pmx report --jobs N` (issue 43): the plain samples of a mapped file
//! are counted on N threads, and every report form is the one a single
//! job prints, byte for byte: the table, `-g`, `--folded` and `--json`,
//! on every shared recording and on a generated file of 120,000 samples
//! (pmx-testkit's `many_samples`: three processes, a COMM and an MMAP2
//! every 40,000 samples, kernel and user stacks, rounds out of order).

use crate::common::{pmx, stderr};
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
    let mut ok = Vec::new();
    for form in FORMS {
        let one = report(file, form, "1");
        let two = report(file, form, "2");
        assert!(
            one.0 == two.0 && one.1 == two.1,
            "{} {form:?}: --jobs 1 and --jobs 2 differ (status {:?} / {:?}; {})",
            file.display(),
            one.0,
            two.0,
            two.2
        );
        if one.0 == Some(0) {
            ok.push(one.1);
        }
    }
    ok
}

#[test]
fn a_generated_file_reports_the_same_with_one_job_and_two() {
    let st = perfdata::CALLCHAIN_SAMPLES;
    let mut w = perfdata::memory_writer(perfdata::attr(128, 1000, st, SAMPLE_ID_ALL));
    perfdata::many_samples(&mut w, 120_000, &mut |_| {}).unwrap();
    let bytes = w.finish(&Default::default()).unwrap().into_inner();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("many.data");
    std::fs::write(&file, bytes).unwrap();
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
