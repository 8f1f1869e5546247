//! A stop requested while `pmx stat` or `pmx record` is still being set up
//! (events resolved, counters opened) is not forgotten when the run
//! starts: the command gets the signal and `-r` does no further run.
//! Found by the fault campaign (`pmx stat -r 5` and SIGINT 0.6 s in, on a
//! loaded machine: all five runs ran and pmx exited 0; `pmx record` and
//! SIGINT 0.19 s in: the whole command was recorded, exit 0). Its own test
//! binary, one test: it installs pmx's signal handlers in this process and
//! raises SIGINT and SIGTERM at itself, which would stop any other test's
//! run in the same process (`tests/integration` holds the others).

use pmx::database::{host_cpu_id, Database, Target};
use pmx::launch::Exit;
use pmx::stat::{fit, plan, RunOptions, Scope};
use std::time::Instant;

#[test]
fn a_stop_requested_before_the_run_stops_the_command_and_the_repeats() {
    let Some(cpu) = host_cpu_id() else {
        pmx_testkit::skip("no CPUID here");
        return;
    };
    let db = Database::light(Target { cpu, host: true }, std::path::Path::new("/"));
    let groups = pmx::parse_event_list("task-clock").expect("list");
    let mut p = plan(&groups, &db).expect("plan");
    let fitted = fit(&mut p, None, false, 3);
    let opts = RunOptions {
        scope: Scope::Command,
        command: vec!["sleep".into(), "10".into()],
        inherit: true,
        pin: None,
        duration: None,
        interval: None,
        interval_count: None,
        trace_tasks: false,
        hooks: Default::default(),
        tickers: true,
        spawn: Default::default(),
    };
    pmx::stat::install_signal_handlers();
    // Ctrl-C during the setup.
    // SAFETY: raising a signal whose handler was just installed.
    unsafe { libc::raise(libc::SIGINT) };
    let t = Instant::now();
    let runs = fitted.run(&opts, 3, &mut |_, _| {}).expect("run");
    // Before the fix: three full runs of `sleep 10`, not interrupted, each
    // ended by its exit (not by the signal). No bound on the time taken: a
    // loaded machine may be slow to set up.
    eprintln!("stat: {:?}", t.elapsed());
    assert_eq!(runs.len(), 1, "the repeats after the stop");
    assert!(runs[0].interrupted);
    assert_eq!(
        runs[0].exit,
        Some(Exit::Signal {
            signal: libc::SIGINT
        })
    );

    // The same for a recording (the handlers installed again: a new
    // session, the earlier stop forgotten).
    let dir = tempfile::tempdir().unwrap();
    let rate = pmx::record::SampleRate::Frequency(1000);
    let (event, _) = pmx::record::default_event(rate);
    let ropts = pmx::record::RecordOptions {
        scope: Scope::Command,
        command: vec!["sleep".into(), "10".into()],
        inherit: true,
        rate,
        call_graph: pmx::record::CallGraph::None,
        mmap_pages: 4,
        duration: None,
        output: dir.path().join("perf.data"),
        cmdline: vec![],
        file: Default::default(),
        spawn: Default::default(),
    };
    pmx::record::install_signal_handlers();
    assert!(
        !pmx::record::stop_requested(),
        "install starts a new session"
    );
    // SAFETY: as above.
    unsafe { libc::raise(libc::SIGTERM) };
    let t = Instant::now();
    let summary = pmx::record::record(&[event], &ropts).expect("record");
    eprintln!("record: {:?}", t.elapsed());
    assert!(summary.interrupted);
    assert_eq!(
        summary.exit,
        Some(Exit::Signal {
            signal: libc::SIGTERM
        })
    );
}
