//! Side-band records that [`crate::read::Reader`] passes on as
//! [`crate::Record::Other`], decoded on request: context switches
//! (`SWITCH`, `SWITCH_CPU_WIDE`, written with `attr.context_switch`) and
//! `NAMESPACES` (with `attr.namespaces`); [`sample_id`] reads their
//! `sample_id` trailer.

use crate::format::record_type;
use crate::read::SampleId;
use crate::PerfEventAttr;

/// The `sample_id` trailer of a side-band record's body (the bytes after
/// its header, as [`crate::Record::Other`] gives them), laid out by the
/// file's first event's `attr`.
pub fn sample_id(first: &PerfEventAttr, body: &[u8]) -> SampleId {
    let mut rec = vec![0u8; 8];
    rec.extend_from_slice(body);
    crate::read::trailer_of(Some(first), &rec).0
}

/// `misc` of a switch record: the thread was switched out.
pub const SWITCH_OUT: u16 = 1 << 13;
/// `misc` of a switch-out record: it was preempted (still runnable).
pub const SWITCH_OUT_PREEMPT: u16 = 1 << 14;

/// A context switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch {
    /// Switched out (else in).
    pub out: bool,
    /// Switched out while runnable.
    pub preempt: bool,
    /// `SWITCH_CPU_WIDE`: the next (out) or previous (in) thread's pid, tid.
    pub other: Option<(u32, u32)>,
}

/// Decode a switch record (`kind`, `misc` and the body after the header).
pub fn switch(kind: u32, misc: u16, body: &[u8]) -> Option<Switch> {
    let other = match kind {
        record_type::SWITCH => None,
        record_type::SWITCH_CPU_WIDE => {
            let b = body.get(..8)?;
            let u = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
            Some((u(0), u(4)))
        }
        _ => return None,
    };
    Some(Switch {
        out: misc & SWITCH_OUT != 0,
        preempt: misc & SWITCH_OUT_PREEMPT != 0,
        other,
    })
}

/// A `NAMESPACES` record: a task's namespaces as (device, inode) pairs,
/// in the kernel's order (net, uts, ipc, pid, user, mnt, cgroup …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespaces {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// (dev, ino) per namespace.
    pub links: Vec<(u64, u64)>,
}

/// perf's names of the namespaces, in the record's order.
pub const NAMESPACE_NAMES: [&str; 7] = ["net", "uts", "ipc", "pid", "user", "mnt", "cgroup"];

/// Decode a `NAMESPACES` body.
pub fn namespaces(body: &[u8]) -> Option<Namespaces> {
    let u64_at = |i: usize| -> Option<u64> {
        Some(u64::from_le_bytes(body.get(i..i + 8)?.try_into().ok()?))
    };
    let pid = u64_at(0)? as u32;
    let tid = (u64_at(0)? >> 32) as u32;
    let nr = u64_at(8)?;
    if nr > 64 {
        return None;
    }
    let links = (0..nr as usize)
        .map(|i| Some((u64_at(16 + 16 * i)?, u64_at(24 + 16 * i)?)))
        .collect::<Option<Vec<_>>>()?;
    Some(Namespaces { pid, tid, links })
}
