//! `pmx record` (being written).

/// Arguments of `pmx record`.
#[derive(Debug, clap::Args)]
pub struct RecordArgs {}

/// Run `pmx record`.
pub fn run(_args: &RecordArgs) -> anyhow::Result<i32> {
    anyhow::bail!("pmx record is not built yet")
}
