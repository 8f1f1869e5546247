//! `-M MEM` planned on every memory-controller box of a machine fixture
//! (the numbered-box expansion of `stat::plan` under a metric group).

use crate::stat::plan;
use std::path::Path;

/// `-M MEM` on a Skylake-SP (the `skylake-sp-2s` machine fixture: six
/// `uncore_imc_N` boxes, types 20–25, one CPU per socket in each cpumask):
/// Intel's `UNC_M_CAS_COUNT.RD`/`.WR` (PMU `uncore_imc`) planned on every
/// box with the box's type and the table's encoding.
#[test]
fn likwid_mem_is_planned_on_every_memory_controller() {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../pmx-sys/tests/fixtures/skylake-sp-2s/root");
    let target = pmx_events::Target {
        cpu: "GenuineIntel-6-55-4".parse().unwrap(),
        host: true,
    };
    let load = pmx_events::LoadOptions {
        events_dir: None,
        more_events_dirs: Vec::new(),
        sysfs_root: Some(root),
        no_libpfm: true,
        events_dir_default: Default::default(),
    };
    let db = pmx_events::Database::load(target, &load);
    let set = crate::metrics::MetricSet::new("MEM", &db).expect("MEM");
    let plan = plan(&set.event_groups(&[]), &db).expect("plan");
    for (name, config) in [("UNC_M_CAS_COUNT.RD", 0x304), ("UNC_M_CAS_COUNT.WR", 0xc04)] {
        let e = plan.events.iter().find(|e| e.name == name).expect(name);
        let types: Vec<(String, u32)> = e.boxes.iter().map(|b| (b.pmu.clone(), b.type_)).collect();
        let want: Vec<(String, u32)> = (0..6)
            .map(|n| (format!("uncore_imc_{n}"), 20 + n))
            .collect();
        assert_eq!(types, want, "{name}");
        assert!(e
            .boxes
            .iter()
            .all(|b| b.config == [config, 0, 0] && b.cpus == Some(vec![0, 8])));
        assert_eq!(
            e.attr.as_ref().map(|a| (a.type_, a.config)),
            Ok((20, config))
        );
    }
}
