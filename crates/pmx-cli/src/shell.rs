//! `pmx completions SHELL` and `pmx man [--dir DIR] [COMMAND…]`: the
//! completion script and the man pages of pmx's own command tree
//! ([`pmx_shell`]).

use crate::exit::UsageError;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `pmx completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to register pmx with. The script calls `pmx` (from PATH)
    /// for each completion: subcommands, flags, and this CPU's event names
    /// after -e/--event and metric names after -M/--metrics.
    #[arg(value_enum)]
    pub shell: pmx_shell::Shell,
}

/// Arguments of `pmx man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write every page (pmx.1, pmx-stat.1, …) into DIR, created if missing.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
    /// Without --dir: print this command's page on standard output (default: pmx's).
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

pub fn completions(args: &CompletionsArgs, cmd: clap::Command) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    out.write_all(&pmx_shell::complete::script(args.shell, &cmd, "pmx"))?;
    out.flush()?;
    Ok(crate::exit::OK)
}

pub fn man(args: &ManArgs, cmd: clap::Command) -> anyhow::Result<i32> {
    let pages = pmx_shell::man::pages(cmd);
    if let Some(dir) = &args.dir {
        for path in pmx_shell::man::write_dir(dir, &pages)? {
            eprintln!("{}", path.display());
        }
        return Ok(crate::exit::OK);
    }
    let wanted = std::iter::once("pmx".to_string())
        .chain(args.command.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    let page = pages.iter().find(|p| p.command == wanted).ok_or_else(|| {
        UsageError(format!(
            "no page for '{wanted}' (pmx man --dir DIR writes them all)"
        ))
    })?;
    let mut out = std::io::stdout().lock();
    out.write_all(page.roff.as_bytes())?;
    out.flush()?;
    Ok(crate::exit::OK)
}
