//! `pmx report --group` (and `-M`): a sample-read group (or a group the
//! file describes, its members sampling on their own) as one table, as
//! perf's `report --group` lays it out: one share column per member (its
//! share of that member's total), then the leader's samples, every
//! member's count, one column per metric (value ± half the 95% interval,
//! `*` where the row has too few samples) and the keys. Events outside
//! groups keep their own table. The same in JSON and CSV.

use super::{aligned, cells as key_cells, event_table, header_lines, headings, human};
pub use crate::group_metrics::{evaluate, GroupMetrics};
use crate::group_metrics::{MetricCell, MIN_SAMPLES};
use crate::profile::{GroupTable, Row};
use crate::report::{pct, Report};
use std::io::Write;

/// Whether event `i` is a member (not the leader) of a selected group.
fn is_member(report: &Report, i: usize) -> bool {
    report.selected.iter().any(|&l| {
        report.profile.events[l]
            .group
            .as_ref()
            .is_some_and(|g| l != i && g.members.contains(&i))
    })
}

/// The table: the header, then per selected group its table (members are
/// not shown again alone), per other event its usual table. Without
/// `metrics` (`None`: not `--group`), [`super::table`].
pub fn table(
    out: &mut dyn Write,
    report: &Report,
    metrics: Option<&[GroupMetrics]>,
) -> std::io::Result<()> {
    let Some(metrics) = metrics else {
        return super::table(out, report);
    };
    for l in header_lines(report) {
        writeln!(out, "# {l}")?;
    }
    let events = &report.profile.events;
    if !report.selected.iter().any(|&i| events[i].group.is_some()) {
        writeln!(
            out,
            "# no group here: --group and -M need one, recorded with -e '{{A,B,…}}:S' (or '{{A,B,…}}')"
        )?;
    }
    let mut few = false;
    for &i in &report.selected {
        let e = &report.profile.events[i];
        match &e.group {
            Some(g) => {
                let m = metrics.iter().find(|m| m.event == i);
                few |= group_table(out, report, g, m)?;
            }
            None if is_member(report, i) => {}
            None => event_table(out, report, e)?,
        }
    }
    if few {
        writeln!(out, "#")?;
        writeln!(
            out,
            "# * fewer than {MIN_SAMPLES} samples: the interval is not to be trusted"
        )?;
    }
    Ok(())
}

/// The members' names.
fn names(report: &Report, g: &GroupTable) -> Vec<String> {
    g.members
        .iter()
        .map(|&m| report.profile.events[m].name.clone())
        .collect()
}

/// One group's table; true when a row had too few samples for its metrics.
fn group_table(
    out: &mut dyn Write,
    report: &Report,
    g: &GroupTable,
    metrics: Option<&GroupMetrics>,
) -> std::io::Result<bool> {
    let names = names(report, g);
    let totals = g.totals();
    // As perf: the members' samples (those with a count) and counts, summed.
    let events = &report.profile.events;
    let samples: u64 = g.members.iter().map(|&m| events[m].samples).sum();
    writeln!(out, "#")?;
    writeln!(
        out,
        "# Samples: {} of events 'anon group {{ {} }}'",
        human(samples),
        names.join(", ")
    )?;
    let count: u64 = totals.iter().sum();
    writeln!(out, "# Event count (approx.): {count}")?;
    for (&m, t) in g.members.iter().zip(&totals) {
        let e = &events[m];
        writeln!(out, "#   {}: {t} in {} samples", e.name, e.samples)?;
    }
    writeln!(out, "#")?;
    let mut heads: Vec<String> = names.clone();
    heads.push("Samples".into());
    heads.extend(names.iter().map(|n| format!("{n} count")));
    if let Some(m) = metrics {
        heads.extend(m.names.iter().map(|n| format!("{n} (±95%)")));
    }
    let nums = heads.len();
    let (keys, skip) = headings(report);
    heads.extend(keys.iter().skip(skip).map(|s| s.to_string()));
    let mut few = false;
    let rows: Vec<Vec<String>> = g
        .rows
        .iter()
        .enumerate()
        .filter(|(_, r)| pct(r.row.period, totals[0]) >= report.options.percent_limit)
        .take(report.options.limit.unwrap_or(usize::MAX))
        .map(|(k, r)| {
            let mut c: Vec<String> = (r.moments.sums.iter().zip(&totals))
                .map(|(s, t)| format!("{:.2}%", pct(*s, *t)))
                .collect();
            c.push(r.moments.samples.to_string());
            c.extend(r.moments.sums.iter().map(u64::to_string));
            if let Some(m) = metrics {
                few |= m.rows[k].iter().any(|c| c.few && c.value.is_some());
                c.extend(m.rows[k].iter().map(MetricCell::text));
            }
            c.extend(key_cells(report, &r.row, 0).into_iter().skip(skip));
            c
        })
        .collect();
    let mut widths: Vec<usize> = heads.iter().map(|h| h.chars().count()).collect();
    for c in &rows {
        for (w, s) in widths.iter_mut().zip(c) {
            *w = (*w).max(s.chars().count());
        }
    }
    writeln!(out, "{}", aligned("#", &heads, &widths, nums).trim_end())?;
    writeln!(out, "#")?;
    for c in &rows {
        writeln!(out, "{}", aligned(" ", c, &widths, nums).trim_end())?;
    }
    if let Some(m) = metrics {
        let all: Vec<String> = (m.total.iter())
            .map(|c| match c.value {
                Some(_) => c.text(),
                None => "not computed (an input is not a member of this group)".into(),
            })
            .collect();
        let pairs: Vec<String> = m
            .names
            .iter()
            .zip(&all)
            .map(|(n, v)| format!("{n} {v}"))
            .collect();
        writeln!(out, "#")?;
        writeln!(out, "# whole group: {}", pairs.join(", "))?;
    }
    Ok(few)
}

fn row_keys(r: &Row) -> serde_json::Value {
    serde_json::json!({
        "comm": r.comm, "pid": r.pid, "dso": r.dso, "symbol": r.symbol,
        "kernel": r.kernel, "cpu": r.cpu,
    })
}

/// [`super::json`] with a `group` object on every selected leader: the
/// members, their totals and per row the counts, shares and metrics.
pub fn json(report: &Report, metrics: &[GroupMetrics]) -> serde_json::Value {
    let mut json = super::json(report);
    add_json(&mut json, report, metrics);
    json
}

fn add_json(json: &mut serde_json::Value, report: &Report, metrics: &[GroupMetrics]) {
    for (slot, &i) in report.selected.iter().enumerate() {
        let Some(g) = &report.profile.events[i].group else {
            continue;
        };
        let m = metrics.iter().find(|m| m.event == i);
        let totals = g.totals();
        let rows: Vec<serde_json::Value> = g
            .rows
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let mut v = row_keys(&r.row);
                v["samples"] = r.moments.samples.into();
                v["counts"] = serde_json::json!(r.moments.sums);
                let shares: Vec<f64> = (r.moments.sums.iter().zip(&totals))
                    .map(|(s, t)| (pct(*s, *t) * 1e4).round() / 1e4)
                    .collect();
                v["shares"] = serde_json::json!(shares);
                if let Some(m) = m {
                    let cells = m.names.iter().zip(&m.rows[k]);
                    v["metrics"] = cells.map(|(n, c)| (n.clone(), c.json())).collect();
                }
                v
            })
            .collect();
        let mut obj = serde_json::json!({
            "members": names(report, g),
            "totals": totals,
            "rows": rows,
        });
        if let Some(m) = m {
            obj["metrics"] = m
                .names
                .iter()
                .zip(&m.total)
                .map(|(n, c)| (n.clone(), c.json()))
                .collect();
        }
        json["events"][slot]["group"] = obj;
    }
}

/// Quote a CSV field when it needs it.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Every selected group's rows as CSV: the leader, the keys, the samples,
/// per member its count and share, per metric its value, interval and
/// whether the row has too few samples.
pub fn csv(out: &mut dyn Write, report: &Report, metrics: &[GroupMetrics]) -> std::io::Result<()> {
    for &i in &report.selected {
        let Some(g) = &report.profile.events[i].group else {
            continue;
        };
        let m = metrics.iter().find(|m| m.event == i);
        let names = names(report, g);
        let mut head = vec![
            "group".to_string(),
            "comm".into(),
            "pid".into(),
            "dso".into(),
        ];
        head.extend(["symbol".into(), "cpu".into(), "samples".into()]);
        for n in &names {
            head.extend([format!("{n} count"), format!("{n} share")]);
        }
        for n in m.map(|m| m.names.as_slice()).unwrap_or(&[]) {
            head.extend([
                n.clone(),
                format!("{n} low"),
                format!("{n} high"),
                format!("{n} few samples"),
            ]);
        }
        writeln!(
            out,
            "{}",
            head.iter().map(|h| field(h)).collect::<Vec<_>>().join(",")
        )?;
        let totals = g.totals();
        for (k, r) in g.rows.iter().enumerate() {
            let opt = |x: Option<String>| x.unwrap_or_default();
            let mut c = vec![names[0].clone(), opt(r.row.comm.clone())];
            c.push(opt(r.row.pid.map(|p| p.to_string())));
            c.extend([opt(r.row.dso.clone()), opt(r.row.symbol.clone())]);
            c.extend([
                opt(r.row.cpu.map(|p| p.to_string())),
                r.moments.samples.to_string(),
            ]);
            for (s, t) in r.moments.sums.iter().zip(&totals) {
                c.extend([s.to_string(), format!("{:.4}", pct(*s, *t))]);
            }
            for cell in m.map(|m| m.rows[k].as_slice()).unwrap_or(&[]) {
                let num = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
                let (lo, hi) = match cell.value.zip(cell.half_width) {
                    Some((v, h)) => (Some(v - h), Some(v + h)),
                    None => (None, None),
                };
                c.extend([num(cell.value), num(lo), num(hi), cell.few.to_string()]);
            }
            writeln!(
                out,
                "{}",
                c.iter().map(|s| field(s)).collect::<Vec<_>>().join(",")
            )?;
        }
    }
    Ok(())
}
