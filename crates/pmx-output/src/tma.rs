//! The top-down tree as text and JSON: `pmx tma`'s report
//! ([`text`], [`json()`]) and the evaluated tree alone ([`tree_text`],
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

/// The inputs not available here, grouped by the cause of their reason
/// (shared by the events that fail alike), each with its own detail.
fn unavailable_text(s: &mut String, report: &TmaReport) {
    let distinct: std::collections::BTreeSet<&String> =
        report.unavailable.iter().map(|(n, _)| n).collect();
    let _ = writeln!(
        s,
        "\n {} of the {} events are not available here, so the nodes that need them have no value:",
        distinct.len(),
        report.events.len()
    );
    let mut by_cause: Vec<(&str, Vec<String>)> = Vec::new();
    for (n, why) in &report.unavailable {
        let named = match why.detail() {
            Some(detail) => format!("{n} ({detail})"),
            None => n.clone(),
        };
        match by_cause.iter_mut().find(|(c, _)| *c == why.cause()) {
            Some((_, v)) => v.push(named),
            None => by_cause.push((why.cause(), vec![named])),
        }
    }
    for (why, names) in &by_cause {
        let _ = writeln!(s, "   why: {why}");
        for n in names {
            let _ = writeln!(s, "     {n}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmx::database::{self, DatabaseOptions};
    use pmx::stat::Reason as Why;
    use pmx::tma::{Inputs, Model, Reading};

    /// A report for AMD Zen 4's level-1 tree: `counts` as readings, and
    /// the inputs without a count unavailable for `why`.
    fn zen4_report(counts: &[(&str, f64)], unavailable: &[(&str, Why)]) -> TmaReport {
        let opts = DatabaseOptions {
            cpu: Some("AuthenticAMD-25-11".into()),
            no_libpfm: true,
            ..Default::default()
        };
        let db = database::load(&opts).unwrap();
        let model = Model::for_database(&db).unwrap();
        let mut inputs = Inputs::new();
        for (name, n) in counts {
            inputs.insert(name, Reading::exact(*n));
        }
        for (name, why) in unavailable {
            inputs.insert(
                name,
                Reading::NotSupported {
                    why: why.to_string(),
                },
            );
        }
        TmaReport {
            command: vec!["true".into()],
            cpu: model.cpu.clone(),
            level: 1,
            exit_code: 0,
            events: model
                .inputs_to_level(1)
                .into_iter()
                .map(|e| e.name)
                .collect(),
            unavailable: unavailable
                .iter()
                .map(|(n, w)| (n.to_string(), w.clone()))
                .collect(),
            tree: model.evaluate(&inputs, 1),
            notes: vec!["a note".into()],
        }
    }

    #[test]
    fn unavailable_inputs_are_grouped_by_the_general_reason() {
        let r = zen4_report(
            &[],
            &[
                (
                    "CYCLES_NOT_IN_HALT",
                    Why::with_detail("cpu", "no hardware PMU"),
                ),
                ("RETIRED_OPS", Why::with_detail("cpu", "no hardware PMU")),
                ("DISPATCH_STALLS_1:FE_NO_OPS", Why::new("sampled")),
            ],
        );
        let text = text(&r);
        assert!(
            text.starts_with("\n pmx tma for 'true' on AuthenticAMD-25-11: 6 inputs for level 1\n"),
            "{text}"
        );
        assert!(text.contains(
            "\n 3 of the 6 events are not available here, so the nodes that need them have no value:\n   why: no hardware PMU\n     CYCLES_NOT_IN_HALT (cpu)\n     RETIRED_OPS (cpu)\n   why: sampled\n     DISPATCH_STALLS_1:FE_NO_OPS\n"
        ), "{text}");
        assert!(
            text.contains("Bottleneck: none named: no node could be computed\n"),
            "{text}"
        );
        assert!(text.ends_with("Note: a note\n"), "{text}");
    }

    /// The grouping reads the reason's parts, never its text: the same
    /// cause groups events whatever their details, different causes stay
    /// apart even when their text shares a prefix, and a cause without a
    /// detail is shown whole even when it holds ": ".
    #[test]
    fn unavailable_inputs_group_on_the_typed_cause() {
        let open = "cannot open hardware event cycles: no PMU (ENOENT: No such file or directory)";
        let r = zen4_report(
            &[],
            &[
                ("CYCLES_NOT_IN_HALT", Why::with_detail("cycles", open)),
                ("RETIRED_OPS", Why::with_detail("instructions", open)),
                ("DISPATCH_STALLS_1:FE_NO_OPS", Why::new(open)),
                (
                    "DISPATCH_STALLS_1:BE_STALLS",
                    Why::with_detail("cycles", "busy"),
                ),
            ],
        );
        let text = text(&r);
        let want = format!(
            "\n 4 of the 6 events are not available here, so the nodes that need them have no value:\n   why: {open}\n     CYCLES_NOT_IN_HALT (cycles)\n     RETIRED_OPS (instructions)\n     DISPATCH_STALLS_1:FE_NO_OPS\n   why: busy\n     DISPATCH_STALLS_1:BE_STALLS (cycles)\n"
        );
        assert!(text.contains(&want), "{text}");
        let json = json(&r);
        assert_eq!(
            json["unavailable"][0],
            serde_json::json!({"event": "CYCLES_NOT_IN_HALT", "reason": format!("cycles: {open}")})
        );
    }

    #[test]
    fn counted_nodes_show_their_share() {
        let r = zen4_report(
            &[
                ("CYCLES_NOT_IN_HALT", 1_000.0),
                ("DISPATCH_STALLS_1:FE_NO_OPS", 1_200.0),
                (
                    "OPS_SOURCE_DISPATCHED_FROM_DECODER:DECODER:OPCACHE:LOOP_BUFFER",
                    2_700.0,
                ),
                ("RETIRED_OPS", 2_400.0),
                ("DISPATCH_STALLS_1:BE_STALLS", 1_800.0),
                ("DISPATCH_STALLS_1:SMT_CONTENTION", 600.0),
            ],
            &[],
        );
        let text = tree_text(&r.tree, 1, &[], true);
        let retiring = text
            .lines()
            .find(|l| l.trim_start().starts_with("retiring"))
            .unwrap();
        assert!(retiring.contains("  40.0%"), "{retiring}");
        assert!(retiring.ends_with("reliability   - "), "{retiring:?}");
        // pmx's thresholds for AMD's tree: backend 30 % > 20 %, frontend
        // 20 % > 15 %; the larger is named.
        assert!(text.contains("Bottleneck: backend_bound"), "{text}");
        assert!(
            text.contains("Note: thresholds: pmx's, after Intel's"),
            "{text}"
        );
        let json = json(&r);
        assert_eq!(json["exit_code"], 0);
        assert_eq!(json["tma"]["nodes"][4]["name"], "retiring");
        assert_eq!(json["tma"]["nodes"][4]["percent"], 40.0);
        assert_eq!(json["unavailable"].as_array().unwrap().len(), 0);
    }
}
