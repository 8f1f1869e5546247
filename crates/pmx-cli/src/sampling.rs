//! The sampling flags `pmx record` and `pmx top` share, declared once
//! ([`SamplingArgs`], flattened into both); their meaning and checks are
//! [`pmx_args::record_flags::SamplingFlags`]'s.

use crate::db::DbArgs;
use crate::exit::UsageError;
use pmx::record::{RecordError, Sampling};
use pmx_args::record_flags::SamplingFlags;

/// `-e`, `-c`, `-F`, `-g`, `--call-graph`, `-m`, `-b`, `-j`.
#[derive(Debug, Clone, clap::Args)]
pub struct SamplingArgs {
    /// Events to sample: names, pmu/…/ forms, raw rNNN, {A,B} groups
    /// ({A,B}:S: the leader samples, each sample reads every member);
    /// modifiers (:u, :k, :p, :pp, :ppp, period=N, freq=N) apply. Repeatable.
    #[arg(short = 'e', long = "event", value_name = "EVENTS")]
    pub events: Vec<String>,
    /// Sample every PERIOD events (the sample-after value).
    #[arg(
        short = 'c',
        long = "count",
        value_name = "PERIOD",
        conflicts_with = "freq"
    )]
    pub count: Option<u64>,
    /// Sample about HZ times a second (the kernel adjusts the period), or
    /// `max` for kernel.perf_event_max_sample_rate.
    #[arg(short = 'F', long = "freq", value_name = "HZ")]
    pub freq: Option<String>,
    /// Call chains by frame pointers (build the program with
    /// -fno-omit-frame-pointer).
    #[arg(short = 'g')]
    pub callgraph: bool,
    /// Call chains: fp (as -g), dwarf[,SIZE] (SIZE bytes of user stack per
    /// sample, default 8192, unwound by pmx), or lbr (Intel).
    #[arg(long = "call-graph", value_name = "MODE")]
    pub call_graph: Option<String>,
    /// Data pages of each CPU's ring buffer: a power of two (default 128).
    #[arg(short = 'm', long = "mmap-pages", value_name = "N")]
    pub mmap_pages: Option<usize>,
    /// Sample each event's taken branches (as -j any); needs a PMU with branch records (LBR, BRS, BRBE).
    #[arg(short = 'b', long = "branch-any", conflicts_with = "branch_filter")]
    pub branch_any: bool,
    /// Taken branches to sample: any,any_call,any_ret,ind_call,ind_jmp,call,cond,u,k,hv,in_tx,no_tx,abort_tx,save_type,stack,hw_index,priv,no_flags,no_cycles,counter.
    #[arg(short = 'j', long = "branch-filter", value_name = "LIST")]
    pub branch_filter: Option<String>,
}

impl SamplingArgs {
    /// Every flag checked, the events resolved with `db`'s database.
    pub fn check(&self, db: &DbArgs) -> anyhow::Result<Sampling> {
        let flags = SamplingFlags {
            events: self.events.clone(),
            count: self.count,
            freq: self.freq.clone(),
            g: self.callgraph,
            call_graph: self.call_graph.clone(),
            mmap_pages: self.mmap_pages,
            branch_filter: (self.branch_filter.clone()).or(self.branch_any.then(|| "any".into())),
        };
        flags.check(&db.options()).map_err(failure)
    }
}

/// `pmx record`'s memory-access flags (perf record's).
#[derive(Debug, Clone, clap::Args)]
pub struct DataArgs {
    /// Record each sample's data address and source (-e page-faults: the faulting address).
    #[arg(short = 'd', long = "data")]
    pub data: bool,
    /// Record the data's physical address too.
    #[arg(long)]
    pub phys_data: bool,
    /// Record the data address's page size too.
    #[arg(long)]
    pub data_page_size: bool,
    /// Record the code address's page size.
    #[arg(long)]
    pub code_page_size: bool,
    /// Record each sample's weight (a memory event's latency and instruction latency).
    #[arg(short = 'W', long = "weight")]
    pub weight: bool,
}

impl DataArgs {
    /// The flags as pmx-args' checks take them.
    pub fn flags(&self) -> pmx_args::record_flags::DataFlags {
        pmx_args::record_flags::DataFlags {
            data: self.data,
            phys_data: self.phys_data,
            data_page_size: self.data_page_size,
            code_page_size: self.code_page_size,
            weight: self.weight,
        }
    }
}

/// A sampling command's failure as the CLI reports it (bad input: exit 2).
pub(crate) fn failure(e: RecordError) -> anyhow::Error {
    match e {
        RecordError::Invalid(m) => UsageError(m).into(),
        e => anyhow::anyhow!("{e}"),
    }
}

#[cfg(test)]
mod tests {
    /// The help's "(default 128)" is the library's default.
    #[test]
    fn the_default_ring_in_the_help_is_the_librarys() {
        assert_eq!(pmx::record::DEFAULT_MMAP_PAGES, 128);
    }
}
