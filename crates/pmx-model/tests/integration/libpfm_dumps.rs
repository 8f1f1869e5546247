//! Cross-check the register model against libpfm4's encodings of every event
//! of five PMUs (`../shared/data/libpfm-dumps`, generated with libpfm4 4.13).
//!
//! For every `ok` row: decoding `raw_codes` (minus INT, which libpfm always
//! sets) and re-encoding its fields gives the same value; the perf config
//! pmx derives from it equals libpfm's `config` column; and encoding the
//! same fields as a `cpu/…/` spec gives the same register and config.

use pmx_model::encoding::{encode_spec, Arch, EncodeOptions};
use pmx_model::register::{amd_event_select, RegisterKind};
use pmx_model::spec::parse_spec;
use pmx_testkit::shared::shared_data;

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("bad hex {s:?}"))
}

fn check_dump(data: &std::path::Path, pmu: &str, arch: Arch) -> usize {
    let path = data.join(format!("{pmu}.tsv"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let layout = arch.core_layout();
    let int = layout.field("INT").unwrap().mask();
    let mut checked = 0;
    for (n, line) in text.lines().enumerate().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 11, "{pmu}.tsv:{}: expected 11 columns", n + 1);
        if cols[10] != "ok" {
            continue;
        }
        let what = format!("{pmu}.tsv:{} {}:{}", n + 1, cols[1], cols[2]);
        let mut raws = cols[6].split(',');
        let raw = hex(raws.next().unwrap());
        let raw_config1 = raws.next().map(hex).unwrap_or(0);
        let config = hex(cols[3]);
        let config1 = hex(cols[4]);
        let value = raw & !int;

        // 1. decode → encode round trip.
        let fields = layout.decode(value);
        assert_eq!(
            layout.encode_values(&fields).unwrap(),
            value,
            "{what}: round trip"
        );
        assert_eq!(
            value & layout.reserved_mask(),
            0,
            "{what}: libpfm set reserved bits {:#x}",
            value & layout.reserved_mask()
        );
        // 2. the perf config pmx derives.
        assert_eq!(
            value & layout.perf_passed_mask(),
            config,
            "{what}: perf config"
        );
        assert_eq!(raw_config1, config1, "{what}: config1");

        // 3. the same event through the spec grammar and the encoder.
        let get = |name: &str| layout.get(value, name).unwrap_or(0);
        let event = match arch {
            Arch::Intel => get("EventSelect") as u16,
            Arch::Amd => amd_event_select(value),
        };
        let mut spec = format!(
            "cpu/event={event:#x},umask={:#x},cmask={}",
            get("UMASK").max(get("UnitMask")),
            get("CMASK").max(get("CntMask"))
        );
        for (field, term) in [
            ("E", "edge"),
            ("Edge", "edge"),
            ("INV", "inv"),
            ("ANY", "any"),
        ] {
            if layout.field(field).is_some_and(|f| f.name == field) && get(field) == 1 {
                spec.push(',');
                spec.push_str(term);
            }
        }
        if config1 != 0 {
            spec.push_str(&format!(",config1={config1:#x}"));
        }
        spec.push('/');
        let parsed = parse_spec(&spec).unwrap_or_else(|e| panic!("{what}: {e}"));
        let enc = encode_spec(
            &parsed,
            EncodeOptions {
                arch,
                sampling: true,
            },
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(enc.register, raw, "{what}: register from {spec}");
        assert_eq!(enc.attr.config, config, "{what}: config from {spec}");
        assert_eq!(enc.attr.config1, config1, "{what}: config1 from {spec}");
        assert_eq!(
            enc.register_kind,
            match arch {
                Arch::Intel => RegisterKind::IntelEvtSel,
                Arch::Amd => RegisterKind::AmdPerfCtl,
            }
        );
        checked += 1;
    }
    checked
}

#[test]
fn libpfm_encodings_round_trip() {
    let Some(data) = shared_data("libpfm-dumps") else {
        return;
    };
    let mut total = 0;
    for (pmu, arch) in [
        ("skl", Arch::Intel),
        ("icl", Arch::Intel),
        ("spr", Arch::Intel),
        ("amd64_fam17h_zen2", Arch::Amd),
        ("amd64_fam19h_zen4", Arch::Amd),
    ] {
        let n = check_dump(&data, pmu, arch);
        assert!(n > 100, "{pmu}: only {n} ok rows");
        total += n;
    }
    eprintln!("checked {total} libpfm encodings");
}
