//! What this machine is (`pmx info`): CPU, PMU as CPUID describes it, the
//! kernel's PMUs, topology, access rights, and a verdict on what can be
//! measured.
//!
//! The facts are gathered by `pmx-sys` into a [`MachineReport`]; this
//! module chooses where they are read from ([`InfoOptions`]: this machine,
//! or a recorded CPUID dump and a sysfs/proc root, as the tests' fixtures
//! are). The report is serializable as it is; `pmx-output` renders it as
//! text.

use pmx_sys::{NativeCpuid, RecordedCpuid, SysRoot};
use std::path::PathBuf;

pub use pmx_sys::access::paranoid_meaning;
pub use pmx_sys::caps::{fixed_counter_name, AMD_EXT_CORE_COUNTERS};
pub use pmx_sys::{
    AmdPerfmon, CpuidFileError, IntelArchPerfmon, KernelPmu, MachineReport, PmuCaps,
};

/// Where the facts come from.
#[derive(Debug, Clone, Default)]
pub struct InfoOptions {
    /// Read `sys/`, `proc/` and `dev/` under this directory instead of `/`.
    pub sysfs_root: Option<PathBuf>,
    /// Take CPUID from this recorded dump instead of the CPU.
    pub cpuid_file: Option<PathBuf>,
}

/// Why the facts could not be gathered.
#[derive(Debug, thiserror::Error)]
pub enum InfoError {
    /// The recorded CPUID dump cannot be read or does not parse.
    #[error(transparent)]
    Cpuid(#[from] CpuidFileError),
}

fn recorded(opts: &InfoOptions) -> Result<Option<RecordedCpuid>, InfoError> {
    Ok(match &opts.cpuid_file {
        Some(path) => Some(RecordedCpuid::from_file(path)?),
        None => None,
    })
}

/// Gather the machine's facts. Facts that cannot be read are reported as
/// unknown (and listed in [`MachineReport::problems`]), never an error.
pub fn collect(opts: &InfoOptions) -> Result<MachineReport, InfoError> {
    let recorded = recorded(opts)?;
    let root = opts
        .sysfs_root
        .as_ref()
        .map(SysRoot::new)
        .unwrap_or_default();
    Ok(match &recorded {
        Some(r) => MachineReport::gather(r, &root),
        None => MachineReport::gather(&NativeCpuid, &root),
    })
}

/// The CPUID leaves (of the recorded dump, else of this CPU) in the
/// recorded-dump format, for making fixtures.
pub fn cpuid_dump(opts: &InfoOptions) -> Result<String, InfoError> {
    Ok(match recorded(opts)? {
        Some(r) => r.to_text(),
        None => RecordedCpuid::capture(&NativeCpuid).to_text(),
    })
}

/// One set of event tables built into pmx (`pmx info` prints them).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BuiltinTables {
    /// What they are (`Intel perfmon`).
    pub name: String,
    /// Where they come from (`https://github.com/intel/perfmon`).
    pub source: String,
    /// The source's commit they were taken at.
    pub commit: String,
    /// Their license (SPDX).
    pub license: String,
    /// Each platform (`SKX`) with its core table's version (`V1.37`), in
    /// name order.
    pub platforms: Vec<(String, String)>,
}

/// The event tables built into pmx, or why they cannot be read (a damaged
/// build).
pub fn builtin_tables() -> Result<Vec<BuiltinTables>, String> {
    let bundle = pmx_events::tables::intel().map_err(str::to_string)?;
    let map = pmx_events::intel_json::Mapfile::of_bundle(bundle).map_err(|e| e.to_string())?;
    let mut platforms: Vec<(String, String)> = Vec::new();
    for row in map.rows() {
        let platform = row.relative_path().split('/').next().unwrap_or("");
        let core = row.role() == pmx_events::intel_json::FileRole::Core;
        if core && !platforms.iter().any(|(p, _)| p == platform) {
            platforms.push((platform.to_string(), row.version.clone()));
        }
    }
    platforms.sort();
    Ok(vec![BuiltinTables {
        name: "Intel perfmon".to_string(),
        source: bundle.source().to_string(),
        commit: bundle.commit().to_string(),
        license: bundle.license().to_string(),
        platforms,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn fixture(name: &str) -> InfoOptions {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../pmx-sys/tests/fixtures")
            .join(name);
        InfoOptions {
            sysfs_root: Some(dir.join("root")),
            cpuid_file: Some(dir.join("cpuid.txt")),
        }
    }

    #[test]
    fn a_two_socket_server_from_its_fixture() {
        let r = collect(&fixture("skylake-sp-2s")).unwrap();
        let cpu = r.cpu.as_ref().expect("CPUID facts");
        assert_eq!(cpu.key, "GenuineIntel-6-55-4");
        let counters = cpu.counters.as_ref().unwrap();
        assert_eq!((counters.general, counters.fixed), (4, 3));
        assert_eq!(r.topology.package_count, 2);
        assert_eq!(r.topology.cpu_count, 32);
        assert_eq!(r.topology.threads_per_core, Some(2));
        assert_eq!(r.access.euid, Some(0));
        assert!(r.kernel_pmus.iter().any(|p| p.name == "cpu" && p.is_core()));
        assert!(r.verdict.hardware_counters);
    }

    #[test]
    fn a_guest_without_a_virtual_pmu_has_no_counters() {
        let r = collect(&fixture("kvm-zen4-guest")).unwrap();
        let cpu = r.cpu.as_ref().unwrap();
        assert_eq!(cpu.key, "AuthenticAMD-25-11-1");
        assert!(cpu.hypervisor.is_some());
        assert!(!r.verdict.hardware_counters);
        assert!(!r.kernel_pmus.iter().any(|p| p.is_core()));
    }

    #[test]
    fn the_dump_reads_back_as_the_same_leaves() {
        let opts = fixture("zen2-epyc");
        let text = cpuid_dump(&opts).unwrap();
        let again = RecordedCpuid::parse(&text).unwrap();
        assert_eq!(again.to_text(), text);
        assert!(text.lines().any(|l| !l.starts_with('#')));
    }

    #[test]
    fn a_missing_dump_names_the_file() {
        let opts = InfoOptions {
            cpuid_file: Some("/nonexistent/cpuid.txt".into()),
            ..Default::default()
        };
        let e = collect(&opts).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/cpuid.txt: "), "{e}");
    }
}
