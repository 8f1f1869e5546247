//! A caller's own [`RecordSink`] (`record_into`): it is told the events
//! once, gets every record the session writes in order, and what it got
//! is the recording a perf.data file holds — the sink here also writes
//! what it gets through [`PipeSink`] into a file, read back record by
//! record (and by the installed perf when there is one).

use pmx_count::stat::Scope;
use pmx_perf::{Attr, SampleRate};
use pmx_perfdata::read::Record;
use pmx_record::{
    record_into, CallGraph, Features, FileAttr, PipeSink, RecordEvent, RecordOptions, RecordSink,
};
use std::fs::File;
use std::io;
use std::sync::{Arc, Mutex};

/// `PERF_RECORD_SAMPLE`, `PERF_RECORD_FINISHED_ROUND`.
const SAMPLE: u32 = 9;
const FINISHED_ROUND: u32 = 68;

/// What the caller's sink saw, in the order it saw it.
#[derive(Default)]
struct Seen {
    /// `begin`'s event names and the command line of its features.
    begun: Option<(Vec<String>, Option<Vec<String>>)>,
    records: Vec<Vec<u8>>,
    flushes: u64,
    finished: bool,
}

/// The caller's sink: keeps what arrives, and passes it on to a file.
struct Tee {
    seen: Arc<Mutex<Seen>>,
    file: PipeSink<File>,
}

impl RecordSink for Tee {
    fn begin(&mut self, attrs: Vec<FileAttr>, start: &Features) -> io::Result<()> {
        let names = attrs.iter().map(|a| a.name.clone()).collect();
        self.seen.lock().unwrap().begun = Some((names, start.cmdline.clone()));
        self.file.begin(attrs, start)
    }

    fn record(&mut self, rec: &[u8]) -> io::Result<()> {
        self.seen.lock().unwrap().records.push(rec.to_vec());
        self.file.record(rec)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.seen.lock().unwrap().flushes += 1;
        self.file.flush()
    }

    fn finish(self: Box<Self>, features: &Features) -> io::Result<u64> {
        self.seen.lock().unwrap().finished = true;
        Box::new(self.file).finish(features)
    }
}

fn kind(rec: &[u8]) -> u32 {
    u32::from_ne_bytes(rec[..4].try_into().unwrap())
}

#[test]
fn a_callers_sink_gets_the_records_a_file_of_the_same_recording_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tee.data");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let tee = Tee {
        seen: seen.clone(),
        file: PipeSink::new(File::create(&path).unwrap()),
    };
    // cpu-clock every 100 µs of the command's CPU time: a shell loop of
    // some milliseconds gives samples however loaded the machine is.
    let event = RecordEvent {
        name: "cpu-clock".into(),
        attr: Attr {
            type_: 1, // PERF_TYPE_SOFTWARE, config 0: PERF_COUNT_SW_CPU_CLOCK
            ..Attr::default()
        },
        inherit: None,
        call_graph: None,
        group: None,
    };
    let loop_ = "i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done";
    let cmdline: Vec<String> = ["pmx", "record", "-e", "cpu-clock"]
        .map(String::from)
        .into();
    let opts = RecordOptions {
        scope: Scope::Command,
        command: ["sh", "-c", loop_].map(String::from).into(),
        inherit: true,
        rate: SampleRate::Period(100_000),
        call_graph: CallGraph::None,
        mmap_pages: 8,
        duration: None,
        output: "unused".into(),
        cmdline: cmdline.clone(),
        spawn: Default::default(),
        file: Default::default(),
    };
    let summary = record_into(&[event], &opts, Box::new(tee), None).expect("record_into");
    assert!(
        matches!(
            summary.exit,
            Some(pmx_count::launch::Exit::Code { code: 0 })
        ),
        "{:?}",
        summary.exit
    );
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    let (names, start_cmdline) = seen.begun.expect("begin was called");
    assert_eq!(names, ["cpu-clock"]);
    assert_eq!(start_cmdline.as_deref(), Some(&cmdline[..]));
    assert!(seen.finished, "finish was called");
    assert!(seen.flushes > 0, "a flush after every drain");

    // The sink got every record the session counted, samples included.
    let samples = seen.records.iter().filter(|r| kind(r) == SAMPLE).count() as u64;
    let recorded: u64 = summary.events.iter().map(|e| e.samples).sum();
    assert!(recorded > 0, "cpu-clock sampled nothing of the loop");
    eprintln!(
        "sink: {recorded} samples in {} records, {} flushes",
        seen.records.len(),
        seen.flushes
    );
    assert_eq!(samples, recorded);
    assert_eq!(seen.records.len() as u64, summary.records);
    assert!(seen.records.iter().any(|r| kind(r) == FINISHED_ROUND));

    // The file written from the same calls holds the same records, byte
    // for byte and in order (its header and feature records aside).
    let mut reader = pmx_perfdata::Reader::open(&path).expect("the file reads");
    assert!(reader.is_pipe());
    let mut in_file = Vec::new();
    let mut file_samples = 0u64;
    while let Some((rec, bytes)) = reader.next_record_bytes().expect("a record") {
        if matches!(rec, Record::Sample(_)) {
            file_samples += 1;
        }
        let k = kind(bytes);
        if k < 64 || k == FINISHED_ROUND {
            in_file.push(bytes.to_vec());
        }
    }
    assert_eq!(file_samples, recorded);
    assert_eq!(in_file.len(), seen.records.len());
    assert!(
        in_file == seen.records,
        "the file's records differ from the sink's"
    );
    assert_eq!(reader.features().cmdline.as_deref(), Some(&cmdline[..]));

    // perf reads the same file: one line per sample.
    let perf = std::process::Command::new("perf")
        .args(["script", "-F", "comm,period", "-i", "-"])
        .stdin(File::open(&path).unwrap())
        .output();
    match perf {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(
                text.lines().count() as u64,
                recorded,
                "perf script:\n{text}"
            );
        }
        Ok(out) => panic!(
            "perf script failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => eprintln!("sink: perf is not installed ({e}); perf's reading skipped"),
    }
}
