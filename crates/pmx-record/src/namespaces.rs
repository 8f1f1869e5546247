//! `--namespaces`: the kernel writes a `PERF_RECORD_NAMESPACES` when a
//! traced task is created or changes namespaces (`attr.namespaces` on
//! the side-band event); what existed before is synthesized here the way
//! perf does: per thread, the (device, inode) of each of its
//! `/proc/TID/ns/*` links, in the kernel's order (net, uts, ipc, pid,
//! user, mnt, cgroup; a link that cannot be read is 0/0), with a
//! `sample_id` trailer of zero pid, tid and time (perf's synthesized
//! records carry none).

use super::synth::id_trailer;
use pmx_count::stat::Scope;
use pmx_perf::mmap::record as rt;
use std::os::unix::fs::MetadataExt;

/// The namespaces of a record, in the kernel's index order.
const NAMES: [&str; 7] = ["net", "uts", "ipc", "pid", "user", "mnt", "cgroup"];

/// The NAMESPACES record of thread `tid` of process `pid`.
fn record(pid: i32, tid: i32, trailer: &[u8]) -> Option<Vec<u8>> {
    let mut v = Vec::with_capacity(24 + 16 * NAMES.len() + trailer.len());
    v.extend_from_slice(&rt::NAMESPACES.to_ne_bytes());
    v.extend_from_slice(&0u32.to_ne_bytes());
    v.extend_from_slice(&pid.to_ne_bytes());
    v.extend_from_slice(&tid.to_ne_bytes());
    v.extend_from_slice(&(NAMES.len() as u64).to_ne_bytes());
    for n in NAMES {
        let link = std::fs::metadata(format!("/proc/{tid}/ns/{n}"));
        let (dev, ino) = link.map_or((0, 0), |m| (m.dev(), m.ino()));
        v.extend_from_slice(&dev.to_ne_bytes());
        v.extend_from_slice(&ino.to_ne_bytes());
    }
    v.extend_from_slice(trailer);
    let size = u16::try_from(v.len()).ok()?;
    v[6..8].copy_from_slice(&size.to_ne_bytes());
    Some(v)
}

/// The NAMESPACES records of what `scope` names before the recording
/// (`child`: the launched command, held before `exec`); `st` is the
/// shared sample_type, `id` the id the trailers carry.
pub(super) fn existing(scope: &Scope, child: Option<i32>, st: u64, id: u64) -> Vec<Vec<u8>> {
    let trailer = id_trailer(st, 0, 0, id);
    let process = |pid: i32| {
        let tids = pmx_count::stat::threads_of(pid);
        tids.into_iter().map(move |t| (pid, t)).collect::<Vec<_>>()
    };
    let tasks: Vec<(i32, i32)> = match scope {
        Scope::Command => child.map(|c| (c, c)).into_iter().collect(),
        Scope::Pids(p) => p.iter().flat_map(|&p| process(p)).collect(),
        Scope::Tids(t) => t.iter().map(|&t| (tgid_of(t).unwrap_or(t), t)).collect(),
        Scope::Cpus(_) | Scope::AllThreads => (pmx_count::stat::numeric_entries("/proc"))
            .into_iter()
            .flat_map(process)
            .collect(),
    };
    (tasks.into_iter())
        .filter_map(|(pid, tid)| record(pid, tid, &trailer))
        .collect()
}

/// The process a thread belongs to (`Tgid:` in its status).
fn tgid_of(tid: i32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}
