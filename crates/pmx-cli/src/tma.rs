//! `pmx tma [-l N] [--no-multiplex] -- CMD`: count the inputs of the
//! top-down tree for a command and print the tree; and the tree rendering
//! `pmx analyze --tma` shares.

use crate::db::DbArgs;
use crate::exit::UsageError;
use pmx::stat::{self, Aggregation, EventStatus, RunOptions, Scope, StatPlan, StatRun};
use pmx_metrics::{EventRef, Flag, Inputs, Library, Machine, Reading, TmaReport};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// Arguments of `pmx tma`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: the command's own (128+N when killed by signal N); 127 when it cannot be run; 2 for bad input; 1 when counting failed."
)]
pub struct TmaArgs {
    /// Down to this level of the tree.
    #[arg(short = 'l', long = "level", value_name = "N", default_value_t = 1)]
    pub level: u32,
    /// Never multiplex: run the command once per counter set that fits and
    /// merge the results.
    #[arg(long = "no-multiplex")]
    pub no_multiplex: bool,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
    /// The command to run, after `--`.
    #[arg(last = true, value_name = "CMD", required = true)]
    pub command: Vec<String>,
}

fn flag_word(f: &Flag) -> &'static str {
    match f {
        Flag::Over => "OVER",
        Flag::Under => "",
        Flag::Unknown(_) => "threshold?",
        Flag::NoThreshold => "",
    }
}

/// The tree as indented text.
pub(crate) fn render(
    lib: &Library,
    report: &TmaReport,
    level: u32,
    absent: &[EventRef],
    short: bool,
) -> String {
    let _ = lib;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Top-down analysis to level {level} (tree from {}):",
        report.origin
    );
    let w = report
        .nodes
        .iter()
        .map(|n| n.name.len() + 2 * (n.level as usize - 1))
        .max()
        .unwrap_or(20)
        .max(20);
    for (i, n) in report.nodes.iter().enumerate() {
        let indent = "  ".repeat(n.level as usize - 1);
        let label = format!("{indent}{}", n.name);
        let mark = if report.bottleneck == Some(i) {
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
                        pmx_metrics::Reason::NotSupported(_) if short => {
                            format!("{}: not available here", m.path())
                        }
                        _ => m.to_string(),
                    })
                    .unwrap_or_else(|| "no value".into());
                let _ = writeln!(s, "  {label:<w$}      -   missing: {why}");
            }
        }
    }
    match report.bottleneck() {
        Some(_) => {
            let _ = writeln!(s, "Bottleneck: {}", report.bottleneck_path().join(" → "));
        }
        None if report.nodes.iter().all(|n| n.percent.is_none()) => {
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
    for n in &report.notes {
        let _ = writeln!(s, "Note: {n}");
    }
    s
}

/// The tree as JSON.
pub(crate) fn report_json(lib: &Library, report: &TmaReport, absent: &[EventRef]) -> Value {
    let _ = lib;
    let nodes: Vec<Value> = report
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
        "origin": report.origin,
        "nodes": nodes,
        "bottleneck": report.bottleneck().map(|b| b.name.clone()),
        "bottleneck_path": report.bottleneck_path(),
        "notes": report.notes,
        "absent_inputs": absent.iter().map(|e| e.name.clone()).collect::<Vec<_>>(),
    })
}

fn host_machine() -> Machine {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let smt = read("/sys/devices/system/cpu/smt/active").map(|s| s == "1");
    let ncpu = std::thread::available_parallelism()
        .ok()
        .map(|n| n.get() as u32);
    Machine {
        smt_on: Some(smt.unwrap_or(false)),
        threads_per_core: Some(if smt == Some(true) { 2 } else { 1 }),
        num_cpus: ncpu,
        num_cpus_online: ncpu,
        core_wide: Some(false),
        ..Machine::default()
    }
}

/// Run the command without counters (when nothing can be counted).
fn run_plain(cmd: &[String]) -> anyhow::Result<i32> {
    use std::os::unix::process::ExitStatusExt;
    match std::process::Command::new(&cmd[0]).args(&cmd[1..]).status() {
        Ok(st) => Ok(st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0))),
        Err(e) => {
            eprintln!("pmx tma: cannot run '{}': {e}", cmd.join(" "));
            Ok(127)
        }
    }
}

pub fn run(args: &TmaArgs) -> anyhow::Result<i32> {
    if args.level == 0 {
        return Err(UsageError("-l 0: levels start at 1".to_string()).into());
    }
    let db = args.db.load()?;
    let cpu = db.target.cpu.clone();
    let events_dir = pmx_events::default_events_dir(args.db.events_dir.clone());
    let lib = Library::for_cpu(Some(&cpu), events_dir.as_deref().filter(|d| d.is_dir()));
    let Some(tree) = lib.tma_tree() else {
        return Err(UsageError(format!(
            "no top-down metrics are known for {cpu} (Intel cores need Intel's tables: pmx events fetch)"
        ))
        .into());
    };
    let mut machine = if db.target.host {
        host_machine()
    } else {
        Machine {
            smt_on: Some(false),
            core_wide: Some(false),
            ..Machine::default()
        }
    };
    machine.cpuid = Some(cpu.to_string());
    let ids = tree.metrics_to_level(args.level);
    let mut notes: Vec<String> = Vec::new();
    if tree.depth() < args.level {
        notes.push(format!(
            "-l {}: the tree for {cpu} ({}) has {} level(s); showing all of them",
            args.level,
            tree.origin,
            tree.depth()
        ));
    }
    let req = lib.requirements(&ids, true, Some(&machine));
    // Plan each input on its own, so one that cannot be resolved does not
    // stop the others; keep why it cannot be counted.
    let mut plan = StatPlan {
        events: Vec::new(),
        groups: Vec::new(),
    };
    let mut planned_for: Vec<String> = Vec::new(); // library event name per plan event
    let mut unavailable: Vec<(String, String)> = Vec::new();
    for e in &req.events {
        let Some(spec) = e.spec("cpu") else {
            unavailable.push((
                e.name.clone(),
                "a retire latency is sampled, not counted".into(),
            ));
            continue;
        };
        let groups = match pmx::parse_event_list(&spec) {
            Ok(g) => g,
            Err(err) => {
                unavailable.push((e.name.clone(), err.to_string()));
                continue;
            }
        };
        match stat::plan(&groups, &db) {
            Ok(p) => {
                for g in p.groups {
                    let base = plan.events.len();
                    let members: Vec<usize> = g.members.iter().map(|m| m + base).collect();
                    for &m in &g.members {
                        let mut ev = p.events[m].clone();
                        ev.group = plan.groups.len();
                        plan.events.push(ev);
                        planned_for.push(e.name.clone());
                    }
                    plan.groups.push(stat::PlanGroup {
                        members,
                        explicit: g.explicit,
                    });
                }
            }
            Err(err) => unavailable.push((
                e.name.clone(),
                format!("not in the event tables for {cpu}: {}", err),
            )),
        }
    }
    let budget = pmx::schedule::CounterBudget::this_cpu();
    if let Some(b) = &budget {
        notes.extend(plan.pack(b));
    }
    let opts = RunOptions {
        scope: Scope::Command,
        command: args.command.clone(),
        inherit: true,
        pin: None,
        duration: None,
        interval: None,
        interval_count: None,
        trace_tasks: false,
    };
    let sets = match (&budget, args.no_multiplex) {
        (Some(b), true) => plan.run_sets(b),
        _ => vec![plan.clone()],
    };
    if args.no_multiplex {
        match (&budget, sets.len()) {
            (None, _) => notes.push("--no-multiplex: this CPU's counters are unknown (no PMU described by CPUID), so everything ran at once".into()),
            (Some(_), n) => notes.push(format!("--no-multiplex: {n} counter set(s), the command ran {n} time(s)")),
        }
    }
    let code: Option<i32>;
    let mut run: Option<StatRun> = None;
    if plan.events.is_empty() {
        notes.push("nothing could be counted: the command ran without counters".into());
        code = Some(run_plain(&args.command)?);
    } else {
        stat::install_signal_handlers();
        let mut runs = Vec::new();
        let mut failed = None;
        for set in &sets {
            match stat::run(set, &opts) {
                Ok(r) => {
                    let stop = r.interrupted;
                    runs.push(r);
                    if stop {
                        break;
                    }
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        match failed {
            Some(stat::RunError::Exec { cmd, reason }) => {
                eprintln!("pmx tma: cannot run '{cmd}': {reason}");
                return Ok(127);
            }
            Some(stat::RunError::Open(msg)) => {
                // Nothing opened (no PMU here): say why, run it anyway.
                for name in &planned_for {
                    if !unavailable.iter().any(|(n, _)| n == name) {
                        unavailable.push((name.clone(), msg.clone()));
                    }
                }
                notes.push("nothing could be counted: the command ran without counters".into());
                code = Some(run_plain(&args.command)?);
            }
            Some(stat::RunError::Io(e)) => return Err(e.into()),
            None => {
                let merged = stat::merge_runs(&sets[..runs.len()], runs);
                code = Some(merged.exit.map(|e| e.shell_code()).unwrap_or(0));
                run = Some(merged);
            }
        }
    }
    // The readings.
    let mut inputs = Inputs::new();
    if let Some(r) = &run {
        inputs.duration = Some(r.elapsed.as_secs_f64());
        let rows = stat::aggregate(&plan, &r.instances, Aggregation::Total, None);
        for row in &rows {
            let name = &planned_for[row.event];
            let reading = match &r.status[row.event] {
                EventStatus::Counted if row.value.is_some() => {
                    Reading::Counted { count: row.count }
                }
                EventStatus::Counted => Reading::NotCounted {
                    why: Some("never scheduled on a counter (multiplexed out)".into()),
                },
                EventStatus::NotCounted(why) => Reading::NotCounted {
                    why: Some(why.clone()),
                },
                EventStatus::NotSupported(why) => {
                    unavailable.push((name.clone(), why.clone()));
                    Reading::NotSupported { why: why.clone() }
                }
            };
            inputs.insert(name, reading);
        }
    }
    for (name, why) in &unavailable {
        if inputs.get(name).is_none() {
            inputs.insert(name, Reading::NotSupported { why: why.clone() });
        }
    }
    let mut ev = lib.evaluator(&inputs, &machine);
    let report = tree.evaluate(&mut ev, args.level);
    unavailable.sort();
    unavailable.dedup();
    if args.json {
        let doc = json!({
            "command": args.command,
            "cpu": cpu.to_string(),
            "level": args.level,
            "exit_code": code,
            "events": req.events.iter().map(|e| e.name.clone()).collect::<Vec<_>>(),
            "unavailable": unavailable.iter().map(|(n, w)| json!({"event": n, "reason": w})).collect::<Vec<_>>(),
            "tma": report_json(&lib, &report, &[]),
            "notes": notes,
        });
        println!("{doc}");
    } else {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "\n pmx tma for '{}' on {cpu}: {} inputs for level {}",
            args.command.join(" "),
            req.events.len(),
            args.level
        );
        if !unavailable.is_empty() {
            let _ = writeln!(
                s,
                "\n {} of the {} events are not available here, so the nodes that need them have no value:",
                unavailable.iter().map(|(n, _)| n).collect::<std::collections::BTreeSet<_>>().len(),
                req.events.len()
            );
            // Group events by the general part of the reason (after the
            // first ": "), each event with its own specific part.
            let mut by_reason: Vec<(String, Vec<String>)> = Vec::new();
            for (n, w) in &unavailable {
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
        s.push('\n');
        s.push_str(&render(&lib, &report, args.level, &[], true));
        for n in &notes {
            let _ = writeln!(s, "Note: {n}");
        }
        eprint!("{s}");
    }
    Ok(code.unwrap_or(0))
}
