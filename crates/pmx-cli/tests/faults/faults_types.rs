//! Fault campaign, the DWARF data-type reader (issue 45, item 2;
//! `pmx-symbols/src/elf/types.rs`, `report --sort type,typeoff`): a small
//! C program built here with `gcc -g` (DWARF 5, and `-gdwarf-4` with
//! `-O2`'s location lists) and recorded once with `record -d -e
//! page-faults -c 1`; its binary is then damaged in `.debug_info` and
//! `.debug_abbrev` (`pmx_testkit::mutate::elf`: LEB128 bytes and offsets
//! made extreme, bits flipped, ranges zeroed or copied over others so
//! that references point back at themselves, the section's size in its
//! header changed) and put where `--symfs` finds it, and the intact
//! recording is reported with the keys `type,typeoff`. Expected of every
//! case: no panic, no hang; a report with every sample of the intact
//! binary's report (a damaged type is `(unknown)`, never a lost sample),
//! or an error that names the binary. Every 25th case runs the `pmx`
//! binary itself (`pmx report --sort type,typeoff --symfs`).
//!
//! Since session 23, also the line tables and inline frames
//! (`report -g --inline --lines`) of a two-unit program built with
//! compressed DWARF, its debug sections damaged the same way
//! ([`LINE_SECTIONS`]); every 10th of those cases runs `pmx report
//! --stdio -g --inline`.
//!
//! `cargo test` runs 3 cases per binary; `PMX_FAULTS_LONG=1`
//! (bench/faults.sh) 200. A failure prints the binary and the seed:
//! `pmx_testkit::mutate::elf(&original, &[".debug_info", ".debug_abbrev"],
//! seed)` gives the same bytes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::faults_support::*;
use pmx_precise::mem;
use pmx_symbols::{BinaryCache, SymbolOptions};
use pmx_testkit::{cc, mutate};

/// Types of every shape the reader follows: a struct array, nested
/// structs, a union, a typedef chain, a pointer to a pointer, a list that
/// points at its own type, a two-dimensional array, bit-fields.
const SRC: &str = "#include <stdlib.h>\n\
    struct inner { short a; short b[3]; };\n\
    union word { long l; struct inner in; };\n\
    typedef union word word_t; typedef word_t cell_t;\n\
    struct node { struct node *next; cell_t c; unsigned f : 3, g : 5; };\n\
    struct point { long x; int y; int z; struct inner pos; char tag[16]; };\n\
    struct point pts[8192];\n\
    cell_t grid[64][64];\n\
    __attribute__((noipa)) void touch(struct point *p) { p->pos.b[1] = 7; }\n\
    __attribute__((noipa)) void link(struct node **pp, struct node *n) { n->next = *pp; n->c.in.a = 1; *pp = n; }\n\
    int main(void) {\n\
      for (int i = 0; i < 8192; i++) pts[i].z = i;\n\
      for (int i = 0; i < 64; i++) grid[i][i].in.b[2] = (short)i;\n\
      struct point *h = malloc(8192 * sizeof *h);\n\
      for (int i = 0; i < 8192; i += 64) touch(&h[i]);\n\
      struct node *list = 0, *ns = calloc(4096, sizeof *ns);\n\
      for (int i = 0; i < 4096; i += 32) link(&list, &ns[i]);\n\
      return pts[5].z == 5 && h[0].pos.b[1] == 7 && list ? 0 : 1;\n\
    }\n";

/// The sort keys of the case.
const KEYS: &str = "type,typeoff";

/// The damaged sections.
const SECTIONS: &[&str] = &[".debug_info", ".debug_abbrev"];

/// A binary, its bytes and its recording.
pub(crate) struct Source {
    pub(crate) name: String,
    pub(crate) bin: PathBuf,
    bytes: Vec<u8>,
    pub(crate) data: PathBuf,
}

/// The programs, each recorded once (none when there is no compiler or
/// `record -d` fails here: a skip line says so).
fn sources(dir: &Path) -> Vec<Source> {
    if !cc::require() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (name, flags) in [
        ("types-O1-g", &["-O1", "-g"][..]),
        ("types-O2-gdwarf-4", &["-O2", "-gdwarf-4"][..]),
    ] {
        let bin = match cc::compile(dir, name, SRC, flags) {
            Ok(b) => b,
            Err(e) => {
                pmx_testkit::skip(format_args!("{name}: {e}"));
                continue;
            }
        };
        let data = dir.join(format!("{name}.data"));
        let o = Command::new(PMX)
            .args(["record", "-q", "-d", "-e", "page-faults", "-c", "1", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&bin)
            .output()
            .unwrap();
        if !o.status.success() {
            pmx_testkit::skip(format_args!(
                "pmx record -d of {name}: {}",
                pmx_testkit::text(&o.stderr)
            ));
            continue;
        }
        let bytes = std::fs::read(&bin).unwrap();
        let name = name.to_string();
        out.push(Source {
            name,
            bin,
            bytes,
            data,
        });
    }
    out
}

/// The memory report of `data` with binaries under `symfs` and a binary
/// cache of its own (the shared one would answer a mutant with the
/// intact binary's tables: same build id, same size): (samples, samples
/// in the rows, the rows' texts).
fn types_report(data: &Path, symfs: &Path) -> Result<(u64, u64, Vec<String>), String> {
    let keys = mem::keys::parse(KEYS).unwrap();
    let mut m = mem::MemOptions::new(data.to_path_buf(), keys, KEYS.into());
    m.symfs = Some(symfs.to_path_buf());
    m.symbols = SymbolOptions {
        binaries: Arc::new(BinaryCache::new(16 << 20, None)),
        ..SymbolOptions::default()
    };
    let r = mem::mem_report(&m).map_err(|e| e.to_string())?;
    let mut sink = Vec::new();
    mem::table::print(&mut sink, &r, Default::default()).map_err(|e| e.to_string())?;
    let samples = r.events.iter().map(|e| e.samples).sum();
    let rows = (r.events.iter().flat_map(|e| &e.rows))
        .map(|r| r.samples)
        .sum();
    let texts = (r.events.iter().flat_map(|e| &e.rows))
        .map(|row| {
            (0..r.sort.len())
                .map(|i| r.cell(row, i))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    Ok((samples, rows, texts))
}

#[test]
fn damaged_dwarf_types_give_unknown_or_an_error_naming_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let srcs = sources(dir.path());
    if srcs.is_empty() {
        return;
    }
    let symfs = dir.path().join("symfs");
    let mut t = Tally::new("damaged DWARF → report --sort type,typeoff");
    let base = base_seed();
    // Mutants whose report differs from the intact binary's (the damage
    // reached the types read).
    let mut changed = 0;
    for (i, s) in srcs.iter().enumerate() {
        // The binary as --symfs finds it: SYMFS/its path.
        let at = symfs.join(s.bin.strip_prefix("/").unwrap());
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(&at, &s.bytes).unwrap();
        let (samples, _, intact) = types_report(&s.data, &symfs)
            .unwrap_or_else(|e| panic!("{}: the intact binary: {e}", s.name));
        let named = intact.iter().any(|r| r.contains("struct point"));
        assert!(named, "{}: no row names struct point: {intact:?}", s.name);
        for k in 0..cases(3, 200) {
            let seed = base + ((i + 80) * 1_000_000 + k) as u64;
            let m = mutate::elf(&s.bytes, SECTIONS, seed);
            assert!(!m.what.is_empty(), "{}: no {SECTIONS:?} to damage", s.name);
            std::fs::write(&at, &m.bytes).unwrap();
            let case = format!("{} seed {seed} ({})", s.name, m.what);
            let bin_name = s.name.clone();
            t.tried += 1;
            if k % 25 == 24 {
                let mut c = Command::new(PMX);
                c.args(["report", "--stdio", "--sort", KEYS, "-i"])
                    .arg(&s.data)
                    .arg("--symfs")
                    .arg(&symfs);
                judge_cli(
                    &mut t,
                    &case,
                    run_bounded(&mut c, Duration::from_secs(30)),
                    &bin_name,
                );
                continue;
            }
            let (data, sym) = (s.data.clone(), symfs.clone());
            let done = bounded(Duration::from_secs(30), move || types_report(&data, &sym));
            changed += usize::from(judge_report(
                &mut t, &case, done, samples, &intact, &bin_name,
            ));
        }
    }
    eprintln!("reports that differ from the intact binary's: {changed}");
    t.finish();
}

/// Session 23: the line tables and inline frames read one unit at a time
/// (`pmx-symbols/src/elf/lazy.rs`: units found through `.debug_aranges`,
/// compressed sections inflated partially). Two units, each with
/// functions inlined into a hot loop; built with compressed DWARF
/// (`-gz`), recorded with `--call-graph dwarf` (inline frames are added
/// to unwound chains only). The units' sections other than the stack
/// unwinding's (`.eh_frame` stays whole) are damaged: aranges pointing
/// past their unit, compressed streams cut short or their header's size
/// made extreme, abbreviation codes out of range.
const LINES_A: &str = "#include <stdlib.h>\n\
    volatile unsigned long sink;\n\
    extern unsigned long other(unsigned long x);\n\
    static inline __attribute__((always_inline)) unsigned long mix(unsigned long x) { return (x * 2654435761u) ^ (x >> 7); }\n\
    static inline __attribute__((always_inline)) unsigned long step(unsigned long x) { for (int i = 0; i < 8; i++) x = mix(x + i); return x; }\n\
    __attribute__((noinline)) unsigned long hot(unsigned long n) { unsigned long x = n; for (unsigned long i = 0; i < n; i++) x = other(step(x)); return x; }\n\
    int main(int argc, char **argv) { unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 8000000UL; sink = hot(n); return 0; }\n";

/// The second unit (its own aranges, line program and inlined function).
const LINES_B: &str = "static inline __attribute__((always_inline)) unsigned long fold(unsigned long x) { return (x << 3) - (x >> 5); }\n\
    __attribute__((noinline)) unsigned long other(unsigned long x) { for (int i = 0; i < 4; i++) x = fold(x + i); return x; }\n";

/// The damaged sections: every one the line and inline readers read.
const LINE_SECTIONS: &[&str] = &[
    ".debug_aranges",
    ".debug_info",
    ".debug_abbrev",
    ".debug_line",
    ".debug_str",
    ".debug_line_str",
    ".debug_rnglists",
    ".debug_ranges",
];

/// The two-unit programs (DWARF 5 and 4, compressed), each recorded once
/// with `--call-graph dwarf`.
pub(crate) fn line_sources(dir: &Path) -> Vec<Source> {
    if !cc::require() {
        return Vec::new();
    }
    let b = dir.join("lines_b.c");
    std::fs::write(&b, LINES_B).unwrap();
    let b = b.to_str().unwrap();
    let mut out = Vec::new();
    for (name, debug) in [("lines-O2-gz", "-g"), ("lines-O2-gdwarf-4-gz", "-gdwarf-4")] {
        let flags = ["-O2", debug, "-gz", "-fomit-frame-pointer", b];
        let bin = match cc::compile(dir, name, LINES_A, &flags) {
            Ok(b) => b,
            Err(e) => {
                pmx_testkit::skip(format_args!("{name}: {e}"));
                continue;
            }
        };
        let data = dir.join(format!("{name}.data"));
        let o = Command::new(PMX)
            .args(["record", "-q", "--call-graph", "dwarf", "-e", "cpu-clock"])
            .args(["-F", "1000", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&bin)
            .output()
            .unwrap();
        if !o.status.success() {
            pmx_testkit::skip(format_args!(
                "pmx record --call-graph dwarf of {name}: {}",
                pmx_testkit::text(&o.stderr)
            ));
            continue;
        }
        let bytes = std::fs::read(&bin).unwrap();
        out.push(Source {
            name: name.to_string(),
            bin,
            bytes,
            data,
        });
    }
    out
}

/// `report -g --children --inline --lines` of `data` with binaries under
/// `symfs` and a binary cache of its own: (samples, self samples of the
/// rows, the table and JSON as text).
fn lines_report(data: &Path, symfs: &Path) -> Result<(u64, u64, String), String> {
    let opts = pmx_profile::ReportOptions {
        stacks: true,
        graphs: true,
        children: true,
        lines: true,
        inline: true,
        symfs: Some(symfs.to_path_buf()),
        symbols: SymbolOptions {
            binaries: Arc::new(BinaryCache::new(16 << 20, None)),
            ..SymbolOptions::default()
        },
        ..pmx_profile::ReportOptions::for_input(data)
    };
    let r = pmx_profile::report(&opts, &mut |_, _| {}).map_err(|e| e.to_string())?;
    let mut sink = Vec::new();
    pmx_profile::render::table(&mut sink, &r).map_err(|e| e.to_string())?;
    let json = pmx_profile::render::json(&r).to_string();
    let samples = r.profile.events.iter().map(|e| e.samples).sum();
    let rows = (r.profile.events.iter().flat_map(|e| &e.rows))
        .map(|r| r.samples)
        .sum();
    let text = format!("{}\n{json}", String::from_utf8_lossy(&sink));
    Ok((samples, rows, text))
}

/// A CLI report of a damaged binary: a hang, a panic, a report, or a
/// refusal that names the binary.
fn judge_cli(t: &mut Tally, case: &str, run: Option<Run>, bin_name: &str) {
    match run {
        None => t.hang(case),
        Some(r) if r.panicked() || r.crashed() => t.panic(case, &r.stderr),
        Some(r) if r.status.success() => t.accepted += 1,
        Some(r) => {
            t.refused += 1;
            if !r.stderr.contains(bin_name) {
                t.unclear(case, &r.stderr);
            }
        }
    }
}

/// An in-process report of a damaged binary: every sample in the rows or
/// an error naming the binary; true when the report differs from the
/// intact binary's (the damage reached what is printed).
fn judge_report<T: PartialEq>(
    t: &mut Tally,
    case: &str,
    done: Outcome<Result<(u64, u64, T), String>>,
    samples: u64,
    intact: &T,
    bin_name: &str,
) -> bool {
    match done {
        Outcome::Done(Ok((n, rows, out))) => {
            t.accepted += 1;
            if n != samples || rows != samples {
                let got = format!("{n} samples, {rows} in rows; intact: {samples}");
                t.lost(case, &got);
            }
            return out != *intact;
        }
        Outcome::Done(Err(msg)) => {
            t.refused += 1;
            if !msg.contains(bin_name) {
                t.unclear(case, &msg);
            }
        }
        Outcome::Panic(p) => t.panic(case, &p),
        Outcome::Hang => t.hang(case),
    }
    false
}

/// `pmx report ARGS -i DATA --symfs SYMFS`, bounded, with a cache
/// directory of its own: the DWARF answers pmx keeps per build id would
/// otherwise answer a mutant (same build id, same size) with what an
/// earlier case's binary said.
fn pmx_report(args: &[&str], data: &Path, symfs: &Path) -> Option<Run> {
    let cache = tempfile::tempdir().ok()?;
    let mut c = Command::new(PMX);
    c.arg("report").args(args).arg("-i").arg(data);
    c.arg("--symfs")
        .arg(symfs)
        .env("XDG_CACHE_HOME", cache.path());
    run_bounded(&mut c, Duration::from_secs(30))
}

#[test]
fn damaged_line_tables_and_inline_frames_give_a_report_or_an_error_naming_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let srcs = line_sources(dir.path());
    if srcs.is_empty() {
        return;
    }
    let symfs = dir.path().join("symfs");
    let mut t = Tally::new("damaged DWARF lines → report -g --inline --lines");
    let base = base_seed();
    let mut changed = 0;
    for (i, s) in srcs.iter().enumerate() {
        let at = symfs.join(s.bin.strip_prefix("/").unwrap());
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(&at, &s.bytes).unwrap();
        let (samples, _, intact) = lines_report(&s.data, &symfs)
            .unwrap_or_else(|e| panic!("{}: the intact binary: {e}", s.name));
        // The intact binary reaches what is damaged: inline frames in
        // both units, and source lines.
        let folded = pmx_report(&["--folded", "--inline"], &s.data, &symfs).unwrap();
        for f in ["step (inlined)", "fold (inlined)"] {
            assert!(
                folded.stdout.contains(f),
                "{}: no {f}: {}",
                s.name,
                folded.stdout
            );
        }
        assert!(
            intact.contains(".c:"),
            "{}: no source line: {intact}",
            s.name
        );
        for k in 0..cases(3, 200) {
            // After the other sources (session 23): seeds of their own.
            let seed = base + ((i + 90) * 1_000_000 + k) as u64;
            let m = mutate::elf(&s.bytes, LINE_SECTIONS, seed);
            assert!(!m.what.is_empty(), "{}: no debug section to damage", s.name);
            std::fs::write(&at, &m.bytes).unwrap();
            let case = format!("{} seed {seed} ({})", s.name, m.what);
            let bin_name = s.name.clone();
            t.tried += 1;
            t.mutant(seed, &at);
            if k % 10 == 9 {
                // perf's call-graph text with inline frames, by the CLI.
                let run = pmx_report(&["--stdio", "-g", "--inline"], &s.data, &symfs);
                judge_cli(&mut t, &case, run, &bin_name);
                continue;
            }
            let (data, sym) = (s.data.clone(), symfs.clone());
            let done = bounded(Duration::from_secs(30), move || lines_report(&data, &sym));
            changed += usize::from(judge_report(
                &mut t, &case, done, samples, &intact, &bin_name,
            ));
        }
    }
    eprintln!("reports that differ from the intact binary's: {changed}");
    t.finish();
}
