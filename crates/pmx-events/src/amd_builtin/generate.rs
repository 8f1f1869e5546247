//! The generator of the built-in AMD tables (`data/amd/zenN.tsv`).
//!
//! Run it after installing a newer libpfm4 or editing `zen5.facts`:
//!
//! ```text
//! cargo run -p pmx-events --example amd_builtin_gen            # rewrite the tables
//! cargo run -p pmx-events --example amd_builtin_gen -- --check # compare only
//! ```
//!
//! Zen 1–4 come from the installed libpfm4 ([`from_libpfm`]): every event
//! and unit mask of the generation's PMU that libpfm encodes, its config
//! split into event select, unit mask and modifiers (a config with bits
//! outside those fields, or with `config1`/`config2`, is refused). Zen 5
//! comes from the hand-written `data/amd/zen5.facts` ([`from_facts`]),
//! checked and written out in the same form. The test suite regenerates
//! Zen 1–4 from the installed libpfm when its version is the tables' and
//! compares.

use super::{parse_row, Row, Table, Zen};
use crate::libpfm::{library_info, Libpfm};
use crate::EventSource;

/// The hand-written Zen 5 facts, as compiled in.
pub const ZEN5_FACTS: &str = include_str!("../../data/amd/zen5.facts");

/// Bits of a core config the table's fields cover: event select 7:0 and
/// 35:32, unit mask, edge, invert, counter mask.
const FIELD_BITS: u64 = 0xff | 0xff << 8 | 1 << 18 | 1 << 23 | 0xff << 24 | 0xf << 32;

/// The version of the installed libpfm4 (`4.13.0`), from the file name of
/// the opened library.
pub fn libpfm_version() -> Result<String, String> {
    let info = library_info()?;
    let file = info.path.rsplit('/').next().unwrap_or_default().to_string();
    Ok(file
        .strip_prefix("libpfm.so.")
        .map(str::to_string)
        .unwrap_or(file))
}

/// The fields of a libpfm4 answer: `Err` when its encoding is not a plain
/// core config.
pub fn row_of(d: &crate::EventDef) -> Result<Row, String> {
    if d.perf_type != Some(crate::perf_type::RAW) || d.config1 != 0 || d.config2 != 0 {
        return Err(format!("{}: not a raw core config", d.name));
    }
    if d.config & !FIELD_BITS != 0 {
        return Err(format!(
            "{}: config {:#x} has bits outside AMD's event fields",
            d.name, d.config
        ));
    }
    let c = d.config;
    let umask = ((c >> 8) & 0xff) as u8;
    Ok(Row {
        name: d.name.clone(),
        event: ((c & 0xff) | ((c >> 32) & 0xf) << 8) as u16,
        umask: (d.name.contains(':') || umask != 0).then_some(umask),
        cmask: ((c >> 24) & 0xff) as u8,
        inv: c & 1 << 23 != 0,
        edge: c & 1 << 18 != 0,
        description: String::new(),
    })
}

fn render(zen: Zen, header: &[(&str, String)], rows: &[Row]) -> String {
    let mut out = format!(
        "# pmx's built-in AMD {} core events. Generated, do not edit: see\n\
         # crates/pmx-events/src/amd_builtin/generate.rs.\n",
        zen.code()
    );
    for (k, v) in header {
        out.push_str(&format!("#! {k}: {v}\n"));
    }
    out.push_str("# name\tevent\tumask\tmodifiers\tdescription\n");
    for r in rows {
        out.push_str(&r.to_line());
        out.push('\n');
    }
    out
}

/// The table of `zen` (1–4) from the installed libpfm4, with the rows it
/// refused.
pub fn from_libpfm(zen: Zen) -> Result<(String, Vec<String>), String> {
    let pmu = zen
        .libpfm_pmu()
        .ok_or_else(|| format!("{}: libpfm4 is not its source", zen.code()))?;
    let version = libpfm_version()?;
    let src = Libpfm::load_pmu(pmu)?;
    let mut rows: Vec<Row> = Vec::new();
    let mut refused = Vec::new();
    for d in src.events() {
        match row_of(&d) {
            Ok(r) if !rows.iter().any(|o| o.name.eq_ignore_ascii_case(&r.name)) => rows.push(r),
            Ok(_) => {}
            Err(e) => refused.push(e),
        }
    }
    if rows.is_empty() {
        return Err(format!("libpfm4 {version} gave no events for {pmu}"));
    }
    let header = [
        ("generation", zen.code().to_string()),
        ("source", format!("libpfm4 {pmu}")),
        (
            "license",
            "MIT (libpfm4's event tables); descriptions made by pmx from the facts".into(),
        ),
        ("version", format!("libpfm4 {version}")),
    ];
    Ok((render(zen, &header, &rows), refused))
}

/// The Zen 5 table from the facts file's text: every row checked, names
/// unique, the header kept.
pub fn from_facts(facts: &str) -> Result<String, String> {
    let t = Table::parse(facts).map_err(|e| format!("zen5.facts: {e}"))?;
    let mut seen = std::collections::HashSet::new();
    for r in &t.rows {
        if !seen.insert(crate::name_key(&r.name)) {
            return Err(format!("zen5.facts: {} is listed twice", r.name));
        }
        parse_row(&r.to_line())?;
    }
    let header: Vec<(&str, String)> = t
        .header
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    Ok(render(Zen::Zen5, &header, &t.rows))
}

/// Every table, generated: `(generation, text, rows refused)`.
pub fn all() -> Result<Vec<(Zen, String, Vec<String>)>, String> {
    let mut out = Vec::new();
    for zen in Zen::ALL {
        let (text, refused) = match zen.libpfm_pmu() {
            Some(_) => from_libpfm(zen)?,
            None => (from_facts(ZEN5_FACTS)?, Vec::new()),
        };
        out.push((zen, text, refused));
    }
    Ok(out)
}
