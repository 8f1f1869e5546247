//! `pmx serve` (being written).

/// Arguments of `pmx serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {}

/// Run `pmx serve`.
pub fn run(_args: &ServeArgs) -> anyhow::Result<i32> {
    anyhow::bail!("pmx serve is not built yet")
}
