//! SIGINT/SIGTERM while counting: a child process (this test binary,
//! re-run in child mode) programs the fixture PMU and waits; the parent
//! checks the registers are programmed (an offcore-response filter among
//! them), signals it, and checks every register is back to its value
//! before, bit for bit.

use crate::common::*;
use pmx_model::encoding::Arch;
use pmx_model::topology::Topology;
use pmx_msr::{plan, Mode, MsrDevice, PmuCounters, Session, SessionOptions, Signals};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const ROOT_VAR: &str = "PMX_MSR_TEST_CHILD_ROOT";
const MODE_VAR: &str = "PMX_MSR_TEST_CHILD_MODE";

/// The child: does nothing unless run by a parent test below.
#[test]
fn child_mode() {
    let (Ok(root), Ok(mode)) = (std::env::var(ROOT_VAR), std::env::var(MODE_VAR)) else {
        return;
    };
    let root = Path::new(&root);
    let fx = Fixture::existing(root, 2);
    let pmu = PmuCounters::assumed(Arch::Intel, None);
    let mut events = worked_example();
    events.push(offcore_event());
    let p = plan(&events, &fx.cpus, &pmu, &Topology::default()).unwrap();
    let dev = MsrDevice::open(&fx.root(), &p.cpus_touched(), Mode::ReadWrite).unwrap();
    let signals = match mode.as_str() {
        "defer" | "defer-no-poll" => Signals::Defer,
        _ => Signals::RestoreAndExit,
    };
    let mut session = Session::start(
        dev,
        p,
        &SessionOptions {
            force: false,
            signals,
        },
    )
    .unwrap();
    std::fs::write(root.join("ready"), "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if mode == "defer-no-poll" && session.interrupted().is_some() {
            // Tell the parent the first signal arrived (and changed
            // nothing); keep "ignoring" it.
            let marker = root.join("signalled");
            if !marker.exists() {
                std::fs::write(marker, "").unwrap();
            }
        }
        if mode == "defer" && session.interrupted().is_some() {
            // What a caller does: a last read, then drop (restore).
            session.read().unwrap();
            drop(session);
            std::fs::write(root.join("done"), "").unwrap();
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("child: no signal arrived");
}

/// `name`, a test of this module, as the test harness names it (the
/// module's path in this binary, then the name), for `--exact`.
fn harness_name(name: &str) -> String {
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    format!("{module}::{name}")
}

fn run_child(mode: &str, signals: &[i32]) -> (Fixture, Vec<(u32, u32, u64)>, ExitStatus) {
    let fx = Fixture::new(2);
    dirty_intel(&fx);
    let addresses = all_catalogue_addresses();
    let before = fx.snapshot(&addresses);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            &harness_name("child_mode"),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROOT_VAR, &fx.path)
        .env(MODE_VAR, mode)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !fx.path.join("ready").exists() {
        assert!(Instant::now() < deadline, "child never got ready");
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "child exited early: {status}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    // Programmed.
    for cpu in 0..2 {
        assert_eq!(fx.get(cpu, 0x38f), (1 << 32) | 0b11);
        assert_eq!(fx.get(cpu, 0x186), 0x41412e);
        assert_eq!(fx.get(cpu, 0x1a6), LLC_LOADS_FILTER, "the offcore filter");
    }
    SimPmu::intel(&fx).step(|_, _| 1000);
    for (i, &sig) in signals.iter().enumerate() {
        if i > 0 {
            // Two signals pending at once would merge into one: wait until
            // the child has seen the first, which changed nothing.
            while !fx.path.join("signalled").exists() {
                assert!(Instant::now() < deadline, "child never saw the signal");
                std::thread::sleep(Duration::from_millis(2));
            }
            assert_eq!(fx.get(0, 0x38f), (1 << 32) | 0b11, "still programmed");
        }
        // SAFETY: kill(2) on our own child's pid.
        let rc = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        assert_eq!(rc, 0);
    }
    let out = child.wait_with_output().unwrap();
    if !out.stderr.is_empty() && out.status.code().is_some_and(|c| c != 0) {
        eprintln!("child: {}", String::from_utf8_lossy(&out.stderr));
    }
    (fx, before, out.status)
}

#[test]
fn sigint_restores_and_the_process_dies_by_it() {
    let (fx, before, status) = run_child("exit", &[libc::SIGINT]);
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status}");
    assert_eq!(fx.snapshot(&all_catalogue_addresses()), before);
}

#[test]
fn sigterm_restores_and_the_process_dies_by_it() {
    let (fx, before, status) = run_child("exit", &[libc::SIGTERM]);
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status}");
    assert_eq!(fx.snapshot(&all_catalogue_addresses()), before);
}

#[test]
fn deferred_sigint_lets_the_caller_finish_and_restore() {
    let (fx, before, status) = run_child("defer", &[libc::SIGINT]);
    assert!(status.success(), "{status}");
    assert!(fx.path.join("done").exists());
    assert_eq!(fx.snapshot(&all_catalogue_addresses()), before);
}

#[test]
fn a_second_signal_restores_when_the_caller_does_not_poll() {
    let (fx, before, status) = run_child("defer-no-poll", &[libc::SIGINT, libc::SIGINT]);
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status}");
    assert_eq!(fx.snapshot(&all_catalogue_addresses()), before);
}
