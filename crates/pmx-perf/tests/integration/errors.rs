//! Open errors from the real kernel, and the messages pmx makes of them.
//!
//! The permission checks need an unprivileged process: the test re-runs
//! itself in a child process which, when started as root, becomes `nobody`
//! before it opens anything.

use crate::common::{sw, THREAD};
use pmx_perf::{event_type, perf_event_paranoid, software, Attr, Counter, OpenCause, Target};
use std::process::Command;

fn open_err(attr: &Attr, target: Target) -> pmx_perf::OpenError {
    match Counter::open(attr, target, None) {
        Ok(c) => panic!("opened (id {}), expected an error", c.id()),
        Err(e) => {
            eprintln!("{e}");
            e
        }
    }
}

#[test]
fn hardware_cycles_without_a_hardware_pmu() {
    let cycles = Attr {
        type_: event_type::HARDWARE,
        config: 0,
        ..Attr::default()
    };
    let has_core_pmu = ["cpu", "cpu_core", "cpu_atom"].iter().any(|p| {
        std::path::Path::new("/sys/bus/event_source/devices")
            .join(p)
            .exists()
    });
    if has_core_pmu {
        match Counter::open(&cycles, THREAD, None) {
            Ok(_) => eprintln!("this machine counts cycles"),
            Err(e) => eprintln!("a core PMU is registered, yet: {e}"),
        }
        return;
    }
    let e = open_err(&cycles, THREAD);
    assert!(matches!(e.cause, OpenCause::NotSupported { .. }), "{e}");
    assert_eq!(e.errno, libc::ENOENT);
    assert!(
        e.to_string()
            .starts_with("cannot open hardware event cycles for this thread on any CPU: "),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("this machine's PMU does not count it (no hardware PMU exposed"),
        "{e}"
    );
    // Raw and cache events go the same way.
    for type_ in [event_type::RAW, event_type::HW_CACHE] {
        let e = open_err(
            &Attr {
                type_,
                ..cycles.clone()
            },
            THREAD,
        );
        assert!(matches!(e.cause, OpenCause::NotSupported { .. }), "{e}");
    }
}

#[test]
fn no_such_process() {
    let e = open_err(
        &sw(software::TASK_CLOCK),
        Target {
            pid: i32::MAX,
            cpu: -1,
        },
    );
    assert!(matches!(e.cause, OpenCause::NoProcess), "{e}");
    assert_eq!(e.errno, libc::ESRCH);
    assert!(
        e.to_string()
            .contains(&format!("no process or thread {}", i32::MAX)),
        "{e}"
    );
}

#[test]
fn invalid_targets_and_attrs() {
    let e = open_err(&sw(software::TASK_CLOCK), Target { pid: -1, cpu: -1 });
    assert!(matches!(e.cause, OpenCause::Invalid { .. }), "{e}");
    assert!(
        e.to_string().contains("pid -1 (every task) needs a CPU"),
        "{e}"
    );

    let e = open_err(&sw(software::TASK_CLOCK), Target { pid: 0, cpu: 4096 });
    assert!(matches!(e.cause, OpenCause::Invalid { .. }), "{e}");
    assert!(e.to_string().contains("CPU 4096 does not exist"), "{e}");

    // Refused before the kernel sees it: precise_ip has two bits.
    let e = open_err(
        &Attr {
            precise_ip: 4,
            ..sw(software::TASK_CLOCK)
        },
        THREAD,
    );
    assert!(matches!(e.cause, OpenCause::Invalid { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("precise_ip is 4, the highest level is 3"),
        "{e}"
    );

    let e = open_err(&sw(4242), THREAD);
    assert!(matches!(e.cause, OpenCause::NotSupported { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("no software event with config 0x1092"),
        "{e}"
    );

    let e = open_err(
        &Attr {
            type_: 0x7fff_0000,
            ..Attr::default()
        },
        THREAD,
    );
    assert!(matches!(e.cause, OpenCause::NotSupported { .. }), "{e}");
    assert!(e.to_string().contains("no PMU with type 2147418112"), "{e}");
}

const CHILD: &str = "PMX_PERF_TEST_UNPRIVILEGED_CHILD";
const NOBODY: libc::uid_t = 65534;

#[test]
fn unprivileged_opens_explain_perf_event_paranoid() {
    if std::env::var_os(CHILD).is_some() {
        return unprivileged_checks();
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([
            "--exact",
            &harness_name("unprivileged_opens_explain_perf_event_paranoid"),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("--- child ---\n{text}--- end of child ---");
    assert!(out.status.success(), "the unprivileged child failed");
    assert!(
        text.contains("1 passed"),
        "the child did not run the checks"
    );
}

/// `name`, a test of this module, as the test harness names it (the
/// module's path in this binary, then the name), for `--exact`.
fn harness_name(name: &str) -> String {
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    format!("{module}::{name}")
}

/// Run in the child: become unprivileged, then open what the paranoid
/// level forbids.
fn unprivileged_checks() {
    // SAFETY: geteuid only returns a number.
    if unsafe { libc::geteuid() } == 0 {
        // SAFETY: plain system calls with integer arguments (setgroups with
        // an empty list reads no memory); glibc applies them to every
        // thread of this process, which runs nothing else.
        let dropped = unsafe {
            libc::setgroups(0, std::ptr::null()) == 0
                && libc::setgid(NOBODY) == 0
                && libc::setuid(NOBODY) == 0
        };
        assert!(
            dropped,
            "dropping to nobody: {}",
            std::io::Error::last_os_error()
        );
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let cap_eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
        .unwrap();
    if cap_eff & (1 << 38 | 1 << 21) != 0 {
        pmx_testkit::skip("this process keeps CAP_PERFMON or CAP_SYS_ADMIN");
        return;
    }
    let p = perf_event_paranoid().expect("perf_event_paranoid");
    // SAFETY: geteuid only returns a number.
    let euid = unsafe { libc::geteuid() };
    println!("unprivileged (euid {euid}), perf_event_paranoid {p}");
    let user_only = |config| Attr {
        exclude_kernel: true,
        exclude_hv: true,
        ..sw(config)
    };

    // Every task on CPU 0: needs level 0.
    match Counter::open(
        &user_only(software::CPU_CLOCK),
        Target { pid: -1, cpu: 0 },
        None,
    ) {
        Ok(_) => assert!(p <= 0, "CPU-wide opened at level {p}"),
        Err(e) => {
            println!("{e}");
            assert!(p >= 1, "{e}");
            assert!(matches!(e.cause, OpenCause::Permission { .. }), "{e}");
            assert!(
                e.to_string()
                    .contains(&format!("kernel.perf_event_paranoid is {p} (")),
                "{e}"
            );
            assert!(
                e.to_string()
                    .contains("counting every task on a CPU needs level 0"),
                "{e}"
            );
            assert!(
                e.to_string()
                    .contains("sysctl kernel.perf_event_paranoid=0"),
                "{e}"
            );
            assert!(e.to_string().contains("CAP_PERFMON"), "{e}");
        }
    }

    // Kernel space of this thread: needs level 1.
    match Counter::open(&sw(software::TASK_CLOCK), THREAD, None) {
        Ok(_) => assert!(p <= 1, "kernel counting opened at level {p}"),
        Err(e) => {
            println!("{e}");
            assert!(p >= 2, "{e}");
            assert!(matches!(e.cause, OpenCause::Permission { .. }), "{e}");
            assert!(
                e.to_string()
                    .contains("sysctl kernel.perf_event_paranoid=1"),
                "{e}"
            );
            if p == 2 {
                assert!(
                    e.to_string()
                        .contains("count user space only (set exclude_kernel"),
                    "{e}"
                );
            }
        }
    }

    // User space of this thread: allowed up to level 2.
    let own = Counter::open(&user_only(software::TASK_CLOCK), THREAD, None);
    if p >= 3 {
        assert!(matches!(
            own.unwrap_err().cause,
            OpenCause::Permission { .. }
        ));
        return;
    }
    own.unwrap();

    // Another user's process: the paranoid level allows it, tracing does not.
    let init_uid = std::fs::read_to_string("/proc/1/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().nth(1)?.parse::<u32>().ok())
        });
    if init_uid.is_some_and(|uid| uid != NOBODY) {
        let e = Counter::open(
            &user_only(software::TASK_CLOCK),
            Target { pid: 1, cpu: -1 },
            None,
        )
        .unwrap_err();
        println!("{e}");
        assert!(matches!(e.cause, OpenCause::Permission { .. }), "{e}");
        assert!(
            e.to_string()
                .contains(&format!("kernel.perf_event_paranoid is {p}, which allows")),
            "{e}"
        );
        assert!(e.to_string().contains("ptrace_scope"), "{e}");
    }

    // Out of file descriptors: every counter is one.
    let limit = libc::rlimit {
        rlim_cur: 32,
        rlim_max: 32,
    };
    // SAFETY: setrlimit reads one struct rlimit from a live local.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
    let mut held = Vec::new();
    let e = loop {
        match Counter::open(&user_only(software::DUMMY), THREAD, None) {
            Ok(c) => held.push(c),
            Err(e) => break e,
        }
        assert!(held.len() <= 32, "32 fds and still opening");
    };
    println!("after {} counters: {e}", held.len());
    assert!(matches!(e.cause, OpenCause::TooManyFiles { .. }), "{e}");
    assert!(e.to_string().contains("ulimit -n is 32"), "{e}");
}
