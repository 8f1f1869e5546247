//! `pmx annotate SYMBOL`: `pmx_profile::annotate`, rendered as text or JSON.
use pmx_profile::annotate::{annotate, render, AnnotateOptions, Syntax};

/// Arguments of `pmx annotate` (skid, colours and marks: see its header).
#[derive(Debug, clap::Args)]
pub struct AnnotateArgs {
    /// The function, as `pmx report` names it.
    symbol: String,
    /// Input file ('-' reads a pipe-mode stream from standard input).
    #[arg(short, long, default_value = "perf.data")]
    input: std::path::PathBuf,
    /// The function's binary (base name or path), when several have one.
    #[arg(short, long)]
    dso: Option<String>,
    /// Assembly syntax: att (objdump's default) or intel.
    #[arg(short = 'M', long, default_value = "att")]
    syntax: Syntax,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Run `pmx annotate` (a function without samples, or its code unreadable: exit 1).
pub fn run(a: &AnnotateArgs) -> anyhow::Result<i32> {
    let mut o = AnnotateOptions::default();
    (o.input, o.symbol, o.dso) = (a.input.clone(), a.symbol.clone(), a.dso.clone());
    o.syntax = a.syntax;
    render::to_stdout(&annotate(&o, &mut |_, _| {})?, a.json)?;
    Ok(crate::exit::OK)
}
