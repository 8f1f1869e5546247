//! `pmx events fetch` (being written).

/// Arguments of `pmx events fetch`.
#[derive(Debug, clap::Args)]
pub struct FetchArgs {
    /// CPU key (vendor-family-model[-stepping]); default: this CPU.
    #[arg(long = "cpu", value_name = "ID")]
    pub cpu: Option<String>,
}

pub fn run(_args: &FetchArgs) -> anyhow::Result<i32> {
    anyhow::bail!("pmx events fetch: not written yet")
}
