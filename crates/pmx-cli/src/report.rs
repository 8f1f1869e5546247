//! `pmx report`: a perf.data file (pmx's or perf's, file or pipe mode,
//! zstd-compressed or not) → hotspots per event, folded stacks or a flame
//! graph. Reading lives in `pmx-perfdata`, symbolization and aggregation in
//! `pmx-profile`; this module turns flags into options and renders.
//! A truncated or unfinished file (perf record killed, a cut copy) is
//! reported as far as its complete records go, with a `WARNING` line in
//! the header (and a `truncated` object in the JSON).

use crate::exit::UsageError;
use pmx_perfdata::Reader;
use pmx_profile::flame::{self, FlameOptions};
use pmx_profile::{EventProfile, KernelSymbols, MachineId, Options, Profile, Row, SortKey};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `pmx report`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Overhead is each row's share of the event's total period (the sum of the \
samples' periods), for the leaf frame of each sample: what \
`perf report --stdio --no-children` shows. User addresses are resolved \
from the ELF symbol tables of the mapped files (a file whose build-id \
differs from the recorded one is not used); JIT code in anonymous \
mappings from /tmp/perf-PID.map; [vdso] addresses from the running \
kernel's vDSO and kernel addresses from /proc/kallsyms when the file was \
recorded on this machine. A truncated file (perf record killed, a cut \
copy) is read up to its last complete record, with a warning.")]
pub struct ReportArgs {
    /// Input file ('-' reads a pipe-mode stream from standard input).
    #[arg(short, long, value_name = "FILE", default_value = "perf.data")]
    pub input: PathBuf,
    /// Row keys, comma-separated: comm, pid, dso, symbol, cpu.
    #[arg(short, long, value_name = "KEYS", default_value = "comm,dso,symbol")]
    pub sort: String,
    /// Only this event (its name as in the file, e.g. cpu-clock or cycles:u).
    #[arg(long, value_name = "E")]
    pub event: Option<String>,
    /// JSON instead of the table.
    #[arg(long, conflicts_with_all = ["folded"])]
    pub json: bool,
    /// Folded stacks (comm;outer;…;inner count) on standard output.
    #[arg(long)]
    pub folded: bool,
    /// Write a flame graph SVG (alone it prints no table; add --stdio for one).
    #[arg(long, value_name = "OUT.svg")]
    pub flamegraph: Option<PathBuf>,
    /// Hide rows below this overhead (percent).
    #[arg(long, value_name = "PCT", default_value_t = 0.0)]
    pub percent_limit: f64,
    /// Show at most N rows per event.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Add a Children column: each row's inclusive share (every sample
    /// counts once for each distinct function on its call chain), and sort
    /// by it, like perf's default `--children`.
    #[arg(long)]
    pub children: bool,
    /// Table on standard output (the default; accepted for perf compatibility).
    #[arg(long)]
    pub stdio: bool,
    /// Add the source file:line (DWARF) of each row's first sample.
    #[arg(long)]
    pub lines: bool,
    /// Look binaries up under this directory (like perf's --symfs).
    #[arg(long, value_name = "DIR")]
    pub symfs: Option<PathBuf>,
    /// No progress bar or notes on standard error (warnings still appear).
    #[arg(short, long)]
    pub quiet: bool,
}

fn sort_keys(s: &str) -> Result<Vec<SortKey>, UsageError> {
    let mut keys = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let k = SortKey::parse(part).ok_or_else(|| {
            UsageError(format!(
                "--sort: unknown key '{}' (known: comm, pid, dso, symbol, cpu)",
                part.trim()
            ))
        })?;
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    if keys.is_empty() {
        return Err(UsageError(
            "--sort: give at least one key (comm, pid, dso, symbol, cpu)".into(),
        ));
    }
    Ok(keys)
}

/// A progress bar on stderr, drawn only when stderr is a terminal and the
/// file is large.
struct Progress {
    on: bool,
    last: u64,
}

impl Progress {
    fn new(quiet: bool) -> Progress {
        // SAFETY: isatty only inspects the descriptor.
        let tty = unsafe { libc::isatty(2) } == 1;
        Progress {
            on: tty && !quiet,
            last: u64::MAX,
        }
    }

    fn update(&mut self, done: u64, total: Option<u64>) {
        let Some(total) = total else { return };
        if !self.on || total < (32 << 20) {
            return;
        }
        let pct = (done.min(total) * 100 / total.max(1)).min(100);
        if pct == self.last {
            return;
        }
        self.last = pct;
        let filled = (pct / 4) as usize;
        eprint!(
            "\r[{}{}] {pct:3}%  {} / {} MiB",
            "#".repeat(filled),
            " ".repeat(25 - filled),
            done >> 20,
            total >> 20
        );
    }

    fn finish(&self) {
        if self.on && self.last != u64::MAX {
            eprint!("\r{}\r", " ".repeat(60));
        }
    }
}

/// Run `pmx report`.
pub fn run(args: &ReportArgs) -> anyhow::Result<i32> {
    let sort = sort_keys(&args.sort)?;
    if !(0.0..=100.0).contains(&args.percent_limit) {
        return Err(UsageError(format!(
            "--percent-limit {}: give a percentage from 0 to 100",
            args.percent_limit
        ))
        .into());
    }
    let stdin = args.input.as_os_str() == "-";
    let path: &Path = if stdin {
        Path::new("/dev/stdin")
    } else {
        &args.input
    };
    let shown = if stdin {
        "standard input".to_string()
    } else {
        args.input.display().to_string()
    };
    let mut reader = match Reader::open(path) {
        Ok(r) => r,
        Err(pmx_perfdata::Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            anyhow::bail!("{shown}: no such file (record one with `pmx record` or `perf record`, or give -i FILE)")
        }
        Err(e) => anyhow::bail!("{shown}: {e}"),
    };
    let options = Options {
        sort,
        stacks: args.folded || args.flamegraph.is_some(),
        lines: args.lines,
        children: args.children,
        kallsyms: KernelSymbols::Load,
        this_machine: MachineId::current(),
        root: args.symfs.clone(),
    };
    let mut progress = Progress::new(args.quiet);
    let result = pmx_profile::build(&mut reader, &options, &mut |d, t| progress.update(d, t));
    progress.finish();
    let profile = result.map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
    for w in &profile.warnings {
        eprintln!("pmx: warning: {w}");
    }
    let selected: Vec<usize> = match &args.event {
        None => (0..profile.events.len()).collect(),
        Some(name) => {
            let found: Vec<usize> = profile
                .events
                .iter()
                .enumerate()
                .filter(|(_, e)| &e.name == name || e.name.split(':').next() == Some(name.as_str()))
                .map(|(i, _)| i)
                .collect();
            if found.is_empty() {
                let names: Vec<&str> = profile.events.iter().map(|e| e.name.as_str()).collect();
                return Err(UsageError(format!(
                    "--event {name}: not in {shown} (its events: {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ))
                .into());
            }
            found
        }
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if let Some(svg_path) = &args.flamegraph {
        let ev = stack_event(&profile, &selected)?;
        let e = &profile.events[ev];
        let title = format!("{} — {} ({} samples)", file_name(&shown), e.name, e.samples);
        let svg = flame::svg(
            &e.stacks,
            &FlameOptions {
                title,
                ..FlameOptions::default()
            },
        );
        std::fs::write(svg_path, svg)
            .map_err(|err| anyhow::anyhow!("{}: {err}", svg_path.display()))?;
        if !args.folded && !args.json && !args.quiet {
            eprintln!(
                "pmx: flame graph of '{}' written to {}",
                e.name,
                svg_path.display()
            );
        }
    }
    if args.folded {
        let ev = stack_event(&profile, &selected)?;
        out.write_all(flame::folded(&profile.events[ev].stacks).as_bytes())?;
    } else if args.json {
        let v = json(&profile, &selected, &shown, args);
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else if args.flamegraph.is_none() || args.stdio {
        table(&mut out, &profile, &selected, &shown, &options.sort, args)?;
    }
    out.flush()?;
    Ok(crate::exit::OK)
}

/// The event folded stacks and flame graphs are drawn for: the only
/// selected one with samples, else the first with samples.
fn stack_event(p: &Profile, selected: &[usize]) -> anyhow::Result<usize> {
    let with: Vec<usize> = selected
        .iter()
        .copied()
        .filter(|&i| p.events[i].samples > 0)
        .collect();
    match with.as_slice() {
        [] => anyhow::bail!("no samples to draw"),
        [one] => Ok(*one),
        [first, ..] => {
            eprintln!(
                "pmx: several events have samples; stacks are of '{}' (choose with --event)",
                p.events[*first].name
            );
            Ok(*first)
        }
    }
}

fn file_name(shown: &str) -> &str {
    shown.rsplit('/').next().unwrap_or(shown)
}

fn pct(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 * 100.0 / total as f64
    }
}

fn symbol_cell(r: &Row) -> String {
    match &r.symbol {
        Some(s) => format!("[{}] {s}", if r.kernel { 'k' } else { '.' }),
        None => String::new(),
    }
}

fn human(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else if n >= 10_000 {
        format!("{}K", n / 1000)
    } else {
        n.to_string()
    }
}

/// UTC date and time of a Unix time.
fn utc(secs: u64) -> String {
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn header_lines(p: &Profile, shown: &str, args: &ReportArgs) -> Vec<String> {
    let f = &p.features;
    let mut h = vec![format!(
        "pmx report: {shown} ({} mode, {:.1} MiB of records)",
        if p.pipe { "pipe" } else { "file" },
        p.data_bytes as f64 / (1 << 20) as f64
    )];
    if let Some(t) = &p.truncated {
        h.push(format!(
            "WARNING: {}",
            pmx_profile::truncation_warning(t, p.data_bytes)
        ));
    }
    if !p.pipe && args.input.as_os_str() != "-" {
        if let Ok(t) = std::fs::metadata(&args.input).and_then(|m| m.modified()) {
            if let Ok(d) = t.duration_since(std::time::UNIX_EPOCH) {
                h.push(format!("captured on: {}", utc(d.as_secs())));
            }
        }
    }
    let mut host = Vec::new();
    if let Some(x) = &f.hostname {
        host.push(x.clone());
    }
    if let Some(x) = &f.osrelease {
        host.push(format!("Linux {x}"));
    }
    if let Some(x) = &f.arch {
        host.push(x.clone());
    }
    if let Some((online, avail)) = f.nrcpus {
        host.push(format!("{online} of {avail} CPUs online"));
    }
    if !host.is_empty() {
        h.push(format!("host: {}", host.join(", ")));
    }
    if let Some(x) = &f.cpudesc {
        h.push(format!(
            "cpu: {x}{}",
            f.cpuid
                .as_ref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default()
        ));
    }
    if let Some(c) = &f.cmdline {
        h.push(format!("cmdline: {}", c.join(" ")));
    }
    if let Some(v) = &f.version {
        // perf writes its bare version ("6.1.187"); pmx writes "pmx 0.1.0".
        if v.starts_with(|c: char| c.is_ascii_digit()) {
            h.push(format!("written by: perf {v}"));
        } else {
            h.push(format!("written by: {v}"));
        }
    }
    if let Some((a, b)) = p.time_range {
        h.push(format!("samples span {:.3} s", (b - a) as f64 / 1e9));
    }
    if let Some(c) = &f.compressed {
        h.push(format!(
            "records zstd-compressed (level {}, ratio {})",
            c.level, c.ratio
        ));
    }
    let lost_records = p.stats.lost;
    let throttles = p
        .stats
        .records
        .get(&pmx_perfdata::format::record_type::THROTTLE)
        .copied()
        .unwrap_or(0);
    h.push(format!(
        "lost: {lost_records} records (LOST), {} samples (LOST_SAMPLES); throttled {throttles} times",
        p.stats.lost_samples
    ));
    if p.stats.unknown_id_samples > 0 {
        h.push(format!(
            "{} samples with an unknown event id skipped",
            p.stats.unknown_id_samples
        ));
    }
    for e in &p.events {
        h.push(format!(
            "event '{}': {} samples, event count {}{}",
            e.name,
            e.samples,
            e.period,
            if e.lost + e.throttled > 0 {
                format!(", lost {}, throttled {}", e.lost, e.throttled)
            } else {
                String::new()
            }
        ));
    }
    if !p.kernel_symbols_used && p.events.iter().any(|e| e.rows.iter().any(|r| r.kernel)) {
        h.push("kernel addresses shown raw: the file was not recorded on this machine (or kallsyms is unreadable)".into());
    }
    h
}

fn visible<'a>(e: &'a EventProfile, args: &ReportArgs) -> impl Iterator<Item = &'a Row> {
    let total = e.period;
    let limit = args.percent_limit;
    let children = args.children;
    e.rows
        .iter()
        .filter(move |r| {
            pct(
                if children {
                    r.children_period
                } else {
                    r.period
                },
                total,
            ) >= limit
        })
        .take(args.limit.unwrap_or(usize::MAX))
}

fn table(
    out: &mut dyn Write,
    p: &Profile,
    selected: &[usize],
    shown: &str,
    sort: &[SortKey],
    args: &ReportArgs,
) -> std::io::Result<()> {
    for l in header_lines(p, shown, args) {
        writeln!(out, "# {l}")?;
    }
    for &i in selected {
        let e = &p.events[i];
        writeln!(out, "#")?;
        writeln!(out, "# Samples: {} of event '{}'", human(e.samples), e.name)?;
        writeln!(out, "# Event count (approx.): {}", e.period)?;
        writeln!(out, "#")?;
        let mut heads: Vec<&str> = if args.children {
            vec!["Children", "Self", "Samples"]
        } else {
            vec!["Overhead", "Samples"]
        };
        let nums = heads.len();
        for k in sort {
            heads.push(match k {
                SortKey::Comm => "Command",
                SortKey::Pid => "Pid",
                SortKey::Dso => "Shared Object",
                SortKey::Symbol => "Symbol",
                SortKey::Cpu => "CPU",
            });
        }
        if args.lines {
            heads.push("Source");
        }
        let mut cells: Vec<Vec<String>> = Vec::new();
        for r in visible(e, args) {
            let mut c = vec![
                format!("{:.2}%", pct(r.period, e.period)),
                r.samples.to_string(),
            ];
            if args.children {
                c.insert(0, format!("{:.2}%", pct(r.children_period, e.period)));
            }
            for k in sort {
                c.push(match k {
                    SortKey::Comm => r.comm.clone().unwrap_or_default(),
                    SortKey::Pid => r.pid.map(|x| x.to_string()).unwrap_or_default(),
                    SortKey::Dso => r.dso.clone().unwrap_or_default(),
                    SortKey::Symbol => symbol_cell(r),
                    SortKey::Cpu => r.cpu.map(|x| format!("{x:03}")).unwrap_or_default(),
                });
            }
            if args.lines {
                c.push(r.source.clone().unwrap_or_default());
            }
            cells.push(c);
        }
        let mut widths: Vec<usize> = heads.iter().map(|h| h.len()).collect();
        for c in &cells {
            for (w, s) in widths.iter_mut().zip(c) {
                *w = (*w).max(s.chars().count());
            }
        }
        let n = heads.len();
        let mut line = String::from("#");
        for (j, h) in heads.iter().enumerate() {
            if j < nums {
                line.push_str(&format!(" {h:>w$} ", w = widths[j]));
            } else if j + 1 == n {
                line.push_str(&format!(" {h}"));
            } else {
                line.push_str(&format!(" {h:<w$} ", w = widths[j]));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
        writeln!(out, "#")?;
        for c in &cells {
            let mut line = String::from(" ");
            for (j, s) in c.iter().enumerate() {
                if j < nums {
                    line.push_str(&format!(" {s:>w$} ", w = widths[j]));
                } else if j + 1 == n {
                    line.push_str(&format!(" {s}"));
                } else {
                    line.push_str(&format!(" {s:<w$} ", w = widths[j]));
                }
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        if e.samples == 0 {
            writeln!(out, "  (no samples)")?;
        }
    }
    Ok(())
}

fn json(p: &Profile, selected: &[usize], shown: &str, args: &ReportArgs) -> serde_json::Value {
    use serde_json::json;
    let f = &p.features;
    let events: Vec<serde_json::Value> = selected
        .iter()
        .map(|&i| {
            let e = &p.events[i];
            let rows: Vec<serde_json::Value> = visible(e, args)
                .map(|r| {
                    let mut v = json!({
                        "overhead": (pct(r.period, e.period) * 1e4).round() / 1e4,
                        "samples": r.samples,
                        "period": r.period,
                        "comm": r.comm,
                        "pid": r.pid,
                        "dso": r.dso,
                        "symbol": r.symbol,
                        "kernel": r.kernel,
                        "cpu": r.cpu,
                    });
                    if args.lines {
                        v["source"] = json!(r.source);
                    }
                    if args.children {
                        v["children"] =
                            json!((pct(r.children_period, e.period) * 1e4).round() / 1e4);
                        v["children_samples"] = json!(r.children_samples);
                        v["children_period"] = json!(r.children_period);
                    }
                    v
                })
                .collect();
            json!({
                "name": e.name,
                "samples": e.samples,
                "period": e.period,
                "lost": e.lost,
                "throttled": e.throttled,
                "rows": rows,
            })
        })
        .collect();
    json!({
        "file": shown,
        "mode": if p.pipe { "pipe" } else { "file" },
        "data_bytes": p.data_bytes,
        "host": {
            "hostname": f.hostname, "osrelease": f.osrelease, "arch": f.arch,
            "nrcpus_online": f.nrcpus.map(|n| n.0), "nrcpus_available": f.nrcpus.map(|n| n.1),
            "cpudesc": f.cpudesc, "cpuid": f.cpuid, "version": f.version, "cmdline": f.cmdline,
        },
        "truncated": p.truncated.as_ref().map(|t| json!({
            "unfinished": t.unfinished,
            "stream_cut": t.stream_cut,
            "declared_data_end": t.declared_data_end,
            "file_size": t.file_len,
            "partial_record_bytes": t.partial_bytes,
            "missing_features": t.missing_features.iter()
                .map(|&f| pmx_perfdata::format::feature::name(f).map_or_else(|| f.to_string(), str::to_string))
                .collect::<Vec<_>>(),
        })),
        "lost_records": p.stats.lost,
        "lost_samples": p.stats.lost_samples,
        "sort": args.sort.split(',').map(str::trim).collect::<Vec<_>>(),
        "kernel_symbols": p.kernel_symbols_used,
        "events": events,
        "warnings": p.warnings,
    })
}
