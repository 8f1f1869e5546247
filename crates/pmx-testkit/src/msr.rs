//! Fixture machines for the MSR backend, on sparse files.
//!
//! pmx reads a CPU's registers from `cpuN/msr` with register N at byte
//! 8·N, like the kernel's msr driver; a sparse regular file of
//! [`FILE_SIZE`] bytes holds every address the catalogue has and costs no
//! disk. Two shapes:
//!
//! - [`msr_files`]: a directory of `cpuN/msr` files only (what
//!   `MsrRoot::new(dir)` opens);
//! - [`Machine`]: a whole root with `dev/cpuN/msr` and the sysfs topology
//!   under `sys/devices/system/cpu`, for code that also reads which CPUs
//!   are online and how they are grouped into packages.
//!
//! [`get`] and [`set`] read and write one register of such a directory.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// Every MSR address the catalogue has fits below this (register N at
/// byte 8·N).
pub const FILE_SIZE: u64 = 0xC002_0000 * 8;

/// Create sparse `cpuN/msr` files, every register 0, for CPUs
/// `0..cpus` under `dir`.
pub fn create_files(dir: &Path, cpus: u32) {
    for cpu in 0..cpus {
        let cpu_dir = dir.join(format!("cpu{cpu}"));
        std::fs::create_dir_all(&cpu_dir).unwrap();
        File::create(cpu_dir.join("msr"))
            .unwrap()
            .set_len(FILE_SIZE)
            .unwrap();
    }
}

/// A temporary directory of `cpuN/msr` files for CPUs `0..cpus`.
pub fn msr_files(cpus: u32) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    create_files(dir.path(), cpus);
    dir
}

/// A temporary machine root: `sys/devices/system/cpu/{online,
/// cpuN/topology/*}` and `dev/cpuN/msr`, removed on drop.
pub struct Machine {
    dir: TempDir,
}

impl Machine {
    /// `cpus` CPUs, `per_package` to a package (CPU c is in package
    /// c / per_package, core c % per_package, one thread a core), every
    /// register 0.
    pub fn new(cpus: u32, per_package: u32) -> Machine {
        let dir = tempfile::tempdir().unwrap();
        let cpu_dir = dir.path().join("sys/devices/system/cpu");
        std::fs::create_dir_all(&cpu_dir).unwrap();
        std::fs::write(cpu_dir.join("online"), format!("0-{}\n", cpus - 1)).unwrap();
        for cpu in 0..cpus {
            let topo = cpu_dir.join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&topo).unwrap();
            let package = cpu / per_package;
            std::fs::write(topo.join("physical_package_id"), format!("{package}\n")).unwrap();
            std::fs::write(topo.join("die_id"), "0\n").unwrap();
            let core = cpu % per_package;
            std::fs::write(topo.join("core_id"), format!("{core}\n")).unwrap();
            std::fs::write(topo.join("thread_siblings_list"), format!("{cpu}\n")).unwrap();
        }
        create_files(&dir.path().join("dev"), cpus);
        Machine { dir }
    }

    /// The root (what `--sysfs-root` and `SysRoot::new` take).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `ROOT/dev`, the directory of `cpuN/msr` (what `--msr-root` and
    /// `MsrRoot::new` take).
    pub fn dev(&self) -> PathBuf {
        self.path().join("dev")
    }

    /// Register `address` of `cpu`.
    pub fn get(&self, cpu: u32, address: u32) -> u64 {
        get(&self.dev(), cpu, address)
    }

    /// Set register `address` of `cpu`.
    pub fn set(&self, cpu: u32, address: u32, value: u64) {
        set(&self.dev(), cpu, address, value);
    }

    /// Write `proc/sys/kernel/nmi_watchdog` = 0 (no counter is taken by
    /// the watchdog).
    pub fn nmi_watchdog_off(&self) {
        let kernel = self.path().join("proc/sys/kernel");
        std::fs::create_dir_all(&kernel).unwrap();
        std::fs::write(kernel.join("nmi_watchdog"), "0\n").unwrap();
    }
}

fn file(dir: &Path, cpu: u32) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join(format!("cpu{cpu}/msr")))
        .unwrap()
}

/// Register `address` of `cpu` in the `cpuN/msr` files under `dir`.
pub fn get(dir: &Path, cpu: u32, address: u32) -> u64 {
    let mut b = [0u8; 8];
    file(dir, cpu)
        .read_exact_at(&mut b, u64::from(address) * 8)
        .unwrap();
    u64::from_le_bytes(b)
}

/// Set register `address` of `cpu` in the `cpuN/msr` files under `dir`.
pub fn set(dir: &Path, cpu: u32, address: u32, value: u64) {
    file(dir, cpu)
        .write_all_at(&value.to_le_bytes(), u64::from(address) * 8)
        .unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_has_its_topology_and_registers() {
        let m = Machine::new(4, 2);
        let topo = |cpu: u32, file: &str| {
            let p = m
                .path()
                .join(format!("sys/devices/system/cpu/cpu{cpu}/topology/{file}"));
            std::fs::read_to_string(p).unwrap()
        };
        assert_eq!(topo(3, "physical_package_id"), "1\n");
        assert_eq!(topo(3, "core_id"), "1\n");
        let online = m.path().join("sys/devices/system/cpu/online");
        assert_eq!(std::fs::read_to_string(online).unwrap(), "0-3\n");
        assert_eq!(m.get(2, 0xC001_0201), 0, "AMD addresses fit");
        m.set(2, 0x38f, 0x7_0000_000f);
        assert_eq!(m.get(2, 0x38f), 0x7_0000_000f);
        assert_eq!(get(&m.dev(), 1, 0x38f), 0, "other CPUs untouched");
    }
}
