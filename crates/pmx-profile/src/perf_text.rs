//! What perf's sampling commands print, in perf's words and layout, for
//! pmx run as `perf`: an event's attr as `perf evlist -v` and the header's
//! `# event :` lines print it ([`attr`]), `perf evlist` ([`evlist`]),
//! `perf report --header`/`--header-only` ([`header`]), `--stats`
//! ([`stats`]), `--tasks` ([`tasks`]), and the hotspot table in perf's
//! `--stdio` layout ([`table`]: perf's header lines, its columns, its
//! `Samples: 2K` abbreviation).

mod attr;
mod filter;
mod table;
mod tasks;

pub use attr::attr;
pub use filter::Filter;
pub use table::{table, Columns};
pub use tasks::{tasks, write_tasks, Task};

use crate::report::Report;
use pmx_perfdata::format::record_type;
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

/// perf's number of samples in the table header: `2K` for 2723 (divided
/// by 1000 while it is 1000 or more, up to G).
pub fn abbreviated(mut n: u64) -> String {
    let units = ["", "K", "M", "G"];
    let mut i = 0;
    while n >= 1000 && i < units.len() - 1 {
        n /= 1000;
        i += 1;
    }
    format!("{n}{}", units[i])
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
    let mut line = |k: &str, v: Option<String>| match v {
        Some(v) => writeln!(out, "# {k} : {v}"),
        None => Ok(()),
    };
    line("hostname", f.hostname.clone())?;
    line("os release", f.osrelease.clone())?;
    line("perf version", f.version.clone())?;
    line("arch", f.arch.clone())?;
    line("nrcpus online", f.nrcpus.map(|n| n.0.to_string()))?;
    line("nrcpus avail", f.nrcpus.map(|n| n.1.to_string()))?;
    line("cpudesc", f.cpudesc.clone())?;
    line("cpuid", f.cpuid.clone())?;
    line("total memory", f.total_mem_kib.map(|k| format!("{k} kB")))?;
    line(
        "cmdline",
        f.cmdline.as_ref().map(|c| format!("{} ", c.join(" "))),
    )?;
    for e in head.iter().flat_map(|r| r.events()) {
        let ids = e.ids.iter().map(u64::to_string).collect::<Vec<_>>();
        let fields = attr(&e.attr, " = ").join(", ");
        line(
            "event",
            Some(format!(
                "name = {}, , id = {{ {} }}, {fields}",
                e.name,
                ids.join(", ")
            )),
        )?;
    }
    if let Some(c) = f.compressed {
        let kind = if c.kind == 1 { "Zstd" } else { "Unknown" };
        line(
            "compressed",
            Some(format!("{kind}, level = {}, ratio = {}", c.level, c.ratio)),
        )?;
    }
    writeln!(out, "# ========\n#")
}

/// A perf.data reader, for the commands that read only its header.
pub type FileReader = Reader;

/// Open a perf.data file (`-`: standard input).
pub fn open(path: &Path) -> Result<Reader, pmx_perfdata::Error> {
    if path.as_os_str() == "-" {
        Reader::open(Path::new("/dev/stdin"))
    } else {
        Reader::open(path)
    }
}
