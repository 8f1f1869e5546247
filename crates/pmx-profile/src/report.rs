//! `pmx report` as a library call: [`report`] takes [`ReportOptions`]
//! (the file, the sort keys, the event, what to show) and returns a
//! [`Report`]: the [`Profile`] of the file, the events selected, the rows
//! to show of each, and what the header needs. The renderers are in
//! [`crate::render`] (table, JSON) and [`crate::flame`] (folded stacks,
//! flame graph SVG).

use crate::flame::{self, FlameOptions};
use crate::profile::sink::SampleSink;
use crate::profile::{build_with, KernelSymbols, MachineId, Options, Profile, Row, SortKey};
use crate::EventProfile;
use pmx_perfdata::Reader;
use pmx_symbols::SymbolOptions;
use std::path::{Path, PathBuf};

/// What to report on, and how.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// The perf.data file; `-` reads a pipe-mode stream from standard input.
    pub input: PathBuf,
    /// Row keys as given, comma-separated (`comm,dso,symbol`).
    pub sort: String,
    /// Only this event (its name as in the file, or without modifiers).
    pub event: Option<String>,
    /// Collect named call stacks (for folded stacks and flame graphs).
    pub stacks: bool,
    /// The stacks with each frame's binary, which perf's call-graph text
    /// ([`crate::perf_text`]'s graphs) is built from (without `stacks`,
    /// the named ones are not made).
    pub graphs: bool,
    /// Inclusive ("children") shares, and rows sorted by them.
    pub children: bool,
    /// Source file:line of each row's first sample.
    pub lines: bool,
    /// Functions inlined at each address of a call chain unwound from a
    /// stack copy (`--call-graph dwarf`; DWARF), as frames of their own
    /// (`NAME (inlined)`), as perf's `--inline` (perf 6.1 adds none to a
    /// frame-pointer chain); the function holding them is named by its
    /// DWARF name too where it is another than the symbol's.
    pub inline: bool,
    /// Look binaries up under this directory (perf's `--symfs`).
    pub symfs: Option<PathBuf>,
    /// Rows below this overhead (percent) are not shown.
    pub percent_limit: f64,
    /// At most this many rows per event are shown.
    pub limit: Option<usize>,
    /// Only the samples of these threads (perf report's `--tid`): their
    /// rows, children and stacks; the totals and shares stay the whole
    /// file's.
    pub tids: Option<Vec<u32>>,
    /// Demangling, directories and binary cache of the symbolizer.
    pub symbols: SymbolOptions,
    /// Stitch LBR call stacks across a thread's samples (perf's
    /// `--stitch-lbr`).
    pub stitch_lbr: bool,
}

/// The sort keys when none are given: perf report's (`comm,dso,symbol`),
/// or for a diff perf diff's (`dso,symbol`: a program renamed still pairs).
pub fn default_sort(diff: bool) -> &'static str {
    if diff {
        "dso,symbol"
    } else {
        "comm,dso,symbol"
    }
}

impl ReportOptions {
    /// `pmx report INPUT` with every option at its default: rows by
    /// `comm,dso,symbol`, every event, no stacks nor graphs, no children, no source
    /// lines, no inline frames, binaries where the file says, every row,
    /// every thread.
    /// Callers change the fields they need (`ReportOptions { sort: …,
    /// ..ReportOptions::for_input(path) }`).
    pub fn for_input(input: impl Into<PathBuf>) -> ReportOptions {
        ReportOptions {
            input: input.into(),
            sort: default_sort(false).to_string(),
            event: None,
            stacks: false,
            graphs: false,
            children: false,
            lines: false,
            inline: false,
            symfs: None,
            percent_limit: 0.0,
            limit: None,
            tids: None,
            symbols: SymbolOptions::default(),
            stitch_lbr: false,
        }
    }
}

/// Why there is no report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A sort key that is not one of comm, pid, dso, symbol, cpu.
    #[error("unknown key '{0}' (known: comm, pid, tid, dso, symbol, cpu)")]
    UnknownSortKey(String),
    /// No sort key at all.
    #[error("give at least one key (comm, pid, dso, symbol, cpu)")]
    NoSortKey,
    /// A percent limit outside 0..=100.
    #[error("{0}: give a percentage from 0 to 100")]
    PercentLimit(f64),
    /// The file does not exist.
    #[error("{0}: no such file (record one with `pmx record` or `perf record`, or give -i FILE)")]
    NotFound(String),
    /// The file could not be read.
    #[error("{file}: {source}")]
    Read {
        /// The file as shown.
        file: String,
        /// Why.
        source: pmx_perfdata::Error,
    },
    /// The event asked for is not in the file.
    #[error("{event}: not in {file} (its events: {})", known_list(.known))]
    UnknownEvent {
        /// The event asked for.
        event: String,
        /// The file as shown.
        file: String,
        /// The file's events.
        known: Vec<String>,
        /// The profile's warnings, found before the event was looked for.
        warnings: Vec<String>,
    },
    /// Folded stacks or a flame graph of events without samples.
    #[error("no samples to draw")]
    NoSamples,
    /// `--wall-clock` of a file without on- or off-CPU time (the file and
    /// what it lacks).
    #[error("--wall-clock: {0}")]
    NoWallClock(String),
    /// Two files compared (`--diff`) have no event in common.
    #[error("{base} and {new} have no event in common ({base}: {}; {new}: {})", known_list(.base_events), known_list(.new_events))]
    NoCommonEvent {
        /// The baseline as shown.
        base: String,
        /// The other file as shown.
        new: String,
        /// The baseline's events (those selected).
        base_events: Vec<String>,
        /// The other file's events (those selected).
        new_events: Vec<String>,
    },
}

impl ReportError {
    /// The message of a user's mistake (a flag's value), led by that
    /// flag (`--sort: …`); `None` for a failure (a file unreadable…).
    pub fn bad_input(&self) -> Option<String> {
        match self {
            ReportError::UnknownSortKey(_) | ReportError::NoSortKey => {
                Some(format!("--sort: {self}"))
            }
            ReportError::PercentLimit(_) => Some(format!("--percent-limit {self}")),
            ReportError::UnknownEvent { .. } => Some(format!("--event {self}")),
            _ => None,
        }
    }
}

fn known_list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// A report: the profile, the events selected and what the renderers need.
#[derive(Debug, Clone)]
pub struct Report {
    /// The profile of the whole file.
    pub profile: Profile,
    /// The events to show (indices into `profile.events`).
    pub selected: Vec<usize>,
    /// The file as shown: its path, or `standard input`.
    pub file: String,
    /// The file's modification time (seconds since the epoch), for a file.
    pub captured: Option<u64>,
    /// The row keys, parsed.
    pub sort: Vec<SortKey>,
    /// The shown keys a filter holds to one value (`--comms sf`), with
    /// that value: perf prints `# comm: sf` above the table instead of
    /// the column (set by `perf_text::Filter::apply`).
    pub one_value: Vec<(SortKey, String)>,
    /// The options it was made with.
    pub options: ReportOptions,
}

/// The event folded stacks and flame graphs are drawn for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackEvent {
    /// Index into `profile.events`.
    pub index: usize,
    /// Other selected events have samples too (the user may want `--event`).
    pub of_several: bool,
}

/// Parse comma-separated sort keys (duplicates dropped).
pub fn sort_keys(s: &str) -> Result<Vec<SortKey>, ReportError> {
    let mut keys = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let k = SortKey::parse(part)
            .ok_or_else(|| ReportError::UnknownSortKey(part.trim().to_string()))?;
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    if keys.is_empty() {
        return Err(ReportError::NoSortKey);
    }
    Ok(keys)
}

/// Read `opts.input` and build its report; `progress` is called now and
/// then with (bytes read, total bytes when known).
pub fn report(
    opts: &ReportOptions,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<Report, ReportError> {
    report_with(opts, progress, None)
}

/// [`report`], also giving every sample to `sink` (the exporters').
pub fn report_with(
    opts: &ReportOptions,
    progress: &mut dyn FnMut(u64, Option<u64>),
    sink: Option<&mut dyn SampleSink>,
) -> Result<Report, ReportError> {
    sort_keys(&opts.sort)?;
    if !(0.0..=100.0).contains(&opts.percent_limit) {
        return Err(ReportError::PercentLimit(opts.percent_limit));
    }
    let stdin = opts.input.as_os_str() == "-";
    let path: &Path = if stdin {
        Path::new("/dev/stdin")
    } else {
        &opts.input
    };
    let file = if stdin {
        "standard input".to_string()
    } else {
        opts.input.display().to_string()
    };
    let mut reader = match Reader::open(path) {
        Ok(r) => r,
        Err(pmx_perfdata::Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ReportError::NotFound(file))
        }
        Err(source) => return Err(ReportError::Read { file, source }),
    };
    let mut report = report_reader(&mut reader, file, opts, progress, sink)?;
    report.captured = (!report.profile.pipe && !stdin)
        .then(|| modified(&opts.input))
        .flatten();
    Ok(report)
}

/// [`report_with`] over a reader already open (a stream held in memory,
/// as `pmx serve`'s profiles are), shown as `file`; `captured` unset.
pub fn report_reader(
    reader: &mut Reader,
    file: String,
    opts: &ReportOptions,
    progress: &mut dyn FnMut(u64, Option<u64>),
    sink: Option<&mut dyn SampleSink>,
) -> Result<Report, ReportError> {
    let sort = sort_keys(&opts.sort)?;
    let options = Options {
        sort: sort.clone(),
        stacks: opts.stacks,
        binary_stacks: opts.graphs,
        lines: opts.lines,
        inline: opts.inline,
        children: opts.children,
        kallsyms: KernelSymbols::Load,
        this_machine: MachineId::current(),
        root: opts.symfs.clone(),
        tids: opts.tids.clone(),
        symbols: opts.symbols.clone(),
        jobs: 0,
        stitch_lbr: opts.stitch_lbr,
    };
    let sink = sink.map(|s| s as &mut dyn SampleSink);
    let profile = match build_with(reader, &options, progress, sink) {
        Ok(p) => p,
        Err(source) => return Err(ReportError::Read { file, source }),
    };
    let selected = select(&profile, opts.event.as_deref(), &file)?;
    Ok(Report {
        profile,
        selected,
        file,
        captured: None,
        sort,
        one_value: Vec::new(),
        options: opts.clone(),
    })
}

/// The events of `p` named `event` (with or without modifiers), or all.
fn select(p: &Profile, event: Option<&str>, file: &str) -> Result<Vec<usize>, ReportError> {
    let Some(name) = event else {
        return Ok((0..p.events.len()).collect());
    };
    let found: Vec<usize> = p
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.name == name || e.name.split(':').next() == Some(name))
        .map(|(i, _)| i)
        .collect();
    if found.is_empty() {
        return Err(ReportError::UnknownEvent {
            event: name.to_string(),
            file: file.to_string(),
            known: p.events.iter().map(|e| e.name.clone()).collect(),
            warnings: p.warnings.clone(),
        });
    }
    Ok(found)
}

/// A file's modification time in seconds since the epoch.
fn modified(path: &Path) -> Option<u64> {
    let t = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
    Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs())
}

/// `part` as a percentage of `total` (0 when the total is).
pub fn pct(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 * 100.0 / total as f64
    }
}

impl Report {
    /// The rows of `e` to show: over the percent limit (of the self or,
    /// with children, the inclusive share), at most the row limit.
    pub fn visible<'a>(&self, e: &'a EventProfile) -> impl Iterator<Item = &'a Row> {
        let total = e.period;
        let limit = self.options.percent_limit;
        let children = self.options.children;
        e.rows
            .iter()
            .filter(move |r| {
                pct(
                    if children {
                        r.children_period
                    } else {
                        r.period
                    },
                    total,
                ) >= limit
            })
            .take(self.options.limit.unwrap_or(usize::MAX))
    }

    /// The note to show when other events than `s`'s have samples too.
    pub fn stack_note(&self, s: &StackEvent) -> Option<String> {
        s.of_several.then(|| {
            format!(
                "several events have samples; stacks are of '{}' (choose with --event)",
                self.profile.events[s.index].name
            )
        })
    }

    /// The event to draw stacks of: the only selected one with samples,
    /// else the first with samples.
    pub fn stack_event(&self) -> Result<StackEvent, ReportError> {
        let with: Vec<usize> = self
            .selected
            .iter()
            .copied()
            .filter(|&i| self.profile.events[i].samples > 0)
            .collect();
        match with.as_slice() {
            [] => Err(ReportError::NoSamples),
            [one] => Ok(StackEvent {
                index: *one,
                of_several: false,
            }),
            [first, ..] => Ok(StackEvent {
                index: *first,
                of_several: true,
            }),
        }
    }

    /// What to say of the flame graph of event `index` written to `path`.
    pub fn flame_note(&self, index: usize, path: &std::path::Path) -> String {
        let name = &self.profile.events[index].name;
        format!("flame graph of '{name}' written to {}", path.display())
    }

    /// The flame graph SVG of event `index`, titled with the file's name,
    /// the event and its samples.
    /// An `offcpu-time` event is drawn in nanoseconds waited.
    pub fn flame_svg(&self, index: usize) -> String {
        let e = &self.profile.events[index];
        let name = self.file.rsplit('/').next().unwrap_or(&self.file);
        if let Some(stacks) = self.off_cpu_stacks(index) {
            let ms = e.period as f64 / 1e6;
            let title = format!("{name} — {} ({ms:.1} ms off the CPU)", e.name);
            let unit = "ns".into();
            return flame::svg(
                &stacks,
                &FlameOptions {
                    title,
                    unit,
                    ..FlameOptions::default()
                },
            );
        }
        let title = format!("{name} — {} ({} samples)", e.name, e.samples);
        flame::svg(
            &e.stacks,
            &FlameOptions {
                title,
                ..FlameOptions::default()
            },
        )
    }

    /// The stacks of event `index` weighed by their periods when it is
    /// `offcpu-time` (nanoseconds waited: one sample per wait says little).
    fn off_cpu_stacks(&self, index: usize) -> Option<Vec<(Vec<String>, u64, u64)>> {
        let e = &self.profile.events[index];
        (e.name.split(':').next() == Some("offcpu-time")).then(|| {
            (e.stacks.iter())
                .map(|(f, _, p)| (f.clone(), *p, *p))
                .collect()
        })
    }

    /// The names of the file's events, in order.
    pub fn event_names(&self) -> Vec<String> {
        self.profile.events.iter().map(|e| e.name.clone()).collect()
    }

    /// The folded stacks of event `index` (of `offcpu-time`, in
    /// nanoseconds waited).
    pub fn folded(&self, index: usize) -> String {
        match self.off_cpu_stacks(index) {
            Some(stacks) => flame::folded(&stacks),
            None => flame::folded(&self.profile.events[index].stacks),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(input: &str) -> ReportOptions {
        ReportOptions::for_input(input)
    }

    #[test]
    fn sort_keys_parse_and_refuse() {
        assert_eq!(
            sort_keys("comm, sym,comm").unwrap(),
            vec![SortKey::Comm, SortKey::Symbol]
        );
        assert!(matches!(sort_keys(" , "), Err(ReportError::NoSortKey)));
        assert_eq!(
            sort_keys("dso,foo").unwrap_err().to_string(),
            "unknown key 'foo' (known: comm, pid, tid, dso, symbol, cpu)"
        );
    }

    #[test]
    fn options_are_checked_before_the_file_is_read() {
        let mut o = options("/nonexistent/perf.data");
        assert!(matches!(
            report(&o, &mut |_, _| {}),
            Err(ReportError::NotFound(_))
        ));
        o.percent_limit = 101.0;
        assert!(matches!(
            report(&o, &mut |_, _| {}),
            Err(ReportError::PercentLimit(_))
        ));
    }

    #[test]
    fn rows_shown_follow_the_limits() {
        let row = |period| Row {
            comm: None,
            pid: None,
            dso: None,
            symbol: None,
            binary: None,
            kernel: false,
            cpu: None,
            thread: None,
            samples: 1,
            period,
            children_samples: 0,
            children_period: 0,
            example: (0, 0),
            source: None,
        };
        let e = EventProfile {
            name: "cpu-clock".into(),
            samples: 3,
            period: 100,
            rows: vec![row(60), row(30), row(10)],
            ..EventProfile::default()
        };
        let mut o = options("x");
        o.percent_limit = 20.0;
        let r = Report {
            profile: Profile {
                events: vec![e.clone(), EventProfile::default()],
                ..Profile::default()
            },
            selected: vec![0, 1],
            file: "x".into(),
            captured: None,
            sort: vec![SortKey::Comm],
            one_value: Vec::new(),
            options: o,
        };
        assert_eq!(r.visible(&e).count(), 2);
        assert_eq!(
            r.stack_event().unwrap(),
            StackEvent {
                index: 0,
                of_several: false
            }
        );
        assert_eq!(pct(1, 0), 0.0);
    }
}
