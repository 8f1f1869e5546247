//! Renderers of an [`Annotation`]: text in `perf annotate --stdio`'s
//! layout ([`text`]: a percent column per event, a column per metric
//! when asked, then the address and the instruction, source lines
//! interleaved, the hottest instructions in colour or marked) and JSON
//! ([`json`], a stable schema).

use super::types::{
    Annotation, CycleCell, MemoryCell, MetricColumn, Syntax, HOT_PERCENT, WARM_PERCENT,
};
use crate::group_metrics::MIN_SAMPLES;
use std::io::Write;

/// The note on skid, said once in the header.
pub const SKID: &str = "skid: a sample's address is where the interrupt found the thread, \
usually the instruction after the one that caused the event (or a few after); \
read a hot instruction as \"this one or the one just before\". \
Precise events (:p, :pp: PEBS, IBS) skid less.";

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const RESET: &str = "\x1b[0m";

/// The header lines: the function, the binary, the events and their
/// totals, the skid note and what the marks mean.
pub fn header(a: &Annotation, colour: bool) -> Vec<String> {
    let syntax = match a.syntax {
        Syntax::Att => "AT&T",
        Syntax::Intel => "Intel",
    };
    let mut h = vec![format!(
        "pmx annotate: {} in {}{}, {} bytes, {}, {syntax} syntax ({})",
        a.symbol,
        a.path,
        a.build_id
            .as_ref()
            .map(|b| format!(" (build id {b})"))
            .unwrap_or_default(),
        a.end - a.start,
        a.arch,
        a.file
    )];
    for c in &a.events {
        h.push(format!(
            "{}: {} samples in {} ({:.2}% of the event's {}); percent: share of the function's period (perf's local period){}",
            c.name,
            c.symbol.samples,
            a.symbol,
            crate::report::pct(c.symbol.samples, c.file.samples),
            c.file.samples,
            if c.precise > 0 { ", precise event" } else { "" }
        ));
    }
    h.extend(metric_lines(a));
    if let Some(c) = &a.cycles {
        h.push(format!(
            "LBR cycles: average IPC {:.2}, IPC coverage {:.1}% ({} of {} instructions); IPC: \
             of the basic block measured there (its instructions per cycle), Cycle: a branch \
             from there, the average cycles since the branch before (min/max beside), as \
             perf annotate's columns",
            c.average_ipc(),
            c.coverage(),
            c.covered,
            c.total
        ));
    }
    h.push(SKID.to_string());
    h.push(if colour {
        format!("hot: {RED}red{RESET} from {HOT_PERCENT}% of a column, {GREEN}green{RESET} from {WARM_PERCENT}%")
    } else {
        format!("hot: '*' marks instructions with at least {HOT_PERCENT}% of a column, '+' from {WARM_PERCENT}%")
    });
    h
}

/// The metrics' header lines: each over the whole function, how an
/// instruction's is computed, what `*` means.
fn metric_lines(a: &Annotation) -> Vec<String> {
    let mut h = Vec::new();
    for m in &a.metrics {
        let g = &a.groups[m.group];
        let value = match m.symbol.value {
            Some(_) => m.symbol.text(),
            None => "not computed (an input is not a member of the group)".into(),
        };
        h.push(format!(
            "{} over {}: {value} ({} samples of {{{}}})",
            m.label,
            a.symbol,
            m.symbol.samples,
            g.members.join(",")
        ));
    }
    if !a.metrics.is_empty() {
        h.push(format!(
            "metrics per instruction: the formula over the members' deltas of the samples \
             there, ±95% interval; * fewer than {MIN_SAMPLES} samples: the interval is not to be trusted"
        ));
    }
    h
}

/// A metric's cell on instruction `i` (blank without samples there).
fn metric_cell(m: &MetricColumn, i: usize) -> String {
    m.instructions[i].map(|c| c.text()).unwrap_or_default()
}

/// The annotation as text; `colour`: ANSI colours for the hot
/// instructions (a terminal) instead of marks.
pub fn text(a: &Annotation, colour: bool, out: &mut dyn Write) -> std::io::Result<()> {
    for w in &a.warnings {
        writeln!(out, "# warning: {w}")?;
    }
    for l in header(a, colour) {
        writeln!(out, "# {l}")?;
    }
    writeln!(out, "#")?;
    let cols = a.events.len();
    let mut names = String::from("  ");
    let mut heads = String::from("  ");
    for c in &a.events {
        names.push_str(&format!("{:>17}", short(&c.name, 16)));
        heads.push_str("  Percent Samples");
    }
    let widths: Vec<usize> = (a.metrics.iter())
        .map(|m| {
            let cells = (0..a.instructions.len()).map(|i| metric_cell(m, i).chars().count());
            cells.fold(m.label.chars().count(), usize::max)
        })
        .collect();
    for (m, w) in a.metrics.iter().zip(&widths) {
        names.push_str(&" ".repeat(w + 2));
        heads.push_str(&format!("  {:>w$}", m.label));
    }
    let extra = extra_columns(a);
    for (label, cells) in &extra {
        let w = cells
            .iter()
            .map(|c| c.chars().count())
            .fold(label.chars().count(), usize::max);
        names.push_str(&" ".repeat(w + 2));
        heads.push_str(&format!("  {label:>w$}"));
    }
    if cols > 1 {
        writeln!(out, "{}", names.trim_end())?;
    }
    writeln!(
        out,
        "{heads} :  Address   Source code & disassembly of {}",
        a.symbol
    )?;
    writeln!(out, "{}", "-".repeat(heads.len() + 50))?;
    let blank = " ".repeat(heads.len());
    let mut last: Option<(&str, u32)> = None;
    for (i, ins) in a.instructions.iter().enumerate() {
        if let Some(s) = &ins.source {
            if last != Some((s.file.as_str(), s.line)) {
                let base = s.file.rsplit('/').next().unwrap_or(&s.file);
                let at = format!("{base}:{}", s.line);
                writeln!(
                    out,
                    "{blank} :  {at:<14} {}",
                    s.text.as_deref().unwrap_or("").trim()
                )?;
                last = Some((s.file.as_str(), s.line));
            }
        }
        let max = a.max_percent(i);
        let (mark, on, off) = match (colour, max >= HOT_PERCENT, max >= WARM_PERCENT) {
            (true, true, _) => (' ', RED, RESET),
            (true, false, true) => (' ', GREEN, RESET),
            (false, true, _) => ('*', "", ""),
            (false, false, true) => ('+', "", ""),
            _ => (' ', "", ""),
        };
        let mut row = format!("{mark} ");
        for c in 0..cols {
            row.push_str(&format!(
                "  {:>7.2} {:>7}",
                a.percent(i, c),
                ins.weights[c].samples
            ));
        }
        for (m, w) in a.metrics.iter().zip(&widths) {
            row.push_str(&format!("  {:>w$}", metric_cell(m, i)));
        }
        for (label, cells) in &extra {
            let w = cells
                .iter()
                .map(|c| c.chars().count())
                .fold(label.chars().count(), usize::max);
            row.push_str(&format!("  {:>w$}", cells[i]));
        }
        writeln!(out, "{on}{row} :  {:>8x}:  {}{off}", ins.addr, ins.text)?;
    }
    summary(a, out)
}

/// The columns of the samples' precise records: (heading, cell per
/// instruction) — the LBR's IPC and cycles, the memory samples' average
/// weight and levels.
fn extra_columns(a: &Annotation) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    if let Some(c) = &a.cycles {
        let cells = |f: &dyn Fn(&CycleCell) -> String| c.instructions.iter().map(f).collect();
        out.push((
            "IPC".to_string(),
            cells(&|c| {
                if c.ipc == 0.0 {
                    String::new()
                } else {
                    format!("{:.2}", c.ipc)
                }
            }),
        ));
        out.push((
            "Cycle".to_string(),
            cells(&|c| match c.cycles {
                0 => String::new(),
                n => format!("{n} ({}/{})", c.min, c.max),
            }),
        ));
    }
    if !a.memory.is_empty() {
        let cell = |f: &dyn Fn(&MemoryCell) -> String| -> Vec<String> {
            (a.memory.iter())
                .map(|m| m.as_ref().map(f).unwrap_or_default())
                .collect()
        };
        out.push((
            "Avg weight".to_string(),
            cell(&|m| format!("{:.1}", m.average())),
        ));
        out.push(("Memory levels".to_string(), cell(&|m| m.levels_text())));
    }
    out
}

/// The source lines by share, as `perf annotate -l`'s sorted summary.
fn summary(a: &Annotation, out: &mut dyn Write) -> std::io::Result<()> {
    for (c, col) in a.events.iter().enumerate() {
        let lines = a.lines_by_weight(c);
        let shown: Vec<_> = lines.iter().filter(|l| l.2.period > 0).take(10).collect();
        if shown.is_empty() {
            continue;
        }
        writeln!(
            out,
            "\nSource lines of {} by {} (heaviest first):",
            a.symbol, col.name
        )?;
        for (file, line, w) in shown {
            let base = file.rsplit('/').next().unwrap_or(file);
            writeln!(
                out,
                "  {:>7.2}% {:>7}  {base}:{line}",
                crate::report::pct(w.period, col.symbol.period),
                w.samples
            )?;
        }
    }
    Ok(())
}

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let t: String = s.chars().take(n - 1).collect();
        format!("{t}…")
    }
}

/// Write `a` to standard output: JSON, or text in colour when standard
/// output is a terminal and `allow_colour` (the caller's `NO_COLOR` is
/// not set).
pub fn to_stdout(a: &Annotation, as_json: bool, allow_colour: bool) -> std::io::Result<()> {
    use std::io::IsTerminal;
    let stdout = std::io::stdout();
    let colour = allow_colour && stdout.is_terminal();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if as_json {
        writeln!(out, "{:#}", json(a))?;
    } else {
        text(a, colour, &mut out)?;
    }
    out.flush()
}

/// The annotation as JSON: `symbol`, `dso`, `path`, `build_id`, `arch`,
/// `syntax`, `start`, `end`, `file`, `events` (per column: `name`,
/// `samples`, `period` in the function, `file_samples`, `file_period`,
/// `precise`), `skid`, `instructions` (`addr`, `offset`, `bytes`, `text`,
/// `target`?, `source` {`file`, `line`, `text`?}?, `samples`, `period`
/// and `percent` by event name, `metrics` by metric label: the cell or
/// null; `memory` {`samples`, `weight`, `average_weight`, `levels`:
/// [{`level`, `samples`}]} where memory samples landed; `ipc` where a
/// block measured by the LBR's cycles holds it, `cycles` {`average`,
/// `min`, `max`, `branches`} where branches from it were counted),
/// `metrics` (per metric and group: `name`, `label`, `members` and the
/// function's cell: `value`, `low`, `high`, `samples`, `few_samples`),
/// `lbr` {`average_ipc`, `ipc_coverage` (percent), `covered`,
/// `instructions`} when the branch stacks have cycles, `warnings`.
pub fn json(a: &Annotation) -> serde_json::Value {
    use serde_json::{json, Map, Value};
    let metrics: Vec<Value> = (a.metrics.iter())
        .map(|m| {
            let mut o = m.symbol.json();
            o["name"] = json!(m.name);
            o["label"] = json!(m.label);
            o["members"] = json!(a.groups[m.group].members);
            o
        })
        .collect();
    let events: Vec<Value> = a
        .events
        .iter()
        .map(|c| {
            json!({
                "name": c.name, "samples": c.symbol.samples, "period": c.symbol.period,
                "file_samples": c.file.samples, "file_period": c.file.period, "precise": c.precise,
            })
        })
        .collect();
    let instructions: Vec<Value> = a
        .instructions
        .iter()
        .enumerate()
        .map(|(i, ins)| {
            let (mut samples, mut period, mut percent) = (Map::new(), Map::new(), Map::new());
            for (c, col) in a.events.iter().enumerate() {
                samples.insert(col.name.clone(), json!(ins.weights[c].samples));
                period.insert(col.name.clone(), json!(ins.weights[c].period));
                percent.insert(
                    col.name.clone(),
                    json!((a.percent(i, c) * 100.0).round() / 100.0),
                );
            }
            let cells: Map<String, Value> = (a.metrics.iter())
                .map(|m| {
                    (
                        m.label.clone(),
                        m.instructions[i].map_or(Value::Null, |c| c.json()),
                    )
                })
                .collect();
            let bytes: Vec<String> = ins.bytes.iter().map(|b| format!("{b:02x}")).collect();
            let mut o = json!({
                "addr": ins.addr, "offset": ins.offset, "bytes": bytes.join(" "), "text": ins.text,
                "samples": samples, "period": period, "percent": percent, "metrics": cells,
            });
            if let Some(t) = ins.target {
                o["target"] = json!(t);
            }
            if let Some(c) = a.cycles.as_ref().map(|c| c.instructions[i]) {
                if c.ipc != 0.0 {
                    o["ipc"] = json!((f64::from(c.ipc) * 100.0).round() / 100.0);
                }
                if c.branches > 0 {
                    o["cycles"] = json!({
                        "average": c.cycles, "min": c.min, "max": c.max, "branches": c.branches,
                    });
                }
            }
            if let Some(Some(m)) = a.memory.get(i) {
                let levels: Vec<Value> = (m.levels.iter())
                    .map(|(l, n)| json!({"level": l, "samples": n}))
                    .collect();
                o["memory"] = json!({
                    "samples": m.samples, "weight": m.weight, "average_weight": m.average(),
                    "levels": levels,
                });
            }
            if let Some(s) = &ins.source {
                o["source"] = json!({"file": s.file, "line": s.line});
                if let Some(t) = &s.text {
                    o["source"]["text"] = json!(t);
                }
            }
            o
        })
        .collect();
    let mut o = json!({
        "file": a.file, "symbol": a.symbol, "dso": a.dso, "path": a.path, "build_id": a.build_id,
        "arch": a.arch, "syntax": a.syntax.name(), "start": a.start, "end": a.end,
        "events": events, "skid": SKID, "instructions": instructions, "metrics": metrics,
        "warnings": a.warnings,
    });
    if let Some(c) = &a.cycles {
        o["lbr"] = json!({
            "average_ipc": (c.average_ipc() * 100.0).round() / 100.0,
            "ipc_coverage": (c.coverage() * 10.0).round() / 10.0,
            "covered": c.covered, "instructions": c.total,
        });
    }
    o
}
