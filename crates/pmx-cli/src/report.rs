//! `pmx report` (being written).

/// Arguments of `pmx report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {}

/// Run `pmx report`.
pub fn run(_args: &ReportArgs) -> anyhow::Result<i32> {
    anyhow::bail!("pmx report is not built yet")
}
