//! The tasks and CPUs a run counts: the (pid, cpu) slots each group is
//! opened on, the threads of a process (and the comm of each thread
//! listed: [`thread_comm`]), the online CPUs, whether a task still runs.

use super::options::{RunOptions, Scope};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The comm of every thread listed to be counted on its own (`-p`, `-t`,
/// `--per-thread -a`), read when it was listed: as perf, a thread keeps
/// the name it had when its counters opened, also once it has exited.
static COMMS: Mutex<BTreeMap<i32, String>> = Mutex::new(BTreeMap::new());

/// Read and keep the comm of `tid`; `false` when it is gone.
fn remember_comm(tid: i32) -> bool {
    let Ok(comm) = std::fs::read_to_string(format!("/proc/{tid}/comm")) else {
        return false;
    };
    let mut comms = COMMS.lock().unwrap_or_else(|e| e.into_inner());
    comms.insert(tid, comm.trim_end_matches('\n').to_string());
    true
}

/// The comm of thread `tid`: the one it had when it was listed for
/// counting, else its current one; `None` for a thread never seen that
/// is gone.
pub fn thread_comm(tid: i32) -> Option<String> {
    let kept = COMMS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&tid)
        .cloned();
    kept.or_else(|| {
        let c = std::fs::read_to_string(format!("/proc/{tid}/comm")).ok()?;
        Some(c.trim_end_matches('\n').to_string())
    })
}

/// Where each group is opened: (pid, cpu) slots.
pub(crate) fn slots(opts: &RunOptions, child: Option<i32>) -> Vec<(i32, i32)> {
    match &opts.scope {
        Scope::Command => vec![(child.unwrap_or(0), -1)],
        Scope::Pids(pids) => {
            let mut v = Vec::new();
            for &p in pids {
                let tids = threads_of(p);
                if tids.is_empty() {
                    v.push((p, -1));
                }
                v.extend(tids.into_iter().map(|t| (t, -1)));
            }
            v.iter().for_each(|&(t, _)| _ = remember_comm(t));
            v
        }
        Scope::Tids(t) => t
            .iter()
            .inspect(|&&t| _ = remember_comm(t))
            .map(|&t| (t, -1))
            .collect(),
        Scope::Cpus(c) => c.iter().map(|&c| (-1, c as i32)).collect(),
        // A thread gone before its comm is read is left out (perf would
        // print "Couldn't resolve comm name").
        Scope::AllThreads => numeric_entries("/proc")
            .into_iter()
            .flat_map(threads_of)
            .filter(|&t| remember_comm(t))
            .map(|t| (t, -1))
            .collect(),
    }
}

/// The threads of a process, from `/proc/PID/task`.
pub fn threads_of(pid: i32) -> Vec<i32> {
    numeric_entries(&format!("/proc/{pid}/task"))
}

/// The numeric names in a `/proc` directory (process or thread ids),
/// sorted; none when it cannot be read.
pub fn numeric_entries(dir: &str) -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The online CPUs (`/sys/devices/system/cpu/online`; every CPU the
/// process may use when that cannot be read).
pub fn online_cpus() -> Vec<u32> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| pmx_model::topology::parse_cpu_list(s.trim()).ok())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n as u32).collect()
        })
}

/// Is the task running (present and not a zombie)?
pub fn task_alive(tid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{tid}/stat")) {
        Ok(s) => {
            // The state follows the ')' that ends the command name.
            let state = s
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next());
            !matches!(state, Some('Z') | Some('X') | None)
        }
        Err(_) => false,
    }
}

/// `--per-thread`: the comm of each thread of `rows` (the one it had when
/// its counters opened, as perf names it; else its current one).
pub fn thread_comms(rows: &[pmx_formats::Row]) -> Vec<(i32, String)> {
    let mut tids: Vec<i32> = (rows.iter())
        .filter_map(|r| match r.domain {
            pmx_formats::Domain::Thread { tid } => Some(tid),
            _ => None,
        })
        .collect();
    tids.sort_unstable();
    tids.dedup();
    (tids.into_iter())
        .filter_map(|t| Some((t, thread_comm(t)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(scope: Scope) -> RunOptions {
        RunOptions {
            scope,
            command: Vec::new(),
            inherit: true,
            pin: None,
            duration: None,
            interval: None,
            interval_count: None,
            trace_tasks: false,
            hooks: Default::default(),
            tickers: true,
            spawn: Default::default(),
        }
    }

    #[test]
    fn slots_per_scope() {
        let me = std::process::id() as i32;
        assert_eq!(slots(&options(Scope::Command), Some(42)), [(42, -1)]);
        assert_eq!(
            slots(&options(Scope::Tids(vec![7, 8])), None),
            [(7, -1), (8, -1)]
        );
        assert_eq!(
            slots(&options(Scope::Cpus(vec![0, 3])), None),
            [(-1, 0), (-1, 3)]
        );
        let mine = slots(&options(Scope::Pids(vec![me])), None);
        assert!(mine.contains(&(me, -1)), "{mine:?}");
        assert_eq!(mine.len(), threads_of(me).len());
        // Every thread of the system, this process's and pid 1 among them,
        // each with its comm kept.
        let all = slots(&options(Scope::AllThreads), None);
        assert!(all.contains(&(me, -1)) && all.contains(&(1, -1)), "{all:?}");
        assert!(all.iter().all(|&(t, cpu)| t > 0 && cpu == -1));
        let comm = std::fs::read_to_string("/proc/1/comm").expect("pid 1");
        assert_eq!(thread_comm(1).as_deref(), Some(comm.trim_end()));
    }

    #[test]
    fn this_process_is_alive_and_has_threads() {
        let me = std::process::id() as i32;
        assert!(task_alive(me));
        assert!(threads_of(me).contains(&me));
        assert!(!task_alive(i32::MAX));
        assert!(threads_of(i32::MAX).is_empty());
        assert!(!online_cpus().is_empty());
    }
}
