//! `perf mem record`'s events: the precise memory-access events the
//! machine's PMUs offer, as perf 6.1 picks them on x86 — Intel's PEBS
//! `mem-loads` (with its load-latency threshold `ldlat`) and `mem-stores`
//! aliases of each core PMU (`cpu`, or `cpu_core` and `cpu_atom` on a
//! hybrid part), AMD's IBS op PMU (`ibs_op//`, whose samples the kernel
//! fills `data_src` for). Where there is none, the refusal names what is
//! missing and what samples data addresses here anyway.

use pmx_sys::pmu::{read_pmus, KernelPmu};
use pmx_sys::root::SysRoot;

/// perf mem's default load-latency threshold (cycles).
pub const DEFAULT_LDLAT: u32 = 30;

/// The events that sample these accesses on the machine under `root`
/// (`load`, `store`; `ldlat`: the load-latency threshold), or why there
/// are none.
pub fn mem_events(
    root: &SysRoot,
    load: bool,
    store: bool,
    ldlat: u32,
) -> Result<Vec<String>, String> {
    let pmus = read_pmus(root, &mut Vec::new());
    events_of(&pmus, load, store, ldlat)
}

fn events_of(
    pmus: &[KernelPmu],
    load: bool,
    store: bool,
    ldlat: u32,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for p in pmus.iter().filter(|p| p.is_core()) {
        if load && p.event("mem-loads").is_some() {
            let lat = if p.format_field("ldlat").is_some() {
                format!(",ldlat={ldlat}")
            } else {
                String::new()
            };
            out.push(format!("{}/mem-loads{lat}/P", p.name));
        }
        if store && p.event("mem-stores").is_some() {
            out.push(format!("{}/mem-stores/P", p.name));
        }
    }
    if out.is_empty() && pmus.iter().any(|p| p.name == "ibs_op") {
        out.push("ibs_op//".into());
    }
    if out.is_empty() {
        let what = match (load, store) {
            (true, false) => "load",
            (false, true) => "store",
            _ => "memory",
        };
        let cores: Vec<&str> = (pmus.iter().filter(|p| p.is_core()))
            .map(|p| p.name.as_str())
            .collect();
        let core = match cores.is_empty() {
            true => "no core PMU (a virtual machine without a virtual PMU has none)".to_string(),
            false => format!("core PMU {} without {what} events", cores.join(", ")),
        };
        return Err(format!(
            "this machine has no {what}-access sampling: {core}, no mem-loads/mem-stores event (Intel PEBS) and no ibs_op PMU (AMD IBS) under /sys/bus/event_source/devices; `pmx record -d -e page-faults -c 1 -- CMD` samples data addresses on any machine (each page fault's address)"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sysfs root with these PMUs: (name, event aliases, format fields).
    fn root(pmus: &[(&str, &[&str], &[&str])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, events, format) in pmus {
            let p = dir.path().join("sys/bus/event_source/devices").join(name);
            std::fs::create_dir_all(p.join("events")).unwrap();
            std::fs::create_dir_all(p.join("format")).unwrap();
            std::fs::write(p.join("type"), "4\n").unwrap();
            for e in *events {
                std::fs::write(p.join("events").join(e), "event=0xcd,umask=0x1\n").unwrap();
            }
            for f in *format {
                std::fs::write(p.join("format").join(f), "config1:0-15\n").unwrap();
            }
        }
        dir
    }

    fn events(
        pmus: &[(&str, &[&str], &[&str])],
        load: bool,
        store: bool,
    ) -> Result<Vec<String>, String> {
        let d = root(pmus);
        mem_events(&SysRoot::new(d.path()), load, store, DEFAULT_LDLAT)
    }

    #[test]
    fn each_vendors_memory_events_or_a_refusal_that_says_why() {
        let intel: &[(&str, &[&str], &[&str])] = &[
            ("cpu", &["mem-loads", "mem-stores"], &["ldlat"]),
            ("software", &[], &[]),
        ];
        assert_eq!(
            events(intel, true, true).unwrap(),
            ["cpu/mem-loads,ldlat=30/P", "cpu/mem-stores/P"]
        );
        assert_eq!(events(intel, false, true).unwrap(), ["cpu/mem-stores/P"]);
        let hybrid: &[(&str, &[&str], &[&str])] = &[
            ("cpu_atom", &["mem-loads"], &["ldlat"]),
            ("cpu_core", &["mem-loads"], &["ldlat"]),
        ];
        assert_eq!(
            events(hybrid, true, false).unwrap(),
            [
                "cpu_atom/mem-loads,ldlat=30/P",
                "cpu_core/mem-loads,ldlat=30/P"
            ]
        );
        let amd: &[(&str, &[&str], &[&str])] = &[("cpu", &[], &[]), ("ibs_op", &[], &[])];
        assert_eq!(events(amd, true, true).unwrap(), ["ibs_op//"]);
        let vm: &[(&str, &[&str], &[&str])] = &[("software", &[], &[]), ("tracepoint", &[], &[])];
        let e = events(vm, true, true).unwrap_err();
        assert!(
            e.contains("no core PMU") && e.contains("page-faults"),
            "{e}"
        );
    }
}
