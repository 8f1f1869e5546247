//! `pmx script`: every sample as `perf script` prints it, or JSON lines.

use pmx_profile::script::{script_with_progress, ScriptError as E, ScriptOptions};

/// Arguments of `pmx script` (call chains are shown when the file has them).
#[derive(Debug, clap::Args)]
pub struct ScriptArgs {
    /// Input file ('-' reads a pipe-mode stream from standard input).
    #[arg(short, long, value_name = "FILE", default_value = "perf.data")]
    input: std::path::PathBuf,
    /// Fields as perf script's -F: [hw:|sw:|trace:|raw:][+|-]comm,tid,pid,time,cpu,event,trace,ip,sym,symoff,dso,period,brstack,brstacksym,brstackoff,brstackinsn,brstackinsnlen,brcntr,addr,data_src,weight,ins_lat,phys_addr,data_page_size,code_page_size.
    #[arg(short = 'F', long, value_name = "FIELDS", allow_hyphen_values = true)]
    fields: Vec<String>,
    /// One JSON object per sample (time in ns, addresses as "0x…" strings).
    #[arg(long)]
    json: bool,
    /// Do not print call chains.
    #[arg(short = 'G', long)]
    hide_call_graph: bool,
    /// Symbol names: short (perf's: no parameters), full (signatures), none (mangled).
    #[arg(long, value_name = "STYLE", default_value = "short")]
    demangle: pmx_symbols::Demangle,
    /// Print context-switch records (recorded with `record --switch-events`).
    #[arg(long)]
    show_switch_events: bool,
    /// Print namespace records (recorded with `record --namespaces`).
    #[arg(long)]
    show_namespace_events: bool,
    /// Threads formatting the lines (0: the machine's cores); the output is the same with any number.
    #[arg(long, value_name = "N", default_value_t = 1)]
    jobs: usize,
    /// LBR call stacks (--call-graph lbr files) stitched across each thread's samples, as perf.
    #[arg(long)]
    stitch_lbr: bool,
}

/// Run `pmx script`; a closed pipe (`| head`) ends it quietly.
pub fn run(a: &ScriptArgs) -> anyhow::Result<i32> {
    let (input, fields) = (a.input.clone(), a.fields.clone());
    let mut opts = ScriptOptions::new(input, fields, a.json, !a.hide_call_graph);
    (opts.symbols, opts.jobs) = (crate::symbols::options(a.demangle), a.jobs);
    opts.show_switch_events = a.show_switch_events;
    (opts.show_namespace_events, opts.stitch_lbr) = (a.show_namespace_events, a.stitch_lbr);
    let mut progress = pmx_output::progress::Progress::beside_stdout(false);
    let out = &mut std::io::stdout().lock();
    let summary = script_with_progress(&opts, out, &mut |d, t| progress.update(d, t));
    progress.finish();
    let summary = match summary {
        Err(E::Output(e)) => return Err(e.into()),
        Err(e @ E::Fields(_)) => return Err(crate::exit::UsageError(e.to_string()).into()),
        r => r?,
    };
    for w in summary.warnings {
        eprintln!("pmx: warning: {w}");
    }
    Ok(crate::exit::OK)
}
