//! `pmx top`: a live profile of the machine, a process or threads,
//! refreshed every few seconds — in the terminal (a full-screen UI) or
//! as plain tables (`--stdio`).
//!
//! The model: three parts, each doing one job.
//!
//! ```text
//! session thread            aggregator thread              caller
//! pmx_record::stream ─pipe─► pmx_profile::Live ◄─requests── top::Session::frame
//! (rings → pipe-mode          (rounds in; a snapshot,        (every -d: decay or zero,
//!  perf.data, a round          an annotation on request)      a Frame for a renderer)
//!  marker every drain)
//! ```
//!
//! - The **session** is `pmx record`'s engine streaming into an OS pipe
//!   until its stop token is set or its `-p`/`-t` targets are gone.
//! - The **aggregator** is report's code, fed round by round
//!   ([`pmx_profile::Live`]): the same replay, symbols (PLT, section
//!   bounds, JIT maps, the kernel cache), rows and groups as `pmx
//!   report`; between rounds it answers requests: a snapshot of the rows
//!   (then ages them: perf top's decay, or `-z`'s zero), or the
//!   annotation of a function from the samples of its instructions
//!   ([`pmx_profile::annotate_places`], `pmx annotate`'s code).
//! - [`top::Session`] turns requests into [`top::Frame`]s: the rows and
//!   the header's figures (sample rate, lost and throttled records, pmx's
//!   own CPU use). The rows stay bounded: rows under one sample are
//!   dropped by each decay, and the held rows are capped
//!   ([`top::TopOptions::max_rows`]); the symbol state (per-process
//!   maps, symbol caches) still grows with the processes seen.
//! - Renderers draw frames: [`stdio`] prints a table per refresh; [`ui`]
//!   is the terminal UI (ratatui over crossterm, the keys read and
//!   parsed by pmx itself), which gives the terminal back as it found it
//!   on every way out (quit, a signal, a panic, the target's exit, a
//!   terminal that hung up).
//!
//! [`run`] is the command as a call: options in, the session run
//! with the chosen renderer, a [`top::TopOutcome`] out.

pub mod signals;
pub mod stdio;
pub mod table;
pub mod top;
pub mod ui;

/// Run `pmx top`: start the session, refresh every `delay` with the
/// renderer `opts.stdio` chooses, until the end.
pub fn run(opts: &top::TopOptions) -> Result<top::TopOutcome, top::TopError> {
    top::check_targets(&opts.record.scope)?;
    let metrics = top::metrics(opts)?;
    if opts.stdio {
        for n in &opts.notes {
            eprintln!("pmx top: {n}");
        }
    }
    crate::signals::install();
    let mut session = top::Session::start(opts, !opts.stdio)?.with_metrics(metrics);
    let outcome = if opts.stdio {
        crate::stdio::run(&mut session, opts, &mut std::io::stdout().lock())
    } else {
        crate::ui::run(&mut session, opts)
    };
    session.stop()?;
    outcome
}
