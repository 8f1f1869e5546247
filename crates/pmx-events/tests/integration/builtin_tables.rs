//! The Intel tables built into pmx (`data/intel-perfmon.pmxt`): made by
//! the generator from the pinned perfmon checkout, byte for byte; every
//! platform of its mapfile loads; each platform's events are the ones
//! Intel's own files give, descriptions aside; a directory's tables win.

use crate::intel_tables_generator::generate;
use pmx_events::intel_json::{FileRole, IntelJson};
use pmx_events::tables::{intel, TableFiles};
use pmx_events::{Database, EventSource, LoadOptions, SourceKind, Target};
use pmx_model::cpu::CpuId;
use pmx_testkit::shared::intel_perfmon;
use std::path::Path;

/// The perfmon commit the checked-in bundle was made from (the shared
/// checkout's, `../shared/data/MANIFEST.md`).
const PINNED: &str = "6dadedf3aa483393943e044ba5ec88a4507cd040";

/// A CPU key a mapfile pattern selects: each `[…]` class replaced by its
/// first character (`GenuineIntel-6-55-[01234]` → `GenuineIntel-6-55-0`).
pub fn example_key(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '[' => {
                if let Some(first) = chars.next() {
                    out.push(first);
                }
                for c in chars.by_ref() {
                    if c == ']' {
                        break;
                    }
                }
            }
            '^' | '$' => {}
            c => out.push(c),
        }
    }
    out
}

/// Every platform of the built-in mapfile (its core rows' directories),
/// with a CPU key that selects it.
pub fn platforms() -> Vec<(String, CpuId)> {
    let map = pmx_events::intel_json::Mapfile::of_bundle(intel().unwrap()).unwrap();
    let mut out: Vec<(String, CpuId)> = Vec::new();
    for row in map.rows() {
        let platform = row.relative_path().split('/').next().unwrap().to_string();
        if row.role() != FileRole::Core || out.iter().any(|(p, _)| *p == platform) {
            continue;
        }
        let key = example_key(&row.family_model);
        let cpu: CpuId = key.parse().unwrap_or_else(|e| panic!("{key}: {e}"));
        assert!(
            map.select(&cpu)
                .iter()
                .any(|r| r.relative_path() == row.relative_path()),
            "{key} does not select {}",
            row.filename
        );
        out.push((platform, cpu));
    }
    out
}

#[test]
fn the_bundle_is_the_pinned_perfmon_regenerated_byte_for_byte() {
    let bundle = intel().unwrap();
    assert_eq!(bundle.commit(), PINNED);
    assert_eq!(bundle.license(), "BSD-3-Clause");
    let Some(dir) = intel_perfmon() else { return };
    let made = generate(&dir, PINNED).unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/intel-perfmon.pmxt");
    let kept = std::fs::read(&path).unwrap();
    assert!(
        made == kept,
        "{} is not what the generator makes from {} ({} bytes made, {} kept): \
         regenerate it (docs/events.md)",
        path.display(),
        dir.display(),
        made.len(),
        kept.len()
    );
}

#[test]
fn the_bundle_holds_no_descriptions() {
    let bundle = intel().unwrap();
    assert!(bundle.files().len() > 100, "{}", bundle.files().len());
    for f in bundle.files() {
        let text = String::from_utf8(bundle.read(&f.path).unwrap()).unwrap();
        for key in ["BriefDescription", "PublicDescription", "\"Copyright\""] {
            assert!(!text.contains(key), "{} holds {key}", f.path);
        }
    }
}

#[test]
fn every_platform_loads_from_the_built_in_tables() {
    let all = platforms();
    assert!(all.len() >= 40, "{} platforms", all.len());
    for (platform, cpu) in &all {
        let src = IntelJson::built_in(cpu).unwrap_or_else(|e| panic!("{platform} {cpu}: {e}"));
        assert_eq!(src.kind(), SourceKind::Builtin);
        assert!(!src.is_empty(), "{platform}: no events");
        assert!(
            src.events_ref()
                .iter()
                .all(|e| e.source == SourceKind::Builtin && e.description.is_empty()),
            "{platform}"
        );
        let first = &src.events_ref()[0];
        let from = src.provenance(first).unwrap();
        assert!(
            from.starts_with("built in: intel/perfmon 6dadedf3aa48, ") && from.contains(platform),
            "{from}"
        );
    }
}

#[test]
fn built_in_events_are_intels_files_without_the_prose() {
    let Some(dir) = intel_perfmon() else { return };
    for (platform, cpu) in platforms() {
        let built_in = IntelJson::built_in(&cpu).unwrap();
        let files = IntelJson::load(&dir, &cpu).unwrap();
        assert_eq!(built_in.len(), files.len(), "{platform}");
        for (b, f) in built_in.events_ref().iter().zip(files.events_ref()) {
            let mut f = f.clone();
            f.description.clear();
            f.source = SourceKind::Builtin;
            // The encoding in perf's terms stands where the text was.
            let terms = b.terms.as_deref().unwrap_or("");
            if f.is_core() {
                let lead = format!(
                    "event={:#x},umask={:#x}",
                    f.config & 0xff,
                    f.config >> 8 & 0xff
                );
                assert!(terms.starts_with(&lead), "{platform} {}: {terms}", b.name);
            } else {
                assert!(
                    terms.starts_with(&format!("config={:#x}", f.config)),
                    "{terms}"
                );
            }
            f.terms = b.terms.clone();
            assert_eq!(*b, f, "{platform}");
        }
        assert_eq!(built_in.offcore_bits().len(), files.offcore_bits().len());
        assert_eq!(built_in.fp_arith_bits().len(), files.fp_arith_bits().len());
    }
}

fn no_dirs() -> LoadOptions {
    LoadOptions {
        no_libpfm: true,
        ..LoadOptions::default()
    }
}

#[test]
fn the_database_falls_back_to_the_built_in_tables_and_a_directory_wins() {
    let cpu: CpuId = "GenuineIntel-6-55-4".parse().unwrap();
    let target = Target { cpu, host: false };
    // An empty directory: no tables there, so the built-in ones answer.
    let empty = tempfile::tempdir().unwrap();
    let opts = LoadOptions {
        events_dir: Some(empty.path().to_path_buf()),
        ..no_dirs()
    };
    let db = Database::load(target.clone(), &opts);
    let def = db.find("MEM_LOAD_RETIRED.L3_MISS").expect("built in");
    assert_eq!(def.source, SourceKind::Builtin);
    assert!(db.unavailable.is_empty(), "{:?}", db.unavailable);
    assert!(db
        .provenance(&def)
        .unwrap()
        .starts_with("built in: intel/perfmon 6dadedf3aa48, SKX/events/skylakex_core.json V"));

    // A directory with a newer table for the CPU wins.
    let Some(perfmon) = intel_perfmon() else {
        return;
    };
    let newer = tempfile::tempdir().unwrap();
    let map = std::fs::read_to_string(perfmon.join("mapfile.csv")).unwrap();
    let mut rows = vec![map.lines().next().unwrap().to_string()];
    rows.extend(
        map.lines()
            .filter(|l| l.contains("/SKX/events/skylakex_core.json"))
            .map(|l| l.replacen(",V1.", ",V9.", 1)),
    );
    std::fs::write(newer.path().join("mapfile.csv"), rows.join("\n")).unwrap();
    std::fs::create_dir_all(newer.path().join("SKX/events")).unwrap();
    std::fs::copy(
        perfmon.join("SKX/events/skylakex_core.json"),
        newer.path().join("SKX/events/skylakex_core.json"),
    )
    .unwrap();
    let opts = LoadOptions {
        events_dir: Some(newer.path().to_path_buf()),
        ..no_dirs()
    };
    let db = Database::load(target, &opts);
    let def = db.find("MEM_LOAD_RETIRED.L3_MISS").unwrap();
    assert_eq!(def.source, SourceKind::IntelJson);
    assert!(!def.description.is_empty());
    let from = db.provenance(&def).unwrap();
    assert_eq!(
        from,
        format!(
            "directory {}, SKX/events/skylakex_core.json V9.{}",
            newer.path().display(),
            &rows[1]
                .split(",V9.")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap()
        )
    );
    assert!(
        db.sources().iter().all(|s| s.kind() != SourceKind::Builtin),
        "the built-in tables are not loaded beside a directory's"
    );
}

fn bundle_bytes(index: &str, data: &[u8]) -> &'static [u8] {
    let mut out = b"pmx-tables 1\n".to_vec();
    out.extend_from_slice(&(index.len() as u32).to_le_bytes());
    out.extend_from_slice(index.as_bytes());
    out.extend_from_slice(data);
    Box::leak(out.into_boxed_slice())
}

#[test]
fn a_damaged_bundle_is_an_error_not_a_panic() {
    use pmx_events::tables::Bundle;
    let index = |length: u64| {
        format!(
            r#"{{"source":"","commit":"","license":"","mapfile":"Family-model,Filename,EventType\n","files":[{{"path":"a.json","offset":0,"length":{length},"size":10}}]}}"#
        )
    };
    for bad in [
        &b""[..],
        b"pmx-tables 1\n",
        b"pmx-tables 1\n\xff\xff\xff\xff{}",
        b"pmx-tables 1\n\x02\x00\x00\x00{}",
        bundle_bytes(&index(9), b"short"),
    ] {
        let leaked: &'static [u8] = Box::leak(bad.to_vec().into_boxed_slice());
        assert!(Bundle::parse(leaked).is_err(), "{bad:?}");
    }
    // A frame that is not zstd: reading it is an error naming the file.
    let b = Bundle::parse(bundle_bytes(&index(5), b"junk!")).unwrap();
    let err = b.read("a.json").unwrap_err().to_string();
    assert!(
        err.contains("built-in a.json") && err.contains("damaged"),
        "{err}"
    );
    assert!(b.read("missing.json").is_err());
}
