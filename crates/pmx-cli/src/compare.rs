//! `pmx compare A B [C…]` (or `A1 A2 -- B1 B2`): did B change what A
//! measured? Flags → `pmx::compare::Options` → `pmx::compare::compare` →
//! `pmx_output::compare`. [`ab`] is `pmx stat --compare -- ./a ::: ./b`:
//! the commands run interleaved (`pmx::compare::runner`), each side's
//! runs summarized as `pmx stat -r N` would, then compared the same way.

use crate::db::DbArgs;
use crate::exit::UsageError;
use crate::stat_args::{usage, StatArgs};
use pmx::compare::{self, Report, Side, TmaOptions};
use pmx::stat;
use pmx_output::progress::RunProgress;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `pmx compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// One file per side (A B C …, the first the base); or, before `--`,
    /// the files of side A, pooled. pmx stat JSON/CSV, perf stat -x/-j.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// After `--`: the files of side B (pooled); a further `--` starts C.
    #[arg(last = true, value_name = "FILE")]
    pub more: Vec<String>,
    /// A change is significant when p is below this.
    #[arg(long, value_name = "P", default_value_t = compare::DEFAULT_THRESHOLD)]
    pub threshold: f64,
    /// Also compare the top-down trees (the files must name their CPU, or give --cpu).
    #[arg(long)]
    pub tma: bool,
    #[command(flatten)]
    pub tree: crate::analyze::TreeArgs,
    /// JSON output.
    #[arg(long, conflicts_with = "separator")]
    pub json: bool,
    /// CSV with this separator (one line per row and side after the base).
    #[arg(short = 'x', long = "field-separator", value_name = "SEP")]
    pub separator: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// Run `pmx compare`.
pub fn run(args: &CompareArgs) -> anyhow::Result<i32> {
    let tma = args.tma.then(|| TmaOptions {
        level: args.tree.level,
        database: args.db.options(),
        smt_on: args.tree.smt == "on",
    });
    let opts = compare::Options {
        sides: compare::sides_of(&args.files, &args.more),
        threshold: args.threshold,
        tma,
    };
    let report = compare::compare(&opts).map_err(|e| UsageError(e.to_string()))?;
    print!("{}", render(&report, args.json, args.separator.as_deref()));
    Ok(0)
}

fn render(report: &Report, json: bool, sep: Option<&str>) -> String {
    match (json, sep) {
        (true, _) => format!("{}\n", pmx_output::compare::json(report)),
        (false, Some(sep)) => pmx_output::compare::csv(report, sep),
        (false, None) => pmx_output::compare::text(report),
    }
}

/// `pmx stat --compare -r N -- A… ::: B…`: run A and B interleaved and
/// compare their counts (and `-M` metrics).
pub fn ab(args: &StatArgs) -> anyhow::Result<i32> {
    let msr = args.backend != "perf";
    let interval = args.interval.is_some();
    let commands = compare::runner::ab_commands(&args.command, args.repeat, interval, msr);
    let commands = commands.map_err(usage)?;
    let (groups, metrics, db) = args.event_groups(|| stat::DEFAULT_EVENTS.into())?;
    let view = crate::stat_render::StatView::of(args, crate::stat_render::aggregation(args))?;
    let (opts, how) = (crate::stat::run_options(args, &view)?, view.how);
    let plan = args.db.plan(&groups, db.as_ref())?;
    let mut session = stat::Session::new(
        plan,
        stat::SessionOptions {
            run: opts,
            aggregation: how,
            repeat: args.repeat,
            no_multiplex: args.no_multiplex,
            budget: pmx::schedule::CounterBudget::this_cpu(),
            topology: None,
            signals: true,
        },
    )
    .map_err(|e| UsageError(e.to_string()))?;
    let per_side = compare::runner::per_side(&session.options().run, &commands);
    let mut progress = RunProgress::new(args.perf.quiet, args.repeat, per_side.len());
    let ran = compare::runner::interleave(
        &mut session,
        &per_side,
        args.repeat,
        args.warmup,
        &mut |round, side| progress.update(round, side),
    );
    progress.finish();
    let runs = match ran {
        Ok(r) if r.iter().all(|r| !r.is_empty()) => r,
        Ok(_) => anyhow::bail!("stopped before every side ran"),
        Err(stat::RunError::Exec { cmd, reason }) => {
            eprintln!("pmx stat: cannot run '{cmd}': {reason}");
            return Ok(127);
        }
        Err(e) => anyhow::bail!("{e}"),
    };
    let sides: Vec<Side> = (runs.iter().zip(&commands).enumerate())
        .map(|(i, (r, cmd))| {
            let notes = session
                .fitted()
                .map(|f| f.notes.clone())
                .unwrap_or_default();
            pmx_output::compare::stat_side(
                compare::label(i),
                cmd,
                session.plan(),
                r,
                how,
                metrics.as_ref(),
                notes,
            )
        })
        .collect();
    let mut report = compare::compare_sides(&sides, compare::DEFAULT_THRESHOLD)
        .map_err(|e| UsageError(e.to_string()))?;
    let failed = compare::runner::failures(&runs, &commands);
    report.notes.extend(failed.iter().cloned());
    let mut out = args.output(false)?;
    out.write_all(render(&report, args.json, args.separator.as_deref()).as_bytes())?;
    // As hyperfine: a failing command fails the comparison.
    Ok(if failed.is_empty() { 0 } else { 1 })
}
