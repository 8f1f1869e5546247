//! Every sample, one at a time, for those who need more than the
//! aggregates (the exporters of [`crate::export`]): a [`SampleSink`] given
//! to [`super::build_with`] sees each sample in time order per round,
//! after the side band it needs was applied, with its frames (leaf first),
//! the addresses they were looked up at and, for a sample-read group's
//! leader, its members' deltas; LOST, LOST_SAMPLES and
//! (UN)THROTTLE records as they come; and at the end the symbolizer with
//! the kernel frames resolved.

use pmx_symbols::symbolize::{FrameId, Symbolizer};

/// One sample as the replay applies it.
#[derive(Debug, Clone, Copy)]
pub struct SampleRef<'a> {
    /// Index of its event in the file's events.
    pub event: usize,
    /// Time (0 when the file has none).
    pub time: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// CPU.
    pub cpu: u32,
    /// Period.
    pub period: u64,
    /// The thread's command name at that time.
    pub comm: &'a str,
    /// Frames, leaf first (the leaf alone without a call chain). Kernel
    /// frames are provisional until [`SampleSink::finish`]'s `remap`.
    pub frames: &'a [FrameId],
    /// The address each frame was looked up at (callers: the return
    /// address minus one, inside the call instruction).
    pub addrs: &'a [u64],
    /// A sample-read group's reads (`PERF_SAMPLE_READ`): (event, delta)
    /// pairs, flattened, leader first — each member's count since the
    /// same counter's previous sample on this thread
    /// ([`super::Deltas`]); empty for a sample without a read.
    pub reads: &'a [u64],
    /// The header's misc (the CPU mode in its low bits).
    pub misc: u16,
    /// The branch stack (`PERF_SAMPLE_BRANCH_STACK`): (from, to, flag
    /// word) triples, most recent first (pmx-precise's `branch` reads them);
    /// empty for a sample without one.
    pub branches: &'a [u64],
    /// The call chain as the file holds it (`PERF_SAMPLE_CALLCHAIN`, the
    /// `PERF_CONTEXT_*` markers kept; an LBR call stack as built from the
    /// branches); empty without one (`report --branch-history` appends it
    /// after the branches, as perf does).
    pub chain: &'a [u64],
}

impl SampleRef<'_> {
    /// The members' deltas of [`SampleRef::reads`], leader first.
    pub fn members(&self) -> impl Iterator<Item = super::groups::MemberDelta> + '_ {
        (self.reads.chunks_exact(2)).map(|p| super::groups::MemberDelta {
            event: p[0] as usize,
            delta: p[1],
        })
    }
}

/// What a side-band record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SideKind {
    /// LOST: this many records of the event were dropped.
    Lost(u64),
    /// LOST_SAMPLES: this many samples were dropped.
    LostSamples(u64),
    /// THROTTLE: the kernel stopped the event (too many interrupts).
    Throttle,
    /// UNTHROTTLE: the event runs again.
    Unthrottle,
}

/// A LOST, LOST_SAMPLES, THROTTLE or UNTHROTTLE record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Side {
    /// The event it names, when it names one the file has.
    pub event: Option<usize>,
    /// Its time: the record's own, else the latest sample time before it.
    pub time: u64,
    /// What happened.
    pub kind: SideKind,
}

/// A consumer of every sample of a build.
pub trait SampleSink {
    /// A sample; `sym` holds the process maps of that moment.
    fn sample(&mut self, s: &SampleRef<'_>, sym: &mut Symbolizer);
    /// A side-band record.
    fn side(&mut self, s: Side);
    /// A kernel map as the file recorded it (an MMAP of the kernel's
    /// mode: the kernel or a module, `path` as written), given as it is
    /// read; the profile itself names kernel code from kallsyms.
    fn kernel_map(&mut self, _start: u64, _len: u64, _pgoff: u64, _path: &[u8]) {}
    /// Whether the sink alone reads the samples (a branch report): the
    /// build then neither unwinds nor credits them (the profile keeps
    /// its events, lost counts and warnings, with no rows), and
    /// [`SampleRef::frames`] and [`SampleRef::addrs`] are empty.
    fn alone(&self) -> bool {
        false
    }
    /// The end: `remap` turns the provisional kernel frames given so far
    /// into resolved ones (see [`Symbolizer::resolve_deferred`]).
    fn finish(&mut self, sym: &mut Symbolizer, remap: &[FrameId]);
}
