//! The incremental aggregator on a real stream: a live sampling session
//! (`pmx::record::stream`, cpu-clock, this test's own process) piped
//! into [`Live`] on another thread; a function of this binary that spins
//! shows up in a snapshot while the session runs; the last snapshot is
//! the profile `build` makes of the same bytes; decay ages and prunes.

use pmx::record::{CallGraph, RecordOptions, SampleRate};
use pmx::stat::Scope;
use pmx_profile::{build, KernelSymbols, Live, MachineId, Options, Profile};
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[inline(never)]
pub fn live_spin_marker(stop: &AtomicBool) -> u64 {
    let mut x = 1u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    x
}

fn options() -> Options {
    Options {
        kallsyms: KernelSymbols::Load,
        this_machine: MachineId::current(),
        ..Options::default()
    }
}

/// The pipe's bytes also kept, to build the same profile from a file.
struct Tee(File, Arc<Mutex<Vec<u8>>>);
impl Write for Tee {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.1.lock().unwrap().extend_from_slice(b);
        self.0.write_all(b)?;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

fn marker_samples(p: &Profile) -> u64 {
    p.events[0]
        .rows
        .iter()
        .filter(|r| {
            r.symbol
                .as_deref()
                .is_some_and(|s| s.contains("live_spin_marker"))
        })
        .map(|r| r.samples)
        .sum()
}

#[test]
fn a_spinning_function_appears_while_the_session_runs_and_the_end_is_builds_profile() {
    // The spinner first: `-p` samples the threads there when it opens.
    let stop_spin = Arc::new(AtomicBool::new(false));
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let spinner = {
        let stop = stop_spin.clone();
        std::thread::spawn(move || {
            // SAFETY: gettid has no preconditions.
            let _ = tid_tx.send(unsafe { libc::gettid() } as u32);
            live_spin_marker(&stop)
        })
    };
    let spinner_tid = tid_rx.recv().expect("the spinner's tid");
    let (event, _) = pmx::record::default_event(SampleRate::Frequency(1000));
    let opts = RecordOptions {
        scope: Scope::Pids(vec![std::process::id() as i32]),
        command: vec![],
        inherit: true,
        rate: SampleRate::Frequency(1000),
        call_graph: CallGraph::None,
        mmap_pages: 16,
        duration: None,
        output: "-".into(),
        cmdline: vec!["pmx".into(), "top".into()],
        file: Default::default(),
        spawn: Default::default(),
    };
    let (rx, tx) = std::io::pipe().expect("pipe");
    let bytes = Arc::new(Mutex::new(Vec::new()));
    let tee = Tee(File::from(OwnedFd::from(tx)), bytes.clone());
    let stop_session = Arc::new(AtomicBool::new(false));
    let session = {
        let stop = stop_session.clone();
        std::thread::spawn(move || pmx::record::stream(&[event], &opts, Box::new(tee), stop))
    };

    // The rows are the spinner's: this process also runs the other
    // tests of this binary, whose binaries come and go (a build after
    // the session could not name what a live view named); the totals
    // still count every thread.
    let o = Options {
        tids: Some(vec![spinner_tid]),
        ..options()
    };
    let reader = pmx_perfdata::Reader::new(File::from(OwnedFd::from(rx))).expect("header");
    let mut live = Live::new(reader, &o, true);
    let t = Instant::now();
    let mut seen = 0;
    let mut rounds = 0;
    while t.elapsed() < Duration::from_secs(30) {
        assert!(live.next_round().expect("round"), "the stream ended early");
        rounds += 1;
        seen = marker_samples(&live.snapshot());
        if seen >= 20 {
            break;
        }
    }
    if seen < 20 {
        let p = live.snapshot();
        let top: Vec<_> = p.events[0]
            .rows
            .iter()
            .take(8)
            .map(|r| (&r.comm, &r.symbol, r.samples))
            .collect();
        panic!(
            "live_spin_marker: {seen} samples after {rounds} rounds; {} samples: {top:?}",
            p.events[0].samples
        );
    }
    assert!(
        !session.is_finished(),
        "the rows came while the session ran"
    );
    let addresses = live.addresses();
    assert!(
        addresses
            .iter()
            .any(|a| a.symbol.contains("live_spin_marker")),
        "the annotate view's addresses"
    );

    // Aging: halve, then zero.
    let before = live.snapshot();
    live.decay(0.5);
    let halved = live.snapshot();
    let (b, h) = (marker_samples(&before), marker_samples(&halved));
    assert!(h == b / 2, "decay 0.5: {b} → {h}");
    assert!(halved.events[0].samples <= before.events[0].samples / 2 + 1);
    live.zero();
    assert_eq!(live.held_rows(), 0, "zero keeps no row");
    assert_eq!(marker_samples(&live.snapshot()), 0);

    stop_spin.store(true, Ordering::Relaxed);
    spinner.join().unwrap();
    stop_session.store(true, Ordering::Relaxed);
    let summary = session.join().unwrap().expect("session");
    while live.next_round().expect("round") {}
    assert!(live.ended());

    // A fresh aggregator over the same bytes, to the end, is `build`'s
    // profile of them (report's path).
    let bytes = std::mem::take(&mut *bytes.lock().unwrap());
    let mut again = Live::new(
        pmx_perfdata::Reader::new(std::io::Cursor::new(bytes.clone())).unwrap(),
        &o,
        false,
    );
    while again.next_round().unwrap() {}
    let live_end = again.snapshot();
    let mut r = pmx_perfdata::Reader::new(std::io::Cursor::new(bytes)).unwrap();
    let built = build(&mut r, &o, &mut |_, _| {}).expect("build");
    assert_eq!(built.events[0].samples, summary.events[0].samples);
    assert_eq!(live_end.events[0].samples, built.events[0].samples);
    // Rows of equal weight and name (two monomorphizations of one
    // generic) come in either order: compared as sets. A kernel row's
    // example address is the first sample's of the function here, and
    // after the deferred resolution of the build any of its samples'.
    let sorted = |p: &Profile| {
        let mut rows = p.events[0].rows.clone();
        for r in &mut rows {
            if r.kernel {
                r.example = (0, 0);
            }
        }
        rows.sort_by_key(|r| (r.symbol.clone(), r.example));
        rows
    };
    let (a, b) = (sorted(&live_end), sorted(&built));
    let only_live: Vec<_> = a.iter().filter(|r| !b.contains(r)).collect();
    let only_built: Vec<_> = b.iter().filter(|r| !a.contains(r)).collect();
    assert!(
        only_live.is_empty() && only_built.is_empty(),
        "live {only_live:?}\nbuilt {only_built:?}"
    );
}
