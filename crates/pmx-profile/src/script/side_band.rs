//! `--show-switch-events` and `--show-namespace-events`: context-switch
//! and namespace records as perf script prints them (the start of a
//! sample line, then `PERF_RECORD_…` and the record's text).

use super::write::SampleRec;
use super::ScriptOptions;
use pmx_perfdata::format::record_type;
use pmx_perfdata::sideband;
use pmx_perfdata::{PerfEventAttr, Reader};
use std::collections::HashMap;
use std::fmt::Write;

/// What side-band records need of the file's events: the first one's attr
/// (it lays out their trailers) and the events by sample id.
#[derive(Default)]
pub(super) struct Events {
    first: Option<PerfEventAttr>,
    by_id: HashMap<u64, usize>,
    seen: usize,
}

impl Events {
    /// Catch up with the reader's events (a pipe's grow as they come).
    pub(super) fn update(&mut self, reader: &Reader) {
        let events = reader.events();
        if events.len() == self.seen {
            return;
        }
        self.seen = events.len();
        self.first = events.first().map(|e| e.attr);
        self.by_id = (events.iter().enumerate())
            .flat_map(|(i, e)| e.ids.iter().map(move |&id| (id, i)))
            .collect();
    }
}

/// The line of a side-band record the options ask for: its sample
/// fields, the thread whose command it shows, and its text.
pub(super) fn item(
    events: &Events,
    opts: &ScriptOptions,
    kind: u32,
    misc: u16,
    data: &[u8],
) -> Option<(SampleRec, u32, String)> {
    let (text, thread) = match kind {
        record_type::SWITCH | record_type::SWITCH_CPU_WIDE if opts.show_switch_events => {
            (switch_text(kind, sideband::switch(kind, misc, data)?), None)
        }
        record_type::NAMESPACES if opts.show_namespace_events => {
            let ns = sideband::namespaces(data)?;
            (namespaces_text(&ns), Some(ns.tid))
        }
        _ => return None,
    };
    let Some(first) = &events.first else {
        return None;
    };
    let id = sideband::sample_id(first, data);
    let event = id.id.and_then(|i| events.by_id.get(&i).copied());
    let rec = SampleRec {
        event: event.unwrap_or(0),
        misc,
        ip: 0,
        pid: id.pid.unwrap_or(0),
        tid: id.tid.unwrap_or(0),
        cpu: id.cpu.unwrap_or(0),
        time: id.time.unwrap_or(0),
        period: 0,
        chain: 0..0,
        counters: false,
        branches: 0,
        mem: Default::default(),
        raw: None,
    };
    let thread = thread.unwrap_or(rec.tid);
    Some((rec, thread, text))
}

fn switch_text(kind: u32, s: sideband::Switch) -> String {
    let in_out = match (s.out, s.preempt) {
        (false, _) => "IN         ",
        (true, false) => "OUT        ",
        (true, true) => "OUT preempt",
    };
    match s.other {
        None => format!("PERF_RECORD_SWITCH {in_out}\n"),
        Some((pid, tid)) => {
            let _ = kind;
            let which = if s.out { "next" } else { "prev" };
            format!("PERF_RECORD_SWITCH_CPU_WIDE {in_out}  {which} pid/tid: {pid:5}/{tid:<5}\n")
        }
    }
}

fn namespaces_text(ns: &sideband::Namespaces) -> String {
    let n = ns.links.len();
    let mut t = format!(
        "PERF_RECORD_NAMESPACES {}/{} - nr_namespaces: {n}\n\t\t[",
        ns.pid, ns.tid
    );
    for (i, (dev, ino)) in ns.links.iter().enumerate() {
        if i > 0 && i % 4 == 0 {
            t.push_str("\n\t\t ");
        }
        let name = sideband::NAMESPACE_NAMES.get(i).unwrap_or(&"unknown");
        let end = if i + 1 != n { ", " } else { "]\n" };
        let _ = write!(t, "{i}/{name}: {dev}/{ino:#x}{end}");
    }
    t
}
