//! The resolver over the built-in sources and a fixture sysfs tree.

use pmx_events::{builtin, sysfs::SysfsEvents, Database, EventSource, SourceKind, Target};
use pmx_model::cpu::CpuId;
use pmx_model::spec::parse_spec;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A throw-away sysfs tree: an Intel-like `cpu` PMU, `msr`, an uncore IMC.
fn fixture_root(tag: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("pmx-events-sysfs-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let dev = root.join("sys/bus/event_source/devices");
    let w = |p: &Path, s: &str| {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, s).unwrap();
    };
    let cpu = dev.join("cpu");
    w(&cpu.join("type"), "4\n");
    for (f, v) in [
        ("event", "config:0-7"),
        ("umask", "config:8-15"),
        ("edge", "config:18"),
        ("inv", "config:23"),
        ("cmask", "config:24-31"),
        ("ldlat", "config1:0-15"),
    ] {
        w(&cpu.join("format").join(f), &format!("{v}\n"));
    }
    w(&cpu.join("events/cycles"), "event=0x3c\n");
    w(&cpu.join("events/cache-misses"), "event=0x2e,umask=0x41\n");
    let msr = dev.join("msr");
    w(&msr.join("type"), "9\n");
    w(&msr.join("format/event"), "config:0-63\n");
    w(&msr.join("events/tsc"), "event=0x00\n");
    w(&msr.join("events/aperf"), "event=0x01\n");
    let imc = dev.join("uncore_imc_0");
    w(&imc.join("type"), "17\n");
    w(&imc.join("format/event"), "config:0-7\n");
    w(&imc.join("format/umask"), "config:8-15\n");
    w(
        &imc.join("events/cas_count_read"),
        "event=0x04,umask=0x03\n",
    );
    w(&imc.join("events/cas_count_read.scale"), "6.103515625e-5\n");
    w(&imc.join("events/cas_count_read.unit"), "MiB\n");
    root
}

fn db(tag: &str) -> (Database, PathBuf) {
    let cpu: CpuId = "GenuineIntel-6-55-4".parse().unwrap();
    let target = Target { cpu, host: true };
    let root = fixture_root(tag);
    let sys = Arc::new(SysfsEvents::load(&root));
    let sources: Vec<Box<dyn EventSource>> = vec![
        Box::new(builtin::KernelEvents::new(&target)),
        Box::new(builtin::Architectural::new(&target)),
    ];
    let mut db = Database::from_sources(target, sources);
    db.set_sysfs(sys);
    (db, root)
}

#[test]
fn kernel_names_win_and_modifiers_apply() {
    let (db, root) = db("kernel");
    let r = db.resolve(&parse_spec("cycles:u").unwrap()).unwrap();
    assert_eq!(r.source, SourceKind::Kernel);
    assert_eq!((r.attr.type_, r.attr.config), (Some(0), 0));
    assert!(r.attr.exclude_kernel && !r.attr.exclude_user);
    assert!(r.register.is_none());
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn sysfs_aliases_and_pmu_forms() {
    let (db, root) = db("sysfs");
    let tsc = db.resolve(&parse_spec("msr/tsc/").unwrap()).unwrap();
    assert_eq!(tsc.source, SourceKind::Sysfs);
    assert_eq!((tsc.attr.type_, tsc.attr.config), (Some(9), 0));
    let aperf = db.resolve(&parse_spec("aperf").unwrap()).unwrap();
    assert_eq!((aperf.attr.type_, aperf.attr.config), (Some(9), 1));
    let cyc = db.resolve(&parse_spec("cpu/cycles/u").unwrap()).unwrap();
    assert_eq!(cyc.source, SourceKind::Sysfs);
    assert_eq!(cyc.attr.config, 0x3c);
    assert_eq!(cyc.register.as_ref().unwrap().register, 0x41003c);
    let imc = db
        .resolve(&parse_spec("uncore_imc_0/cas_count_read/").unwrap())
        .unwrap();
    assert_eq!((imc.attr.type_, imc.attr.config), (Some(17), 0x304));
    let def = imc.def.unwrap();
    assert!(def.notes.iter().any(|n| n.contains("MiB")));
    // Terms for a non-core PMU are placed through its format.
    let t = db
        .resolve(&parse_spec("uncore_imc_0/event=0x4,umask=0x3/").unwrap())
        .unwrap();
    assert_eq!((t.attr.type_, t.attr.config), (Some(17), 0x304));
    let e = db
        .resolve(&parse_spec("uncore_imc_0/event=0x4,umsk=3/").unwrap())
        .unwrap_err();
    assert_eq!(e.span.start, 23);
    assert_eq!(e.suggestions.first().map(String::as_str), Some("umask"));
    let e = db
        .resolve(&parse_spec("nope_pmu/event=1/").unwrap())
        .unwrap_err();
    assert!(e.message.contains("no PMU"), "{e}");
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn architectural_names_with_libpfm_settings() {
    let (db, root) = db("arch");
    let r = db
        .resolve(&parse_spec("LLC_MISSES:c=2:i:u").unwrap())
        .unwrap();
    assert_eq!(r.source, SourceKind::Architectural);
    assert_eq!(r.attr.config, 0x412e | 2 << 24 | 1 << 23);
    assert_eq!(r.register.unwrap().register, 0x41412e | 2 << 24 | 1 << 23);
    let fixed = db
        .resolve(&parse_spec("inst_retired:any").unwrap())
        .unwrap();
    assert_eq!(fixed.attr.config, 0x100);
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn unknown_names_get_three_suggestions_and_a_position() {
    let (db, root) = db("unknown");
    let e = db.resolve(&parse_spec("cylces:u").unwrap()).unwrap_err();
    assert_eq!((e.span.start, e.span.end), (0, 6));
    assert_eq!(e.suggestions.first().map(String::as_str), Some("cycles"));
    assert!(e.suggestions.len() <= 3);
    let e = db.resolve(&parse_spec("LLC_MISES").unwrap()).unwrap_err();
    assert!(
        e.suggestions.iter().any(|s| s == "LLC_MISSES"),
        "{:?}",
        e.suggestions
    );
    // Terms on a software event are refused with the term's position.
    let e = db
        .resolve(&parse_spec("task-clock:c=1").unwrap())
        .unwrap_err();
    assert_eq!(e.span.start, 11);
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn encodings_need_no_lookup() {
    let (db, root) = db("enc");
    let r = db
        .resolve(&parse_spec("cpu/event=0x2e,umask=0x41/u").unwrap())
        .unwrap();
    assert_eq!(r.source, SourceKind::Spec);
    assert_eq!(r.register.unwrap().register, 0x41412e);
    let _ = std::fs::remove_dir_all(root);
}
