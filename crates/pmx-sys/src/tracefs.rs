//! tracefs, the kernel's tracing file system: the tracepoints' ids and
//! formats. [`root`] says where it is mounted and, where it is mounted
//! nowhere, mounts it at `/sys/kernel/tracing` first when this process
//! may mount (root, or `CAP_SYS_ADMIN`): what perf does before it opens a
//! tracepoint, so that `pmx record -e sched:sched_switch` and `--off-cpu`
//! work on a freshly booted machine whose init mounts no tracefs.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where tracefs is looked for, in order: its own mount point, and the
/// one under debugfs that older systems use.
pub const MOUNT_POINTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// The first of `candidates` that holds a tracefs this process can read
/// (its `events/header_page`).
pub fn find<P: AsRef<Path>>(candidates: &[P]) -> Option<PathBuf> {
    candidates
        .iter()
        .map(|p| p.as_ref().to_path_buf())
        .find(|p| p.join("events/header_page").is_file())
}

/// Mount tracefs at `dir`, an existing directory.
pub fn mount_at(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let target = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: NUL-terminated strings that outlive the call; no data
    // argument.
    let rc = unsafe {
        libc::mount(
            c"none".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    match rc {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Where tracefs is, once per process: found at one of
/// [`MOUNT_POINTS`], or mounted at the first of them when it is mounted
/// at none and this process may mount (as perf mounts it). `None`: no
/// tracefs this process can read, and none it could mount.
pub fn root() -> Option<PathBuf> {
    static ROOT: OnceLock<Option<PathBuf>> = OnceLock::new();
    ROOT.get_or_init(|| {
        find(&MOUNT_POINTS).or_else(|| {
            let dir = Path::new(MOUNT_POINTS[0]);
            // Mounted but unreadable (another user's) is not "not mounted":
            // mounting over it would hide the answer the user needs.
            let unreadable = std::fs::read_dir(dir)
                .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied);
            if unreadable || !dir.is_dir() {
                return None;
            }
            mount_at(dir).ok()?;
            find(&MOUNT_POINTS[..1])
        })
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_directory_holds_no_tracefs() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(find(&[dir.path()]), None);
    }

    /// tracefs mounted at a directory of the test's own is found there,
    /// with the scheduler's tracepoints in it (a second mount of the one
    /// tracefs: the machine's own mount is left as it is).
    #[test]
    fn a_mounted_tracefs_is_found_with_its_tracepoints() {
        let dir = tempfile::tempdir().unwrap();
        if let Err(e) = mount_at(dir.path()) {
            pmx_testkit::skip(format_args!(
                "tracefs cannot be mounted here ({e}): needs root or CAP_SYS_ADMIN and a kernel with tracefs"
            ));
            return;
        }
        let found = find(&[Path::new("/nonexistent"), dir.path()]);
        let id = dir.path().join("events/sched/sched_switch/id");
        let has_switch = id.is_file();
        // SAFETY: a NUL-terminated path; MNT_DETACH so that a reader still
        // inside cannot keep it mounted.
        let target = std::ffi::CString::new(dir.path().to_str().unwrap()).unwrap();
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
        assert_eq!(found.as_deref(), Some(dir.path()));
        assert!(
            has_switch,
            "no sched:sched_switch under {}",
            dir.path().display()
        );
    }
}
