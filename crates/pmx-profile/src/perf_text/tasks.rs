//! `perf report --tasks`: the file's tasks (from its COMM and FORK
//! records) as a tree under their parents, with perf's idle task
//! (`swapper`, pid 0) that perf's machine always holds.

use pmx_perfdata::{Reader, Record};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// One task of a recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// Process id.
    pub pid: i64,
    /// Thread id.
    pub tid: i64,
    /// Parent process id (-1: not known).
    pub ppid: i64,
    /// Its last command name.
    pub comm: String,
}

/// The tasks of the file at `path` (`-` reads standard input), by tid.
pub fn tasks(path: &Path) -> Result<Vec<Task>, pmx_perfdata::Error> {
    let path = if path.as_os_str() == "-" {
        Path::new("/dev/stdin")
    } else {
        path
    };
    let mut r = Reader::open(path)?;
    let mut by_tid: BTreeMap<i64, Task> = BTreeMap::new();
    by_tid.insert(0, task(0, 0, -1, "swapper"));
    while let Some(rec) = r.next_record()? {
        match rec {
            Record::Comm(c) => {
                let name = String::from_utf8_lossy(c.comm).into_owned();
                let t = (by_tid.entry(c.tid as i64))
                    .or_insert_with(|| task(c.pid as i64, c.tid as i64, -1, ""));
                (t.pid, t.comm) = (c.pid as i64, name);
            }
            Record::Fork(f) => {
                let parent = by_tid.get(&(f.ptid as i64)).map(|p| p.comm.clone());
                let ppid = if f.pid == f.ppid { -1 } else { f.ppid as i64 };
                let t = (by_tid.entry(f.tid as i64))
                    .or_insert_with(|| task(f.pid as i64, f.tid as i64, ppid, ""));
                t.ppid = ppid;
                if t.comm.is_empty() {
                    t.comm = parent.unwrap_or_default();
                }
            }
            _ => {}
        }
    }
    Ok(by_tid.into_values().collect())
}

/// [`tasks`] of `path` written by [`write_tasks`].
pub fn print_tasks(path: &Path, out: &mut dyn Write) -> Result<(), pmx_perfdata::Error> {
    Ok(write_tasks(out, &tasks(path)?)?)
}

fn task(pid: i64, tid: i64, ppid: i64, comm: &str) -> Task {
    Task {
        pid,
        tid,
        ppid,
        comm: comm.to_string(),
    }
}

/// The tasks as perf prints them: a header, then each task under its
/// parent, two spaces deeper per level.
pub fn write_tasks(out: &mut dyn Write, tasks: &[Task]) -> std::io::Result<()> {
    writeln!(out, "#      pid      tid     ppid  comm")?;
    let roots = tasks
        .iter()
        .filter(|t| !tasks.iter().any(|p| p.pid == t.ppid && p.pid == p.tid));
    for t in roots {
        write_task(out, tasks, t, 0)?;
    }
    Ok(())
}

fn write_task(out: &mut dyn Write, all: &[Task], t: &Task, depth: usize) -> std::io::Result<()> {
    writeln!(
        out,
        "{:>10}{:>9}{:>9} {:w$}|{}",
        t.pid,
        t.tid,
        t.ppid,
        "",
        t.comm,
        w = depth * 2
    )?;
    if depth < 64 && t.pid == t.tid {
        for c in all.iter().filter(|c| c.ppid == t.pid && c.tid != t.tid) {
            write_task(out, all, c, depth + 1)?;
        }
    }
    Ok(())
}
