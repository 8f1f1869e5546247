//! The rows both renderers draw: one line per profile row, with its
//! share of the event's samples, filtered and ordered as asked. The
//! rows of `offcpu-time` (`pmx top --off-cpu`) are weighed by their
//! time instead: a sample is a wait, its period the nanoseconds waited,
//! so a row's share is of the time waited and its `samples` cell the
//! milliseconds ([`by_time`]).

use crate::top::Frame;
use pmx_profile::Row;

/// How the rows are ordered (the `s` key cycles through them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Most samples first (perf top's order).
    #[default]
    Samples,
    /// With call chains: the most inclusive samples first.
    Children,
    /// By command, then samples.
    Command,
    /// By binary, then samples.
    Binary,
    /// By symbol name.
    Symbol,
}

impl Order {
    /// The next order (wrapping).
    pub fn next(self) -> Order {
        match self {
            Order::Samples => Order::Children,
            Order::Children => Order::Command,
            Order::Command => Order::Binary,
            Order::Binary => Order::Symbol,
            Order::Symbol => Order::Samples,
        }
    }

    /// Its name, for the header.
    pub fn name(self) -> &'static str {
        match self {
            Order::Samples => "samples",
            Order::Children => "children",
            Order::Command => "command",
            Order::Binary => "binary",
            Order::Symbol => "symbol",
        }
    }
}

/// One row as drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Share of the event's samples, in %.
    pub share: f64,
    /// Share of the samples whose call chain holds the function (with
    /// call chains), in %.
    pub children: Option<f64>,
    /// Samples (aged); of an `offcpu-time` row, the milliseconds waited.
    pub samples: u64,
    /// Command.
    pub comm: String,
    /// Binary (base name).
    pub dso: String,
    /// Function, or the address.
    pub symbol: String,
    /// Kernel code.
    pub kernel: bool,
    /// A sample-read group's row: each member's count.
    pub counts: Vec<u64>,
    /// … and each `-M` metric's cell.
    pub cells: Vec<String>,
}

/// The event whose rows are weighed by time: `--off-cpu`'s waits.
pub fn by_time(event: &str) -> bool {
    event == "offcpu-time"
}

impl Line {
    /// `total`: the event's samples, or (`waited`) its nanoseconds.
    fn of(r: &Row, total: u64, children: bool, waited: bool) -> Line {
        let pct = |n: u64| 100.0 * n as f64 / total.max(1) as f64;
        let (own, inclusive) = match waited {
            true => (r.period, r.children_period),
            false => (r.samples, r.children_samples),
        };
        Line {
            share: pct(own),
            children: children.then(|| pct(inclusive)),
            samples: if waited {
                r.period / 1_000_000
            } else {
                r.samples
            },
            comm: r.comm.clone().unwrap_or_default(),
            dso: r.dso.clone().unwrap_or_else(|| "[unknown]".into()),
            symbol: r.symbol.clone().unwrap_or_else(|| "[unknown]".into()),
            kernel: r.kernel,
            counts: Vec::new(),
            cells: Vec::new(),
        }
    }

    /// Whether `needle` (lower case) is in its symbol, binary or command.
    pub fn matches(&self, needle: &str) -> bool {
        needle.is_empty()
            || [&self.symbol, &self.dso, &self.comm]
                .iter()
                .any(|s| s.to_lowercase().contains(needle))
    }

    /// `[k]` or `[.]`, as perf marks kernel and user code.
    pub fn mode(&self) -> &'static str {
        if self.kernel {
            "[k]"
        } else {
            "[.]"
        }
    }
}

/// The extra columns of event `event` of `frame`: a sample-read
/// group's members and metrics (empty for other events).
pub fn columns(frame: &Frame, event: usize) -> Vec<String> {
    match &frame.group {
        Some(g) if g.event == event => [g.members.clone(), g.metrics.clone()].concat(),
        _ => Vec::new(),
    }
}

/// The lines of event `event` of `frame` (a sample-read group's rows
/// with their counts and metrics): those matching `filter` (any case),
/// in `order`.
pub fn lines(frame: &Frame, event: usize, order: Order, filter: &str) -> Vec<Line> {
    let Some(ev) = frame.profile.events.get(event) else {
        return Vec::new();
    };
    let needle = filter.to_lowercase();
    let mut v: Vec<Line> = match &frame.group {
        Some(g) if g.event == event => (g.rows.iter())
            .map(|r| Line {
                counts: r.counts.clone(),
                cells: r.cells.clone(),
                ..Line::of(&r.row, ev.samples, false, false)
            })
            .collect(),
        _ => {
            let children = ev.rows.iter().any(|r| r.children_samples > 0);
            let waited = by_time(&ev.name);
            let total = if waited { ev.period } else { ev.samples };
            (ev.rows.iter())
                .filter(|r| r.samples > 0 || r.children_samples > 0)
                .map(|r| Line::of(r, total, children, waited))
                .collect()
        }
    };
    v.retain(|l| l.matches(&needle));
    // The share orders: it is of the samples, or of an off-CPU row's time.
    let by_samples =
        |a: &Line, b: &Line| b.share.total_cmp(&a.share).then(b.samples.cmp(&a.samples));
    match order {
        Order::Samples => v.sort_by(by_samples),
        Order::Children => v.sort_by(|a, b| {
            (b.children
                .unwrap_or(0.0)
                .total_cmp(&a.children.unwrap_or(0.0)))
            .then(by_samples(a, b))
        }),
        Order::Command => v.sort_by(|a, b| a.comm.cmp(&b.comm).then(by_samples(a, b))),
        Order::Binary => v.sort_by(|a, b| a.dso.cmp(&b.dso).then(by_samples(a, b))),
        Order::Symbol => v.sort_by(|a, b| a.symbol.cmp(&b.symbol).then(by_samples(a, b))),
    }
    v
}

/// A line's extra cells (counts, then metrics), each `width` wide.
pub fn extra(l: &Line, widths: &[usize]) -> String {
    let counts = l.counts.iter().map(|c| c.to_string());
    let cells = counts.chain(l.cells.iter().cloned());
    cells
        .zip(widths)
        .map(|(c, w)| format!("{c:>w$}  "))
        .collect()
}

/// The width of each extra column: its name's, or 12.
pub fn widths(columns: &[String]) -> Vec<usize> {
    columns.iter().map(|c| c.len().max(12)).collect()
}
