//! Differential profiles (`pmx report --diff BASE NEW`): both files go
//! through [`report()`](crate::report()) (the same reading, symbolizing
//! and aggregating as `pmx report`), then [`compare`] pairs them.
//!
//! - **Events** are matched by name (exactly, else without modifiers:
//!   `cycles:u` and `cycles`); events of one file only are listed in
//!   [`DiffReport::only_base`] / [`DiffReport::only_new`].
//! - **Rows** are matched by the `--sort` keys' values: command, pid, DSO
//!   (its base name, so two builds of a program at different paths pair)
//!   and symbol **name**, never by address: the rows of unresolved
//!   addresses (`0x…`) of a DSO are summed into one `[unknown]` row of
//!   that DSO (its unresolved code as a whole), since one address in two
//!   builds is not one function. Each side's share is its period (or, with `--children`, its
//!   inclusive period) over its own file's total for the event, so files
//!   of different lengths compare; the change is in percentage points.
//! - **Order**: by the size of the change ([`Compute::DeltaAbs`], perf
//!   diff's default), by the signed change ([`Compute::Delta`]) or by
//!   perf's ratio of periods ([`Compute::Ratio`]; a new row counts as an
//!   infinite ratio, a gone one as 0). Unlike perf diff, rows of BASE only
//!   get their change (−their share) and are ordered with the others.
//! - **Stacks** (for [`crate::flame::diff`]): matched by frame names, an
//!   unresolved address becoming `[unknown]` on both sides.

use crate::flame::diff::{self as flame_diff, DiffStacks};
use crate::profile::{EventProfile, Row, SortKey};
use crate::report::{pct, report, Report, ReportError, ReportOptions};
use pmx_symbols::symbolize::is_address;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How rows are compared and ordered (perf diff's `--compute`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compute {
    /// NEW share − BASE share, ordered by its size (perf's `delta-abs`).
    #[default]
    DeltaAbs,
    /// NEW share − BASE share, ordered from the largest growth down.
    Delta,
    /// NEW period / BASE period, as perf's `ratio` (not normalized).
    Ratio,
}

impl Compute {
    /// The name as `--compute` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Compute::DeltaAbs => "delta-abs",
            Compute::Delta => "delta",
            Compute::Ratio => "ratio",
        }
    }
}

impl std::str::FromStr for Compute {
    type Err = String;
    fn from_str(s: &str) -> Result<Compute, String> {
        match s.trim() {
            "delta-abs" => Ok(Compute::DeltaAbs),
            "delta" => Ok(Compute::Delta),
            "ratio" => Ok(Compute::Ratio),
            other => Err(format!(
                "'{other}' is not a computation (known: delta-abs, delta, ratio)"
            )),
        }
    }
}

/// What to compare, and how.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// The report options both files are read with (`input` is ignored).
    pub report: ReportOptions,
    /// The baseline file.
    pub base: PathBuf,
    /// The file compared with it.
    pub new: PathBuf,
    /// How rows are compared and ordered.
    pub compute: Compute,
}

impl DiffOptions {
    /// Compare `new` with `base`, both read with `report`'s options.
    pub fn new(report: ReportOptions, base: &Path, new: &Path, compute: Compute) -> DiffOptions {
        DiffOptions {
            report,
            base: base.to_path_buf(),
            new: new.to_path_buf(),
            compute,
        }
    }
}

pub use crate::report::default_sort;

/// One side of a row: its samples, period and share of its file's total.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Side {
    /// Samples.
    pub samples: u64,
    /// Sum of periods (the inclusive one with `--children`).
    pub period: u64,
    /// Percent of the file's total period for the event.
    pub share: f64,
}

/// Whether a row is in both files or in one only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// In both files.
    Matched,
    /// In NEW only.
    New,
    /// In BASE only.
    Gone,
}

impl Change {
    /// `matched`, `new` or `gone`.
    pub fn name(self) -> &'static str {
        match self {
            Change::Matched => "matched",
            Change::New => "new",
            Change::Gone => "gone",
        }
    }
}

/// One row of a differential profile: the key's parts and both sides.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffRow {
    /// Command.
    pub comm: Option<String>,
    /// Process id.
    pub pid: Option<u32>,
    /// Shared object (base name).
    pub dso: Option<String>,
    /// Symbol (`[unknown]` for the DSO's unresolved addresses).
    pub symbol: Option<String>,
    /// Kernel code.
    pub kernel: bool,
    /// CPU.
    pub cpu: Option<u32>,
    /// In BASE.
    pub base: Option<Side>,
    /// In NEW.
    pub new: Option<Side>,
}

impl DiffRow {
    /// In both files, or which one.
    pub fn change(&self) -> Change {
        match (&self.base, &self.new) {
            (Some(_), None) => Change::Gone,
            (None, _) => Change::New,
            _ => Change::Matched,
        }
    }

    /// NEW share − BASE share, in percentage points.
    pub fn delta(&self) -> f64 {
        self.new.map_or(0.0, |s| s.share) - self.base.map_or(0.0, |s| s.share)
    }

    /// NEW period / BASE period (perf diff's ratio); `None` for a new row.
    pub fn ratio(&self) -> Option<f64> {
        let base = self.base.filter(|b| b.period > 0)?;
        Some(self.new.map_or(0, |n| n.period) as f64 / base.period as f64)
    }
}

/// One event's totals in one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Totals {
    /// Samples.
    pub samples: u64,
    /// Sum of periods.
    pub period: u64,
}

/// One event present in both files.
#[derive(Debug, Clone)]
pub struct EventDiff {
    /// Its name (as in NEW).
    pub name: String,
    /// Index into the BASE profile's events.
    pub base_index: usize,
    /// Index into the NEW profile's events.
    pub new_index: usize,
    /// BASE's totals.
    pub base: Totals,
    /// NEW's totals.
    pub new: Totals,
    /// Every row, ordered by the computation.
    pub rows: Vec<DiffRow>,
}

/// A differential profile: both reports and the events compared.
#[derive(Debug, Clone)]
pub struct DiffReport {
    /// The baseline's report.
    pub base: Report,
    /// The other file's report.
    pub new: Report,
    /// How rows were compared and ordered.
    pub compute: Compute,
    /// The events of both files, in NEW's order.
    pub events: Vec<EventDiff>,
    /// Selected events of BASE not in NEW.
    pub only_base: Vec<String>,
    /// Selected events of NEW not in BASE.
    pub only_new: Vec<String>,
}

/// Read both files (as `pmx report` does) and compare them.
pub fn diff(
    opts: &DiffOptions,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<DiffReport, ReportError> {
    let side = |input: &PathBuf| ReportOptions {
        input: input.clone(),
        ..opts.report.clone()
    };
    let base = report(&side(&opts.base), progress)?;
    let new = report(&side(&opts.new), progress)?;
    let d = compare(base, new, opts.compute);
    if d.events.is_empty() {
        return Err(ReportError::NoCommonEvent {
            base: d.base.file.clone(),
            new: d.new.file.clone(),
            base_events: d.only_base,
            new_events: d.only_new,
        });
    }
    Ok(d)
}

/// An event name without its modifiers (`cycles:u` → `cycles`).
fn bare(name: &str) -> &str {
    name.split(':').next().unwrap_or(name)
}

/// Pair the selected events of two reports by name and compare their rows.
pub fn compare(base: Report, new: Report, compute: Compute) -> DiffReport {
    let mut free: Vec<usize> = base.selected.clone();
    let mut pairs = Vec::new();
    let mut only_new = Vec::new();
    for &n in &new.selected {
        let name = &new.profile.events[n].name;
        let events = &base.profile.events;
        let found = free
            .iter()
            .position(|&b| events[b].name == *name)
            .or_else(|| {
                free.iter()
                    .position(|&b| bare(&events[b].name) == bare(name))
            });
        match found {
            Some(at) => pairs.push((free.remove(at), n)),
            None => only_new.push(name.clone()),
        }
    }
    let only_base = free
        .iter()
        .map(|&b| base.profile.events[b].name.clone())
        .collect();
    let children = new.options.children;
    let events = pairs
        .into_iter()
        .map(|(b, n)| {
            let (eb, en) = (&base.profile.events[b], &new.profile.events[n]);
            EventDiff {
                name: en.name.clone(),
                base_index: b,
                new_index: n,
                base: Totals {
                    samples: eb.samples,
                    period: eb.period,
                },
                new: Totals {
                    samples: en.samples,
                    period: en.period,
                },
                rows: rows(eb, en, children, compute),
            }
        })
        .collect();
    DiffReport {
        base,
        new,
        compute,
        events,
        only_base,
        only_new,
    }
}

type Key = (
    Option<String>,
    Option<u32>,
    Option<String>,
    Option<String>,
    Option<u32>,
);

/// The symbol a row is matched and shown by: its name, or `[unknown]`
/// for an unresolved address.
fn symbol(r: &Row) -> Option<String> {
    r.symbol.as_ref().map(|s| {
        if is_address(s) {
            UNKNOWN.to_string()
        } else {
            s.clone()
        }
    })
}

/// What the unresolved addresses of a DSO are shown as.
pub const UNKNOWN: &str = "[unknown]";

/// The matching key of a row.
fn key(r: &Row) -> Key {
    (r.comm.clone(), r.pid, r.dso.clone(), symbol(r), r.cpu)
}

fn side(r: &Row, total: u64, children: bool) -> Side {
    let (samples, period) = if children {
        (r.children_samples, r.children_period)
    } else {
        (r.samples, r.period)
    };
    Side {
        samples,
        period,
        share: pct(period, total),
    }
}

fn bare_row(r: &Row) -> DiffRow {
    DiffRow {
        comm: r.comm.clone(),
        pid: r.pid,
        dso: r.dso.clone(),
        symbol: symbol(r),
        kernel: r.kernel,
        cpu: r.cpu,
        base: None,
        new: None,
    }
}

/// `s` added to `into` (rows of one file with the same names: two static
/// functions called alike, or a DSO's unresolved addresses, are one row
/// of the diff).
fn add(into: &mut Option<Side>, s: Side) {
    *into = Some(match *into {
        None => s,
        Some(t) => Side {
            samples: t.samples + s.samples,
            period: t.period.saturating_add(s.period),
            share: t.share + s.share,
        },
    });
}

/// The rows of one event in both files, paired by key and ordered.
fn rows(base: &EventProfile, new: &EventProfile, children: bool, compute: Compute) -> Vec<DiffRow> {
    let mut out: Vec<DiffRow> = Vec::new();
    let mut at: BTreeMap<Key, usize> = BTreeMap::new();
    for (file, is_new) in [(base, false), (new, true)] {
        for r in &file.rows {
            let s = side(r, file.period, children);
            let i = *at.entry(key(r)).or_insert_with(|| {
                out.push(bare_row(r));
                out.len() - 1
            });
            add(
                if is_new {
                    &mut out[i].new
                } else {
                    &mut out[i].base
                },
                s,
            );
        }
    }
    // Rows with no weight on either side (children rows of a self-only
    // build, say) say nothing.
    out.retain(|d| {
        d.base.is_some_and(|s| s.period > 0 || s.samples > 0)
            || d.new.is_some_and(|s| s.period > 0 || s.samples > 0)
    });
    out.sort_by(|a, b| order(a, b, compute).then_with(|| tie(a, b)));
    out
}

/// The order of two rows under `compute`, the first to show first.
fn order(a: &DiffRow, b: &DiffRow, compute: Compute) -> std::cmp::Ordering {
    match compute {
        Compute::DeltaAbs => b.delta().abs().total_cmp(&a.delta().abs()),
        Compute::Delta => b.delta().total_cmp(&a.delta()),
        Compute::Ratio => {
            let r = |d: &DiffRow| d.ratio().unwrap_or(f64::INFINITY);
            r(b).total_cmp(&r(a))
                .then(b.delta().abs().total_cmp(&a.delta().abs()))
        }
    }
}

/// Equal changes: the heavier row in NEW, then BASE, then by key.
fn tie(a: &DiffRow, b: &DiffRow) -> std::cmp::Ordering {
    let w = |s: Option<Side>| s.map_or(0, |s| s.period);
    w(b.new)
        .cmp(&w(a.new))
        .then(w(b.base).cmp(&w(a.base)))
        .then_with(|| {
            (&a.comm, a.pid, &a.dso, &a.symbol, a.cpu)
                .cmp(&(&b.comm, b.pid, &b.dso, &b.symbol, b.cpu))
        })
}

impl DiffReport {
    /// The sort keys both files were grouped by.
    pub fn sort(&self) -> &[SortKey] {
        &self.new.sort
    }

    /// The rows of `e` to show: either share over the percent limit, at
    /// most the row limit.
    pub fn visible<'a>(&self, e: &'a EventDiff) -> impl Iterator<Item = &'a DiffRow> {
        let limit = self.new.options.percent_limit;
        let share = |s: Option<Side>| s.map_or(0.0, |s| s.share);
        e.rows
            .iter()
            .filter(move |r| share(r.base).max(share(r.new)) >= limit)
            .take(self.new.options.limit.unwrap_or(usize::MAX))
    }

    /// Both files' warnings, each after its file's name.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        for r in [&self.base, &self.new] {
            w.extend(
                r.profile
                    .warnings
                    .iter()
                    .map(|x| format!("{}: {x}", r.file)),
            );
        }
        w
    }

    /// The event to draw stacks of: the only one with samples in NEW, else
    /// the first such (and whether there were several).
    pub fn stack_event(&self) -> Result<(usize, bool), ReportError> {
        let mut with = self
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.new.samples > 0)
            .map(|(i, _)| i);
        let first = with.next().ok_or(ReportError::NoSamples)?;
        Ok((first, with.next().is_some()))
    }

    /// The stacks of event `i` of [`DiffReport::events`], both sides.
    pub fn stacks(&self, i: usize) -> DiffStacks {
        let e = &self.events[i];
        DiffStacks::new(
            &self.base.profile.events[e.base_index].stacks,
            &self.new.profile.events[e.new_index].stacks,
        )
    }

    /// The differential flame graph of event `i`: widths from NEW, colour
    /// from the change of each frame's share.
    pub fn flame_svg(&self, i: usize) -> String {
        let e = &self.events[i];
        let name = |f: &str| f.rsplit('/').next().unwrap_or(f).to_string();
        let title = format!(
            "{} → {} — {} ({} → {} samples)",
            name(&self.base.file),
            name(&self.new.file),
            e.name,
            e.base.samples,
            e.new.samples
        );
        flame_diff::svg(&self.stacks(i), &title)
    }

    /// What to say of the flame graph of event `i` written to `path`
    /// (and that other events have samples too, when they do).
    pub fn flame_note(&self, i: usize, path: &Path) -> String {
        let others = self.events.iter().filter(|e| e.new.samples > 0).count() > 1;
        format!(
            "differential flame graph of '{}' written to {}{}",
            self.events[i].name,
            path.display(),
            if others {
                " (other events have samples too: choose with --event)"
            } else {
                ""
            }
        )
    }

    /// The folded stacks of event `i` with both counts
    /// (`stack count_base count_new`, Brendan Gregg's difffolded format).
    pub fn folded(&self, i: usize) -> String {
        flame_diff::folded(&self.stacks(i))
    }
}

#[cfg(test)]
pub(crate) mod tests;
