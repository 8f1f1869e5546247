//! Generates `crates/pmx-events/data/intel-perfmon.pmxt`, the Intel tables
//! built into pmx, from a checkout of Intel's perfmon repository:
//!
//! ```text
//! cargo run -q -p pmx-events --example intel_tables -- PERFMON_DIR COMMIT \
//!     crates/pmx-events/data/intel-perfmon.pmxt
//! ```
//!
//! `COMMIT` is the checkout's commit (the bundle records it; `pmx info`
//! prints it). Every file `mapfile.csv` names and the perf-format sibling
//! of each metric file are kept as facts: parsed, Intel's prose keys
//! dropped ([`DROPPED`], and the headers' keys but [`HEADER_KEPT`]),
//! written back as compact JSON and compressed with zstd, one frame per
//! file (the layout: `pmx_events::tables`). The output depends only on the
//! input and the commit: the integration test `builtin_tables` regenerates
//! it from `../shared/data/intel-perfmon` and compares byte for byte.

use serde_json::{json, Map, Value};
use std::path::Path;

/// Keys of Intel's prose: left out of the built-in tables.
pub const DROPPED: &[&str] = &[
    "BriefDescription",
    "PublicDescription",
    "DESCRIPTION",
    "Description",
];

/// The header keys kept (versions and dates are facts).
pub const HEADER_KEPT: &[&str] = &["Version", "DatePublished", "TmaVersion", "TmaFlavor"];

/// The zstd level: small enough a bundle (under 1 MB), quick to make.
const LEVEL: i32 = 9;

fn strip(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(k, _)| !DROPPED.contains(&k.as_str()))
                .map(|(k, v)| {
                    let v = if k == "Header" { header(v) } else { strip(v) };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(strip).collect()),
        other => other,
    }
}

fn header(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(k, _)| HEADER_KEPT.contains(&k.as_str()))
                .collect::<Map<String, Value>>(),
        ),
        other => strip(other),
    }
}

/// The files of the bundle: every `Filename` of the mapfile, and the
/// perf-format sibling of each metric file that has one, sorted.
fn file_list(dir: &Path, mapfile: &str) -> Result<Vec<String>, String> {
    let mut lines = mapfile.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<String> = lines
        .next()
        .ok_or("empty mapfile.csv")?
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    let col = |n: &str| header.iter().position(|h| h == n);
    let (Some(c_file), Some(c_type)) = (col("filename"), col("eventtype")) else {
        return Err("mapfile.csv lacks Filename or EventType".to_string());
    };
    let mut files = Vec::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let (Some(file), Some(kind)) = (f.get(c_file), f.get(c_type)) else {
            return Err(format!("mapfile.csv: short line {line:?}"));
        };
        let rel = file.trim_start_matches('/').to_string();
        if kind.eq_ignore_ascii_case("metrics") {
            if let Some(stem) = rel.strip_suffix(".json") {
                let (parent, name) = stem.rsplit_once('/').unwrap_or(("", stem));
                let sib = format!("{parent}/perf/{name}_perf.json");
                if dir.join(&sib).is_file() {
                    files.push(sib);
                }
            }
        }
        files.push(rel);
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// The bundle for the perfmon checkout `dir` at `commit`.
pub fn generate(dir: &Path, commit: &str) -> Result<Vec<u8>, String> {
    let read = |rel: &str| {
        std::fs::read(dir.join(rel)).map_err(|e| format!("{}: {e}", dir.join(rel).display()))
    };
    let mapfile = String::from_utf8(read("mapfile.csv")?)
        .map_err(|_| "mapfile.csv is not UTF-8".to_string())?;
    let mut index_files = Vec::new();
    let mut data = Vec::new();
    for rel in file_list(dir, &mapfile)? {
        let bytes = read(&rel)?;
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
        let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("{rel}: {e}"))?;
        let plain = serde_json::to_vec(&strip(value)).map_err(|e| format!("{rel}: {e}"))?;
        let frame = zstd::bulk::compress(&plain, LEVEL).map_err(|e| format!("{rel}: {e}"))?;
        index_files.push(json!({
            "path": rel,
            "offset": data.len(),
            "length": frame.len(),
            "size": plain.len(),
        }));
        data.extend_from_slice(&frame);
    }
    let index = json!({
        "source": "https://github.com/intel/perfmon",
        "commit": commit,
        "license": "BSD-3-Clause",
        "mapfile": mapfile,
        "files": index_files,
    });
    let index = serde_json::to_vec(&index).map_err(|e| e.to_string())?;
    let mut out = b"pmx-tables 1\n".to_vec();
    out.extend_from_slice(&(index.len() as u32).to_le_bytes());
    out.extend_from_slice(&index);
    out.extend_from_slice(&data);
    Ok(out)
}

#[allow(dead_code)]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, commit, out] = args.as_slice() else {
        eprintln!("usage: intel_tables PERFMON_DIR COMMIT OUT");
        std::process::exit(2);
    };
    if commit.len() != 40 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        eprintln!("intel_tables: COMMIT must be the checkout's 40-digit commit");
        std::process::exit(2);
    }
    match generate(Path::new(dir), commit) {
        Ok(bytes) => {
            if let Err(e) = std::fs::write(out, &bytes) {
                eprintln!("intel_tables: {out}: {e}");
                std::process::exit(1);
            }
            eprintln!("intel_tables: wrote {out} ({} bytes)", bytes.len());
        }
        Err(e) => {
            eprintln!("intel_tables: {e}");
            std::process::exit(1);
        }
    }
}
