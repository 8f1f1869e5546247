//! Reading interval files into a [`Timeline`] (the input of `pmx plot`).
//!
//! Four forms are recognised, by their first data line:
//!
//! - **pmx CSV** (`pmx stat -I MS -x SEP`): columns `time, domain, value,
//!   unit, event, status, running_pct, raw, enabled_ns, running_ns,
//!   stddev_pct, reason`. With a header line (`time<SEP>domain<SEP>…`) the
//!   separator is taken from it and columns are found by name; without one
//!   the separator is the one (among the characters after the first time,
//!   then `,` `;` tab `|` `:`) that splits the first row into those columns
//!   with a known status word in the sixth. Fields may be quoted with `"`.
//!   A row with an empty time (a totals row) is skipped.
//! - **pmx JSON lines** (`pmx stat -I MS --json`): one object per line with
//!   `time`, `event`, `value` (number or null), `unit` (string or null) and
//!   `domain_label` (or a `domain` object). Objects without a numeric
//!   `time` (a final totals object) are skipped.
//! - **perf CSV** (`perf stat -I MS -x SEP`, with or without `-A`,
//!   `--per-core`, `--per-socket`, `--per-thread`): `time, [domain,
//!   [cpus,]] value, unit, event, …`; `<not counted>` and `<not supported>`
//!   values are gaps.
//! - **perf JSON** (`perf stat -I MS -j`): `interval`, `counter-value`,
//!   `unit`, `event`, and `cpu`/`core`/`die`/`socket`/`node`/`thread`.
//!
//! Everywhere, blank lines, lines starting with `#` and pmx's own
//! diagnostics (`pmx: …`) are skipped. Anything else that does not parse is
//! an error naming its line.

use serde_json::Value;

/// Why an interval file could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TimelineError {
    /// No interval rows at all.
    #[error(
        "no interval rows (expected the output of 'pmx stat -I MS -x,' or \
         'pmx stat -I MS --json', or of 'perf stat -I MS -x,')"
    )]
    Empty,
    /// A line that is not an interval row.
    #[error("line {line}: {message}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}

/// Which program and form wrote the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFormat {
    /// `pmx stat -I MS -x SEP`.
    PmxCsv,
    /// `pmx stat -I MS --json`.
    PmxJson,
    /// `perf stat -I MS -x SEP`.
    PerfCsv,
    /// `perf stat -I MS -j`.
    PerfJson,
}

impl SourceFormat {
    /// A short description for messages.
    pub fn describe(self) -> &'static str {
        match self {
            SourceFormat::PmxCsv => "pmx interval CSV",
            SourceFormat::PmxJson => "pmx interval JSON lines",
            SourceFormat::PerfCsv => "perf interval CSV",
            SourceFormat::PerfJson => "perf interval JSON",
        }
    }
}

/// One measured value: one event in one domain over one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// End of the interval, in seconds (since the start, or since the epoch
    /// with absolute timestamps).
    pub time: f64,
    /// `CPU3`, `S0-C1`, `S0`, `tid 123`, …; empty for totals.
    pub domain: String,
    /// The event as named in the file.
    pub event: String,
    /// Its unit (`msec`), empty for plain counts.
    pub unit: String,
    /// The (scaled) delta over the interval; `None` when not counted.
    pub value: Option<f64>,
}

/// An event of a timeline, with its unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventInfo {
    /// The event's name.
    pub name: String,
    /// The first non-empty unit given for it, or empty.
    pub unit: String,
}

/// Everything read from an interval file, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// What wrote it.
    pub format: SourceFormat,
    /// The samples, in file order.
    pub samples: Vec<Sample>,
}

impl Timeline {
    /// Parse an interval file (any of the forms in the module
    /// documentation), with the error in the caller's type (`pmx plot`'s
    /// `PlotError` is one).
    pub fn parse<E: From<TimelineError>>(text: &str) -> Result<Timeline, E> {
        Timeline::read(text).map_err(E::from)
    }

    /// [`Timeline::parse`] with its own error type.
    pub fn read(text: &str) -> Result<Timeline, TimelineError> {
        let lines: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
            .filter(|(_, l)| !skippable(l))
            .collect();
        let Some(&(first_no, first)) = lines.first() else {
            return Err(TimelineError::Empty);
        };
        let timeline = if first.trim_start().starts_with('{') {
            parse_json(&lines)?
        } else if let Some(header) = Header::parse(first) {
            let header = header.map_err(|message| TimelineError::Line {
                line: first_no,
                message,
            })?;
            parse_csv(&lines[1..], &CsvForm::Pmx(header), SourceFormat::PmxCsv)?
        } else {
            let form = detect_csv(first).ok_or_else(|| TimelineError::Line {
                line: first_no,
                message: format!(
                    "not an interval row of pmx (stat -I MS -x, or --json) or perf \
                     (stat -I MS -x,): {}",
                    snippet(first)
                ),
            })?;
            let format = match form {
                CsvForm::Pmx(_) => SourceFormat::PmxCsv,
                CsvForm::Perf { .. } => SourceFormat::PerfCsv,
            };
            parse_csv(&lines, &form, format)?
        };
        if timeline.samples.is_empty() {
            return Err(TimelineError::Empty);
        }
        Ok(timeline)
    }

    /// The interval rows of a report, each interval's metric lines after
    /// its rows, as `pmx plot` reads them from a file (rows without a
    /// time are skipped); `None` when it has none.
    pub fn from_report(report: &crate::StatReport) -> Option<Timeline> {
        use crate::report::SourceFormat as Form;
        let format = match report.provenance.format {
            Some(Form::PmxJson | Form::PmxJsonIntervals) => SourceFormat::PmxJson,
            Some(Form::PerfCsv | Form::PerfCsvIntervals) => SourceFormat::PerfCsv,
            Some(Form::PerfJson | Form::PerfJsonIntervals) => SourceFormat::PerfJson,
            _ => SourceFormat::PmxCsv,
        };
        let rows = report.rows.iter().filter_map(|r| {
            let s = Sample {
                time: r.time?,
                domain: r.domain.clone(),
                event: r.event.clone(),
                unit: r.unit.clone(),
                value: r.value,
            };
            Some((false, s))
        });
        let metrics = report.metrics.iter().filter_map(|m| {
            let s = Sample {
                time: m.time?,
                domain: m.domain.clone(),
                event: m.name.clone(),
                unit: m.unit.clone(),
                value: m.value,
            };
            Some((true, s))
        });
        let mut tagged: Vec<(bool, Sample)> = rows.chain(metrics).collect();
        // Intervals in order of first appearance; in each, rows first.
        let mut times: std::collections::HashMap<u64, usize> = Default::default();
        for (_, s) in &tagged {
            let n = times.len();
            times.entry(s.time.to_bits()).or_insert(n);
        }
        tagged.sort_by_key(|(metric, s)| (times[&s.time.to_bits()], *metric));
        let samples: Vec<Sample> = tagged.into_iter().map(|(_, s)| s).collect();
        (!samples.is_empty()).then_some(Timeline { format, samples })
    }

    /// The events, in order of first appearance.
    pub fn events(&self) -> Vec<EventInfo> {
        let mut out: Vec<EventInfo> = Vec::new();
        for s in &self.samples {
            match out.iter_mut().find(|e| e.name == s.event) {
                Some(e) => {
                    if e.unit.is_empty() && !s.unit.is_empty() {
                        e.unit = s.unit.clone();
                    }
                }
                None => out.push(EventInfo {
                    name: s.event.clone(),
                    unit: s.unit.clone(),
                }),
            }
        }
        out
    }
}

fn skippable(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#') || t.starts_with("pmx:")
}

/// The start of a line, printable, for messages.
fn snippet(line: &str) -> String {
    let cut: String = line.chars().take(60).collect();
    let more = if cut.len() < line.len() { "…" } else { "" };
    format!("{:?}{more}", cut)
}

/// Split on `sep`, honouring `"`-quoted fields (`""` is a quote inside).
fn split_fields(line: &str, sep: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    loop {
        let trimmed = rest.trim_start_matches(' ');
        if let Some(body) = trimmed.strip_prefix('"') {
            let mut field = String::new();
            let mut chars = body.char_indices().peekable();
            let mut end = body.len();
            while let Some((i, c)) = chars.next() {
                if c == '"' {
                    if chars.peek().map(|&(_, n)| n) == Some('"') {
                        field.push('"');
                        chars.next();
                    } else {
                        end = i + 1;
                        break;
                    }
                } else {
                    field.push(c);
                }
            }
            let after = &body[end..];
            match after.find(sep) {
                Some(p) => {
                    field.push_str(after[..p].trim_end_matches(' '));
                    out.push(field);
                    rest = &after[p + sep.len()..];
                }
                None => {
                    field.push_str(after.trim_end_matches(' '));
                    out.push(field);
                    return out;
                }
            }
        } else {
            match rest.find(sep) {
                Some(p) => {
                    out.push(rest[..p].to_string());
                    rest = &rest[p + sep.len()..];
                }
                None => {
                    out.push(rest.to_string());
                    return out;
                }
            }
        }
    }
}

/// Column positions of a pmx CSV file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Header {
    sep: String,
    time: usize,
    domain: Option<usize>,
    value: usize,
    unit: Option<usize>,
    event: usize,
    /// The header line's fields, to skip repeated headers.
    names: Vec<String>,
}

/// pmx's documented column order and status words.
use crate::write::{INTERVAL_COLUMNS as PMX_COLUMNS, STATUS_WORDS};

impl Header {
    /// `None` when the line is not a header; `Some(Err)` when it is one
    /// that lacks a needed column.
    fn parse(line: &str) -> Option<Result<Header, String>> {
        let t = line.trim_start();
        let rest = t
            .strip_prefix("time")
            .or_else(|| t.strip_prefix("\"time\""))?;
        let sep: String = rest
            .chars()
            .take_while(|c| !c.is_alphanumeric() && *c != '"' && *c != '_')
            .collect();
        if sep.is_empty() {
            return None;
        }
        let names: Vec<String> = split_fields(t, &sep)
            .iter()
            .map(|f| f.trim().to_ascii_lowercase())
            .collect();
        let find = |n: &str| names.iter().position(|x| x == n);
        let (Some(time), Some(value), Some(event)) = (find("time"), find("value"), find("event"))
        else {
            return Some(Err(format!(
                "a header without time, value and event columns: {}",
                snippet(line)
            )));
        };
        Some(Ok(Header {
            time,
            domain: find("domain"),
            value,
            unit: find("unit"),
            event,
            sep,
            names,
        }))
    }

    fn documented(sep: &str) -> Header {
        Header {
            sep: sep.to_string(),
            time: 0,
            domain: Some(1),
            value: 2,
            unit: Some(3),
            event: 4,
            names: PMX_COLUMNS.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn needed(&self) -> usize {
        [
            Some(self.time),
            self.domain,
            Some(self.value),
            self.unit,
            Some(self.event),
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(0)
            + 1
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum CsvForm {
    Pmx(Header),
    Perf { sep: String },
}

/// Guess the form and separator from the first data line.
fn detect_csv(line: &str) -> Option<CsvForm> {
    let t = line.trim_start();
    let after_time = t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    if after_time.len() == t.len() {
        return None;
    }
    let run: String = after_time
        .chars()
        .take_while(|c| !c.is_alphanumeric() && !matches!(c, '<' | '"' | '.' | '-' | '+' | '_'))
        .take(8)
        .collect();
    let mut candidates: Vec<String> = (1..=run.chars().count())
        .rev()
        .map(|n| run.chars().take(n).collect())
        .collect();
    for s in [",", ";", "\t", "|", ":"] {
        if !candidates.iter().any(|c| c == s) {
            candidates.push(s.to_string());
        }
    }
    for sep in candidates
        .iter()
        .filter(|s| !s.trim().is_empty() || s.contains('\t'))
    {
        let fields = split_fields(line, sep);
        if fields.len() >= PMX_COLUMNS.len() && STATUS_WORDS.contains(&fields[5].trim()) {
            return Some(CsvForm::Pmx(Header::documented(sep)));
        }
        if perf_row(&fields).is_some() {
            return Some(CsvForm::Perf { sep: sep.clone() });
        }
    }
    None
}

fn is_number(s: &str) -> bool {
    let s = s.trim();
    !s.is_empty() && s.parse::<f64>().is_ok_and(f64::is_finite)
}

fn is_perf_value(s: &str) -> bool {
    is_number(s) || s.trim().starts_with("<not")
}

/// perf's fields: (time, domain, value, unit, event) positions.
fn perf_row(f: &[String]) -> Option<(usize, Option<usize>, usize, usize, usize)> {
    if f.len() < 4 || !is_number(&f[0]) {
        return None;
    }
    let (domain, value) = if is_perf_value(&f[1]) {
        (None, 1)
    } else if f.len() >= 6 && is_number(&f[2]) && is_perf_value(&f[3]) {
        (Some(1), 3)
    } else if f.len() >= 5 && is_perf_value(&f[2]) {
        (Some(1), 2)
    } else {
        return None;
    };
    let event = value + 2;
    if f.get(event).is_none_or(|e| e.trim().is_empty()) {
        return None;
    }
    Some((0, domain, value, value + 1, event))
}

/// Largest magnitude accepted for a time (seconds).
const MAX_TIME: f64 = 1e15;
/// Largest magnitude accepted for a value.
const MAX_VALUE: f64 = 1e30;

fn parse_time(s: &str) -> Result<f64, String> {
    let t = s.trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v.abs() < MAX_TIME => Ok(v),
        _ => Err(format!("time {t:?} is not a number of seconds")),
    }
}

fn check_number(v: Option<f64>, what: &str, max: f64) -> Result<f64, String> {
    match v {
        Some(v) if v.is_finite() && v.abs() < max => Ok(v),
        _ => Err(format!("{what} out of range")),
    }
}

fn parse_value(s: &str) -> Result<Option<f64>, String> {
    let t = s.trim();
    if t.is_empty() || t.starts_with("<not") {
        return Ok(None);
    }
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v.abs() < MAX_VALUE => Ok(Some(v)),
        _ => Err(format!("value {t:?} is not a number")),
    }
}

fn parse_csv(
    lines: &[(usize, &str)],
    form: &CsvForm,
    format: SourceFormat,
) -> Result<Timeline, TimelineError> {
    let mut samples = Vec::new();
    for &(no, line) in lines {
        let err = |message: String| TimelineError::Line { line: no, message };
        let sample = match form {
            CsvForm::Pmx(h) => {
                let f = split_fields(line, &h.sep);
                if f.len() < h.needed() {
                    return Err(err(format!(
                        "expected {} fields separated by {:?}, found {}: {}",
                        h.names.len().max(h.needed()),
                        h.sep,
                        f.len(),
                        snippet(line)
                    )));
                }
                let lower: Vec<String> = f.iter().map(|x| x.trim().to_ascii_lowercase()).collect();
                if lower == h.names || f[h.time].trim().is_empty() {
                    continue; // a repeated header, or a totals row
                }
                let col = |i: Option<usize>| i.map(|i| f[i].trim().to_string()).unwrap_or_default();
                Sample {
                    time: parse_time(&f[h.time]).map_err(err)?,
                    domain: col(h.domain),
                    event: f[h.event].trim().to_string(),
                    unit: col(h.unit),
                    value: parse_value(&f[h.value]).map_err(err)?,
                }
            }
            CsvForm::Perf { sep } => {
                let f = split_fields(line, sep);
                let Some((t, d, v, u, e)) = perf_row(&f) else {
                    return Err(err(format!(
                        "not a perf interval row (time{sep}[domain{sep}]value{sep}unit{sep}event…): {}",
                        snippet(line)
                    )));
                };
                Sample {
                    time: parse_time(&f[t]).map_err(err)?,
                    domain: d.map(|d| f[d].trim().to_string()).unwrap_or_default(),
                    event: f[e].trim().to_string(),
                    unit: f[u].trim().to_string(),
                    value: parse_value(&f[v]).map_err(err)?,
                }
            }
        };
        if sample.event.is_empty() {
            return Err(err("empty event name".to_string()));
        }
        samples.push(sample);
    }
    Ok(Timeline { format, samples })
}

/// A domain object (`{"kind":"cpu","cpu":0}`) as its label.
fn domain_label(d: &Value) -> String {
    let n = |k: &str| d.get(k).and_then(Value::as_i64).unwrap_or(0);
    match d.get("kind").and_then(Value::as_str) {
        Some("cpu") => format!("CPU{}", n("cpu")),
        Some("core") => format!("S{}-C{}", n("package"), n("core")),
        Some("socket") => format!("S{}", n("package")),
        Some("thread") => format!("tid {}", n("tid")),
        _ => String::new(),
    }
}

/// perf's `-j` domain keys.
pub(crate) fn perf_domain(o: &serde_json::Map<String, Value>) -> String {
    if let Some(c) = o.get("cpu") {
        return match c {
            Value::String(s) => format!("CPU{}", s.trim()),
            other => format!("CPU{other}"),
        };
    }
    for k in ["core", "die", "socket", "node", "thread", "cgroup"] {
        if let Some(Value::String(s)) = o.get(k) {
            return s.trim().to_string();
        }
    }
    String::new()
}

fn parse_json(lines: &[(usize, &str)]) -> Result<Timeline, TimelineError> {
    let mut samples = Vec::new();
    let mut format = SourceFormat::PmxJson;
    for &(no, line) in lines {
        let err = |message: String| TimelineError::Line { line: no, message };
        let v: Value = serde_json::from_str(line)
            .map_err(|e| err(format!("not a JSON object ({e}): {}", snippet(line))))?;
        let Some(o) = v.as_object() else { continue };
        let (time, perf) = match (o.get("time"), o.get("interval")) {
            (Some(Value::Number(t)), _) => (t.as_f64(), false),
            (None, Some(Value::Number(t))) => (t.as_f64(), true),
            _ => continue,
        };
        let time = check_number(time, "time", MAX_TIME).map_err(err)?;
        let Some(event) = o.get("event").and_then(Value::as_str) else {
            return Err(err("no \"event\" string".to_string()));
        };
        let unit = o
            .get("unit")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let (value, domain) = if perf {
            format = SourceFormat::PerfJson;
            let value = match o.get("counter-value") {
                Some(Value::String(s)) => parse_value(s).map_err(err)?,
                Some(Value::Number(n)) => {
                    Some(check_number(n.as_f64(), "value", MAX_VALUE).map_err(err)?)
                }
                _ => None,
            };
            (value, perf_domain(o))
        } else {
            let value = match o.get("value") {
                Some(Value::Number(n)) => {
                    Some(check_number(n.as_f64(), "value", MAX_VALUE).map_err(err)?)
                }
                Some(Value::Null) | None => None,
                Some(other) => return Err(err(format!("value {other} is not a number"))),
            };
            let domain = match o.get("domain_label").and_then(Value::as_str) {
                Some(l) => l.to_string(),
                None => o.get("domain").map(domain_label).unwrap_or_default(),
            };
            (value, domain)
        };
        if event.trim().is_empty() {
            return Err(err("empty event name".to_string()));
        }
        samples.push(Sample {
            time,
            domain,
            event: event.to_string(),
            unit,
            value,
        });
    }
    Ok(Timeline { format, samples })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Timeline {
        Timeline::read(t).unwrap_or_else(|e| panic!("{e}\n{t}"))
    }

    #[test]
    fn quoted_fields() {
        assert_eq!(split_fields("a,\"b,c\",d", ","), ["a", "b,c", "d"]);
        assert_eq!(
            split_fields("a,\"say \"\"hi\"\"\"", ","),
            ["a", "say \"hi\""]
        );
        assert_eq!(split_fields("a::b::::c", "::"), ["a", "b", "", "c"]);
        assert_eq!(split_fields("\"unterminated", ","), ["unterminated"]);
        assert_eq!(split_fields("", ","), [""]);
    }

    #[test]
    fn pmx_csv_with_header_and_odd_separator() {
        let t = parse(
            "time::domain::value::unit::event::status::running_pct::raw::enabled_ns::running_ns::stddev_pct::reason\n\
             1.000100::CPU0::5.5::msec::task-clock::counted::100.00::5500000::1000000::1000000::::\n\
             1.000100::CPU1::::msec::task-clock::not-counted::::0::1000000::0::::\"never ran, really\"\n",
        );
        assert_eq!(t.format, SourceFormat::PmxCsv);
        assert_eq!(t.samples.len(), 2);
        assert_eq!(t.samples[0].value, Some(5.5));
        assert_eq!(t.samples[1].domain, "CPU1");
        assert_eq!(t.samples[1].value, None);
        assert_eq!(
            t.events(),
            [EventInfo {
                name: "task-clock".into(),
                unit: "msec".into()
            }]
        );
    }

    #[test]
    fn pmx_csv_without_header() {
        for sep in [",", ";", "\t", "|", "::"] {
            let row = |t: &str, d: &str, v: &str| {
                [
                    t, d, v, "", "cycles", "counted", "100.00", "1", "2", "2", "", "",
                ]
                .join(sep)
            };
            let text = format!("{}\n{}\n", row("0.5", "", "10"), row("1.0", "", "20"));
            let t = parse(&text);
            assert_eq!(t.format, SourceFormat::PmxCsv, "{sep:?}");
            let v: Vec<_> = t.samples.iter().map(|s| (s.time, s.value)).collect();
            assert_eq!(v, [(0.5, Some(10.0)), (1.0, Some(20.0))], "{sep:?}");
        }
    }

    #[test]
    fn perf_csv_forms() {
        let a = parse(
            "# started on x\n     0.100195024,CPU0,101.45,msec,task-clock,101450047,100.00,1.015,CPUs utilized\n\
             \x20    0.100195024,CPU1,20,,context-switches,101515314,100.00,197.014,/sec\n",
        );
        assert_eq!(a.format, SourceFormat::PerfCsv);
        assert_eq!(a.samples[0].domain, "CPU0");
        assert_eq!(a.samples[1].value, Some(20.0));
        assert_eq!(a.samples[1].event, "context-switches");
        let core =
            parse("0.10;S0-D0-C0;2;107.54;msec;task-clock;107535731;100.00;1.075;CPUs utilized\n");
        assert_eq!(core.samples[0].domain, "S0-D0-C0");
        assert_eq!(core.samples[0].value, Some(107.54));
        let total = parse(
            "     0.100187463,<not supported>,,cycles,0,100.00,,\n     0.100187463,1,,context-switches,912320,100.00,1.096,K/sec\n",
        );
        assert_eq!(total.samples[0].value, None);
        assert_eq!(total.samples[0].domain, "");
        assert_eq!(total.samples[1].value, Some(1.0));
    }

    #[test]
    fn json_forms() {
        let t = parse(
            "{\"time\":1.0,\"domain\":{\"kind\":\"cpu\",\"cpu\":3},\"event\":\"e\",\"value\":2,\"unit\":null}\n\
             {\"time\":1.0,\"domain\":{\"kind\":\"total\"},\"domain_label\":\"\",\"event\":\"e\",\"value\":null,\"unit\":\"msec\"}\n\
             {\"events\":[],\"elapsed_s\":2.0}\n",
        );
        assert_eq!(t.samples.len(), 2);
        assert_eq!(t.samples[0].domain, "CPU3");
        assert_eq!(t.samples[1].value, None);
        let p = parse("{\"interval\" : 0.1, \"cpu\" : \"0\", \"counter-value\" : \"102.4\", \"unit\" : \"msec\", \"event\" : \"task-clock\"}\n");
        assert_eq!(p.format, SourceFormat::PerfJson);
        assert_eq!(p.samples[0].domain, "CPU0");
        assert_eq!(p.samples[0].value, Some(102.4));
    }

    #[test]
    fn errors_name_the_line() {
        let e = Timeline::read("").unwrap_err();
        assert!(matches!(e, TimelineError::Empty));
        let e = Timeline::read("# only a comment\n\n").unwrap_err();
        assert!(matches!(e, TimelineError::Empty));
        let e = Timeline::read("hello world\n").unwrap_err();
        assert!(matches!(e, TimelineError::Line { line: 1, .. }), "{e}");
        let e = Timeline::read("0.1,CPU0,5,,ev,1,100.00,,\n0.2,CPU0,x,,ev,1,100,,\n").unwrap_err();
        assert!(matches!(e, TimelineError::Line { line: 2, .. }), "{e}");
        let e = Timeline::read("time,domain,value,unit,event\n1,CPU0,5,,ev\n2,CPU0,x,,ev\n")
            .unwrap_err();
        assert!(matches!(e, TimelineError::Line { line: 3, .. }), "{e}");
        assert!(e.to_string().contains("\"x\" is not a number"), "{e}");
        let e = Timeline::read("time,domain,value,unit,event\n1,CPU0\n").unwrap_err();
        assert!(
            e.to_string().starts_with("line 2: expected 5 fields"),
            "{e}"
        );
        let e = Timeline::read("{\"time\":1,\"event\":\"a\",\"value\":1}\n{nope\n").unwrap_err();
        assert!(matches!(e, TimelineError::Line { line: 2, .. }), "{e}");
        let e = Timeline::read("1e999,CPU0,5,,ev,1,100.00,,\n").unwrap_err();
        assert!(matches!(e, TimelineError::Line { line: 1, .. }), "{e}");
    }

    #[test]
    fn garbage_never_panics() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let alphabet = b"0123456789.,;:|\t\"{}[]<>-CPUnotcuded \n#";
        for _ in 0..3000 {
            let mut s = String::new();
            for _ in 0..(x % 80) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.push(alphabet[(x % alphabet.len() as u64) as usize] as char);
            }
            let _ = Timeline::read(&s);
        }
    }
}
