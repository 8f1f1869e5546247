//! Write one mutant of the fault campaign to a file, to replay a case by
//! hand (docs/RELIABILITY.md, "To replay a failing case"):
//!
//! ```text
//! cargo run -q -p pmx-testkit --example mutant -- perfdata SOURCE SEED OUT
//! cargo run -q -p pmx-testkit --example mutant -- text SOURCE SEED OUT
//! cargo run -q -p pmx-testkit --example mutant -- elf:.debug_info,.debug_line BINARY SEED OUT
//! cargo run -q -p pmx-testkit --example mutant -- answers BUILDID.dwarf SEED OUT
//! ```
//!
//! SEED is the mutant's own seed as the failure line prints it
//! (`… seed 1050000064 (…)`); the line printed is what was done to the
//! bytes, the same words as the failure line's when SOURCE is the file
//! the campaign mutated. `elf:SECTIONS` damages an ELF file inside the
//! sections listed (comma-separated) as the DWARF categories do
//! (`faults_types.rs`: `SECTIONS`, `LINE_SECTIONS`); `answers` a file of
//! DWARF answers pmx kept (`faults_answers.rs`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [kind, source, seed, out] = args.as_slice() else {
        eprintln!("usage: mutant perfdata|text|answers|elf:SECTION,… SOURCE SEED OUT");
        return ExitCode::from(2);
    };
    let Ok(seed) = seed.parse::<u64>() else {
        eprintln!("mutant: '{seed}' is not a seed (a whole number)");
        return ExitCode::from(2);
    };
    let original = match std::fs::read(source) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("mutant: {source}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let m = match kind.as_str() {
        "perfdata" => pmx_testkit::mutate::perfdata(&original, seed),
        "text" => pmx_testkit::mutate::text(&original, seed),
        "answers" => pmx_testkit::answers::mutate(&original, seed),
        _ if kind.starts_with("elf:") => {
            let sections: Vec<&str> = kind["elf:".len()..].split(',').collect();
            pmx_testkit::mutate::elf(&original, &sections, seed)
        }
        _ => {
            eprintln!("mutant: '{kind}' is not a kind: perfdata, text, answers or elf:SECTIONS");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = std::fs::write(out, &m.bytes) {
        eprintln!("mutant: {out}: {e}");
        return ExitCode::FAILURE;
    }
    println!("{}", m.what);
    ExitCode::SUCCESS
}
