//! pmx's start without std's runtime start (`pmx_sys::start`): what std
//! did before `main` and pmx relies on is still done.

use crate::common::PMX;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};

/// A stdout whose reader is gone: the write of the help fails with EPIPE
/// and pmx exits with a status of its own, SIGPIPE being ignored; under
/// SIGPIPE's default action (what the test harness gives a child) it
/// would die by the signal.
#[test]
fn a_closed_pipe_is_an_error_not_a_death() {
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills two descriptors, each owned once below.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    let out = Command::new(PMX)
        .arg("--help")
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped())
        .output()
        .expect("run pmx");
    assert_eq!(out.status.signal(), None, "{:?}", out.status);
}

/// Descriptor 0 closed when pmx starts is opened on `/dev/null`, so the
/// command pmx starts finds it there (not closed, not a file pmx opened).
#[test]
fn a_closed_stdin_is_dev_null() {
    let mut cmd = Command::new(PMX);
    cmd.args([
        "stat",
        "-x,",
        "-e",
        "task-clock",
        "--",
        "readlink",
        "/proc/self/fd/0",
    ]);
    // SAFETY: close(2) is async-signal-safe; nothing else runs between
    // fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::close(0);
            Ok(())
        });
    }
    let out = cmd.output().expect("run pmx");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "/dev/null\n",
        "{stderr}"
    );
}
