//! `pmx::record::stream`: a live sampling session streams pipe-mode
//! perf.data to a reader while it runs (a round marker at least every
//! drain), and its owner's stop token ends it.

use pmx::record::{CallGraph, RecordOptions, SampleRate};
use pmx::stat::Scope;
use pmx_perfdata::read::Record;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn options(scope: Scope, command: &[&str]) -> RecordOptions {
    RecordOptions {
        scope,
        command: command.iter().map(|s| s.to_string()).collect(),
        inherit: true,
        rate: SampleRate::Frequency(1000),
        call_graph: CallGraph::None,
        mmap_pages: 8,
        duration: None,
        output: "-".into(),
        cmdline: vec!["pmx".into(), "top".into()],
        file: Default::default(),
        spawn: Default::default(),
    }
}

#[test]
fn a_system_wide_session_streams_rounds_while_it_runs_and_stops_on_request() {
    let cpus: Vec<u32> =
        (0..std::thread::available_parallelism().map_or(1, |n| n.get()) as u32).collect();
    let (event, _) = pmx::record::default_event(SampleRate::Frequency(1000));
    let opts = options(Scope::Cpus(cpus), &[]);
    let (rx, tx) = std::io::pipe().expect("pipe");
    let stop = Arc::new(AtomicBool::new(false));
    // The reader counts rounds and samples as they arrive.
    let rounds = Arc::new(AtomicU64::new(0));
    let reader = {
        let rounds = rounds.clone();
        std::thread::spawn(move || {
            let src = File::from(OwnedFd::from(rx));
            let mut r = pmx_perfdata::Reader::new(src).expect("pipe header");
            assert!(r.is_pipe());
            let (mut samples, mut comms) = (0u64, 0u64);
            while let Some(rec) = r.next_record().expect("record") {
                match rec {
                    Record::FinishedRound => {
                        rounds.fetch_add(1, Ordering::Relaxed);
                    }
                    Record::Sample(_) => samples += 1,
                    Record::Comm(_) => comms += 1,
                    _ => {}
                }
            }
            (samples, comms, r.features().build_ids.len())
        })
    };
    let session = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            pmx::record::stream(&[event], &opts, Box::new(tx), stop).expect("stream")
        })
    };
    // Rounds arrive while the session runs, busy or idle.
    let t = Instant::now();
    let mut spin = 0u64;
    while rounds.load(Ordering::Relaxed) < 3 && t.elapsed() < Duration::from_secs(20) {
        spin = spin.wrapping_add(std::hint::black_box(1));
    }
    assert!(
        rounds.load(Ordering::Relaxed) >= 3,
        "no rounds streamed in 20 s ({spin})"
    );
    assert!(!session.is_finished(), "the session ran on by itself");
    stop.store(true, Ordering::Relaxed);
    let summary = session.join().expect("session");
    assert!(summary.interrupted, "a stop request is an interruption");
    let (samples, comms, _build_ids) = reader.join().expect("reader");
    let recorded: u64 = summary.events.iter().map(|e| e.samples).sum();
    assert_eq!(samples, recorded, "every sample counted reached the reader");
    assert!(
        samples > 0,
        "cpu-clock sampled nothing while this test spun"
    );
    assert!(comms > 0, "the synthesized COMMs of the running processes");
}

#[test]
fn a_session_of_a_command_ends_with_it_and_the_stream_ends_with_its_features() {
    let (event, _) = pmx::record::default_event(SampleRate::Frequency(1000));
    let opts = options(
        Scope::Command,
        &[
            "sh",
            "-c",
            "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done",
        ],
    );
    let buf = Arc::new(std::sync::Mutex::new(Vec::new()));
    struct Shared(Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let summary =
        pmx::record::stream(&[event], &opts, Box::new(Shared(buf.clone())), stop).expect("stream");
    assert!(!summary.interrupted);
    assert!(
        matches!(summary.exit, Some(pmx::launch::Exit::Code { code: 0 })),
        "{:?}",
        summary.exit
    );
    let bytes = std::mem::take(&mut *buf.lock().unwrap());
    let mut r = pmx_perfdata::Reader::new(std::io::Cursor::new(bytes)).expect("header");
    let mut samples = 0;
    while let Some(rec) = r.next_record().expect("record") {
        if let Record::Sample(_) = rec {
            samples += 1;
        }
    }
    assert_eq!(samples, summary.events[0].samples);
    assert!(samples > 0, "the shell loop was sampled");
    assert!(
        r.features()
            .build_ids
            .iter()
            .any(|b| b.filename.ends_with("sh") || b.filename.contains("dash")),
        "the build ids end the stream: {:?}",
        r.features()
            .build_ids
            .iter()
            .map(|b| &b.filename)
            .collect::<Vec<_>>()
    );
}

/// A thread that spins until told, its tid sent first.
fn spin_in_new_thread(stop: Arc<AtomicBool>) -> (std::thread::JoinHandle<u64>, u32) {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        tx.send(unsafe { libc::gettid() } as u32).unwrap();
        let mut x = 1u64;
        while !stop.load(Ordering::Relaxed) {
            x = std::hint::black_box(x.wrapping_mul(3).wrapping_add(1));
        }
        x
    });
    (h, rx.recv().unwrap())
}

#[test]
fn a_pid_session_follows_threads_created_after_it_opened() {
    // perf's `-p` follows the target's new threads (inherit); so must a
    // live view of a server that starts workers later.
    let (event, _) = pmx::record::default_event(SampleRate::Frequency(1000));
    let opts = options(Scope::Pids(vec![std::process::id() as i32]), &[]);
    let (rx, tx) = std::io::pipe().expect("pipe");
    let stop = Arc::new(AtomicBool::new(false));
    let session = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            pmx::record::stream(&[event], &opts, Box::new(tx), stop).expect("stream")
        })
    };
    let mut r = pmx_perfdata::Reader::new(File::from(OwnedFd::from(rx))).expect("header");
    // The first round: the session has opened its events.
    while !matches!(
        r.next_record().expect("record"),
        Some(Record::FinishedRound)
    ) {}
    let stop_spin = Arc::new(AtomicBool::new(false));
    let (spinner, tid) = spin_in_new_thread(stop_spin.clone());
    let t = Instant::now();
    let mut seen = 0;
    while seen < 20 && t.elapsed() < Duration::from_secs(30) {
        match r.next_record().expect("record") {
            Some(Record::Sample(s)) if s.tid == tid => seen += 1,
            Some(_) => {}
            None => break,
        }
    }
    stop_spin.store(true, Ordering::Relaxed);
    spinner.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    while r.next_record().expect("record").is_some() {}
    session.join().expect("session");
    assert!(
        seen >= 20,
        "thread {tid}, created after the session opened: {seen} samples in {:?}",
        t.elapsed()
    );
}
