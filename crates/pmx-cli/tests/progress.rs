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
