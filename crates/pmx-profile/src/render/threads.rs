//! `pmx report -T`: the READ records' totals per thread
//! ([`crate::profile::ThreadReads`]) in `perf report -T`'s layout: a
//! `# PID TID EVENT…` heading, then one line per thread, each column as
//! wide as its widest cell (at least 3 for the ids).

use crate::report::Report;
use std::io::Write;

/// One thread's line: pid, tid, a total per column.
type Thread = (u32, u32, Vec<u64>);

/// The table (or a line saying why there is none).
pub fn table(out: &mut dyn Write, report: &Report) -> std::io::Result<()> {
    let p = &report.profile;
    let r = &p.thread_reads;
    writeln!(out, "#")?;
    if r.threads.is_empty() {
        return writeln!(
            out,
            "# no per-thread totals: {} has no READ records (`perf record -s` writes them, with inherit_stat)",
            report.file
        );
    }
    let names: Vec<&str> = (r.events.iter())
        .map(|&e| p.events.get(e).map_or("?", |e| e.name.as_str()))
        .collect();
    let value = |t: &Thread, c: usize| t.2.get(c).copied().unwrap_or(0);
    let width = |n: usize, f: &dyn Fn(&Thread) -> String| {
        r.threads.iter().map(|t| f(t).len()).fold(n, usize::max)
    };
    let pw = width(3, &|t| t.0.to_string());
    let tw = width(3, &|t| t.1.to_string());
    let cw: Vec<usize> = (names.iter().enumerate())
        .map(|(c, n)| width(n.len(), &|t| value(t, c).to_string()))
        .collect();
    write!(out, "# {:>pw$}  {:>tw$}", "PID", "TID")?;
    for (n, w) in names.iter().zip(&cw) {
        write!(out, "  {n:>w$}")?;
    }
    writeln!(out)?;
    for t in &r.threads {
        write!(out, "  {:>pw$}  {:>tw$}", t.0, t.1)?;
        for (c, w) in cw.iter().enumerate() {
            write!(out, "  {:>w$}", value(t, c))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The totals in JSON: per thread `pid`, `tid` and `counts` by event name.
pub fn json(report: &Report) -> serde_json::Value {
    let p = &report.profile;
    let r = &p.thread_reads;
    let rows: Vec<serde_json::Value> = (r.threads.iter())
        .map(|t| {
            let counts: serde_json::Map<String, serde_json::Value> = (r.events.iter())
                .enumerate()
                .filter_map(|(c, &e)| {
                    Some((
                        p.events.get(e)?.name.clone(),
                        t.2.get(c).copied().unwrap_or(0).into(),
                    ))
                })
                .collect();
            serde_json::json!({"pid": t.0, "tid": t.1, "counts": counts})
        })
        .collect();
    rows.into()
}
