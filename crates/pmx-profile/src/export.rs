//! Exports to the viewers people use: the Firefox Profiler's processed
//! profile ([`firefox`]) and pprof's `profile.proto` ([`pprof`]).
//!
//! Both are written from one model, an [`Export`]: what a build saw of
//! every sample ([`collect::Collector`], a
//! [`SampleSink`](crate::profile::sink::SampleSink)), not the aggregated
//! rows: threads, binary mappings (with build ids and file offsets),
//! locations (an address in a mapping, its function, its source line),
//! functions, stacks as a prefix tree of locations, and samples with a
//! time, a thread, a stack and **weights by column**. The columns
//! ([`Export::columns`]) are, per event, its sample count and the sum of
//! its periods, then one per member of its sample-read group (a
//! [`Sample`]'s `extra` weights); pprof writes each column as a sample
//! type, the Firefox Profiler one track per thread and event. A maker
//! may name the columns itself and label samples (pmx-precise's memory
//! samples: weight, memory level, data object), which pprof writes.

pub mod collect;
pub mod firefox;
pub mod pprof;

use crate::profile::sink::SideKind;
use crate::report::{report_reader, report_with, Report, ReportError, ReportOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A thread of the samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Its latest command name.
    pub comm: String,
    /// Samples (of all events).
    pub samples: u64,
    /// Its control group's path, when the caller knows it (pprof label
    /// `cgroup`).
    pub cgroup: Option<String>,
}

/// A mapped binary: `[start, limit)` maps `path` from file offset `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub limit: u64,
    /// File offset of `start`.
    pub offset: u64,
    /// The binary as recorded (`[kernel.kallsyms]` for the kernel).
    pub path: String,
    /// Its build id, when the recording has it.
    pub build_id: Option<Vec<u8>>,
    /// The kernel (its range: the addresses sampled).
    pub kernel: bool,
}

/// A function (or an address no symbol covers, named `0x…`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Demangled name.
    pub name: String,
    /// Its binary's base name.
    pub dso: String,
    /// Kernel code.
    pub kernel: bool,
    /// Source file (DWARF), when known.
    pub file: Option<String>,
}

/// An address in a mapping, its function and source line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The address (a caller's: inside its call instruction).
    pub address: u64,
    /// Index into [`Export::mappings`]; none for unmapped addresses.
    pub mapping: Option<u32>,
    /// Index into [`Export::functions`].
    pub function: u32,
    /// Source line (DWARF), when known.
    pub line: Option<u32>,
    /// Source file (DWARF), when known.
    pub file: Option<String>,
}

/// A node of the stack tree: a location called from `parent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackNode {
    /// The caller's node; none at a root.
    pub parent: Option<u32>,
    /// Index into [`Export::locations`].
    pub location: u32,
}

/// One sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Time (ns, the recording's clock).
    pub time: u64,
    /// Index into [`Export::threads`].
    pub thread: u32,
    /// CPU.
    pub cpu: u32,
    /// Index into the file's events ([`Export::events`]).
    pub event: u32,
    /// Its leaf's node in [`Export::stacks`].
    pub stack: Option<u32>,
    /// Period.
    pub period: u64,
    /// (start, length) of its group members' values in [`Export::extra`].
    pub extra: (u32, u32),
}

/// An event of the file and where its columns start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportEvent {
    /// Name, as in the file.
    pub name: String,
    /// Exported (selected with `--event`, or all).
    pub kept: bool,
    /// Its period is CPU time in nanoseconds (cpu-clock, task-clock).
    pub clock: bool,
    /// Its period is the nanoseconds a thread slept (`offcpu-time`,
    /// `record --off-cpu`).
    pub off_cpu: bool,
    /// Members of its sample-read group: one column each.
    pub members: Vec<String>,
    /// Its first column (sample count; then period, then members).
    pub column: usize,
}

/// A column of weights: pprof's sample type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Name (`cpu-clock`, `cpu-clock_samples`).
    pub name: String,
    /// Unit (`count`, `nanoseconds`).
    pub unit: String,
}

/// A LOST, LOST_SAMPLES or (UN)THROTTLE record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    /// Time (ns, the recording's clock).
    pub time: u64,
    /// Index into the file's events, when it names one.
    pub event: Option<u32>,
    /// What happened.
    pub kind: SideKind,
}

/// What an export is made of (see the module page).
#[derive(Debug, Clone, Default)]
pub struct Export {
    /// The file's events, in its order.
    pub events: Vec<ExportEvent>,
    /// The threads that have samples.
    pub threads: Vec<Thread>,
    /// Binary mappings.
    pub mappings: Vec<Mapping>,
    /// Locations.
    pub locations: Vec<Location>,
    /// Functions.
    pub functions: Vec<Function>,
    /// The stack tree.
    pub stacks: Vec<StackNode>,
    /// Samples, in the replay's order (time order per round).
    pub samples: Vec<Sample>,
    /// Group members' values: (member index in its event, value).
    pub extra: Vec<(u32, u64)>,
    /// Per event (index into the file's events), the members of its
    /// sample-read group as its samples read them, leader excluded
    /// (indices into the file's events); empty for other events.
    pub members: Vec<Vec<u32>>,
    /// Side-band records.
    pub markers: Vec<Marker>,
    /// What was recorded (the file's command line, else its name).
    pub product: String,
    /// Wall-clock time (ns since the epoch) of recording time 0, when known.
    pub epoch_offset: Option<i128>,
    /// First and last sample time.
    pub span: (u64, u64),
    /// Folded into wall-clock time ([`Export::to_wall_clock`]): the kept
    /// events, on and off the CPU, are one column.
    pub wall_clock: bool,
    /// The columns, when the export's maker names them (pmx-precise's
    /// memory samples: their count and weight) in place of the events'.
    pub named_columns: Option<Vec<Column>>,
    /// Each sample's labels beyond its thread's (an index of
    /// `label_sets`, by the sample's index; empty: none), as pmx-precise
    /// labels a memory sample's level and data object.
    pub sample_labels: Vec<u32>,
    /// The label sets: (key, text) pairs.
    pub label_sets: Vec<Vec<(String, String)>>,
}

/// Which format to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The Firefox Profiler's processed profile (JSON), gzip-compressed or not.
    Firefox {
        /// gzip-compress it.
        gzip: bool,
    },
    /// pprof's profile.proto, gzip-compressed (as pprof writes it).
    Pprof,
}

impl Format {
    /// The Firefox format, compressed when `path` ends in `.gz`.
    pub fn firefox_for(path: &Path) -> Format {
        Format::Firefox {
            gzip: path.extension().is_some_and(|e| e == "gz"),
        }
    }
}

/// The exports asked for, as (file, format): the Firefox Profiler's
/// (compressed when named `*.gz`) and pprof's.
pub fn targets(firefox: &Option<PathBuf>, pprof: &Option<PathBuf>) -> Vec<(PathBuf, Format)> {
    let firefox = firefox.iter().map(|p| (p.clone(), Format::firefox_for(p)));
    firefox
        .chain(pprof.iter().map(|p| (p.clone(), Format::Pprof)))
        .collect()
}

/// `pmx report` that also collects an [`Export`] of the events it
/// selects when `targets` asks for any (with source lines of user
/// locations for pprof); an empty one otherwise.
pub fn report(
    opts: &ReportOptions,
    targets: &[(PathBuf, Format)],
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<(Report, Export), ReportError> {
    if targets.is_empty() {
        return Ok((crate::report::report(opts, progress)?, Export::default()));
    }
    let lines = targets.iter().any(|t| t.1 == Format::Pprof);
    let mut c = collect::Collector::new(lines);
    let report = report_with(opts, progress, Some(&mut c))?;
    let mut x = c.into_export();
    x.describe(&report);
    Ok((report, x))
}

/// The pprof [`Export`] of a recording already open — a stream held in
/// memory, as `pmx serve`'s profiles are — shown as `file`: user
/// locations with their source lines, every event kept.
pub fn of_reader(
    reader: &mut pmx_perfdata::Reader,
    file: &str,
    opts: &ReportOptions,
) -> Result<(Report, Export), ReportError> {
    let mut c = collect::Collector::new(true);
    let report = report_reader(reader, file.to_string(), opts, &mut |_, _| {}, Some(&mut c))?;
    let mut x = c.into_export();
    x.describe(&report);
    // A stream's build ids come at its end, after the samples that
    // made the mappings: give each mapping its binary's.
    let ids = &report.profile.features.build_ids;
    for m in x.mappings.iter_mut().filter(|m| m.build_id.is_none()) {
        let kernel = m.kernel;
        m.build_id = (ids.iter())
            .find(|b| b.filename == m.path || (kernel && b.filename == "[kernel.kallsyms]"))
            .map(|b| b.build_id.clone());
    }
    Ok((report, x))
}

impl Export {
    /// Keep the samples of the threads `keep` accepts, and the threads
    /// that still have samples (pprof reads a thread's labels from its
    /// samples, so nothing else refers to them).
    pub fn retain_threads(&mut self, keep: impl Fn(&Thread) -> bool) {
        let kept: Vec<bool> = self.threads.iter().map(&keep).collect();
        self.samples.retain(|s| kept[s.thread as usize]);
    }

    /// Name the events after `report`'s, keep its selected ones only
    /// (their samples, their markers), and set what the file says of
    /// the recording.
    pub fn describe(&mut self, report: &Report) {
        let events = &report.profile.events;
        let selected = |i: usize| report.selected.contains(&i);
        // A member of a kept leader's group is one of the leader's
        // columns, not an event of its own (it has no samples of its own).
        let mut folded = vec![false; events.len()];
        for (leader, ms) in self.members.iter().enumerate() {
            if selected(leader) {
                for &m in ms {
                    if let Some(f) = folded.get_mut(m as usize) {
                        *f = m as usize != leader;
                    }
                }
            }
        }
        let mut column = 0;
        self.events = (events.iter().enumerate())
            .map(|(i, e)| {
                let kept = selected(i) && !folded[i];
                let base = e.name.split(':').next().unwrap_or("");
                let members = self.members.get(i).map(Vec::as_slice).unwrap_or(&[]);
                let ev = ExportEvent {
                    name: e.name.clone(),
                    kept,
                    clock: base == "cpu-clock" || base == "task-clock",
                    off_cpu: base == "offcpu-time",
                    members: (members.iter())
                        .map(|&m| events.get(m as usize).map_or("?", |e| &e.name).to_string())
                        .collect(),
                    column,
                };
                if kept {
                    column += 2 + ev.members.len();
                }
                ev
            })
            .collect();
        let kept = |e: u32| self.events.get(e as usize).is_some_and(|e| e.kept);
        self.samples.retain(|s| kept(s.event));
        self.markers.retain(|m| m.event.is_none_or(kept));
        let f = &report.profile.features;
        self.product = match &f.cmdline {
            Some(c) if !c.is_empty() => c.join(" "),
            _ => report.file.clone(),
        };
        let first = self.samples.iter().map(|s| s.time).min().unwrap_or(0);
        let last = self.samples.iter().map(|s| s.time).max().unwrap_or(0);
        self.epoch_offset = clock_data(f.raw.get(&pmx_perfdata::format::feature::CLOCK_DATA))
            .or_else(|| {
                // The file's time is the end of the recording.
                let end = i128::from(report.captured?) * 1_000_000_000;
                Some(end - i128::from(last))
            });
        self.span = (first, last);
    }

    /// The columns of weights: per kept event its sample count, the sum
    /// of its periods, its group members (named by the member event, in
    /// `count`). A name taken by an earlier column gets `_2`, `_3`, … (a
    /// `--profile-events` leader that is also the CPU profile's event), so
    /// pprof's `-sample_index=NAME` finds one.
    pub fn columns(&self) -> Vec<Column> {
        if let Some(c) = &self.named_columns {
            return c.clone();
        }
        let mut out: Vec<Column> = Vec::new();
        let mut taken: std::collections::HashMap<String, u32> = Default::default();
        let mut push = |name: String, unit: &str| {
            let n = taken.entry(name.clone()).or_insert(0);
            *n += 1;
            let name = match *n {
                1 => name,
                n => format!("{name}_{n}"),
            };
            out.push(Column {
                name,
                unit: unit.into(),
            });
        };
        if self.wall_clock {
            push("wall-clock_samples".into(), "count");
            push("wall-clock".into(), "nanoseconds");
            return out;
        }
        for e in self.events.iter().filter(|e| e.kept) {
            let name = without_group_read(&e.name);
            push(format!("{name}_samples"), "count");
            // offcpu-time's period is the nanoseconds a thread waited.
            let ns = e.clock || e.off_cpu;
            push(name, if ns { "nanoseconds" } else { "count" });
            for m in &e.members {
                push(without_group_read(m), "count");
            }
        }
        out
    }

    /// Add sample `s`'s weights to `values` (one per column).
    pub fn add_weights(&self, s: &Sample, values: &mut [i64]) {
        let Some(e) = self.events.get(s.event as usize) else {
            return;
        };
        values[e.column] += 1;
        values[e.column + 1] = values[e.column + 1].saturating_add(s.period as i64);
        let (start, len) = (s.extra.0 as usize, s.extra.1 as usize);
        for &(member, v) in self.extra.get(start..start + len).unwrap_or(&[]) {
            if let Some(c) = values.get_mut(e.column + 2 + member as usize) {
                *c = c.saturating_add(v as i64);
            }
        }
    }

    /// The locations of a stack, leaf first.
    pub fn stack_locations(&self, leaf: Option<u32>) -> impl Iterator<Item = u32> + '_ {
        let mut node = leaf;
        std::iter::from_fn(move || {
            let n = self.stacks[node? as usize];
            node = n.parent;
            Some(n.location)
        })
    }

    /// Write it in `format` to `out`.
    pub fn write(&self, format: Format, out: &mut dyn Write) -> std::io::Result<()> {
        match format {
            Format::Firefox { gzip: false } => firefox::write(self, out),
            Format::Firefox { gzip: true } => {
                let mut z = flate2::write::GzEncoder::new(out, flate2::Compression::default());
                firefox::write(self, &mut z)?;
                z.finish()?.flush()
            }
            Format::Pprof => {
                let mut z = flate2::write::GzEncoder::new(out, flate2::Compression::default());
                z.write_all(&pprof::encode(self))?;
                z.finish()?.flush()
            }
        }
    }
}

/// An event's name without the `S` modifier (`page-faults:S` →
/// `page-faults`, `cycles:uS` → `cycles:u`): how the group was sampled,
/// not what a column counts, and in the way of `-sample_index=NAME`.
fn without_group_read(name: &str) -> String {
    match name.rsplit_once(':') {
        Some((base, mods))
            if mods.contains('S') && mods.chars().all(|c| c.is_ascii_alphabetic()) =>
        {
            let mods: String = mods.chars().filter(|&c| c != 'S').collect();
            match mods.is_empty() {
                true => base.to_string(),
                false => format!("{base}:{mods}"),
            }
        }
        _ => name.to_string(),
    }
}

/// The wall-clock time of recording time 0 from perf's CLOCK_DATA
/// feature (version, clockid, wall-clock ns, the clock's ns at that moment).
fn clock_data(raw: Option<&Vec<u8>>) -> Option<i128> {
    let b = raw?.get(..24)?;
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    let (wall, clock) = (u64_at(8), u64_at(16));
    (wall != 0).then(|| i128::from(wall) - i128::from(clock))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_read_modifier_dropped_from_column_names() {
        assert_eq!(without_group_read("page-faults:S"), "page-faults");
        assert_eq!(without_group_read("cycles:uS"), "cycles:u");
        assert_eq!(without_group_read("cycles:u"), "cycles:u");
        assert_eq!(without_group_read("cpu/event=0x3c/"), "cpu/event=0x3c/");
        assert_eq!(without_group_read("a:b:S"), "a:b");
    }

    #[test]
    fn members_are_columns_and_repeated_names_are_numbered() {
        let ev = |name: &str, members: &[&str], column| ExportEvent {
            name: name.into(),
            kept: true,
            clock: name.starts_with("cpu-clock"),
            off_cpu: false,
            members: members.iter().map(|m| m.to_string()).collect(),
            column,
        };
        let mut x = Export {
            events: vec![
                ev("cpu-clock", &[], 0),
                ev("cpu-clock:S", &["page-faults:S"], 2),
            ],
            ..Export::default()
        };
        let names: Vec<String> = x.columns().into_iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [
                "cpu-clock_samples",
                "cpu-clock",
                "cpu-clock_samples_2",
                "cpu-clock_2",
                "page-faults"
            ]
        );
        // A sample of the group's leader: its period, then the member's
        // delta in the member's column; a member index out of range is
        // ignored, not a panic.
        x.extra = vec![(0, 7), (5, 1)];
        let s = Sample {
            time: 0,
            thread: 0,
            cpu: 0,
            event: 1,
            stack: None,
            period: 100,
            extra: (0, 2),
        };
        let mut values = vec![0i64; 5];
        x.add_weights(&s, &mut values);
        assert_eq!(values, [0, 0, 1, 100, 7]);
    }
}
