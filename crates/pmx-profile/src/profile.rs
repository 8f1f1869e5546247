//! One pass over a perf.data stream → per-event hotspot tables (and call
//! stacks when asked).
//!
//! Threads get their command names from COMM records (inherited at FORK),
//! processes their maps from MMAP/MMAP2 (inherited at FORK). Each sample
//! is attributed to its leaf frame (perf's "self" overhead, what
//! `perf report --no-children` shows); the weight is the sample's period,
//! as perf's Overhead column.
//!
//! The build is a pipeline: `replay` reads the records and applies them
//! in time order per round to the `aggregate` state (command names, maps,
//! per-event rows by sort keys, stacks), symbolizing user addresses as
//! they come (in a file's report, a plain sample adds a count to its
//! raw stack's entry in `interned`'s table, symbolized once per
//! distinct stack; a mapped file's plain samples are read in place and
//! counted in batches by `plain`, on the counting threads of `jobs` while
//! the replay reads on); `rows` then resolves kernel addresses and turns the
//! accumulators into [`Profile`]'s rows and stacks. The values are in
//! `types`.

mod addresses;
mod aggregate;
mod described;
mod groups;
mod interned;
mod jobs;
pub mod live;
mod named;
mod plain;
mod replay;
mod rows;
pub mod sink;
mod types;

use addresses::AddressAcc;
use aggregate::{EventAcc, State};
use pmx_perfdata::Reader;
use pmx_symbols::kernel::Kallsyms;
use pmx_symbols::symbolize::Symbolizer;
use replay::{recorded_here, Replay};
use rustc_hash::FxHashMap as HashMap;
use sink::SampleSink;

pub use addresses::{AddressSamples, Weight};
pub use groups::{for_each_sample, Deltas, MemberDelta, Moments};
pub use live::{Live, LiveStats};
pub use plain::set_jobs;
pub use types::{
    truncation_warning, BinaryStack, EventProfile, GroupRow, GroupTable, KernelSymbols, MachineId,
    Options, Profile, Row, SortKey, ThreadReads, INLINED, SOURCE_LINE_ROWS,
};

/// Whether the kernel addresses of a file with these features are the
/// running kernel's (`script` asks too).
pub fn kernel_is_here(f: &pmx_perfdata::read::FileFeatures, this: &MachineId) -> bool {
    recorded_here(f, this)
}

/// Build the profile of everything `reader` holds. `progress` is called
/// now and then with (bytes read, total bytes when known).
///
/// Records are replayed in time order per round, as perf does: the
/// records up to a FINISHED_ROUND are sorted by time and those not later
/// than the previous round's last time are applied (so a sample written
/// before the MMAP it needs, from another CPU's buffer, still finds it).
pub fn build(
    reader: &mut Reader,
    options: &Options,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<Profile, pmx_perfdata::Error> {
    build_full(reader, options, false, progress, None).map(|(p, _)| p)
}

/// [`build`], also giving every sample to `sink` (see [`sink`]).
pub fn build_with<'o>(
    reader: &mut Reader,
    options: &'o Options,
    progress: &mut dyn FnMut(u64, Option<u64>),
    sink: Option<&'o mut dyn SampleSink>,
) -> Result<Profile, pmx_perfdata::Error> {
    build_full(reader, options, false, progress, sink).map(|(p, _)| p)
}

/// [`build`], and the samples of every instruction address (the leaf
/// frames' addresses, per event), for `pmx annotate`.
pub fn build_with_addresses(
    reader: &mut Reader,
    options: &Options,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<(Profile, Vec<AddressSamples>), pmx_perfdata::Error> {
    build_full(reader, options, true, progress, None)
}

fn build_full<'o>(
    reader: &mut Reader,
    options: &'o Options,
    addresses: bool,
    progress: &mut dyn FnMut(u64, Option<u64>),
    sink: Option<&'o mut dyn SampleSink>,
) -> Result<(Profile, Vec<AddressSamples>), pmx_perfdata::Error> {
    let here = recorded_here(reader.features(), &options.this_machine);
    let build_ids: HashMap<String, Vec<u8>> = reader
        .features()
        .build_ids
        .iter()
        .map(|b| (b.filename.clone(), b.build_id.clone()))
        .collect();
    let mut sym = Symbolizer::new(
        Kallsyms::default(),
        build_ids,
        options.root.clone(),
        &options.symbols,
    );
    sym.defer_kernel();
    sym.allow_running_vdso(here);
    let mut st = State::new(options, sym);
    st.sink = sink;
    st.addresses = addresses.then(AddressAcc::default);
    st.interned = Some(Default::default());
    let mut replay = Replay::with_jobs(reader, here, plain::jobs(options.jobs));
    replay.stitch = crate::lbr::Stitch::new(reader, options.stitch_lbr);
    replay.run(reader, &mut st, &options.this_machine, progress)?;
    st.credit_interned();
    let State {
        mut sym,
        comms,
        thread_comm,
        mut accs,
        unwinder,
        sink,
        addresses,
        unresolved,
        sample_count,
        ..
    } = st;
    progress(reader.bytes_read(), reader.total_bytes());
    // Kernel addresses now: with this machine's symbols when it recorded
    // the file, loaded (from the cache) only when there are some.
    let kallsyms = rows::kernel_symbols(options, sym.has_deferred(), replay.here);
    let kernel_symbols_used = !kallsyms.is_empty();
    let remap = sym.resolve_deferred(kallsyms);
    if let Some(sink) = sink {
        sink.finish(&mut sym, &remap);
    }
    let events = reader.events().to_vec();
    let places = addresses.map_or_else(Vec::new, |a| a.finish(&sym, &remap, events.len()));
    accs.resize_with(events.len(), EventAcc::default);
    let unnamed = unnamed_warnings(&sym, &unresolved, sample_count);
    let mut out = Profile {
        events: Vec::new(),
        features: reader.features().clone(),
        stats: reader.stats(),
        pipe: reader.is_pipe(),
        data_bytes: reader.bytes_read(),
        kernel_symbols_used,
        warnings: [sym.other_warnings(), &unnamed, &unwinder.warnings()].concat(),
        unnamed,
        time_range: replay.time_range,
        thread_reads: std::mem::take(&mut replay.thread_reads),
        truncated: reader.truncation().cloned(),
    };
    if let Some(t) = &out.truncated {
        out.warnings
            .insert(0, truncation_warning(t, reader.bytes_read()));
    }
    for (ev, acc) in events.iter().zip(accs) {
        let e = rows::event_profile(
            &ev.name,
            &acc,
            &mut sym,
            &remap,
            &comms,
            &thread_comm,
            options,
        );
        out.events.push(e);
    }
    described::add_tables(&mut out);
    Ok((out, places))
}

/// One line per binary whose symbols could not be read, with the share of
/// the samples it left as raw addresses (their leaf frame), heaviest first.
fn unnamed_warnings(
    sym: &Symbolizer,
    unresolved: &HashMap<pmx_symbols::symbolize::DsoId, u64>,
    total: u64,
) -> Vec<String> {
    let mut lines: Vec<(u64, String)> = sym
        .unnamed()
        .iter()
        .map(|(dso, why)| {
            let path = &sym.dso(*dso).path;
            let n = unresolved.get(dso).copied().unwrap_or(0);
            let text = if n == 0 {
                format!("{path}: {why}: its addresses in call chains are left unresolved")
            } else {
                format!(
                    "{path}: {why}: {n} of {total} samples ({:.2}%) are shown as raw addresses",
                    100.0 * n as f64 / total.max(1) as f64
                )
            };
            (n, text)
        })
        .collect();
    lines.sort_by_key(|l| std::cmp::Reverse(l.0));
    lines.into_iter().map(|(_, t)| t).collect()
}
