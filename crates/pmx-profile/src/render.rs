//! Renderers of a [`Report`]: perf's `--stdio` table ([`table`]) and JSON
//! ([`json`]). Folded stacks and flame graphs are [`Report::folded`] and
//! [`Report::flame_svg`]. [`diff`] renders differential profiles,
//! [`group`] groups side by side, [`threads`] the READ records' totals
//! per thread (`-T`).

pub mod diff;
pub mod group;
pub mod threads;

use crate::profile::{Profile, Row, SortKey};
use crate::report::{pct, Report};
use pmx_perfdata::read::FileFeatures;
use std::io::Write;

fn symbol_cell(r: &Row) -> String {
    match &r.symbol {
        Some(s) => format!("[{}] {s}", if r.kernel { 'k' } else { '.' }),
        None => String::new(),
    }
}

pub(crate) fn human(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else if n >= 10_000 {
        format!("{}K", n / 1000)
    } else {
        n.to_string()
    }
}

/// UTC date and time of a Unix time.
pub fn utc(secs: u64) -> String {
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The header of the table: the file, its host, CPU, command line, writer,
/// sample span, losses and events.
pub fn header_lines(report: &Report) -> Vec<String> {
    let (p, shown) = (&report.profile, report.file.as_str());
    let f = &p.features;
    let mut h = vec![format!(
        "pmx report: {shown} ({} mode, {:.1} MiB of records)",
        if p.pipe { "pipe" } else { "file" },
        p.data_bytes as f64 / (1 << 20) as f64
    )];
    if let Some(t) = &p.truncated {
        h.push(format!(
            "WARNING: {}",
            crate::truncation_warning(t, p.data_bytes)
        ));
    }
    h.extend(p.unnamed.iter().map(|w| format!("WARNING: {w}")));
    if let Some(secs) = report.captured {
        h.push(format!("captured on: {}", utc(secs)));
    }
    host_line(&mut h, f);
    if let Some(x) = &f.cpudesc {
        h.push(format!(
            "cpu: {x}{}",
            f.cpuid
                .as_ref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default()
        ));
    }
    if let Some(c) = &f.cmdline {
        h.push(format!("cmdline: {}", c.join(" ")));
    }
    if let Some(v) = &f.version {
        // perf writes its bare version ("6.1.187"); pmx writes "pmx 0.1.0".
        if v.starts_with(|c: char| c.is_ascii_digit()) {
            h.push(format!("written by: perf {v}"));
        } else {
            h.push(format!("written by: {v}"));
        }
    }
    if let Some((a, b)) = p.time_range {
        h.push(format!("samples span {:.3} s", (b - a) as f64 / 1e9));
    }
    if let Some(c) = &f.compressed {
        h.push(format!(
            "records zstd-compressed (level {}, ratio {})",
            c.level, c.ratio
        ));
    }
    if p.thread_reads.records > 0 {
        h.push(format!(
            "{} READ records: each thread's totals at its exit (perf record -s); -T shows them",
            p.thread_reads.records
        ));
    }
    loss_lines(&mut h, p);
    h
}

/// `host: NAME, Linux RELEASE, ARCH, N of M CPUs online`, from what the
/// file says.
fn host_line(h: &mut Vec<String>, f: &FileFeatures) {
    let mut host = Vec::new();
    if let Some(x) = &f.hostname {
        host.push(x.clone());
    }
    if let Some(x) = &f.osrelease {
        host.push(format!("Linux {x}"));
    }
    if let Some(x) = &f.arch {
        host.push(x.clone());
    }
    if let Some((online, avail)) = f.nrcpus {
        host.push(format!("{online} of {avail} CPUs online"));
    }
    if !host.is_empty() {
        h.push(format!("host: {}", host.join(", ")));
    }
}

/// Losses and throttling, events and their counts, and raw kernel addresses.
fn loss_lines(h: &mut Vec<String>, p: &Profile) {
    let lost_records = p.stats.lost;
    let throttles = p
        .stats
        .records
        .get(&pmx_perfdata::format::record_type::THROTTLE)
        .copied()
        .unwrap_or(0);
    h.push(format!(
        "lost: {lost_records} records (LOST), {} samples (LOST_SAMPLES); throttled {throttles} times",
        p.stats.lost_samples
    ));
    if p.stats.unknown_id_samples > 0 {
        h.push(format!(
            "{} samples with an unknown event id skipped",
            p.stats.unknown_id_samples
        ));
    }
    for e in &p.events {
        h.push(format!(
            "event '{}': {} samples, event count {}{}",
            e.name,
            e.samples,
            e.period,
            if e.lost + e.throttled > 0 {
                format!(", lost {}, throttled {}", e.lost, e.throttled)
            } else {
                String::new()
            }
        ));
    }
    if !p.kernel_symbols_used && p.events.iter().any(|e| e.rows.iter().any(|r| r.kernel)) {
        h.push("kernel addresses shown raw: the file was not recorded on this machine (or kallsyms is unreadable)".into());
    }
}

/// The hotspot table of every selected event, perf's `--stdio` layout,
/// after the header.
pub fn table(out: &mut dyn Write, report: &Report) -> std::io::Result<()> {
    for l in header_lines(report) {
        writeln!(out, "# {l}")?;
    }
    for &i in &report.selected {
        event_table(out, report, &report.profile.events[i])?;
    }
    Ok(())
}

/// One event's table (after the file's header).
pub(crate) fn event_table(
    out: &mut dyn Write,
    report: &Report,
    e: &crate::EventProfile,
) -> std::io::Result<()> {
    {
        writeln!(out, "#")?;
        writeln!(out, "# Samples: {} of event '{}'", human(e.samples), e.name)?;
        writeln!(out, "# Event count (approx.): {}", e.period)?;
        writeln!(out, "#")?;
        let (heads, nums) = headings(report);
        let cells: Vec<Vec<String>> = report
            .visible(e)
            .map(|r| cells(report, r, e.period))
            .collect();
        let mut widths: Vec<usize> = heads.iter().map(|h| h.len()).collect();
        for c in &cells {
            for (w, s) in widths.iter_mut().zip(c) {
                *w = (*w).max(s.chars().count());
            }
        }
        writeln!(out, "{}", aligned("#", &heads, &widths, nums).trim_end())?;
        writeln!(out, "#")?;
        for c in &cells {
            writeln!(out, "{}", aligned(" ", c, &widths, nums).trim_end())?;
        }
        if e.samples == 0 {
            writeln!(out, "  (no samples)")?;
        }
    }
    Ok(())
}

/// The column headings, and how many of them are numbers (right-aligned).
pub(crate) fn headings(report: &Report) -> (Vec<&'static str>, usize) {
    let mut heads: Vec<&str> = if report.options.children {
        vec!["Children", "Self", "Samples"]
    } else {
        vec!["Overhead", "Samples"]
    };
    let nums = heads.len();
    for k in &report.sort {
        heads.push(match k {
            SortKey::Comm => "Command",
            SortKey::Pid => "Pid",
            SortKey::Dso => "Shared Object",
            SortKey::Symbol => "Symbol",
            SortKey::Cpu => "CPU",
            SortKey::Tid => "Tid",
        });
    }
    if report.options.lines {
        heads.push("Source");
    }
    (heads, nums)
}

/// The cells of one row of an event whose total period is `total`.
pub(crate) fn cells(report: &Report, r: &Row, total: u64) -> Vec<String> {
    let mut c = vec![
        format!("{:.2}%", pct(r.period, total)),
        r.samples.to_string(),
    ];
    if report.options.children {
        c.insert(0, format!("{:.2}%", pct(r.children_period, total)));
    }
    for k in &report.sort {
        c.push(match k {
            SortKey::Comm => r.comm.clone().unwrap_or_default(),
            SortKey::Pid => r.pid.map(|x| x.to_string()).unwrap_or_default(),
            SortKey::Dso => r.dso.clone().unwrap_or_default(),
            SortKey::Symbol => symbol_cell(r),
            SortKey::Cpu => r.cpu.map(|x| format!("{x:03}")).unwrap_or_default(),
            SortKey::Tid => (r.thread.as_ref())
                .map(|(t, c)| format!("{t}:{c}"))
                .unwrap_or_default(),
        });
    }
    if report.options.lines {
        c.push(r.source.clone().unwrap_or_default());
    }
    c
}

/// One line of the table after `lead`: the first `nums` cells
/// right-aligned, the last as it is, the others left-aligned.
pub(crate) fn aligned<S: AsRef<str>>(
    lead: &str,
    cells: &[S],
    widths: &[usize],
    nums: usize,
) -> String {
    let n = cells.len();
    let mut line = String::from(lead);
    for (j, s) in cells.iter().enumerate() {
        let s = s.as_ref();
        if j < nums {
            line.push_str(&format!(" {s:>w$} ", w = widths[j]));
        } else if j + 1 == n {
            line.push_str(&format!(" {s}"));
        } else {
            line.push_str(&format!(" {s:<w$} ", w = widths[j]));
        }
    }
    line
}

/// The report as one JSON value: the file, its host, truncation, losses,
/// and per selected event its shown rows.
pub fn json(report: &Report) -> serde_json::Value {
    use serde_json::json;
    let p = &report.profile;
    let f = &p.features;
    let events: Vec<serde_json::Value> = report
        .selected
        .iter()
        .map(|&i| event_json(report, i))
        .collect();
    json!({
        "file": report.file,
        "mode": if p.pipe { "pipe" } else { "file" },
        "data_bytes": p.data_bytes,
        "host": {
            "hostname": f.hostname, "osrelease": f.osrelease, "arch": f.arch,
            "nrcpus_online": f.nrcpus.map(|n| n.0), "nrcpus_available": f.nrcpus.map(|n| n.1),
            "cpudesc": f.cpudesc, "cpuid": f.cpuid, "version": f.version, "cmdline": f.cmdline,
        },
        "truncated": p.truncated.as_ref().map(|t| json!({
            "unfinished": t.unfinished,
            "stream_cut": t.stream_cut,
            "declared_data_end": t.declared_data_end,
            "file_size": t.file_len,
            "partial_record_bytes": t.partial_bytes,
            "missing_features": t.missing_features.iter()
                .map(|&f| pmx_perfdata::format::feature::name(f).map_or_else(|| f.to_string(), str::to_string))
                .collect::<Vec<_>>(),
        })),
        "lost_records": p.stats.lost,
        "lost_samples": p.stats.lost_samples,
        "sort": report.options.sort.split(',').map(str::trim).collect::<Vec<_>>(),
        "kernel_symbols": p.kernel_symbols_used,
        "events": events,
        "threads": threads::json(report),
        "warnings": p.warnings,
    })
}

/// One event of the JSON report.
fn event_json(report: &Report, i: usize) -> serde_json::Value {
    use serde_json::json;
    let e = &report.profile.events[i];
    let rows: Vec<serde_json::Value> = report
        .visible(e)
        .map(|r| {
            let mut v = json!({
                "overhead": (pct(r.period, e.period) * 1e4).round() / 1e4,
                "samples": r.samples,
                "period": r.period,
                "comm": r.comm,
                "pid": r.pid,
                "dso": r.dso,
                "symbol": r.symbol,
                "kernel": r.kernel,
                "cpu": r.cpu,
            });
            if report.sort.contains(&SortKey::Tid) {
                if let Some((tid, comm)) = &r.thread {
                    v["tid"] = json!(tid);
                    v["thread_comm"] = json!(comm);
                }
            }
            if report.options.lines {
                v["source"] = json!(r.source);
            }
            if report.options.children {
                v["children"] = json!((pct(r.children_period, e.period) * 1e4).round() / 1e4);
                v["children_samples"] = json!(r.children_samples);
                v["children_period"] = json!(r.children_period);
            }
            v
        })
        .collect();
    json!({
        "name": e.name,
        "samples": e.samples,
        "period": e.period,
        "lost": e.lost,
        "throttled": e.throttled,
        "rows": rows,
    })
}
