//! Numbered uncore boxes counted live, on a fixture sysfs tree whose boxes
//! `uncore_imc_0` … `uncore_imc_2` are the software PMU's page-fault
//! counter (type 1, config 2) under an uncore name. Every box counts the
//! same command's page faults from its exec to its exit, so the merged row
//! is exactly the boxes' sum and each box's count is the `page-faults`
//! row's: real kernel counters, no uncore hardware.

use super::{aggregate, plan, run, Aggregation, EventStatus, RunOptions, Scope, StatPlan};
use std::path::{Path, PathBuf};

/// A sysfs tree with `boxes` (name, type) under `uncore_imc`'s alias
/// `cas_count_read` = `event=0x2`, and a free-running box of another base.
fn fixture(tag: &str, boxes: &[(&str, &str)], cpumask: Option<&str>) -> PathBuf {
    let root = std::env::temp_dir().join(format!("pmx-count-boxes-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let dev = root.join("sys/bus/event_source/devices");
    let w = |p: PathBuf, s: &str| {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, s).unwrap();
    };
    let free = [("uncore_imc_free_running_0", "1")];
    for (name, type_) in boxes.iter().chain(&free) {
        let b = dev.join(name);
        w(b.join("type"), &format!("{type_}\n"));
        w(b.join("format/event"), "config:0-63\n");
        w(b.join("events/cas_count_read"), "event=0x2\n");
        if let Some(m) = cpumask {
            w(b.join("cpumask"), &format!("{m}\n"));
        }
    }
    root
}

fn planned(root: &Path, list: &str) -> StatPlan {
    let cpu = pmx_sys::caps::cpu_id(&pmx_sys::NativeCpuid).expect("cpuid");
    let db = pmx_events::Database::light(pmx_events::Target { cpu, host: true }, root);
    plan(&crate::parse_event_list(list).expect("list"), &db).expect("plan")
}

fn command(argv: &[&str]) -> RunOptions {
    RunOptions {
        command: argv.iter().map(|s| s.to_string()).collect(),
        ..RunOptions::for_command(Vec::new())
    }
}

const THREE: [(&str, &str); 3] = [
    ("uncore_imc_1", "1"),
    ("uncore_imc_0", "1"),
    ("uncore_imc_2", "1"),
];

/// `uncore_imc/…/` is one event on the three boxes (in box order, not
/// the free-running box), summed into one row; `--no-merge` makes a row
/// per box, named as perf names them.
#[test]
fn every_box_is_opened_and_summed() {
    let root = fixture("sum", &THREE, None);
    let mut plan = planned(
        &root,
        "uncore_imc/cas_count_read/,cas_count_read,page-faults",
    );
    let boxes: Vec<&str> = plan.events[0]
        .boxes
        .iter()
        .map(|b| b.pmu.as_str())
        .collect();
    assert_eq!(boxes, ["uncore_imc_0", "uncore_imc_1", "uncore_imc_2"]);
    assert_eq!(
        plan.events[1].boxes.len(),
        3,
        "a bare alias: every box that has it"
    );
    assert_eq!(plan.events[0].boxes[2].config, [2, 0, 0]);
    let opts = command(&["true"]);
    assert_eq!(opts.scope, Scope::Command);
    let r = run(&plan, &opts).expect("run");
    assert_eq!(
        r.status,
        [
            EventStatus::Counted,
            EventStatus::Counted,
            EventStatus::Counted
        ]
    );
    let faults = r
        .instances
        .iter()
        .find(|i| i.event == 2)
        .expect("page-faults")
        .count
        .value;
    assert!(faults > 0);
    for ev in [0, 1] {
        let mine: Vec<u64> = (r.instances.iter().filter(|i| i.event == ev))
            .map(|i| i.count.value)
            .collect();
        assert_eq!(mine, [faults; 3], "each box counts the command's faults");
    }
    let rows = aggregate(&plan, &r.instances, Aggregation::Total, None);
    let merged: Vec<(usize, u64)> = rows.iter().map(|r| (r.event, r.count.value)).collect();
    assert_eq!(merged, [(0, 3 * faults), (1, 3 * faults), (2, faults)]);

    plan.split_boxes();
    let names: Vec<&str> = plan.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "uncore_imc_0/cas_count_read/",
            "uncore_imc_1/cas_count_read/",
            "uncore_imc_2/cas_count_read/",
            "cas_count_read [uncore_imc_0]",
            "cas_count_read [uncore_imc_1]",
            "cas_count_read [uncore_imc_2]",
            "page-faults"
        ]
    );
    assert_eq!(plan.groups.len(), 7);
    // Each box remembers the event it was split from and its index.
    let origins: Vec<Option<(&str, usize)>> = (plan.events.iter())
        .map(|e| e.origin.as_ref().map(|(o, b)| (o.as_str(), *b)))
        .collect();
    let (spec, alias) = ("uncore_imc/cas_count_read/", "cas_count_read");
    assert_eq!(
        origins,
        [
            Some((spec, 0)),
            Some((spec, 1)),
            Some((spec, 2)),
            Some((alias, 0)),
            Some((alias, 1)),
            Some((alias, 2)),
            None
        ]
    );
    let r = run(&plan, &command(&["true"])).expect("run");
    let rows = aggregate(&plan, &r.instances, Aggregation::Total, None);
    let faults = rows[6].count.value;
    assert!(
        rows.iter()
            .all(|r| r.count.value == faults && r.instances == 1),
        "{rows:?}"
    );
    let _ = std::fs::remove_dir_all(root);
}

/// A box the kernel refuses is named in the event's status; the others'
/// partial sum is not the event's value.
#[test]
fn a_box_that_cannot_be_opened_is_named() {
    let boxes = [("uncore_imc_0", "1"), ("uncore_imc_1", "4242")];
    let root = fixture("refused", &boxes, None);
    let plan = planned(&root, "uncore_imc/cas_count_read/");
    let r = run(&plan, &command(&["true"])).expect("run");
    let why = match &r.status[0] {
        EventStatus::NotSupported(w) | EventStatus::NotCounted(w) => w.as_str().to_string(),
        s => panic!("{s:?}"),
    };
    assert!(why.starts_with("uncore_imc_1: "), "{why}");
    let _ = std::fs::remove_dir_all(root);
}

/// Each box keeps its own CPU list; boxes of a PMU that exists by that
/// very name are not looked for.
#[test]
fn boxes_keep_their_cpus() {
    // Not the software type: the kernel's generic types have no cpumask.
    let boxes = [
        ("uncore_imc_0", "17"),
        ("uncore_imc_1", "18"),
        ("uncore_imc_2", "19"),
    ];
    let root = fixture("cpus", &boxes, Some("0"));
    let plan = planned(
        &root,
        "uncore_imc/cas_count_read/,uncore_imc_1/cas_count_read/",
    );
    let cpus: Vec<Option<Vec<u32>>> = plan.events[0]
        .boxes
        .iter()
        .map(|b| b.cpus.clone())
        .collect();
    assert_eq!(cpus, [Some(vec![0]), Some(vec![0]), Some(vec![0])]);
    let types: Vec<u32> = plan.events[0].boxes.iter().map(|b| b.type_).collect();
    assert_eq!(types, [17, 18, 19]);
    assert!(
        plan.events[1].boxes.is_empty(),
        "a box named: that box alone"
    );
    assert_eq!(plan.events[1].cpus, Some(vec![0]));
    let _ = std::fs::remove_dir_all(root);
}
