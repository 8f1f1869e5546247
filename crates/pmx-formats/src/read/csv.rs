//! CSV: pmx's `-x SEP` columns (totals, or intervals with `time` first;
//! with or without the header line) and perf's `-x SEP` columns (`[time,]
//! [domain,]value,unit,event,run_time,pct_running,…`, read by
//! `perf_csv`).
//!
//! The separator is the one of `,` `;` `:` `'` `|` and tab the first data
//! line has most of. Fields may be quoted with `"`. perf does not quote
//! `cpu/event=0x9c,umask=0x01/`: fields are joined back until each has
//! balanced slashes.

use super::{cpu_comment, num, ReadError};
use crate::report::{ReportMetric, ReportRow, RowStatus, SourceFormat, StatReport};
use crate::write::STATUS_WORDS;
use std::path::Path;

/// Split one CSV line, honouring double quotes.
pub fn split_csv(line: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    cur.push('"');
                    chars.next();
                } else {
                    quoted = false;
                }
            } else {
                cur.push(c);
            }
        } else if c == '"' && cur.is_empty() {
            quoted = true;
        } else if c == sep {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    out
}

/// perf does not quote `cpu/event=0x9c,umask=0x01/` in `-x,` output:
/// join fields until each has balanced slashes. An event's terms that
/// never close (`cpu/event=0x9c,` and then the rest of the line: a line
/// cut or run into the next) give the event as it opens.
fn rejoin_slashes(fields: Vec<String>, sep: char) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::with_capacity(fields.len());
    let mut open = false;
    let mut joined = 0;
    for f in fields {
        let odd = f.matches('/').count() % 2 == 1;
        if open {
            let last = out.last_mut().expect("open implies a field");
            last.push(sep);
            last.push_str(&f);
            joined += 1;
            if odd {
                open = false;
            }
        } else {
            // A cgroup path (`/user.slice`) opens no event.
            open = odd && !f.starts_with('/');
            joined = 0;
            out.push(f);
        }
    }
    match out.last() {
        // A unit (`K/sec`) has no terms; an event's first term has `=`.
        Some(last) if open && joined > 0 => {
            let (pmu, terms) = last.split_once('/').unwrap_or((last, ""));
            let first = terms.split(sep).next().unwrap_or("");
            if first.contains('=') {
                return Err(format!("{pmu}/{first}{sep}"));
            }
            Ok(out)
        }
        _ => Ok(out),
    }
}

/// The separator: of `,` `;` `:` `'` `|` and tab (perf's `-x SEP` takes
/// any), the one the first data line has most of (`,` on a tie).
fn separator(text: &str) -> char {
    let Some(l) = text
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with('#'))
    else {
        return ',';
    };
    let mut best = (',', l.matches(',').count());
    for c in [';', ':', '\'', '|', '\t'] {
        let n = l.matches(c).count();
        if n > best.1 {
            best = (c, n);
        }
    }
    best.0
}

/// Read CSV counts (pmx's or perf's) from `text`.
pub fn parse(path: &Path, text: &str) -> Result<StatReport, ReadError> {
    let mut report = StatReport::default();
    let sep = separator(text);
    let mut perf = super::perf_csv::PerfCsv::default();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with('#') {
            if let Some(cpu) = cpu_comment(line) {
                report.provenance.cpu = Some(cpu);
            }
            continue;
        }
        let f: Vec<String> =
            rejoin_slashes(split_csv(line, sep), sep).map_err(|event| ReadError::Line {
                path: path.to_path_buf(),
                line: n + 1,
                message: format!(
                    "the event '{event}…' never closes its terms with '/' (perf writes \
                     pmu/terms/): the line is cut short or runs into another"
                ),
            })?;
        let f: Vec<&str> = f.iter().map(|s| s.trim()).collect();
        // pmx header lines.
        // (perf's `--metric-only -I` header is ` time,cpu,GHz,…`.)
        if (f.first() == Some(&"time") && f.get(1) == Some(&"domain"))
            || (f.first() == Some(&"domain") && f.get(1) == Some(&"value"))
        {
            continue;
        }
        if pmx_line(&mut report, &f) || perf.line(&mut report, &f) {
            continue;
        }
        return Err(ReadError::Line {
            path: path.to_path_buf(),
            line: n + 1,
            message: format!("not a line of pmx stat -x, or perf stat -x, output: '{line}'"),
        });
    }
    if report.rows.is_empty() && report.printed.is_empty() {
        return Err(ReadError::NoCounts {
            path: path.to_path_buf(),
        });
    }
    Ok(report)
}

/// pmx: `[time,]domain,value,unit,event,status,running_pct,raw,enabled,
/// running,stddev,reason`; false when `f` is not such a line.
fn pmx_line(report: &mut StatReport, f: &[&str]) -> bool {
    let Some(k) = [0usize, 1].into_iter().find(|&k| {
        f.len() >= 11 + k
            && f.get(4 + k).is_some_and(|s| STATUS_WORDS.contains(s))
            && (k == 0 || num(f[0]).is_some())
    }) else {
        return false;
    };
    report.provenance.format = Some(if k == 1 {
        SourceFormat::PmxCsvIntervals
    } else {
        SourceFormat::PmxCsv
    });
    let time = if k == 1 { num(f[0]) } else { None };
    let reason = f.get(10 + k).copied().unwrap_or("");
    let status = f[4 + k];
    let Some(status) = RowStatus::from_word(status) else {
        report.metrics.push(ReportMetric {
            time,
            name: f[3 + k].to_string(),
            domain: f[k].to_string(),
            value: num(f[1 + k]),
            unit: f[2 + k].to_string(),
            reliability: num(f[5 + k]).map(|p| p / 100.0),
            estimate: status == "metric-estimate",
            missing: (!reason.is_empty()).then(|| reason.to_string()),
            repeats: Vec::new(),
        });
        return true;
    };
    let mut row = ReportRow::new(f[3 + k], f[k]);
    row.time = time;
    row.value = num(f[1 + k]);
    row.unit = f[2 + k].to_string();
    row.status = status;
    row.reason = reason.to_string();
    row.running_pct = num(f[5 + k]);
    row.raw = f[6 + k].parse::<u64>().ok();
    row.enabled_ns = f[7 + k].parse::<u64>().ok();
    row.running_ns = f[8 + k].parse::<u64>().ok();
    row.stddev_pct = num(f[9 + k]);
    report.rows.push(row);
    true
}
