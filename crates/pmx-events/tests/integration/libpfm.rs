//! The libpfm4 source against the real library and the shared dumps made
//! with `pfm-encode` (`shared/data/libpfm-dumps`).
//!
//! Every test prints "skipped" and passes when `libpfm.so.4` is not
//! installed. libpfm initializes once per process, from environment
//! variables; tests that need a different environment (the library
//! missing, the user's `LIBPFM_FORCE_PMU`, …) re-run this test binary as a
//! child process with that environment and one `--exact` test name: the
//! `child_*` tests do nothing unless `PMX_LIBPFM_TEST_CHILD` names them.

use pmx_events::libpfm::{self, InitMode, Libpfm};
use pmx_events::{name_key, EventDef, EventSource, Precise, SourceKind};
use pmx_model::cpu::CpuId;
use pmx_testkit::shared::shared_data;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Instant;

const CHILD: &str = "PMX_LIBPFM_TEST_CHILD";

fn key(s: &str) -> CpuId {
    s.parse().unwrap()
}

/// libpfm is loadable in this process; prints why not otherwise.
fn available() -> bool {
    match libpfm::library_info() {
        Ok(_) => true,
        Err(e) => {
            pmx_testkit::skip(format_args!("libpfm4 is not available: {e}"));
            false
        }
    }
}

/// One row of a dump: the name (`EVENT` or `EVENT:UMASK`) and, when libpfm
/// encoded it for perf, `(config, config1, config2)`.
type Row = (String, Option<(u64, u64, u64)>);

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("bad hex {s:?}"))
}

/// The rows of `<pmu>.tsv`, or `None` (with a message) when the shared data
/// is not there.
fn dump(pmu: &str) -> Option<Vec<Row>> {
    let path = shared_data("libpfm-dumps")?.join(format!("{pmu}.tsv"));
    let Ok(text) = std::fs::read_to_string(&path) else {
        pmx_testkit::skip(format_args!("{} not found", path.display()));
        return None;
    };
    let mut rows = Vec::new();
    for line in text.lines().skip(1) {
        let c: Vec<&str> = line.split('\t').collect();
        assert!(c.len() >= 11, "{}: short line {line:?}", path.display());
        let name = if c[2].is_empty() {
            c[1].to_string()
        } else {
            format!("{}:{}", c[1], c[2])
        };
        let enc = (c[3] != "-").then(|| (hex(c[3]), hex(c[4]), hex(c[5])));
        rows.push((name, enc));
    }
    Some(rows)
}

fn find(src: &Libpfm, name: &str) -> EventDef {
    src.find(name)
        .unwrap_or_else(|| panic!("{name} not found in {}", src.describe()))
}

/// Every row of the dump: an encodable row is found with the same
/// config/config1/config2, a row libpfm refused is not found, and
/// `events()` lists exactly the encodable names.
fn check_against_dump(src: &Libpfm, rows: &[Row]) -> usize {
    let pmu = src.pmu().name.clone();
    let mut expected: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    let mut checked = 0;
    for (name, enc) in rows {
        let got = src.find(name);
        match (enc, &got) {
            (Some(want), Some(d)) => {
                assert_eq!((d.config, d.config1, d.config2), *want, "{pmu} {name}");
                assert_eq!(d.perf_type, Some(4), "{pmu} {name}");
                assert_eq!(d.pmu, "cpu");
                assert!(d.is_core(), "{pmu} {name}");
                expected.insert(name.clone(), *want);
                checked += 1;
            }
            (None, None) => {}
            (Some(_), None) => panic!("{pmu} {name}: in the dump, not found"),
            (None, Some(d)) => panic!("{pmu} {name}: libpfm refused it in the dump, found {d:?}"),
        }
    }
    let all = src.events();
    let listed: BTreeMap<String, (u64, u64, u64)> = all
        .iter()
        .map(|d| (d.name.clone(), (d.config, d.config1, d.config2)))
        .collect();
    assert_eq!(
        listed.len(),
        all.len(),
        "{pmu}: duplicate names in events()"
    );
    assert_eq!(listed, expected, "{pmu}: events() differs from the dump");
    for d in &all {
        assert_eq!(d.source, SourceKind::Libpfm);
        assert_eq!(d.origin, format!("libpfm4 {pmu}"));
        assert!(
            !d.description.is_empty(),
            "{pmu} {}: no description",
            d.name
        );
    }
    checked
}

#[test]
fn zen4_retired_instructions() {
    if !available() {
        return;
    }
    let src = Libpfm::load(&key("AuthenticAMD-25-11-1")).unwrap();
    assert_eq!(src.pmu().name, "amd64_fam19h_zen4");
    let d = find(&src, "RETIRED_INSTRUCTIONS");
    assert_eq!(
        (d.perf_type, d.config, d.config1, d.config2),
        (Some(4), 0xc0, 0, 0)
    );
    assert_eq!(d.source, SourceKind::Libpfm);
    assert_eq!(d.origin, "libpfm4 amd64_fam19h_zen4");
    assert_eq!(d.pmu, "cpu");
    assert_eq!(d.precise, Precise::No);
    assert!(!d.description.is_empty());
    // Any case, '.' for ':', libpfm's pmu:: prefix.
    assert_eq!(find(&src, "retired_instructions").config, 0xc0);
    assert_eq!(
        find(&src, "amd64_fam19h_zen4::RETIRED_INSTRUCTIONS").config,
        0xc0
    );
    let a = find(&src, "RETIRED_X87_FP_OPS:ADD_SUB_OPS");
    let b = find(&src, "retired_x87_fp_ops.add_sub_ops");
    assert_eq!((a.config, b.config), (0x102, 0x102));
    assert_eq!(a.name, "RETIRED_X87_FP_OPS:ADD_SUB_OPS");
    // Unit masks combine where libpfm allows it.
    let both = find(&src, "RETIRED_X87_FP_OPS:ADD_SUB_OPS:MUL_OPS");
    assert_eq!(both.config, 0x302);
    assert_eq!(both.name, "RETIRED_X87_FP_OPS:ADD_SUB_OPS:MUL_OPS");
    // No default unit mask: the event alone is not an event.
    assert!(src.find("RETIRED_X87_FP_OPS").is_none());
    // Modifiers are pmx's business; libpfm's are not names.
    assert!(src.find("RETIRED_INSTRUCTIONS:u").is_none());
    assert!(src.find("RETIRED_INSTRUCTIONS:k=1").is_none());
    assert!(src.find("NO_SUCH_EVENT").is_none());
    assert!(src.find("").is_none());
    assert!(src.find("RETIRED_INSTRUCTIONS\0").is_none());
    // libpfm's raw answer is there too.
    let raw = src.encode("RETIRED_INSTRUCTIONS").unwrap();
    assert_eq!((raw.perf_type, raw.config), (4, 0xc0));
    let err = src.encode("NO_SUCH_EVENT").unwrap_err();
    assert!(err.code < 0 && !err.message.is_empty(), "{err:?}");
}

#[test]
fn host_cpu_uses_libpfm_detection() {
    if !available() {
        return;
    }
    use pmx_sys::{CpuidSource, NativeCpuid};
    if !NativeCpuid.available() {
        pmx_testkit::skip("no CPUID on this machine");
        return;
    }
    let l0 = NativeCpuid.cpuid(0, 0);
    let vendor: Vec<u8> = [l0[1], l0[3], l0[2]]
        .iter()
        .flat_map(|r| r.to_le_bytes())
        .collect();
    let host = CpuId::from_signature(
        pmx_model::cpu::Vendor::from_cpuid_str(&String::from_utf8_lossy(&vendor)),
        NativeCpuid.cpuid(1, 0)[0],
    );
    match Libpfm::load(&host) {
        Ok(src) => {
            eprintln!(
                "host {host}: libpfm PMU {} ({})",
                src.pmu().name,
                src.chosen_by()
            );
            assert!(src.pmu().core);
            if src.pmu().name.starts_with("amd64_fam1") {
                // Every Zen core counts retired instructions with 0xC0.
                assert_eq!(find(&src, "RETIRED_INSTRUCTIONS").config, 0xc0);
            }
            if libpfm::pmu_name_for(&host) == Some(src.pmu().name.as_str()) {
                assert!(
                    src.pmu().present,
                    "libpfm did not detect {}",
                    src.pmu().name
                );
            }
        }
        Err(e) => eprintln!("host {host}: no libpfm PMU: {e}"),
    }
}

#[test]
fn fam10h_cache_events() {
    if !available() {
        return;
    }
    let src = Libpfm::load(&key("AuthenticAMD-16-2")).unwrap();
    assert_eq!(src.pmu().name, "amd64_fam10h_barcelona");
    assert!(!src.pmu().present);
    assert_eq!(src.chosen_by(), "pmx's table for this CPU");
    assert_eq!(src.cpu(), Some(&key("AuthenticAMD-16-2")));
    // BKDG family 10h: DC accesses 0x40, misses 0x41, refills from L2 0x42
    // (unit mask per MOESI state), from the system 0x43, L2 requests 0x7D.
    for (name, config) in [
        ("DATA_CACHE_ACCESSES", 0x40),
        ("DATA_CACHE_MISSES", 0x41),
        ("DATA_CACHE_REFILLS_FROM_SYSTEM:MODIFIED", 0x1043),
        ("DATA_CACHE_REFILLS_FROM_SYSTEM:ALL", 0x1f43),
        ("INSTRUCTION_CACHE_MISSES", 0x81),
        ("RETIRED_INSTRUCTIONS", 0xc0),
    ] {
        let d = find(&src, name);
        assert_eq!((d.perf_type, d.config), (Some(4), config), "{name}");
    }
    // The exact values of the dump for the headline event.
    let rows = dump("amd64_fam10h_barcelona");
    if let Some(rows) = rows {
        let want = rows
            .iter()
            .find(|(n, _)| n == "DATA_CACHE_MISSES")
            .and_then(|(_, e)| *e)
            .unwrap();
        let d = find(&src, "DATA_CACHE_MISSES");
        assert_eq!((d.config, d.config1, d.config2), want);
    }
    // Events the Zen 4 tables do not have.
    let zen4 = Libpfm::load(&key("AuthenticAMD-25-11-1")).unwrap();
    assert!(zen4.find("DATA_CACHE_MISSES").is_none());
}

#[test]
fn whole_pmus_match_the_dumps() {
    if !available() {
        return;
    }
    let Some(dumps) = shared_data("libpfm-dumps") else {
        return;
    };
    let Ok(dir) = std::fs::read_dir(&dumps) else {
        pmx_testkit::skip(format_args!("{} is not readable", dumps.display()));
        return;
    };
    let mut files: Vec<String> = dir
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tsv"))
        .collect();
    files.sort();
    let mut total = 0;
    let mut pmus_checked = BTreeSet::new();
    for file in files {
        let pmu = file.trim_end_matches(".tsv");
        // skl.plm_u.tsv: the same PMU with another privilege level, which
        // changes only exclude_* (never config).
        let pmu = pmu.split('.').next().unwrap();
        if pmu == "ix86arch" {
            // libpfm builds these from the host's CPUID leaf 0xA; pmx never
            // uses this PMU for a CPU it is not running on.
            continue;
        }
        let src = match Libpfm::load_pmu(pmu) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("skipped {file}: {e}");
                continue;
            }
        };
        let rows = dump(file.trim_end_matches(".tsv")).unwrap();
        let t = Instant::now();
        let listed = src.events().len();
        let took = t.elapsed();
        let n = check_against_dump(&src, &rows);
        eprintln!("{file}: {n} encodings match ({listed} listed in {took:?})");
        assert!(n > 0);
        total += n;
        pmus_checked.insert(pmu.to_string());
    }
    eprintln!("{total} encodings checked over {} PMUs", pmus_checked.len());
    if pmus_checked.is_empty() {
        pmx_testkit::skip("no dump checked");
        return;
    }
    for required in ["amd64_fam19h_zen4", "amd64_fam10h_barcelona"] {
        assert!(pmus_checked.contains(required), "{required} not checked");
    }
}

#[test]
fn intel_names_and_precise_flags() {
    if !available() {
        return;
    }
    let src = Libpfm::load(&key("GenuineIntel-6-55-4")).unwrap();
    assert_eq!(src.pmu().name, "skx");
    let d = find(&src, "LONGEST_LAT_CACHE.MISS");
    assert_eq!(
        (d.config, d.name.as_str()),
        (0x412e, "LONGEST_LAT_CACHE:MISS")
    );
    // PEBS events are precise, others are not.
    assert_eq!(
        find(&src, "MEM_LOAD_RETIRED:L3_MISS").precise,
        Precise::Pebs(1)
    );
    assert_eq!(find(&src, "LONGEST_LAT_CACHE:MISS").precise, Precise::No);
    // Offcore response: the request/response mask goes to config1.
    if let Some(d) = src.find("OFFCORE_RESPONSE_0:DMND_DATA_RD:L3_MISS") {
        assert_ne!(d.config1, 0, "{d:?}");
    }
    // Stepping 7 is Cascade Lake, a PMU of its own in libpfm.
    assert_eq!(
        Libpfm::load(&key("GenuineIntel-6-55-7"))
            .unwrap()
            .pmu()
            .name,
        "clx"
    );
}

#[test]
fn unknown_cpus_say_why() {
    if !available() {
        return;
    }
    let e = Libpfm::load(&key("GenuineIntel-6-FE")).unwrap_err();
    assert!(e.contains("GenuineIntel-6-FE"), "{e}");
    if libpfm::pmus()
        .unwrap()
        .iter()
        .all(|p| p.name != "amd64_fam1ah_zen5")
    {
        let e = Libpfm::load(&key("AuthenticAMD-26-2")).unwrap_err();
        assert!(
            e.contains("amd64_fam1ah_zen5") && e.contains("newer libpfm4"),
            "{e}"
        );
    }
    let e = Libpfm::load_pmu("no_such_pmu").unwrap_err();
    assert!(e.contains("no_such_pmu"), "{e}");
}

#[test]
fn listing_is_fast_and_find_is_lazy() {
    if !available() {
        return;
    }
    let t = Instant::now();
    let src = Libpfm::load(&key("AuthenticAMD-25-11-1")).unwrap();
    let load = t.elapsed();
    let t = Instant::now();
    let d = find(&src, "LS_DISPATCH:LD_DISPATCH");
    let one = t.elapsed();
    let t = Instant::now();
    let all = src.events();
    let every = t.elapsed();
    let t = Instant::now();
    let again = src.events();
    let cached = t.elapsed();
    eprintln!(
        "zen4: load {load:?}, one find {one:?}, events() {} in {every:?}, again {cached:?}",
        all.len()
    );
    assert_eq!(all, again);
    assert!(all.contains(&d));
    assert!(all.len() > 300);
    // The figures are printed above, not asserted: a loaded machine decides
    // them more than the code does.
    // names() is the listed names (used for suggestions).
    assert_eq!(
        src.names(),
        all.iter().map(|d| d.name.clone()).collect::<Vec<_>>()
    );
    // After the listing, find answers from it, identically.
    assert_eq!(find(&src, "LS_DISPATCH:LD_DISPATCH"), d);
    assert_eq!(name_key("LS_DISPATCH:LD_DISPATCH"), name_key(&d.name));
}

#[test]
fn sources_are_usable_from_threads() {
    if !available() {
        return;
    }
    let handles: Vec<_> = [
        "AuthenticAMD-25-11-1",
        "AuthenticAMD-16-2",
        "GenuineIntel-6-8F",
        "AuthenticAMD-23-31",
    ]
    .into_iter()
    .map(|k| {
        std::thread::spawn(move || {
            let src = Libpfm::load(&key(k)).unwrap();
            (0..20)
                .filter_map(|_| {
                    src.find("RETIRED_INSTRUCTIONS")
                        .or_else(|| src.find("INST_RETIRED:ANY_P"))
                })
                .filter(|d| d.config == 0xc0)
                .count()
        })
    })
    .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 20);
    }
}

// ---------------------------------------------------------------------------
// Child processes: a fresh libpfm initialization each.

/// `name`, a test of this module, as the test harness names it (the
/// module's path in this binary, then the name), for `--exact`.
fn harness_name(name: &str) -> String {
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    format!("{module}::{name}")
}

/// Run `test` of this binary in a child with `env` (and none of the
/// variables that steer libpfm); assert it ran and passed.
fn run_child(test: &str, env: &[(&str, &str)]) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args([
        "--exact",
        &harness_name(test),
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, test)
    .env_remove("LIBPFM_FORCE_PMU")
    .env_remove("LIBPFM_ENCODE_INACTIVE")
    .env_remove(libpfm::LIBRARY_ENV);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{test} failed:\n{text}");
    assert!(
        text.contains(&format!("child {test} done")),
        "{test} did not run:\n{text}"
    );
}

fn is_child(test: &str) -> bool {
    std::env::var(CHILD).as_deref() == Ok(test)
}

fn done(test: &str) {
    eprintln!("child {test} done");
}

#[test]
fn missing_library_is_an_error_not_a_panic() {
    run_child(
        "child_missing_library",
        &[(libpfm::LIBRARY_ENV, "/nonexistent/libpfm.so.4")],
    );
}

#[test]
fn child_missing_library() {
    if !is_child("child_missing_library") {
        return;
    }
    let e = Libpfm::load(&key("AuthenticAMD-25-11-1")).unwrap_err();
    assert!(
        e.contains("/nonexistent/libpfm.so.4") && e.contains("install libpfm4"),
        "{e}"
    );
    assert!(libpfm::library_info().is_err());
    assert!(libpfm::pmus().is_err());
    assert!(Libpfm::load_pmu("skx").is_err());
    done("child_missing_library");
}

#[test]
fn foreign_cpu_first_then_host_in_one_process() {
    if !available() {
        return;
    }
    run_child("child_foreign_first", &[]);
}

#[test]
fn child_foreign_first() {
    if !is_child("child_foreign_first") {
        return;
    }
    // The first libpfm use of the process is for another CPU...
    let t = Instant::now();
    let fam10h = Libpfm::load(&key("AuthenticAMD-16-2")).unwrap();
    eprintln!(
        "first load (dlopen, pfm_initialize, catalog) {:?}",
        t.elapsed()
    );
    assert_eq!(find(&fam10h, "DATA_CACHE_MISSES").config, 0x41);
    let info = libpfm::library_info().unwrap();
    assert_eq!(info.mode, InitMode::AllPmus);
    assert!(info.path.contains("libpfm.so"), "{}", info.path);
    // ... the switch pmx set for libpfm does not leak to child processes ...
    assert!(std::env::var_os("LIBPFM_ENCODE_INACTIVE").is_none());
    // ... and later loads for other CPUs still work.
    let zen4 = Libpfm::load(&key("AuthenticAMD-25-11-1")).unwrap();
    assert_eq!(find(&zen4, "RETIRED_INSTRUCTIONS").config, 0xc0);
    let spr = Libpfm::load(&key("GenuineIntel-6-8F")).unwrap();
    assert_eq!(find(&spr, "INST_RETIRED:ANY_P").config, 0xc0);
    assert_eq!(find(&fam10h, "DATA_CACHE_ACCESSES").config, 0x40);
    done("child_foreign_first");
}

#[test]
fn users_force_pmu_is_honoured() {
    if !available() {
        return;
    }
    run_child(
        "child_user_forced",
        &[("LIBPFM_FORCE_PMU", "amd64_fam10h_barcelona")],
    );
}

#[test]
fn child_user_forced() {
    if !is_child("child_user_forced") {
        return;
    }
    assert_eq!(
        libpfm::library_info().unwrap().mode,
        InitMode::Forced("amd64_fam10h_barcelona".to_string())
    );
    let fam10h = Libpfm::load(&key("AuthenticAMD-16-2")).unwrap();
    assert_eq!(find(&fam10h, "DATA_CACHE_MISSES").config, 0x41);
    assert!(fam10h.pmu().present, "forced PMUs count as present");
    // Only the forced PMU exists for libpfm in this process.
    let e = Libpfm::load(&key("AuthenticAMD-25-11-1")).unwrap_err();
    assert!(e.contains("LIBPFM_FORCE_PMU"), "{e}");
    let e = Libpfm::load(&key("GenuineIntel-6-8F")).unwrap_err();
    assert!(e.contains("LIBPFM_FORCE_PMU"), "{e}");
    done("child_user_forced");
}

#[test]
fn inactive_pmus_are_refused_clearly() {
    if !available() {
        return;
    }
    run_child(
        "child_inactive_refused",
        &[("LIBPFM_FORCE_PMU", "amd64_fam19h_zen4")],
    );
}

#[test]
fn child_inactive_refused() {
    if !is_child("child_inactive_refused") {
        return;
    }
    // With a PMU forced, libpfm still lists the PMUs before it in its table
    // (family 10h comes before Zen 4) but will not encode for them.
    let zen4 = Libpfm::load(&key("AuthenticAMD-25-11-1")).unwrap();
    assert_eq!(find(&zen4, "RETIRED_INSTRUCTIONS").config, 0xc0);
    let e = Libpfm::load(&key("AuthenticAMD-16-2")).unwrap_err();
    assert!(
        e.contains("cannot encode") && e.contains("LIBPFM_FORCE_PMU"),
        "{e}"
    );
    done("child_inactive_refused");
}
