//! `pmx stat record` and `pmx stat report`, as perf's `perf stat record`
//! and `perf stat report`: a counting run kept in perf.data (file, or a
//! pipe stream on `-o -`) as perf writes it — the events' attrs, their
//! names, units and scales (`EVENT_UPDATE`), the thread and CPU maps,
//! the stat config, one `STAT` record per counter and a final
//! `STAT_ROUND` with the elapsed time ([`pmx_perfdata::stat`]) — and read
//! back, perf's own files included, into a report perf's layout prints
//! (the header names `'pipe'` for a stream, the recording command line for
//! a file, as perf's does).
//!
//! [`split`] takes the `record [-o FILE]` / `report [-i FILE]` words off
//! the front of `pmx stat`'s command (perf's subcommands of `stat`);
//! [`write()`] writes a run; [`read()`] reads a file.

use crate::stat::{Aggregation, FlagError, StatPlan, StatRun};
use pmx_formats::report::{ReportRow, RowStatus, StatReport};
use pmx_perfdata::stat::{aggr_mode, event_update, EventUpdate, StatConfig, StatCount, StatRecord};
use pmx_perfdata::{format, FileAttr, Reader, Record};
use std::io::Write;
use std::path::{Path, PathBuf};

/// perf's subcommand of `stat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileCommand {
    /// `record [-o FILE]`: count as usual, and keep the counts in FILE
    /// (`-`: a pipe stream on standard output; default `perf.data`).
    Record(PathBuf),
    /// `report [-i FILE]`: print the counts FILE holds (`-`: standard
    /// input; default `perf.data`).
    Report(PathBuf),
}

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

/// Take perf's `record`/`report` subcommand and its `-o`/`-i` option off
/// the front of `command` (what remains is the command to count);
/// `repeat`: `-r`, which `record` refuses, as perf does.
pub fn split(command: &mut Vec<String>, repeat: u32) -> Result<Option<FileCommand>, FlagError> {
    let (short, long) = match command.first().map(String::as_str) {
        Some("record") => ("-o", "--output"),
        Some("report") => ("-i", "--input"),
        _ => return Ok(None),
    };
    let record = command[0] == "record";
    command.remove(0);
    let mut path = PathBuf::from("perf.data");
    while let Some(a) = command.first().cloned() {
        let value = if a == short || a == long {
            command.remove(0);
            if command.is_empty() {
                return Err(FlagError(format!("stat {a}: give a file name")));
            }
            command.remove(0)
        } else if let Some(v) = a.strip_prefix(&format!("{long}=")) {
            command.remove(0);
            v.to_string()
        } else if let Some(v) = a.strip_prefix(short).filter(|v| !v.is_empty()) {
            command.remove(0);
            v.to_string()
        } else {
            break;
        };
        path = PathBuf::from(value);
    }
    if record && repeat > 1 {
        return Err(FlagError(
            "stat record: -r cannot be used with record (perf refuses it too)".into(),
        ));
    }
    if record && command.first().is_some_and(|a| a.starts_with('-')) {
        return Err(FlagError(format!(
            "stat record: '{}': give stat's options before 'record' (perf stat [OPTIONS] record [-o FILE] COMMAND)",
            command[0]
        )));
    }
    if !record && !command.is_empty() {
        return Err(FlagError(format!(
            "stat report: unexpected '{}' (perf stat report takes -i FILE)",
            command[0]
        )));
    }
    Ok(Some(match record {
        true => FileCommand::Record(path),
        false => FileCommand::Report(path),
    }))
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

/// The records of `run` of `plan`, after the attrs: the events' updates,
/// the maps, the config, the counts, the final round. Counter ids are
/// 1, 2, … in instance order; an event counted nowhere gets one id of its
/// own. Returns the attrs (with their ids) and the records.
fn records(
    plan: &StatPlan,
    run: &StatRun,
    how: Aggregation,
    interval_ms: u64,
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
        .map(|&t| (t as i64, crate::stat::thread_comm(t).unwrap_or_default()))
        .map(|(t, c)| (t, if t < 0 { String::new() } else { c }))
        .collect();
    recs.push(StatRecord::ThreadMap(threads).to_bytes());
    recs.push(StatRecord::CpuMap(cpus).to_bytes());
    let config = StatConfig {
        aggr_mode: perf_aggr(how),
        interval_ms,
        scale: true,
    };
    recs.push(StatRecord::Config(config).to_bytes());
    for (k, i) in run.instances.iter().enumerate() {
        let count = StatCount {
            id: k as u64 + 1,
            cpu: i.cpu,
            thread: tids.iter().position(|&t| t == i.tid).unwrap_or(0) as u32,
            value: i.count.value,
            enabled: i.count.enabled,
            running: i.count.running,
        };
        recs.push(StatRecord::Count(count).to_bytes());
    }
    let time = run.elapsed.as_nanos() as u64;
    recs.push(
        StatRecord::Round {
            final_round: true,
            time,
        }
        .to_bytes(),
    );
    (attrs, recs)
}

/// Write the last of `runs` (one: `record` takes no `-r`) of `plan` to `path` (`-`: a pipe stream on
/// standard output) as `perf stat record` does, a file with this
/// process's command line (the header of its report).
pub fn write(
    path: &Path,
    plan: &StatPlan,
    runs: &[StatRun],
    how: Aggregation,
    interval_ms: u64,
) -> Result<(), StatFileError> {
    let err = |source| StatFileError::Write {
        path: path.display().to_string(),
        source,
    };
    let Some(run) = runs.last() else {
        return Ok(());
    };
    let (attrs, recs) = records(plan, run, how, interval_ms);
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
    let features = pmx_perfdata::Features {
        cmdline: Some(std::env::args().collect()),
        version: Some(format!("pmx {}", env!("CARGO_PKG_VERSION"))),
        ..Default::default()
    };
    w.finish(&features).map_err(err)?.flush().map_err(err)
}

/// A `perf stat record` file read back.
#[derive(Debug, Clone)]
pub struct StatFile {
    /// The rows (perf's names, units and scaled values) in the file's
    /// aggregation: totals, per CPU (`-A`) or per thread (`tid N`).
    pub report: StatReport,
    /// The header's target as perf words it: `'pipe'` for a stream, else
    /// the recording command line.
    pub target: String,
    /// The run's elapsed seconds (the final round's time).
    pub elapsed_s: f64,
    /// The comm of each thread of the thread map, where it has one.
    pub comms: Vec<(i32, String)>,
}

/// Read the `perf stat record` file at `path` (`-`: standard input).
pub fn read(path: &Path) -> Result<StatFile, StatFileError> {
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
    let (mut counts, mut threads, mut config, mut elapsed) = (Vec::new(), Vec::new(), None, None);
    while let Some(rec) = reader.next_record().map_err(|e| bad(e.to_string()))? {
        let Record::Other { kind, data, .. } = rec else {
            continue;
        };
        match StatRecord::parse(kind, data) {
            Some(Ok(StatRecord::Count(c))) => counts.push(c),
            Some(Ok(StatRecord::ThreadMap(t))) => threads = t,
            Some(Ok(StatRecord::Config(c))) => config = Some(c),
            Some(Ok(StatRecord::Round { time, .. })) => elapsed = Some(time),
            Some(Err(m)) => return Err(bad(m)),
            _ => {}
        }
    }
    if config.is_none() && counts.is_empty() {
        return Err(bad(
            "no counts in it (not a 'perf stat record' file?)".into()
        ));
    }
    let mode = config.map_or(aggr_mode::GLOBAL, |c| c.aggr_mode);
    let mut rows = Vec::new();
    for (e, ev) in reader.events().iter().enumerate() {
        let (unit, scale) = reader.unit_and_scale(e);
        let mine: Vec<&StatCount> = counts.iter().filter(|c| ev.ids.contains(&c.id)).collect();
        let domain = |c: &StatCount| match mode {
            aggr_mode::NONE if c.cpu >= 0 => format!("CPU{}", c.cpu),
            aggr_mode::THREAD => match threads.get(c.thread as usize) {
                Some((pid, _)) if *pid >= 0 => format!("tid {pid}"),
                _ => String::new(),
            },
            _ => String::new(),
        };
        let mut domains: Vec<String> = mine.iter().map(|c| domain(c)).collect();
        domains.dedup();
        if domains.is_empty() {
            domains.push(String::new());
        }
        for d in domains {
            let mut row = ReportRow::new(&ev.name, &d);
            row.unit = unit.unwrap_or("").to_string();
            let these = mine.iter().filter(|c| domain(c) == d);
            let (mut value, mut ena, mut run) = (0.0, 0u64, 0u64);
            for c in these {
                value += scaled(c) * scale.unwrap_or(1.0);
                ena += c.enabled;
                run += c.running;
            }
            (row.enabled_ns, row.running_ns) = (Some(ena), Some(run));
            match run {
                0 => row.status = RowStatus::NotCounted,
                _ => row.value = Some(value),
            }
            rows.push(row);
        }
    }
    let target = match reader.features().cmdline.as_ref() {
        Some(argv) if !reader.is_pipe() => format!("'{}'", argv.join(" ")),
        _ => "'pipe'".to_string(),
    };
    let comms = (threads.into_iter())
        .filter(|(pid, comm)| *pid >= 0 && !comm.is_empty())
        .map(|(pid, comm)| (pid as i32, comm))
        .collect();
    let elapsed_s = elapsed.unwrap_or(0) as f64 / 1e9;
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
    })
}

/// A count scaled by enabled over running time, as perf scales.
fn scaled(c: &StatCount) -> f64 {
    match (c.running, c.enabled) {
        (r, e) if r > 0 && r < e => c.value as f64 * e as f64 / r as f64,
        _ => c.value as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn perfs_subcommands_split_off_the_command() {
        let mut c = words(&["record", "-o", "-", "true", "-o", "x"]);
        let got = split(&mut c, 1);
        assert_eq!(got, Ok(Some(FileCommand::Record("-".into()))));
        assert_eq!(c, words(&["true", "-o", "x"]));
        let mut c = words(&["record", "--output=f.data", "sleep", "1"]);
        assert_eq!(
            split(&mut c, 1),
            Ok(Some(FileCommand::Record("f.data".into())))
        );
        assert_eq!(c, words(&["sleep", "1"]));
        let mut c = words(&["report", "-if.data"]);
        assert_eq!(
            split(&mut c, 1),
            Ok(Some(FileCommand::Report("f.data".into())))
        );
        let mut c = words(&["report"]);
        assert_eq!(
            split(&mut c, 1),
            Ok(Some(FileCommand::Report("perf.data".into())))
        );
        let mut c = words(&["ls", "record"]);
        assert_eq!(split(&mut c, 1), Ok(None));
        assert_eq!(c, words(&["ls", "record"]));
        let mut c = words(&["record", "-o"]);
        assert!(split(&mut c, 1).unwrap_err().0.contains("give a file name"));
        let mut c = words(&["record", "-o", "f", "-e", "cycles", "true"]);
        assert!(split(&mut c, 1).unwrap_err().0.contains("before 'record'"));
        let mut c = words(&["record", "true"]);
        assert!(split(&mut c, 2).unwrap_err().0.contains("-r cannot"));
        let mut c = words(&["report", "true"]);
        assert!(split(&mut c, 1)
            .unwrap_err()
            .0
            .contains("unexpected 'true'"));
    }

    #[test]
    fn counts_are_scaled_as_perf_scales() {
        let c = |value, enabled, running| StatCount {
            id: 1,
            cpu: -1,
            thread: 0,
            value,
            enabled,
            running,
        };
        assert_eq!(scaled(&c(100, 10, 10)), 100.0);
        assert_eq!(scaled(&c(100, 20, 10)), 200.0);
        assert_eq!(scaled(&c(100, 20, 0)), 100.0);
    }
}
