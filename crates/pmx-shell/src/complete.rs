//! Completion scripts and the answers to them.
//!
//! The registration script (clap_complete's, per shell) calls pmx back
//! with `PMX_COMPLETE=<shell>` set and the words typed so far;
//! [`answer_if_asked`] sees the variable, completes against the clap tree
//! with [`with_names`]' completers attached, prints the candidates and
//! exits. Without the variable it returns at once (one `getenv`).

use clap::Command;
use clap_complete::engine::{ArgValueCompleter, CompletionCandidate};
use clap_complete::env::{Bash, Elvish, EnvCompleter, Fish, Powershell, Zsh};
use clap_complete::CompleteEnv;
use pmx::completion::{complete, NameKind};
use std::ffi::OsStr;

/// The environment variable the scripts set when they ask pmx to complete.
pub const VAR: &str = "PMX_COMPLETE";

/// A shell pmx writes a completion script for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    /// GNU bash (4.4 and newer sort nothing away).
    Bash,
    /// Z shell.
    Zsh,
    /// fish.
    Fish,
    /// Elvish.
    Elvish,
    /// PowerShell.
    Powershell,
}

impl Shell {
    /// Every shell, in the order `--help` lists them.
    pub const ALL: [Shell; 5] = [
        Shell::Bash,
        Shell::Zsh,
        Shell::Fish,
        Shell::Elvish,
        Shell::Powershell,
    ];

    fn engine(self) -> &'static dyn EnvCompleter {
        match self {
            Shell::Bash => &Bash,
            Shell::Zsh => &Zsh,
            Shell::Fish => &Fish,
            Shell::Elvish => &Elvish,
            Shell::Powershell => &Powershell,
        }
    }

    /// The shell's name as its users type it (`bash`, `powershell`).
    pub fn name(self) -> &'static str {
        self.engine().name()
    }
}

/// The script that registers `cmd`'s binary with `shell`. The script
/// runs `completer` (a command name looked up in `PATH`, or a path) to
/// get each completion; give `"pmx"` for the installed binary.
pub fn script(shell: Shell, cmd: &Command, completer: &str) -> Vec<u8> {
    let name = cmd.get_name();
    let bin = cmd.get_bin_name().unwrap_or(name);
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = shell
        .engine()
        .write_registration(VAR, name, bin, completer, &mut out);
    out
}

/// Answer a completion request and exit, when the shell made one
/// ([`VAR`] set); else return. `factory` builds the command tree; event
/// and metric completers are attached here ([`with_names`]).
pub fn answer_if_asked(factory: fn() -> Command) {
    if std::env::var_os(VAR).is_none() {
        return;
    }
    CompleteEnv::with_factory(move || with_names(factory()))
        .var(VAR)
        .complete();
}

/// `cmd` with the values of its event and metric arguments completed
/// from this CPU's names, in every subcommand: an argument whose value
/// is named `EVENTS` or `EVENT` (`-e`, `pmx explain EVENT…`) takes event
/// names, `--metrics` takes metric and metric-group names.
pub fn with_names(cmd: Command) -> Command {
    let cmd = cmd.mut_args(|arg| {
        let value_names = arg.get_value_names().unwrap_or_default();
        if value_names.iter().any(|v| v == "EVENTS" || v == "EVENT") {
            arg.add(ArgValueCompleter::new(events))
        } else if arg.get_long() == Some("metrics") {
            arg.add(ArgValueCompleter::new(metrics))
        } else {
            arg
        }
    });
    cmd.mut_subcommands(with_names)
}

fn events(current: &OsStr) -> Vec<CompletionCandidate> {
    names(NameKind::Events, current)
}

fn metrics(current: &OsStr) -> Vec<CompletionCandidate> {
    names(NameKind::Metrics, current)
}

fn names(kind: NameKind, current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(current) = current.to_str() else {
        return Vec::new();
    };
    complete(kind, current)
        .into_iter()
        .map(CompletionCandidate::new)
        .collect()
}
