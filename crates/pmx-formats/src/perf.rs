//! perf's own output forms, written from a [`StatReport`] with perf 6.1's
//! layout (`tools/perf/util/stat-display.c`): the text table (header,
//! 18-wide counts, the unit and 32-wide event columns, `# metric`
//! comments 35 wide, `( +- x% )`, `(xx.xx%)` when multiplexed, the
//! elapsed/user/sys footer), `-x SEP` lines (value, unit, event,
//! \[cgroup,\] \[noise,\] run time, running %, metric value, metric unit,
//! after the `-I` time and the `-A`/`--per-*` domain columns) and `-j`
//! lines (perf's keys, in perf's order and spacing, one object per line);
//! `-G` cgroups in perf's column after the event; `--metric-only` in
//! perf's forms (`perf/metric_only.rs`).
//!
//! Rows are written as the report holds them: the domain label (`CPU3`,
//! pmx's `S0-C1` or perf's `S0-D0-C1`, `S0-D0`, `S0`, `N0`, `tid 12`)
//! decides the aggregation columns; the shadow metrics come from
//! [`crate::perf_shadow`].

mod metric_only;

use crate::perf_shadow::{shadow, split_cgroup, Shadow};
use crate::report::{ReportMetric, ReportRow, RowStatus, StatReport};
use std::fmt::Write as _;

/// Which of perf's forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PerfForm {
    /// The text table (default).
    Text,
    /// `-x SEP`.
    Csv(String),
    /// `-j`.
    Json,
}

/// What perf's output says beyond the rows.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfOptions {
    /// The form.
    pub form: PerfForm,
    /// The header's target as perf words it: `'true'`, `'system wide'`,
    /// `'CPU(s) 0-1'`, `process id '12'`, `thread id '12'`.
    pub target: String,
    /// Runs (`-r`).
    pub runs: usize,
    /// Wall-clock seconds per run: mean and the standard deviation of the
    /// mean (the footer; `CPUs utilized`).
    pub elapsed: (f64, f64),
    /// User and system seconds of the command (the footer, after a
    /// single run of a command).
    pub user_sys: Option<(f64, f64)>,
    /// Group the digits of counts with this separator (`-B` in a locale
    /// that has one).
    pub thousands: Option<char>,
    /// Comm names of thread ids (`--per-thread`), where known.
    pub comms: Vec<(i32, String)>,
    /// Counting system-wide (`-a`, or no target): `--per-thread` rows
    /// leave out the threads that counted nothing, as perf's do.
    pub system_wide: bool,
    /// `--summary`: the totals follow `-I`'s intervals, and in `-x` form
    /// each of their lines starts with perf's `summary` column.
    pub summary: bool,
    /// `--no-csv-summary`: no `summary` column.
    pub no_csv_summary: bool,
    /// `--metric-only`: the metrics alone, one line per domain under a
    /// header of their units.
    pub metric_only: bool,
    /// The totals follow `-I`'s intervals (`--summary`): perf's
    /// `--metric-only` totals have no header line then.
    pub intervals: bool,
}

impl PerfOptions {
    /// Options for `form` with nothing else known (one run, no footer
    /// times).
    pub fn new(form: PerfForm) -> PerfOptions {
        PerfOptions {
            form,
            target: String::new(),
            runs: 1,
            elapsed: (0.0, 0.0),
            user_sys: None,
            thousands: None,
            comms: Vec::new(),
            system_wide: false,
            summary: false,
            no_csv_summary: false,
            metric_only: false,
            intervals: false,
        }
    }
}

/// perf's aggregation modes, read off a row's domain label.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Aggr {
    Global,
    Cpu(u32),
    Core(u32, u32, u32),
    Die(u32, u32),
    Socket(u32),
    Node(u32),
    Thread(i32),
    Other(String),
}

impl Aggr {
    fn of(label: &str) -> Aggr {
        let n = |s: &str| s.parse::<u32>().ok();
        if label.is_empty() {
            return Aggr::Global;
        }
        if let Some(c) = label.strip_prefix("CPU").and_then(n) {
            return Aggr::Cpu(c);
        }
        if let Some(t) = label.strip_prefix("tid ").and_then(|t| t.parse().ok()) {
            return Aggr::Thread(t);
        }
        if let Some(x) = label.strip_prefix('N').and_then(n) {
            return Aggr::Node(x);
        }
        let parts: Vec<&str> = label.split('-').collect();
        let field = |p: &str, c: char| p.strip_prefix(c).and_then(n);
        match parts.as_slice() {
            [s] => field(s, 'S').map(Aggr::Socket),
            [s, c] if c.starts_with('C') => Some(Aggr::Core(
                field(s, 'S').unwrap_or(0),
                0,
                field(c, 'C').unwrap_or(0),
            )),
            [s, d] => field(s, 'S')
                .zip(field(d, 'D'))
                .map(|(s, d)| Aggr::Die(s, d)),
            [s, d, c] => match (field(s, 'S'), field(d, 'D'), field(c, 'C')) {
                (Some(s), Some(d), Some(c)) => Some(Aggr::Core(s, d, c)),
                _ => None,
            },
            _ => None,
        }
        .unwrap_or_else(|| Aggr::Other(label.to_string()))
    }

    /// Width of the label column in the text table and the `-I` header's
    /// title of the column (with ` cpus` when the column has a count).
    fn header(&self) -> Option<(&'static str, usize, bool)> {
        Some(match self {
            Aggr::Global | Aggr::Other(_) => return None,
            Aggr::Cpu(_) => ("CPU", 10, false),
            Aggr::Core(..) => ("core", 15, true),
            Aggr::Die(..) => ("die", 12, true),
            Aggr::Socket(_) => ("socket", 6, true),
            Aggr::Node(_) => ("node", 6, true),
            Aggr::Thread(_) => ("comm-pid", 25, false),
        })
    }
}

/// One row with everything perf prints about it.
struct Line<'a> {
    row: &'a ReportRow,
    aggr: Aggr,
    nr: usize,
    /// Run time and enabled time in ns, where known.
    run: Option<u64>,
    ena: Option<u64>,
    /// Counted (perf's `ok`).
    ok: bool,
    noise: Option<f64>,
    metric: Shadow,
}

impl Line<'_> {
    fn bad_word(&self) -> &'static str {
        match self.row.status {
            RowStatus::NotSupported => "<not supported>",
            _ => "<not counted>",
        }
    }

    /// perf's running percentage as `-x`/`-j` print it: `100 * run / ena`
    /// in integers, 100 when equal.
    fn pct_int(&self) -> f64 {
        match (self.run, self.ena) {
            (Some(r), Some(e)) if r != e && e > 0 => (100 * r / e) as f64,
            (Some(_), Some(_)) | (Some(0), None) => 100.0,
            _ => self.row.running_pct.map_or(100.0, |p| p.floor()),
        }
    }

    /// The running percentage of the text table, when it ran part of the
    /// time.
    fn pct_partial(&self) -> Option<f64> {
        match (self.run, self.ena) {
            (Some(r), Some(e)) if r != e && e > 0 => Some(100.0 * r as f64 / e as f64),
            (Some(_), Some(_)) | (Some(0), None) => None,
            _ => self.row.running_pct.filter(|p| *p < 100.0),
        }
    }

    fn comm<'o>(&self, o: &'o PerfOptions, tid: i32) -> &'o str {
        o.comms
            .iter()
            .find(|(t, _)| *t == tid)
            .map_or("", |(_, c)| c.as_str())
    }
}

/// The lines of `rows` (one interval or the totals) with their metrics.
fn lines<'a>(
    rows: &'a [ReportRow],
    all: &'a [ReportRow],
    o: &PerfOptions,
    wall_ns: Option<f64>,
) -> Vec<Line<'a>> {
    rows.iter()
        .map(|row| {
            let run = row.running_ns.or(row.runtime_ns.map(|r| r as u64));
            let ena = row.enabled_ns;
            let ok = row.value.is_some()
                && row.status != RowStatus::NotSupported
                && run.is_none_or(|r| r > 0);
            let noise = (o.runs > 1).then(|| match (row.spread, row.value) {
                (Some(sp), Some(v)) if v != 0.0 && sp.runs > 0 => {
                    100.0 * sp.stddev
                        / (sp.runs as f64).sqrt()
                        / sp.mean.abs().max(f64::MIN_POSITIVE)
                }
                _ => 0.0,
            });
            let metric = if ok {
                shadow(all, row, wall_ns)
            } else {
                Shadow::Empty("")
            };
            Line {
                row,
                aggr: Aggr::of(&row.domain),
                nr: row.counters.filter(|n| *n > 0).unwrap_or(1),
                run: if ok { run } else { Some(0) },
                ena: if ok { ena } else { None },
                ok,
                noise,
                metric,
            }
        })
        .collect()
}

/// `secs.nanos` of an interval's end, `%lu.%09lu` (`width` pads the
/// seconds as `%6lu` does).
fn timestamp(t: f64, width: usize) -> String {
    let ns = (t * 1e9).round() as u64;
    format!("{:width$}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// Digits of a whole number grouped with `sep`.
fn grouped(v: f64, sep: char) -> String {
    let s = format!("{v:.0}");
    let (neg, digits) = s
        .strip_prefix('-')
        .map_or((false, s.as_str()), |d| (true, d));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(sep);
        }
        out.push(c);
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// The unit column's width: 4, or the longest unit.
fn unit_width(rows: &[ReportRow]) -> usize {
    rows.iter()
        .map(|r| r.unit.chars().count())
        .max()
        .unwrap_or(0)
        .max(4)
}

// ---- text ----

fn aggr_text(s: &mut String, l: &Line, o: &PerfOptions) {
    match &l.aggr {
        Aggr::Global => {}
        Aggr::Cpu(c) => {
            let _ = write!(s, "CPU{c:<7} ");
        }
        Aggr::Core(so, d, c) => {
            let _ = write!(s, "S{so}-D{d}-C{c:<8} {:4} ", l.nr);
        }
        Aggr::Die(so, d) => {
            let _ = write!(s, "S{so}-D{d:<8} {:4} ", l.nr);
        }
        Aggr::Socket(so) => {
            let _ = write!(s, "S{so:<5} {:4} ", l.nr);
        }
        Aggr::Node(n) => {
            let _ = write!(s, "N{n:<5} {:4} ", l.nr);
        }
        Aggr::Thread(t) => {
            let _ = write!(s, "{:>16}-{t:<8} ", l.comm(o, *t));
        }
        Aggr::Other(label) => {
            let _ = write!(s, "{label} ");
        }
    }
}

/// One row of the text table (without the interval prefix).
fn text_line(s: &mut String, l: &Line, o: &PerfOptions, uw: usize) {
    aggr_text(s, l, o);
    match (l.ok, l.row.value) {
        (true, Some(v)) if !l.row.unit.is_empty() => {
            let _ = write!(s, "{v:18.2} ");
        }
        (true, Some(v)) => match o.thousands {
            Some(sep) => {
                let _ = write!(s, "{:>18} ", grouped(v, sep));
            }
            None => {
                let _ = write!(s, "{v:18.0} ");
            }
        },
        _ => {
            let _ = write!(s, "{:>18} ", l.bad_word());
        }
    }
    let name_w = if l.ok { 32 } else { 25 };
    let (event, cgroup) = split_cgroup(&l.row.event);
    let _ = write!(s, "{:<uw$} {event:<name_w$}", l.row.unit);
    if let Some(cg) = cgroup {
        let _ = write!(s, " {cg}");
    }
    match &l.metric {
        Shadow::Value { fmt, value, unit } => {
            let v = fmt.print(*value);
            let n = 3 + v.len();
            let w = 35usize.saturating_sub(n + 1);
            let _ = write!(s, " # {v} {unit:<w$}");
        }
        _ => s.push_str(&" ".repeat(35)),
    }
    if let Some(p) = l.noise.filter(|p| *p != 0.0) {
        let _ = write!(s, "  ( +-{p:6.2}% )");
    }
    if let Some(p) = l.pct_partial() {
        let _ = write!(s, "  ({p:.2}%)");
    }
    s.push('\n');
}

/// perf's precision for the `-r` elapsed line: two digits past the
/// stddev's first.
fn precision(sd: f64) -> usize {
    let p = if sd > 1.0 || sd <= 0.0 {
        0.0
    } else {
        (-sd.log10()).ceil()
    };
    (p as usize + 2).min(9)
}

fn text_footer(s: &mut String, o: &PerfOptions) {
    let (avg, sd) = o.elapsed;
    s.push('\n');
    if o.runs <= 1 {
        let _ = write!(s, " {avg:17.9} seconds time elapsed");
        if let Some((user, sys)) = o.user_sys {
            let _ = write!(
                s,
                "\n\n {user:17.9} seconds user\n {sys:17.9} seconds sys\n"
            );
        }
    } else {
        let p = precision(sd);
        let _ = write!(s, " {avg:17.p$} +- {sd:.p$} seconds time elapsed");
        let pct = if avg != 0.0 { 100.0 * sd / avg } else { 0.0 };
        if pct != 0.0 {
            let _ = write!(s, "  ( +-{pct:6.2}% )");
        }
    }
    s.push_str("\n\n");
}

// ---- -x SEP ----

fn aggr_csv(s: &mut String, l: &Line, o: &PerfOptions, sep: &str) {
    let _ = match &l.aggr {
        Aggr::Global => Ok(()),
        Aggr::Cpu(c) => write!(s, "CPU{c}{sep}"),
        Aggr::Core(so, d, c) => write!(s, "S{so}-D{d}-C{c}{sep}{}{sep}", l.nr),
        Aggr::Die(so, d) => write!(s, "S{so}-D{d}{sep}{}{sep}", l.nr),
        Aggr::Socket(so) => write!(s, "S{so}{sep}{}{sep}", l.nr),
        Aggr::Node(n) => write!(s, "N{n}{sep}{}{sep}", l.nr),
        Aggr::Thread(t) => write!(s, "{}-{t}{sep}", l.comm(o, *t)),
        Aggr::Other(label) => write!(s, "{label}{sep}"),
    };
}

/// The digits of a printed metric value (`  25.000` → `25.000`,
/// `   3.14%` → `3.14`), as perf's CSV printer cuts them.
fn metric_digits(printed: &str) -> &str {
    let t = printed.trim_start();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    &t[..end]
}

fn csv_line(s: &mut String, l: &Line, o: &PerfOptions, sep: &str) {
    aggr_csv(s, l, o, sep);
    match (l.ok, l.row.value) {
        (true, Some(v)) if !l.row.unit.is_empty() => {
            let _ = write!(s, "{v:.2}{sep}");
        }
        (true, Some(v)) => {
            let _ = write!(s, "{v:.0}{sep}");
        }
        _ => {
            let _ = write!(s, "{}{sep}", l.bad_word());
        }
    }
    let (event, cgroup) = split_cgroup(&l.row.event);
    let _ = write!(s, "{}{sep}{event}", l.row.unit);
    if let Some(cg) = cgroup {
        let _ = write!(s, "{sep}{cg}");
    }
    if let Some(p) = l.noise {
        let _ = write!(s, "{sep}{p:.2}%");
    }
    let _ = write!(s, "{sep}{}{sep}{:.2}", l.run.unwrap_or(0), l.pct_int());
    match &l.metric {
        Shadow::Value { fmt, value, unit } => {
            let _ = write!(s, "{sep}{}{sep}{unit}", metric_digits(&fmt.print(*value)));
        }
        _ => {
            let _ = write!(s, "{sep}{sep}");
        }
    }
    s.push('\n');
}

// ---- -j ----

fn json_str(v: &str) -> String {
    let mut s = String::new();
    for c in v.chars() {
        match c {
            '"' | '\\' => {
                s.push('\\');
                s.push(c);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s
}

fn aggr_json(s: &mut String, l: &Line, o: &PerfOptions) {
    let _ = match &l.aggr {
        Aggr::Global => Ok(()),
        Aggr::Cpu(c) => write!(s, "\"cpu\" : \"{c}\", "),
        Aggr::Core(so, d, c) => write!(
            s,
            "\"core\" : \"S{so}-D{d}-C{c}\", \"aggregate-number\" : {}, ",
            l.nr
        ),
        Aggr::Die(so, d) => write!(
            s,
            "\"die\" : \"S{so}-D{d}\", \"aggregate-number\" : {}, ",
            l.nr
        ),
        Aggr::Socket(so) => write!(
            s,
            "\"socket\" : \"S{so}\", \"aggregate-number\" : {}, ",
            l.nr
        ),
        Aggr::Node(n) => write!(s, "\"node\" : \"N{n}\", \"aggregate-number\" : {}, ", l.nr),
        Aggr::Thread(t) => write!(s, "\"thread\" : \"{}-{t}\", ", json_str(l.comm(o, *t))),
        Aggr::Other(label) => write!(s, "\"core\" : \"{}\", ", json_str(label)),
    };
}

fn json_line(s: &mut String, l: &Line, o: &PerfOptions) {
    s.push('{');
    if let Some(t) = l.row.time {
        let _ = write!(s, "\"interval\" : {}, ", timestamp(t, 0));
    }
    aggr_json(s, l, o);
    match (l.ok, l.row.value) {
        (true, Some(v)) => {
            let _ = write!(s, "\"counter-value\" : \"{v:.6}\", ");
        }
        _ => {
            let _ = write!(s, "\"counter-value\" : \"{}\", ", l.bad_word());
        }
    }
    let (event, cgroup) = split_cgroup(&l.row.event);
    let _ = write!(
        s,
        "\"unit\" : \"{}\", \"event\" : \"{}\", ",
        json_str(&l.row.unit),
        json_str(event)
    );
    if let Some(cg) = cgroup {
        let _ = write!(s, "\"cgroup\" : \"{}\", ", json_str(cg));
    }
    if let Some(p) = l.noise {
        let _ = write!(s, "\"variance\" : {p:.2}, ");
    }
    let _ = write!(
        s,
        "\"event-runtime\" : {}, \"pcnt-running\" : {:.2}, ",
        l.run.unwrap_or(0),
        l.pct_int()
    );
    let (value, unit) = match &l.metric {
        Shadow::Value { value, unit, .. } => (*value, json_str(unit)),
        Shadow::Empty(unit) => (0.0, (*unit).to_string()),
        Shadow::None => (0.0, "(null)".to_string()),
    };
    let _ = writeln!(
        s,
        "\"metric-value\" : {value:.6}, \"metric-unit\" : \"{unit}\"}}"
    );
}

// ---- -M metrics ----

/// A `-M` metric as perf 6.1's `generic_metric` prints it: with a unit,
/// `%8.1f` and `UNIT  NAME`; without, `%8.2f` and the name.
fn metric_text(m: &ReportMetric) -> Option<(String, String)> {
    let v = m.value?;
    Some(if m.unit.is_empty() {
        (format!("{v:8.2}"), m.name.clone())
    } else {
        (format!("{v:8.1}"), format!("{}  {}", m.unit, m.name))
    })
}

/// A `-M` metric on a line of its own, as perf prints a counter's further
/// metrics (`new_line_*`): the interval and domain columns, then the
/// metric columns only. A metric without a value has no line (perf
/// prints metrics beside counted inputs only).
fn metric_line(s: &mut String, m: &ReportMetric, o: &PerfOptions) {
    if m.value.is_none() {
        return;
    }
    let aggr = Aggr::of(&m.domain);
    let mut row = ReportRow::new(&m.name, &m.domain);
    row.time = m.time;
    let l = Line {
        row: &row,
        aggr: aggr.clone(),
        nr: 1,
        run: None,
        ena: None,
        ok: false,
        noise: None,
        metric: Shadow::None,
    };
    let text = metric_text(m);
    match &o.form {
        PerfForm::Text => {
            if let Some(t) = m.time {
                let _ = write!(s, "{} ", timestamp(t, 6));
            }
            aggr_text(s, &l, o);
            if matches!(aggr, Aggr::Cpu(_)) {
                s.push_str(&" ".repeat(8));
            }
            s.push_str(&" ".repeat(49));
            match text {
                Some((v, label)) => {
                    let w = 35usize.saturating_sub(3 + v.len() + 1);
                    let _ = write!(s, " # {v} {label:<w$}");
                }
                None => s.push_str(&" ".repeat(35)),
            }
        }
        PerfForm::Csv(sep) => {
            if let Some(t) = m.time {
                let _ = write!(s, "{}{sep}", timestamp(t, 6));
            }
            aggr_csv(s, &l, o, sep);
            let fields = match aggr {
                Aggr::Global => 3,
                Aggr::Cpu(_) | Aggr::Thread(_) | Aggr::Node(_) | Aggr::Other(_) => 4,
                _ => 5,
            };
            s.push_str(&sep.repeat(fields));
            match text {
                Some((v, label)) => {
                    let _ = write!(s, "{sep}{}{sep}{label}", metric_digits(&v));
                }
                None => {
                    let _ = write!(s, "{sep}{sep}");
                }
            }
        }
        PerfForm::Json => {
            s.push('{');
            if let Some(t) = m.time {
                let _ = write!(s, "\"interval\" : {}, ", timestamp(t, 0));
            }
            aggr_json(s, &l, o);
            let (v, label) = match (m.value, text) {
                (Some(v), Some((_, label))) => (v, label),
                _ => (0.0, String::new()),
            };
            let _ = write!(
                s,
                "\"metric-value\" : {v:.6}, \"metric-unit\" : \"{}\"}}",
                json_str(&label)
            );
        }
    }
    s.push('\n');
}

// ---- the forms ----

/// The rows with an event that has no count in any domain (one row,
/// without a domain) repeated for every domain the other rows have, as
/// perf prints `<not supported>` once per CPU, core, socket…; by core,
/// die, socket or node, ordered by domain first (perf's `print_aggr`).
fn per_domain(rows: &[ReportRow]) -> Vec<ReportRow> {
    let mut domains: Vec<&str> = Vec::new();
    for r in rows {
        if !r.domain.is_empty() && !domains.contains(&r.domain.as_str()) {
            domains.push(&r.domain);
        }
    }
    // Only where every count has its domain (a per-domain run).
    let per_domain = rows
        .iter()
        .all(|r| r.value.is_none() || !r.domain.is_empty());
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        if per_domain && r.domain.is_empty() && r.value.is_none() && !domains.is_empty() {
            out.extend(domains.iter().map(|d| ReportRow {
                domain: d.to_string(),
                ..r.clone()
            }));
        } else {
            out.push(r.clone());
        }
    }
    let by_domain = domains.first().is_some_and(|d| {
        matches!(
            Aggr::of(d),
            Aggr::Core(..) | Aggr::Die(..) | Aggr::Socket(_) | Aggr::Node(_)
        )
    });
    if by_domain {
        out.sort_by_key(|r| domains.iter().position(|d| *d == r.domain));
    }
    out
}

/// `--per-thread` rows as perf prints them (`sort_aggr_thread`): each
/// event's threads by count, largest first; counting system-wide, only
/// the threads that counted something (perf: "otherwise too many 0
/// output"). Other rows as they are.
fn by_thread(rows: Vec<ReportRow>, system_wide: bool) -> Vec<ReportRow> {
    if !rows
        .iter()
        .any(|r| matches!(Aggr::of(&r.domain), Aggr::Thread(_)))
    {
        return rows;
    }
    let mut events: Vec<&str> = Vec::new();
    for r in &rows {
        if !events.contains(&r.event.as_str()) {
            events.push(&r.event);
        }
    }
    let at = |r: &ReportRow| events.iter().position(|e| *e == r.event);
    let mut keyed: Vec<(Option<usize>, ReportRow)> = (rows.iter())
        .filter(|r| !system_wide || r.value.is_some_and(|v| v != 0.0))
        .map(|r| (at(r), r.clone()))
        .collect();
    keyed.sort_by(|(ea, a), (eb, b)| {
        let v = |r: &ReportRow| r.value.unwrap_or(f64::NEG_INFINITY);
        ea.cmp(eb).then(v(b).total_cmp(&v(a)))
    });
    keyed.into_iter().map(|(_, r)| r).collect()
}

/// The rows of one interval (or the totals, `time` None) in `o.form`.
fn body(s: &mut String, rows: &[ReportRow], o: &PerfOptions, wall_ns: Option<f64>, uw: usize) {
    let rows = &by_thread(per_domain(rows), o.system_wide)[..];
    for l in lines(rows, rows, o, wall_ns) {
        match &o.form {
            PerfForm::Text => {
                if let Some(t) = l.row.time {
                    let _ = write!(s, "{} ", timestamp(t, 6));
                }
                text_line(s, &l, o, uw);
            }
            PerfForm::Csv(sep) => {
                if let Some(t) = l.row.time {
                    let _ = write!(s, "{}{sep}", timestamp(t, 6));
                }
                csv_line(s, &l, o, sep);
            }
            PerfForm::Json => json_line(s, &l, o),
        }
    }
}

/// The totals of `report` as perf prints them in `o.form`: the text table
/// with its header and footer, or the `-x`/`-j` lines.
pub fn totals(report: &StatReport, o: &PerfOptions) -> String {
    let mut s = String::new();
    let wall = (o.elapsed.0 > 0.0).then_some(o.elapsed.0 * 1e9);
    if o.metric_only {
        metric_only::body(&mut s, report, o, wall, true);
        return s;
    }
    let uw = unit_width(&report.rows);
    if o.form == PerfForm::Text {
        let runs = if o.runs > 1 {
            format!(" ({} runs)", o.runs)
        } else {
            String::new()
        };
        let _ = write!(
            s,
            "\n Performance counter stats for {}{runs}:\n\n",
            o.target
        );
    }
    body(&mut s, &report.rows, o, wall, uw);
    for m in &report.metrics {
        metric_line(&mut s, m, o);
    }
    if o.form == PerfForm::Text {
        text_footer(&mut s, o);
    }
    match &o.form {
        // perf's `summary` column, as wide as the `-I` time stamps.
        PerfForm::Csv(sep) if o.summary && !o.no_csv_summary => s
            .lines()
            .map(|l| format!("{:>16}{sep}{l}\n", "summary"))
            .collect(),
        _ => s,
    }
}

/// Writes `perf stat -I` intervals: the text table's `#  time  counts
/// unit events` header before the first interval and every 25th, then
/// each interval's rows (`--metric-only`: perf's header of metric units,
/// in every form, then a line per domain).
#[derive(Debug, Clone)]
pub struct PerfIntervals {
    options: PerfOptions,
    printed: usize,
}

impl PerfIntervals {
    /// A writer in `options.form`.
    pub fn new(options: PerfOptions) -> PerfIntervals {
        PerfIntervals {
            options,
            printed: 0,
        }
    }

    /// The options, to name the threads of the next interval's rows.
    pub fn options_mut(&mut self) -> &mut PerfOptions {
        &mut self.options
    }

    /// One interval's rows and `-M` metrics (all with the same `time`),
    /// lasting `span_s` seconds.
    pub fn format(&mut self, report: &StatReport, span_s: f64) -> String {
        let rows = &report.rows[..];
        let mut s = String::new();
        let o = &self.options;
        if o.metric_only {
            metric_only::body(&mut s, report, o, Some(span_s * 1e9), self.printed == 0);
            self.printed = (self.printed + 1) % 25;
            return s;
        }
        let uw = unit_width(rows);
        if o.form == PerfForm::Text && self.printed == 0 {
            s.push_str("#           time");
            if let Some((title, w, cpus)) = rows.first().and_then(|r| Aggr::of(&r.domain).header())
            {
                let _ = write!(s, " {title:<w$}");
                if cpus {
                    s.push_str(" cpus");
                }
            }
            let _ = writeln!(s, " {:>18} {:>uw$} events", "counts", "unit");
        }
        self.printed = (self.printed + 1) % 25;
        body(&mut s, rows, o, Some(span_s * 1e9), uw);
        for m in &report.metrics {
            metric_line(&mut s, m, o);
        }
        s
    }
}

/// `perf stat -x SEP` lines of `report` (rows of any interval, then
/// the `-M` metrics).
pub fn csv(report: &StatReport, sep: &str) -> String {
    plain(report, &PerfOptions::new(PerfForm::Csv(sep.to_string())))
}

/// `perf stat -j` lines of `report`, one object per row and metric.
pub fn json(report: &StatReport) -> String {
    plain(report, &PerfOptions::new(PerfForm::Json))
}

/// The rows and `-M` metrics of `report` in `o.form`, nothing around them.
fn plain(report: &StatReport, o: &PerfOptions) -> String {
    let mut s = String::new();
    let wall = report.elapsed_s.map(|e| e * 1e9);
    body(&mut s, &report.rows, o, wall, unit_width(&report.rows));
    for m in &report.metrics {
        metric_line(&mut s, m, o);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(domain: &str, event: &str, value: Option<f64>, unit: &str, run: u64) -> ReportRow {
        let mut r = ReportRow::new(event, domain);
        r.value = value;
        r.unit = unit.into();
        r.running_ns = Some(run);
        r.enabled_ns = Some(run);
        if value.is_none() {
            r.status = RowStatus::NotSupported;
        }
        r
    }

    /// perf 6.1's `perf stat -e task-clock,page-faults,cycles true` on
    /// this machine's kind (no hardware PMU), line by line; the digits
    /// are those of the rows below (task-clock 0.6135 ms over 1.327106 ms:
    /// 0.462 CPUs; 49 faults / 0.6135 ms = 79.870 K/sec).
    #[test]
    fn the_text_table_is_perfs() {
        let report = StatReport {
            rows: vec![
                row("", "task-clock", Some(0.6135), "msec", 613_500),
                row("", "page-faults", Some(49.0), "", 613_500),
                row("", "cycles", None, "", 0),
            ],
            ..StatReport::default()
        };
        let mut o = PerfOptions::new(PerfForm::Text);
        o.target = "'true'".into();
        o.elapsed = (0.001327106, 0.0);
        o.user_sys = Some((0.00152, 0.0));
        let want = [
            "",
            " Performance counter stats for 'true':",
            "",
            "              0.61 msec task-clock                       #    0.462 CPUs utilized          ",
            "                49      page-faults                      #   79.870 K/sec                  ",
            "   <not supported>      cycles                                                      ",
            "",
            "       0.001327106 seconds time elapsed",
            "",
            "       0.001520000 seconds user",
            "       0.000000000 seconds sys",
            "",
            "",
            "",
        ]
        .join("\n");
        assert_eq!(totals(&report, &o), want);
        // -r 2: the noise after the metric, the elapsed line's precision.
        let mut r = report.clone();
        r.rows[0].spread = crate::model::Spread::of(&[0.58, 0.6470]);
        o.runs = 2;
        o.elapsed = (0.00129347, 0.00000427);
        let text = totals(&r, &o);
        assert!(text.starts_with("\n Performance counter stats for 'true' (2 runs):\n"));
        assert!(
            text.contains("CPUs utilized            ( +-  5.46% )\n"),
            "{text}"
        );
        assert!(text.contains(
            "\n        0.00129347 +- 0.00000427 seconds time elapsed  ( +-  0.33% )\n\n"
        ));
    }

    /// perf 6.1's `-x,` and `-j` lines (`perf stat -A -a -x,` /
    /// `--per-socket -j`), the digits ours.
    #[test]
    fn csv_and_json_lines_are_perfs() {
        let report = StatReport {
            rows: vec![
                row("CPU0", "task-clock", Some(15.92), "msec", 15_921_929),
                row("CPU1", "page-faults", Some(24.0), "", 15_932_719),
                row("", "cycles", None, "", 0),
            ],
            elapsed_s: Some(0.0159),
            ..StatReport::default()
        };
        assert_eq!(
            csv(&report, ","),
            "CPU0,15.92,msec,task-clock,15921929,100.00,1.001,CPUs utilized\n\
             CPU1,24,,page-faults,15932719,100.00,,\n\
             CPU0,<not supported>,,cycles,0,100.00,,\n\
             CPU1,<not supported>,,cycles,0,100.00,,\n"
        );
        let mut s = row("S0", "page-faults", Some(254.0), "", 27_826_395);
        s.counters = Some(2);
        let clock = {
            let mut c = row("S0", "task-clock", Some(27.830832), "msec", 27_830_832);
            c.counters = Some(2);
            c
        };
        let j = json(&StatReport {
            rows: vec![clock, s],
            ..StatReport::default()
        });
        assert_eq!(
            j.lines().nth(1).unwrap(),
            r#"{"socket" : "S0", "aggregate-number" : 2, "counter-value" : "254.000000", "unit" : "", "event" : "page-faults", "event-runtime" : 27826395, "pcnt-running" : 100.00, "metric-value" : 9.126569, "metric-unit" : "K/sec"}"#
        );
    }

    /// `-M` metrics on lines of their own: perf's `%8.1f` and `UNIT  NAME`
    /// (`%8.2f` and the name without a unit), in every form.
    #[test]
    fn metrics_take_perfs_new_line_forms() {
        let metric = |name: &str, value, unit: &str| ReportMetric {
            time: None,
            name: name.into(),
            domain: String::new(),
            value,
            unit: unit.into(),
            reliability: None,
            estimate: false,
            missing: None,
            repeats: Vec::new(),
        };
        let report = StatReport {
            metrics: vec![
                metric("tma_frontend_bound", Some(51.04), "%"),
                metric("IPC", Some(1.234), ""),
                metric("CPI", None, ""),
            ],
            ..StatReport::default()
        };
        let csv = csv(&report, ",");
        assert_eq!(csv, ",,,,51.0,%  tma_frontend_bound\n,,,,1.23,IPC\n");
        let json = json(&report);
        assert_eq!(
            json.lines().next().unwrap(),
            r#"{"metric-value" : 51.040000, "metric-unit" : "%  tma_frontend_bound"}"#
        );
        let mut o = PerfOptions::new(PerfForm::Text);
        o.target = "'x'".into();
        let text = totals(&report, &o);
        let line = format!("{} #     51.0 %  tma_frontend_bound  ", " ".repeat(49));
        assert!(text.contains(&format!("{line}\n")), "{text:?}");
    }

    /// `-I` in the text table: perf's header once, then `%6lu.%09lu`.
    #[test]
    fn intervals_carry_perfs_header_and_time() {
        let mut r = row("S0-D0-C1", "page-faults", Some(9.0), "", 12_850_000);
        r.time = Some(0.121736928);
        let mut w = PerfIntervals::new(PerfOptions::new(PerfForm::Text));
        let one = StatReport {
            rows: vec![r],
            ..StatReport::default()
        };
        let first = w.format(&one, 0.1);
        let want = [
            "#           time core            cpus             counts unit events",
            "     0.121736928 S0-D0-C1           1                  9      page-faults                                                        ",
            "",
        ];
        assert_eq!(first, want.join("\n"));
        assert!(!w.format(&one, 0.1).starts_with('#'));
    }

    /// `--per-thread -a`: perf 6.1 on this machine (`perf stat
    /// --per-thread -a -x, -e task-clock sleep 0.2`, then the text table),
    /// lines kept verbatim; each event's threads by count, largest first,
    /// the threads that counted nothing and the event counted nowhere left
    /// out. The elapsed times are those the printed utilizations imply.
    #[test]
    fn per_thread_system_wide_rows_are_perfs() {
        let thread = |tid: i32, event: &str, v: f64, unit: &str, run: u64| {
            row(&format!("tid {tid}"), event, Some(v), unit, run)
        };
        let report = StatReport {
            rows: vec![
                thread(31586, "task-clock", 77.231662, "msec", 77_231_662),
                thread(31590, "task-clock", 147.145543, "msec", 147_145_543),
                thread(15, "task-clock", 0.0, "msec", 0),
                thread(31586, "context-switches", 22.0, "", 77_231_662),
                thread(15, "context-switches", 0.0, "", 50_000),
                row("", "cycles", None, "", 0),
            ],
            ..StatReport::default()
        };
        let mut o = PerfOptions::new(PerfForm::Csv(",".into()));
        o.comms = vec![
            (31586, "cc1".into()),
            (31590, "lto cgu.00".into()),
            (15, "rcu_preempt".into()),
        ];
        o.elapsed = (0.2016, 0.0);
        o.system_wide = true;
        let csv = totals(&report, &o);
        let mut lines = csv.lines();
        assert_eq!(
            lines.next(),
            Some("lto cgu.00-31590,147.15,msec,task-clock,147145543,100.00,0.730,CPUs utilized")
        );
        assert_eq!(
            lines.next(),
            Some("cc1-31586,77.23,msec,task-clock,77231662,100.00,0.383,CPUs utilized")
        );
        assert!(lines
            .next()
            .unwrap()
            .starts_with("cc1-31586,22,,context-switches,"));
        assert_eq!(lines.next(), None, "{csv}");
        // Not system-wide (-p): every thread, zero counts included.
        o.system_wide = false;
        assert!(totals(&report, &o).contains("\nrcu_preempt-15,0,,context-switches,50000,100.00,"));
        let mut o = PerfOptions::new(PerfForm::Text);
        o.comms = vec![(31590, "lto cgu.00".into())];
        o.elapsed = (0.209, 0.0);
        o.system_wide = true;
        let one = StatReport {
            rows: vec![thread(31590, "task-clock", 114.51, "msec", 114_510_000)],
            ..StatReport::default()
        };
        assert!(totals(&one, &o).contains(
            "\n      lto cgu.00-31590                114.51 msec task-clock                       #    0.548 CPUs utilized          \n"
        ));
    }

    /// `--summary`: perf 6.1's `perf stat -x, -A -a -I 200
    /// --interval-count 1 --summary -e task-clock,cycles` totals, verbatim
    /// (the elapsed time the utilization implies); `--no-csv-summary`
    /// drops the column, JSON and text have none.
    #[test]
    fn summary_lines_are_perfs() {
        let report = StatReport {
            rows: vec![
                row("CPU0", "task-clock", Some(204.032733), "msec", 204_032_733),
                row("", "cycles", None, "", 0),
            ],
            ..StatReport::default()
        };
        let mut o = PerfOptions::new(PerfForm::Csv(",".into()));
        o.elapsed = (0.2084, 0.0);
        o.summary = true;
        assert_eq!(
            totals(&report, &o),
            "         summary,CPU0,204.03,msec,task-clock,204032733,100.00,0.979,CPUs utilized\n         summary,CPU0,<not supported>,,cycles,0,100.00,,\n"
        );
        o.no_csv_summary = true;
        assert!(totals(&report, &o).starts_with("CPU0,204.03,msec,task-clock,"));
        o.form = PerfForm::Json;
        o.no_csv_summary = false;
        assert!(
            totals(&report, &o).starts_with("{\"cpu\" : \"0\", \"counter-value\" : \"204.032733\"")
        );
    }
}
