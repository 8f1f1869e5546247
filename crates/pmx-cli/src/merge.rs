//! `pmx merge` (being written).

/// Arguments of `pmx merge`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {}

/// Run `pmx merge`.
pub fn run(_args: &MergeArgs) -> anyhow::Result<i32> {
    anyhow::bail!("pmx merge is not built yet")
}
