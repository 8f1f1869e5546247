//! perf stat's default text output, every variant perf 3 to 6 prints:
//!
//! ```text
//!  Performance counter stats for 'make' (5 runs):
//!
//!          1,234.56 msec task-clock                #    0.998 CPUs utilized            ( +-  0.12% )
//!     3,123,456,789      cycles                    #    2.530 GHz                      (83.33%)
//!     <not supported>      stalled-cycles-backend
//!                                                  #    0.23  stalled cycles per insn
//!              TopdownL1 (cpu_core)                #     17.3 %  tma_frontend_bound
//!
//!        1.2371 +- 0.0012 seconds time elapsed  ( +-  0.10% )
//! ```
//!
//! Counts with or without thousands separators; `-I` time stamps (nine
//! decimals) before each line; the aggregation label of `-A` (`CPU3`),
//! `--per-core/-socket/-die/-node/-cache` (`S0-D0-C1 2` with the number of
//! CPUs) and `--per-thread` (`comm-pid`); a cgroup name after the event
//! (`-G`); multiplexing as `(83.33%)` or perf 3's `[83.33%]`; `( +- x% )`
//! spread; `<not counted>` and `<not supported>`; the `(msec)` of perf 4's
//! `task-clock (msec)`; `--metric-only` tables (a line of metric headers,
//! then lines of values). Every `#` metric lands in
//! [`StatReport::printed`], tied to the row it was printed beside.

use super::perf_fields::{label, metric_with_decimals, number, time_stamp, Label};
use super::ReadError;
use crate::report::{PrintedMetric, ReportRow, RowStatus, SourceFormat, StatReport, Tool};
use std::path::Path;

/// Units perf prints between a value and its event.
const UNITS: &[&str] = &[
    "msec", "ns", "us", "ms", "sec", "Joules", "MiB", "KiB", "GiB", "MB", "KB", "GB", "B", "Bytes",
    "W", "Watts", "MHz", "C", "%",
];

/// Does `text` read as perf's text table (its heading, its elapsed line,
/// or its `-I` heading)?
pub fn looks_like(text: &str) -> bool {
    text.contains("Performance counter stats for")
        || text.contains("seconds time elapsed")
        || text
            .lines()
            .any(|l| l.starts_with('#') && l.contains(" time "))
}

/// The tail of a line: perf's `(83.33%)`/`[83.33%]` running share and
/// `( +- 0.12% )` spread, taken off the end.
fn strip_tail(mut s: &str) -> (&str, Option<f64>, Option<f64>) {
    let (mut running, mut noise) = (None, None);
    loop {
        let t = s.trim_end();
        let open = match t.chars().last() {
            Some(')') => '(',
            Some(']') => '[',
            _ => break,
        };
        let Some(at) = t.rfind(open) else { break };
        let inner = t[at + 1..t.len() - 1].trim();
        let Some(pct) = inner.strip_suffix('%') else {
            break;
        };
        if let Some(n) = pct.trim().strip_prefix("+-") {
            noise = number(n.trim());
        } else if let Some(v) = number(pct.trim()) {
            running = Some(v);
        } else {
            break;
        }
        s = &t[..at];
    }
    (s, running, noise)
}

/// Parser state: what the lines so far said.
#[derive(Default)]
struct State {
    report: StatReport,
    /// The last row's time, domain and event (for metric lines of their own).
    last: (Option<f64>, String, String),
    /// `--metric-only`: the metric columns of the last header line.
    header: Vec<String>,
    /// How wide perf prints each header column's values (`%*s `: 20, or
    /// the unit's length + 1, and the space).
    widths: Vec<usize>,
}

/// Read perf stat's text output.
pub fn parse(path: &Path, text: &str) -> Result<StatReport, ReadError> {
    let mut st = State::default();
    let mut started = !text.contains("Performance counter stats for");
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim_end_matches('\r');
        let t = line.trim();
        if t.starts_with("Performance counter stats for") {
            heading(&mut st.report, t);
            started = true;
            continue;
        }
        // `-I --summary`: the intervals, under perf's `#  time …` header,
        // come before the totals' heading.
        if !started && t.starts_with('#') && t.split_whitespace().nth(1) == Some("time") {
            started = true;
        }
        if t.is_empty() || !started {
            continue;
        }
        if line.starts_with('#') {
            if let Some(cpu) = super::cpu_comment(line) {
                st.report.provenance.cpu = Some(cpu);
            } else {
                metric_header(&mut st, &line.replacen('#', " ", 1));
            }
            continue;
        }
        if footer(&mut st.report, t) {
            continue;
        }
        line_of(&mut st, t, line).map_err(|message| ReadError::Line {
            path: path.to_path_buf(),
            line: n + 1,
            message,
        })?;
    }
    let mut report = st.report;
    if report.rows.is_empty() && report.printed.is_empty() {
        return Err(ReadError::NoCounts {
            path: path.to_path_buf(),
        });
    }
    let timed = report.rows.iter().any(|r| r.time.is_some())
        || report.printed.iter().any(|m| m.time.is_some());
    report.provenance.format = Some(if timed {
        SourceFormat::PerfTextIntervals
    } else {
        SourceFormat::PerfText
    });
    Ok(report)
}

/// ` Performance counter stats for 'sleep 1' (5 runs):`
fn heading(report: &mut StatReport, t: &str) {
    let rest = t["Performance counter stats for".len()..].trim();
    let rest = rest.trim_end_matches(':');
    let (what, runs) = match rest.rfind(" (") {
        Some(at) if rest.ends_with("runs)") => (&rest[..at], rest[at + 2..].split(' ').next()),
        _ => (rest, None),
    };
    report.provenance.command = Some(what.trim().trim_matches('\'').to_string());
    report.runs = runs.and_then(|r| r.parse().ok());
}

/// `1.23 seconds time elapsed`, `0.5 seconds user`, `0.1 seconds sys`.
fn footer(report: &mut StatReport, t: &str) -> bool {
    let first = t.split_whitespace().next().and_then(number);
    if t.contains("seconds time elapsed") {
        report.elapsed_s = first;
        return true;
    }
    for (word, user) in [("seconds user", true), ("seconds sys", false)] {
        if t.ends_with(word) {
            let (u, s) = report.user_sys_s.unwrap_or((0.0, 0.0));
            let v = first.unwrap_or(0.0);
            report.user_sys_s = Some(if user { (v, s) } else { (u, v) });
            return true;
        }
    }
    false
}

/// The words of `line` with the column each ends at and whether two or
/// more spaces (or the line's start) come before it.
fn words(line: &str) -> Vec<(&str, usize, bool)> {
    let mut out = Vec::new();
    let mut gap = 2;
    let mut start = None;
    for (i, c) in line.char_indices().chain([(line.len(), ' ')]) {
        match (c == ' ', start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                out.push((&line[s..i], i, gap >= 2 || out.is_empty()));
                (start, gap) = (None, 1);
            }
            (true, None) => gap += 1,
            (false, Some(_)) => {}
        }
    }
    out
}

/// A `--metric-only` header: the metric columns (split on runs of two
/// or more spaces, a lone `%` joined to the name after it), without the
/// time and aggregation columns, and where each ends.
fn metric_header(st: &mut State, line: &str) {
    const NOT_METRICS: &[&str] = &[
        "time", "cpus", "cpu", "core", "socket", "die", "node", "cache", "thread", "counts",
        "unit", "events", "comm-pid", "CPU",
    ];
    let mut cols: Vec<(String, usize, usize)> = Vec::new();
    let mut pct = false;
    for (w, end, gap) in words(line) {
        if cols.is_empty() && NOT_METRICS.contains(&w) {
            // `#  time CPU`, `#  time socket cpus`: perf's titles.
            continue;
        }
        match cols.last_mut() {
            _ if w == "%" => {
                cols.push(("%".into(), end - 1, end));
                pct = true;
            }
            Some((last, _, at)) if pct || !gap => {
                last.push(' ');
                last.push_str(w);
                *at = end;
                pct = false;
            }
            _ => cols.push((w.to_string(), end - w.len(), end)),
        }
    }
    // A unit longer than perf's 20-wide column (`branch-misses of all
    // branches`) leaves one space before it: split it off the column
    // before (perf's long units are `EVENT of all …`).
    let mut split = Vec::with_capacity(cols.len());
    for (c, start, end) in cols {
        let cut = c.find(" of all ").and_then(|k| c[..k].rfind(' '));
        match cut {
            Some(k) => {
                let right = c[k + 1..].to_string();
                let mid = end.saturating_sub(right.len());
                split.push((c[..k].to_string(), start, mid.saturating_sub(1)));
                split.push((right, mid, end));
            }
            None => split.push((c, start, end)),
        }
    }
    let mut cols = split;
    if cols
        .iter()
        .any(|(c, ..)| c.contains("counts") || c.contains("events"))
    {
        st.header.clear();
        return;
    }
    cols.retain(|(c, ..)| !NOT_METRICS.contains(&c.as_str()));
    st.widths = cols
        .iter()
        .map(|(_, s, e)| if e - s > 20 { e - s + 2 } else { 21 })
        .collect();
    st.header = cols.into_iter().map(|(c, ..)| c).collect();
}

/// One line of the table: a count, a metric of its own, a header or the
/// values of `--metric-only`.
fn line_of(st: &mut State, t: &str, raw: &str) -> Result<(), String> {
    let (body, running, noise) = strip_tail(t);
    let (pre, post) = match body.split_once('#') {
        Some((a, b)) => (a, Some(b)),
        None => (body, None),
    };
    let pre = pre
        .replace("<not counted>", "<not-counted>")
        .replace("<not supported>", "<not-supported>");
    let tok: Vec<&str> = pre.split_whitespace().collect();
    let value_like = |s: &str| {
        number(s)
            .or_else(|| s.strip_suffix('%').and_then(number))
            .is_some()
            || s.starts_with("<not-")
    };
    let mut i = 0;
    let time = tok.first().and_then(|s| time_stamp(s));
    if time.is_some() && (tok.len() > 1 || post.is_some()) {
        i = 1;
    }
    let mut domain = String::new();
    if let Some(kind) = tok.get(i).and_then(|s| label(s)) {
        let nr =
            kind == Label::Topology && tok.get(i + 1).is_some_and(|s| s.parse::<u32>().is_ok());
        let at = i + 1 + usize::from(nr);
        if tok.get(at).is_none_or(|s| value_like(s)) {
            domain = tok[i].to_string();
            i = at;
        }
    }
    // A `--metric-only` line whose columns are all empty: its time stamp
    // and domain alone.
    if post.is_none() && (i >= tok.len() || (tok.len() == 1 && time.is_some())) {
        return Ok(());
    }
    if !tok.get(i).is_some_and(|s| value_like(s)) {
        if tok.len() == i && running.is_some() {
            running_of_last(st, time, running);
        }
        return no_value(st, time, domain, &tok[i..], post, t);
    }
    if post.is_none() && !st.header.is_empty() && tok[i..].iter().all(|s| value_like(s)) {
        let ends: Vec<usize> = words(raw).iter().skip(i).map(|w| w.1).collect();
        return metric_only(st, (time, domain), &tok[i..], &ends, raw.len());
    }
    let value = tok[i];
    let mut rest = &tok[i + 1..];
    let mut unit = "";
    if rest.len() >= 2 && UNITS.contains(&rest[0]) {
        unit = rest[0];
        rest = &rest[1..];
    }
    let Some(&event) = rest.first() else {
        return Err(format!("a count without an event: '{t}'"));
    };
    rest = &rest[1..];
    if rest.first() == Some(&"(msec)") {
        unit = "msec";
        rest = &rest[1..];
    }
    if !rest.is_empty() {
        // `-G`: the cgroup after the event.
        let cg = rest.join(" ");
        domain = if domain.is_empty() {
            cg
        } else {
            format!("{domain} {cg}")
        };
    }
    let mut row = ReportRow::new(event, &domain);
    row.origin = Tool::Perf;
    row.time = time;
    row.unit = unit.to_string();
    row.running_pct = running;
    row.stddev_pct = noise;
    match (value, number(value)) {
        (_, Some(v)) => row.value = Some(v),
        ("<not-supported>", _) => {
            row.status = RowStatus::NotSupported;
            row.reason = "perf: <not supported>".into();
        }
        (v, _) => {
            row.status = RowStatus::NotCounted;
            row.reason = format!("perf: {}", v.replace('-', " "));
        }
    }
    st.last = (time, domain.clone(), event.to_string());
    st.report.rows.push(row);
    if let Some(m) = post {
        printed(st, time, domain, event.to_string(), m);
    }
    Ok(())
}

/// A line without a count: a metric on a line of its own (`# 0.23
/// stalled cycles per insn`), or beside perf's group header
/// (`TopdownL1 (cpu_core)  # 17.3 %  tma_frontend_bound`).
/// perf prints a counter's running share after its last metric, on a
/// metric line of its own when the counter has several: the last row's.
fn running_of_last(st: &mut State, time: Option<f64>, running: Option<f64>) {
    let Some(row) = st.report.rows.last_mut() else {
        return;
    };
    if row.running_pct.is_none() && (time.is_none() || row.time == time) {
        row.running_pct = running;
    }
}

fn no_value(
    st: &mut State,
    time: Option<f64>,
    domain: String,
    rest: &[&str],
    post: Option<&str>,
    t: &str,
) -> Result<(), String> {
    let Some(m) = post else {
        if !rest.is_empty() && rest.iter().all(|w| number(w).is_none()) && time.is_none() {
            // A `--metric-only` header without its `#`.
            metric_header(st, t);
            return Ok(());
        }
        return Err(format!("not a line of perf stat's output: '{t}'"));
    };
    let (time, domain, event) = if rest.is_empty() {
        let (lt, ld, le) = st.last.clone();
        (time.or(lt), if domain.is_empty() { ld } else { domain }, le)
    } else {
        (time, domain, rest.join(" "))
    };
    printed(st, time, domain, event, m);
    Ok(())
}

/// The values of a `--metric-only` line, one per header column; where
/// perf left columns empty, each value under the column that ends
/// nearest to where it ends (`ends`), the columns laid out from the end
/// of the line (`len`) by their widths, as perf fills the line.
fn metric_only(
    st: &mut State,
    (time, domain): (Option<f64>, String),
    values: &[&str],
    ends: &[usize],
    len: usize,
) -> Result<(), String> {
    let mut columns: Vec<String> = st.header.clone();
    if values.len() != st.header.len() {
        if values.len() > st.header.len() || ends.len() != values.len() {
            return Err(format!(
                "{} values under {} --metric-only columns",
                values.len(),
                st.header.len()
            ));
        }
        let mut at = len;
        let mut col_ends = vec![0; st.widths.len()];
        for (j, w) in st.widths.iter().enumerate().rev() {
            col_ends[j] = at.saturating_sub(1);
            at = at.saturating_sub(*w);
        }
        columns = ends
            .iter()
            .map(|e| {
                let near = (0..col_ends.len()).min_by_key(|&j| col_ends[j].abs_diff(*e));
                near.map_or(String::new(), |j| st.header[j].clone())
            })
            .collect();
    }
    for (v, h) in values.iter().zip(columns) {
        let (value, unit, decimals) = metric_with_decimals(v, &h);
        st.report.printed.push(PrintedMetric {
            row: None,
            time,
            domain: domain.clone(),
            event: String::new(),
            value,
            unit,
            decimals,
            threshold: None,
        });
    }
    Ok(())
}

/// A `# value unit` metric (perf 6.3 prints two on a line:
/// `#  2.7% Heavy Operations  #  4.8% Light Operations`).
fn printed(st: &mut State, time: Option<f64>, domain: String, event: String, m: &str) {
    for part in m.split('#') {
        printed_one(st, time, domain.clone(), event.clone(), part);
    }
}

fn printed_one(st: &mut State, time: Option<f64>, domain: String, event: String, m: &str) {
    let m = m.trim();
    if m.is_empty() {
        return;
    }
    let (v, u) = m.split_once(char::is_whitespace).unwrap_or((m, ""));
    super::perf_fields::push_printed(&mut st.report, time, domain, event, v, u);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> StatReport {
        parse(Path::new("t"), text).unwrap()
    }

    #[test]
    fn intervals_before_the_summary_heading() {
        // perf 6.1 here: `perf stat -I 100 --summary -e page-faults …`.
        let r = read(
            "# started on Fri Nov 27 20:54:13 2026\n\n\
             #           time             counts unit events\n\
             \x20    0.131942216               3212      page-faults                      #  143.615 K/sec\n\
             \x20    0.255938728                  2      page-faults                      #  143.046 /sec\n\n\
             \x20Performance counter stats for 'sh -c true':\n\n\
             \x20             3214      page-faults                      #   88.426 K/sec\n\n\
             \x20      0.255996688 seconds time elapsed\n",
        );
        let rows: Vec<(Option<f64>, Option<f64>)> =
            r.rows.iter().map(|r| (r.time, r.value)).collect();
        assert_eq!(
            rows,
            [
                (Some(0.131942216), Some(3212.0)),
                (Some(0.255938728), Some(2.0)),
                (None, Some(3214.0))
            ]
        );
        assert_eq!(r.provenance.format, Some(SourceFormat::PerfTextIntervals));
    }

    #[test]
    fn a_running_share_after_the_last_metric_line_is_its_counters() {
        // perf 6.4 on Alder Lake (17-alderlake-perf-tools-next.txt).
        let r = read(
            "        32,110,597      cpu_atom/TOPDOWN_RETIRING.ALL/   #    1.334 M/sec                     \n\
             \x20                                                 #     18.4 %  tma_bad_speculation      (72.48%)\n\
             \x20      31,363,579      cpu_atom/TOPDOWN_RETIRING.ALL/   #    1.303 M/sec                       (73.37%)\n",
        );
        let shares: Vec<Option<f64>> = r.rows.iter().map(|r| r.running_pct).collect();
        assert_eq!(shares, [Some(72.48), Some(73.37)]);
    }

    #[test]
    fn a_table_with_metrics_spread_and_multiplexing() {
        let r = read(
            " Performance counter stats for 'make' (5 runs):\n\n\
             \x20        1,234.56 msec task-clock                #    0.998 CPUs utilized            ( +-  0.12% )\n\
             \x20   3,123,456,789      cycles:u                  #    2.530 GHz                      (83.33%)\n\
             \x20 <not supported>      stalled-cycles-backend\n\
             \x20                                                #    0.23  stalled cycles per insn\n\
             \x20            TopdownL1 (cpu_core)                #     17.3 %  tma_frontend_bound\n\n\
             \x20      1.2371 +- 0.0012 seconds time elapsed  ( +-  0.10% )\n\n\
             \x20      0.500000000 seconds user\n       0.100000000 seconds sys\n",
        );
        assert_eq!(r.provenance.command.as_deref(), Some("make"));
        assert_eq!(r.runs, Some(5));
        assert_eq!(r.elapsed_s, Some(1.2371));
        assert_eq!(r.user_sys_s, Some((0.5, 0.1)));
        assert_eq!(r.rows.len(), 3);
        assert_eq!(
            (r.rows[0].value, r.rows[0].unit.as_str()),
            (Some(1234.56), "msec")
        );
        assert_eq!(r.rows[0].stddev_pct, Some(0.12));
        assert_eq!(r.rows[1].event, "cycles:u");
        assert_eq!(r.rows[1].running_pct, Some(83.33));
        assert_eq!(r.rows[2].status, RowStatus::NotSupported);
        let p: Vec<(&str, Option<f64>, &str)> = r
            .printed
            .iter()
            .map(|m| (m.event.as_str(), m.value, m.unit.as_str()))
            .collect();
        assert_eq!(
            p,
            [
                ("task-clock", Some(0.998), "CPUs utilized"),
                ("cycles:u", Some(2.53), "GHz"),
                (
                    "stalled-cycles-backend",
                    Some(0.23),
                    "stalled cycles per insn"
                ),
                ("TopdownL1 (cpu_core)", Some(17.3), "% tma_frontend_bound"),
            ]
        );
    }

    #[test]
    fn intervals_aggregation_labels_and_cgroups() {
        let r = read(
            "#           time core         cpus             counts unit events\n\
             \x20    1.000123456 S0-D0-C0           2          1,234      cycles\n\
             \x20    1.000123456 S0-D0-C1           2      <not counted>      cycles\n\
             \x20    2.000123456 CPU3              5678      instructions   /sys   #  1.5 insn per cycle\n\
             \x20    2.000123456 perf-1234              42      page-faults\n",
        );
        assert_eq!(r.provenance.format, Some(SourceFormat::PerfTextIntervals));
        let d: Vec<(Option<f64>, &str, Option<f64>)> = r
            .rows
            .iter()
            .map(|r| (r.time, r.domain.as_str(), r.value))
            .collect();
        assert_eq!(
            d,
            [
                (Some(1.000123456), "S0-D0-C0", Some(1234.0)),
                (Some(1.000123456), "S0-D0-C1", None),
                (Some(2.000123456), "CPU3 /sys", Some(5678.0)),
                (Some(2.000123456), "perf-1234", Some(42.0)),
            ]
        );
        assert_eq!(r.printed[0].domain, "CPU3 /sys");
    }

    #[test]
    fn metric_only_tables() {
        let r = read(
            " Performance counter stats for 'system wide':\n\n\
             \x20     %  tma_retiring %  tma_backend_bound %  tma_frontend_bound %  tma_bad_speculation \n\
             \x20               25.1                 58.7                    2.7                    13.5 \n\n\
             \x20      8.004286201 seconds time elapsed\n",
        );
        let p: Vec<(Option<f64>, &str)> = r
            .printed
            .iter()
            .map(|m| (m.value, m.unit.as_str()))
            .collect();
        assert_eq!(
            p,
            [
                (Some(25.1), "% tma_retiring"),
                (Some(58.7), "% tma_backend_bound"),
                (Some(2.7), "% tma_frontend_bound"),
                (Some(13.5), "% tma_bad_speculation"),
            ]
        );
    }

    /// perf 6.1's `-a -A --metric-only -I` table (stat-display.c's
    /// `%20s ` columns, wider for `branch-misses of all branches`): empty
    /// columns of counters that did not count, and lines with none.
    #[test]
    fn metric_only_tables_with_empty_columns() {
        let r = read(concat!(
            "#           time CPU                      GHz       insn per cycle branch-misses of all branches \n",
            "     0.100143434 CPU0                      2.500                                         2.50% \n",
            "     0.100143434 CPU1                                           2.00                           \n",
            "     0.200385127 CPU0       \n",
        ));
        let p: Vec<(&str, Option<f64>, &str)> = r
            .printed
            .iter()
            .map(|m| (m.domain.as_str(), m.value, m.unit.as_str()))
            .collect();
        assert_eq!(
            p,
            [
                ("CPU0", Some(2.5), "GHz"),
                ("CPU0", Some(2.5), "% branch-misses of all branches"),
                ("CPU1", Some(2.0), "insn per cycle"),
            ]
        );
    }

    #[test]
    fn a_line_of_something_else_is_an_error_with_its_number() {
        let e = parse(
            Path::new("p.txt"),
            " Performance counter stats for 'x':\n\n 1,234 cycles\n what is this 12\n",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "p.txt:4: not a line of perf stat's output: 'what is this 12'"
        );
    }
}
