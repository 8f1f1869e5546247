//! `--off-cpu` without BPF: where threads wait, from the scheduler's own
//! tracepoint.
//!
//! The recording opens `sched:sched_switch` beside the user's events, on
//! the same tasks or CPUs, with call chains and `context_switch` (so the
//! kernel also writes a `SWITCH` record when a traced task comes back on
//! a CPU; `SWITCH_CPU_WIDE` on CPUs). Nothing of it reaches the file as
//! is: [`OffCpu`] takes those records out of the stream and pairs, per
//! thread, the `sched_switch` sample where it left the CPU (its stack and
//! `prev_state`) with the next switch-in record. A thread that left in a
//! sleeping state — `S` (interruptible) or `D` (uninterruptible), not
//! preempted — was off the CPU waiting for that long: one sample of the
//! event `offcpu-time` is written, its period the nanoseconds off the CPU,
//! its time the switch-in, its stack the user stack where it blocked
//! (the tracepoint records no kernel chains), laid out as perf's BPF
//! `--off-cpu` writes them: IP the first user frame, the call chain
//! `PERF_CONTEXT_USER` and the user frames, `misc` user. In the file the
//! tracepoint's attr is replaced by `offcpu-time`'s (a software
//! `bpf-output` event, perf's), with an id of its own.
//!
//! Records of different CPUs arrive in ring order, not time order (a
//! switch-in may be read before the switch-out it ends), so each thread's
//! events wait in a short queue, sorted by time at each round's end.
//! `--off-cpu-thresh`: waits shorter than it are summed per thread and
//! stack and written at the end (upstream perf's rule), longer ones as
//! their own samples.
//!
//! With `--call-graph dwarf` the tracepoint records no call chain at all
//! (neither the user's, which dwarf replaces, nor the kernel's) but the
//! blocked thread's user registers and stack: the `offcpu-time` sample
//! carries those bytes as they were, with no chain and the user IP from
//! the registers, for the reader to unwind (no thresh: nothing to sum by).
//!
//! The rings of an off-CPU recording wake their reader at an eighth
//! ([`wakeup`]): a program that switches all the time fills them at a
//! steady rate, and a reader woken late still has room.

use super::options::OffCpuOptions;
use pmx_perf::{sample_type as st, Attr};
use pmx_perfdata::format::{callchain, record_type};
use std::collections::HashMap;

/// The id the `offcpu-time` samples carry (far from the kernel's ids,
/// which count up from 1).
pub(super) const OFFCPU_ID: u64 = u64::MAX - 0xffc0;
/// `PERF_COUNT_SW_BPF_OUTPUT`: perf's off-CPU event is a bpf-output event.
const SW_BPF_OUTPUT: u64 = 10;
/// `misc`: switched out.
const SWITCH_OUT: u16 = 1 << 13;
/// `prev_state` bits of a sleeping task: S and D.
const SLEEPING: u64 = 0x1 | 0x2;
/// `prev_state`'s "preempted" bit (the kernel's TASK_REPORT_MAX).
const PREEMPTED: u64 = 0x100;

/// When the reader of an off-CPU recording's rings (`pages` data pages
/// each) is woken: at an eighth of a ring, not the kernel's half. The
/// scheduler writes a sample at every switch, a steady stream when a
/// program switches all the time; the reader, woken late on a busy
/// machine, then still has seven eighths of the ring to drain into
/// before records are lost (docs/BENCHMARKS.md).
pub(super) fn wakeup(pages: usize) -> pmx_perf::Wakeup {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let bytes = (pages * page / 8).clamp(page, u32::MAX as usize);
    pmx_perf::Wakeup::Watermark(bytes as u32)
}

/// `offcpu-time`'s attr in the file: a software bpf-output event with
/// the switch event's sample layout (without its raw data).
pub(super) fn file_attr(switch: &Attr) -> Attr {
    Attr {
        type_: 1,
        config: SW_BPF_OUTPUT,
        sample: Some(pmx_perf::SampleRate::Period(1)),
        sample_type: switch.sample_type & !st::RAW,
        context_switch: false,
        inherit: false,
        ..switch.clone()
    }
}

/// One thread's event, waiting to be paired.
struct Ev {
    time: u64,
    /// A switch-in already kept over one round.
    kept: bool,
    /// Switch-out: where and why; `None`: switch-in.
    out: Option<Out>,
}

/// A thread's switch-out.
struct Out {
    sleeping: bool,
    pid: u32,
    cpu: u32,
    /// The blocked stack (`PERF_CONTEXT_USER` and the frames).
    stack: Vec<u64>,
    /// `--call-graph dwarf`: the sample's REGS_USER and STACK_USER
    /// fields as the kernel wrote them, and the user IP from the regs.
    user: Option<(Vec<u8>, u64)>,
}

/// The converter between the rings and the sink.
pub(super) struct OffCpu {
    ids: Vec<u64>,
    /// The switch event's sample_type.
    st: u64,
    /// Its `sample_regs_user` (`--call-graph dwarf`).
    regs_mask: u64,
    /// `prev_state`'s (offset, size) in the raw data.
    prev_state: (usize, usize),
    thresh: Option<u64>,
    /// Per thread: its events not yet paired.
    pending: HashMap<u32, Vec<Ev>>,
    /// Short waits: (pid, tid, stack) → (ns, cpu).
    summed: HashMap<(u32, u32, Vec<u64>), (u64, u32)>,
    /// The latest time seen.
    last_time: u64,
    /// Samples written.
    pub(super) samples: u64,
}

/// What became of a record.
pub(super) enum Fed {
    /// Not the converter's: write it.
    Pass,
    /// Taken.
    Taken,
    /// Written as these bytes: a record of the switch event's ring (LOST,
    /// THROTTLE…) whose ids are `offcpu-time`'s in the file.
    Rewrite(Vec<u8>),
}

impl OffCpu {
    /// A converter for the switch event with fd ids `ids` and attr
    /// `attr`; `prev_state` is where its raw data holds the field.
    pub(super) fn new(
        ids: Vec<u64>,
        attr: &Attr,
        prev_state: (usize, usize),
        opts: OffCpuOptions,
    ) -> OffCpu {
        OffCpu {
            ids,
            st: attr.sample_type,
            regs_mask: attr.sample_regs_user,
            prev_state,
            thresh: opts.thresh_ns,
            pending: HashMap::new(),
            summed: HashMap::new(),
            last_time: 0,
            samples: 0,
        }
    }

    /// Take the switch event's records out of the stream.
    pub(super) fn feed(&mut self, rec: &[u8]) -> Fed {
        if rec.len() < 16 {
            return Fed::Pass;
        }
        let kind = u32::from_ne_bytes(rec[0..4].try_into().expect("4 bytes"));
        let misc = u16::from_ne_bytes(rec[4..6].try_into().expect("2 bytes"));
        match kind {
            record_type::SAMPLE => {
                // IDENTIFIER is the first word of every sample here.
                if !self.ids.contains(&u64_at(rec, 8)) {
                    return Fed::Pass;
                }
                if let Some(e) = self.switch_out(rec) {
                    self.push(e.0, e.1);
                }
                Fed::Taken
            }
            record_type::SWITCH | record_type::SWITCH_CPU_WIDE => {
                // The sample_id trailer ends with IDENTIFIER.
                if !self.ids.contains(&u64_at(rec, rec.len() - 8)) {
                    return Fed::Pass;
                }
                if misc & SWITCH_OUT == 0 {
                    if let Some((tid, time)) = self.trailer_tid_time(rec) {
                        let e = Ev {
                            time,
                            kept: false,
                            out: None,
                        };
                        self.push(tid, e);
                    }
                }
                Fed::Taken
            }
            _ => self.own_ids(kind, rec),
        }
    }

    /// Another record naming the switch event (its `sample_id` trailer,
    /// a LOST's or THROTTLE's id): the same with `offcpu-time`'s id, which
    /// is the only one the file knows.
    fn own_ids(&self, kind: u32, rec: &[u8]) -> Fed {
        let mut at = vec![rec.len() - 8];
        match kind {
            record_type::LOST => at.push(8),
            record_type::THROTTLE | record_type::UNTHROTTLE => at.extend([16, 24]),
            _ => {}
        }
        let ours = |i: &usize| rec.len() >= i + 8 && self.ids.contains(&u64_at(rec, *i));
        if !at.iter().any(ours) {
            return Fed::Pass;
        }
        let mut v = rec.to_vec();
        for i in at.iter().filter(|i| ours(i)) {
            v[*i..*i + 8].copy_from_slice(&OFFCPU_ID.to_ne_bytes());
        }
        Fed::Rewrite(v)
    }

    fn push(&mut self, tid: u32, e: Ev) {
        self.last_time = self.last_time.max(e.time);
        self.pending.entry(tid).or_default().push(e);
    }

    /// The (tid, time) of a switch record's `sample_id` trailer.
    fn trailer_tid_time(&self, rec: &[u8]) -> Option<(u32, u64)> {
        let fields = [
            st::TID,
            st::TIME,
            st::ID,
            st::STREAM_ID,
            st::CPU,
            st::IDENTIFIER,
        ];
        let n = fields.iter().filter(|&&b| self.st & b != 0).count() * 8;
        let mut at = rec.len().checked_sub(n)?;
        let (mut tid, mut time) = (None, None);
        for b in fields {
            if self.st & b == 0 {
                continue;
            }
            match b {
                st::TID => tid = Some(u32_at(rec, at + 4)),
                st::TIME => time = Some(u64_at(rec, at)),
                _ => {}
            }
            at += 8;
        }
        Some((tid?, time?))
    }

    /// A sched_switch sample as a switch-out event of its thread.
    fn switch_out(&self, rec: &[u8]) -> Option<(u32, Ev)> {
        let mut at = 8;
        let mut take = |n: usize| -> Option<usize> {
            let here = at;
            at += n;
            (at <= rec.len()).then_some(here)
        };
        let (mut pid, mut tid, mut time, mut cpu) = (0, 0, 0, 0);
        let mut chain = Vec::new();
        let mut state = 0;
        if self.st & st::IDENTIFIER != 0 {
            take(8)?;
        }
        if self.st & st::IP != 0 {
            take(8)?;
        }
        if self.st & st::TID != 0 {
            let a = take(8)?;
            (pid, tid) = (u32_at(rec, a), u32_at(rec, a + 4));
        }
        if self.st & st::TIME != 0 {
            time = u64_at(rec, take(8)?);
        }
        for b in [st::ADDR, st::ID, st::STREAM_ID] {
            if self.st & b != 0 {
                take(8)?;
            }
        }
        if self.st & st::CPU != 0 {
            cpu = u32_at(rec, take(8)?);
        }
        if self.st & st::PERIOD != 0 {
            take(8)?;
        }
        if self.st & st::CALLCHAIN != 0 {
            let nr = u64_at(rec, take(8)?) as usize;
            let a = take(nr.checked_mul(8)?)?;
            chain = (0..nr).map(|i| u64_at(rec, a + 8 * i)).collect();
        }
        if self.st & st::RAW != 0 {
            let size = u32_at(rec, take(4)?) as usize;
            let a = take(size)?;
            let (off, n) = self.prev_state;
            if off + n <= size {
                let b = &rec[a + off..a + off + n];
                state = b.iter().rev().fold(0u64, |v, &x| v << 8 | x as u64);
            }
        }
        let user = self.user_regs_and_stack(rec, at);
        let sleeping = state & SLEEPING != 0 && state & PREEMPTED == 0;
        let stack = match &user {
            // Dwarf: no frames (neither chain is recorded); the reader
            // unwinds the user stack from the regs.
            Some(_) if chain.is_empty() => Vec::new(),
            _ => blocked_stack(&chain),
        };
        let out = Out {
            sleeping,
            pid,
            cpu,
            stack,
            user,
        };
        Some((
            tid,
            Ev {
                time,
                kept: false,
                out: Some(out),
            },
        ))
    }

    /// `--call-graph dwarf`: the REGS_USER and STACK_USER fields from
    /// `at` (after RAW) as bytes, and the user IP; `None` without them or
    /// without user regs (a kernel thread).
    fn user_regs_and_stack(&self, rec: &[u8], at: usize) -> Option<(Vec<u8>, u64)> {
        if self.st & st::REGS_USER == 0 || self.st & st::BRANCH_STACK != 0 {
            return None;
        }
        let abi = u64_at(rec, at);
        if abi == 0 {
            return None;
        }
        let regs = self.regs_mask.count_ones() as usize;
        // x86-64's IP is register 8: its place among the recorded ones.
        let ip_at = (self.regs_mask & 0xff).count_ones() as usize;
        let ip = match self.regs_mask & (1 << 8) != 0 {
            true => u64_at(rec, at + 8 + 8 * ip_at),
            false => 0,
        };
        let mut end = at + 8 + 8 * regs;
        if self.st & st::STACK_USER != 0 {
            let size = u64_at(rec, end) as usize;
            end += 8;
            if size != 0 {
                end = end.checked_add(size)?.checked_add(8)?;
            }
        }
        Some((rec.get(at..end)?.to_vec(), ip))
    }

    /// Pair what can be paired (each thread's events in time order: a
    /// switch-out and the switch-in after it) and write the samples;
    /// `last` pairs everything and writes the summed short waits.
    pub(super) fn flush(&mut self, last: bool, write: &mut dyn FnMut(&[u8])) {
        let mut done = Vec::new();
        for (&tid, evs) in self.pending.iter_mut() {
            evs.sort_by_key(|e| e.time);
            let mut keep = Vec::new();
            let mut i = 0;
            while i < evs.len() {
                let is_out = evs[i].out.is_some();
                let next_in = (evs.get(i + 1)).filter(|n| n.out.is_none()).map(|n| n.time);
                let at_end = i + 1 == evs.len();
                match (is_out, next_in) {
                    (true, Some(back)) => {
                        done.push((tid, std::mem::replace(&mut evs[i], dummy()), back));
                        i += 2;
                    }
                    (true, None) if at_end && !last => {
                        keep.push(std::mem::replace(&mut evs[i], dummy()));
                        i += 1;
                    }

                    // A switch-in whose switch-out may still come (read
                    // later from another CPU's ring): kept one round.
                    (false, _) if at_end && !last && !evs[i].kept => {
                        let mut e = std::mem::replace(&mut evs[i], dummy());
                        e.kept = true;
                        keep.push(e);
                        i += 1;
                    }
                    _ => i += 1,
                }
            }
            *evs = keep;
        }
        self.pending.retain(|_, v| !v.is_empty());
        for (tid, ev, back) in done {
            let Some(out) = ev.out.filter(|o| o.sleeping) else {
                continue;
            };
            let ns = back.saturating_sub(ev.time);
            if ns == 0 {
                continue;
            }
            match self.thresh {
                Some(t) if ns < t => {
                    let key = (out.pid, tid, out.stack);
                    let e = self.summed.entry(key).or_insert((0, out.cpu));
                    e.0 += ns;
                }
                _ => {
                    let user = out.user.as_ref().map(|(b, ip)| (&b[..], *ip));
                    let who = (out.pid, tid, out.cpu);
                    self.write_sample(write, who, (back, ns), &out.stack, user);
                }
            }
        }
        if last {
            let summed = std::mem::take(&mut self.summed);
            let end = self.last_time;
            for ((pid, tid, stack), (ns, cpu)) in summed {
                self.write_sample(write, (pid, tid, cpu), (end, ns), &stack, None);
            }
        }
    }

    /// One `offcpu-time` sample; `user`: dwarf's regs and stack bytes and
    /// the user IP.
    fn write_sample(
        &mut self,
        write: &mut dyn FnMut(&[u8]),
        (pid, tid, cpu): (u32, u32, u32),
        (time, ns): (u64, u64),
        stack: &[u64],
        user: Option<(&[u8], u64)>,
    ) {
        let ip = match user {
            Some((_, ip)) if stack.is_empty() => ip,
            _ => stack.get(1).copied().unwrap_or(0),
        };
        let in_user = stack.first() == Some(&callchain::CONTEXT_USER) || ip != 0 && user.is_some();
        let mut b = vec![0u8; 8];
        let s = self.st & !st::RAW;
        if s & st::IDENTIFIER != 0 {
            b.extend_from_slice(&OFFCPU_ID.to_ne_bytes());
        }
        if s & st::IP != 0 {
            b.extend_from_slice(&ip.to_ne_bytes());
        }
        if s & st::TID != 0 {
            b.extend_from_slice(&pid.to_ne_bytes());
            b.extend_from_slice(&tid.to_ne_bytes());
        }
        if s & st::TIME != 0 {
            b.extend_from_slice(&time.to_ne_bytes());
        }
        for bit in [st::ADDR, st::ID, st::STREAM_ID] {
            if s & bit != 0 {
                let v = if bit == st::ID { OFFCPU_ID } else { 0 };
                b.extend_from_slice(&v.to_ne_bytes());
            }
        }
        if s & st::CPU != 0 {
            b.extend_from_slice(&(cpu as u64).to_ne_bytes());
        }
        if s & st::PERIOD != 0 {
            b.extend_from_slice(&ns.to_ne_bytes());
        }
        if s & st::CALLCHAIN != 0 {
            b.extend_from_slice(&(stack.len() as u64).to_ne_bytes());
            for a in stack {
                b.extend_from_slice(&a.to_ne_bytes());
            }
        }
        if s & (st::REGS_USER | st::STACK_USER) != 0 {
            match user {
                Some((bytes, _)) => b.extend_from_slice(bytes),
                // No user regs (abi 0), and an empty stack (size 0).
                None => {
                    b.extend_from_slice(&0u64.to_ne_bytes());
                    if s & st::STACK_USER != 0 {
                        b.extend_from_slice(&0u64.to_ne_bytes());
                    }
                }
            }
        }
        let misc: u16 = if in_user { 2 } else { 1 };
        let size = b.len() as u16;
        b[0..4].copy_from_slice(&record_type::SAMPLE.to_ne_bytes());
        b[4..6].copy_from_slice(&misc.to_ne_bytes());
        b[6..8].copy_from_slice(&size.to_ne_bytes());
        write(&b);
        self.samples += 1;
    }
}

fn dummy() -> Ev {
    Ev {
        time: 0,
        kept: false,
        out: None,
    }
}

/// The stack a thread blocked in, as perf's off-CPU samples hold it:
/// `PERF_CONTEXT_USER` and the user frames, or (a kernel thread) the
/// kernel frames after `PERF_CONTEXT_KERNEL`.
fn blocked_stack(chain: &[u64]) -> Vec<u64> {
    let mut user = Vec::new();
    let mut kernel = Vec::new();
    let mut ctx = 0;
    for &a in chain {
        if a >= callchain::CONTEXT_MAX {
            ctx = a;
            continue;
        }
        match ctx {
            callchain::CONTEXT_USER => user.push(a),
            callchain::CONTEXT_KERNEL => kernel.push(a),
            _ => {}
        }
    }
    let (mark, frames) = if user.is_empty() {
        (callchain::CONTEXT_KERNEL, kernel)
    } else {
        (callchain::CONTEXT_USER, user)
    };
    let mut v = Vec::with_capacity(frames.len() + 1);
    v.push(mark);
    v.extend(frames);
    v
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map_or(0, |s| u64::from_ne_bytes(s.try_into().expect("8 bytes")))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_ne_bytes(s.try_into().expect("4 bytes")))
}

/// An off-CPU recording's events, options and `prev_state`'s (offset, size).
pub(super) type WithSwitch = (
    Vec<super::RecordEvent>,
    super::RecordOptions,
    (usize, usize),
);

/// The events and options of an off-CPU recording: the user's events and
/// `sched:sched_switch` last (named `offcpu-time`, the name its samples
/// get in the file), frame-pointer call chains when none were asked (an
/// off-CPU sample is its stack); and where `prev_state` lies in the
/// tracepoint's raw data.
pub(super) fn with_switch_event(
    events: &[super::RecordEvent],
    opts: &super::RecordOptions,
) -> Result<WithSwitch, super::RecordError> {
    use super::RecordError::Invalid;
    let root = super::tracepoints::tracefs().ok_or_else(|| {
        Invalid(format!(
            "--off-cpu reads the scheduler's tracepoint sched:sched_switch, but {}",
            super::tracepoints::tracefs_missing()
        ))
    })?;
    let dir = root.join("events/sched/sched_switch");
    let read = |f: &str| {
        super::tracepoints::read_tracefs(&dir.join(f)).map_err(|e| {
            Invalid(format!(
                "--off-cpu: cannot read {}: {e} (it needs the sched:sched_switch tracepoint)",
                dir.join(f).display()
            ))
        })
    };
    let id: u64 = String::from_utf8_lossy(&read("id")?)
        .trim()
        .parse()
        .map_err(|_| {
            Invalid(format!(
                "--off-cpu: {} holds no number",
                dir.join("id").display()
            ))
        })?;
    let format = pmx_perfdata::tracing::parse_format("sched", &read("format")?, 0)
        .map_err(|e| Invalid(format!("--off-cpu: sched_switch's format: {e}")))?;
    let state = format.field("prev_state").ok_or_else(|| {
        Invalid("--off-cpu: sched_switch's format has no prev_state field".into())
    })?;
    let mut all = events.to_vec();
    all.push(super::RecordEvent {
        name: "offcpu-time".into(),
        attr: Attr {
            type_: super::tracepoints::TRACEPOINT,
            config: id,
            ..Attr::default()
        },
        inherit: None,
        call_graph: None,
        group: None,
    });
    let mut opts = opts.clone();
    let dwarf = matches!(opts.call_graph, super::CallGraph::Dwarf { .. });
    if dwarf && opts.file.off_cpu.is_some_and(|o| o.thresh_ns.is_some()) {
        return Err(Invalid(
            "--off-cpu-thresh sums short waits per stack, which needs frame-pointer stacks (-g): \
             with --call-graph dwarf every wait is a sample of its own; drop one of them"
                .into(),
        ));
    }
    if opts.call_graph == super::CallGraph::None {
        opts.call_graph = super::CallGraph::Fp { max_stack: None };
    }
    Ok((all, opts, (state.offset as usize, state.size as usize)))
}
