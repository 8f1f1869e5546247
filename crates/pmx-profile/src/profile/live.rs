//! The incremental aggregator: a stream of records in (pipe-mode
//! perf.data, as [`pmx::record::stream`] writes it), a snapshot of the
//! profile out whenever asked — `report` is one snapshot at the end of a
//! file, `pmx top` one per refresh, `serve`'s pprof endpoint one per
//! request. The same replay, aggregation and rows as [`build`](super::build),
//! so a sort key, a symbol rule or a fix lands in all of them.
//!
//! Differences from a file's build, all because the profile is read
//! while it grows:
//!
//! - kernel addresses are resolved as they arrive (the symbols loaded once,
//!   from the cache `report` uses), not deferred to the end;
//! - [`Live::decay`] ages the rows (perf top's decay: every count scaled
//!   by a factor, rows that fall below one sample dropped), so memory stays
//!   bounded over hours; [`Live::zero`] forgets them (`-z`);
//! - a snapshot leaves the state as it was.
//!
//! [`pmx::record::stream`]: https://docs.rs/pmx

use super::addresses::{AddressAcc, AddressSamples};
use super::aggregate::{EventAcc, State};
use super::groups::decay_moments;
use super::replay::{recorded_here, Replay};
use super::rows;
use super::types::{Options, Profile};
use pmx_perfdata::Reader;
use pmx_symbols::symbolize::Symbolizer;
use rustc_hash::FxHashMap as HashMap;

/// A profile being built from a stream.
pub struct Live<'o> {
    reader: Reader,
    replay: Replay,
    state: State<'o>,
    options: &'o Options,
    ended: bool,
}

impl<'o> Live<'o> {
    /// Before the first record of `reader` (its header read: the attrs of
    /// the events). `addresses`: also keep the samples of every
    /// instruction address, for an annotate view ([`Live::addresses`]).
    pub fn new(reader: Reader, options: &'o Options, addresses: bool) -> Live<'o> {
        let here = recorded_here(reader.features(), &options.this_machine);
        let kallsyms = rows::kernel_symbols(options, true, here);
        let build_ids = reader
            .features()
            .build_ids
            .iter()
            .map(|b| (b.filename.clone(), b.build_id.clone()))
            .collect();
        let mut sym = Symbolizer::new(kallsyms, build_ids, options.root.clone(), &options.symbols);
        sym.allow_running_vdso(here);
        let mut state = State::new(options, sym);
        state.prune_exited = true;
        state.addresses = addresses.then(AddressAcc::default);
        let replay = Replay::new(&reader, here);
        Live {
            reader,
            replay,
            state,
            options,
            ended: false,
        }
    }

    /// Read and apply records until a round ends (a writer of
    /// [`pmx::record::stream`](https://docs.rs/pmx) ends one at least
    /// every 100 ms) or the stream does. Returns `false` once the stream
    /// has ended (everything it held applied).
    pub fn next_round(&mut self) -> Result<bool, pmx_perfdata::Error> {
        if self.ended {
            return Ok(false);
        }
        loop {
            let step = self.replay.next(
                &mut self.reader,
                &mut self.state,
                &self.options.this_machine,
            );
            match step {
                Ok(Some(true)) => return Ok(true),
                Ok(Some(false)) => {}
                Ok(None) => {
                    self.finish();
                    return Ok(false);
                }
                Err(e) => {
                    self.finish();
                    return Err(e);
                }
            }
        }
    }

    /// Whether the stream has ended.
    pub fn ended(&self) -> bool {
        self.ended
    }

    fn finish(&mut self) {
        self.ended = true;
        self.replay.flush_all(&mut self.state);
    }

    /// The profile as it stands: every event's rows (heaviest first) and
    /// stacks, with the counts the stream has reported (samples, lost,
    /// throttled). The state is left as it was.
    pub fn snapshot(&mut self) -> Profile {
        let st = &mut self.state;
        let events = self.reader.events().to_vec();
        st.accs.resize_with(events.len(), EventAcc::default);
        let total = st.sample_count;
        let unnamed = super::unnamed_warnings(&st.sym, &st.unresolved, total);
        let mut out = Profile {
            events: Vec::with_capacity(events.len()),
            features: self.reader.features().clone(),
            stats: self.reader.stats(),
            pipe: self.reader.is_pipe(),
            data_bytes: self.reader.bytes_read(),
            kernel_symbols_used: true,
            warnings: [st.sym.other_warnings(), &unnamed, &st.unwinder.warnings()].concat(),
            unnamed,
            time_range: self.replay.time_range,
            thread_reads: self.replay.thread_reads.clone(),
            truncated: self.reader.truncation().cloned(),
        };
        for (ev, acc) in events.iter().zip(&st.accs) {
            let (comms, threads) = (&st.comms, &st.thread_comm);
            let e = rows::event_profile(
                &ev.name,
                acc,
                &mut st.sym,
                &[],
                comms,
                threads,
                self.options,
            );
            out.events.push(e);
        }
        super::described::add_tables(&mut out);
        out
    }

    /// The samples of every instruction address so far (empty unless
    /// asked for at [`Live::new`]), for an annotate view.
    pub fn addresses(&self) -> Vec<AddressSamples> {
        let events = self.reader.events().len();
        match &self.state.addresses {
            Some(a) => a.clone().finish(&self.state.sym, &[], events),
            None => Vec::new(),
        }
    }

    /// Samples held now, over every event: every sample applied, aged
    /// by [`Live::decay`] as the rows are (so the samples applied between
    /// two refreshes are the second's figure before aging minus the
    /// first's after).
    pub fn samples(&self) -> u64 {
        self.state.sample_count
    }

    /// Each event's `precise_ip` (for
    /// [`annotate_places`](crate::annotate::annotate_places)).
    pub fn precise(&self) -> Vec<u8> {
        let events = self.reader.events();
        events.iter().map(|e| e.attr.precise_ip()).collect()
    }

    /// Age every count: samples and periods multiplied by `keep` (0..=1,
    /// perf top's decay), and the rows, stacks and group rows left with
    /// less than one sample dropped. `keep = 0` is [`Live::zero`].
    pub fn decay(&mut self, keep: f64) {
        let keep = keep.clamp(0.0, 1.0);
        let scale = |v: u64| (v as f64 * keep) as u64;
        for acc in &mut self.state.accs {
            acc.samples = scale(acc.samples);
            acc.period = scale(acc.period);
            decay_rows(&mut acc.rows, keep);
            decay_rows(&mut acc.children, keep);
            let (rows, children) = (&acc.rows, &acc.children);
            acc.first_tid
                .retain(|k, _| rows.contains_key(k) || children.contains_key(k));
            acc.marks.retain(|k, _| children.contains_key(k));
            acc.stacks.retain(|_, (s, p)| {
                *s = scale(*s);
                *p = scale(*p);
                *s > 0
            });
            if let Some(g) = acc.group.as_deref_mut() {
                decay_moments(&mut g.rows, keep);
            }
        }
        if let Some(a) = &mut self.state.addresses {
            a.decay(keep);
        }
        self.state.unresolved.retain(|_, n| {
            *n = scale(*n);
            *n > 0
        });
        self.state.sample_count = scale(self.state.sample_count);
    }

    /// Forget every count (perf top's `-z`); names, maps and symbols stay.
    pub fn zero(&mut self) {
        self.decay(0.0);
    }

    /// How much per-process and per-address state the symbolizer and
    /// the replay hold now (threads with a command name: `threads`).
    pub fn stats(&self) -> LiveStats {
        LiveStats {
            symbolizer: self.state.sym.stats(),
            threads: self.state.thread_comm.len(),
        }
    }

    /// Rows held now, over every event (self, children, stacks): what
    /// the aggregator's memory grows with.
    pub fn held_rows(&self) -> usize {
        self.state
            .accs
            .iter()
            .map(|a| a.rows.len() + a.children.len() + a.stacks.len())
            .sum()
    }
}

/// What a [`Live`] holds besides its rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiveStats {
    /// The symbolizer's processes, caches and binaries.
    pub symbolizer: pmx_symbols::symbolize::SymbolizerStats,
    /// Threads with a command name.
    pub threads: usize,
}

/// Scale the (samples, period, …) rows by `keep`; drop those under one sample.
fn decay_rows<K>(rows: &mut HashMap<K, (u64, u64, u32, u64)>, keep: f64) {
    rows.retain(|_, v| {
        v.0 = (v.0 as f64 * keep) as u64;
        v.1 = (v.1 as f64 * keep) as u64;
        v.0 > 0
    });
}
