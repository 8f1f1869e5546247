//! # pmx — the command-line tool
//!
//! This crate only turns flags into options and options into calls into the
//! library crates, then renders what they return. Exit codes are decided in
//! one place, [`exit`]:
//!
//! | code | meaning |
//! |------|---------|
//! | 0    | success |
//! | 1    | the operation failed (I/O, the kernel refused, …) |
//! | 2    | bad input: a malformed event spec, value or flag |
//! | N    | `pmx stat`/`pmx record -- cmd`: the command's own exit status |
//! | 128+N | … killed by signal N (Ctrl-C: 130, after the counts are written) |
//! | 127  | … the command could not be run |
//!
//! `pmx serve` exits 0 after SIGTERM or SIGINT.
//!
//! Run as `perf` (a symlink named `perf`), pmx takes perf's subcommands
//! (`perf_cli.rs`): `perf stat` is `pmx stat --format perf`.
#![cfg_attr(not(test), no_main)]

mod analyze;
mod annotate;
mod c2c;
mod check;
mod compare;
mod db;
mod decode;
mod encode;
mod exit;
mod explain;
mod fetch;
mod info;
mod list;
mod mem;
mod merge;
mod msr;
mod perf_cli;
mod perf_tools;
mod plot;
mod record;
mod regions;
mod report;
mod report_perf;
mod roofline;
mod sampling;
mod script;
mod serve;
mod shell;
mod stat;
mod stat_args;
mod stat_msr;
mod stat_perf;
mod stat_render;
mod symbols;
mod target;
mod tma;
mod top;

use clap::{CommandFactory, Parser, Subcommand};

/// pmx: CPU hardware performance counters, exactly.
#[derive(Debug, Parser)]
#[command(name = "pmx", version = env!("PMX_VERSION"), about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Count events for a command, processes, threads or CPUs.
    Stat(Box<stat::StatArgs>),
    /// Top-down analysis of a command: count the tree's inputs, print the tree.
    Tma(tma::TmaArgs),
    /// Check the counters against kernels with known answers.
    Check(check::CheckArgs),
    /// Measure the machine's ceilings and place a command under them.
    Roofline(roofline::RooflineArgs),
    /// Metrics and the top-down tree from counts saved earlier (pmx or perf CSV/JSON).
    Analyze(analyze::AnalyzeArgs),
    /// Is B faster than A? Counts and metrics of runs compared, with statistics.
    Compare(Box<compare::CompareArgs>),
    /// Draw an interval file (pmx stat -I, perf stat -I) as a line chart: SVG or PNG.
    Plot(plot::PlotArgs),
    /// Sample a command, processes or CPUs into a perf.data file.
    Record(Box<record::RecordArgs>),
    /// Hotspots, folded stacks and flame graphs from a perf.data file.
    Report(Box<report::ReportArgs>),
    /// Live hotspots of the machine, processes or threads, refreshed in the terminal (as perf top).
    Top(Box<top::TopArgs>),
    /// Every sample of a perf.data file as a line (like perf script), or JSON lines.
    Script(script::ScriptArgs),
    /// Memory accesses: which data, which level, how long (perf mem).
    Mem(mem::MemArgs),
    /// Cache lines shared between cores: HITMs and loads by level (perf c2c).
    C2c(c2c::C2cArgs),
    /// A function's machine code with the samples of each instruction and its source lines.
    Annotate(Box<annotate::AnnotateArgs>),
    /// Copy a perf.data file or stream: decompressed, with build ids (perf inject).
    Inject(perf_tools::InjectArgs),
    /// The events of a perf.data file (perf evlist).
    Evlist(perf_tools::FileArgs),
    /// The build ids a perf.data file lists (perf buildid-list).
    #[command(name = "buildid-list")]
    BuildidList(perf_tools::FileArgs),
    /// The build-id cache in perf's layout (~/.debug): add, list, remove.
    #[command(name = "buildid-cache")]
    BuildidCache(perf_tools::CacheArgs),
    /// Count system-wide continuously and serve /metrics to Prometheus.
    Serve(Box<serve::ServeArgs>),
    /// Combine result files (per host, per rank) into one report.
    Merge(merge::MergeArgs),
    /// Raw MSR access: read, write, and the plan of the msr backend.
    Msr(msr::MsrArgs),
    /// Encode event specs into control-register values and perf attrs.
    Encode(encode::EncodeArgs),
    /// Decode register values into their fields.
    Decode(decode::DecodeArgs),
    /// Describe this machine: CPU, PMU, kernel PMUs, topology, access.
    Info(info::InfoArgs),
    /// List the events pmx knows for a CPU.
    List(list::ListArgs),
    /// Show how events resolve: source, encoding, counters, description.
    Explain(explain::ExplainArgs),
    /// Manage event tables.
    Events {
        #[command(subcommand)]
        command: EventsCommand,
    },
    /// Print a shell's completion script (event and metric names included).
    Completions(shell::CompletionsArgs),
    /// Man pages of pmx and every command: one on standard output, or all into a directory.
    Man(shell::ManArgs),
}

#[derive(Debug, Subcommand)]
enum EventsCommand {
    /// Download a CPU's event tables into the cache (Intel's perfmon tables, Linux perf's for AMD).
    Fetch(fetch::FetchArgs),
}

pmx_sys::entry!(main); // std's runtime start skipped: pmx_sys::start
fn main() {
    // A shell asking for completions (the scripts of `pmx completions`).
    pmx_shell::complete::answer_if_asked(Cli::command);
    let line = perf_cli::command_line(&command_names);
    // `pmx stat` is parsed without building every other command's flags.
    let parsed = if line.get(1).is_some_and(|a| a == "stat") {
        // With `record`, an option given again overrides (perf's last wins).
        let parse = |cmd: clap::Command, words: &[std::ffi::OsString], again| {
            let mut m = cmd.args_override_self(again).try_get_matches_from(words)?;
            <stat::StatArgs as clap::FromArgMatches>::from_arg_matches_mut(&mut m)
        };
        // Common lines skip clap; perf's `stat record` takes stat's options after `record` too.
        let fast = pmx_args::stat_fast::common(&line[1..]).map(stat::StatArgs::common);
        let args = fast.map_or_else(|| parse(stat_command(), &line[1..], false), Ok);
        let args = args.and_then(|a| {
            match pmx_args::stat_file_args::record_words(&line[1..], &a.command) {
                Some(words) => parse(stat_command(), &words, true).map(stat::StatArgs::recording),
                None => Ok(a),
            }
        });
        args.map(|a| Cli {
            command: Command::Stat(Box::new(a)),
        })
    } else {
        Cli::try_parse_from(line)
    };
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            if let Some(msg) = refused_perf_option(&e) {
                eprintln!("pmx: {msg}");
                std::process::exit(exit::USAGE);
            }
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let result = match &cli.command {
        Command::Stat(args) if args.compare => compare::ab(args),
        Command::Stat(args) => stat::run(args),
        Command::Tma(args) => tma::run(args),
        Command::Check(args) => check::run(args),
        Command::Roofline(args) => roofline::run(args),
        Command::Analyze(args) => analyze::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Plot(args) => plot::run(args),
        Command::Record(args) => record::run(args),
        Command::Report(args) if mem::wanted(args) => mem::report(args),
        Command::Report(args) => report::run(args),
        Command::Top(args) => top::run(args),
        Command::Script(args) => script::run(args),
        Command::Mem(args) => mem::run(args),
        Command::C2c(args) => c2c::run(args),
        Command::Annotate(args) => annotate::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Inject(args) => perf_tools::inject(args),
        Command::Evlist(args) => perf_tools::file(args, false),
        Command::BuildidList(args) => perf_tools::file(args, true),
        Command::BuildidCache(args) => perf_tools::buildid_cache(args),
        Command::Merge(args) => merge::run(args),
        Command::Msr(args) => msr::run(args),
        Command::Encode(args) => encode::run(args),
        Command::Decode(args) => decode::run(args),
        Command::Info(args) => info::run(args),
        Command::List(args) => list::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Events {
            command: EventsCommand::Fetch(args),
        } => fetch::run(args),
        Command::Completions(args) => shell::completions(args, Cli::command()),
        Command::Man(args) => shell::man(args, Cli::command()),
    };
    std::process::exit(exit::from_result(result));
}

/// pmx's command names, as declared above (the perf personality takes
/// those that are perf's).
fn command_names() -> Vec<String> {
    let cli = Cli::command();
    (cli.get_subcommands().map(|c| c.get_name().to_string()))
        .filter(|n| n != "help")
        .collect()
}

fn stat_command() -> clap::Command {
    <stat::StatArgs as clap::Args>::augment_args(clap::Command::new("stat").bin_name("pmx stat"))
}

/// `pmx stat`/`record`/`report` given a perf option pmx does not take:
/// say so by name.
fn refused_perf_option(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue::String as Arg, ErrorKind};
    let sub = std::env::args().nth(1).unwrap_or_default();
    match e.get(ContextKind::InvalidArg) {
        Some(Arg(a)) if e.kind() == ErrorKind::UnknownArgument => {
            pmx_args::perf_personality::refused_option(&sub, a.split('=').next().unwrap_or(a))
        }
        _ => None,
    }
}
