//! Helpers shared by the kernel tests: software events opened on the
//! calling thread. The workloads (`pmx_testkit::workload`) come from the
//! test kit.

#![allow(dead_code)] // Each module uses a different subset.

use pmx_perf::{event_type, Attr, Counter, Target};

/// The calling thread, on whatever CPU it runs.
pub const THREAD: Target = Target { pid: 0, cpu: -1 };

/// A software event, created disabled, default `read_format`.
pub fn sw(config: u64) -> Attr {
    Attr {
        type_: event_type::SOFTWARE,
        config,
        disabled: true,
        ..Attr::default()
    }
}

/// Open or fail the test with the error's message.
pub fn open(attr: &Attr, target: Target, group: Option<&Counter>) -> Counter {
    Counter::open(attr, target, group).unwrap_or_else(|e| panic!("{e}"))
}

/// The sysfs `type` of a PMU, when it is registered.
pub fn pmu_type(name: &str) -> Option<u32> {
    std::fs::read_to_string(format!("/sys/bus/event_source/devices/{name}/type"))
        .ok()?
        .trim()
        .parse()
        .ok()
}
