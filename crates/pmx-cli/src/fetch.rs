//! `pmx events fetch`: download the event tables for a CPU (Intel's perfmon
//! tables for Intel, Linux perf's x86 tables for AMD).
//!
//! The work is [`pmx::events_fetch`]; this module turns the flags into its
//! options, draws progress on stderr ([`pmx_output::fetch::ProgressBar`]),
//! turns Ctrl-C into a clean stop, and prints what was fetched and how to
//! use it ([`pmx_output::fetch::summary_text`]).

use crate::exit::UsageError;
use pmx::events_fetch::{EventsFetchError, EventsFetchOptions, Tables};
use pmx_output::fetch::ProgressBar;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// Arguments of `pmx events fetch`.
#[derive(Debug, clap::Args)]
pub struct FetchArgs {
    /// CPU key, as perf prints it: vendor-family-model[-stepping], family in
    /// decimal, model and stepping in hex (GenuineIntel-6-55-4). Default:
    /// this CPU.
    #[arg(long = "cpu", value_name = "ID", conflicts_with = "all")]
    pub cpu: Option<String>,
    /// Which tables: intel (Intel's perfmon repository) or perf (Linux
    /// perf's tools/perf/pmu-events/arch/x86: AMD Zen). Default: the ones
    /// pmx reads for the CPU's vendor.
    #[arg(long, value_name = "intel|perf", value_parser = parse_tables)]
    pub tables: Option<Tables>,
    /// Base URL of the tables: Intel's perfmon repository (default
    /// https://raw.githubusercontent.com/intel/perfmon/main/) or perf's x86
    /// directory (default: its plain/ view on git.kernel.org; a
    /// raw.githubusercontent.com mirror works too); a local copy (a
    /// directory or file:// URL) as well.
    #[arg(long, value_name = "URL")]
    pub from: Option<String>,
    /// Fetch every CPU's tables (Intel's: every file mapfile.csv lists;
    /// perf's: every AMD directory), not one CPU's.
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
    let opts = EventsFetchOptions {
        cpu: args.cpu.clone(),
        all: args.all,
        tables: args.tables,
        from: args.from.clone(),
        events_dir: args.events_dir.clone(),
        cancel: Some(&STOP),
    };
    let mut progress = ProgressBar::new(std::io::stderr().is_terminal(), term_columns);
    let guard = SigintGuard::install();
    let result = pmx::events_fetch::events_fetch(&opts, &mut progress);
    drop(guard);
    match result {
        Ok(report) => {
            let mut out = std::io::stdout().lock();
            out.write_all(pmx_output::fetch::summary_text(&report).as_bytes())?;
            Ok(crate::exit::OK)
        }
        Err(e @ EventsFetchError::Interrupted { .. }) => {
            eprintln!("pmx: {e}");
            Ok(INTERRUPTED)
        }
        Err(EventsFetchError::Fetch(e)) => Err(e.into()),
        Err(e) => Err(UsageError(e.to_string()).into()),
    }
}

fn parse_tables(s: &str) -> Result<Tables, String> {
    match s {
        "intel" => Ok(Tables::Intel),
        "perf" => Ok(Tables::Perf),
        _ => Err("intel or perf".to_string()),
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
