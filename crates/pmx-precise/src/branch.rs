//! Branch reports: `pmx report -b` (perf report's `--branch-stack`).
//!
//! Files recorded with `-b`/`-j` (Intel LBR, AMD BRS, Arm BRBE, or
//! synthesized from a trace by `perf inject --itrace`) hold at each
//! sample the last taken branches ([`pmx_perfdata::branch`]). A branch
//! report counts those **branches**, not the samples: every entry of
//! every branch stack is one unit of weight (perf's "pseudo period of
//! 1"), so a row's Overhead is its share of all the branches recorded.
//!
//! Each entry's two ends are looked up as perf does: in the sample's
//! process maps first (a user binary, level `[.]`), else as a kernel
//! address (`[k]`, from `0xffff800000000000` up), else nowhere: `[H]`
//! and `[unknown]`, as perf 6.1 prints an address no map covers after it
//! has tried the guest modes it does not have. Rows are grouped and
//! ordered by the [`BranchKey`]s (perf's `--sort`: default
//! `comm,dso_from,symbol_from,symbol_to,cycles`), ties broken as perf's
//! comparators break them; [`table`] prints perf's `--stdio` layout.
//!
//! The replay hands each sample's entries to a [`SampleSink`]
//! ([`pmx_profile::profile::sink::SampleRef::branches`]), so the maps and
//! command names are those of the sample's moment; kernel names wait for
//! the end of the replay, as everywhere in this crate. The table's sink
//! reads the samples alone: the replay neither keeps nor resolves their
//! call chains, and builds no ordinary rows beside it.
//!
//! [`blocks`] tables the basic blocks by the LBR's cycles (`report
//! --total-cycles`); [`history`] adds each sample's branches to its call
//! graph (`report --branch-history`). [`bolt`] and [`autofdo`] read the same branch stacks for the
//! optimizers: BOLT's fdata (`pmx report --bolt`) and llvm-profgen's
//! range and branch counts (`pmx report --autofdo`).

pub mod autofdo;
pub mod blocks;
pub mod bolt;
mod collect;
pub mod history;
mod keys;
mod order;
mod rbtree;
pub mod table;

pub use keys::{BranchKey, DEFAULT_KEYS};

use pmx_profile::perf_text::Graph;
use pmx_profile::profile::sink::SampleSink;
use pmx_profile::report::{report_with, Report, ReportError, ReportOptions};
use std::sync::Arc;

/// One end of a branch as a row shows it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct End {
    /// perf's level mark: `.` (user), `k` (kernel), `H` (no map).
    pub level: char,
    /// The binary's short name; `None` when no map covers the address.
    pub dso: Option<Arc<str>>,
    /// The function's name, when a symbol covers the address.
    pub symbol: Option<Arc<str>>,
    /// The function's start (for perf's order of rows), when a symbol covers it.
    pub start: u64,
    /// The address's offset in that function.
    pub offset: u64,
    /// The address as perf shows it (map-relative for user binaries).
    pub shown: u64,
    /// The address itself.
    pub addr: u64,
}

/// A row of a branch table: the values of its keys and its branches.
/// Rows share their ends (indices of [`BranchReport::ends`]) and names
/// (a table may have millions of rows): what no key shows (an end no
/// key names, an address) may be left blank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchRow {
    /// The command (with the `comm` key).
    pub comm: Option<Arc<str>>,
    /// The branch's source (its index in the report's ends).
    pub from: u32,
    /// Its target (its index in the report's ends).
    pub to: u32,
    /// The level of the sample the row's first branch came with (the
    /// `addr_from`/`addr_to` columns' mark, as perf).
    pub sample_level: char,
    /// Mispredicted (perf's `Y`).
    pub mispred: bool,
    /// Predicted (perf's `N`; neither: `N/A`).
    pub predicted: bool,
    /// In a transaction.
    pub in_tx: bool,
    /// A transaction abort.
    pub abort: bool,
    /// Cycles since the previous branch (0: not recorded).
    pub cycles: u16,
    /// The branch type (`PERF_BR_*`).
    pub kind: u8,
    /// Branches in the row.
    pub count: u64,
}

/// One event's branch table.
#[derive(Debug, Clone, Default)]
pub struct BranchEvent {
    /// The event's name.
    pub name: String,
    /// All its branches (the table's 100%).
    pub branches: u64,
    /// Rows, in perf's order.
    pub rows: Vec<BranchRow>,
}

/// A branch report: the file's ordinary report (header, lost samples,
/// events; no rows: the samples are the branch table's alone, see
/// [`SampleSink::alone`]) and each selected event's branch table.
#[derive(Debug)]
pub struct BranchReport {
    /// The ordinary report of the same file, without its rows.
    pub report: Report,
    /// The keys the rows are grouped by.
    pub keys: Vec<BranchKey>,
    /// The distinct ends the rows of every event share.
    pub ends: Vec<End>,
    /// The tables of the selected events with branch stacks.
    pub events: Vec<BranchEvent>,
}

/// Why there is no branch report.
#[derive(Debug, thiserror::Error)]
pub enum BranchError {
    /// The file could not be reported.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// A `--sort` key of no branch report.
    #[error("{0}")]
    Key(String),
    /// Writing the output failed.
    #[error("writing the output: {0}")]
    Output(std::io::Error),
    /// No selected event records branch stacks.
    #[error("{0}: no event samples branch stacks (record with -b or -j; its events: {1})")]
    NoBranches(String, String),
    /// BOLT's profile could not be made (the binary …).
    #[error("{0}")]
    Bolt(String),
}

/// Whether perf report reads `path` in branch mode unless told not to
/// (`--no-branch-stack`): its header has the BRANCH_STACK feature (perf
/// record's `-b`/`-j` set it; `--call-graph lbr` does not) and no event
/// samples user stacks (perf 6.1's rule), and `sort` (`--sort`) names
/// branch keys only. A pipe or a file that cannot be read: no (the
/// report then says why).
pub fn by_default(path: &std::path::Path, sort: Option<&str>) -> bool {
    use pmx_perfdata::format::{feature, sample_type};
    if path.as_os_str() == "-" || sort.is_some_and(|s| keys::parse(s).is_err()) {
        return false;
    }
    let Ok(reader) = pmx_perfdata::Reader::open(path) else {
        return false;
    };
    let stacks =
        (reader.events().iter()).any(|e| e.attr.sample_type & sample_type::STACK_USER != 0);
    reader.features().present.contains(&feature::BRANCH_STACK) && !stacks
}

/// Read `opts.input` and count its branches by `keys` (perf's names,
/// comma-separated; empty: perf's default).
pub fn report(
    opts: &ReportOptions,
    keys: &str,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<BranchReport, BranchError> {
    let keys = keys::parse(keys).map_err(BranchError::Key)?;
    let mut sink = collect::Collect::new(&keys);
    let report = report_with(opts, progress, Some(&mut sink as &mut dyn SampleSink))?;
    let mut events = Vec::new();
    for &i in &report.selected {
        let name = report.profile.events[i].name.clone();
        if let Some(e) = sink.event(i, name) {
            events.push(e);
        }
    }
    if events.is_empty() {
        let names: Vec<String> = (report.selected.iter())
            .map(|&i| report.profile.events[i].name.clone())
            .collect();
        return Err(BranchError::NoBranches(
            report.file.clone(),
            names.join(", "),
        ));
    }
    Ok(BranchReport {
        report,
        keys,
        ends: sink.take_ends(),
        events,
    })
}

/// What `report -b` prints: the branch table, the table of basic
/// blocks (`--total-cycles`), or the samples with their branch history
/// (`--branch-history`).
pub enum Tables {
    /// The branches by the keys.
    Branches(BranchReport),
    /// The blocks by their cycles.
    Blocks(blocks::BlockReport),
    /// The samples, their branches in the call graph drawn as the graph says.
    History(history::HistoryReport, Graph),
}

/// Which of the [`Tables`] to make.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Table {
    /// The branch table.
    Branches,
    /// The blocks (`--total-cycles`).
    Blocks,
    /// The branch history, in this graph (`--branch-history`), with
    /// children where the file has call chains (`true`: not
    /// `--no-children`).
    History(Graph, bool),
}

impl Table {
    /// The table `--total-cycles` (`blocks`) and `--branch-history`
    /// (`history`: its graph) ask for; `children`: not `--no-children`,
    /// which makes perf's default order `caller` even where the file has
    /// no call chains (and so no children).
    pub fn of(blocks: bool, history: Option<Graph>, children: bool) -> Table {
        match (history, blocks) {
            (Some(g), _) => Table::History(
                Graph {
                    caller: g.caller.or(Some(children)),
                    ..g
                },
                children,
            ),
            (None, true) => Table::Blocks,
            (None, false) => Table::Branches,
        }
    }
}

impl Tables {
    /// The report's warnings (binaries without symbols …).
    pub fn warnings(&self) -> &[String] {
        match self {
            Tables::Branches(r) => &r.report.profile.warnings,
            Tables::Blocks(r) => &r.report.profile.warnings,
            Tables::History(r, _) => r.warnings(),
        }
    }

    /// The tables to `out` in perf's layout, or as JSON; flushed.
    pub fn write(&self, out: &mut dyn std::io::Write, json: bool) -> std::io::Result<()> {
        match self {
            Tables::Branches(r) => table::write(out, r, json),
            Tables::Blocks(r) => blocks::write(out, r, json),
            Tables::History(r, _) if json => r.write_json(out),
            Tables::History(r, g) => r.write(out, g),
        }
    }
}

/// The [`Table`] asked for: [`report`] by `keys`, [`blocks::report`]
/// or [`history::report`].
pub fn tables(
    opts: &ReportOptions,
    keys: &str,
    table: Table,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<Tables, BranchError> {
    match table {
        Table::Blocks => blocks::report(opts, progress).map(Tables::Blocks),
        Table::Branches => report(opts, keys, progress).map(Tables::Branches),
        Table::History(g, children) => {
            let r = history::report(opts, (g.caller == Some(true), children), progress)?;
            Ok(Tables::History(r, g))
        }
    }
}

/// `report --bolt OUT` (BOLT's fdata, `to.0`) or `--autofdo OUT`
/// (AutoFDO's range and branch counts, `to.1`) of `opts.input`, written
/// whole; the note that says what was written (`None`: neither asked).
pub fn optimize(
    opts: &ReportOptions,
    bolt: &bolt::BoltOptions,
    to: (Option<&std::path::Path>, Option<&std::path::Path>),
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<Option<String>, BranchError> {
    let (r, out) = match to {
        (Some(out), _) => (bolt::fdata(opts, bolt, progress)?, out),
        (None, Some(out)) => (
            autofdo::profile(opts, bolt.binary.as_deref(), progress)?,
            out,
        ),
        (None, None) => return Ok(None),
    };
    pmx_io::write(out, r.text.as_bytes()).map_err(BranchError::Output)?;
    let what = (r.binary.display(), out.display(), r.records);
    Ok(Some(format!(
        "{}: {} written ({} records)",
        what.0, what.1, what.2
    )))
}
