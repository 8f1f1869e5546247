//! `pmx record` counts the kernel's THROTTLE records: with
//! `kernel.perf_event_max_sample_rate` lowered to 1,000 a second, sampling
//! cpu-clock every 100 µs is throttled; pmx must report as many throttle
//! events as `perf report --stats` finds in the file. In the `system`
//! target, apart from the other tests, because it changes a system-wide setting (put back even when an
//! assertion fails); needs root, skips otherwise.

use pmx_testkit::perf;
use std::process::Command;

const PMX: &str = env!("CARGO_BIN_EXE_pmx");
const WORK: &str = env!("CARGO_BIN_EXE_pmx-workload");
const RATE: &str = "/proc/sys/kernel/perf_event_max_sample_rate";

/// Puts the sample-rate limit back when dropped.
struct Restore(String);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::write(RATE, &self.0);
    }
}

/// The number after `label` in text like "… 81 throttle events".
fn count_before(text: &str, label: &str) -> Option<u64> {
    let at = text.find(label)?;
    text[..at].split_whitespace().last()?.parse().ok()
}

#[test]
fn throttle_records_are_counted_as_perf_counts_them() {
    let _alone = crate::alone();
    let Ok(old) = std::fs::read_to_string(RATE) else {
        pmx_testkit::skip(format_args!("{RATE} is not readable (no perf events?)"));
        return;
    };
    if std::fs::write(RATE, "1000").is_err() {
        pmx_testkit::skip(format_args!("cannot lower {RATE} (needs root)"));
        return;
    }
    let _restore = Restore(old.trim().to_string());
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("thr.data");
    let o = Command::new(PMX)
        .args(["record", "-e", "cpu-clock", "-c", "100000", "-o"])
        .arg(&data)
        .args(["--", WORK, "spin", "0.5"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    let pmx_throttled = count_before(&err, "throttle events").expect(&err);
    assert!(
        pmx_throttled > 0,
        "sampling at 10 kHz under a 1 kHz limit must throttle: {err}"
    );
    assert!(err.contains("the kernel throttled sampling"), "{err}");
    drop(_restore);

    match perf::try_on_file(&["report", "--stats"], &data) {
        Ok(p) if p.status.success() => {
            let text = String::from_utf8_lossy(&p.stdout);
            let line = text
                .lines()
                .find(|l| l.trim_start().starts_with("THROTTLE events:"))
                .unwrap_or_else(|| panic!("perf report --stats shows no THROTTLE line:\n{text}"));
            let perf_throttled: u64 = line
                .split(':')
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap();
            assert_eq!(pmx_throttled, perf_throttled, "{line}");
        }
        _ => pmx_testkit::skip("the perf cross-check: perf is not installed"),
    }
    // pmx report reads the same number back.
    let r = Command::new(PMX)
        .args(["report", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&r.stdout).into_owned();
    assert!(
        text.contains(&format!("throttled {pmx_throttled} times")),
        "{text}"
    );
}
