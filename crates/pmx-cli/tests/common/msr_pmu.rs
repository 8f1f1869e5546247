//! The simulated Intel PMU of the msr tests (`stat_msr`, `check_msr`): the
//! fixture's CPU, its register addresses, and register reads and writes
//! on the fixture's `cpuN/msr` files (register N at byte 8·N).

use pmx_testkit::msr::Machine;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;

/// Skylake-SP: the CPU the fixture's event tables are for.
pub const CPU: &str = "GenuineIntel-6-55-4";
/// CPUs of the fixture machine.
pub const CPUS: u32 = 4;
/// `IA32_PERF_GLOBAL_CTRL`.
pub const GLOBAL_CTRL: u32 = 0x38f;
/// `IA32_FIXED_CTR_CTRL`.
pub const FIXED_CTRL: u32 = 0x38d;
/// `IA32_PMC0`.
pub const PMC0: u32 = 0xc1;
/// `IA32_PERFEVTSEL0`.
pub const EVTSEL0: u32 = 0x186;
/// `IA32_FIXED_CTR0`.
pub const FIXED_CTR0: u32 = 0x309;

/// Register `address` of an msr file.
pub fn get(f: &File, address: u32) -> u64 {
    let mut b = [0u8; 8];
    f.read_exact_at(&mut b, u64::from(address) * 8).unwrap();
    u64::from_le_bytes(b)
}

/// Set register `address` of an msr file.
pub fn put(f: &File, address: u32, value: u64) {
    f.write_all_at(&value.to_le_bytes(), u64::from(address) * 8)
        .unwrap();
}

/// Each CPU's msr file, open for reading and writing.
pub fn files(m: &Machine) -> Vec<File> {
    (0..CPUS)
        .map(|cpu| {
            let p = m.dev().join(format!("cpu{cpu}/msr"));
            OpenOptions::new().read(true).write(true).open(p).unwrap()
        })
        .collect()
}

/// Every register of the catalogue on every CPU.
pub fn snapshot(m: &Machine) -> BTreeMap<(u32, u32), u64> {
    let mut out = BTreeMap::new();
    for def in pmx_msr::catalogue::CATALOGUE {
        for i in 0..def.count {
            for cpu in 0..CPUS {
                out.insert((cpu, def.address(i)), m.get(cpu, def.address(i)));
            }
        }
    }
    out
}
