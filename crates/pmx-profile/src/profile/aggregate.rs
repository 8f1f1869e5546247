//! Aggregation by sort keys: the replay's state (command names per
//! thread, the symbolizer's maps) and, per event, the rows keyed by the
//! `--sort` keys, the inclusive ("children") rows and the call stacks,
//! all with interned ids (resolved to names at the end, in `rows`).

use super::addresses::{AddressAcc, Weight};
use super::groups::GroupAcc;
use super::interned::{Resolved, StackTable};
use super::sink::{SampleRef, SampleSink, Side};
use super::types::{Options, SortKey};
use pmx_perfdata::format::{callchain, misc};
use pmx_symbols::symbolize::{DsoId, FrameId, FrameName, Symbolizer, UNKNOWN_DSO};
use pmx_symbols::unwind::{Unwinder, UserStack};
use rustc_hash::FxHashMap as HashMap;

#[derive(Hash, PartialEq, Eq, Clone, Copy)]
pub(super) struct RawKey {
    pub(super) comm: u32,
    pub(super) pid: u32,
    pub(super) dso: DsoId,
    pub(super) frame: FrameId,
    pub(super) cpu: u32,
    pub(super) tid: u32,
}

#[derive(Default)]
pub(super) struct EventAcc {
    pub(super) samples: u64,
    pub(super) period: u64,
    pub(super) lost: u64,
    pub(super) throttled: u64,
    pub(super) rows: HashMap<RawKey, (u64, u64, u32, u64)>,
    pub(super) children: HashMap<RawKey, (u64, u64, u32, u64)>,
    /// With children: the `[k]`/`[.]` mark of each row of an address in
    /// no mapping, as perf gives it (see `State::add_children`).
    pub(super) marks: HashMap<RawKey, bool>,
    /// With the command a key: the thread of each row's first sample
    /// (perf sizes the Command column by that thread's last command).
    pub(super) first_tid: HashMap<RawKey, u32>,
    pub(super) stacks: HashMap<Box<[u32]>, (u64, u64)>,
    /// A sample-read group's leader: its members' deltas per row.
    pub(super) group: Option<Box<GroupAcc<RawKey>>>,
}

pub(super) const NONE: u32 = u32::MAX;

/// Where the kernel's half of the address space begins (x86-64, AArch64
/// with 48-bit addresses: above it only kernel code runs).
const KERNEL_SPACE: u64 = 0xffff_0000_0000_0000;

/// In a stack's key, before the sample's own frame when the chain names
/// its leaf otherwise (see `State::add_stack`): no frame id reaches it.
pub(super) const OWN_ROW: u32 = u32::MAX - 1;

/// A stack's key (`comm`, frames root → leaf, maybe [`OWN_ROW`] and the
/// sample's own frame) as its frames and that own frame.
pub(super) fn stack_frames(key: &[u32]) -> (&[u32], Option<FrameId>) {
    match key {
        [_, frames @ .., OWN_ROW, own] => (frames, Some(*own)),
        [_, frames @ ..] => (frames, None),
        [] => (&[], None),
    }
}

/// A record kept until its round is processed in time order.
pub(super) enum Item {
    Sample {
        event: usize,
        misc: u16,
        ip: u64,
        pid: u32,
        tid: u32,
        cpu: u32,
        period: u64,
        /// The call chain, `branches` (from, to, flags) triples (given
        /// to a sink only), then `reads` (event, delta) pairs.
        chain: std::ops::Range<usize>,
        branches: u32,
        reads: u32,
        /// The chain's user part is an LBR call stack (`crate::lbr`).
        lbr: bool,
        /// `--call-graph dwarf`: registers and stack to unwind.
        user: Option<Box<UserStack>>,
    },
    Comm {
        pid: u32,
        tid: u32,
        comm: u32,
    },
    Fork {
        pid: u32,
        ppid: u32,
        tid: u32,
        ptid: u32,
    },
    Mmap(Box<MmapItem>),
    /// A thread ended (EXIT); `pid == tid`: the process.
    Exit {
        pid: u32,
        tid: u32,
    },
}

/// A user mapping waiting for its round.
pub(super) struct MmapItem {
    pub(super) pid: u32,
    pub(super) start: u64,
    pub(super) len: u64,
    pub(super) pgoff: u64,
    pub(super) path: Vec<u8>,
    pub(super) build_id: Option<Vec<u8>>,
    /// The mapped file's device and inode (MMAP2 without a build id).
    pub(super) inode: Option<pmx_perfdata::MappedInode>,
}

/// What the replay has built so far.
pub(super) struct State<'o> {
    pub(super) options: &'o Options,
    pub(super) keys: [bool; 6],
    pub(super) sym: Symbolizer,
    pub(super) comms: Vec<String>,
    pub(super) comm_ids: HashMap<Vec<u8>, u32>,
    pub(super) thread_comm: HashMap<u32, u32>,
    pub(super) accs: Vec<EventAcc>,
    pub(super) stack_buf: Vec<u32>,
    /// The rows one sample's chain has counted in (`add_children`).
    seen_rows: Vec<u64>,
    pub(super) frames: Vec<u32>,
    pub(super) unwinder: Unwinder,
    unwound: Vec<u64>,
    /// The address of each of `frames`.
    pub(super) addrs: Vec<u64>,
    /// Who else sees every sample.
    pub(super) sink: Option<&'o mut dyn SampleSink>,
    /// Samples per instruction address, when asked (`pmx annotate`).
    pub(super) addresses: Option<AddressAcc>,
    /// Samples whose user leaf stayed an address, per binary, and all
    /// samples: what a missing or stale binary cost.
    pub(super) unresolved: HashMap<DsoId, u64>,
    pub(super) sample_count: u64,
    /// Forget an exited thread's command and an exited process's maps
    /// (a live view, which runs for hours; a file's report keeps them).
    pub(super) prune_exited: bool,
    /// With `prune_exited`: the threads of each process seen and not yet
    /// exited. A process is forgotten when its last thread exits, not its
    /// first (a main thread that ends with `pthread_exit` leaves the
    /// others running in its maps).
    pub(super) live_threads: HashMap<u32, rustc_hash::FxHashSet<u32>>,
    /// Whether the sample being credited was taken in the kernel.
    leaf_kernel: bool,
    /// The thread of the sample being credited.
    cur_tid: u32,
    /// The marks of `frames` (a buffer of `add_children`).
    stack_marks: Vec<bool>,
    /// The sample being credited has a user stack unwound from its copy
    /// (`--call-graph dwarf`): only such frames get inline frames, as perf.
    unwinding: bool,
    /// The sample being credited has an LBR call stack after its chain's
    /// `PERF_CONTEXT_USER` (`crate::lbr`): its addresses are looked up as
    /// they are.
    lbr: bool,
    /// Stacks interned once (a file's report): plain samples add a count
    /// to their raw stack's entry, credited when a side-band record or
    /// the end comes (see `interned`).
    pub(super) interned: Option<StackTable<RawKey>>,
}

impl<'o> State<'o> {
    /// Empty state for `options`, symbolizing with `sym`.
    pub(super) fn new(options: &'o Options, sym: Symbolizer) -> State<'o> {
        let want = |k: SortKey| options.sort.contains(&k);
        State {
            options,
            keys: [
                want(SortKey::Comm),
                want(SortKey::Pid),
                want(SortKey::Dso),
                want(SortKey::Symbol),
                want(SortKey::Cpu),
                want(SortKey::Tid),
            ],
            sym,
            comms: Vec::new(),
            comm_ids: HashMap::default(),
            thread_comm: HashMap::default(),
            accs: Vec::new(),
            stack_buf: Vec::new(),
            seen_rows: Vec::new(),
            frames: Vec::new(),
            unwinder: Unwinder::new(),
            unwound: Vec::new(),
            addrs: Vec::new(),
            sink: None,
            addresses: None,
            unresolved: HashMap::default(),
            sample_count: 0,
            prune_exited: false,
            live_threads: HashMap::default(),
            leaf_kernel: false,
            cur_tid: 0,
            stack_marks: Vec::new(),
            unwinding: false,
            lbr: false,
            interned: None,
        }
    }

    /// The accumulator of event `e`, created on first use.
    pub(super) fn acc(&mut self, e: usize) -> &mut EventAcc {
        if self.accs.len() <= e {
            self.accs.resize_with(e + 1, EventAcc::default);
        }
        &mut self.accs[e]
    }

    pub(super) fn intern_comm(&mut self, name: &[u8]) -> u32 {
        if let Some(&id) = self.comm_ids.get(name) {
            return id;
        }
        let id = self.comms.len() as u32;
        self.comms.push(String::from_utf8_lossy(name).into_owned());
        self.comm_ids.insert(name.to_vec(), id);
        id
    }

    /// `tid` of `pid` runs (pruning only: a file's report keeps all).
    fn thread_lives(&mut self, pid: u32, tid: u32) {
        if self.prune_exited && pid != u32::MAX {
            self.live_threads.entry(pid).or_default().insert(tid);
        }
    }

    /// Whether samples' call chains are needed.
    pub(super) fn wants_chains(&self) -> bool {
        match self.sink.as_deref() {
            Some(s) => !s.alone(),
            None => self.options.stacks || self.options.binary_stacks || self.options.children,
        }
    }

    /// Give a side-band record to the sink.
    pub(super) fn side(&mut self, s: Side) {
        if let Some(sink) = self.sink.as_deref_mut() {
            sink.side(s);
        }
    }

    pub(super) fn apply(&mut self, time: u64, item: &Item, arena: &[u64]) {
        match *item {
            Item::Sample {
                event,
                misc: m,
                ip,
                pid,
                tid,
                cpu,
                period,
                ref chain,
                branches,
                reads,
                lbr,
                ref user,
            } => {
                self.lbr = lbr;
                let plain = reads == 0 && branches == 0 && user.is_none();
                let alone = self.sink.is_none() && self.addresses.is_none();
                if plain && alone && self.interned.is_some() && self.options.tids.is_none() {
                    let at = (pid, tid, cpu);
                    self.sample_interned(event, m, ip, at, period, &arena[chain.clone()]);
                    return;
                }
                let (chain, pairs) =
                    arena[chain.clone()].split_at(chain.len() - 2 * reads as usize);
                let (chain, branches) = chain.split_at(chain.len() - 3 * branches as usize);
                match user {
                    _ if self.sink.as_deref().is_some_and(|s| s.alone()) => {}
                    Some(u) => {
                        let at = (pid, tid, cpu);
                        self.sample_unwound(event, m, ip, at, period, chain, pairs, u)
                    }
                    None => self.sample(event, m, ip, pid, tid, cpu, period, chain, pairs),
                }
                if self.sink.is_some() {
                    let at = (pid, tid, cpu, m);
                    self.give_sink(event, time, at, period, pairs, (branches, chain));
                }
            }
            _ if self.interned.as_ref().is_some_and(|t| !t.is_empty()) => {
                // What the interned stacks mean may change: credit them first.
                self.credit_interned();
                self.apply(time, item, arena);
            }
            Item::Comm { pid, tid, comm } => {
                self.thread_comm.insert(tid, comm);
                self.thread_lives(pid, tid);
            }
            Item::Fork {
                pid,
                ppid,
                tid,
                ptid,
            } => {
                if let Some(&c) = self
                    .thread_comm
                    .get(&ptid)
                    .or_else(|| self.thread_comm.get(&ppid))
                {
                    self.thread_comm.insert(tid, c);
                }
                self.sym.fork(ppid, pid);
                self.thread_lives(pid, tid);
            }
            Item::Mmap(ref m) => {
                if let Some(b) = &m.build_id {
                    self.sym.set_build_id(&m.path, b);
                }
                (self.sym).add_mapping(m.pid, m.start, m.len, m.pgoff, &m.path, m.inode);
            }
            // The samples before it in time are applied: rows made keep
            // their names (interned), the process's state can go.
            Item::Exit { pid, tid } if self.prune_exited => {
                self.thread_comm.remove(&tid);
                let last = match self.live_threads.get_mut(&pid) {
                    Some(tids) => {
                        tids.remove(&tid);
                        tids.is_empty()
                    }
                    // A process none of whose threads was seen: gone
                    // when its main thread is.
                    None => pid == tid,
                };
                if last {
                    self.live_threads.remove(&pid);
                    self.thread_comm.remove(&pid);
                    self.sym.forget_process(pid);
                    self.unwinder.forget(pid);
                }
            }
            Item::Exit { .. } => {}
        }
    }

    /// A sample with a user stack: its kernel chain, then the user chain
    /// unwound from its registers and stack copy.
    #[allow(clippy::too_many_arguments)]
    fn sample_unwound(
        &mut self,
        event: usize,
        m: u16,
        ip: u64,
        (pid, tid, cpu): (u32, u32, u32),
        period: u64,
        chain: &[u64],
        pairs: &[u64],
        user: &UserStack,
    ) {
        let mut full = std::mem::take(&mut self.unwound);
        full.clear();
        full.extend_from_slice(chain);
        // A kernel sample whose chain has no kernel part (the file asked
        // for user chains only) starts at its own address; the user frames
        // unwound from the registers at kernel entry follow.
        let mode = m & misc::CPUMODE_MASK;
        if mode == misc::KERNEL && chain.iter().all(|&a| a >= callchain::CONTEXT_MAX) {
            full.extend([callchain::CONTEXT_KERNEL, ip]);
        }
        full.push(callchain::CONTEXT_USER);
        if user.ip != 0 {
            self.unwinder.unwind(&self.sym, pid, user, &mut full);
        }
        self.unwinding = true;
        self.sample(event, m, ip, pid, tid, cpu, period, &full, pairs);
        self.unwinding = false;
        self.unwound = full;
    }

    #[allow(clippy::too_many_arguments)]
    fn sample(
        &mut self,
        event: usize,
        m: u16,
        ip: u64,
        pid: u32,
        tid: u32,
        cpu: u32,
        period: u64,
        chain: &[u64],
        pairs: &[u64],
    ) {
        if (self.options.tids.as_ref()).is_some_and(|t| !t.contains(&tid)) {
            let acc = self.acc(event);
            acc.samples += 1;
            acc.period = acc.period.saturating_add(period);
            return;
        }
        let r = self.resolve(event, m, ip, (pid, tid, cpu), chain);
        let (key, comm, kernel, leaf) = (r.key, r.comm, r.kernel, r.leaf);
        self.sample_count += 1;
        if let Some(dso) = r.unresolved {
            *self.unresolved.entry(dso).or_default() += 1;
        }
        if pairs.is_empty() {
            self.credit(event, key, comm, (pid, ip), period);
            if let Some(a) = &mut self.addresses {
                let own = (event, Weight { samples: 1, period });
                a.sample(&mut self.sym, leaf, kernel, (pid, ip), &[own], None);
            }
            return;
        }
        // A sample-read group: each member is credited its delta (a zero
        // delta is no sample of it, as perf skips it).
        // (A single value, `cycles:S` alone, is no group: its own table.)
        if pairs.len() > 2 {
            let acc = self.acc(event);
            let group = acc.group.get_or_insert_with(|| Box::new(GroupAcc::new()));
            group.add(key, pairs);
        }
        for p in pairs.chunks_exact(2) {
            if p[1] > 0 {
                self.credit(p[0] as usize, key, comm, (pid, ip), p[1]);
            }
        }
        // Annotate's places: every member with a count, at this address.
        if let Some(a) = &mut self.addresses {
            let weights: Vec<(usize, Weight)> = (pairs.chunks_exact(2))
                .filter(|p| p[1] > 0)
                .map(|p| {
                    (
                        p[0] as usize,
                        Weight {
                            samples: 1,
                            period: p[1],
                        },
                    )
                })
                .collect();
            let group = (pairs.len() > 2).then_some((event, pairs));
            a.sample(&mut self.sym, leaf, kernel, (pid, ip), &weights, group);
        }
    }

    /// What a sample's stack means: its row key, command, leaf mode, the
    /// binary of an unnamed user leaf; its call chain's frames into
    /// `self.frames` (when stacks, children or a sink want them). Sets
    /// the sample being credited (`leaf_kernel`, `cur_tid`).
    fn resolve(
        &mut self,
        event: usize,
        m: u16,
        ip: u64,
        (pid, tid, cpu): (u32, u32, u32),
        chain: &[u64],
    ) -> Resolved<RawKey> {
        let [k_comm, k_pid, k_dso, k_sym, k_cpu, k_tid] = self.keys;
        let mode = m & misc::CPUMODE_MASK;
        let kernel = mode == misc::KERNEL || (mode != misc::USER && ip >= 0xffff_8000_0000_0000);
        let leaf = if kernel {
            self.sym.kernel_frame(ip)
        } else {
            self.sym.user_frame(pid, ip)
        };
        let comm = self.comm_of(pid, tid);
        (self.leaf_kernel, self.cur_tid) = (kernel, tid);
        let frame = self.sym.frame(leaf);
        let dso = frame.dso;
        let unnamed = !kernel && matches!(frame.name, FrameName::Address(_));
        let key = RawKey {
            comm: if k_comm { comm } else { NONE },
            pid: if k_pid { pid } else { NONE },
            dso: if k_dso || k_sym { dso } else { NONE },
            frame: if k_sym || k_dso { leaf } else { NONE },
            cpu: if k_cpu { cpu } else { NONE },
            tid: if k_tid { tid } else { NONE },
        };
        if self.wants_chains() {
            self.chain_frames(chain, kernel, pid, (leaf, ip));
        }
        Resolved {
            event,
            key,
            comm,
            pid,
            tid,
            ip,
            kernel,
            leaf,
            unresolved: unnamed.then_some(dso),
        }
    }

    /// A plain sample (no group read, branch stack, stack copy; no sink)
    /// counted in the interned stacks: resolved when its raw stack is new.
    fn sample_interned(
        &mut self,
        event: usize,
        m: u16,
        ip: u64,
        (pid, tid, cpu): (u32, u32, u32),
        period: u64,
        chain: &[u64],
    ) {
        let Some(mut t) = self.interned.take() else {
            return;
        };
        let cpu = if self.keys[4] { u64::from(cpu) } else { 0 };
        t.raw.clear();
        let who = (u64::from(pid) << 32) | u64::from(tid);
        // The LBR flag beside the CPU mode (plain samples have none).
        let mode = u64::from(m & misc::CPUMODE_MASK) | (u64::from(self.lbr) << 32);
        t.raw.extend_from_slice(&[event as u64, mode, ip, who, cpu]);
        if self.wants_chains() {
            t.raw.extend_from_slice(chain);
        }
        self.count_raw(&mut t, 1, period);
        self.interned = Some(t);
    }

    /// Count `n` samples weighing `period` in all of the raw stack in
    /// `t.raw` (event, CPU mode with the LBR flag at bit 32, address, pid
    /// and tid, CPU or 0, then the chain when chains are kept): resolved
    /// from it when new.
    pub(super) fn count_raw(&mut self, t: &mut StackTable<RawKey>, n: u64, period: u64) {
        if t.count_n(n, period) {
            return;
        }
        let raw = std::mem::take(&mut t.raw);
        let who = raw[3];
        let at = ((who >> 32) as u32, who as u32, raw[4] as u32);
        let chain = if self.wants_chains() { &raw[5..] } else { &[] };
        self.lbr = raw[1] >> 32 & 1 != 0;
        let r = self.resolve(raw[0] as usize, raw[1] as u16, raw[2], at, chain);
        t.raw = raw;
        let chains = self.wants_chains();
        t.add_n(r, if chains { &self.frames } else { &[] }, n, period);
        if t.full() {
            self.credit_table(t);
        }
    }

    /// Credit every interned stack's samples and empty the table.
    pub(super) fn credit_interned(&mut self) {
        if let Some(mut t) = self.interned.take() {
            self.credit_table(&mut t);
            self.interned = Some(t);
        }
    }

    /// Credit the entries of `t` in the order their stacks first came.
    fn credit_table(&mut self, t: &mut StackTable<RawKey>) {
        for e in &t.entries {
            let r = e.resolved;
            self.frames.clear();
            self.frames.extend_from_slice(&t.frames[e.frames.clone()]);
            (self.leaf_kernel, self.cur_tid) = (r.kernel, r.tid);
            self.sample_count += e.samples;
            if let Some(dso) = r.unresolved {
                *self.unresolved.entry(dso).or_default() += e.samples;
            }
            let w = (e.samples, e.period);
            self.credit_n(r.event, r.key, r.comm, (r.pid, r.ip), w);
        }
        t.clear();
    }

    /// Count one sample of `event` at `key` weighing `period` (with its
    /// call chain, in `self.frames`, when stacks or children are kept).
    fn credit(&mut self, event: usize, key: RawKey, comm: u32, at: (u32, u64), period: u64) {
        self.credit_n(event, key, comm, at, (1, period));
    }

    /// [`State::credit`] for `n` samples of one stack weighing `period` in all.
    fn credit_n(
        &mut self,
        event: usize,
        key: RawKey,
        comm: u32,
        (pid, ip): (u32, u64),
        (n, period): (u64, u64),
    ) {
        let (tid, k_comm) = (self.cur_tid, self.keys[0]);
        let acc = self.acc(event);
        if k_comm {
            acc.first_tid.entry(key).or_insert(tid);
        }
        acc.samples += n;
        acc.period = acc.period.saturating_add(period);
        let e = acc.rows.entry(key).or_insert((0, 0, pid, ip));
        e.0 += n;
        e.1 = e.1.saturating_add(period);
        if self.options.children {
            self.add_children(event, key, (pid, ip), (n, period));
        }
        if self.options.stacks || self.options.binary_stacks {
            self.add_stack(event, comm, key.frame, (n, period));
        }
    }

    /// The command name id of thread `tid` of `pid` (perf names the idle
    /// task swapper and others by pid).
    fn comm_of(&mut self, pid: u32, tid: u32) -> u32 {
        match self
            .thread_comm
            .get(&tid)
            .or_else(|| self.thread_comm.get(&pid))
        {
            Some(&c) => c,
            None if pid == 0 => self.intern_comm(b"swapper"),
            None => self.intern_comm(format!(":{pid}").as_bytes()),
        }
    }

    /// The frames of a call chain into `self.frames`, leaf first (the
    /// `PERF_CONTEXT_*` markers switch between kernel and user), their
    /// addresses into `self.addrs`; the leaf (frame, ip) alone when there
    /// is no chain.
    fn chain_frames(&mut self, chain: &[u64], kernel: bool, pid: u32, leaf: (FrameId, u64)) {
        self.frames.clear();
        self.addrs.clear();
        let (mut ctx_kernel, mut lbr) = (kernel, false);
        let mut first = true;
        for &a in chain {
            if a >= callchain::CONTEXT_MAX {
                if !callchain::is_context(a) {
                    // A corrupt chain: perf drops all of it.
                    self.frames.clear();
                    self.addrs.clear();
                    break;
                }
                ctx_kernel = a == callchain::CONTEXT_KERNEL;
                lbr = self.lbr && a == callchain::CONTEXT_USER;
                continue;
            }
            // Return addresses point after the call: look up the call
            // itself (an LBR stack's are the calls).
            let call = if first || lbr { a } else { a.saturating_sub(1) };
            first = false;
            let (f, addr) = self.caller_frame(ctx_kernel, pid, call, a);
            // perf 6.1 adds inline frames to the frames it unwinds from a
            // stack copy only, not to a frame-pointer chain's.
            if self.options.inline && self.unwinding && !ctx_kernel {
                let before = self.frames.len();
                self.sym.inline_frames(pid, call, f, &mut self.frames);
                let inlined = self.frames.len() - before - 1;
                self.addrs.extend(std::iter::repeat_n(call, inlined));
            } else {
                self.frames.push(f);
            }
            self.addrs.push(addr);
        }
        if self.frames.is_empty() {
            self.frames.push(leaf.0);
            self.addrs.push(leaf.1);
        }
    }

    /// The frame of a call chain entry `a` (a return address, but for the
    /// leaf) looked up at `call` (the call instruction, `a - 1`), and the
    /// address it stands for. Where no symbol covers a user call, the
    /// entry is read as perf reads it, at `a` itself: an unknown frame
    /// then shows perf's address (not one less), and an entry that is the
    /// first byte of a function (a call ending an unsymbolized stretch)
    /// is that function. (Kernel frames are resolved after the replay,
    /// so they keep the call's address.)
    ///
    /// For perf's call-graph text ([`Options::binary_stacks`]) an unnamed
    /// user frame is its absolute address, as perf's chains name it (see
    /// [`Symbolizer::chain_frame`]); a caller unwound from a stack copy
    /// is named at the call (`a - 1`), as perf's DWARF unwinder gives it.
    fn caller_frame(&mut self, kernel: bool, pid: u32, call: u64, a: u64) -> (FrameId, u64) {
        if kernel {
            // A user-space value after a kernel marker (a frame-pointer
            // walk through code without frame pointers can write one) is
            // in no kernel symbol: perf shows it as read.
            let at = if a < KERNEL_SPACE { a } else { call };
            return (self.sym.kernel_frame(at), at);
        }
        let f = self.sym.user_frame(pid, call);
        let named = !matches!(self.sym.frame(f).name, FrameName::Address(_));
        if named || (call == a && !self.options.binary_stacks) {
            return (f, call);
        }
        if self.options.binary_stacks {
            let at = if self.unwinding { call } else { a };
            return (self.sym.chain_frame(pid, at), a);
        }
        (self.sym.user_frame(pid, a), a)
    }

    /// Count the sample once in the inclusive rows of each distinct row
    /// its chain passes through (`self.frames`, recursion counted once),
    /// and once in its own row's: perf's rule (its own entry first, then
    /// each chain entry unless an entry of equal sort keys already took
    /// the sample). Its own row is not always in the chain as such: DWARF
    /// may name the leaf otherwise (an inlined frame), perf's chains name
    /// an unnamed leaf by its absolute address; under `--sort dso` a
    /// binary is one row however many of its functions the chain holds.
    ///
    /// perf marks a row of an address in no mapping (`[unknown]`) by the
    /// frame before it as it walks the chain callers first (its default
    /// with children), the first by the sample's own mode; the sample's
    /// own row by its mode; a row keeps the mark of its first sample.
    fn add_children(&mut self, event: usize, key: RawKey, (pid, ip): (u32, u64), w: (u64, u64)) {
        let (n, period) = w;
        let [_, _, k_dso, k_sym, _, _] = self.keys;
        let acc = &mut self.accs[event];
        let mut mark = self.leaf_kernel;
        let mut marks = std::mem::take(&mut self.stack_marks);
        marks.clear();
        for &f in self.frames.iter().rev() {
            let fr = self.sym.frame(f);
            if fr.dso != UNKNOWN_DSO {
                mark = fr.kernel;
            }
            marks.push(mark);
        }
        marks.reverse();
        // A frame's row as the sort keys tell rows apart.
        let sym = &self.sym;
        let row_of = |f: FrameId| match (k_sym, k_dso) {
            (true, _) => u64::from(f),
            (false, true) => (1 << 32) | u64::from(sym.frame(f).dso),
            (false, false) => 1 << 33,
        };
        let mut seen = std::mem::take(&mut self.seen_rows);
        seen.clear();
        for (i, &f) in self.frames.iter().enumerate() {
            let row = row_of(f);
            if seen.contains(&row) {
                continue;
            }
            seen.push(row);
            let k = RawKey {
                dso: if k_dso || k_sym {
                    sym.frame(f).dso
                } else {
                    NONE
                },
                frame: if k_sym || k_dso { f } else { NONE },
                ..key
            };
            let e = acc.children.entry(k).or_insert((0, 0, pid, ip));
            e.0 += n;
            e.1 = e.1.saturating_add(period);
            if self.keys[0] {
                acc.first_tid.entry(k).or_insert(self.cur_tid);
            }
            if sym.frame(f).dso == UNKNOWN_DSO {
                let m = if i == 0 { self.leaf_kernel } else { marks[i] };
                acc.marks.entry(k).or_insert(m);
            }
        }
        self.stack_marks = marks;
        // (A kernel leaf's frame is provisional until the replay ends, one
        // per address: its chain's first entry is the sample's address.)
        let own = if key.frame == NONE {
            1 << 33
        } else {
            row_of(key.frame)
        };
        if !self.leaf_kernel && !seen.contains(&own) {
            let e = acc.children.entry(key).or_insert((0, 0, pid, ip));
            e.0 += n;
            e.1 = e.1.saturating_add(period);
        }
        self.seen_rows = seen;
    }

    /// Give the sample whose frames are in `self.frames` to the sink,
    /// with its members' (event, delta) `pairs` (empty without a read).
    fn give_sink(
        &mut self,
        event: usize,
        time: u64,
        (pid, tid, cpu, misc): (u32, u32, u32, u16),
        period: u64,
        pairs: &[u64],
        (branches, chain): (&[u64], &[u64]),
    ) {
        let comm = self.comm_of(pid, tid);
        let Some(sink) = self.sink.as_deref_mut() else {
            return;
        };
        let s = SampleRef {
            event,
            time,
            pid,
            tid,
            cpu,
            period,
            comm: &self.comms[comm as usize],
            frames: &self.frames,
            addrs: &self.addrs,
            reads: pairs,
            misc,
            branches,
            chain,
        };
        sink.sample(&s, &mut self.sym);
    }

    /// Count the stack `comm; self.frames root → leaf`; for perf's
    /// call-graph text, followed by [`OWN_ROW`] and the sample's own
    /// frame `own` where the chain names its leaf otherwise (an unnamed
    /// address: the chain's is absolute, the row's the binary's offset).
    fn add_stack(&mut self, event: usize, comm: u32, own: FrameId, (n, period): (u64, u64)) {
        self.stack_buf.clear();
        self.stack_buf.push(comm);
        self.stack_buf.extend(self.frames.iter().rev());
        let apart = self.frames.first().is_some_and(|&f| f != own);
        if self.options.binary_stacks && own != NONE && apart {
            self.stack_buf.extend([OWN_ROW, own]);
        }
        let acc = &mut self.accs[event];
        if let Some(v) = acc.stacks.get_mut(&self.stack_buf[..]) {
            v.0 += n;
            v.1 = v.1.saturating_add(period);
        } else {
            acc.stacks
                .insert(self.stack_buf.clone().into_boxed_slice(), (n, period));
        }
    }
}
