//! `pmx-archcheck [ROOT] [--write-debts]`: measures the workspace at ROOT
//! (default: the current directory) against the limits of ARCHITECTURE.md
//! and the debts in `crates/pmx-archcheck/debts.txt`; prints the figures
//! and exits 1 on a breach no debt allows or on a debt already paid.
//! `--write-debts` rewrites the debts file to exactly the current breaches
//! (for paying debts off; never to record a new one).

use pmx_archcheck::{check, format_debts, judge, parse_debts, Limits};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut root = PathBuf::from(".");
    let mut write = false;
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--write-debts" => write = true,
            "-h" | "--help" => {
                println!("usage: pmx-archcheck [ROOT] [--write-debts]");
                return ExitCode::SUCCESS;
            }
            _ => root = PathBuf::from(a),
        }
    }
    let limits = Limits::default();
    let figures = match check(&root, &limits) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("pmx-archcheck: {e}");
            return ExitCode::from(2);
        }
    };
    let debts_path = root.join("crates/pmx-archcheck/debts.txt");
    if write {
        if let Err(e) = std::fs::write(&debts_path, header() + &format_debts(&figures.findings)) {
            eprintln!("pmx-archcheck: {}: {e}", debts_path.display());
            return ExitCode::from(2);
        }
    }
    let debts = match std::fs::read_to_string(&debts_path)
        .map_err(|e| pmx_archcheck::Error(format!("{}: {e}", debts_path.display())))
        .and_then(|t| parse_debts(&t))
    {
        Ok(d) => d,
        Err(e) => {
            eprintln!("pmx-archcheck: {e}");
            return ExitCode::from(2);
        }
    };
    println!(
        "pmx-cli/src: {} lines (limit {}); largest: {}",
        figures.cli_total,
        limits.cli_total,
        figures
            .cli_files
            .iter()
            .take(3)
            .map(|(p, n)| format!("{p} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "{} functions measured (limit {} lines), {} modules followed",
        figures.functions, limits.fn_lines, figures.modules
    );
    let total: usize = figures.crate_lines.iter().map(|(_, l)| l).sum();
    println!(
        "largest crates of {total} source lines (limit {}%): {}",
        limits.crate_share,
        (figures.crate_lines.iter().take(3))
            .map(|(c, n)| format!("{c} {n} ({:.1}%)", 100.0 * *n as f64 / total.max(1) as f64))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let verdict = judge(&figures.findings, &debts);
    if !verdict.allowed.is_empty() {
        println!("{} recorded debts still open:", verdict.allowed.len());
        for f in &verdict.allowed {
            println!("  debt: {f}");
        }
    }
    for d in &verdict.paid {
        println!("paid off, remove from debts.txt: {} {}", d.size, d.key);
    }
    for v in &verdict.violations {
        println!("BREACH: {v}");
    }
    if verdict.passed() {
        println!("ok");
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn header() -> String {
    "# Breaches of ARCHITECTURE.md's limits not yet paid off: `SIZE KEY` per line.\n\
     # A debt allows its breach up to SIZE. This list only shrinks: fix a new\n\
     # breach instead of adding it here. `cargo run -p pmx-archcheck` checks.\n"
        .to_string()
}
