//! The msr driver's devices: `ROOT/N/msr`, 8 bytes at offset = address.
//!
//! [`MsrRoot`] says where the devices are (`/dev/cpu/N/msr` by default;
//! `DIR/N/msr` or `DIR/cpuN/msr` under another directory, e.g. plain files
//! in tests) and where the kernel's lockdown and msr-driver settings are,
//! so a refused write can say why.
//!
//! ## Fixture files
//!
//! The driver takes the file offset as the register *number*: offsets 0x38D
//! and 0x38F are two registers. In a plain file they would be byte ranges
//! 0x38D..0x395 and 0x38F..0x397, which overlap. So when the device is a
//! regular file rather than the driver's character device, register N is
//! kept at byte offset 8·N ([`FIXTURE_STRIDE`]): a sparse file of
//! 8 × 2^32 bytes holds every MSR, and tests (and dumps) use the same
//! files pmx does. The choice is made per file when it is opened.
//!
//! [`MsrDevice`] holds one open file per CPU; reads and writes take `&self`
//! so several threads may share it. Errors name what is missing:
//! the driver (`modprobe msr`), the privilege (root or CAP_SYS_RAWIO), the
//! register (`EIO` from `rdmsr`), or the permission to write (lockdown, the
//! driver's `allow_writes` filter).

use crate::catalogue::describe_address;
use crate::error::MsrError;
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::os::unix::io::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};

/// Bytes per register in a fixture file (see the module documentation).
pub const FIXTURE_STRIDE: u64 = 8;

/// The file offset of MSR `address`: the address itself on the driver's
/// device, 8·address in a regular (fixture) file.
pub fn file_offset(address: u32, fixture: bool) -> u64 {
    if fixture {
        u64::from(address) * FIXTURE_STRIDE
    } else {
        u64::from(address)
    }
}

/// Where the msr devices (and the kernel's settings about them) are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MsrRoot {
    dev: PathBuf,
    sys: Option<PathBuf>,
}

impl Default for MsrRoot {
    fn default() -> MsrRoot {
        MsrRoot::host()
    }
}

impl MsrRoot {
    /// The devices' directory on a real system.
    pub const DEFAULT_DIR: &'static str = "/dev/cpu";

    /// The running system: `/dev/cpu`, settings under `/sys`.
    pub fn host() -> MsrRoot {
        MsrRoot {
            dev: PathBuf::from(Self::DEFAULT_DIR),
            sys: Some(PathBuf::from("/sys")),
        }
    }

    /// Devices under `dir` (`dir/N/msr` or `dir/cpuN/msr`); no lockdown or driver settings
    /// are consulted unless [`Self::with_sysfs`] names a sysfs.
    pub fn new(dir: impl Into<PathBuf>) -> MsrRoot {
        MsrRoot {
            dev: dir.into(),
            sys: None,
        }
    }

    /// Read `kernel/security/lockdown` and `module/msr/parameters/allow_writes`
    /// under `sys` (a sysfs mount, `/sys` on a real system).
    pub fn with_sysfs(mut self, sys: impl Into<PathBuf>) -> MsrRoot {
        self.sys = Some(sys.into());
        self
    }

    /// The devices' directory.
    pub fn dir(&self) -> &Path {
        &self.dev
    }

    /// The device of CPU `cpu`: `ROOT/N/msr` as the kernel names it, or
    /// `ROOT/cpuN/msr` as test fixtures may; the kernel's name when neither
    /// exists.
    pub fn device_path(&self, cpu: u32) -> PathBuf {
        let kernel = self.dev.join(cpu.to_string()).join("msr");
        if kernel.exists() {
            return kernel;
        }
        let fixture = self.dev.join(format!("cpu{cpu}")).join("msr");
        if fixture.exists() {
            return fixture;
        }
        kernel
    }

    /// The CPUs that have a device, ascending.
    pub fn cpus_with_devices(&self) -> Vec<u32> {
        let Ok(entries) = std::fs::read_dir(&self.dev) else {
            return Vec::new();
        };
        let mut cpus: Vec<u32> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name();
                let name = name.to_str()?;
                let n = name
                    .strip_prefix("cpu")
                    .unwrap_or(name)
                    .parse::<u32>()
                    .ok()?;
                e.path().join("msr").exists().then_some(n)
            })
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    }

    /// The active kernel lockdown mode, when the lockdown LSM is present
    /// (`none`, `integrity`, `confidentiality`).
    pub fn lockdown(&self) -> Option<String> {
        let text = self.sys_file("kernel/security/lockdown")?;
        // "none [integrity] confidentiality": the bracketed word is active.
        Some(
            text.split_whitespace()
                .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
                .unwrap_or(text.trim())
                .to_string(),
        )
    }

    /// Whether lockdown forbids MSR writes (`integrity` or above).
    pub fn writes_locked_down(&self) -> Option<String> {
        self.lockdown()
            .filter(|m| m == "integrity" || m == "confidentiality")
    }

    /// The msr driver's `allow_writes` parameter (`on`, `off`, `default`).
    pub fn allow_writes(&self) -> Option<String> {
        self.sys_file("module/msr/parameters/allow_writes")
            .map(|s| s.trim().to_string())
    }

    fn sys_file(&self, rel: &str) -> Option<String> {
        let path = self.sys.as_ref()?.join(rel);
        std::fs::read_to_string(path).ok()
    }
}

/// How the devices are opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Read only (`rdmsr`).
    Read,
    /// Read and write (`wrmsr`, sessions).
    ReadWrite,
}

/// Open msr devices for a set of CPUs.
#[derive(Debug)]
pub struct MsrDevice {
    root: MsrRoot,
    mode: Mode,
    /// Sorted by CPU.
    files: Vec<Opened>,
}

#[derive(Debug)]
struct Opened {
    cpu: u32,
    path: PathBuf,
    file: File,
    /// A regular file: register N at byte 8·N.
    fixture: bool,
}

impl MsrDevice {
    /// Open the msr device ([`MsrRoot::device_path`]) of every CPU in `cpus` (duplicates ignored).
    /// Fails on the first CPU that cannot be opened, saying why.
    pub fn open(root: &MsrRoot, cpus: &[u32], mode: Mode) -> Result<MsrDevice, MsrError> {
        let mut list: Vec<u32> = cpus.to_vec();
        list.sort_unstable();
        list.dedup();
        let mut files = Vec::with_capacity(list.len());
        for cpu in list {
            let path = root.device_path(cpu);
            let file = OpenOptions::new()
                .read(true)
                .write(mode == Mode::ReadWrite)
                .open(&path)
                .map_err(|e| open_error(root, cpu, &path, e))?;
            let fixture = file.metadata().map(|m| m.is_file()).unwrap_or(false);
            files.push(Opened {
                cpu,
                path,
                file,
                fixture,
            });
        }
        Ok(MsrDevice {
            root: root.clone(),
            mode,
            files,
        })
    }

    /// The root the devices were opened under.
    pub fn root(&self) -> &MsrRoot {
        &self.root
    }

    /// The mode they were opened in.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The opened CPUs, ascending.
    pub fn cpus(&self) -> Vec<u32> {
        self.files.iter().map(|o| o.cpu).collect()
    }

    /// Whether CPU `cpu`'s file is a fixture (a regular file, register N at
    /// byte 8·N) rather than the driver's device.
    pub fn is_fixture(&self, cpu: u32) -> Result<bool, MsrError> {
        self.entry(cpu).map(|o| o.fixture)
    }

    fn entry(&self, cpu: u32) -> Result<&Opened, MsrError> {
        self.files
            .binary_search_by_key(&cpu, |o| o.cpu)
            .map(|i| &self.files[i])
            .map_err(|_| MsrError::NotOpened { cpu })
    }

    /// The raw descriptor of CPU `cpu`'s device and the file offset of
    /// `address` in it (for the signal-safe restore path, which may not
    /// touch anything but descriptors).
    pub(crate) fn raw_target(&self, cpu: u32, address: u32) -> Result<(RawFd, u64), MsrError> {
        self.entry(cpu)
            .map(|o| (o.file.as_raw_fd(), file_offset(address, o.fixture)))
    }

    /// Read MSR `address` on `cpu`.
    pub fn read(&self, cpu: u32, address: u32) -> Result<u64, MsrError> {
        let Opened {
            path,
            file,
            fixture,
            ..
        } = self.entry(cpu)?;
        let mut buf = [0u8; 8];
        let n = loop {
            match file.read_at(&mut buf, file_offset(address, *fixture)) {
                Ok(n) => break n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_error(&self.root, cpu, path, address, "read", None, e)),
            }
        };
        if n != 8 {
            return Err(MsrError::Short {
                path: path.clone(),
                op: "read",
                register: describe_address(address),
                got: n,
            });
        }
        Ok(u64::from_le_bytes(buf))
    }

    /// Write `value` to MSR `address` on `cpu`. No allow-list here: callers
    /// check with [`crate::allow`] first.
    pub fn write(&self, cpu: u32, address: u32, value: u64) -> Result<(), MsrError> {
        let Opened {
            path,
            file,
            fixture,
            ..
        } = self.entry(cpu)?;
        if self.mode != Mode::ReadWrite {
            return Err(MsrError::ReadOnly { cpu });
        }
        let buf = value.to_le_bytes();
        let n = loop {
            match file.write_at(&buf, file_offset(address, *fixture)) {
                Ok(n) => break n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(io_error(
                        &self.root,
                        cpu,
                        path,
                        address,
                        "write",
                        Some(value),
                        e,
                    ))
                }
            }
        };
        if n != 8 {
            return Err(MsrError::Short {
                path: path.clone(),
                op: "write",
                register: describe_address(address),
                got: n,
            });
        }
        Ok(())
    }
}

fn open_error(root: &MsrRoot, cpu: u32, path: &Path, e: std::io::Error) -> MsrError {
    match e.kind() {
        ErrorKind::NotFound => {
            if root.cpus_with_devices().is_empty() {
                MsrError::DriverNotLoaded {
                    path: path.to_path_buf(),
                }
            } else {
                MsrError::NoSuchCpu {
                    path: path.to_path_buf(),
                    cpu,
                }
            }
        }
        ErrorKind::PermissionDenied => MsrError::PermissionDenied {
            path: path.to_path_buf(),
        },
        // The driver returns EIO from open for a CPU that is offline or
        // lacks MSR support.
        _ if e.raw_os_error() == Some(libc::EIO) || e.raw_os_error() == Some(libc::ENXIO) => {
            MsrError::NoSuchCpu {
                path: path.to_path_buf(),
                cpu,
            }
        }
        _ => MsrError::Open {
            path: path.to_path_buf(),
            error: e,
        },
    }
}

fn io_error(
    root: &MsrRoot,
    cpu: u32,
    path: &Path,
    address: u32,
    op: &'static str,
    value: Option<u64>,
    e: std::io::Error,
) -> MsrError {
    let register = describe_address(address);
    match (e.raw_os_error(), value) {
        (Some(libc::EIO), None) => MsrError::NoSuchMsr { cpu, register },
        (Some(libc::EIO), Some(value)) => MsrError::WriteFaulted {
            cpu,
            register,
            value,
        },
        (Some(libc::EPERM), Some(_)) => {
            if let Some(mode) = root.writes_locked_down() {
                MsrError::LockedDown {
                    cpu,
                    register,
                    mode,
                }
            } else if let Some(setting) = root.allow_writes().filter(|s| s == "off") {
                MsrError::WritesFiltered {
                    cpu,
                    register,
                    setting,
                }
            } else {
                MsrError::PermissionDenied {
                    path: path.to_path_buf(),
                }
            }
        }
        (Some(libc::EPERM | libc::EACCES), None) => MsrError::PermissionDenied {
            path: path.to_path_buf(),
        },
        _ => MsrError::Io {
            path: path.to_path_buf(),
            op,
            register,
            error: e,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eperm() -> std::io::Error {
        std::io::Error::from_raw_os_error(libc::EPERM)
    }

    #[test]
    fn errors_say_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let root = MsrRoot::new(dir.path().join("nothing"));
        let e = MsrDevice::open(&root, &[0], Mode::Read).unwrap_err();
        assert!(matches!(e, MsrError::DriverNotLoaded { .. }));
        assert!(
            e.to_string()
                .ends_with("not found — load the msr driver (modprobe msr)"),
            "{e}"
        );

        std::fs::create_dir_all(dir.path().join("cpu0")).unwrap();
        std::fs::write(dir.path().join("cpu0/msr"), b"").unwrap();
        let root = MsrRoot::new(dir.path());
        let e = MsrDevice::open(&root, &[0, 3], Mode::Read).unwrap_err();
        assert!(e.to_string().contains("CPU 3 has no msr device"), "{e}");

        // An empty fixture file: a short read, not a panic.
        let dev = MsrDevice::open(&root, &[0], Mode::Read).unwrap();
        assert!(dev.is_fixture(0).unwrap());
        let e = dev.read(0, 0x10).unwrap_err();
        assert!(
            e.to_string()
                .contains("short read at MSR 0x10 (IA32_TIME_STAMP_COUNTER) (0 of 8 bytes)"),
            "{e}"
        );
        assert!(matches!(
            dev.write(0, 0x10, 1),
            Err(MsrError::ReadOnly { cpu: 0 })
        ));
        assert!(matches!(
            dev.read(1, 0x10),
            Err(MsrError::NotOpened { cpu: 1 })
        ));
    }

    #[test]
    fn errno_becomes_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let sys = dir.path().join("sys");
        let root = MsrRoot::new(dir.path()).with_sysfs(&sys);
        let path = root.device_path(2);
        let e = io_error(
            &root,
            2,
            &path,
            0x186,
            "read",
            None,
            std::io::Error::from_raw_os_error(libc::EIO),
        );
        assert_eq!(
            e.to_string(),
            "CPU 2 does not have MSR 0x186 (IA32_PERFEVTSEL0) (rdmsr faulted: EIO)"
        );
        let e = io_error(
            &root,
            2,
            &path,
            0x1a0,
            "write",
            Some(1),
            std::io::Error::from_raw_os_error(libc::EIO),
        );
        assert!(
            e.to_string()
                .contains("refused 0x1 for MSR 0x1a0 (wrmsr faulted: EIO)"),
            "{e}"
        );
        let e = io_error(&root, 2, &path, 0x186, "write", Some(1), eperm());
        assert!(e.to_string().contains("root or CAP_SYS_RAWIO"), "{e}");

        std::fs::create_dir_all(sys.join("module/msr/parameters")).unwrap();
        std::fs::write(sys.join("module/msr/parameters/allow_writes"), "off\n").unwrap();
        let e = io_error(&root, 2, &path, 0x186, "write", Some(1), eperm());
        assert!(e.to_string().contains("msr.allow_writes=off"), "{e}");

        std::fs::create_dir_all(sys.join("kernel/security")).unwrap();
        std::fs::write(
            sys.join("kernel/security/lockdown"),
            "none [integrity] confidentiality\n",
        )
        .unwrap();
        assert_eq!(root.lockdown().as_deref(), Some("integrity"));
        let e = io_error(&root, 2, &path, 0x186, "write", Some(1), eperm());
        assert_eq!(
            e.to_string(),
            "writing MSR 0x186 (IA32_PERFEVTSEL0) on CPU 2 was refused: the kernel is locked down (integrity), and lockdown forbids MSR writes"
        );
        std::fs::write(
            sys.join("kernel/security/lockdown"),
            "[none] integrity confidentiality\n",
        )
        .unwrap();
        assert_eq!(root.writes_locked_down(), None);
    }
}
