//! perf report's flags on `pmx report` (the mapping is
//! `pmx_args::perf_personality::report`; perf's layout `pmx_profile::perf_text`).

use crate::exit::UsageError;
use pmx_args::perf_personality::report as perf;
use pmx_profile::perf_text::{self, Columns, Filter, Graph, GraphMode};

/// perf report's flags.
#[derive(Debug, clap::Args)]
pub struct PerfReportArgs {
    /// perf's output columns and keys: overhead,sample,period,comm,pid,dso,sym,cpu.
    #[arg(short = 'F', long = "fields", value_name = "KEYS")]
    pub fields: Option<String>,
    /// A Samples column (perf's layout).
    #[arg(short = 'n', long = "show-nr-samples")]
    pub nr_samples: bool,
    /// Self shares only (perf's --no-children; pmx's default).
    #[arg(long, overrides_with = "children")]
    pub no_children: bool,
    /// Call graphs in perf's layout: graph|flat|fractal|folded|none, threshold, caller|callee, function|address.
    #[arg(short = 'g', long = "call-graph", value_name = "SPEC", num_args = 0..=1, default_missing_value = "graph,0.5,caller")]
    pub call_graph: Option<String>,
    /// Call chains callers first (perf's --inverted).
    #[arg(short = 'G', long = "inverted")]
    pub inverted: bool,
    /// Use at most N frames of each call chain.
    #[arg(long, value_name = "N")]
    pub max_stack: Option<usize>,
    /// Print the file's header (perf's layout) before the table.
    #[arg(long)]
    pub header: bool,
    /// Print only the file's header.
    #[arg(long)]
    pub header_only: bool,
    /// The file's records by type, as perf's --stats.
    #[arg(long)]
    pub stats: bool,
    /// The file's tasks (pid, tid, ppid, comm), as perf's --tasks.
    #[arg(long, alias = "task")]
    pub tasks: bool,
    /// Only these commands (comma-separated).
    #[arg(short = 'c', long = "comms", alias = "comm", value_name = "COMMS")]
    pub comms: Option<String>,
    /// Only these processes.
    #[arg(long = "pid", value_name = "PIDS")]
    pub pids: Option<String>,
    /// Only the samples of these threads (shares stay of the whole file).
    #[arg(long = "tid", value_name = "TIDS")]
    pub tids: Option<String>,
    /// Only these shared objects.
    #[arg(short = 'd', long = "dsos", value_name = "DSOS")]
    pub dsos: Option<String>,
    /// Only these symbols.
    #[arg(short = 'S', long = "symbols", value_name = "SYMBOLS")]
    pub symbols: Option<String>,
    /// Only symbols whose name contains this.
    #[arg(long, value_name = "PART")]
    pub symbol_filter: Option<String>,
    /// More messages (accepted as perf's -v; pmx's warnings always show).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Call graphs without inlined frames (perf shows them by default).
    #[arg(long)]
    pub no_inline: bool,
    /// Columns separated by this character (perf's -t), numbers left-aligned.
    #[arg(short = 't', long = "field-separator", value_name = "SEP")]
    pub field_separator: Option<char>,
    /// perf's TUI: pmx has none, the table is printed (--stdio).
    #[arg(long)]
    pub tui: bool,
    /// Count the branches of the branch stacks (files recorded with -b/-j), rows by perf's branch keys.
    #[arg(short = 'b', long = "branch-stack")]
    pub branch_stack: bool,
    /// The samples, not their branches, of a file recorded with -b/-j (such files read as with -b by default, as perf).
    #[arg(long, conflicts_with = "branch_stack")]
    pub no_branch_stack: bool,
    /// With the branch table: the basic blocks by the LBR's cycles instead (perf's --total-cycles).
    #[arg(long)]
    pub total_cycles: bool,
    /// LBR call stacks (--call-graph lbr files) stitched across each thread's samples, as perf.
    #[arg(long)]
    pub stitch_lbr: bool,
    /// Each sample's branch stack added to its call graph, rows by srcline,symbol,dso (perf's --branch-history).
    #[arg(long, conflicts_with_all = ["branch_stack", "total_cycles"])]
    pub branch_history: bool,
    /// The memory accesses: perf's memory keys and layout, rows weighted by the accesses' weights.
    #[arg(long)]
    pub mem_mode: bool,
}

impl PerfReportArgs {
    /// perf's layout: run as `perf`, or given a flag of perf's layout.
    pub fn layout(&self) -> bool {
        let as_perf = Self::as_perf();
        let parts = self.header || self.header_only || self.stats;
        let t = self.field_separator.is_some() || self.call_graph.is_some() || self.inverted;
        as_perf || self.fields.is_some() || self.nr_samples || parts || t
    }

    /// pmx runs as `perf`.
    pub fn as_perf() -> bool {
        pmx_args::perf_personality::as_perf(&std::env::args_os().collect::<Vec<_>>())
    }

    /// `--tasks`: the file's tasks.
    pub fn tasks(&self, input: &std::path::Path) -> anyhow::Result<i32> {
        let r = perf_text::print_tasks(input, &mut std::io::stdout().lock());
        r.map_err(|e| anyhow::anyhow!("{}: {e}", input.display()))
            .map(|_| 0)
    }

    /// What pmx does not draw: perf's TUI.
    pub fn notes(&self) {
        if self.tui {
            eprintln!("pmx: pmx has no TUI report; the table follows (--stdio)");
        }
    }

    /// `--tid`'s thread ids.
    pub fn tids(&self) -> anyhow::Result<Option<Vec<u32>>> {
        let t = self.tids.as_deref().map(perf::tids).transpose();
        Ok(t.map_err(UsageError)?)
    }

    /// The filter and the keys to report with, for the shown `sort`.
    pub fn filter(&self) -> anyhow::Result<Filter> {
        let l = [&self.comms, &self.pids, &self.dsos, &self.symbols].map(|v| v.as_deref());
        Ok(Filter::parse(l, self.symbol_filter.as_deref()).map_err(UsageError)?)
    }

    /// perf's columns and pmx's row keys (`sort`: `-s` as given;
    /// `limit`: `--percent-limit`, perf's graph threshold too unless `-g`
    /// gives one).
    pub fn fields(
        &self,
        sort: Option<&str>,
        limit: f64,
    ) -> anyhow::Result<(perf::Fields, Columns)> {
        let f = perf::fields(self.fields.as_deref(), sort, self.nr_samples).map_err(UsageError)?;
        let spec = self.call_graph.as_deref().unwrap_or("graph,0.5");
        let d = perf::CallGraphDisplay::parse(spec, self.inverted).map_err(UsageError)?;
        let own = self
            .call_graph
            .as_deref()
            .is_some_and(|g| g.split(',').any(|w| w.parse::<f64>().is_ok()));
        let graph = Graph {
            mode: GraphMode::from_name(&d.mode).unwrap_or_default(),
            threshold: if limit > 0.0 && !own {
                limit
            } else {
                d.threshold
            },
            print_limit: d.print_limit,
            caller: d.caller,
            max_stack: self.max_stack,
            skip_self: self.fields.is_none() && sort.is_some_and(|s| s.starts_with("sym")),
        };
        let cols = Columns {
            overhead: f.overhead,
            children: f.children,
            samples: f.samples,
            period: f.period,
            header_shown: self.header,
            header_only: self.header_only,
            stats: self.stats,
            graph,
            separator: self.field_separator,
            quiet: false,
        };
        Ok((f, cols))
    }
}
