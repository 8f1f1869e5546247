//! `--per-thread` with a command: the command is followed with ptrace,
//! and every new thread or process gets its own counters before it first
//! runs.

use super::open::{OpenSet, Opened};
use super::plan::StatPlan;
use crate::launch::Exit;
use pmx_perf::Counter;
use std::collections::BTreeSet;

/// Follow a traced command until its main task ends: every new thread or
/// process stops before it first runs, gets its own counters (enabled at
/// once: they count from its first instruction), and is let go; signals
/// are passed on. Returns how the main task ended.
pub(crate) fn follow_tasks(main: i32, plan: &StatPlan, set: &mut OpenSet) -> Option<Exit> {
    let mut known: BTreeSet<i32> = [main].into_iter().collect();
    let mut add = |tid: i32, set: &mut OpenSet| {
        if known.insert(tid) {
            open_task(plan, tid, set);
        }
    };
    let cont = |tid: i32, sig: i32| {
        // SAFETY: resuming a tracee of ours; no memory is passed.
        unsafe { libc::ptrace(libc::PTRACE_CONT, tid, 0usize, sig as usize) };
    };
    loop {
        let mut st = 0;
        // SAFETY: waiting for our children and tracees.
        let w = unsafe { libc::waitpid(-1, &mut st, libc::__WALL) };
        if w < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return None;
        }
        if libc::WIFEXITED(st) || libc::WIFSIGNALED(st) {
            if w == main {
                return Some(Exit::from_wait_status(st));
            }
            continue;
        }
        if !libc::WIFSTOPPED(st) {
            continue;
        }
        let sig = libc::WSTOPSIG(st);
        let event = (st >> 16) & 0xff;
        match event {
            libc::PTRACE_EVENT_CLONE | libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK => {
                let mut msg: libc::c_ulong = 0;
                // SAFETY: GETEVENTMSG writes one c_ulong into msg.
                unsafe {
                    libc::ptrace(
                        libc::PTRACE_GETEVENTMSG,
                        w,
                        0usize,
                        &mut msg as *mut libc::c_ulong,
                    )
                };
                add(msg as i32, set);
                cont(w, 0);
            }
            libc::PTRACE_EVENT_STOP => {
                // A new task's first stop (possibly before its parent's
                // event), or a group stop: count it, let it run.
                add(w, set);
                cont(w, 0);
            }
            _ => {
                add(w, set);
                cont(w, sig);
            }
        }
    }
}

/// Open the plan's task events (not those with their own CPUs) on `tid`,
/// enabled, not inherited; events that fail to open are left out.
fn open_task(plan: &StatPlan, tid: i32, set: &mut OpenSet) {
    for g in &plan.groups {
        let members: Vec<usize> = g
            .members
            .iter()
            .copied()
            .filter(|&i| plan.events[i].attr.is_ok() && plan.events[i].cpus.is_none())
            .collect();
        let mut leader: Option<usize> = None;
        for &ei in &members {
            let mut attr = plan.events[ei].attr.clone().expect("filtered");
            attr.inherit = false;
            if leader.is_none() && members.len() > 1 {
                attr.read_format |= pmx_perf::read_format::GROUP;
            }
            let group = leader.map(|l| &set.opened[l].counter);
            if let Ok(c) = Counter::open(&attr, pmx_perf::Target { pid: tid, cpu: -1 }, group) {
                if leader.is_none() {
                    leader = Some(set.opened.len());
                    set.leaders.push(set.opened.len());
                }
                set.opened.push(Opened {
                    counter: c,
                    event: ei,
                    cpu: -1,
                    tid,
                });
            }
        }
    }
}
