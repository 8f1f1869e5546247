//! Reader threads (`record --threads`): a `-a` recording whose rings are
//! emptied by threads of their own is still one perf.data file, which
//! perf reads with every CPU's samples and without records out of
//! order; and the readers are there, one per CPU's ring (or as many as
//! asked), while the records are written.

use pmx_count::stat::{online_cpus, Scope};
use pmx_perf::{Attr, SampleRate};
use pmx_perfdata::read::Record;
use pmx_record::{
    record, record_into, CallGraph, Features, FileAttr, FileOptions, PipeSink, RecordEvent,
    RecordOptions, RecordSink,
};
use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::process::Command;
use std::sync::{Arc, Mutex};

/// cpu-clock on every CPU every 100 µs of its time: each CPU's timer
/// fires whether the CPU is busy or idle, so every CPU has samples
/// however loaded the machine is.
fn cpu_clock() -> RecordEvent {
    RecordEvent {
        name: "cpu-clock".into(),
        attr: Attr {
            type_: 1, // PERF_TYPE_SOFTWARE, config 0: PERF_COUNT_SW_CPU_CLOCK
            ..Attr::default()
        },
        inherit: None,
        call_graph: None,
        group: None,
    }
}

/// `-a` (every online CPU) while `sleep 0.3` runs, with `threads` readers.
fn all_cpus(output: &std::path::Path, threads: usize) -> RecordOptions {
    RecordOptions {
        scope: Scope::Cpus(online_cpus()),
        command: ["sleep", "0.3"].map(String::from).into(),
        inherit: true,
        rate: SampleRate::Period(100_000),
        call_graph: CallGraph::None,
        mmap_pages: 64,
        duration: None,
        output: output.into(),
        cmdline: ["pmx", "record", "--threads", "-a"]
            .map(String::from)
            .into(),
        spawn: Default::default(),
        file: FileOptions {
            reader_threads: threads,
            ..FileOptions::default()
        },
    }
}

/// Whether system-wide sampling is allowed here (root, or
/// `perf_event_paranoid` ≤ 0); a message when not.
fn system_wide_allowed() -> bool {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .unwrap_or(2);
    // SAFETY: geteuid has no preconditions.
    let ok = unsafe { libc::geteuid() } == 0 || paranoid <= 0;
    if !ok {
        eprintln!("skipped: -a needs root or kernel.perf_event_paranoid <= 0");
    }
    ok
}

/// One test, so that no other test of this binary has ring readers
/// running while the threads are looked at.
#[test]
fn system_wide_recordings_with_reader_threads() {
    if !system_wide_allowed() {
        return;
    }
    one_file_perf_reads_with_every_cpu();
    one_reader_per_cpu_or_as_many_as_asked();
}

fn one_file_perf_reads_with_every_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.data");
    let summary = record(&[cpu_clock()], &all_cpus(&path, usize::MAX)).expect("record");
    let recorded = summary.events[0].samples;
    assert_eq!(summary.lost_records, 0, "{summary:?}");

    // pmx's reader: every sample and every CPU's, and the rounds keep
    // perf's promise: after a FINISHED_ROUND no record is older than the
    // newest before the round before it (what perf's sorting assumes).
    let mut reader = pmx_perfdata::Reader::open(&path).expect("the file reads");
    assert!(!reader.is_pipe(), "a file, not a stream");
    let mut per_cpu: BTreeMap<u32, u64> = BTreeMap::new();
    let (mut newest, mut newest_at_round, mut flushed_to) = (0u64, 0u64, 0u64);
    let mut rounds = 0;
    while let Some(rec) = reader.next_record().expect("a record") {
        match rec {
            Record::Sample(s) => {
                *per_cpu.entry(s.cpu).or_default() += 1;
                assert!(
                    s.time >= flushed_to,
                    "a sample at {} after a round that flushed to {flushed_to}",
                    s.time
                );
                newest = newest.max(s.time);
            }
            Record::FinishedRound => {
                rounds += 1;
                (flushed_to, newest_at_round) = (newest_at_round, newest);
            }
            _ => {}
        }
    }
    let cpus = online_cpus();
    assert_eq!(per_cpu.values().sum::<u64>(), recorded);
    assert!(rounds > 0, "no FINISHED_ROUND");
    for c in &cpus {
        assert!(
            per_cpu.get(c).copied().unwrap_or(0) > 0,
            "no sample of CPU {c}: {per_cpu:?}"
        );
    }

    // perf reads the same file: a line per sample, the same per CPU, and
    // no complaint about the order.
    let out = match Command::new("perf")
        .args(["script", "-F", "cpu", "-i"])
        .arg(&path)
        .output()
    {
        Ok(out) => out,
        Err(e) => return eprintln!("readers: perf is not installed ({e}); perf's reading skipped"),
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "perf script failed: {err}");
    assert!(!err.contains("out of order"), "perf script: {err}");
    let mut perf_cpu: BTreeMap<u32, u64> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let cpu = line.trim().trim_start_matches('[').trim_end_matches(']');
        *perf_cpu
            .entry(cpu.parse().expect("a CPU number"))
            .or_default() += 1;
    }
    assert_eq!(perf_cpu, per_cpu, "perf's samples per CPU");
}

/// A sink that writes the stream to a file and notes, at the end of
/// each round, the names of this process's threads that read rings.
struct Watch {
    readers: Arc<Mutex<Vec<Vec<String>>>>,
    file: PipeSink<File>,
}

/// The reader threads of this process that are not exiting. A thread
/// already joined can still be listed under /proc/self/task for a
/// moment (the kernel wakes the joiner in `do_exit` before it unlists
/// the task): it has `PF_EXITING` (0x4) in its stat's flags, set before
/// the wake-up, so it is left out whatever the timing.
fn ring_threads() -> Vec<String> {
    let running = |task: &std::path::Path| -> Option<String> {
        let name = std::fs::read_to_string(task.join("comm")).ok()?;
        let stat = std::fs::read_to_string(task.join("stat")).ok()?;
        // After the command's `)`: state, ppid, pgrp, session, tty_nr,
        // tpgid, flags.
        let rest = &stat[stat.rfind(')')? + 1..];
        let flags: u64 = rest.split_whitespace().nth(6)?.parse().ok()?;
        (flags & 0x4 == 0).then(|| name.trim().to_string())
    };
    let mut names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| running(&t.ok()?.path()))
        .filter(|n| n.starts_with("pmx-ring-"))
        .collect();
    names.sort();
    names
}

impl RecordSink for Watch {
    fn begin(&mut self, attrs: Vec<FileAttr>, start: &Features) -> io::Result<()> {
        self.file.begin(attrs, start)
    }

    fn record(&mut self, rec: &[u8]) -> io::Result<()> {
        self.file.record(rec)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.readers.lock().unwrap().push(ring_threads());
        self.file.flush()
    }

    fn finish(self: Box<Self>, features: &Features) -> io::Result<u64> {
        Box::new(self.file).finish(features)
    }
}

fn one_reader_per_cpu_or_as_many_as_asked() {
    let n = online_cpus().len();
    let dir = tempfile::tempdir().unwrap();
    let expect = |k: usize| (0..k).map(|i| format!("pmx-ring-{i}")).collect::<Vec<_>>();
    for (threads, want) in [(usize::MAX, expect(n)), (1, expect(1)), (0, Vec::new())] {
        let path = dir.path().join(format!("watch-{threads}.data"));
        let readers = Arc::new(Mutex::new(Vec::new()));
        let sink = Watch {
            readers: readers.clone(),
            file: PipeSink::new(File::create(&path).unwrap()),
        };
        let opts = all_cpus(&path, threads);
        let summary = record_into(&[cpu_clock()], &opts, Box::new(sink), None).expect("record");
        assert!(summary.events[0].samples > 0);
        let seen = readers.lock().unwrap();
        // The first round ends while the readers run; the last after
        // they ended.
        assert!(seen.len() >= 2, "{} rounds", seen.len());
        assert_eq!(seen[0], want, "threads {threads}");
        assert_eq!(
            seen.last().unwrap(),
            &Vec::<String>::new(),
            "threads {threads}"
        );
        // Nothing is left running.
        assert_eq!(ring_threads(), Vec::<String>::new());
    }
}
