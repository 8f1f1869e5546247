//! A `perf stat record` file read back as `perf stat report` replays it:
//! the `STAT` records of each `STAT_ROUND` are one round — a `-I`
//! interval (its rows at the round's time stamp) or the final totals —
//! each counter's change since the previous round scaled by its enabled
//! over running time, then summed into the aggregation's domains: the
//! file's own (`STAT_CONFIG`) or the one asked for at report time. Per
//! core, die, socket or node, the CPUs are placed by the file's
//! `CPU_TOPOLOGY`/`NUMA_TOPOLOGY` (a pipe stream has none: this machine's,
//! as perf does).

use super::StatFileError;
use pmx_count::stat::Aggregation;
use pmx_formats::report::{ReportRow, RowStatus, StatReport};
use pmx_perfdata::stat::{aggr_mode, StatConfig, StatCount, StatRecord};
use pmx_perfdata::topology::{parse_cpu_topology, parse_numa_topology, CpuIds, NumaNode};
use pmx_perfdata::{format::feature, Reader, Record};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// A `perf stat record` file read back.
#[derive(Debug, Clone)]
pub struct StatFile {
    /// The rows (perf's names, units and scaled values) in the
    /// aggregation: totals, per CPU (`CPU3`), per core (`S0-D0-C1`), die
    /// (`S0-D0`), socket (`S0`), node (`N0`) or thread (`tid N`); `-I`
    /// rounds each with their time stamp, in file order.
    pub report: StatReport,
    /// The header's target as perf words it: `'pipe'` for a stream, else
    /// the recording command line.
    pub target: String,
    /// The run's elapsed seconds (the final round's time).
    pub elapsed_s: f64,
    /// The comm of each thread of the thread map, where it has one.
    pub comms: Vec<(i32, String)>,
    /// Recorded with `-I`: the rows are rounds, printed as perf prints
    /// intervals, without a header or totals.
    pub intervals: bool,
    /// What perf warns about on the way (`warning: processing task data,
    /// aggregation mode not set`).
    pub warnings: Vec<String>,
}

/// One `STAT_ROUND` and the counts before it.
struct Round {
    time: u64,
    final_round: bool,
    counts: Vec<StatCount>,
}

/// The stat records of a file.
#[derive(Default)]
struct Records {
    rounds: Vec<Round>,
    threads: Vec<(i64, String)>,
    cpus: Vec<i32>,
    config: Option<StatConfig>,
}

fn records(
    reader: &mut Reader,
    bad: &dyn Fn(String) -> StatFileError,
) -> Result<Records, StatFileError> {
    let mut r = Records::default();
    let mut pending = Vec::new();
    while let Some(rec) = reader.next_record().map_err(|e| bad(e.to_string()))? {
        let Record::Other { kind, data, .. } = rec else {
            continue;
        };
        match StatRecord::parse(kind, data) {
            Some(Ok(StatRecord::Count(c))) => pending.push(c),
            Some(Ok(StatRecord::ThreadMap(t))) => r.threads = t,
            Some(Ok(StatRecord::CpuMap(c))) => r.cpus = c,
            Some(Ok(StatRecord::Config(c))) => r.config = Some(c),
            Some(Ok(StatRecord::Round { time, final_round })) => r.rounds.push(Round {
                time,
                final_round,
                counts: std::mem::take(&mut pending),
            }),
            Some(Err(m)) => return Err(bad(m)),
            None => {}
        }
    }
    // Counts after the last round (perf's `-I` files end with the final
    // readings and no round) are not printed, as perf prints rounds only.
    Ok(r)
}

/// Where each CPU is: the file's topology features, else (a pipe, or a
/// file without them) this machine's.
struct Places {
    cpus: Vec<CpuIds>,
    nodes: Vec<NumaNode>,
}

impl Places {
    fn of(reader: &Reader) -> Places {
        let f = reader.features();
        let cpus = f.raw.get(&feature::CPU_TOPOLOGY).zip(f.nrcpus);
        let cpus = cpus.and_then(|(b, (_, avail))| parse_cpu_topology(b, avail));
        let nodes = f.raw.get(&feature::NUMA_TOPOLOGY);
        let nodes = nodes.and_then(|b| parse_numa_topology(b));
        match (cpus, nodes) {
            (Some(cpus), Some(nodes)) => Places { cpus, nodes },
            (cpus, nodes) => {
                let here = super::machine_topology();
                Places {
                    cpus: cpus.unwrap_or(here.0),
                    nodes: nodes.unwrap_or(here.1),
                }
            }
        }
    }

    fn ids(&self, cpu: i32) -> CpuIds {
        let none = CpuIds {
            core: -1,
            die: -1,
            socket: -1,
        };
        usize::try_from(cpu)
            .ok()
            .and_then(|c| self.cpus.get(c).copied())
            .unwrap_or(none)
    }

    fn node(&self, cpu: i32) -> i64 {
        let found =
            (self.nodes.iter()).find(|n| u32::try_from(cpu).is_ok_and(|c| n.cpus.contains(&c)));
        found.map_or(-1, |n| n.node as i64)
    }
}

/// A domain: its order and its label.
type Domain = ((i64, i64, i64), String);

/// The domain of a count (CPU `cpu`, thread index `thread`) in `mode`.
fn domain(mode: u64, places: &Places, threads: &[(i64, String)], cpu: i32, thread: u32) -> Domain {
    let c = cpu as i64;
    let none = ((-1, -1, -1), String::new());
    if cpu < 0 && mode != aggr_mode::THREAD {
        return none;
    }
    let ids = places.ids(cpu);
    let (s, d, core) = (ids.socket as i64, ids.die as i64, ids.core as i64);
    match mode {
        aggr_mode::NONE => ((c, 0, 0), format!("CPU{cpu}")),
        aggr_mode::CORE => ((s, d, core), format!("S{s}-D{d}-C{core}")),
        aggr_mode::DIE => ((s, d, 0), format!("S{s}-D{d}")),
        aggr_mode::SOCKET => ((s, 0, 0), format!("S{s}")),
        aggr_mode::NODE => {
            let n = places.node(cpu);
            ((n, 0, 0), format!("N{n}"))
        }
        aggr_mode::THREAD => match threads.get(thread as usize) {
            Some((pid, _)) if *pid >= 0 => ((thread as i64, 0, 0), format!("tid {pid}")),
            _ => none,
        },
        _ => none,
    }
}

/// A count scaled by enabled over running time, as perf scales.
pub(super) fn scaled(value: u64, enabled: u64, running: u64) -> f64 {
    match (running, enabled) {
        (r, e) if r > 0 && r < e => value as f64 * e as f64 / r as f64,
        _ => value as f64,
    }
}

/// What a domain sums: value, enabled, running, its CPUs.
#[derive(Default)]
struct Sum {
    value: f64,
    ena: u64,
    run: u64,
    cpus: Vec<i32>,
}

/// Replays the rounds: each counter's previous reading, to take the
/// change from.
struct Replay<'a> {
    mode: u64,
    places: &'a Places,
    threads: &'a [(i64, String)],
    prev: HashMap<(u64, i32, u32), (u64, u64, u64)>,
}

impl Replay<'_> {
    /// The rows of `round` for the events (name, unit, scale, ids), with
    /// `time` (an interval's end) or without (totals).
    fn rows(&mut self, round: &Round, events: &[Event], time: Option<f64>) -> Vec<ReportRow> {
        let mut rows = Vec::new();
        for ev in events {
            let mut by: BTreeMap<Domain, Sum> = BTreeMap::new();
            for c in round.counts.iter().filter(|c| ev.ids.contains(&c.id)) {
                let now = (c.value, c.enabled, c.running);
                let before = self.prev.insert((c.id, c.cpu, c.thread), now);
                let (v0, e0, r0) = before.unwrap_or_default();
                let (v, e, r) = (
                    now.0.wrapping_sub(v0),
                    now.1.wrapping_sub(e0),
                    now.2.wrapping_sub(r0),
                );
                let key = domain(self.mode, self.places, self.threads, c.cpu, c.thread);
                let sum = by.entry(key).or_default();
                sum.value += scaled(v, e, r) * ev.scale;
                (sum.ena, sum.run) = (sum.ena.wrapping_add(e), sum.run.wrapping_add(r));
                if !sum.cpus.contains(&c.cpu) {
                    sum.cpus.push(c.cpu);
                }
            }
            if by.is_empty() {
                by.insert(((-1, -1, -1), String::new()), Sum::default());
            }
            for ((_, label), sum) in by {
                let mut row = ReportRow::new(&ev.name, &label);
                row.time = time;
                row.unit = ev.unit.clone();
                (row.enabled_ns, row.running_ns) = (Some(sum.ena), Some(sum.run));
                row.counters = Some(sum.cpus.len().max(1));
                match sum.run {
                    0 => row.status = RowStatus::NotCounted,
                    _ => row.value = Some(sum.value),
                }
                rows.push(row);
            }
        }
        rows
    }
}

/// An event of the file: name, unit, scale, counter ids.
struct Event {
    name: String,
    unit: String,
    scale: f64,
    ids: Vec<u64>,
}

/// Read the `perf stat record` file at `path` (`-`: standard input) in
/// its aggregation, or in `aggregation` when given (perf's `report -A`,
/// `--per-core`, …; a file of a task's counters keeps its own, with
/// perf's warning).
pub fn read(path: &Path, aggregation: Option<Aggregation>) -> Result<StatFile, StatFileError> {
    let name = path.display().to_string();
    let bad = |message: String| StatFileError::Read {
        path: name.clone(),
        message,
    };
    let source = match path.as_os_str() == "-" {
        true => Path::new("/dev/stdin"),
        false => path,
    };
    let mut reader = Reader::open(source).map_err(|e| bad(e.to_string()))?;
    let recs = records(&mut reader, &bad)?;
    if recs.config.is_none() && recs.rounds.is_empty() {
        return Err(bad(
            "no counts in it (not a 'perf stat record' file?)".into()
        ));
    }
    let config = recs.config.unwrap_or(StatConfig {
        aggr_mode: aggr_mode::GLOBAL,
        interval_ms: 0,
        scale: true,
    });
    let mut warnings = Vec::new();
    let task_data = recs.cpus.iter().all(|&c| c < 0);
    let mode = match aggregation {
        Some(_) if task_data => {
            warnings.push("warning: processing task data, aggregation mode not set".into());
            config.aggr_mode
        }
        Some(how) => super::perf_aggr(how),
        None => config.aggr_mode,
    };
    let events: Vec<Event> = (reader.events().iter().enumerate())
        .map(|(e, ev)| {
            let (unit, scale) = reader.unit_and_scale(e);
            Event {
                name: ev.name.clone(),
                unit: unit.unwrap_or("").to_string(),
                scale: scale.unwrap_or(1.0),
                ids: ev.ids.clone(),
            }
        })
        .collect();
    let places = Places::of(&reader);
    let mut replay = Replay {
        mode,
        places: &places,
        threads: &recs.threads,
        prev: HashMap::new(),
    };
    let intervals = config.interval_ms > 0;
    let mut rows = Vec::new();
    for (k, round) in recs.rounds.iter().enumerate() {
        let time = (intervals && round.time != 0).then(|| round.time as f64 / 1e9);
        let these = replay.rows(round, &events, time);
        // Totals: the last round's only.
        if time.is_some() || k + 1 == recs.rounds.len() {
            rows.extend(these);
        }
    }
    let elapsed = (recs.rounds.iter().rev())
        .find(|r| r.final_round)
        .or(recs.rounds.last())
        .map_or(0, |r| r.time);
    let target = match reader.features().cmdline.as_ref() {
        Some(argv) if !reader.is_pipe() => format!("'{}'", argv.join(" ")),
        _ => "'pipe'".to_string(),
    };
    let comms = (recs.threads.into_iter())
        .filter(|(pid, comm)| *pid >= 0 && !comm.is_empty())
        .map(|(pid, comm)| (pid as i32, comm))
        .collect();
    let elapsed_s = elapsed as f64 / 1e9;
    let report = StatReport {
        rows,
        elapsed_s: Some(elapsed_s),
        ..StatReport::default()
    };
    Ok(StatFile {
        report,
        target,
        elapsed_s,
        comms,
        intervals,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_scaled_as_perf_scales() {
        assert_eq!(scaled(100, 10, 10), 100.0);
        assert_eq!(scaled(100, 20, 10), 200.0);
        assert_eq!(scaled(100, 20, 0), 100.0);
    }

    #[test]
    fn domains_by_the_topology() {
        // CPUs 0 and 2: socket 0 core 0 and 1 (die 0); CPU 1: socket 1
        // core 0; node 0 holds 0 and 2, node 1 CPU 1.
        let id = |socket, core| CpuIds {
            core,
            die: 0,
            socket,
        };
        let node = |node, cpus: Vec<u32>| NumaNode {
            node,
            mem_total: 0,
            mem_free: 0,
            cpus,
        };
        let places = Places {
            cpus: vec![id(0, 0), id(1, 0), id(0, 1)],
            nodes: vec![node(0, vec![0, 2]), node(1, vec![1])],
        };
        let threads = vec![(-1, String::new()), (42, "w".to_string())];
        let label = |mode, cpu, thread| domain(mode, &places, &threads, cpu, thread).1;
        assert_eq!(label(aggr_mode::CORE, 2, 0), "S0-D0-C1");
        assert_eq!(label(aggr_mode::DIE, 1, 0), "S1-D0");
        assert_eq!(label(aggr_mode::SOCKET, 2, 0), "S0");
        assert_eq!(label(aggr_mode::NODE, 1, 0), "N1");
        assert_eq!(label(aggr_mode::NONE, 2, 0), "CPU2");
        assert_eq!(label(aggr_mode::GLOBAL, 2, 0), "");
        assert_eq!(label(aggr_mode::THREAD, -1, 1), "tid 42");
        assert_eq!(label(aggr_mode::CORE, -1, 0), "");
        // A CPU the topology does not know.
        assert_eq!(label(aggr_mode::SOCKET, 9, 0), "S-1");
        // Sockets before cores in the order.
        let key = |cpu| domain(aggr_mode::CORE, &places, &threads, cpu, 0).0;
        assert!(key(2) < key(1));
    }

    #[test]
    fn rounds_are_replayed_as_changes() {
        let places = Places {
            cpus: vec![],
            nodes: vec![],
        };
        let mut replay = Replay {
            mode: aggr_mode::GLOBAL,
            places: &places,
            threads: &[],
            prev: HashMap::new(),
        };
        let count = |cpu, value, t| StatCount {
            id: 7,
            cpu,
            thread: 0,
            value,
            enabled: t,
            running: t,
        };
        let events = vec![Event {
            name: "page-faults".into(),
            unit: String::new(),
            scale: 1.0,
            ids: vec![7],
        }];
        let round = |counts| Round {
            time: 0,
            final_round: false,
            counts,
        };
        let r1 = replay.rows(
            &round(vec![count(0, 10, 100), count(1, 5, 100)]),
            &events,
            Some(0.1),
        );
        assert_eq!(r1[0].value, Some(15.0));
        assert_eq!(r1[0].running_ns, Some(200));
        assert_eq!(r1[0].counters, Some(2));
        let r2 = replay.rows(
            &round(vec![count(0, 14, 200), count(1, 5, 200)]),
            &events,
            Some(0.2),
        );
        assert_eq!((r2[0].value, r2[0].running_ns), (Some(4.0), Some(200)));
        // A round without the event: not counted.
        let r3 = replay.rows(&round(vec![]), &events, None);
        assert_eq!(r3[0].status, RowStatus::NotCounted);
    }
}
