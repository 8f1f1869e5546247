//! The generic cache events' encodings (`pmx_msr::cache_events`, the
//! kernel's per-model tables) against libpfm4's encodings of the same
//! CPUs (`shared/data/libpfm-dumps`: every event × unit mask libpfm 4.13
//! knows, per PMU). Every event select pmx would program for a model must
//! be one libpfm encodes for that model: on Intel the exact event and
//! unit mask; on AMD the event code, with a unit mask made of libpfm's
//! bits (0xff, "all", is the kernel's own). Where the kernel's table and
//! libpfm disagree, the difference is listed here by name.

use pmx_model::cpu::{CpuId, Vendor};
use pmx_msr::cache_events::cache_event_select;
use std::collections::{BTreeMap, BTreeSet};

/// libpfm's PMU, the CPU (vendor, family, model) whose table it checks.
const MODELS: &[(&str, Vendor, u32, u32)] = &[
    ("hsw", Vendor::Intel, 6, 0x3c),
    ("bdw", Vendor::Intel, 6, 0x3d),
    ("skl", Vendor::Intel, 6, 0x5e),
    ("skx", Vendor::Intel, 6, 0x55),
    ("icl", Vendor::Intel, 6, 0x7e),
    ("icx", Vendor::Intel, 6, 0x6a),
    ("spr", Vendor::Intel, 6, 0x8f),
    ("amd64_fam10h_barcelona", Vendor::Amd, 0x10, 2),
    ("amd64_fam17h_zen1", Vendor::Amd, 0x17, 1),
    ("amd64_fam17h_zen2", Vendor::Amd, 0x17, 0x31),
    ("amd64_fam19h_zen3", Vendor::Amd, 0x19, 1),
    ("amd64_fam19h_zen4", Vendor::Amd, 0x19, 0x11),
];

/// (PMU, select): the kernel's table programs what libpfm does not list
/// for that model; pmx programs what the kernel does, so `--backend msr`
/// counts what `--backend perf` counts. Sapphire Rapids' branch rows are
/// 0x4c4/0x4c5 (unit mask 0x04) where libpfm has `BR_INST_RETIRED:
/// ALL_BRANCHES` as 0x00c4. Family 10h's `L1-dcache-load-misses` is
/// 0x141 where libpfm's `DATA_CACHE_MISSES` has no unit mask. libpfm's
/// Zen 2–4 tables have no event 0x40 (data cache accesses) nor 0x80/0x81
/// (instruction cache fetches and misses, which AMD later said count
/// wrongly from family 17h on: newer kernels drop them).
const KERNEL_ONLY: &[(&str, u64)] = &[
    ("amd64_fam10h_barcelona", 0x141),
    ("amd64_fam17h_zen2", 0x40),
    ("amd64_fam17h_zen2", 0x80),
    ("amd64_fam17h_zen2", 0x81),
    ("amd64_fam19h_zen3", 0x40),
    ("amd64_fam19h_zen3", 0x80),
    ("amd64_fam19h_zen3", 0x81),
    ("amd64_fam19h_zen4", 0x40),
    ("amd64_fam19h_zen4", 0x80),
    ("amd64_fam19h_zen4", 0x81),
    ("spr", 0x4c4),
    ("spr", 0x4c5),
];

/// libpfm's encodings of one PMU: event code → the unit masks it has.
fn libpfm(pmu: &str) -> Option<BTreeMap<u64, BTreeSet<u64>>> {
    let dir = pmx_testkit::shared::shared_data("libpfm-dumps")?;
    let text = std::fs::read_to_string(dir.join(format!("{pmu}.tsv"))).unwrap();
    let mut out: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 11 || f[10] != "ok" {
            continue;
        }
        let Ok(config) = u64::from_str_radix(f[3].trim_start_matches("0x"), 16) else {
            continue;
        };
        // AMD's event code has four more bits at 32..35.
        let code = (config & 0xff) | ((config >> 24) & 0xf00);
        out.entry(code).or_default().insert((config >> 8) & 0xff);
    }
    Some(out)
}

fn agrees(vendor: &Vendor, masks: Option<&BTreeSet<u64>>, umask: u64) -> bool {
    let Some(masks) = masks else { return false };
    match vendor {
        Vendor::Intel => masks.contains(&umask),
        _ => {
            let all = masks.iter().fold(0, |a, m| a | m);
            masks.contains(&umask) || umask == 0xff || (umask != 0 && umask & !all == 0)
        }
    }
}

#[test]
fn every_cache_event_select_is_one_libpfm_encodes_for_the_model() {
    let (mut checked, mut differ) = (0, BTreeSet::new());
    for (pmu, vendor, family, model) in MODELS {
        let Some(known) = libpfm(pmu) else { return };
        let cpu = CpuId::new(vendor.clone(), *family, *model, None);
        for config in
            (0..7u64).flat_map(|c| (0..6u64).map(move |i| c | (i / 2) << 8 | (i % 2) << 16))
        {
            let Ok(select) = cache_event_select(&cpu, config) else {
                continue;
            };
            let code = select & 0xff | (select >> 24) & 0xf00;
            if !agrees(vendor, known.get(&code), (select >> 8) & 0xff) {
                differ.insert((*pmu, select));
            }
            checked += 1;
        }
    }
    let listed: BTreeSet<(&str, u64)> = KERNEL_ONLY.iter().copied().collect();
    let hex: Vec<String> = differ.iter().map(|(p, s)| format!("{p} {s:#x}")).collect();
    assert_eq!(differ, listed, "selects libpfm does not encode: {hex:?}");
    // 7 Intel tables × at least 9 rows, 5 AMD ones × at least 8.
    assert!(checked >= 100, "{checked} selects checked");
}
