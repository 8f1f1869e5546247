//! Who else uses the counters (the NMI watchdog, other processes' perf
//! events), and starting the session over them with `--force`.

use super::error::Error;
use pmx_msr::{Mode, MsrDevice, MsrError, MsrRoot, Plan, Session, SessionOptions, Signals};
use pmx_sys::SysRoot;
use std::path::Path;

/// What a perf event's descriptor links to in `/proc/PID/fd`.
const PERF_EVENT_LINK: &str = "anon_inode:[perf_event]";

/// What outside the session's registers says the counters are in use (see
/// the module documentation): the NMI watchdog and open perf events.
pub(super) fn users_outside(sys: &SysRoot) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(text) = std::fs::read_to_string(sys.path("proc/sys/kernel/nmi_watchdog")) {
        let v = text.trim();
        if !v.is_empty() && v != "0" {
            out.push(format!(
                "the NMI watchdog is on (kernel.nmi_watchdog = {v}: it keeps a perf cycles counter on every CPU; sysctl kernel.nmi_watchdog=0 turns it off)"
            ));
        }
    }
    let holders = perf_event_holders(&sys.path("proc"));
    if !holders.is_empty() {
        let shown: Vec<String> = holders
            .iter()
            .take(3)
            .map(|(pid, comm)| format!("{pid} ({comm})"))
            .collect();
        let more = if holders.len() > 3 {
            format!(" and {} more", holders.len() - 3)
        } else {
            String::new()
        };
        out.push(format!(
            "perf events are open in process{} {}{more}",
            if holders.len() == 1 { "" } else { "es" },
            shown.join(", ")
        ));
    }
    out
}

/// Processes under `proc` (other than this one) with a perf event open:
/// (pid, command name), by pid.
fn perf_event_holders(proc: &Path) -> Vec<(u32, String)> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    let mut out: Vec<(u32, String)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            if pid == me {
                return None;
            }
            let fds = std::fs::read_dir(e.path().join("fd")).ok()?;
            let holds = fds.filter_map(|f| f.ok()).any(|f| {
                std::fs::read_link(f.path()).is_ok_and(|t| t.as_os_str() == PERF_EVENT_LINK)
            });
            if !holds {
                return None;
            }
            let comm = std::fs::read_to_string(e.path().join("comm"))
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "?".to_string());
            Some((pid, comm))
        })
        .collect();
    out.sort();
    out
}

/// Start the session; with `force`, take over counters the library says
/// are in use (and say so in `notes`).
pub(super) fn start_session(
    device: MsrDevice,
    root: &MsrRoot,
    cpus: &[u32],
    plan: &Plan,
    force: bool,
    notes: &mut Vec<String>,
) -> Result<Session, Error> {
    let options = SessionOptions {
        force: false,
        signals: Signals::Defer,
    };
    match Session::start(device, plan.clone(), &options) {
        Ok(s) => Ok(s),
        Err(MsrError::Busy(what)) if force => {
            notes.push(format!(
                "--force: the counters were in use ({}); pmx took them over and put every register back",
                what.join("; ")
            ));
            // The refused start changed nothing and dropped the device.
            let device = MsrDevice::open(root, cpus, Mode::ReadWrite)?;
            let options = SessionOptions {
                force: true,
                ..options
            };
            Ok(Session::start(device, plan.clone(), &options)?)
        }
        Err(MsrError::Busy(what)) => Err(Error::Busy(what)),
        Err(e) => Err(Error::Device(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat_msr::error::FORCE_HINT;

    #[test]
    fn users_outside_reads_proc() {
        let dir = tempfile::tempdir().unwrap();
        let proc = dir.path().join("proc");
        for (pid, comm, link) in [
            ("4242", "perf", PERF_EVENT_LINK),
            ("17", "bash", "/dev/null"),
            ("99", "other", PERF_EVENT_LINK),
        ] {
            let fd = proc.join(pid).join("fd");
            std::fs::create_dir_all(&fd).unwrap();
            std::os::unix::fs::symlink(link, fd.join("3")).unwrap();
            std::fs::write(proc.join(pid).join("comm"), format!("{comm}\n")).unwrap();
        }
        std::fs::create_dir_all(proc.join("self")).unwrap();
        assert_eq!(
            perf_event_holders(&proc),
            vec![(99, "other".to_string()), (4242, "perf".to_string())]
        );
        let kernel = proc.join("sys/kernel");
        std::fs::create_dir_all(&kernel).unwrap();
        std::fs::write(kernel.join("nmi_watchdog"), "0\n").unwrap();
        let sys = SysRoot::new(dir.path());
        assert_eq!(
            users_outside(&sys),
            vec!["perf events are open in processes 99 (other), 4242 (perf)".to_string()]
        );
        std::fs::write(kernel.join("nmi_watchdog"), "1\n").unwrap();
        let found = users_outside(&sys);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("kernel.nmi_watchdog = 1"), "{found:?}");
        let e = Error::InUse(found);
        assert!(e
            .to_string()
            .starts_with("the counters are in use: the NMI watchdog is on"));
        assert!(e.to_string().ends_with(FORCE_HINT));
    }
}
