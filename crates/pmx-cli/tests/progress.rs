//! Progress lines: `pmx stat --compare`'s interleaved runs show which run
//! is on when stderr is a terminal (a real pty from util-linux's
//! `script`) and the comparison has taken over a second; nothing when
//! stderr is a pipe.

mod common;
use common::{stderr, PMX};
use std::process::Command;

const ARGS: &str = "stat --compare -r 3 -e task-clock -- sleep 0.4 ::: sleep 0.4";

#[test]
fn compare_runs_show_a_progress_line_on_a_terminal_only() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("script (util-linux) is not installed: no pty to test on");
        return;
    }
    let out = Command::new("script")
        .args(["-qec", &format!("{PMX} {ARGS}"), "/dev/null"])
        .output()
        .expect("run script");
    assert!(out.status.success(), "{out:?}");
    let tty = String::from_utf8_lossy(&out.stdout);
    // Six runs of 0.4 s: the line appears once a second has passed, and
    // the last run is announced.
    assert!(
        tty.contains("pmx stat --compare: run 6 of 6 (round 3 of 3, B)"),
        "{tty}"
    );
    assert!(tty.contains("task-clock"), "{tty}");
    let piped = Command::new(PMX)
        .args(ARGS.split(' '))
        .output()
        .expect("run pmx");
    assert!(piped.status.success(), "{}", stderr(&piped));
    assert!(
        !stderr(&piped).contains("pmx stat --compare: run"),
        "{}",
        stderr(&piped)
    );
}

/// A perf.data of `n` user samples (IP, TID, TIME, PERIOD) of one
/// process, written with pmx-perfdata's writer: large enough that reading
/// it takes over a second.
fn big_file(dir: &std::path::Path, n: u64) -> std::path::PathBuf {
    use pmx_perfdata::format::sample_type as st;
    use pmx_testkit::perfdata::{attr, comm, memory_writer, record, sample_id, SAMPLE_ID_ALL};
    let types = st::IP | st::TID | st::TIME | st::PERIOD;
    let mut w = memory_writer(attr(128, 1000, types, SAMPLE_ID_ALL));
    let mut c = comm(42, "big");
    c.extend(sample_id(42, 1, 0));
    w.write_record(&record(3, 0, &c)).unwrap();
    for i in 0..n {
        let mut body = Vec::with_capacity(32);
        body.extend_from_slice(&(0x40_1000 + (i % 64) * 16).to_le_bytes());
        body.extend_from_slice(&42u32.to_le_bytes());
        body.extend_from_slice(&42u32.to_le_bytes());
        body.extend_from_slice(&(10 + i).to_le_bytes());
        body.extend_from_slice(&1000u64.to_le_bytes());
        w.write_record(&record(9, 2, &body)).unwrap();
    }
    let bytes = w.finish(&Default::default()).unwrap().into_inner();
    let file = dir.join("big.data");
    std::fs::write(&file, bytes).unwrap();
    file
}

/// `pmx script` and `pmx report` of a file that takes over a second to
/// read draw the bar on a terminal, and nothing when stderr is a pipe.
#[test]
fn long_reads_show_a_bar_on_a_terminal_only() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("script (util-linux) is not installed: no pty to test on");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = big_file(dir.path(), 600_000);
    let f = file.display();
    // What the terminal got, or `None` when the read took under a second
    // and a half (a machine fast enough that no bar is due).
    let in_pty = |cmd: &str| {
        let start = std::time::Instant::now();
        let out = Command::new("script")
            .args(["-qec", cmd, "/dev/null"])
            .output()
            .expect("run script");
        assert!(out.status.success(), "{cmd}: {out:?}");
        let slow = start.elapsed() > std::time::Duration::from_millis(1500);
        if !slow {
            eprintln!("{cmd} took under 1.5 s: no bar was due");
        }
        slow.then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    for cmd in ["script", "report --stdio"] {
        // The bar's last figure before it is cleared: the share of the file.
        if let Some(tty) = in_pty(&format!("{PMX} {cmd} -i {f} > /dev/null")) {
            assert!(tty.contains("%  ") && tty.contains(" MiB"), "{tty:?}");
            assert!(tty.ends_with("\r\x1b[K"), "the bar is cleared: {tty:?}");
        }
    }
    // stderr a pipe: nothing.
    let out = Command::new(PMX)
        .args(["script", "-i"])
        .arg(&file)
        .output()
        .expect("run pmx");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains(" MiB"), "{}", stderr(&out));
}
