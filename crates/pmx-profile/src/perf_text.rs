//! What perf's sampling commands print, in perf's words and layout, for
//! pmx run as `perf`: an event's attr as `perf evlist -v` and the header's
//! `# event :` lines print it ([`attr`]), `perf evlist` ([`evlist`]),
//! `perf report --header`/`--header-only` ([`header`]), `--stats`
//! ([`stats`]), `--tasks` ([`tasks`]), and the hotspot table in perf's
//! `--stdio` layout ([`table`]: perf's header lines, its columns, its
//! `Samples: 2K` abbreviation) with perf's call graph under each row
//! ([`graph`]; `--branch-history`'s branch [`notes`]).

mod attr;
mod filter;
pub mod graph;
pub mod notes;
mod table;
mod tasks;

pub use attr::attr;
pub use filter::Filter;
pub use graph::{Graph, GraphMode};
pub use table::{call_chains, print, table, Columns};
pub use tasks::{print_tasks, tasks, write_tasks, Task};

use crate::report::Report;
use pmx_perfdata::format::{feature, record_type};
use pmx_perfdata::read::FileFeatures;
use pmx_perfdata::Reader;
use std::io::Write;
use std::path::Path;

/// `perf evlist [-v]`: one line per event of the file at `path`: its name
/// (with `-v`, then its attr's fields).
pub fn evlist(path: &Path, verbose: bool) -> Result<String, pmx_perfdata::Error> {
    let reader = Reader::open(path)?;
    let mut s = String::new();
    for e in reader.events() {
        s.push_str(&e.name);
        if verbose {
            s.push_str(": ");
            s.push_str(&attr(&e.attr, ": ").join(", "));
        }
        s.push('\n');
    }
    Ok(s)
}

/// perf's number of samples in the table header, as its `convert_unit`
/// shortens it: divided by 1000 while it is over 1000, up to G (`2K` for
/// 2723, `1000K` for 1,000,000); `542 ` and `1000 ` keep a space for the
/// unit.
pub fn abbreviated(mut n: u64) -> String {
    let mut unit = ' ';
    for u in ['K', 'M', 'G'] {
        if n > 1000 {
            n /= 1000;
            unit = u;
        }
    }
    format!("{n}{unit}")
}

/// `perf report --stats`: the records of the file by type (`TOTAL` first,
/// each type's share), then each event's samples.
pub fn stats(out: &mut dyn Write, report: &Report) -> std::io::Result<()> {
    let recs = &report.profile.stats.records;
    let total: u64 = recs.values().sum();
    writeln!(out, "\nAggregated stats:")?;
    writeln!(out, "{:>16} events: {total:>10}", "TOTAL")?;
    for (&t, &n) in recs {
        let name = record_type::name(t).map_or_else(|| format!("#{t}"), str::to_string);
        let share = 100.0 * n as f64 / total.max(1) as f64;
        writeln!(out, "{name:>16} events: {n:>10}  ({share:4.1}%)")?;
    }
    for e in &report.profile.events {
        writeln!(out, "{} stats:", e.name)?;
        writeln!(out, "{:>16} events: {:>10}", "SAMPLE", e.samples)?;
    }
    Ok(())
}

/// A Unix time as C's `ctime` writes it (UTC): `Fri Nov 27 20:37:21 2026`.
fn ctime(secs: u64) -> String {
    let days = secs / 86400;
    let wday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][(days % 7) as usize];
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    // crate::render::utc: "YYYY-MM-DD HH:MM:SS UTC".
    let u = crate::render::utc(secs);
    let (y, m, d) = (&u[0..4], &u[5..7], &u[8..10]);
    let month = months[m.parse::<usize>().unwrap_or(1).clamp(1, 12) - 1];
    let day: u32 = d.parse().unwrap_or(0);
    format!("{wday} {month} {day:>2} {} {y}", &u[11..19])
}

/// `perf report --header`'s lines (`--header-only` prints only them):
/// the file's header and the features pmx reads, between `# ========`.
pub fn header(out: &mut dyn Write, report: &Report) -> std::io::Result<()> {
    let f = &report.profile.features;
    writeln!(out, "# ========")?;
    if let Some(t) = report.captured {
        writeln!(out, "# captured on    : {}", ctime(t))?;
    }
    let head = (report.file != "standard input")
        .then(|| Reader::open(&report.options.input).ok())
        .flatten();
    if let Some(h) = head.as_ref().and_then(|r| r.header().cloned()) {
        writeln!(out, "# header version : 1")?;
        writeln!(out, "# data offset    : {}", h.data.offset)?;
        writeln!(out, "# data size      : {}", h.data.size)?;
        writeln!(out, "# feat offset    : {}", h.data.offset + h.data.size)?;
    }
    line(out, "hostname", f.hostname.clone())?;
    line(out, "os release", f.osrelease.clone())?;
    line(out, "perf version", f.version.clone())?;
    line(out, "arch", f.arch.clone())?;
    line(out, "nrcpus online", f.nrcpus.map(|n| n.0.to_string()))?;
    line(out, "nrcpus avail", f.nrcpus.map(|n| n.1.to_string()))?;
    line(out, "cpudesc", f.cpudesc.clone())?;
    line(out, "cpuid", f.cpuid.clone())?;
    line(
        out,
        "total memory",
        f.total_mem_kib.map(|k| format!("{k} kB")),
    )?;
    line(
        out,
        "cmdline",
        f.cmdline.as_ref().map(|c| format!("{} ", c.join(" "))),
    )?;
    for e in head.iter().flat_map(|r| r.events()) {
        let ids = e.ids.iter().map(u64::to_string).collect::<Vec<_>>();
        let fields = attr(&e.attr, " = ").join(", ");
        line(
            out,
            "event",
            Some(format!(
                "name = {}, , id = {{ {} }}, {fields}",
                e.name,
                ids.join(", ")
            )),
        )?;
    }
    features_text(out, f)
}

/// One header line, `# KEY : VALUE`, when there is a value.
fn line(out: &mut dyn Write, k: &str, v: Option<String>) -> std::io::Result<()> {
    match v {
        Some(v) => writeln!(out, "# {k} : {v}"),
        None => Ok(()),
    }
}

/// The header's lines from the topology features on.
fn features_text(out: &mut dyn Write, f: &FileFeatures) -> std::io::Result<()> {
    let has = |x: u32| f.present.contains(&x);
    for (x, name) in [
        (feature::CPU_TOPOLOGY, "CPU_TOPOLOGY"),
        (feature::NUMA_TOPOLOGY, "NUMA_TOPOLOGY"),
    ] {
        if has(x) {
            writeln!(out, "# {name} info available, use -I to display")?;
        }
    }
    if let Some(m) = f
        .raw
        .get(&feature::PMU_MAPPINGS)
        .and_then(|b| pmu_mappings(b))
    {
        writeln!(out, "# pmu mappings: {m}")?;
    }
    if has(feature::CACHE) {
        writeln!(out, "# CACHE info available, use -I to display")?;
    }
    if let Some((first, last)) = f.sample_time {
        let at = |t: u64| format!("{}.{:06}", t / 1_000_000_000, t % 1_000_000_000 / 1000);
        writeln!(out, "# time of first sample : {}", at(first))?;
        writeln!(out, "# time of last sample : {}", at(last))?;
        let ms = last.saturating_sub(first) as f64 / 1e6;
        writeln!(out, "# sample duration : {ms:10.3} ms")?;
    }
    if has(feature::MEM_TOPOLOGY) {
        writeln!(out, "# MEM_TOPOLOGY info available, use -I to display")?;
    }
    if let Some(c) = f.compressed {
        let kind = if c.kind == 1 { "Zstd" } else { "Unknown" };
        line(
            out,
            "compressed",
            Some(format!("{kind}, level = {}, ratio = {}", c.level, c.ratio)),
        )?;
    }
    let missing: Vec<String> = (feature::TRACING_DATA..=feature::PMU_CAPS)
        .filter(|&x| !has(x))
        .filter_map(|x| feature::name(x).map(str::to_uppercase))
        .collect();
    if !missing.is_empty() {
        writeln!(out, "# missing features: {} ", missing.join(" "))?;
    }
    writeln!(out, "# ========\n#")
}

/// `perf buildid-list`: each build id of the file's BUILD_ID feature (or
/// a stream's HEADER_BUILD_ID records; `-`: standard input) and its binary.
pub fn buildid_list(path: &Path) -> Result<String, pmx_perfdata::Error> {
    let stdin = path.as_os_str() == "-";
    let r = Reader::open(if stdin { Path::new("/dev/stdin") } else { path })?;
    let lines = (r.features().build_ids.iter())
        .map(|e| format!("{} {}\n", pmx_symbols::elf::hex(&e.build_id), e.filename));
    Ok(lines.collect())
}

/// The PMU_MAPPINGS feature as perf prints it (`software = 1, …`): a
/// count, then per PMU its type and its name (a length-prefixed string).
fn pmu_mappings(b: &[u8]) -> Option<String> {
    let u32_at = |at: usize| Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?));
    let n = u32_at(0)?;
    let (mut at, mut v) = (4usize, Vec::new());
    for _ in 0..n.min(1024) {
        let kind = u32_at(at)?;
        let len = u32_at(at + 4)? as usize;
        let name = b.get(at + 8..at.checked_add(8 + len)?)?;
        let name = String::from_utf8_lossy(name.split(|&c| c == 0).next()?).into_owned();
        v.push(format!("{name} = {kind}"));
        at += 8 + len;
    }
    Some(v.join(", "))
}
