//! Fixtures shared by the msr tests.

use pmx_testkit::msr::Machine;

/// A fixture machine root with `dev/cpuN/msr` sparse files and
/// `sys/devices/system/cpu` for 4 CPUs in 2 packages (cpus 0,1 → package
/// 0; 2,3 → package 1). Register N lives at byte 8·N of each file.
pub fn four_cpu_msr_machine() -> Machine {
    Machine::new(4, 2)
}
