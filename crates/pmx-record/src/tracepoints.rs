//! Tracepoint events as perf records them: every hit sampled (period 1
//! unless the event gives its own), with its raw data (`PERF_SAMPLE_RAW`),
//! and the `TRACING_DATA` feature — this machine's tracefs format files of
//! the recorded tracepoints — so a reader decodes the raw data with the
//! formats of the machine that wrote it.

use pmx_perf::{sample_type, Attr, SampleRate};
use pmx_perfdata::tracing::{self, TracingFiles};
use std::path::{Path, PathBuf};

/// `PERF_TYPE_TRACEPOINT`.
pub(super) const TRACEPOINT: u32 = 2;

/// Where tracefs is mounted (`None`: nowhere this process can read, and
/// it could mount it nowhere): pmx-sys mounts it as perf does.
pub(super) fn tracefs() -> Option<PathBuf> {
    pmx_sys::tracefs::root()
}

/// Why [`tracefs`] found none, and the fix: a tracefs this user may not
/// read (a non-root user: tracefs is root's by default), or none mounted
/// (and this process may not mount one).
pub(super) fn tracefs_missing() -> &'static str {
    let denied = (pmx_sys::tracefs::MOUNT_POINTS.iter())
        .chain(["/sys/kernel/debug"].iter())
        .any(|p| {
            std::fs::read_dir(p).is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
        });
    if denied {
        "tracefs (/sys/kernel/tracing) is root's and this user may not read it: run as root, or \
         let the user read it (`mount -o remount,mode=755 /sys/kernel/tracing`) and open \
         tracepoints (`sysctl kernel.perf_event_paranoid=1` or CAP_PERFMON)"
    } else {
        "tracefs is not mounted: mount it with `mount -t tracefs nodev /sys/kernel/tracing`"
    }
}

/// A tracepoint's sampling attr: every hit, with its raw data.
pub(super) fn adjust(attr: &mut Attr, own_rate: Option<SampleRate>) {
    if attr.type_ != TRACEPOINT {
        return;
    }
    attr.sample_type |= sample_type::RAW;
    if own_rate.is_none() {
        attr.sample = Some(SampleRate::Period(1));
    }
}

/// A tracefs file whole. Some (`events/header_page`) give their text
/// only to a first read large enough and then say end of file: they are
/// read with a 64 KiB buffer, as perf does.
pub(super) fn read_tracefs(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match f.read(&mut buf)? {
            0 => return Ok(out),
            n => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// The `(system, name)` of every tracepoint id among `ids`, from the
/// `events/*/*/id` files under `root`.
fn names_of(root: &Path, ids: &[u64]) -> Vec<(u64, String, String)> {
    let mut found = Vec::new();
    let Ok(systems) = std::fs::read_dir(root.join("events")) else {
        return found;
    };
    for sys in systems.flatten() {
        let Ok(events) = std::fs::read_dir(sys.path()) else {
            continue;
        };
        for ev in events.flatten() {
            let id = std::fs::read_to_string(ev.path().join("id")).ok();
            let Some(id) = id.and_then(|s| s.trim().parse::<u64>().ok()) else {
                continue;
            };
            if ids.contains(&id) {
                let s = sys.file_name().to_string_lossy().into_owned();
                let e = ev.file_name().to_string_lossy().into_owned();
                found.push((id, s, e));
            }
        }
    }
    found.sort();
    found
}

/// The TRACING_DATA feature for `attrs`' tracepoints (`Ok(None)` when
/// there are none), or why it cannot be written.
pub(super) fn tracing_data(attrs: &[Attr]) -> Result<Option<Vec<u8>>, String> {
    let mut ids: Vec<u64> = (attrs.iter())
        .filter(|a| a.type_ == TRACEPOINT)
        .map(|a| a.config)
        .collect();
    if ids.is_empty() {
        return Ok(None);
    }
    ids.sort_unstable();
    ids.dedup();
    let root = tracefs().ok_or_else(tracefs_missing)?;
    let read = |p: PathBuf| read_tracefs(&p).map_err(|e| format!("{}: {e}", p.display()));
    let mut files = TracingFiles {
        header_page: read(root.join("events/header_page"))?,
        header_event: read(root.join("events/header_event"))?,
        printk: read_tracefs(&root.join("printk_formats")).unwrap_or_default(),
        ..TracingFiles::default()
    };
    for (_, sys, ev) in names_of(&root, &ids) {
        let format = read(root.join("events").join(&sys).join(&ev).join("format"))?;
        if sys == "ftrace" {
            files.ftrace.push(format);
            continue;
        }
        match files.systems.iter_mut().find(|(s, _)| *s == sys) {
            Some((_, v)) => v.push(format),
            None => files.systems.push((sys, vec![format])),
        }
    }
    // SAFETY: sysconf has no memory effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u32;
    let data = tracing::build(&files, page);
    Ok(Some(data))
}
