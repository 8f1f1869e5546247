//! `pmx events fetch`: download Intel's perfmon tables for a CPU.
//!
//! The work is [`pmx_events::fetch`]; this module picks the CPU, the origin
//! and the events directory from the flags, draws progress on stderr,
//! turns Ctrl-C into a clean stop, and prints what was fetched and how to
//! use it.

use crate::exit::UsageError;
use pmx_events::fetch::{
    fetch, FetchError, FetchOptions, FetchReport, Origin, Progress, Selection, DEFAULT_BASE_URL,
};
use pmx_model::cpu::{CpuId, Vendor};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Arguments of `pmx events fetch`.
#[derive(Debug, clap::Args)]
pub struct FetchArgs {
    /// CPU key, as perf prints it: vendor-family-model[-stepping], family in
    /// decimal, model and stepping in hex (GenuineIntel-6-55-4). Default:
    /// this CPU.
    #[arg(long = "cpu", value_name = "ID", conflicts_with = "all")]
    pub cpu: Option<String>,
    /// Base URL of Intel's perfmon repository (file paths in its
    /// mapfile.csv are relative to it); a local copy of the repository (a
    /// directory or file:// URL) works too.
    #[arg(long, value_name = "URL", default_value = DEFAULT_BASE_URL)]
    pub from: String,
    /// Fetch every file mapfile.csv lists (all Intel CPUs), not one CPU's.
    #[arg(long)]
    pub all: bool,
    /// Where to put the tables. Default: $PMX_EVENTS_DIR, then
    /// $XDG_CACHE_HOME/pmx/events or ~/.cache/pmx/events (where pmx looks
    /// for them by default).
    #[arg(long, value_name = "DIR")]
    pub events_dir: Option<PathBuf>,
}

/// Exit code after Ctrl-C (128 + SIGINT), as shells report it.
const INTERRUPTED: i32 = 130;

/// Run `pmx events fetch`.
pub fn run(args: &FetchArgs) -> anyhow::Result<i32> {
    let selection = if args.all {
        Selection::All
    } else {
        let cpu = match &args.cpu {
            Some(text) => text
                .parse::<CpuId>()
                .map_err(|e| UsageError(format!("--cpu {text}: {e}")))?,
            None => crate::host_cpu_id().ok_or_else(|| {
                UsageError(
                    "cannot tell this machine's CPU (no CPUID): name it with --cpu \
                     vendor-family-model, or fetch every table with --all"
                        .to_string(),
                )
            })?,
        };
        if cpu.vendor != Vendor::Intel {
            let whose = if args.cpu.is_some() {
                ""
            } else {
                "this machine's CPU: "
            };
            let e = FetchError::NotIntel { cpu };
            return Err(UsageError(format!("{whose}{e}")).into());
        }
        Selection::Cpu(cpu)
    };
    let origin = Origin::parse(&args.from).map_err(|e| UsageError(format!("--from {e}")))?;
    let (dest, place) = destination(args.events_dir.clone())?;

    let tty = std::io::stderr().is_terminal();
    let mut progress = Bar::new(tty);
    let opts = FetchOptions {
        origin,
        dest: dest.clone(),
        selection: selection.clone(),
        cancel: Some(&STOP),
    };
    let guard = SigintGuard::install();
    let result = fetch(&opts, &mut progress);
    drop(guard);
    match result {
        Ok(report) => {
            print_summary(&report, &selection, &place)?;
            Ok(crate::exit::OK)
        }
        Err(FetchError::Interrupted) => {
            eprintln!(
                "pmx: interrupted; nothing in {} was replaced",
                dest.display()
            );
            Ok(INTERRUPTED)
        }
        Err(e @ FetchError::NotIntel { .. }) => Err(UsageError(e.to_string()).into()),
        Err(e) => Err(e.into()),
    }
}

/// How the events directory was chosen.
enum Place {
    /// `--events-dir`, not where pmx looks by default.
    Flag,
    /// `PMX_EVENTS_DIR` (or `--events-dir` naming the same directory).
    Env,
    /// The user cache directory (or `--events-dir` naming it).
    Cache,
}

/// The events directory (absolute) and how it was chosen.
fn destination(flag: Option<PathBuf>) -> anyhow::Result<(PathBuf, Place)> {
    let env_set = std::env::var_os("PMX_EVENTS_DIR").is_some_and(|d| !d.is_empty());
    let default = pmx_events::default_events_dir(None).map(|d| absolute(&d));
    let is_default = match &flag {
        Some(f) => default.as_deref() == Some(absolute(f).as_path()),
        None => true,
    };
    let place = match (is_default, env_set) {
        (false, _) => Place::Flag,
        (true, true) => Place::Env,
        (true, false) => Place::Cache,
    };
    let dir = pmx_events::default_events_dir(flag).ok_or_else(|| {
        UsageError(
            "no events directory: neither HOME nor XDG_CACHE_HOME is set; \
             give --events-dir DIR or set PMX_EVENTS_DIR"
                .to_string(),
        )
    })?;
    if dir.exists() && !dir.is_dir() {
        return Err(UsageError(format!("{}: exists and is not a directory", dir.display())).into());
    }
    Ok((absolute(&dir), place))
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Print what was fetched, where to, and how to use it.
fn print_summary(report: &FetchReport, selection: &Selection, place: &Place) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let what = match selection {
        Selection::All => "every CPU".to_string(),
        Selection::Cpu(cpu) => match cpu.microarch() {
            Some(m) => format!("{cpu} ({}, {})", m.name, m.code),
            None => cpu.to_string(),
        },
    };
    writeln!(out, "Fetched Intel's perfmon tables for {what}")?;
    writeln!(out, "  from {}", report.origin.describe())?;
    writeln!(out, "  into {}", report.dest.display())?;
    if !report.patterns.is_empty() {
        writeln!(out, "  mapfile.csv rows: {}", report.patterns.join(", "))?;
    }
    let width = report.files.iter().map(|f| f.rel.len()).max().unwrap_or(0);
    const MAX_LISTED: usize = 40;
    for f in report.files.iter().take(MAX_LISTED) {
        let mut kind = f.kind.clone();
        if !f.version.is_empty() {
            kind.push_str(&format!(" {}", f.version));
        }
        writeln!(
            out,
            "    {:<width$}  {:>10}  {kind}",
            f.rel,
            human_size(f.bytes)
        )?;
    }
    if report.files.len() > MAX_LISTED {
        writeln!(out, "    … and {} more", report.files.len() - MAX_LISTED)?;
    }
    writeln!(
        out,
        "  {} files, {}",
        report.files.len(),
        human_size(report.total_bytes())
    )?;
    let dir = shell_quote(&report.dest.display().to_string());
    match place {
        Place::Cache => writeln!(
            out,
            "pmx reads this directory by default (when neither --events-dir nor \
             PMX_EVENTS_DIR is given): nothing to set."
        )?,
        Place::Env => writeln!(
            out,
            "PMX_EVENTS_DIR names this directory, so pmx reads it while the variable \
             stays set (to keep it, put 'export PMX_EVENTS_DIR={dir}' in your shell profile)."
        )?,
        Place::Flag => {
            writeln!(
                out,
                "To use them, pass --events-dir {dir} (e.g. pmx list --events-dir {dir})"
            )?;
            writeln!(out, "  or set: export PMX_EVENTS_DIR={dir}")?;
        }
    }
    Ok(())
}

/// Quote for a POSIX shell when needed.
fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%=".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `1.2 MiB`, `340.0 KiB`, `512 B`.
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// Progress on stderr: a redrawn bar on a terminal, one line per file
/// otherwise.
struct Bar {
    tty: bool,
    counter: String,
    name: String,
    size: Option<u64>,
    last: Option<Instant>,
    drawn: bool,
}

impl Bar {
    fn new(tty: bool) -> Bar {
        Bar {
            tty,
            counter: String::new(),
            name: String::new(),
            size: None,
            last: None,
            drawn: false,
        }
    }

    fn draw(&mut self, done: u64, force: bool) {
        if !self.tty {
            return;
        }
        let now = Instant::now();
        if !force
            && self
                .last
                .is_some_and(|t| now.duration_since(t) < Duration::from_millis(80))
        {
            return;
        }
        self.last = Some(now);
        let cols = term_columns().clamp(40, 200);
        let amount = match self.size {
            Some(total) if total > 0 => {
                let frac = (done as f64 / total as f64).clamp(0.0, 1.0);
                let cells = 20;
                let full = (frac * cells as f64).round() as usize;
                format!(
                    "[{}{}] {:>3}% {}/{}",
                    "#".repeat(full),
                    "-".repeat(cells - full),
                    (frac * 100.0).round() as u32,
                    human_size(done),
                    human_size(total)
                )
            }
            _ => human_size(done),
        };
        // Keep the line within the terminal: shorten the file name from the
        // left, keeping the "[i/n] " counter.
        let room = cols.saturating_sub(amount.chars().count() + 3 + self.counter.chars().count());
        let name_len = self.name.chars().count();
        let name: String = if name_len > room {
            let skip = name_len - room.saturating_sub(1);
            format!("…{}", self.name.chars().skip(skip).collect::<String>())
        } else {
            self.name.clone()
        };
        let label = format!("{} {name}", self.counter);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{label}  {amount}\x1b[K");
        let _ = err.flush();
        self.drawn = true;
    }

    fn clear(&mut self) {
        if self.tty && self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}

impl Progress for Bar {
    fn start(
        &mut self,
        rel: &str,
        location: &str,
        index: usize,
        count: Option<usize>,
        size: Option<u64>,
    ) {
        let of = count
            .map(|c| format!("{index}/{c}"))
            .unwrap_or_else(|| index.to_string());
        if self.tty {
            self.counter = format!("[{of}]");
            self.name = rel.to_string();
            self.size = size;
            self.last = None;
            self.draw(0, true);
        } else {
            eprintln!("pmx: fetching [{of}] {location}");
        }
    }

    fn advance(&mut self, done: u64) {
        self.draw(done, false);
    }

    fn finish(&mut self, _rel: &str, bytes: u64) {
        self.draw(bytes, true);
    }

    fn committing(&mut self) {
        self.clear();
    }

    fn failed(&mut self) {
        self.clear();
    }
}

/// The terminal's width on stderr (80 when it cannot be told).
fn term_columns() -> usize {
    if let Some(c) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
    {
        return c;
    }
    // SAFETY: TIOCGWINSZ writes a `winsize` into the pointed-to struct, which
    // lives for the call; a failing call leaves it zeroed.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        usize::from(ws.ws_col)
    } else {
        80
    }
}

/// Set by the SIGINT handler; the fetch polls it.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
    let msg = b"\npmx: interrupted, cleaning up (Ctrl-C again to quit at once)\n";
    // SAFETY: write(2) is async-signal-safe; the buffer is static.
    unsafe {
        libc::write(libc::STDERR_FILENO, msg.as_ptr().cast(), msg.len());
    }
}

/// A SIGINT handler for the duration of the fetch: the first Ctrl-C asks
/// the fetch to stop and clean up, a second one (the default action is
/// restored by `SA_RESETHAND`) kills the process — which still leaves no
/// partial file under a final name.
struct SigintGuard {
    old: Option<libc::sigaction>,
}

impl SigintGuard {
    fn install() -> SigintGuard {
        // SAFETY: the sigaction structs are plain data, zero-initialised and
        // filled in before use; the handler only touches an atomic and
        // calls write(2).
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t;
            act.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut act.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGINT, &act, &mut old) == 0 {
                SigintGuard { old: Some(old) }
            } else {
                SigintGuard { old: None }
            }
        }
    }
}

impl Drop for SigintGuard {
    fn drop(&mut self) {
        if let Some(old) = &self.old {
            // SAFETY: restores the action saved by `install`.
            unsafe {
                libc::sigaction(libc::SIGINT, old, std::ptr::null_mut());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_quotes() {
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(2048), "2.0 KiB");
        assert_eq!(human_size(3 << 20), "3.0 MiB");
        assert_eq!(shell_quote("/tmp/ev"), "/tmp/ev");
        assert_eq!(shell_quote("/tmp/my ev"), "'/tmp/my ev'");
        assert_eq!(shell_quote("/tmp/it's"), r"'/tmp/it'\''s'");
    }
}
