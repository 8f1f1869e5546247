//! The top-down tree as text and JSON: `pmx tma`'s report
//! ([`text`], [`json`]) and the evaluated tree alone ([`tree_text`],
//! [`tree_json`]), which `pmx analyze --tma` shares.

use pmx::tma::{EventRef, Flag, Reason, TmaReport, Tree};
use serde_json::{json, Value};
use std::fmt::Write as _;

fn flag_word(f: &Flag) -> &'static str {
    match f {
        Flag::Over => "OVER",
        Flag::Under => "",
        Flag::Unknown(_) => "threshold?",
        Flag::NoThreshold => "",
    }
}

/// The tree as indented text: one line per node with its share, threshold
/// flag and reliability (or why it has no value), then the bottleneck.
/// `absent` inputs are listed after; with `short`, an input not supported
/// here is named without its long reason (listed once, above the tree).
pub fn tree_text(tree: &Tree, level: u32, absent: &[EventRef], short: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Top-down analysis to level {level} (tree from {}):",
        tree.origin
    );
    let w = tree
        .nodes
        .iter()
        .map(|n| n.name.len() + 2 * (n.level as usize - 1))
        .max()
        .unwrap_or(20)
        .max(20);
    for (i, n) in tree.nodes.iter().enumerate() {
        let indent = "  ".repeat(n.level as usize - 1);
        let label = format!("{indent}{}", n.name);
        let mark = if tree.bottleneck == Some(i) {
            "◀ bottleneck"
        } else {
            ""
        };
        match n.percent {
            Some(p) => {
                let mut tail = String::new();
                match n.evaluated.reliability {
                    Some(r) => {
                        let _ = write!(tail, "reliability {:>3.0}%", r * 100.0);
                    }
                    None => tail.push_str("reliability   -"),
                }
                if n.evaluated.is_estimate() {
                    tail.push_str(" ESTIMATE");
                }
                let _ = writeln!(
                    s,
                    "  {label:<w$} {p:>6.1}%  {:<10} {tail} {mark}",
                    flag_word(&n.flag)
                );
            }
            None => {
                let why = n
                    .evaluated
                    .missing()
                    .map(|m| match &m.reason {
                        // The long reason is listed once, above the tree.
                        Reason::NotSupported(_) if short => {
                            format!("{}: not available here", m.path())
                        }
                        _ => m.to_string(),
                    })
                    .unwrap_or_else(|| "no value".into());
                let _ = writeln!(s, "  {label:<w$}      -   missing: {why}");
            }
        }
    }
    tree_footer(&mut s, tree, absent);
    s
}

/// The bottleneck line, the absent inputs and the tree's notes.
fn tree_footer(s: &mut String, tree: &Tree, absent: &[EventRef]) {
    match tree.bottleneck() {
        Some(_) => {
            let _ = writeln!(s, "Bottleneck: {}", tree.bottleneck_path().join(" → "));
        }
        None if tree.nodes.iter().all(|n| n.percent.is_none()) => {
            let _ = writeln!(s, "Bottleneck: none named: no node could be computed");
        }
        None => {
            let _ = writeln!(s, "Bottleneck: none named: no node is over its threshold");
        }
    }
    if !absent.is_empty() {
        let names: Vec<&str> = absent.iter().map(|e| e.name.as_str()).collect();
        let _ = writeln!(s, "Inputs without a count: {}", names.join(", "));
    }
    for n in &tree.notes {
        let _ = writeln!(s, "Note: {n}");
    }
}

/// The tree as JSON.
pub fn tree_json(tree: &Tree, absent: &[EventRef]) -> Value {
    let nodes: Vec<Value> = tree
        .nodes
        .iter()
        .map(|n| {
            json!({
                "name": n.name,
                "level": n.level,
                "parent": n.parent,
                "percent": n.percent,
                "over_threshold": n.flag == Flag::Over,
                "flag": n.flag,
                "reliability": n.evaluated.reliability,
                "estimate": n.evaluated.is_estimate(),
                "missing": n.evaluated.missing().map(|m| m.to_string()),
            })
        })
        .collect();
    json!({
        "origin": tree.origin,
        "nodes": nodes,
        "bottleneck": tree.bottleneck().map(|b| b.name.clone()),
        "bottleneck_path": tree.bottleneck_path(),
        "notes": tree.notes,
        "absent_inputs": absent.iter().map(|e| e.name.clone()).collect::<Vec<_>>(),
    })
}

/// `pmx tma --json`: the command, the inputs, what could not be counted,
/// the tree and the notes, as one object.
pub fn json(report: &TmaReport) -> Value {
    json!({
        "command": report.command,
        "cpu": report.cpu.to_string(),
        "level": report.level,
        "exit_code": report.exit_code,
        "events": report.events,
        "unavailable": report.unavailable.iter().map(|(n, w)| json!({"event": n, "reason": w})).collect::<Vec<_>>(),
        "tma": tree_json(&report.tree, &[]),
        "notes": report.notes,
    })
}

/// `pmx tma`'s text: the heading, the inputs not available here grouped
/// by reason, the tree, and the notes.
pub fn text(report: &TmaReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n pmx tma for '{}' on {}: {} inputs for level {}",
        report.command.join(" "),
        report.cpu,
        report.events.len(),
        report.level
    );
    if !report.unavailable.is_empty() {
        unavailable_text(&mut s, report);
    }
    s.push('\n');
    s.push_str(&tree_text(&report.tree, report.level, &[], true));
    for n in &report.notes {
        let _ = writeln!(s, "Note: {n}");
    }
    s
}

/// The inputs not available here, grouped by the general part of the
/// reason (after the first ": "), each with its own specific part.
fn unavailable_text(s: &mut String, report: &TmaReport) {
    let distinct: std::collections::BTreeSet<&String> =
        report.unavailable.iter().map(|(n, _)| n).collect();
    let _ = writeln!(
        s,
        "\n {} of the {} events are not available here, so the nodes that need them have no value:",
        distinct.len(),
        report.events.len()
    );
    let mut by_reason: Vec<(String, Vec<String>)> = Vec::new();
    for (n, w) in &report.unavailable {
        let (specific, general) = match w.split_once(": ") {
            Some((a, b)) => (format!("{n} ({a})"), b.to_string()),
            None => (n.clone(), w.clone()),
        };
        match by_reason.iter_mut().find(|(r, _)| *r == general) {
            Some((_, v)) => v.push(specific),
            None => by_reason.push((general, vec![specific])),
        }
    }
    for (why, names) in &by_reason {
        let _ = writeln!(s, "   why: {why}");
        for n in names {
            let _ = writeln!(s, "     {n}");
        }
    }
}
