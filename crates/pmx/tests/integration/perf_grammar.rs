//! pmx's event grammar against perf's: for every form perf's parser
//! accepts, the attr pmx plans for `pmx stat` is the attr the installed
//! perf makes for `perf stat`, read from perf's own `-vv` dump (printed
//! even for events this machine cannot count).
//!
//! Compared: type, config, config1, config2, bp_type, sample period,
//! exclude_user/kernel/hv/idle/guest/host, precise_ip, pinned, exclusive,
//! and for `name=` the name perf prints. Not compared, on purpose (see the
//! README's "Event syntax"): the fields a counting session sets itself
//! (`disabled`, `inherit`, `enable_on_exec`, `read_format`,
//! `sample_type`), which pmx chooses per run.

use pmx::database::{self, DatabaseOptions};
use std::collections::BTreeMap;
use std::process::Command;

/// perf's `perf_event_attr:` blocks in a `-vv` output: field → value
/// (perf prints only the fields that are not zero), and the event names
/// of its `-x,` lines.
fn perf_attrs(event: &str) -> (Vec<BTreeMap<String, u64>>, Vec<String>) {
    let out = Command::new("perf")
        .args(["stat", "-vv", "-x,", "-e", event, "true"])
        .env("LC_ALL", "C")
        .output()
        .expect("run perf");
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut attrs = Vec::new();
    let mut cur: Option<BTreeMap<String, u64>> = None;
    let mut names = Vec::new();
    // perf retries a failed open with fallbacks ("switching off
    // exclude_guest, exclude_host", …): those attrs are not the parser's.
    let mut retry = false;
    for line in text.lines() {
        if line.starts_with("switching off") || line.starts_with("decreasing precise_ip") {
            retry = true;
        }
        if line == "perf_event_attr:" {
            cur = Some(BTreeMap::new());
            continue;
        }
        if let Some(map) = cur.as_mut() {
            if let Some(body) = line.strip_prefix("  ") {
                let (key, value) = match body.strip_prefix('{') {
                    Some(rest) => {
                        let (k, v) = rest.split_once('}').expect("closing brace");
                        (k.split(',').next_back().unwrap().trim().to_string(), v)
                    }
                    None => {
                        let (k, v) = body.split_once(' ').unwrap_or((body, ""));
                        (k.to_string(), v)
                    }
                };
                let v = value.trim();
                let n = match v.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16).ok(),
                    None => v.parse().ok(),
                };
                map.insert(key, n.unwrap_or(1));
                continue;
            }
            let block = cur.take().unwrap();
            if !std::mem::take(&mut retry) {
                attrs.push(block);
            }
        }
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() >= 5 && !line.starts_with(' ') {
            names.push(fields[2].to_string());
        }
    }
    (attrs, names)
}

/// The attrs pmx plans for `pmx stat -e EVENT`, as perf's field names.
fn pmx_attrs(event: &str) -> (Vec<BTreeMap<String, u64>>, Vec<String>) {
    let groups = pmx::parse_event_list(event).unwrap_or_else(|e| panic!("{event}: {e}"));
    let opts = DatabaseOptions {
        no_libpfm: true,
        ..DatabaseOptions::default()
    };
    let plan = database::plan(&opts, &groups, None).unwrap_or_else(|e| panic!("{event}: {e}"));
    let mut attrs = Vec::new();
    let mut names = Vec::new();
    for ev in &plan.events {
        let a = ev.attr.as_ref().unwrap_or_else(|e| panic!("{event}: {e}"));
        let mut m = BTreeMap::new();
        let sample = match a.sample {
            Some(pmx_perf::SampleRate::Period(n)) | Some(pmx_perf::SampleRate::Frequency(n)) => n,
            None => 0,
        };
        for (k, v) in [
            ("type", u64::from(a.type_)),
            ("config", a.config),
            ("config1", a.config1),
            ("config2", a.config2),
            ("bp_type", u64::from(a.bp_type)),
            ("sample_freq", sample),
            ("exclude_user", a.exclude_user.into()),
            ("exclude_kernel", a.exclude_kernel.into()),
            ("exclude_hv", a.exclude_hv.into()),
            ("exclude_idle", a.exclude_idle.into()),
            ("exclude_guest", a.exclude_guest.into()),
            ("exclude_host", a.exclude_host.into()),
            ("precise_ip", a.precise_ip.into()),
            ("pinned", a.pinned.into()),
            ("exclusive", a.exclusive.into()),
        ] {
            if v != 0 {
                m.insert(k.to_string(), v);
            }
        }
        attrs.push(m);
        names.push(ev.name.clone());
    }
    (attrs, names)
}

/// The fields compared (perf's names; `{ bp_addr, config1 }` is keyed by
/// its last name).
const FIELDS: &[&str] = &[
    "type",
    "config",
    "config1",
    "config2",
    "bp_type",
    "sample_freq",
    "exclude_user",
    "exclude_kernel",
    "exclude_hv",
    "exclude_idle",
    "exclude_guest",
    "exclude_host",
    "precise_ip",
    "pinned",
    "exclusive",
];

/// Every form of perf's grammar (tools/perf/tests/parse-events.c, perf-list(1)).
/// Tracepoints and breakpoints count here; the rest print their attr.
const EVENTS: &[&str] = &[
    // numeric type:config (test__checkevent_numeric[_modifier])
    "1:1",
    "1:1:hp",
    "0:0:u",
    "3:0x10000",
    "4:0x412e:k",
    // symbolic, with modifiers (test__checkevent_symbolic_name[_modifier])
    "instructions",
    "instructions:u",
    "cycles:k",
    "cycles:h",
    "cycles:uk",
    "cycles:G",
    "cycles:H",
    "cycles:GH",
    "cycles:Gu",
    "cycles:Hp",
    "cycles:ppp",
    "cycles:P",
    "cycles:I",
    "cycles:D",
    "cycles:S",
    "cycles:W",
    "cycles:e",
    "cycles:b",
    "faults:u",
    "cs:k",
    // `//` term lists on generic and cache events
    "cycles//u",
    "cycles/period=100000,config2/",
    "cycles/config=2,config1=3/",
    "cycles/period=0x100/",
    "cycles/percore/",
    "cycles/metric-id=foo/",
    "instructions/name=insn/",
    "instructions/name=insn/u",
    "cpu-clock/period=1000/",
    "r1234/name=rawpmu/",
    "r1a//u",
    "L1-dcache-misses/name=cachepmu/",
    // raw
    "r1a",
    "r412e:k",
    // cache events in perf's spellings (evsel__hw_cache tables)
    "L1-dcache-load-miss",
    "L1-dcache-load-miss:u",
    "L1-dcache-loads",
    "L1-dcache-misses:k",
    "l1d-miss",
    "L1-icache-prefetches",
    "LLC-load-misses",
    "LLC-refs",
    "dTLB-load-misses",
    "dTLB-load-misses:k",
    "iTLB-load-misses",
    "branch-load-misses",
    "node-store-misses",
    // groups and group modifiers
    "{cycles,instructions}:u",
    "{cycles:k,instructions}:u",
    "{cycles,instructions}:k",
    "{cycles,instructions}:S",
    "{cpu-clock,task-clock}:k",
    "{faults:k,cs}:u",
    "{cpu-clock:D,task-clock}:e",
    // breakpoints and tracepoints (these count here)
    "mem:0x1000/8:w",
    "mem:0x1000:rw:u",
    "sched:sched_switch",
    "sched:sched_switch:k",
];

/// The event strings of perf's own parser test (`test__events[]` in
/// tools/perf/tests/parse-events.c, Linux tree) that perf 6.1 accepts;
/// left out: the tracepoint wildcards (`syscalls:*`, `*:*`), the
/// `name=` forms on breakpoints and `cpu-cycles/name=name/` (later perf
/// only), the `default_core/…/` forms (no core PMU on this machine).
const PERF_SUITE: &[&str] = &[
    "syscalls:sys_enter_openat",
    "r1a",
    "1:1",
    "instructions",
    "cpu-cycles/period=100000,config2/",
    "faults",
    "L1-dcache-load-miss",
    "mem:0",
    "mem:0:x",
    "mem:0:r",
    "mem:0:w",
    "syscalls:sys_enter_openat:k",
    "r1a:kp",
    "1:1:hp",
    "instructions:h",
    "faults:u",
    "L1-dcache-load-miss:kp",
    "mem:0:u",
    "mem:0:x:k",
    "mem:0:r:hp",
    "mem:0:w:up",
    "r1,syscalls:sys_enter_openat:k,1:1:hp",
    "instructions:G",
    "instructions:H",
    "mem:0:rw",
    "mem:0:rw:kp",
    "{instructions:k,cpu-cycles:upp}",
    "{faults:k,branches}:u,cpu-cycles:k",
    "group1{syscalls:sys_enter_openat:H,cpu-cycles:kppp},group2{cpu-cycles,1:3}:G,instructions:u",
    "{cpu-cycles:u,instructions:kp}:p",
    "{cpu-cycles,instructions}:G,{cpu-cycles:G,instructions:G},cpu-cycles",
    "{cpu-cycles,cache-misses:G}:H",
    "{cpu-cycles,cache-misses:H}:G",
    "{cpu-cycles:G,cache-misses:H}:u",
    "{cpu-cycles:G,cache-misses:H}:uG",
    "{cpu-cycles,cache-misses,branch-misses}:S",
    "{instructions,branch-misses}:Su",
    "instructions:uDp",
    "{cpu-cycles,cache-misses,branch-misses}:D",
    "mem:0/1",
    "mem:0/2:w",
    "mem:0/4:rw:u",
    "instructions:I",
    "instructions:kIG",
    "task-clock:P,cpu-cycles",
    "instructions/name=insn/",
    "r1234/name=rawpmu/",
    "4:0x6530160/name=numpmu/",
    "L1-dcache-misses/name=cachepmu/",
    "cpu-cycles/name='COMPLEX_CYCLES_NAME:orig=cpu-cycles,desc=chip-clock-ticks'/Duk",
    "cpu-cycles//u",
    "cpu-cycles:k",
    "instructions:uep",
    "{cpu-cycles,cache-misses,branch-misses}:e",
    "cpu-cycles/name=l1d/",
    "software/r1a/",
];

/// What differs between perf's attrs for `event` and pmx's.
fn differences(event: &str, check_names: bool) -> Vec<String> {
    let mut failures = Vec::new();
    let (perf, perf_names) = perf_attrs(event);
    let (pmx, pmx_names) = pmx_attrs(event);
    if perf.is_empty() {
        return vec![format!("{event}: perf printed no attr")];
    }
    // perf prints the attrs in the list's order and stops at the first
    // group it cannot open: compare what it printed.
    for (i, p) in perf.iter().enumerate() {
        let Some(x) = pmx.get(i) else {
            failures.push(format!("{event}: pmx has no event {i}"));
            continue;
        };
        for f in FIELDS {
            let (a, b) = (
                p.get(*f).copied().unwrap_or(0),
                x.get(*f).copied().unwrap_or(0),
            );
            if a != b {
                failures.push(format!("{event} (event {i}): {f} perf {a:#x}, pmx {b:#x}"));
            }
        }
    }
    if check_names && event.contains("name=") && perf_names != pmx_names {
        failures.push(format!(
            "{event}: perf names it {perf_names:?}, pmx {pmx_names:?}"
        ));
    }
    failures
}

fn tracefs_has(system: &str, name: &str) -> bool {
    pmx::stat::tracepoint_id(system, name).is_some()
}

#[test]
fn every_perf_form_makes_perfs_attr() {
    if !pmx_testkit::perf::require("") {
        return;
    }
    let mut failures = Vec::new();
    for event in EVENTS {
        if event.starts_with("sched:") && !tracefs_has("sched", "sched_switch") {
            pmx_testkit::skip(format_args!("{event}: no tracefs here"));
            continue;
        }
        failures.extend(differences(event, true));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn perfs_parse_events_suite_makes_perfs_attrs() {
    if !pmx_testkit::perf::require("") {
        return;
    }
    let mut failures = Vec::new();
    for event in PERF_SUITE {
        if event.contains("syscalls:") && !tracefs_has("syscalls", "sys_enter_openat") {
            pmx_testkit::skip(format_args!("{event}: no syscalls tracepoints here"));
            continue;
        }
        failures.extend(differences(event, false));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn bad_specs_get_caret_errors_with_close_matches() {
    // The errors perf gives for these (parser error / unknown term) with
    // pmx's caret and suggestions.
    let err = |s: &str| {
        let groups = pmx::parse_event_list(s);
        let e = match groups {
            Err(e) => e,
            Ok(g) => {
                let opts = DatabaseOptions {
                    no_libpfm: true,
                    ..DatabaseOptions::default()
                };
                match database::plan(&opts, &g, None) {
                    Err(pmx::database::DatabaseError::Plan(e)) => e,
                    other => panic!("{s}: {other:?}"),
                }
            }
        };
        (e.span.start, e.suggestions.clone())
    };
    let (at, sugg) = err("cycles/peroid=100/");
    assert_eq!(at, 7);
    assert_eq!(sugg.first().map(String::as_str), Some("period"));
    let (at, sugg) = err("L1-dcache-lod-miss");
    assert_eq!(at, 0);
    assert!(
        sugg.iter().any(|s| s == "L1-dcache-load-misses"),
        "{sugg:?}"
    );
    let (at, _) = err("1:x");
    assert_eq!(at, 2);
    let (at, _) = err("{cycles,instructions}:q");
    assert_eq!(at, 22);
}

thread_local! {
    /// The cheap database for this machine, built once.
    static DB: pmx::Database = {
        let target = database::target(&DatabaseOptions::default()).expect("this CPU");
        pmx::Database::light(target, std::path::Path::new("/"))
    };
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

    /// Any string made of the grammar's characters parses and plans to an
    /// event list or a caret error inside the string: never a panic.
    #[test]
    fn random_event_lists_never_panic(
        s in "[a-zA-Z0-9:/{},=._'\"@*-]{0,40}",
        pick in 0usize..EVENTS.len(),
        cut in 0usize..40,
    ) {
        // Also mutilate a real form: cut it short, or splice random text in.
        let real = EVENTS[pick];
        let at = cut.min(real.len());
        let at = (0..=at).rev().find(|i| real.is_char_boundary(*i)).unwrap_or(0);
        for text in [s.clone(), real[..at].to_string(), format!("{}{s}", &real[..at])] {
            match pmx::parse_event_list(&text) {
                Err(e) => proptest::prop_assert!(e.span.start <= text.len(), "{text}: {e:?}"),
                Ok(groups) => {
                    if let Err(e) = DB.with(|db| pmx::stat::plan(&groups, db)) {
                        proptest::prop_assert!(e.span.start <= e.input.len(), "{text}: {e:?}");
                        let _ = e.to_string();
                    }
                }
            }
        }
    }
}
