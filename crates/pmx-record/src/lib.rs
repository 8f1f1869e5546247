//! # pmx-record — sampling sessions
//!
//! One job: sample. Record options in once ([`RecordOptions`], with the
//! checked sampling flags' [`Sampling`] from `pmx-args`), a session opens the events with their
//! rings and drains them into a [`RecordSink`]: a perf.data file, a pipe in perf's
//! pipe mode ([`record`] chooses by `-o`), a live reader ([`stream`], what `pmx top` and `pmx
//! serve` read), or the caller's own sink ([`record_into`]). `pmx report` and the exports read what it wrote
//! (`pmx-profile`).
//!
//! ## Where the records go
//!
//! A [`RecordSink`] is told the events' attrs once ([`RecordSink::begin`],
//! with the features known at the start), then gets every record in the
//! order the session writes it ([`RecordSink::record`]: the synthesized
//! side band, then each drain of the rings ended by a FINISHED_ROUND),
//! a [`RecordSink::flush`] after every drain, and the features of the
//! whole recording at the end ([`RecordSink::finish`]). Its
//! implementations: the file `record` writes for a seekable `-o` (the
//! only one that takes `-z` and `--switch-output`), [`PipeSink::new`]
//! (pipe-mode perf.data into any writer: `-o -`, a FIFO) and
//! [`PipeSink::live`] (the same with a FINISHED_ROUND and a flush after
//! every drain, records or not: [`stream`]). The session counts every
//! record on its way to any sink, so the [`RecordSummary`] is the same
//! whichever it is.
//!
//! What this crate never does: symbolize, aggregate or render samples
//! (`pmx-profile`, `pmx-symbols`), or count (`pmx-count`, whose targets,
//! launching, event database and signals it stands on).
//!
//! ## From events to a perf.data file
//!
//! The model, as the kernel sees it:
//!
//! - Each event is opened **sampling**: the counter overflows every N
//!   events (a period, the sample-after value) or at a rate the kernel
//!   steers toward by re-computing the period every tick (a frequency),
//!   and on each overflow the kernel writes a PERF_RECORD_SAMPLE with the
//!   instruction pointer, pid/tid, time, CPU, period and, with call
//!   chains, the return addresses found by walking frame pointers.
//! - **Groups** (`groups`): `{A,B}` opens the members in the leader's
//!   group, each sampling; `{A,B}:S` samples the leader only and makes
//!   every sample read every member (`PERF_SAMPLE_READ`, `ID|GROUP|LOST`
//!   and the time totals, what this kernel takes found by a probe); the
//!   file's GROUP_DESC tells perf which events form a group.
//! - Records go into **one ring buffer per CPU**. For a launched command
//!   every event is opened once per CPU on the command's pid with
//!   `inherit` (the kernel refuses a ring for an inherited event on cpu
//!   -1), so each CPU's ring collects that CPU's samples of the command
//!   and all its descendants; for `-a`/`-C` on pid -1 per CPU; for
//!   `-p`/`-t` once per thread and CPU. The first event opened on a CPU
//!   owns the ring and every other event there is redirected into it
//!   (`PERF_EVENT_IOC_SET_OUTPUT`).
//! - The first event also asks for the **side-band** records a reader needs
//!   to turn addresses into symbols: MMAP2 (every executable mapping), COMM
//!   (names; `comm_exec` marks the one at `exec`), FORK and EXIT. Side-band
//!   records carry the sample's TID/TIME/CPU fields too (`sample_id_all`),
//!   and with several events every record carries the event's id
//!   (`PERF_SAMPLE_IDENTIFIER`) so a reader can tell them apart.
//! - What existed before recording started is **synthesized** from `/proc`
//!   the way perf does: the kernel's map (`[kernel.kallsyms]_text` from
//!   `_text` to `_etext`, so kernel addresses resolve against
//!   `/proc/kallsyms`), and for `-p`/`-t`/`-a` a COMM per thread and an
//!   MMAP2 per executable mapping of every process concerned. A launched
//!   command needs none of that: its events start at `exec`
//!   (`enable_on_exec`), so the kernel reports its COMM and mappings itself.
//! - The loop drains every ring in turn, writes the records to the file
//!   and then a PERF_RECORD_FINISHED_ROUND: rings are drained at different
//!   moments, so records are only time-ordered within a ring; the marker
//!   tells a reader that everything before it may be sorted by time. The
//!   kernel drops records it has no room for and says so in a
//!   PERF_RECORD_LOST; it stops a counter that interrupts too often for
//!   the rest of the tick (`kernel.perf_event_max_sample_rate`) and writes
//!   PERF_RECORD_THROTTLE/UNTHROTTLE. Both are counted in the
//!   [`RecordSummary`].
//! - The file ([`pmx_perfdata`]'s writer) gets the attrs exactly as given
//!   to the kernel with the ids of every fd, and the feature sections perf
//!   reads: build ids of every mapped binary and of the kernel, hostname,
//!   OS release, arch, CPU counts and description, `cpuid` in perf's form
//!   (`AuthenticAMD,25,17,1`), total memory, the command line, the event
//!   names and the time of the first and last sample.
//!
//! Recording ends when the command exits, every `-p`/`-t` task is gone,
//! the duration passes or SIGINT/SIGTERM arrives (forwarded to the
//! command); what is left in the rings is drained and the file is complete
//! in every case.

//!
//! ## The stages
//!
//! ```text
//! plan ──► open/mmap ──► sink ──────► existing (synthesized) ──► target started
//!   │                                                                   │
//!   └ options                    drain rings → sink, until target over ◄┘
//!                                     │
//!                     disable, last drain, target finished, features → summary
//! ```
//!
//! [`plan`](self) turns events into attrs, CPUs and tasks; `open` opens
//! them and maps one ring per CPU; `sink` is the write stage and the
//! counts of what went in (`tally`) over an `output` ([`RecordSink`]); `readers` empties the
//! rings, from the calling thread or (`--threads`, [`FileOptions::reader_threads`]) from
//! reader threads of their own that hand the bytes to the one writer; `existing` synthesizes what was there before;
//! `target` launches, watches and ends the command or tasks; `features`
//! describes the machine at the end. `tracepoints` samples every hit of
//! a tracepoint with its raw data and writes the `TRACING_DATA` feature;
//! `offcpu` (`--off-cpu`) adds `sched:sched_switch` and turns its records
//! into `offcpu-time` samples between the rings and the sink.

mod buildid;
mod callgraph;
mod choose;
mod default;
mod existing;
mod features;
mod groups;
mod namespaces;
mod offcpu;
mod open;
mod options;
mod output;
mod plan;
mod readers;
mod sampling;
mod sink;
mod switch;
mod synth;
mod tally;
mod target;
mod tracepoints;

use plan::Plan;
use pmx_count::launch::Launched;
use pmx_count::stat::Scope;
use sink::{Output, Sink, Written};
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use target::Lifecycle;

pub use buildid::{of_elf_file as build_id_of_file, of_running_kernel as kernel_build_id};
pub use callgraph::{CallGraph, CallGraphError, DEFAULT_STACK_SIZE, MAX_STACK_SIZE};
pub use choose::{event_groups, sample_rate, sampling_events};
pub use default::{default_event, max_sample_rate, DEFAULT_FREQUENCY};
pub use options::{
    EventSamples, FileOptions, GroupMember, OffCpuOptions, RecordError, RecordEvent, RecordOptions,
    RecordSummary,
};
pub use output::{PipeSink, RecordSink};
pub use plan::MEMORY_FIELDS;
pub use pmx_perf::SampleRate;
pub use pmx_perfdata::{write::Features, FileAttr};
pub use pmx_sys::SysRoot;
pub use sampling::{check_mmap_pages, Sampling};
pub use switch::SwitchOutput;

/// perf's default ring size in data pages per CPU (512 KiB with 4 KiB
/// pages: what `kernel.perf_event_mlock_kb`'s default of 516 allows).
pub const DEFAULT_MMAP_PAGES: usize = 128;

/// The ring size when `-m` is not given: perf's, or with `--off-cpu` four
/// times it for root (whom `perf_event_mlock_kb` does not bind): the
/// `sched_switch` samples of a program switching hundreds of thousands of
/// times a second come in bursts that overflow perf's size before the
/// reader wakes (docs/BENCHMARKS.md, off-CPU recording).
pub fn default_mmap_pages(off_cpu: bool) -> usize {
    // SAFETY: geteuid has no preconditions.
    match off_cpu && unsafe { libc::geteuid() } == 0 {
        true => 4 * DEFAULT_MMAP_PAGES,
        false => DEFAULT_MMAP_PAGES,
    }
}

pub use pmx_count::signals::{install as install_signal_handlers, stop_requested};

/// Record `events` as `opts` says, into `opts.output`.
pub fn record(events: &[RecordEvent], opts: &RecordOptions) -> Result<RecordSummary, RecordError> {
    // A stop requested since the handlers were installed (during the
    // setup) is kept: it ends the recording once the command runs.
    plan::validate(events, opts)?;
    if opts.file.switch_output == Some(SwitchOutput::Signal) {
        pmx_count::signals::install_switch();
    }
    let mut child = target::launch(opts)?;
    let output = Output::Path(&opts.output);
    let result = record_with(events, opts, child.as_mut(), output, None);
    if result.is_err() {
        if let Some(c) = child.as_mut() {
            c.abandon();
        }
    }
    pmx_count::signals::set_child(0);
    result
}

/// A live sampling session: record `events` as `opts` says (its
/// `output` is not used), streaming pipe-mode perf.data into `out`
/// ([`PipeSink::live`]) — a FINISHED_ROUND and a flush after every drain
/// of the rings, at least every 100 ms, so a reader on the other end
/// (`pmx_profile`'s live aggregator, or a buffer turned into a profile at
/// the end) always knows how far time has come — until the target is
/// over, the duration passes, SIGINT/SIGTERM arrives or `stop` is set.
/// The feature records (build ids, sample times) end the stream.
///
/// What a session costs: one ring per CPU, drained by the calling
/// thread; the writer should not block for long (a full ring loses
/// records, counted in the summary's `lost_*`).
pub fn stream(
    events: &[RecordEvent],
    opts: &RecordOptions,
    out: Box<dyn Write + Send>,
    stop: Arc<AtomicBool>,
) -> Result<RecordSummary, RecordError> {
    record_into(events, opts, Box::new(PipeSink::live(out)), Some(stop))
}

/// Record `events` as `opts` says (its `output` is not used) into the
/// caller's `sink` (see [`RecordSink`] for the calls it gets), until the
/// target is over, the duration passes, SIGINT/SIGTERM arrives or `stop`
/// (when given) is set. `-z` and `--switch-output` need a file
/// ([`record`]) and are refused here.
pub fn record_into(
    events: &[RecordEvent],
    opts: &RecordOptions,
    sink: Box<dyn RecordSink>,
    stop: Option<Arc<AtomicBool>>,
) -> Result<RecordSummary, RecordError> {
    plan::validate(events, opts)?;
    let mut child = target::launch(opts)?;
    let output = Output::Sink(sink);
    let result = record_with(events, opts, child.as_mut(), output, stop);
    if result.is_err() {
        if let Some(c) = child.as_mut() {
            c.abandon();
        }
    }
    pmx_count::signals::set_child(0);
    result
}

/// The pipeline, once the command (if any) is held before `exec`.
fn record_with(
    events: &[RecordEvent],
    opts: &RecordOptions,
    child: Option<&mut Launched>,
    output: Output<'_>,
    stop: Option<Arc<AtomicBool>>,
) -> Result<RecordSummary, RecordError> {
    let off_cpu = match opts.file.off_cpu {
        Some(o) => Some((offcpu::with_switch_event(events, opts)?, o)),
        None => None,
    };
    let (events, opts) = match &off_cpu {
        Some(((e, o, _), _)) => (&e[..], o),
        None => (events, opts),
    };
    let child_pid = child.as_ref().map(|c| c.pid);
    let mut plan = Plan::new(events, opts, child_pid)?;
    if off_cpu.is_some() {
        // The kernel says when a traced thread comes back on a CPU.
        let switch = plan.attrs.last_mut().expect("the switch event");
        switch.context_switch = true;
        // The user stack is the sample (as perf's): kernel frames would
        // only fill the rings.
        switch.exclude_callchain_kernel = true;
        plan.attrs[0].wakeup = offcpu::wakeup(opts.mmap_pages);
    }
    let (opened, rings) = open::open(&plan, events, opts.mmap_pages)?;
    // What the file says of the events: the switch event is offcpu-time there.
    let (mut attrs, mut ids, mut by_id) = (plan.attrs.clone(), opened.ids.clone(), opened.by_id());
    let converter = off_cpu.as_ref().map(|((_, _, prev_state), o)| {
        let k = attrs.len() - 1;
        by_id.retain(|_, &mut e| e != k);
        by_id.insert(offcpu::OFFCPU_ID, k);
        let switch_ids = std::mem::replace(&mut ids[k], vec![offcpu::OFFCPU_ID]);
        let conv = offcpu::OffCpu::new(switch_ids, &attrs[k], *prev_state, *o);
        attrs[k] = offcpu::file_attr(&attrs[k]);
        conv
    });
    let tracing_data = tracepoints::tracing_data(&attrs).map_err(RecordError::Invalid)?;
    let (mut sink, old_output) = Sink::create(
        output,
        (&attrs, events),
        &ids,
        by_id,
        (&opts.cmdline, &opts.file, opts.mmap_pages),
    )?;
    sink.set_tracing_data(tracing_data)?;
    sink.offcpu = converter;
    // Reader threads empty the rings from now on, the synthesis included.
    let mut drain = readers::Drain::start(rings, opts.file.reader_threads)?;

    // Start: the command's events at its exec; the others now, before the
    // synthesis below, so nothing that starts meanwhile falls in a gap (a
    // mapping seen twice is harmless, one seen never is not).
    if opts.scope != Scope::Command {
        opened.enable()?;
    }
    let mut notes = plan.notes.clone();
    let synth = existing::existing(
        &opts.scope,
        plan.attrs[0].sample_type,
        opened.first_id(),
        plan.samples_kernel(),
        plan.attrs[0].mmap_data,
        &mut notes,
    );
    let ns = match opts.file.namespaces {
        true => namespaces::existing(
            &opts.scope,
            child_pid,
            plan.attrs[0].sample_type,
            opened.first_id(),
        ),
        false => Vec::new(),
    };
    for r in synth.iter().chain(&ns) {
        sink.write(r)?;
    }

    let mut life = Lifecycle::start(child, opts, stop)?;
    let elapsed = drain.until_over(&mut life, &mut sink)?;
    opened.disable();
    drain.finish(&mut sink)?;
    drop(opened);
    let (exit, interrupted) = life.finish()?;
    let written = sink.finish(&opts.cmdline, &mut notes)?;
    Ok(summary(
        events,
        written,
        opts,
        old_output,
        (exit, interrupted),
        elapsed,
        notes,
    ))
}

/// The summary of a finished recording.
fn summary(
    events: &[RecordEvent],
    written: Written,
    opts: &RecordOptions,
    old_output: Option<std::path::PathBuf>,
    (exit, interrupted): (Option<pmx_count::launch::Exit>, bool),
    elapsed: Duration,
    notes: Vec<String>,
) -> RecordSummary {
    let t = written.tally;
    RecordSummary {
        // The members of a `{…}:S` group never sample: they are read.
        events: events
            .iter()
            .zip(&t.samples)
            .enumerate()
            .filter(|(i, (e, _))| !e.group.is_some_and(|g| g.sample_read && g.leader != *i))
            .map(|(_, (e, &s))| EventSamples {
                name: e.name.clone(),
                samples: s,
            })
            .collect(),
        lost_events: t.lost_events,
        lost_records: t.lost_records,
        lost_samples: t.lost_samples,
        throttled: t.throttled,
        unthrottled: t.unthrottled,
        records: written.records,
        output: opts.output.clone(),
        bytes: written.bytes,
        switched: written.switched,
        old_output,
        exit,
        interrupted,
        elapsed,
        notes,
    }
}
