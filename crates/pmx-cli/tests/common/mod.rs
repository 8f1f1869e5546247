//! Fixtures shared by the msr tests.

use std::fs::File;

/// A temporary root with `dev/cpuN/msr` sparse files and
/// `sys/devices/system/cpu` for 4 CPUs in 2 packages (cpus 0,1 → package
/// 0; 2,3 → package 1). Register N lives at byte 8·N of each file.
pub fn four_cpu_msr_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let cpu_dir = dir.path().join("sys/devices/system/cpu");
    std::fs::create_dir_all(&cpu_dir).unwrap();
    std::fs::write(cpu_dir.join("online"), "0-3\n").unwrap();
    for cpu in 0..4u32 {
        let topo = cpu_dir.join(format!("cpu{cpu}/topology"));
        std::fs::create_dir_all(&topo).unwrap();
        std::fs::write(topo.join("physical_package_id"), format!("{}\n", cpu / 2)).unwrap();
        std::fs::write(topo.join("die_id"), "0\n").unwrap();
        std::fs::write(topo.join("core_id"), format!("{}\n", cpu % 2)).unwrap();
        std::fs::write(topo.join("thread_siblings_list"), format!("{cpu}\n")).unwrap();
        let dev = dir.path().join(format!("dev/cpu{cpu}"));
        std::fs::create_dir_all(&dev).unwrap();
        File::create(dev.join("msr"))
            .unwrap()
            .set_len(0xC002_0000 * 8)
            .unwrap();
    }
    dir
}
