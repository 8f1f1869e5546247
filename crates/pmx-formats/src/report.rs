//! [`StatReport`]: a counting result as a file holds it.
//!
//! Rows are kept as the file states them — the event as named there, the
//! domain as its label, the value as written (scaled, in the event's
//! unit), the status and its reason, the raw count and times where the
//! form has them — so that a reader can be checked against the writer
//! that made the file (every form pmx writes reads back to the report it
//! was written from). What a consumer does with the values (sum domains,
//! rescale clocks, merge ranks) is the consumer's business.

use crate::model::{Domain, Exit, RunCount, RunMetric, Spread};
use std::path::PathBuf;

/// Which program wrote a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tool {
    /// pmx.
    #[default]
    Pmx,
    /// perf.
    Perf,
}

/// Which program and form wrote a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFormat {
    /// `pmx stat -x SEP`.
    PmxCsv,
    /// `pmx stat -I MS -x SEP`.
    PmxCsvIntervals,
    /// `pmx stat --json`.
    PmxJson,
    /// `pmx stat -I MS --json` (JSON lines).
    PmxJsonIntervals,
    /// `perf stat -x SEP`.
    PerfCsv,
    /// `perf stat -I MS -x SEP`.
    PerfCsvIntervals,
    /// `perf stat -j`.
    PerfJson,
    /// `perf stat -I MS -j`.
    PerfJsonIntervals,
    /// perf stat's default text table.
    PerfText,
    /// perf stat's text table with `-I` time stamps.
    PerfTextIntervals,
}

impl SourceFormat {
    /// How messages name it (`pmx stat CSV (intervals)`).
    pub fn describe(self) -> &'static str {
        match self {
            SourceFormat::PmxCsv => "pmx stat CSV",
            SourceFormat::PmxCsvIntervals => "pmx stat CSV (intervals)",
            SourceFormat::PmxJson => "pmx stat JSON",
            SourceFormat::PmxJsonIntervals => "pmx stat JSON (intervals)",
            SourceFormat::PerfCsv => "perf stat CSV",
            SourceFormat::PerfCsvIntervals => "perf stat CSV (intervals)",
            SourceFormat::PerfJson => "perf stat JSON",
            SourceFormat::PerfJsonIntervals => "perf stat JSON (intervals)",
            SourceFormat::PerfText => "perf stat text",
            SourceFormat::PerfTextIntervals => "perf stat text (intervals)",
        }
    }

    /// The program that writes this form.
    pub fn tool(self) -> Tool {
        match self {
            SourceFormat::PmxCsv
            | SourceFormat::PmxCsvIntervals
            | SourceFormat::PmxJson
            | SourceFormat::PmxJsonIntervals => Tool::Pmx,
            _ => Tool::Perf,
        }
    }
}

/// Where a report came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Provenance {
    /// The form it was read from (the last line's, for a file that mixes
    /// forms); `None` for a report built in memory.
    pub format: Option<SourceFormat>,
    /// The file it was read from.
    pub path: Option<PathBuf>,
    /// What was measured (`'sleep 1'`, `system wide`), where the form says.
    pub command: Option<String>,
    /// The CPU the counts were taken on (`GenuineIntel-6-5E-3`), from a
    /// `# cpu:` comment, the document's `cpu` or perf's `cpu_id`.
    pub cpu: Option<String>,
    /// The host that wrote it (per-rank files).
    pub host: Option<String>,
    /// The MPI rank that wrote it (per-rank files).
    pub rank: Option<u64>,
    /// Where a text file stops inside a line: its last line has no end of
    /// line, as no writer leaves it (perf and pmx end every line), so the
    /// file may be cut short. Readers keep what they read and say it.
    pub cut: Option<Cut>,
}

/// Where a file's text stops inside a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// The 1-based number of the unfinished last line.
    pub line: usize,
    /// The file's size in bytes (where it stops).
    pub byte: usize,
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ends inside line {} (at byte {}) with no end of line, so it may be cut short",
            self.line, self.byte
        )
    }
}

/// The status of a row as files spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowStatus {
    /// Counted the whole time or scaled from a large share.
    Counted,
    /// Scaled from a partial count (ran less than 70% of the time).
    Estimate,
    /// Opened but never ran.
    NotCounted,
    /// Could not be opened.
    NotSupported,
}

impl RowStatus {
    /// pmx's word for it (the `status` column).
    pub fn word(self) -> &'static str {
        match self {
            RowStatus::Counted => "counted",
            RowStatus::Estimate => "estimate",
            RowStatus::NotCounted => "not-counted",
            RowStatus::NotSupported => "not-supported",
        }
    }

    /// The status a word names; `None` for other words (metric lines).
    pub fn from_word(w: &str) -> Option<RowStatus> {
        Some(match w {
            "counted" => RowStatus::Counted,
            "estimate" => RowStatus::Estimate,
            "not-counted" => RowStatus::NotCounted,
            "not-supported" => RowStatus::NotSupported,
            _ => return None,
        })
    }
}

/// One event in one domain (over one interval, or the whole run).
#[derive(Debug, Clone, PartialEq)]
pub struct ReportRow {
    /// End of the interval in seconds; `None` for totals.
    pub time: Option<f64>,
    /// The domain's label: empty for totals, `CPU3`, `S0-C1`, `S0`,
    /// `tid 12`, or what perf wrote.
    pub domain: String,
    /// The event as named in the file.
    pub event: String,
    /// The value as written (scaled, in the event's unit); `None` when not
    /// counted.
    pub value: Option<f64>,
    /// The unit (`msec`), empty for plain counts.
    pub unit: String,
    /// Counted, estimate, not counted, not supported.
    pub status: RowStatus,
    /// Why not counted or supported; empty when it was.
    pub reason: String,
    /// The raw count (pmx's forms).
    pub raw: Option<u64>,
    /// Time enabled in ns (pmx's forms).
    pub enabled_ns: Option<u64>,
    /// Time running in ns (pmx's forms).
    pub running_ns: Option<u64>,
    /// Share of the enabled time it ran, in %.
    pub running_pct: Option<f64>,
    /// perf's run time of the counter in ns (perf's forms).
    pub runtime_ns: Option<f64>,
    /// Over repeats (`-r`): relative standard deviation in %.
    pub stddev_pct: Option<f64>,
    /// Over repeats: runs, mean, standard deviation (pmx's JSON).
    pub spread: Option<Spread>,
    /// How many counters were summed (pmx's JSON).
    pub counters: Option<usize>,
    /// The event's group (pmx's JSON).
    pub group: Option<usize>,
    /// The program whose form this row was read from.
    pub origin: Tool,
    /// Over repeats: every run's values, in run order (pmx's JSON from
    /// `-r N`); empty otherwise.
    pub repeats: Vec<RunCount>,
}

impl ReportRow {
    /// A row of `event` in `domain` with nothing else known.
    pub fn new(event: &str, domain: &str) -> ReportRow {
        ReportRow {
            time: None,
            domain: domain.to_string(),
            event: event.to_string(),
            value: None,
            unit: String::new(),
            status: RowStatus::Counted,
            reason: String::new(),
            raw: None,
            enabled_ns: None,
            running_ns: None,
            running_pct: None,
            runtime_ns: None,
            stddev_pct: None,
            spread: None,
            counters: None,
            group: None,
            origin: Tool::Pmx,
            repeats: Vec::new(),
        }
    }

    /// The domain, when the label is one pmx writes.
    pub fn domain(&self) -> Option<Domain> {
        Domain::parse_label(&self.domain)
    }
}

/// One derived metric in one domain (over one interval, or the run).
#[derive(Debug, Clone, PartialEq)]
pub struct ReportMetric {
    /// End of the interval in seconds; `None` for totals.
    pub time: Option<f64>,
    /// The metric's name.
    pub name: String,
    /// Domain label (empty for totals).
    pub domain: String,
    /// The value; `None` when an input is missing.
    pub value: Option<f64>,
    /// Unit (`%`, `GHz`), may be empty.
    pub unit: String,
    /// Smallest running share among the inputs.
    pub reliability: Option<f64>,
    /// Reliability below 0.7.
    pub estimate: bool,
    /// Why there is no value.
    pub missing: Option<String>,
    /// Over repeats: every run's value, in run order (pmx's JSON from
    /// `-r N -M`); empty otherwise.
    pub repeats: Vec<RunMetric>,
}

/// A metric perf printed beside a count (`# 0.89 insn per cycle`), on a
/// line of its own (`#  17.3 %  tma_frontend_bound`), in `-x` CSV's metric
/// columns or `-j`'s `metric-value`/`metric-unit`, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct PrintedMetric {
    /// End of the interval in seconds; `None` for totals.
    pub time: Option<f64>,
    /// Domain label as perf wrote it (empty for totals).
    pub domain: String,
    /// The event of the row it was printed beside (for a metric on a line
    /// of its own, the row before it); perf's group header
    /// (`TopdownL1 (cpu_core)`) when it stands on one; empty when none.
    pub event: String,
    /// The value; `None` when perf left it empty.
    pub value: Option<f64>,
    /// perf's unit text, whitespace collapsed, a `%` written after the
    /// value moved in front: `insn per cycle`, `GHz`, `% of all branches`,
    /// `% tma_frontend_bound`, `M/sec`.
    pub unit: String,
    /// Decimals perf printed (the value's precision).
    pub decimals: usize,
    /// The index in [`StatReport::rows`] of the row it was printed beside.
    pub row: Option<usize>,
    /// How perf rated the value against the metric's threshold (perf
    /// 6.13's `-x` column after the unit: `good`, `less good`, `nearly
    /// bad`, `bad`, `unknown`); `None` when the file has no such column.
    pub threshold: Option<String>,
}

/// A counting result: rows, metric lines, what produced it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatReport {
    /// Which tool and form, file, command, CPU, host and rank.
    pub provenance: Provenance,
    /// Runs made (`-r`), where the form says.
    pub runs: Option<usize>,
    /// Wall-clock seconds, where the form says.
    pub elapsed_s: Option<f64>,
    /// How the command ended, where the form says.
    pub exit: Option<Exit>,
    /// Cut short by Ctrl-C, where the form says.
    pub interrupted: Option<bool>,
    /// Notes for the reader.
    pub notes: Vec<String>,
    /// The rows, in file order.
    pub rows: Vec<ReportRow>,
    /// The metric lines, in file order.
    pub metrics: Vec<ReportMetric>,
    /// The metrics perf printed (perf's forms), in file order.
    pub printed: Vec<PrintedMetric>,
    /// Seconds of user and system CPU time, where perf's text says.
    pub user_sys_s: Option<(f64, f64)>,
}

impl StatReport {
    /// Rows of more than one interval time stamp.
    pub fn is_interval(&self) -> bool {
        self.rows.iter().any(|r| r.time.is_some())
    }
}
