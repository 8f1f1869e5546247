//! Regenerate pmx's built-in AMD tables (`crates/pmx-events/data/amd/zenN.tsv`)
//! from the installed libpfm4 (Zen 1–4) and `zen5.facts` (Zen 5); see
//! `pmx_events::amd_builtin::generate`.
//!
//! ```text
//! cargo run -p pmx-events --example amd_builtin_gen [-- --check] [DIR]
//! ```
//!
//! `--check` writes nothing and exits 1 when a table differs.

use pmx_events::amd_builtin::generate;
use std::path::PathBuf;

fn main() {
    let mut check = false;
    let mut dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/amd");
    for a in std::env::args().skip(1) {
        if a == "--check" {
            check = true;
        } else {
            dir = PathBuf::from(a);
        }
    }
    let tables = match generate::all() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("amd_builtin_gen: {e}");
            std::process::exit(2);
        }
    };
    let mut differ = false;
    for (zen, text, refused) in tables {
        for r in refused {
            eprintln!("{}: left out: {r}", zen.code());
        }
        let path = dir.join(format!("{}.tsv", zen.code()));
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        let rows = text.lines().filter(|l| !l.starts_with('#')).count();
        if old == text {
            println!("{}: unchanged ({rows} events)", path.display());
            continue;
        }
        differ = true;
        if check {
            println!("{}: differs", path.display());
        } else if let Err(e) = std::fs::write(&path, &text) {
            eprintln!("amd_builtin_gen: {}: {e}", path.display());
            std::process::exit(2);
        } else {
            println!("{}: written ({rows} events)", path.display());
        }
    }
    if check && differ {
        std::process::exit(1);
    }
}
