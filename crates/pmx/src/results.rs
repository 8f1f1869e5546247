//! Region results: what [`crate::region`](mod@crate::region) accumulated, per region and
//! thread, as one value that is written, read back and rendered.
//!
//! The JSON form ([`RegionResults::to_json`], format `pmx-regions/1`) is
//! the results file the Rust API, the C ABI (`pmx_write_results`) and
//! `pmx stat --regions` all write and read, so the three give the same
//! numbers for the same run. [`RegionResults::to_table`] and
//! [`RegionResults::to_csv`] render it for people and spreadsheets.

use crate::metrics::MetricValue;
use pmx_model::count::Count;
use serde::{Deserialize, Serialize};

/// The results file's format tag.
pub const FORMAT: &str = "pmx-regions/1";

/// One event counted in the regions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultEvent {
    /// The spec as given.
    pub name: String,
    /// Unit of the value (`msec` for the clocks).
    pub unit: Option<String>,
    /// Raw × scale = value in `unit`.
    pub scale: f64,
    /// `None` when counted; else why not (on the threads that tried).
    pub not_counted: Option<String>,
}

/// What an empty begin/end pair costs and counts, measured at start.
/// Every region's counts include this once per call: the reads happen as
/// late (begin) and as early (end) as they can, but a read's own work
/// falls partly inside the region. It is reported, not subtracted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Pairs measured.
    pub pairs: u64,
    /// CPU time of one begin/end pair in ns (median of batches, on the
    /// thread's CPU clock).
    pub pair_ns: f64,
    /// Mean raw count of each event inside an empty region.
    pub counts: Vec<f64>,
}

/// One region on one thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionRecord {
    /// The region's name.
    pub name: String,
    /// Thread number in the order threads first used pmx (0 = first).
    pub thread: usize,
    /// The thread's kernel id.
    pub tid: i32,
    /// Completed begin/end pairs.
    pub calls: u64,
    /// Wall-clock time inside, summed over calls (ns).
    pub wall_ns: u64,
    /// Per event (in [`RegionResults::events`] order): raw value and the
    /// enabled/running time accumulated inside the region.
    pub counts: Vec<Count>,
    /// Metrics of this region, when metrics were asked for.
    #[serde(default)]
    pub metrics: Vec<MetricValue>,
}

impl RegionRecord {
    /// Event `i`'s value scaled for multiplexing; `None` when it never
    /// ran.
    pub fn scaled(&self, i: usize) -> Option<f64> {
        self.counts.get(i).and_then(|c| c.scaled())
    }
}

/// Everything the regions of a process counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionResults {
    /// [`FORMAT`].
    pub format: String,
    /// The process.
    pub pid: u32,
    /// The events, in the order of every record's `counts`.
    pub events: Vec<ResultEvent>,
    /// The cost of an empty region, when measured.
    pub calibration: Option<Calibration>,
    /// Per region and thread, threads in order, regions in the order
    /// each thread first entered them.
    pub regions: Vec<RegionRecord>,
    /// Problems met (a region ended that was not open, …).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// A results file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Not JSON of the expected shape.
    #[error("not a pmx regions file: {0}")]
    Parse(#[from] serde_json::Error),
    /// Another format version.
    #[error("regions file format '{0}', this pmx reads '{FORMAT}'")]
    Format(String),
    /// Counts that do not match the events.
    #[error("region '{0}' has {1} counts for {2} events")]
    Shape(String, usize, usize),
}

fn fmt_value(v: Option<f64>) -> String {
    match v {
        None => "<not counted>".to_string(),
        Some(v) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
        Some(v) => format!("{v:.3}"),
    }
}

fn csv_field(s: &str, sep: &str) -> String {
    if s.contains(sep) || s.contains('"') || s.contains('\n') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl RegionResults {
    /// The JSON results file (pretty-printed, one object).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// Read a results file's text, checking its format and shape.
    pub fn from_json(text: &str) -> Result<RegionResults, ReadError> {
        let r: RegionResults = serde_json::from_str(text)?;
        if r.format != FORMAT {
            return Err(ReadError::Format(r.format));
        }
        for reg in &r.regions {
            if reg.counts.len() != r.events.len() {
                return Err(ReadError::Shape(
                    reg.name.clone(),
                    reg.counts.len(),
                    r.events.len(),
                ));
            }
        }
        Ok(r)
    }

    /// The record of `name` on thread number `thread`.
    pub fn get(&self, name: &str, thread: usize) -> Option<&RegionRecord> {
        self.regions
            .iter()
            .find(|r| r.name == name && r.thread == thread)
    }

    /// Event `i`'s value of `rec` in the event's unit, or `None` when the
    /// event was not counted or never ran.
    pub fn value(&self, rec: &RegionRecord, i: usize) -> Option<f64> {
        let e = self.events.get(i)?;
        if e.not_counted.is_some() {
            return None;
        }
        rec.scaled(i).map(|v| v * e.scale)
    }

    /// A table: one row per region and thread, one column per event and
    /// metric, then the calibration and notes.
    pub fn to_table(&self) -> String {
        let mut head: Vec<String> = vec![
            "region".into(),
            "thread".into(),
            "tid".into(),
            "calls".into(),
            "wall ms".into(),
        ];
        for e in &self.events {
            head.push(match &e.unit {
                Some(u) => format!("{} ({u})", e.name),
                None => e.name.clone(),
            });
        }
        let metric_names: Vec<String> = self
            .regions
            .first()
            .map(|r| r.metrics.iter().map(|m| m.name.clone()).collect())
            .unwrap_or_default();
        head.extend(metric_names.iter().cloned());
        let mut rows = vec![head];
        for r in &self.regions {
            let mut row = vec![
                r.name.clone(),
                r.thread.to_string(),
                r.tid.to_string(),
                r.calls.to_string(),
                format!("{:.3}", r.wall_ns as f64 / 1e6),
            ];
            for (i, e) in self.events.iter().enumerate() {
                row.push(if e.not_counted.is_some() {
                    "<not supported>".to_string()
                } else {
                    fmt_value(self.value(r, i))
                });
            }
            for name in &metric_names {
                let m = r.metrics.iter().find(|m| &m.name == name);
                row.push(match m.and_then(|m| m.value) {
                    Some(v) => format!("{v:.3}"),
                    None => "-".to_string(),
                });
            }
            rows.push(row);
        }
        let ncol = rows[0].len();
        let widths: Vec<usize> = (0..ncol)
            .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = format!(
            "\n pmx regions of process {}: {} region record(s)\n\n",
            self.pid,
            self.regions.len()
        );
        for row in &rows {
            let mut line = String::from(" ");
            for (c, cell) in row.iter().enumerate() {
                let pad = widths[c] - cell.chars().count();
                if c == 0 {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str("  ");
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        for r in &self.regions {
            for m in &r.metrics {
                if let Some(why) = &m.missing {
                    out.push_str(&format!(
                        " {} on thread {}: {} not computed: {why}\n",
                        r.name, r.thread, m.name
                    ));
                }
            }
        }
        for e in &self.events {
            if let Some(why) = &e.not_counted {
                out.push_str(&format!(" {}: not supported: {why}\n", e.name));
            }
        }
        if let Some(c) = &self.calibration {
            let counts: Vec<String> = self
                .events
                .iter()
                .zip(&c.counts)
                .filter(|(e, _)| e.not_counted.is_none())
                .map(|(e, v)| format!("{} {:.2}", e.name, v))
                .collect();
            out.push_str(&format!(
                "\n an empty region costs {:.0} ns per call and counts {} (included in every region's counts once per call, not subtracted)\n",
                c.pair_ns,
                counts.join(", ")
            ));
        }
        for n in &self.notes {
            out.push_str(&format!(" note: {n}\n"));
        }
        out
    }

    /// CSV with separator `sep`: one line per region, thread and event
    /// (`region, thread, tid, calls, wall_ns, event, value, unit, raw,
    /// enabled_ns, running_ns, status, reason`; `value` is scaled for
    /// multiplexing and in `unit`; `status` `counted`, `not-counted` or
    /// `not-supported` with the reason), then one per metric (`event` is
    /// the metric's name, `status` `metric` or `metric-missing` with the
    /// chain down to the missing input in `reason`). With `header`, a
    /// first line names the columns.
    pub fn to_csv(&self, sep: &str, header: bool) -> String {
        let mut out = String::new();
        if header {
            out.push_str(
                &[
                    "region",
                    "thread",
                    "tid",
                    "calls",
                    "wall_ns",
                    "event",
                    "value",
                    "unit",
                    "raw",
                    "enabled_ns",
                    "running_ns",
                    "status",
                    "reason",
                ]
                .join(sep),
            );
            out.push('\n');
        }
        for r in &self.regions {
            let lead = [
                csv_field(&r.name, sep),
                r.thread.to_string(),
                r.tid.to_string(),
                r.calls.to_string(),
                r.wall_ns.to_string(),
            ]
            .join(sep);
            for (i, e) in self.events.iter().enumerate() {
                let c = r.counts[i];
                let (value, status) = if e.not_counted.is_some() {
                    (String::new(), "not-supported")
                } else {
                    match self.value(r, i) {
                        Some(v) => (format!("{v}"), "counted"),
                        None => (String::new(), "not-counted"),
                    }
                };
                out.push_str(&format!(
                    "{lead}{sep}{}{sep}{value}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{status}{sep}{}\n",
                    csv_field(&e.name, sep),
                    e.unit.as_deref().unwrap_or(""),
                    c.value,
                    c.enabled,
                    c.running,
                    csv_field(e.not_counted.as_deref().unwrap_or(""), sep)
                ));
            }
            for m in &r.metrics {
                out.push_str(&format!(
                    "{lead}{sep}{}{sep}{}{sep}{}{sep}{sep}{sep}{sep}{}{sep}{}\n",
                    csv_field(&m.name, sep),
                    m.value.map(|v| v.to_string()).unwrap_or_default(),
                    csv_field(&m.unit, sep),
                    if m.value.is_some() {
                        "metric"
                    } else {
                        "metric-missing"
                    },
                    csv_field(m.missing.as_deref().unwrap_or(""), sep)
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RegionResults {
        RegionResults {
            format: FORMAT.to_string(),
            pid: 42,
            events: vec![
                ResultEvent {
                    name: "page-faults".into(),
                    unit: None,
                    scale: 1.0,
                    not_counted: None,
                },
                ResultEvent {
                    name: "task-clock".into(),
                    unit: Some("msec".into()),
                    scale: 1e-6,
                    not_counted: None,
                },
                ResultEvent {
                    name: "cycles".into(),
                    unit: None,
                    scale: 1.0,
                    not_counted: Some("no hardware PMU".into()),
                },
            ],
            calibration: Some(Calibration {
                pairs: 100,
                pair_ns: 900.0,
                counts: vec![0.0, 800.0, 0.0],
            }),
            regions: vec![RegionRecord {
                name: "solve".into(),
                thread: 0,
                tid: 7,
                calls: 2,
                wall_ns: 3_000_000,
                counts: vec![
                    Count {
                        value: 100,
                        enabled: 10,
                        running: 10,
                    },
                    Count {
                        value: 2_000_000,
                        enabled: 10,
                        running: 5,
                    },
                    Count::default(),
                ],
                metrics: vec![],
            }],
            notes: vec![],
        }
    }

    #[test]
    fn json_round_trips_and_checks_shape() {
        let r = sample();
        let back = RegionResults::from_json(&r.to_json()).unwrap();
        assert_eq!(back, r);
        let mut bad = r.clone();
        bad.regions[0].counts.pop();
        assert!(matches!(
            RegionResults::from_json(&bad.to_json()),
            Err(ReadError::Shape(..))
        ));
        let mut other = r;
        other.format = "pmx-regions/9".into();
        assert!(RegionResults::from_json(&other.to_json()).is_err());
        assert!(RegionResults::from_json("{").is_err());
    }

    #[test]
    fn values_are_scaled_for_multiplexing_and_unit() {
        let r = sample();
        let rec = r.get("solve", 0).unwrap();
        assert_eq!(r.value(rec, 0), Some(100.0));
        // Ran half the time: ×2, then ns → ms.
        assert_eq!(r.value(rec, 1), Some(4.0));
        assert_eq!(r.value(rec, 2), None);
    }

    #[test]
    fn table_and_csv_show_every_event() {
        let r = sample();
        let t = r.to_table();
        assert!(t.contains("solve"), "{t}");
        assert!(t.contains("<not supported>"), "{t}");
        assert!(t.contains("cycles: not supported: no hardware PMU"), "{t}");
        assert!(t.contains("an empty region costs 900 ns"), "{t}");
        let csv = r.to_csv(",", true);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(
            lines[1],
            "solve,0,7,2,3000000,page-faults,100,,100,10,10,counted,"
        );
        assert_eq!(
            lines[2],
            "solve,0,7,2,3000000,task-clock,4,msec,2000000,10,5,counted,"
        );
        assert_eq!(
            lines[3],
            "solve,0,7,2,3000000,cycles,,,0,0,0,not-supported,no hardware PMU"
        );
    }
}
