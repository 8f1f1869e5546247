//! Progress lines: `pmx stat --compare`'s interleaved runs show which run
//! is on when stderr is a terminal (a real pty from util-linux's
//! `script`) and the comparison has taken over a second; nothing when
//! stderr is a pipe.

use crate::common::{stderr, PMX};
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

/// The records of a perf.data of `n` user samples (IP, TID, TIME, PERIOD)
/// of one process, the first a COMM.
fn big_records(n: u64) -> impl Iterator<Item = Vec<u8>> {
    use pmx_testkit::perfdata::{comm, record, sample_id};
    let mut c = comm(42, "big");
    c.extend(sample_id(42, 1, 0));
    std::iter::once(record(3, 0, &c)).chain((0..n).map(|i| {
        let mut body = Vec::with_capacity(32);
        body.extend_from_slice(&(0x40_1000 + (i % 64) * 16).to_le_bytes());
        body.extend_from_slice(&42u32.to_le_bytes());
        body.extend_from_slice(&42u32.to_le_bytes());
        body.extend_from_slice(&(10 + i).to_le_bytes());
        body.extend_from_slice(&1000u64.to_le_bytes());
        record(9, 2, &body)
    }))
}

/// `big.data` (file mode) of `n` samples and `big.pipe` (pipe mode, as
/// `perf record -o -` writes) of `n_pipe`, written with pmx-perfdata's
/// writers.
fn big_files(
    dir: &std::path::Path,
    n: u64,
    n_pipe: u64,
) -> (std::path::PathBuf, std::path::PathBuf) {
    use pmx_perfdata::format::sample_type as st;
    use pmx_perfdata::{Features, FileAttr, PipeWriter};
    use pmx_testkit::perfdata::{attr, memory_writer, SAMPLE_ID_ALL};
    let a = attr(
        128,
        1000,
        st::IP | st::TID | st::TIME | st::PERIOD,
        SAMPLE_ID_ALL,
    );
    let mut w = memory_writer(a.clone());
    let attrs = vec![FileAttr {
        attr: a,
        ids: vec![1],
        name: "cpu-clock".into(),
    }];
    let mut p = PipeWriter::create(Vec::new(), attrs, &Features::default()).unwrap();
    for r in big_records(n) {
        w.write_record(&r).unwrap();
    }
    for r in big_records(n_pipe) {
        p.write_record(&r).unwrap();
    }
    let (file, pipe) = (dir.join("big.data"), dir.join("big.pipe"));
    std::fs::write(&file, w.finish(&Default::default()).unwrap().into_inner()).unwrap();
    std::fs::write(&pipe, p.finish(&Features::default()).unwrap()).unwrap();
    (file, pipe)
}

/// What a command wrote to a terminal (a pty of util-linux's `script`).
fn in_pty(cmd: &str) -> String {
    let out = Command::new("script")
        .args(["-qec", cmd, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run script");
    assert!(out.status.success(), "{cmd}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `pmx script` and `pmx report` draw the bar on a terminal once a read
/// has taken over a second, and nothing when stderr is a pipe. Made slow
/// for certain: a pipe-mode stream that stops for 2 s after its first MiB
/// (the bar then shows the MiB read: a pipe has no total; readers report
/// every 65,536 records, so 200,000 give updates after the stop). A file
/// read shows its share when the read happens to take that long (here, in
/// a debug build, it does; a faster machine is told and not asserted).
/// With stderr a pipe, the stopped stream draws nothing.
#[test]
fn long_reads_show_a_bar_on_a_terminal_only() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("script (util-linux) is not installed: no pty to test on");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (file, pipe) = big_files(dir.path(), 600_000, 200_000);
    let (f, p) = (file.display(), pipe.display());
    let slow = |cmd: &str| {
        format!("{{ head -c 1048576 {p}; sleep 2; tail -c +1048577 {p}; }} | {PMX} {cmd} -i - > /dev/null")
    };
    for cmd in ["script", "report --stdio"] {
        let tty = in_pty(&slow(cmd));
        assert!(tty.contains(" MiB read"), "{cmd}: {tty:?}");
        assert!(tty.ends_with("\r\x1b[K"), "the bar is cleared: {tty:?}");
        let start = std::time::Instant::now();
        let tty = in_pty(&format!("{PMX} {cmd} -i {f} > /dev/null"));
        if start.elapsed() > std::time::Duration::from_secs(3) {
            assert!(
                tty.contains("%  ") && tty.contains(" MiB"),
                "{cmd}: {tty:?}"
            );
        } else {
            eprintln!("{cmd} -i {f}: under 3 s here, the share is not asserted");
        }
    }
    // stderr a pipe: nothing, though the read takes over a second.
    let out = Command::new("sh")
        .args(["-c", &slow("script")])
        .output()
        .expect("run pmx");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains(" MiB"), "{}", stderr(&out));
}
