//! The end of a build: kernel addresses symbolized (with this machine's
//! kallsyms when it recorded the file), provisional frames merged, and per
//! event the rows (heaviest first, with source lines) and the named stacks.

use super::aggregate::{EventAcc, RawKey, NONE};
use super::groups::{GroupAcc, Moments};
use super::types::{
    EventProfile, GroupRow, GroupTable, KernelSymbols, Options, Row, SortKey, SOURCE_LINE_ROWS,
};
use pmx_symbols::kernel::Kallsyms;
use pmx_symbols::symbolize::{FrameId, Symbolizer, KERNEL_DSO};
use rustc_hash::FxHashMap as HashMap;

/// The kernel symbols to resolve with: none unless the file has kernel
/// addresses (`needed`) and was recorded `here`; then those given, or
/// this machine's (from the on-disk cache, else `/proc/kallsyms`).
pub(super) fn kernel_symbols(options: &Options, needed: bool, here: bool) -> Kallsyms {
    match &options.kallsyms {
        _ if !needed || !here => Kallsyms::default(),
        KernelSymbols::Load => pmx_symbols::kcache::load(options.symbols.dirs.cache.as_deref()).0,
        KernelSymbols::Given(k) => k.clone(),
        KernelSymbols::Off => Kallsyms::default(),
    }
}

/// One event's profile from its accumulator: `remap` maps provisional
/// kernel frames to resolved ones, `comms` the interned command names.
pub(super) fn event_profile(
    name: &str,
    acc: &EventAcc,
    sym: &mut Symbolizer,
    remap: &[FrameId],
    comms: &[String],
    threads: &HashMap<u32, u32>,
    options: &Options,
) -> EventProfile {
    let remap_frame = |f: FrameId| remap.get(f as usize).copied().unwrap_or(f);
    let mut rows = rows(acc, sym, &remap_frame, comms, threads, options);
    let group = acc
        .group
        .as_deref()
        .map(|g| group_table(g, sym, &remap_frame, comms, threads, options));
    if options.lines {
        for r in rows.iter_mut().take(SOURCE_LINE_ROWS).filter(|r| !r.kernel) {
            r.source = sym
                .source_line(r.example.0, r.example.1)
                .map(|(f, l)| format!("{f}:{l}"));
        }
    }
    let (binary_stacks, stacks, links) = match options.binary_stacks {
        true => super::named::binary_and_named(acc, sym, &remap_frame, comms, options.stacks),
        false => (
            Vec::new(),
            named_stacks(acc, sym, &remap_frame, comms),
            Vec::new(),
        ),
    };
    EventProfile {
        name: name.to_string(),
        samples: acc.samples,
        period: acc.period,
        lost: acc.lost,
        throttled: acc.throttled,
        rows,
        stacks,
        binary_stacks,
        links,
        group,
    }
}

/// The stacks of `acc` named (as [`EventProfile::stacks`]): stacks that
/// differ only in frames' ids resolving to one name are one, in the order
/// of their names.
fn named_stacks(
    acc: &EventAcc,
    sym: &Symbolizer,
    remap_frame: &dyn Fn(FrameId) -> FrameId,
    comms: &[String],
) -> Vec<(Vec<String>, u64, u64)> {
    let mut by_names: std::collections::BTreeMap<Vec<String>, (u64, u64)> = Default::default();
    for (k, &(samples, period)) in &acc.stacks {
        let mut names = vec![comms[k[0] as usize].clone()];
        let frames = super::aggregate::stack_frames(k).0;
        names.extend(frames.iter().map(|&f| sym.frame(remap_frame(f)).label()));
        let e = by_names.entry(names).or_default();
        e.0 += samples;
        e.1 = e.1.saturating_add(period);
    }
    by_names.into_iter().map(|(n, (a, b))| (n, a, b)).collect()
}

/// A leader's group table: its rows merged like [`rows`]' and named.
fn group_table(
    g: &GroupAcc<RawKey>,
    sym: &Symbolizer,
    remap_frame: &dyn Fn(FrameId) -> FrameId,
    comms: &[String],
    threads: &HashMap<u32, u32>,
    options: &Options,
) -> GroupTable {
    let mut merged: HashMap<RawKey, Moments> = HashMap::default();
    for (&k, m) in &g.rows {
        merged
            .entry(rekey(k, sym, remap_frame, options))
            .or_default()
            .merge(m);
    }
    let mut rows: Vec<GroupRow> = merged
        .into_iter()
        .map(|(k, moments)| {
            let mut row = named_row(k, sym, (comms, threads), options);
            row.samples = moments.samples;
            row.period = moments.sums.first().copied().unwrap_or(0);
            GroupRow { row, moments }
        })
        .collect();
    rows.sort_by(GroupRow::perf_order);
    GroupTable {
        members: g.members.clone(),
        rows,
        from_reads: true,
    }
}

/// `k` with its provisional kernel frame resolved (and the DSO of it).
fn rekey(
    mut k: RawKey,
    sym: &Symbolizer,
    remap_frame: &dyn Fn(FrameId) -> FrameId,
    options: &Options,
) -> RawKey {
    if k.frame != NONE {
        let f = remap_frame(k.frame);
        k.dso = if options.sort.contains(&SortKey::Dso) {
            sym.frame(f).dso
        } else {
            NONE
        };
        k.frame = if options.sort.contains(&SortKey::Symbol) {
            f
        } else {
            NONE
        };
    }
    k
}

/// Thread `tid` with its last command (perf names the idle task swapper,
/// a thread without a COMM `:tid`).
fn thread_of(tid: u32, comms: &[String], threads: &HashMap<u32, u32>) -> (u32, String) {
    let c = match threads.get(&tid) {
        Some(&c) => comms[c as usize].clone(),
        None if tid == 0 => "swapper".into(),
        None => format!(":{tid}"),
    };
    (tid, c)
}

/// A row named after its key, with no counts yet.
fn named_row(
    k: RawKey,
    sym: &Symbolizer,
    (comms, threads): (&[String], &HashMap<u32, u32>),
    options: &Options,
) -> Row {
    let frame = (k.frame != NONE).then(|| sym.frame(k.frame).clone());
    Row {
        comm: (k.comm != NONE).then(|| comms[k.comm as usize].clone()),
        pid: (k.pid != NONE).then_some(k.pid),
        dso: (options.sort.contains(&SortKey::Dso) && k.dso != NONE)
            .then(|| sym.dso(k.dso).short.clone()),
        symbol: frame.as_ref().map(|f| f.label()),
        binary: ((k.frame != NONE).then(|| super::named::link_binary(sym, k.frame))).or((options
            .sort
            .contains(&SortKey::Dso)
            && k.dso != NONE)
            .then_some(k.dso)),
        kernel: frame.as_ref().is_some_and(|f| f.kernel)
            || (k.frame == NONE && k.dso == KERNEL_DSO),
        cpu: (k.cpu != NONE).then_some(k.cpu),
        thread: (k.tid != NONE).then(|| thread_of(k.tid, comms, threads)),
        samples: 0,
        period: 0,
        children_samples: 0,
        children_period: 0,
        example: (0, 0),
        source: None,
    }
}

/// The rows of an event, heaviest first: self and children rows merged
/// where their provisional kernel frames resolved to one symbol.
fn rows(
    acc: &EventAcc,
    sym: &Symbolizer,
    remap_frame: &dyn Fn(FrameId) -> FrameId,
    comms: &[String],
    threads: &HashMap<u32, u32>,
    options: &Options,
) -> Vec<Row> {
    // (self samples, self period, children samples, children period,
    // example pid, example ip).
    let mut merged: HashMap<RawKey, (u64, u64, u64, u64, u32, u64)> = HashMap::default();
    for (&k, v) in &acc.rows {
        let e = merged
            .entry(rekey(k, sym, remap_frame, options))
            .or_insert((0, 0, 0, 0, v.2, v.3));
        e.0 = e.0.saturating_add(v.0);
        e.1 = e.1.saturating_add(v.1);
    }
    for (&k, v) in &acc.children {
        let e = merged
            .entry(rekey(k, sym, remap_frame, options))
            .or_insert((0, 0, 0, 0, v.2, v.3));
        e.2 = e.2.saturating_add(v.0);
        e.3 = e.3.saturating_add(v.1);
    }
    let marks: HashMap<RawKey, bool> = (acc.marks.iter())
        .map(|(&k, &m)| (rekey(k, sym, remap_frame, options), m))
        .collect();
    let mut first: HashMap<RawKey, u32> = HashMap::default();
    for (&k, &t) in &acc.first_tid {
        first
            .entry(rekey(k, sym, remap_frame, options))
            .or_insert(t);
    }
    let mut rows: Vec<Row> = merged
        .into_iter()
        .map(
            |(k, (samples, period, children_samples, children_period, pid, ip))| {
                let r = Row {
                    samples,
                    period,
                    children_samples,
                    children_period,
                    example: (pid, ip),
                    ..named_row(k, sym, (comms, threads), options)
                };
                let kernel = marks.get(&k).copied().unwrap_or(r.kernel);
                let thread = match (&r.thread, first.get(&k)) {
                    // A thread a live view forgot: the row's own command.
                    (None, Some(&t)) => Some(match threads.get(&t) {
                        Some(_) => thread_of(t, comms, threads),
                        None => (t, r.comm.clone().unwrap_or_default()),
                    }),
                    _ => r.thread,
                };
                Row {
                    kernel,
                    thread,
                    ..r
                }
            },
        )
        .collect();
    rows.sort_by(|a, b| {
        b.children_period
            .cmp(&a.children_period)
            .then(b.period.cmp(&a.period))
            .then(b.samples.cmp(&a.samples))
            .then_with(|| {
                (&a.comm, a.pid, &a.dso, &a.symbol, a.cpu, &a.thread)
                    .cmp(&(&b.comm, b.pid, &b.dso, &b.symbol, b.cpu, &b.thread))
            })
    });
    rows
}
