//! What a recording is asked to do ([`RecordOptions`], [`RecordEvent`]),
//! what it produced ([`RecordSummary`]) and why it failed
//! ([`RecordError`]): the values every stage of the pipeline shares.

use super::callgraph::CallGraph;
use pmx_count::launch::Exit;
use pmx_count::stat::Scope;
use pmx_perf::{Attr, SampleRate};
use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// description) and its attr as resolved (PMU, config, modifiers,
/// `precise_ip`, and a period or frequency when the spec gave one). The
/// sampling fields are filled by [`record`](super::record).
#[derive(Debug, Clone)]
pub struct RecordEvent {
    /// The name written to the file.
    pub name: String,
    /// The resolved attr.
    pub attr: Attr,
    /// The event's own `inherit`/`no-inherit` term, over
    /// [`RecordOptions::inherit`].
    pub inherit: Option<bool>,
    /// The event's own `call-graph=` (and `stack-size=`) terms, over
    /// [`RecordOptions::call_graph`].
    pub call_graph: Option<CallGraph>,
    /// Its place in a `{…}` group, if it is in one.
    pub group: Option<GroupMember>,
}

/// An event's place in a `{…}` group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupMember {
    /// The leader's index among the events (its own for the leader).
    pub leader: usize,
    /// `:S`: only the leader samples, and each sample reads every member.
    pub sample_read: bool,
}

/// What and how to record.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// Where: the launched command, processes, threads or CPUs.
    pub scope: Scope,
    /// The command to launch (required for [`Scope::Command`]; with CPUs,
    /// recording lasts as long as it runs).
    pub command: Vec<String>,
    /// The command's children are sampled too.
    pub inherit: bool,
    /// The rate for events that do not give their own `period=`/`freq=`.
    pub rate: SampleRate,
    /// How call chains are recorded (`-g`, `--call-graph`).
    pub call_graph: CallGraph,
    /// Data pages per CPU ring (a power of two).
    pub mmap_pages: usize,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// The file to write.
    pub output: PathBuf,
    /// The command line to store in the file (`pmx record …`).
    pub cmdline: Vec<String>,
    /// How the command is started (a plain fork under valgrind: the CLI
    /// decides from `LD_PRELOAD`,
    /// [`Spawn::for_preload`](pmx_count::launch::Spawn::for_preload)).
    pub spawn: pmx_count::launch::Spawn,
    /// How the file is written (compression, build ids).
    pub file: FileOptions,
}

/// `--off-cpu`'s options (the `offcpu` stage).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OffCpuOptions {
    /// `--off-cpu-thresh` in ns: shorter waits are summed per stack.
    pub thresh_ns: Option<u64>,
}

/// How a recording's file is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOptions {
    /// zstd-compress the records at this level (perf's `-z`: 1), as
    /// `PERF_RECORD_COMPRESSED` records; file mode only.
    pub compression: Option<u32>,
    /// Write the BUILD_ID feature (every mapped binary's build id; perf's
    /// `-B` turns it off).
    pub build_ids: bool,
    /// `--switch-output`: several files, switched on a size, a time or
    /// SIGUSR2; file mode only.
    pub switch_output: Option<super::switch::SwitchOutput>,
    /// `--switch-events`: context-switch records (`PERF_RECORD_SWITCH`,
    /// `SWITCH_CPU_WIDE` on CPUs) on the side-band event.
    pub switch_events: bool,
    /// `--off-cpu`: `offcpu-time` samples from `sched:sched_switch`.
    pub off_cpu: Option<OffCpuOptions>,
    /// `--namespaces`: NAMESPACES records (the kernel's, and synthesized
    /// for the tasks that existed before).
    pub namespaces: bool,
    /// `--threads`: this many reader threads empty the rings (dealt
    /// among them; one per CPU's ring as perf's `--threads`), while the
    /// calling thread writes the one file; 0: the calling thread does
    /// both.
    pub reader_threads: usize,
}

impl Default for FileOptions {
    fn default() -> Self {
        FileOptions {
            compression: None,
            build_ids: true,
            switch_output: None,
            switch_events: false,
            off_cpu: None,
            namespaces: false,
            reader_threads: 0,
        }
    }
}

/// Samples of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSamples {
    /// The event's name.
    pub name: String,
    /// How many samples it recorded.
    pub samples: u64,
}

/// What a recording produced.
#[derive(Debug, Clone)]
pub struct RecordSummary {
    /// Samples per event, in the order given.
    pub events: Vec<EventSamples>,
    /// PERF_RECORD_LOST records: how often a ring overflowed.
    pub lost_events: u64,
    /// Records lost in those overflows, in total.
    pub lost_records: u64,
    /// Samples the PMU itself dropped (PERF_RECORD_LOST_SAMPLES).
    pub lost_samples: u64,
    /// PERF_RECORD_THROTTLE records.
    pub throttled: u64,
    /// PERF_RECORD_UNTHROTTLE records.
    pub unthrottled: u64,
    /// Records written to the data section (FINISHED_ROUND markers
    /// included).
    pub records: u64,
    /// The file written.
    pub output: PathBuf,
    /// The file's size in bytes.
    pub bytes: u64,
    /// `--switch-output`: every file written, in order (the output's
    /// name with a time stamp).
    pub switched: Vec<PathBuf>,
    /// Where an earlier file of that name was moved, if there was one.
    pub old_output: Option<PathBuf>,
    /// How the command ended, when there was one.
    pub exit: Option<Exit>,
    /// Stopped by SIGINT/SIGTERM.
    pub interrupted: bool,
    /// Wall-clock time from enabling to the end.
    pub elapsed: Duration,
    /// Things the user should know (no kernel map, unreadable binaries …).
    pub notes: Vec<String>,
}

impl RecordSummary {
    /// Samples of every event.
    pub fn samples(&self) -> u64 {
        self.events.iter().map(|e| e.samples).sum()
    }

    /// What `pmx record` says at the end, one line each: samples, file and
    /// losses, then advice on losses and throttling, the kept old file and
    /// the notes.
    pub fn messages(&self) -> Vec<String> {
        let s = self;
        let per_event = if s.events.len() > 1 {
            format!(
                " ({})",
                s.events
                    .iter()
                    .map(|e| format!("{} {}", e.name, e.samples))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            format!(" of {}", s.events[0].name)
        };
        let mut m = vec![format!(
            "{} samples{per_event}, written to {} ({:.3} MB); {} records lost in {} \
             LOST events, {} throttle events",
            s.samples(),
            if s.output.as_os_str() == "-" {
                "standard output".into()
            } else {
                s.output.display().to_string()
            },
            s.bytes as f64 / 1e6,
            s.lost_records,
            s.lost_events,
            s.throttled,
        )];
        if !s.switched.is_empty() {
            let names: Vec<String> = s.switched.iter().map(|p| p.display().to_string()).collect();
            m.push(format!(
                "--switch-output: {} files: {}",
                names.len(),
                names.join(", ")
            ));
        }
        if s.lost_samples > 0 {
            m.push(format!(
                "the PMU dropped {} samples (PERF_RECORD_LOST_SAMPLES)",
                s.lost_samples
            ));
        }
        if s.lost_events > 0 {
            m.push(
                "the ring buffers overflowed: use a larger -m, a lower rate (-F/-c), \
                 or fewer CPUs"
                    .to_string(),
            );
        }
        if s.throttled > 0 {
            m.push(format!(
                "the kernel throttled sampling {} times (more interrupts than \
                 kernel.perf_event_max_sample_rate allows): lower the rate",
                s.throttled
            ));
        }
        if let Some(old) = &s.old_output {
            m.push(format!("the previous file was kept as {}", old.display()));
        }
        m.extend(s.notes.iter().map(|n| format!("note: {n}")));
        m
    }
}

/// Why a recording could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The command could not be started; exit 127.
    #[error("cannot run '{cmd}': {reason}")]
    Exec {
        /// The command.
        cmd: String,
        /// Why.
        reason: String,
    },
    /// An event could not be opened, with the reason and the fix (match
    /// on its `cause`).
    #[error("{0}")]
    Open(Box<pmx_count::stat::EventOpenError>),
    /// An event that counts here but cannot be sampled (it did not
    /// resolve to a sampling attr, or it belongs to an uncore PMU).
    #[error("{0}")]
    NotSampleable(String),
    /// Every task to attach to had exited before its counters opened.
    #[error("none of the tasks exists any more: nothing to record")]
    NoTask,
    /// The options cannot work (no CPU, bad page count …).
    #[error("{0}")]
    Invalid(String),
    /// Reading the rings or writing the file failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// A bad `--call-graph` is bad input, as the other options.
impl From<super::callgraph::CallGraphError> for RecordError {
    fn from(e: super::callgraph::CallGraphError) -> RecordError {
        RecordError::Invalid(e.0)
    }
}
