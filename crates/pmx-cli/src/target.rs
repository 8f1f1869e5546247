//! Where a measurement happens, from `-p`, `-t`, `-C`, `-a` or a command:
//! shared by `pmx stat` and `pmx record`; and how long (`--duration`).
//! The parsing is `pmx::stat`'s ([`Scope::from_flags`]); here its errors
//! become usage errors (exit 2).

use crate::exit::UsageError;
use pmx::stat::{FlagError, Scope};

pub use pmx::stat::TargetFlags;

fn usage(e: FlagError) -> anyhow::Error {
    UsageError(e.0).into()
}

/// The scope, or a usage error naming what is missing or contradictory;
/// `verb` is what the command does ("count", "record").
pub fn scope(f: &TargetFlags, verb: &str) -> anyhow::Result<Scope> {
    Scope::from_flags(f, verb).map_err(usage)
}

/// A CPU list (`0-3,8`) given with `flag`.
pub fn cpu_list(flag: &str, text: &str) -> anyhow::Result<Vec<u32>> {
    pmx::stat::cpu_list(flag, text).map_err(usage)
}

/// `--duration SEC`: a positive, finite number of seconds.
pub fn duration(seconds: Option<f64>) -> anyhow::Result<Option<std::time::Duration>> {
    pmx::stat::duration(seconds).map_err(usage)
}
