//! The open/mmap stage: every event on every CPU × task, sampling; the
//! first fd on a CPU owns that CPU's ring buffer and the others there are
//! redirected into it (`PERF_EVENT_IOC_SET_OUTPUT`).

use super::options::{RecordError, RecordEvent};
use super::plan::Plan;
use pmx_perf::mmap::Mmap;
use pmx_perf::{Counter, OpenCause, OpenError};
use std::collections::HashMap;
use std::io;

/// One CPU's ring.
pub(super) struct Ring {
    /// The ring buffer.
    pub(super) mmap: Mmap,
    /// The owning event's fd (open for as long as the ring is read).
    pub(super) fd: i32,
}

/// Every fd opened and the ids of each event's fds.
pub(super) struct Opened {
    /// The counters, in open order.
    pub(super) counters: Vec<Counter>,
    /// Per event, the ids of its fds.
    pub(super) ids: Vec<Vec<u64>>,
}

/// Open `plan` for `events` with rings of `mmap_pages` data pages: the
/// fds, and one ring per CPU (to be dropped before the fds).
pub(super) fn open(
    plan: &Plan,
    events: &[RecordEvent],
    mmap_pages: usize,
) -> Result<(Opened, Vec<Ring>), RecordError> {
    let mut o = Opened {
        counters: Vec::new(),
        ids: vec![Vec::new(); events.len()],
    };
    let mut rings = Vec::new();
    for &cpu in &plan.cpus {
        let mut owner: Option<usize> = None;
        for &task in &plan.tasks {
            // Where each event's counter is, for its group's members.
            let mut here: Vec<Option<usize>> = vec![None; events.len()];
            for (ei, attr) in plan.attrs.iter().enumerate() {
                let target = pmx_perf::Target {
                    pid: task,
                    cpu: cpu as i32,
                };
                let leader = events[ei].group.filter(|g| g.leader != ei);
                let group = leader.and_then(|g| here[g.leader]).map(|c| &o.counters[c]);
                let c = match Counter::open(attr, target, group) {
                    Ok(c) => c,
                    Err(e) if plan.tolerate_gone && task_gone(&e) => break,
                    Err(e) => return Err(open_error(&events[ei].name, attr, e)),
                };
                match owner {
                    Some(first) => c.set_output(&o.counters[first]).map_err(|e| {
                        RecordError::Io(io::Error::new(
                            e.kind(),
                            format!(
                                "cannot send {}'s records to CPU {cpu}'s ring: {e}",
                                events[ei].name
                            ),
                        ))
                    })?,
                    None => {
                        let mmap = Mmap::new(&c, mmap_pages)?;
                        rings.push(Ring {
                            mmap,
                            fd: std::os::fd::AsRawFd::as_raw_fd(&c),
                        });
                        owner = Some(o.counters.len());
                    }
                }
                o.ids[ei].push(c.id());
                here[ei] = Some(o.counters.len());
                o.counters.push(c);
            }
        }
    }
    if o.counters.is_empty() {
        return Err(RecordError::NoTask);
    }
    Ok((o, rings))
}

/// The task exited before its events could be opened.
fn task_gone(e: &OpenError) -> bool {
    e.cause == OpenCause::NoProcess
}

/// An event that cannot be opened: its name, the reason and the fix.
/// A refused LBR call stack or branch stack (`-b`/`-j`) says what
/// branch records need (the kernel's EOPNOTSUPP alone reads like the
/// event's fault).
fn open_error(event: &str, attr: &pmx_perf::Attr, e: OpenError) -> RecordError {
    use pmx_perfdata::format::branch_sample_type as b;
    // `--call-graph lbr`'s filter (`-j stack` alone is a branch filter).
    let lbr_mask = b::USER | b::CALL_STACK | b::NO_FLAGS | b::NO_CYCLES | b::HW_INDEX;
    let lbr = attr.sample_type & pmx_perf::sample_type::BRANCH_STACK != 0
        && attr.branch_sample_type == lbr_mask;
    if lbr
        && matches!(
            e.cause,
            OpenCause::NotSupported { .. } | OpenCause::Invalid { .. }
        )
    {
        return RecordError::NotSampleable(format!(
            "{event}: --call-graph lbr: the kernel refused the LBR call stack \
             (PERF_SAMPLE_BRANCH_STACK with CALL_STACK: {}): it needs an Intel CPU with \
             LBR call stacks (Haswell or later) and a hardware event such as cycles; \
             this machine or event has none. Use --call-graph dwarf (or fp)",
            std::io::Error::from_raw_os_error(e.errno)
        ));
    }
    let branches = attr.sample_type & pmx_perf::sample_type::BRANCH_STACK != 0;
    if branches
        && matches!(
            e.cause,
            OpenCause::NotSupported { .. } | OpenCause::Invalid { .. }
        )
    {
        return RecordError::NotSampleable(format!(
            "{event}: -b/-j: the kernel refused to sample branch stacks \
             (PERF_SAMPLE_BRANCH_STACK, branch_sample_type {:#x}: {}): they need a PMU that \
             records taken branches (Intel LBR, AMD BRS or LbrExtV2, Arm BRBE) and a hardware \
             event such as cycles; software events (cpu-clock) and machines without such a PMU \
             (most virtual machines) have none",
            attr.branch_sample_type,
            std::io::Error::from_raw_os_error(e.errno)
        ));
    }
    RecordError::Open(Box::new(pmx_count::stat::EventOpenError {
        event: event.to_string(),
        error: e,
    }))
}

impl Opened {
    /// Sample id → event index.
    pub(super) fn by_id(&self) -> HashMap<u64, usize> {
        self.ids
            .iter()
            .enumerate()
            .flat_map(|(ei, v)| v.iter().map(move |&id| (id, ei)))
            .collect()
    }

    /// The id synthesized records carry: the first event's first fd's.
    pub(super) fn first_id(&self) -> u64 {
        self.ids[0].first().copied().unwrap_or(0)
    }

    /// Enable every counter now.
    pub(super) fn enable(&self) -> io::Result<()> {
        for c in &self.counters {
            c.enable(false)?;
        }
        Ok(())
    }

    /// Disable every counter (errors ignored: the end is near).
    pub(super) fn disable(&self) {
        for c in &self.counters {
            let _ = c.disable(false);
        }
    }
}
