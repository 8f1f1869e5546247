//! `pmx info` (being written).

#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(_args: &InfoArgs) -> anyhow::Result<i32> {
    anyhow::bail!("pmx info: not written yet")
}
