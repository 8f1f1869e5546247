//! What existed before the recording started, as records: the kernel's
//! map, and for `-p`/`-t`/`-a` every thread's COMM and every executable
//! mapping (every mapping when the attr asks for data maps, as with
//! `--call-graph dwarf`) of the processes concerned (a launched command needs none: its
//! events start at `exec`, so the kernel reports them itself).

use super::synth::{comm_record, id_trailer, kernel_mmap_record, mmap2_record, parse_map_line};
use pmx_count::stat::Scope;
use std::collections::BTreeMap;

/// Every process id in `/proc`.
fn all_pids() -> Vec<i32> {
    pmx_count::stat::numeric_entries("/proc")
}

/// The process a thread belongs to (`Tgid:` in its status).
fn tgid_of(tid: i32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// COMM records for every thread of `pid` (or only `only_tids`) and MMAP2
/// records for its executable mappings (all its mappings with `data`).
fn synthesize_process(
    pid: i32,
    only_tids: Option<&[i32]>,
    (st, id, data): (u64, u64, bool),
    out: &mut Vec<Vec<u8>>,
) {
    let tids = match only_tids {
        Some(t) => t.to_vec(),
        None => pmx_count::stat::threads_of(pid),
    };
    for &tid in &tids {
        let Ok(comm) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")) else {
            continue;
        };
        if let Some(r) = comm_record(
            pid,
            tid,
            comm.trim_end_matches('\n'),
            &id_trailer(st, pid, tid, id),
        ) {
            out.push(r);
        }
    }
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return;
    };
    let trailer = id_trailer(st, pid, pid, id);
    for m in maps.lines().filter_map(parse_map_line) {
        if m.prot & libc::PROT_EXEC as u32 == 0 && !data {
            continue;
        }
        if let Some(r) = mmap2_record(pid, &m, &trailer) {
            out.push(r);
        }
    }
}

/// The records for what existed before: the kernel's map (or a note why
/// there is none, unless no event samples the kernel), then the tasks of
/// `scope`. `st` is the shared sample_type, `first_id` the id the
/// trailers carry; `data_maps`: the data mappings too (`mmap_data`).
pub(super) fn existing(
    scope: &Scope,
    st: u64,
    first_id: u64,
    samples_kernel: bool,
    data_maps: bool,
    notes: &mut Vec<String>,
) -> Vec<Vec<u8>> {
    let mut synth = Vec::new();
    match kernel_mmap_record(&id_trailer(st, -1, 0, first_id)) {
        Ok(r) => synth.push(r),
        // Nothing to symbolize when no event samples the kernel.
        Err(_) if !samples_kernel => {}
        Err(why) => notes.push(format!(
            "no kernel map: {why}; kernel addresses will not be symbolized"
        )),
    }
    match scope {
        Scope::Command => {}
        Scope::Pids(p) => {
            for &pid in p {
                synthesize_process(pid, None, (st, first_id, data_maps), &mut synth);
            }
        }
        Scope::Tids(t) => {
            let mut by_process: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
            for &tid in t {
                by_process
                    .entry(tgid_of(tid).unwrap_or(tid))
                    .or_default()
                    .push(tid);
            }
            for (pid, tids) in by_process {
                synthesize_process(pid, Some(&tids), (st, first_id, data_maps), &mut synth);
            }
        }
        Scope::Cpus(_) | Scope::AllThreads => {
            for pid in all_pids() {
                synthesize_process(pid, None, (st, first_id, data_maps), &mut synth);
            }
        }
    }
    synth
}
