//! pmx's built-in AMD Zen tables against Linux perf's (the oracle, read at
//! run time from `shared/data/linux-perf-events/x86`, never copied): every
//! event both know encodes to the same config — by name where the names
//! agree (all of Zen 5's, a few of libpfm's), and by AMD's identity of an
//! event (event select, unit mask, counter mask, invert, edge as each table
//! writes them) everywhere; the checked-in tables are what the generator
//! makes; the database uses them only where no events directory has a
//! table.

use pmx_events::amd_builtin::{generate, AmdBuiltin, Row, Zen};
use pmx_events::perf_json::{PerfJson, UncoreFormats};
use pmx_events::{name_key, Database, EventSource, LoadOptions, SourceKind, Target};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn x86() -> Option<PathBuf> {
    pmx_testkit::shared::shared_data("linux-perf-events/x86")
}

fn perf_dir(zen: Zen) -> String {
    format!("amd{}", zen.code())
}

/// perf's core events of a generation as its JSON writes them: name →
/// (event select, unit mask, counter mask, invert, edge).
type Fields = (u64, Option<u64>, u64, bool, bool);

fn perf_fields(x86: &Path, zen: Zen) -> HashMap<String, Fields> {
    let num = |v: Option<&serde_json::Value>| -> Option<u64> {
        let s = v?.as_str()?;
        match s.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).ok(),
            None => s.parse().ok(),
        }
    };
    let flag = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()) == Some("1");
    let mut out = HashMap::new();
    let dir = x86.join(perf_dir(zen));
    for f in std::fs::read_dir(&dir).unwrap().flatten() {
        let bytes = std::fs::read(f.path()).unwrap();
        let list: Vec<serde_json::Value> = serde_json::from_slice(&bytes).unwrap();
        for e in list {
            let (Some(name), Some(code)) = (
                e.get("EventName").and_then(|n| n.as_str()),
                num(e.get("EventCode")),
            ) else {
                continue;
            };
            if e.get("Unit").is_some() {
                continue;
            }
            let fields = (
                code,
                num(e.get("UMask")),
                num(e.get("CounterMask")).unwrap_or(0),
                flag(e.get("Invert")),
                flag(e.get("EdgeDetect")),
            );
            out.insert(name_key(name), fields);
        }
    }
    out
}

fn row_fields(r: &Row) -> Fields {
    (
        u64::from(r.event),
        r.umask.map(u64::from),
        u64::from(r.cmask),
        r.inv,
        r.edge,
    )
}

#[test]
fn every_event_both_tables_know_encodes_alike() {
    let Some(x86) = x86() else { return };
    for zen in Zen::ALL {
        let cpu = zen.example_cpu().parse().unwrap();
        let perf = PerfJson::load(&x86, &cpu, &UncoreFormats::default()).unwrap();
        assert_eq!(perf.table(), perf_dir(zen), "{zen:?}");
        let fields = perf_fields(&x86, zen);
        let ours = AmdBuiltin::load(zen).unwrap();
        // The same name: the same config.
        let mut by_name = 0;
        for r in ours.rows() {
            if let Some(p) = perf.find(&r.name).filter(|p| p.pmu == "cpu") {
                let b = ours.find(&r.name).unwrap();
                assert_eq!(
                    b.config, p.config,
                    "{zen:?} {}: {:#x} vs perf {:#x}",
                    r.name, b.config, p.config
                );
                by_name += 1;
            }
        }
        // The same event select, unit mask and modifiers: the same config.
        let by_fields: HashMap<Fields, &str> = ours
            .rows()
            .iter()
            .map(|r| (row_fields(r), r.name.as_str()))
            .collect();
        // Built-in names matched (perf may name one event twice).
        let mut matched = std::collections::HashSet::new();
        let mut extended = 0;
        for (pname, f) in &fields {
            let Some(name) = by_fields.get(f) else {
                continue;
            };
            let p = perf.find(pname).unwrap();
            let b = ours.find(name).unwrap();
            assert_eq!(
                b.config, p.config,
                "{zen:?}: {name} {:#x} vs perf {pname} {:#x}",
                b.config, p.config
            );
            matched.insert(*name);
            extended += usize::from(f.0 > 0xff);
        }
        let rows = ours.rows().len();
        let both = matched.len();
        eprintln!("{zen:?}: {rows} built in, {by_name} by name, {both} by fields ({extended} with select bits 11:8)");
        match zen {
            // Zen 5's names are AMD's mnemonics: every one is perf's too.
            Zen::Zen5 => {
                assert_eq!(by_name, rows, "{zen:?}");
                assert_eq!(both, rows, "{zen:?}");
            }
            // libpfm's names: a few agree (LS_DISPATCH:LD_DISPATCH), most
            // differ; most events are in both by their fields.
            _ => {
                assert!(by_name >= 3, "{zen:?}: {by_name}");
                assert!(both * 10 >= rows * 6, "{zen:?}: {both} of {rows}");
            }
        }
        if zen != Zen::Zen1 {
            assert!(
                extended > 0,
                "{zen:?}: no event with a select above 0xff in both"
            );
        }
    }
}

#[test]
fn the_checked_in_tables_are_the_generators() {
    let zen5 = generate::from_facts(generate::ZEN5_FACTS).unwrap();
    assert_eq!(
        zen5,
        Zen::Zen5.table_text(),
        "zen5.tsv: rerun the generator"
    );
    let Ok(version) = generate::libpfm_version() else {
        pmx_testkit::skip("libpfm4 is not installed: Zen 1–4 not regenerated");
        return;
    };
    for zen in [Zen::Zen1, Zen::Zen2, Zen::Zen3, Zen::Zen4] {
        let table = AmdBuiltin::load(zen).unwrap();
        if !table.version().ends_with(&format!("libpfm4 {version}")) {
            pmx_testkit::skip(format!(
                "{}: made from {}, libpfm4 {version} is installed",
                zen.code(),
                table.version()
            ));
            continue;
        }
        let (text, _) = generate::from_libpfm(zen).unwrap();
        assert_eq!(
            text,
            zen.table_text(),
            "{}.tsv: rerun the generator",
            zen.code()
        );
    }
}

fn load(key: &str, dir: Option<&Path>) -> Database {
    let target = Target {
        cpu: key.parse().unwrap(),
        host: false,
    };
    let empty = std::env::temp_dir().join(format!("pmx-amd-builtin-empty-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    Database::load(
        target,
        &LoadOptions {
            events_dir: Some(dir.map(Path::to_path_buf).unwrap_or(empty)),
            no_libpfm: true,
            ..Default::default()
        },
    )
}

#[test]
fn the_database_falls_back_to_the_builtin_table() {
    // No events directory with tables, no libpfm4: the built-in answers.
    for (key, name, config) in [
        ("AuthenticAMD-23-1-2", "RETIRED_UOPS", 0xc1),
        ("AuthenticAMD-25-1-1", "RETIRED_OPS", 0xc1),
        (
            "AuthenticAMD-25-11-1",
            "DISPATCH_STALLS_1:FE_NO_OPS",
            0x1_0000_01a0,
        ),
        (
            "AuthenticAMD-26-2-1",
            "de_no_dispatch_per_slot.backend_stalls",
            0x1_0000_1ea0,
        ),
        (
            "AuthenticAMD-26-2-1",
            "ls_dispatch.ld_dispatch:store_dispatch",
            0x329,
        ),
    ] {
        let db = load(key, None);
        let d = db.find(name).unwrap_or_else(|| panic!("{key}: {name}"));
        assert_eq!(d.source, SourceKind::AmdBuiltin, "{key}: {name}");
        assert_eq!(d.config, config, "{key}: {name}");
        assert!(!d.description.is_empty(), "{key}: {name}");
        let spec = pmx_model::spec::parse_spec(&format!("{name}:u")).unwrap();
        let r = db.resolve(&spec).unwrap();
        assert_eq!(r.attr.config, config, "{key}: {name}");
        assert!(r.attr.exclude_kernel, "{key}: {name}");
    }
    // perf's tables in the events directory win for the names they know.
    let Some(x86) = x86() else { return };
    let db = load("AuthenticAMD-26-2-1", Some(&x86));
    assert_eq!(db.find("ex_ret_ops").unwrap().source, SourceKind::PerfJson);
    let db = load("AuthenticAMD-25-11-1", Some(&x86));
    let d = db.find("RETIRED_OPS").unwrap();
    assert_eq!(d.source, SourceKind::AmdBuiltin);
    assert!(
        db.same_encoding(&d).iter().any(|s| s == "perf ex_ret_ops"),
        "{:?}",
        db.same_encoding(&d)
    );
}
