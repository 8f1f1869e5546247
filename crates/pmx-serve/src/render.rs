//! The exposition formats: OpenMetrics 1.0 text and Prometheus text 0.0.4.
//!
//! A [`Family`] is a metric name, its type, help and unit, and its samples.
//! The two formats differ in small ways that [`render`] takes care of:
//!
//! | | OpenMetrics | Prometheus text |
//! |---|---|---|
//! | counter family line | `# TYPE pmx_events counter` | `# TYPE pmx_events_total counter` |
//! | counter sample | `pmx_events_total{…} 7` | `pmx_events_total{…} 7` |
//! | info | `# TYPE pmx_build info`, sample `pmx_build_info` | a gauge `pmx_build_info` |
//! | unit | `# UNIT pmx_x_seconds seconds` | not written |
//! | end | `# EOF` | nothing |
//!
//! Label values escape `\`, `"` and newline; help text escapes `\` and
//! newline (and `"` in OpenMetrics).

use std::fmt::Write as _;

/// Content type of OpenMetrics text.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Content type of the Prometheus text format.
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Which exposition format to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 text (`# EOF` at the end).
    OpenMetrics,
    /// Prometheus text format 0.0.4.
    Text,
}

impl Format {
    /// The format a client asks for in its `Accept` header: OpenMetrics
    /// when it lists `application/openmetrics-text` with a non-zero
    /// quality, else the Prometheus text format.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Text;
        };
        for range in accept.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("");
            if !media.eq_ignore_ascii_case("application/openmetrics-text") {
                continue;
            }
            let q = parts
                .filter_map(|p| p.strip_prefix("q="))
                .filter_map(|v| v.trim().parse::<f64>().ok())
                .next()
                .unwrap_or(1.0);
            if q > 0.0 {
                return Format::OpenMetrics;
            }
        }
        Format::Text
    }

    /// The `Content-Type` of this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => OPENMETRICS_CONTENT_TYPE,
            Format::Text => TEXT_CONTENT_TYPE,
        }
    }
}

/// The type of a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Monotonic; samples carry the `_total` suffix.
    Counter,
    /// Any value.
    Gauge,
    /// Constant 1 with labels (`_info` suffix).
    Info,
}

/// A sample value: integers print exactly, floats in Go-compatible form.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// An integer (raw counts).
    Int(u64),
    /// A float.
    Float(f64),
}

/// One sample: labels and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// `(name, value)` pairs, in the order written.
    pub labels: Vec<(&'static str, String)>,
    /// The value.
    pub value: Value,
}

/// A metric family.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// The family name, without `_total`/`_info` (`pmx_events`).
    pub name: &'static str,
    /// Type.
    pub kind: Kind,
    /// Help text.
    pub help: &'static str,
    /// Unit (`seconds`); the name must end with `_<unit>`.
    pub unit: Option<&'static str>,
    /// Samples.
    pub samples: Vec<Sample>,
}

impl Family {
    /// An empty family.
    pub fn new(name: &'static str, kind: Kind, help: &'static str) -> Family {
        Family {
            name,
            kind,
            help,
            unit: None,
            samples: Vec::new(),
        }
    }

    /// The same with a unit.
    pub fn with_unit(mut self, unit: &'static str) -> Family {
        self.unit = Some(unit);
        self
    }

    /// Add a sample.
    pub fn push(&mut self, labels: Vec<(&'static str, String)>, value: Value) {
        self.samples.push(Sample { labels, value });
    }
}

fn escape_label(out: &mut String, v: &str) {
    for ch in v.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn escape_help(out: &mut String, v: &str, format: Format) {
    for ch in v.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if format == Format::OpenMetrics => out.push_str("\\\""),
            c => out.push(c),
        }
    }
}

fn write_value(out: &mut String, v: Value) {
    match v {
        Value::Int(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Float(f) if f.is_nan() => out.push_str("NaN"),
        Value::Float(f) if f.is_infinite() => out.push_str(if f > 0.0 { "+Inf" } else { "-Inf" }),
        Value::Float(f) => {
            let _ = write!(out, "{f}");
            // "3" is an integer to an OpenMetrics parser; say it is a float.
            if f.fract() == 0.0 && f.abs() < 1e15 {
                out.push_str(".0");
            }
        }
    }
}

/// Write `families` (those without samples are left out) in `format`.
pub fn render(families: &[Family], format: Format) -> String {
    let mut out = String::with_capacity(4096);
    for f in families.iter().filter(|f| !f.samples.is_empty()) {
        let sample_name = match f.kind {
            Kind::Counter => format!("{}_total", f.name),
            Kind::Info => format!("{}_info", f.name),
            Kind::Gauge => f.name.to_string(),
        };
        let (meta_name, type_word) = match (format, f.kind) {
            (Format::OpenMetrics, Kind::Counter) => (f.name.to_string(), "counter"),
            (Format::OpenMetrics, Kind::Info) => (f.name.to_string(), "info"),
            (_, Kind::Gauge) => (f.name.to_string(), "gauge"),
            (Format::Text, Kind::Counter) => (sample_name.clone(), "counter"),
            (Format::Text, Kind::Info) => (sample_name.clone(), "gauge"),
        };
        let _ = writeln!(out, "# TYPE {meta_name} {type_word}");
        if let (Format::OpenMetrics, Some(u)) = (format, f.unit) {
            let _ = writeln!(out, "# UNIT {meta_name} {u}");
        }
        let _ = write!(out, "# HELP {meta_name} ");
        escape_help(&mut out, f.help, format);
        out.push('\n');
        for s in &f.samples {
            out.push_str(&sample_name);
            if !s.labels.is_empty() {
                out.push('{');
                for (i, (k, v)) in s.labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(k);
                    out.push_str("=\"");
                    escape_label(&mut out, v);
                    out.push('"');
                }
                out.push('}');
            }
            out.push(' ');
            write_value(&mut out, s.value);
            out.push('\n');
        }
    }
    if format == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn families() -> Vec<Family> {
        let mut c = Family::new("pmx_events", Kind::Counter, "Raw counts.\nPer CPU.");
        c.push(
            vec![("event", "page-faults".into()), ("cpu", "0".into())],
            Value::Int(42),
        );
        c.push(
            vec![("event", "a\"b\\c\nd".into()), ("cpu", "1".into())],
            Value::Int(7),
        );
        let mut g =
            Family::new("pmx_scrape_duration_seconds", Kind::Gauge, "Time.").with_unit("seconds");
        g.push(vec![], Value::Float(0.00025));
        let mut i = Family::new("pmx_build", Kind::Info, "Build.");
        i.push(vec![("version", "0.1.0".into())], Value::Int(1));
        let empty = Family::new("pmx_nothing", Kind::Gauge, "Never shown.");
        vec![c, g, i, empty]
    }

    #[test]
    fn openmetrics_text() {
        let t = render(&families(), Format::OpenMetrics);
        assert_eq!(
            t,
            "# TYPE pmx_events counter\n# HELP pmx_events Raw counts.\\nPer CPU.\n\
             pmx_events_total{event=\"page-faults\",cpu=\"0\"} 42\n\
             pmx_events_total{event=\"a\\\"b\\\\c\\nd\",cpu=\"1\"} 7\n\
             # TYPE pmx_scrape_duration_seconds gauge\n# UNIT pmx_scrape_duration_seconds seconds\n\
             # HELP pmx_scrape_duration_seconds Time.\npmx_scrape_duration_seconds 0.00025\n\
             # TYPE pmx_build info\n# HELP pmx_build Build.\npmx_build_info{version=\"0.1.0\"} 1\n# EOF\n"
        );
    }

    #[test]
    fn prometheus_text() {
        let t = render(&families(), Format::Text);
        assert!(t.starts_with("# TYPE pmx_events_total counter\n# HELP pmx_events_total"));
        assert!(t.contains("# TYPE pmx_build_info gauge\n"));
        assert!(!t.contains("# UNIT"));
        assert!(!t.contains("# EOF"));
        assert!(!t.contains("pmx_nothing"));
    }

    #[test]
    fn floats() {
        let mut s = String::new();
        write_value(&mut s, Value::Float(3.0));
        s.push(' ');
        write_value(&mut s, Value::Float(f64::NAN));
        s.push(' ');
        write_value(&mut s, Value::Float(f64::NEG_INFINITY));
        s.push(' ');
        write_value(&mut s, Value::Float(1e20));
        assert_eq!(s, "3.0 NaN -Inf 100000000000000000000");
    }

    #[test]
    fn negotiation() {
        let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::negotiate(Some(prom)), Format::OpenMetrics);
        assert_eq!(Format::negotiate(Some("text/plain")), Format::Text);
        assert_eq!(Format::negotiate(None), Format::Text);
        assert_eq!(
            Format::negotiate(Some("application/openmetrics-text; q=0")),
            Format::Text
        );
    }
}
