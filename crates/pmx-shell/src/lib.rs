//! # pmx-shell — what an installed pmx carries besides itself
//!
//! Shell completions and man pages, both made from the command's own clap
//! tree (the CLI hands it over), so they say what `--help` says.
//!
//! - [`complete`]: `pmx completions SHELL` writes a script that registers
//!   pmx with bash, zsh, fish, elvish or PowerShell. The script asks pmx
//!   itself for each completion (clap_complete's engine: the shell runs
//!   `PMX_COMPLETE=bash pmx -- WORDS…`, [`complete::answer_if_asked`]
//!   answers at the start of `main`), so subcommands and flags are
//!   always those of the binary, and the values of `-e`/`--event` and
//!   `-M`/`--metrics` are this CPU's event and metric names
//!   ([`pmx::completion`]: what `pmx list --raw-dump` prints, `pmu/alias/`
//!   included).
//! - [`man`]: `pmx man` renders one roff page per command (`pmx.1`,
//!   `pmx-stat.1`, `pmx-events-fetch.1`, …) with clap_mangen's NAME,
//!   SYNOPSIS, DESCRIPTION, OPTIONS and SUBCOMMANDS, then pmx's own
//!   EXAMPLES ([`man::examples`]), EXIT STATUS and SEE ALSO.
//!
//! `pkg/deb.sh` puts both where a Debian system looks for them.

pub mod complete;
pub mod man;

pub use complete::Shell;
