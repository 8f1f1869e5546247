//! CSV: pmx's `-x SEP` columns (totals, or intervals with `time` first;
//! with or without the header line) and perf's `-x SEP` columns (`[time,]
//! [domain,]value,unit,event,run_time,pct_running,…`).
//!
//! The separator is `,`, or `;` when the first data line has a `;` and no
//! `,`. Fields may be quoted with `"`. perf does not quote
//! `cpu/event=0x9c,umask=0x01/`: fields are joined back until each has
//! balanced slashes.

use super::{cpu_comment, num, perf_value, ReadError};
use crate::report::{ReportMetric, ReportRow, RowStatus, SourceFormat, StatReport, Tool};
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
/// join fields until each has balanced slashes.
fn rejoin_slashes(fields: Vec<String>, sep: char) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(fields.len());
    let mut open = false;
    for f in fields {
        let odd = f.matches('/').count() % 2 == 1;
        if open {
            let last = out.last_mut().expect("open implies a field");
            last.push(sep);
            last.push_str(&f);
            if odd {
                open = false;
            }
        } else {
            open = odd;
            out.push(f);
        }
    }
    out
}

fn is_value_like(s: &str) -> bool {
    let s = s.trim();
    num(s).is_some() || s.starts_with("<not ")
}

/// The separator: `;` when the first data line has one and no `,`.
fn separator(text: &str) -> char {
    text.lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            if !l.contains(',') && l.contains(';') {
                ';'
            } else {
                ','
            }
        })
        .unwrap_or(',')
}

/// Read CSV counts (pmx's or perf's) from `text`.
pub fn parse(path: &Path, text: &str) -> Result<StatReport, ReadError> {
    let mut report = StatReport::default();
    let sep = separator(text);
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
        let f: Vec<String> = rejoin_slashes(split_csv(line, sep), sep);
        let f: Vec<&str> = f.iter().map(|s| s.trim()).collect();
        // pmx header lines.
        if f.first() == Some(&"time")
            || (f.first() == Some(&"domain") && f.get(1) == Some(&"value"))
        {
            continue;
        }
        if pmx_line(&mut report, &f) || perf_line(&mut report, &f) {
            continue;
        }
        return Err(ReadError::Line {
            path: path.to_path_buf(),
            line: n + 1,
            message: format!("not a line of pmx stat -x, or perf stat -x, output: '{line}'"),
        });
    }
    if report.rows.is_empty() {
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

/// perf: `[time,][domain,]value,unit,event,run_time_ns,pct_running,…`;
/// false when `f` is not such a line.
fn perf_line(report: &mut StatReport, f: &[&str]) -> bool {
    let Some(k) = (0usize..=2).find(|&k| {
        f.len() >= 5 + k
            && is_value_like(f[k])
            && num(f[k + 2]).is_none()
            && !f[k + 2].is_empty()
            && (f[k + 3].is_empty() || num(f[k + 3]).is_some())
            && (f[k + 4].is_empty() || num(f[k + 4]).is_some())
            && (k == 0 || num(f[0]).is_some() || k == 1)
            && (k < 2 || num(f[0]).is_some())
    }) else {
        return false;
    };
    let time = if k >= 1 { num(f[0]) } else { None };
    report.provenance.format = Some(if time.is_some() {
        SourceFormat::PerfCsvIntervals
    } else {
        SourceFormat::PerfCsv
    });
    // With a time, the domain is the field after it; without, the first.
    let domain = match (k, time.is_some()) {
        (2, _) => f[1],
        (1, false) => f[0],
        _ => "",
    };
    let mut row = ReportRow::new(f[k + 2], domain);
    row.origin = Tool::Perf;
    row.time = time;
    row.unit = f[k + 1].to_string();
    row.runtime_ns = num(f[k + 3]);
    row.running_pct = num(f[k + 4]);
    perf_value(&mut row, f[k]);
    report.rows.push(row);
    true
}
