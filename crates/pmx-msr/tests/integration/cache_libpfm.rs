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

/// libpfm's `OFFCORE_RESPONSE_0/1` (and `OCR`) encodings, event select and
/// `config1`, for every unit-mask combination it lists of the models whose
/// dump has them, planned by pmx: the filter lands in the register of the
/// event select (0x01b7 and 0x012a: `MSR_OFFCORE_RSP_0` at 0x1a6; 0x01bb:
/// `MSR_OFFCORE_RSP_1` at 0x1a7) with libpfm's value, written before the
/// event select, which is libpfm's (its INT bit aside: pmx takes no
/// overflow interrupts). libpfm 4.13 gives Sapphire Rapids'
/// `OFFCORE_RESPONSE_1` the `OCR` select 0x012a, so there it pairs with
/// register 0 as the kernel pairs 0x012a.
#[test]
fn offcore_response_encodings_agree_with_libpfm() {
    use pmx_model::encoding::Arch;
    use pmx_model::topology::Topology;
    use pmx_msr::{plan, MsrEvent, PmuCounters, Step};
    use pmx_testkit::events::encode;
    let pmu = PmuCounters::assumed(Arch::Intel, None);
    let mut per_model = Vec::new();
    for model in ["hsw", "bdw", "skl", "skx", "icl", "icx", "spr"] {
        let Some(dir) = pmx_testkit::shared::shared_data("libpfm-dumps") else {
            return;
        };
        let text = std::fs::read_to_string(dir.join(format!("{model}.tsv"))).unwrap();
        let mut n = 0;
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() < 11 || f[10] != "ok" {
                continue;
            }
            if !matches!(f[1], "OFFCORE_RESPONSE_0" | "OFFCORE_RESPONSE_1" | "OCR") {
                continue;
            }
            let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
            let (config, filter) = (hex(f[3]), hex(f[4]));
            let raw = hex(f[6].split(',').next().unwrap());
            let spec = format!(
                "cpu/event={:#x},umask={:#x},offcore_rsp={filter:#x}/",
                config & 0xff,
                (config >> 8) & 0xff
            );
            let e = MsrEvent::new(spec.clone(), encode(&spec, Arch::Intel));
            let p = plan(&[e], &[0], &pmu, &Topology::default())
                .unwrap_or_else(|err| panic!("{model} {} {}: {err}", f[1], f[2]));
            let register = match config {
                0x1b7 | 0x12a => 0x1a6,
                0x1bb => 0x1a7,
                other => panic!("{model} {}: select {other:#x}", f[1]),
            };
            let steps: Vec<(Step, u32, u64)> = p
                .writes
                .iter()
                .map(|w| (w.step, w.address, w.new))
                .collect();
            let int = 1 << 20;
            assert_eq!(
                steps[1..3],
                [
                    (Step::OffcoreFilter, register, filter),
                    (Step::EventSelect, 0x186, raw & !int)
                ],
                "{model} {} {}",
                f[1],
                f[2]
            );
            n += 1;
        }
        per_model.push((model, n));
    }
    // Every model's dump has dozens of them (47 on Broadwell, 232 on Ice Lake).
    assert!(per_model.iter().all(|(_, n)| *n >= 40), "{per_model:?}");
}
