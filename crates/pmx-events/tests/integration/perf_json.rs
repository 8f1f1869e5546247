//! Linux perf's AMD tables (`shared/data/linux-perf-events/x86`) through the
//! perf-json source and the database: encodings of every Zen generation
//! written here by hand from the JSON, and libpfm4's encodings from the
//! shared dumps where both know an event by the same name.
//!
//! The data live outside the repository (`../shared/data`, or
//! `$PMX_SHARED_DIR/data`); every test skips with a message when they are
//! absent.

use pmx_events::perf_json::{layouts, Layout, PerfJson, UncoreFormats};
use pmx_events::{name_key, Database, EventSource, LoadOptions, SourceKind, Target};
use pmx_model::cpu::CpuId;
use pmx_model::spec::parse_spec;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn data_dir(sub: &str) -> Option<PathBuf> {
    pmx_testkit::shared::shared_data(sub)
}

/// perf's `x86/` directory of the shared data.
fn x86() -> Option<PathBuf> {
    data_dir("linux-perf-events/x86")
}

fn cpu(key: &str) -> CpuId {
    key.parse().unwrap()
}

fn load(x86: &Path, key: &str) -> PerfJson {
    PerfJson::load(x86, &cpu(key), &UncoreFormats::default())
        .unwrap_or_else(|e| panic!("{key}: {e}"))
}

/// (CPU key, table, [(event, PMU, config)]): read off the JSON by hand.
/// Core: EventCode[7:0] | UMask << 8 | EventCode[11:8] << 32. Data fabric
/// before PerfMonV2 (Zen 1–3): event bits 11:8 at config 35:32; with
/// PerfMonV2 (Zen 4, 5): umask bits 11:8 at config 27:24 too. L3 on family
/// 19h+: enallslices 46, enallcores 47, sliceid 48–50, threadmask 56–57.
/// Memory controller: rdwrmask at 8–9.
#[allow(clippy::type_complexity)]
const EXPECTED: &[(&str, &str, &[(&str, &str, u64)])] = &[
    (
        "AuthenticAMD-23-1-2",
        "amdzen1",
        &[
            ("ex_ret_instr", "cpu", 0xc0),
            ("ls_dispatch.ld_dispatch", "cpu", 0x129),
            // EventCode 0x1cf, UMask 0x04.
            ("ex_tagged_ibs_ops.ibs_count_rollover", "cpu", 0x1_0000_04cf),
            // L3PMC: EventCode 0x01, UMask 0x80.
            ("l3_request_g1.caching_l3_cache_accesses", "amd_l3", 0x8001),
            // DFPMC: EventCode 0x807, UMask 0x02.
            ("remote_outbound_data_controller_1", "amd_df", 0x8_0000_0207),
        ],
    ),
    (
        "AuthenticAMD-23-31-0",
        "amdzen2",
        &[
            ("ex_ret_brn_misp", "cpu", 0xc3),
            ("ls_not_halted_cyc", "cpu", 0x76),
            // EventCode 0x1cf, UMask 0x02.
            ("ex_tagged_ibs_ops.ibs_tagged_ops_ret", "cpu", 0x1_0000_02cf),
        ],
    ),
    (
        "AuthenticAMD-25-1-1",
        "amdzen3",
        &[
            ("ex_ret_instr", "cpu", 0xc0),
            // EventCode 0x18e, UMask 0x18.
            (
                "ic_tag_hit_miss.instruction_cache_miss",
                "cpu",
                0x1_0000_188e,
            ),
            // L3PMC: EventCode 0x06, UMask 0x01.
            ("l3_comb_clstr_state.request_miss", "amd_l3", 0x106),
            // DFPMC: EventCode 0x07, UMask 0x38.
            ("dram_channel_data_controller_0", "amd_df", 0x3807),
        ],
    ),
    (
        "AuthenticAMD-25-11-1",
        "amdzen4",
        &[
            // EventCode 0x1a0, UMask 0x01.
            (
                "de_no_dispatch_per_slot.no_ops_from_frontend",
                "cpu",
                0x1_0000_01a0,
            ),
            // EventCode 0xd6, UMask 0xa2.
            ("ex_no_retire.load_not_complete", "cpu", 0xa2d6),
            ("l3_lookup_state.l3_miss", "amd_l3", 0x104),
            // DFPMC: EventCode 0x15f, UMask 0x7fe (PerfMonV2).
            (
                "local_processor_read_data_beats_cs5",
                "amd_df",
                0x1_0700_fe5f,
            ),
        ],
    ),
    (
        "AuthenticAMD-26-2-1",
        "amdzen5",
        &[
            ("ex_ret_instr", "cpu", 0xc0),
            ("ls_dispatch.ld_dispatch", "cpu", 0x129),
            // EventCode 0x1a0, UMask 0x1e.
            (
                "de_no_dispatch_per_slot.backend_stalls",
                "cpu",
                0x1_0000_1ea0,
            ),
            // L3PMC: EventCode 0xac, UMask 0x01, EnAllCores 1, EnAllSlices 1,
            // SliceId 3, ThreadMask 3.
            (
                "l3_xi_sampled_latency.dram_near",
                "amd_l3",
                0x0303_c000_0000_01ac,
            ),
            // UMCPMC: EventCode 0x05, RdWrMask 0x2.
            ("umc_act_cmd.wr", "amd_umc", 0x205),
        ],
    ),
];

#[test]
fn every_zen_generation_encodes_as_its_table_says() {
    let Some(x86) = x86() else { return };
    for (key, table, events) in EXPECTED {
        let t = load(&x86, key);
        assert_eq!(t.table(), *table, "{key}");
        assert!(
            t.warnings().is_empty() || t.warnings().iter().all(|w| !w.contains("skipped")),
            "{key}: {:?}",
            t.warnings()
        );
        for (name, pmu, config) in *events {
            let d = t
                .find(name)
                .unwrap_or_else(|| panic!("{key}: {name} not found"));
            assert_eq!(d.pmu, *pmu, "{key} {name}");
            assert_eq!(
                d.config, *config,
                "{key} {name}: {:#x} != {config:#x}",
                d.config
            );
            assert_eq!(d.source, SourceKind::PerfJson);
            assert!(!d.description.is_empty(), "{key} {name}");
            // Names match case-insensitively, '.' and ':' alike.
            let upper = name.to_ascii_uppercase().replace('.', ":");
            assert_eq!(t.find(&upper).map(|e| e.config), Some(*config));
        }
    }
}

#[test]
fn table_sizes_match_the_readme_and_nothing_is_dropped_silently() {
    let Some(x86) = x86() else { return };
    // The README's counts (events per directory); a few entries carry
    // keys pmx does not know (a typo'd description key): they still load.
    for (key, events) in [
        ("AuthenticAMD-23-1-2", 183),
        ("AuthenticAMD-23-31-0", 219),
        ("AuthenticAMD-25-1-1", 243),
        ("AuthenticAMD-25-11-1", 502),
        ("AuthenticAMD-26-2-1", 387),
    ] {
        let t = load(&x86, key);
        assert_eq!(t.events_ref().len(), events, "{key}: {:?}", t.warnings());
        assert!(t.metric_entries() > 0, "{key}");
    }
}

/// Rows of a libpfm dump: `EVENT:UMASK` (or `EVENT`) → config.
fn dump(path: &Path) -> HashMap<String, u64> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = HashMap::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 11 || f[10] != "ok" {
            continue;
        }
        let name = if f[2].is_empty() {
            f[1].to_string()
        } else {
            format!("{}:{}", f[1], f[2])
        };
        if let Some(c) = f[3]
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
        {
            out.insert(name_key(&name), c);
        }
    }
    out
}

#[test]
fn libpfm_agrees_where_it_knows_the_same_name() {
    let (Some(x86), Some(dumps)) = (x86(), data_dir("libpfm-dumps")) else {
        return;
    };
    for (key, pmu, least) in [
        ("AuthenticAMD-23-1-2", "amd64_fam17h_zen1", 10),
        ("AuthenticAMD-23-31-0", "amd64_fam17h_zen2", 3),
        ("AuthenticAMD-25-1-1", "amd64_fam19h_zen3", 3),
        ("AuthenticAMD-25-11-1", "amd64_fam19h_zen4", 3),
    ] {
        let t = load(&x86, key);
        let lib = dump(&dumps.join(format!("{pmu}.tsv")));
        let mut same = 0;
        let mut differ = Vec::new();
        for e in t.events_ref().iter().filter(|e| e.pmu == "cpu") {
            let Some(&c) = lib.get(&name_key(&e.name)) else {
                continue;
            };
            if c == e.config {
                same += 1;
            } else {
                differ.push(format!("{}: perf {:#x}, libpfm {c:#x}", e.name, e.config));
            }
        }
        assert!(differ.is_empty(), "{key}: {differ:#?}");
        eprintln!("{key}: {same} events named alike, same encoding");
        assert!(same >= least, "{key}: only {same} events in common");
    }
}

#[test]
fn the_database_resolves_perf_names_and_merges_libpfm_synonyms() {
    let Some(x86) = x86() else { return };
    // An events directory holding only Intel's layout, then perf's: the
    // second is searched for AMD.
    let intel_only = std::env::temp_dir().join(format!("pmx-perf-db-{}", std::process::id()));
    std::fs::create_dir_all(&intel_only).unwrap();
    std::fs::write(
        intel_only.join("mapfile.csv"),
        "Family-model,Version,Filename,EventType\nGenuineIntel-6-55,V1,/SKX/events/a.json,core\n",
    )
    .unwrap();
    assert_eq!(layouts(&intel_only), [Layout::Intel(intel_only.clone())]);
    let opts = LoadOptions {
        events_dir: Some(intel_only.clone()),
        more_events_dirs: vec![x86.clone()],
        no_libpfm: true,
        ..Default::default()
    };
    let target = Target {
        cpu: cpu("AuthenticAMD-26-2-1"),
        host: false,
    };
    let db = Database::load(target, &opts);
    assert!(
        db.sources()
            .iter()
            .any(|s| s.kind() == SourceKind::PerfJson),
        "{:?}",
        db.unavailable
    );
    let r = db
        .resolve(&parse_spec("ls_dispatch.ld_dispatch:u").unwrap())
        .unwrap();
    assert_eq!(r.source, SourceKind::PerfJson);
    assert_eq!(r.attr.config, 0x129);
    assert!(r.attr.exclude_kernel && !r.attr.exclude_user);
    // PERF_CTL: USR (16) and EN (22) with the event.
    assert_eq!(r.register.as_ref().unwrap().register, 0x41_0129);
    let r = db
        .resolve(&parse_spec("de_no_dispatch_per_slot.backend_stalls").unwrap())
        .unwrap();
    assert_eq!(r.attr.config, 0x1_0000_1ea0);
    // The uncore PMU: its type comes from sysfs.
    let r = db
        .resolve(&parse_spec("l3_lookup_state.l3_miss").unwrap())
        .unwrap();
    assert_eq!((r.attr.pmu.as_str(), r.attr.config), ("amd_l3", 0x104));
    assert!(r.register.is_none());
    // A typo gets suggestions from perf's names.
    let e = db.resolve(&parse_spec("ex_ret_inst").unwrap()).unwrap_err();
    assert!(e.suggestions.iter().any(|s| s == "ex_ret_instr"), "{e}");
    // With no perf tables anywhere, the reason names the directories.
    let db = Database::load(
        Target {
            cpu: cpu("AuthenticAMD-26-2-1"),
            host: false,
        },
        &LoadOptions {
            events_dir: Some(intel_only.clone()),
            no_libpfm: true,
            ..Default::default()
        },
    );
    let why = db
        .unavailable
        .iter()
        .find(|(k, _)| *k == SourceKind::PerfJson)
        .map(|(_, w)| w.clone())
        .unwrap();
    assert!(why.contains("no Linux perf tables"), "{why}");
    let _ = std::fs::remove_dir_all(&intel_only);
}

#[test]
fn libpfm_synonyms_are_found_by_encoding() {
    let Some(x86) = x86() else { return };
    if pmx_events::libpfm::library_info().is_err() {
        pmx_testkit::skip("libpfm4 is not installed");
        return;
    }
    let target = Target {
        cpu: cpu("AuthenticAMD-25-11-1"),
        host: false,
    };
    let db = Database::load(
        target,
        &LoadOptions {
            events_dir: Some(x86),
            ..Default::default()
        },
    );
    let d = db.find("ex_ret_instr").unwrap();
    assert_eq!(d.source, SourceKind::PerfJson);
    // libpfm4's zen4 dump: RETIRED_INSTRUCTIONS config 0xc0.
    assert!(
        db.same_encoding(&d)
            .iter()
            .any(|s| s == "libpfm4 RETIRED_INSTRUCTIONS"),
        "{:?}",
        db.same_encoding(&d)
    );
}

#[test]
fn perf_and_libpfm_names_of_the_same_event_encode_alike() {
    let (Some(x86), Some(dumps)) = (x86(), data_dir("libpfm-dumps")) else {
        return;
    };
    // Pairs read off perf's JSON and libpfm4's dumps by hand.
    let common: &[(&str, &str)] = &[
        ("ex_ret_instr", "RETIRED_INSTRUCTIONS"),
        (
            "ex_ret_brn_misp",
            "RETIRED_BRANCH_INSTRUCTIONS_MISPREDICTED",
        ),
        ("ls_dispatch.ld_dispatch", "LS_DISPATCH:LD_DISPATCH"),
        ("ls_not_halted_cyc", "CYCLES_NOT_IN_HALT"),
    ];
    let zen34: &[(&str, &str)] = &[(
        "ic_tag_hit_miss.instruction_cache_miss",
        "IC_TAG_HIT_MISS:IC_MISS",
    )];
    let zen4: &[(&str, &str)] = &[
        (
            "de_no_dispatch_per_slot.no_ops_from_frontend",
            "DISPATCH_STALLS_1:FE_NO_OPS",
        ),
        (
            "ex_no_retire.load_not_complete",
            "CYCLES_NO_RETIRE:NOT_COMPLETE_MISSING_LOAD",
        ),
    ];
    for (key, pmu, extra) in [
        ("AuthenticAMD-23-1-2", "amd64_fam17h_zen1", &[][..]),
        ("AuthenticAMD-23-31-0", "amd64_fam17h_zen2", &[][..]),
        ("AuthenticAMD-25-1-1", "amd64_fam19h_zen3", zen34),
        (
            "AuthenticAMD-25-11-1",
            "amd64_fam19h_zen4",
            &[zen34, zen4].concat()[..],
        ),
    ] {
        let t = load(&x86, key);
        let lib = dump(&dumps.join(format!("{pmu}.tsv")));
        for (perf, pfm) in common.iter().chain(extra) {
            let ours = t
                .find(perf)
                .unwrap_or_else(|| panic!("{key}: {perf}"))
                .config;
            let theirs = lib[&name_key(pfm)];
            assert_eq!(
                ours, theirs,
                "{key}: {perf} {ours:#x} vs libpfm {pfm} {theirs:#x}"
            );
        }
    }
}
