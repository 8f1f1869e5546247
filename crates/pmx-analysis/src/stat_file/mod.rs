//! `pmx stat record` and `pmx stat report`, as perf's `perf stat record`
//! and `perf stat report`: a counting run kept in perf.data (file, or a
//! pipe stream on `-o -`) as perf writes it — the events' attrs, their
//! names, units and scales (`EVENT_UPDATE`), the thread and CPU maps,
//! the stat config, the `STAT` records of each counter and a
//! `STAT_ROUND` after them: one round with the elapsed time, or with
//! `-I` one per interval ([`pmx_perfdata::stat`]); a file's header also
//! keeps the machine's topology (`CPU_TOPOLOGY`, `NUMA_TOPOLOGY`) for
//! `--per-core`/`--per-socket`/`--per-die`/`--per-node` reports — and
//! read back, perf's own files included, as `perf stat report` replays
//! them (`replay`).
//!
//! perf's subcommand words (`record` and `report` after `pmx stat`) are
//! `pmx-args`' (`stat_file_args`). [`write()`] writes a run
//! (with the [`Rounds`] of `-I`); [`read()`] reads a file.

mod replay;

pub use replay::{read, StatFile};

use pmx_count::stat::{Aggregation, StatPlan, StatRun, Tick};
use pmx_model::count::Count;
use pmx_perfdata::stat::{aggr_mode, event_update, EventUpdate, StatConfig, StatCount, StatRecord};
use pmx_perfdata::topology::{cpu_topology, numa_topology, CpuIds, NumaNode};
use pmx_perfdata::{format, FileAttr};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

/// A file that cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum StatFileError {
    /// Writing failed.
    #[error("{path}: {source}")]
    Write {
        /// The file (`-`: standard output).
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Reading failed, or the file is not `perf stat record`'s.
    #[error("{path}: {message}")]
    Read {
        /// The file (`-`: standard input).
        path: String,
        /// Why.
        message: String,
    },
}

/// perf's `aggr_mode` for pmx's aggregation.
fn perf_aggr(how: Aggregation) -> u64 {
    match how {
        Aggregation::Total => aggr_mode::GLOBAL,
        Aggregation::PerCpu => aggr_mode::NONE,
        Aggregation::PerCore | Aggregation::PerCache(_) => aggr_mode::CORE,
        Aggregation::PerDie => aggr_mode::DIE,
        Aggregation::PerSocket => aggr_mode::SOCKET,
        Aggregation::PerNode => aggr_mode::NODE,
        Aggregation::PerThread => aggr_mode::THREAD,
    }
}

/// Every counter's running total, by (event, CPU, thread).
type Totals = HashMap<(usize, i32, i32), Count>;

/// The `-I` rounds of a run kept for its file: after each interval,
/// every counter's running total (the sum of its changes so far), as
/// perf writes them.
#[derive(Debug, Clone, Default)]
pub struct Rounds {
    keep: bool,
    interval_ms: u64,
    totals: Totals,
    kept: Vec<(u64, Totals)>,
}

impl Rounds {
    /// The rounds of a run with `-I interval_ms` (none without), kept
    /// when `keep` (a run recorded), else not (nothing grows over a long
    /// run).
    pub fn new(keep: bool, interval_ms: Option<u64>) -> Rounds {
        Rounds {
            keep: keep && interval_ms.is_some(),
            interval_ms: interval_ms.unwrap_or(0),
            ..Rounds::default()
        }
    }

    /// One interval's changes.
    pub fn tick(&mut self, tick: &Tick) {
        if !self.keep {
            return;
        }
        for i in tick.instances {
            let t = self.totals.entry((i.event, i.cpu, i.tid)).or_default();
            t.value = t.value.wrapping_add(i.count.value);
            t.enabled = t.enabled.wrapping_add(i.count.enabled);
            t.running = t.running.wrapping_add(i.count.running);
        }
        let at = tick.at.as_nanos() as u64;
        self.kept.push((at, self.totals.clone()));
    }
}

/// The records of `run` of `plan`, after the attrs: the events' updates,
/// the maps, the config, the counts and their rounds (`rounds`' with
/// `-I`, else one with the elapsed time). Counter ids are 1, 2, … in
/// instance order; an event counted nowhere gets one id of its own.
/// Returns the attrs (with their ids) and the records.
fn records(
    plan: &StatPlan,
    run: &StatRun,
    config: StatConfig,
    rounds: &Rounds,
) -> (Vec<FileAttr>, Vec<Vec<u8>>) {
    let mut cpus: Vec<i32> = run.instances.iter().map(|i| i.cpu).collect();
    let mut tids: Vec<i32> = run.instances.iter().map(|i| i.tid).collect();
    for v in [&mut cpus, &mut tids] {
        v.sort_unstable();
        v.dedup();
        if v.is_empty() {
            v.push(-1);
        }
    }
    let mut attrs = Vec::new();
    let mut recs = Vec::new();
    let mut next_id = run.instances.len() as u64 + 1;
    for (e, ev) in plan.events.iter().enumerate() {
        let Ok(attr) = &ev.attr else { continue };
        let mut ids: Vec<u64> = (run.instances.iter().enumerate())
            .filter(|(_, i)| i.event == e)
            .map(|(k, _)| k as u64 + 1)
            .collect();
        if ids.is_empty() {
            ids.push(next_id);
            next_id += 1;
        }
        if let Some(u) = ev.unit.as_ref().filter(|u| !u.is_empty()) {
            recs.push(event_update(ids[0], &EventUpdate::Unit(u.clone())));
        }
        if ev.scale != 1.0 {
            recs.push(event_update(ids[0], &EventUpdate::Scale(ev.scale)));
        }
        recs.push(event_update(ids[0], &EventUpdate::Name(ev.name.clone())));
        // As perf's: the id first in every record, the times read.
        let mut attr = attr.clone();
        attr.sample_type = format::sample_type::IDENTIFIER;
        attr.read_format =
            format::read_format::TOTAL_TIME_ENABLED | format::read_format::TOTAL_TIME_RUNNING;
        attrs.push(FileAttr {
            attr: attr.to_perf_data_bytes(),
            ids,
            name: ev.name.clone(),
        });
    }
    let threads = (tids.iter())
        .map(|&t| {
            (
                t as i64,
                pmx_count::stat::thread_comm(t).unwrap_or_default(),
            )
        })
        .map(|(t, c)| (t, if t < 0 { String::new() } else { c }))
        .collect();
    recs.push(StatRecord::ThreadMap(threads).to_bytes());
    recs.push(StatRecord::CpuMap(cpus).to_bytes());
    recs.push(StatRecord::Config(config).to_bytes());
    let count = |k: usize, c: &Count| {
        let i = &run.instances[k];
        let count = StatCount {
            id: k as u64 + 1,
            cpu: i.cpu,
            thread: tids.iter().position(|&t| t == i.tid).unwrap_or(0) as u32,
            value: c.value,
            enabled: c.enabled,
            running: c.running,
        };
        StatRecord::Count(count).to_bytes()
    };
    let round = |final_round, time| StatRecord::Round { final_round, time }.to_bytes();
    if config.interval_ms > 0 && !rounds.kept.is_empty() {
        // perf's `-I` file: a round per interval, no final one.
        for (time, totals) in &rounds.kept {
            for (k, i) in run.instances.iter().enumerate() {
                if let Some(c) = totals.get(&(i.event, i.cpu, i.tid)) {
                    recs.push(count(k, c));
                }
            }
            recs.push(round(false, *time));
        }
    } else {
        for (k, i) in run.instances.iter().enumerate() {
            recs.push(count(k, &i.count));
        }
        recs.push(round(true, run.elapsed.as_nanos() as u64));
    }
    (attrs, recs)
}

/// This machine's CPUs (index = CPU number) and NUMA nodes as perf's
/// topology features hold them.
pub(crate) fn machine_topology() -> (Vec<CpuIds>, Vec<NumaNode>) {
    let topo = pmx_sys::topology::read_topology(&pmx_sys::SysRoot::host(), &mut Vec::new());
    let n = topo
        .cpus
        .iter()
        .map(|c| c.cpu as usize + 1)
        .max()
        .unwrap_or(0);
    let unknown = CpuIds {
        core: -1,
        die: -1,
        socket: -1,
    };
    let mut cpus = vec![unknown; n];
    let mut nodes: Vec<NumaNode> = Vec::new();
    let id = |v: Option<u32>| v.map_or(-1, |x| x as i32);
    for c in topo.online() {
        cpus[c.cpu as usize] = CpuIds {
            core: id(c.core),
            die: c.die.map_or(0, |d| d as i32),
            socket: id(c.package),
        };
        let Some(node) = c.node else { continue };
        match nodes.iter_mut().find(|n| n.node == node) {
            Some(n) => n.cpus.push(c.cpu),
            None => {
                let (mem_total, mem_free) = node_memory(node);
                nodes.push(NumaNode {
                    node,
                    mem_total,
                    mem_free,
                    cpus: vec![c.cpu],
                });
            }
        }
    }
    nodes.sort_by_key(|n| n.node);
    (cpus, nodes)
}

/// A NUMA node's memory, total and free, in KiB (0 when unknown).
fn node_memory(node: u32) -> (u64, u64) {
    let path = format!("/sys/devices/system/node/node{node}/meminfo");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| {
                l.split_once(&format!("{name}:"))?
                    .1
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
            .unwrap_or(0)
    };
    (field("MemTotal"), field("MemFree"))
}

/// Write the last of `runs` (one: `record` takes no `-r`) of `plan` to
/// `path` (`-`: a pipe stream on standard output) as `perf stat record`
/// does: with `-I`, `rounds`' intervals; a file with this process's
/// command line (the header of its report) and this machine's topology.
pub fn write(
    path: &Path,
    plan: &StatPlan,
    runs: &[StatRun],
    how: Aggregation,
    rounds: &Rounds,
) -> Result<(), StatFileError> {
    let err = |source| StatFileError::Write {
        path: path.display().to_string(),
        source,
    };
    let Some(run) = runs.last() else {
        return Ok(());
    };
    let config = StatConfig {
        aggr_mode: perf_aggr(how),
        interval_ms: rounds.interval_ms,
        scale: true,
    };
    let (attrs, recs) = records(plan, run, config, rounds);
    if path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        let mut bytes = pmx_perfdata::stat::pipe_header().to_vec();
        for a in &attrs {
            let attr = pmx_perfdata::write::normalize_attr(&a.attr).map_err(err)?;
            bytes.extend(pmx_perfdata::stat::header_attr(&attr, &a.ids));
        }
        recs.iter().for_each(|r| bytes.extend_from_slice(r));
        return out.write_all(&bytes).and_then(|_| out.flush()).map_err(err);
    }
    let file = std::fs::File::create(path).map_err(err)?;
    let mut w = pmx_perfdata::Writer::create(std::io::BufWriter::new(file), attrs).map_err(err)?;
    for r in &recs {
        w.write_record(r).map_err(err)?;
    }
    let (cpus, nodes) = machine_topology();
    let online = cpus.iter().filter(|c| c.socket >= 0).count() as u32;
    let mut raw = vec![(format::feature::CPU_TOPOLOGY, cpu_topology(&cpus))];
    if !nodes.is_empty() {
        raw.push((format::feature::NUMA_TOPOLOGY, numa_topology(&nodes)));
    }
    let features = pmx_perfdata::Features {
        cmdline: Some(std::env::args().collect()),
        version: Some(format!("pmx {}", env!("CARGO_PKG_VERSION"))),
        nrcpus: Some((online, cpus.len() as u32)),
        ..Default::default()
    };
    w.finish_with(&features, &raw)
        .map_err(err)?
        .flush()
        .map_err(err)
}
