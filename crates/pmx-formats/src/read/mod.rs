//! Readers: a file of counts in any form pmx knows → [`StatReport`].
//!
//! The form is told by the first line that is neither blank nor a `#`
//! comment: `{` starts pmx's JSON document or JSON lines, or perf's `-j`
//! lines ([`json`], perf's in `perf_json`); perf's text table
//! ([`perf_text`]) is told by its heading (`Performance counter stats
//! for`), its `seconds time elapsed` line or its `-I` heading; anything
//! else is CSV — pmx's columns (totals or intervals, with or without a
//! header) or perf's `-x SEP` columns with `-I` time, `-A`/`--per-*`
//! domain columns, cgroups, spreads and metric columns ([`csv`], perf's in
//! `perf_csv`), and, when it is not, a text table cut from its heading. A `# cpu: ID`
//! comment names the CPU. [`rank`] reads the totals document of a
//! per-rank result file.

pub mod csv;
pub mod json;
mod perf_csv;
mod perf_fields;
mod perf_json;
pub mod perf_text;
pub mod rank;

use crate::report::StatReport;
use std::path::{Path, PathBuf};

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// It could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// It is not UTF-8 text.
    #[error("{}: not a text file", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// A line is not of any form known.
    #[error("{}:{line}: {message}", path.display())]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// An entry of a JSON document's `events` list has no `event`.
    #[error("{}: an entry without \"event\"", path.display())]
    EntryWithoutEvent {
        /// The file.
        path: PathBuf,
    },
    /// The file parsed but holds no counts.
    #[error("{}: no counts found", path.display())]
    NoCounts {
        /// The file.
        path: PathBuf,
    },
    /// A per-rank file without a pmx stat JSON document.
    #[error("{}: not a pmx stat --json report (no \"events\" list)", path.display())]
    NotReport {
        /// The file.
        path: PathBuf,
    },
}

/// Read the counts in `path` (any form in the module documentation).
pub fn read_file(path: &Path) -> Result<StatReport, ReadError> {
    let bytes = std::fs::read(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let text = String::from_utf8(bytes).map_err(|_| ReadError::NotText {
        path: path.to_path_buf(),
    })?;
    read_text(path, &text)
}

/// Read counts from `text`; `path` names the file in errors and the
/// report's provenance.
pub fn read_text(path: &Path, text: &str) -> Result<StatReport, ReadError> {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or("");
    let mut report = if first.starts_with('{') {
        json::parse(path, text)?
    } else if perf_text::looks_like(text) {
        perf_text::parse(path, text)?
    } else {
        // A text table without its heading and footer (cut from a
        // longer output) is read as such when it is not CSV (CSV lines
        // without counts, such as perf's `--metric-only` ones with no
        // metric, are CSV).
        // A damaged CSV line (fields, no column spacing) stays a CSV
        // error, with its line.
        csv::parse(path, text).or_else(|e| match e {
            ReadError::NoCounts { .. } => Err(e),
            ReadError::Line { line, .. } if csv_like(text.lines().nth(line - 1)) => Err(e),
            e => perf_text::parse(path, text).map_err(|_| e),
        })?
    };
    report.provenance.path = Some(path.to_path_buf());
    if !first.starts_with('{') {
        report.provenance.cut = cut(text);
    }
    Ok(report)
}

/// A line of separated fields (four or more commas or semicolons, no
/// run of spaces), not a row of perf's text table (`1,000,000  cycles`).
fn csv_like(line: Option<&str>) -> bool {
    let Some(l) = line else { return false };
    let fields = l.matches(',').count().max(l.matches(';').count());
    fields >= 4 && !l.trim().contains("  ")
}

/// Where `text` stops inside a line that holds something other than a
/// comment (`None` when it ends with an end of line).
fn cut(text: &str) -> Option<crate::report::Cut> {
    let last = text.rsplit('\n').next()?;
    let t = last.trim();
    if t.is_empty() || t.starts_with('#') {
        return None;
    }
    Some(crate::report::Cut {
        line: text.matches('\n').count() + 1,
        byte: text.len(),
    })
}

/// A number field: trimmed, finite, `None` when empty or not a number.
pub(crate) fn num(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// perf's `-x` form prints a software clock (`task-clock`, `cpu-clock`)
/// in msec with two decimals, and the counter's run time in ns beside it.
/// For those clocks the two are one time (perf's own rates divide by the
/// ns: `49` faults over `593034` ns is its `82.626 K/sec`), so where they
/// agree to the printed digits the value becomes the run time, and rates
/// computed from the file match perf's instead of being off by the
/// rounding (`0.59` msec gave 83.051 K/sec).
pub(crate) fn exact_clock(row: &mut crate::report::ReportRow) {
    let (Some(v), Some(rt)) = (row.value, row.runtime_ns) else {
        return;
    };
    let name = row.event.split([':', '/']).find(|s| !s.is_empty());
    let clock = matches!(name, Some("task-clock" | "cpu-clock"));
    let ms = rt / 1e6;
    if clock && row.unit == "msec" && rt > 0.0 && (v - ms).abs() <= 0.005 + 1e-9 * ms {
        row.value = Some(ms);
    }
}

/// A CPU named in a comment: `# cpu: GenuineIntel-6-5E-3`.
pub(crate) fn cpu_comment(line: &str) -> Option<String> {
    let l = line.trim_start_matches('#').trim();
    let (k, v) = l.split_once(':')?;
    let k = k.trim().to_ascii_lowercase();
    (k == "cpu" || k == "cpuid" || k == "pmx-cpu").then(|| v.trim().to_string())
}

/// A perf value field as a row: a number is counted; `<not supported>`
/// and `<not counted>` (or anything else not a number) say why not.
pub(crate) fn perf_value(row: &mut crate::report::ReportRow, value: &str) {
    use crate::report::RowStatus;
    match value {
        "<not supported>" => {
            row.status = RowStatus::NotSupported;
            row.reason = "perf: <not supported>".into();
        }
        v if v.starts_with("<not") => {
            row.status = RowStatus::NotCounted;
            row.reason = format!("perf: {v}");
        }
        v => match num(v) {
            Some(x) => row.value = Some(x),
            None => {
                row.status = RowStatus::NotCounted;
                row.reason = format!("perf: '{v}'");
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        read_text(Path::new("c.csv"), text).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_file_and_line() {
        assert_eq!(
            err("# cpu: GenuineIntel-6-5E-3\n\n12,,cycles,,\nnonsense\n"),
            "c.csv:4: not a line of pmx stat -x, or perf stat -x, output: 'nonsense'"
        );
        assert_eq!(err("# only a comment\n"), "c.csv: no counts found");
        assert_eq!(
            err("{\"event\":\"cycles\",\"time\":1}\n[1]\n"),
            "c.csv:2: expected a JSON object"
        );
        assert_eq!(
            err("{\"x\":1}\n"),
            "c.csv:1: neither a pmx nor a perf stat JSON line"
        );
        assert_eq!(
            err("{\"events\":[{\"value\":1}]}"),
            "c.csv: an entry without \"event\""
        );
    }

    #[test]
    fn a_text_that_stops_inside_a_line_says_where() {
        let read = |t: &str| read_text(Path::new("c.csv"), t).unwrap().provenance.cut;
        let cut = read("# x\n12,,cycles,,\n1000000,,CPU_CLK_U").unwrap();
        assert_eq!((cut.line, cut.byte), (3, 35));
        assert_eq!(
            cut.to_string(),
            "ends inside line 3 (at byte 35) with no end of line, so it may be cut short"
        );
        assert_eq!(read("12,,cycles,,\n"), None);
        // A line run into the next inside an event's terms.
        assert_eq!(
            err("800000,,cpu/event=0x9c,1000000,,CPU_CLK_UNHALTED.THREAD,500000000,100.00,,\n"),
            "c.csv:1: the event 'cpu/event=0x9c,…' never closes its terms with '/' (perf \
             writes pmu/terms/): the line is cut short or runs into another"
        );
        // A damaged count in a CSV line is that line's error, not a text
        // table's row.
        assert_eq!(
            err("100000\u{10},,CPU_CLK_UNHALTED.THREAD,500000000,100.00,,\n"),
            "c.csv:1: not a line of pmx stat -x, or perf stat -x, output: \
             '100000\u{10},,CPU_CLK_UNHALTED.THREAD,500000000,100.00,,'"
        );
        // A unit with a slash at the end of a line opens nothing.
        let r = read_text(
            Path::new("c"),
            "49,,page-faults,593034,100.00,82.626,K/sec\n",
        );
        assert_eq!(r.unwrap().rows.len(), 1);
        assert_eq!(read("12,,cycles,,\n# a comment"), None);
        // A JSON document is whole when it parses.
        let json = "{\"events\":[{\"event\":\"cycles\",\"value\":1}]}";
        assert_eq!(read(json), None);
    }

    #[test]
    fn the_cpu_comes_from_a_comment_or_the_document() {
        let r = read_text(Path::new("c"), "# cpu: GenuineIntel-6-5E-3\n12,,cycles,,\n").unwrap();
        assert_eq!(r.provenance.cpu.as_deref(), Some("GenuineIntel-6-5E-3"));
        assert_eq!(r.provenance.format, Some(crate::SourceFormat::PerfCsv));
        let r = read_text(
            Path::new("c"),
            "{\"cpu\":\"AuthenticAMD-25-11-1\",\"events\":[]}",
        )
        .unwrap();
        assert_eq!(r.provenance.cpu.as_deref(), Some("AuthenticAMD-25-11-1"));
        assert!(r.rows.is_empty());
    }
}
