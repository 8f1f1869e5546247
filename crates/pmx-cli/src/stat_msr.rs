//! `pmx stat --backend msr` (being written).

use crate::stat::StatArgs;

pub fn run(_args: &StatArgs) -> anyhow::Result<i32> {
    anyhow::bail!("pmx stat --backend msr: not written yet")
}
