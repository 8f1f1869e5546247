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
struct Source {
    name: String,
    bin: PathBuf,
    bytes: Vec<u8>,
    data: PathBuf,
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
                match run_bounded(&mut c, Duration::from_secs(30)) {
                    None => t.hang(&case),
                    Some(r) if r.panicked() || r.crashed() => t.panic(&case, &r.stderr),
                    Some(r) if r.status.success() => t.accepted += 1,
                    Some(r) => {
                        t.refused += 1;
                        if !r.stderr.contains(&bin_name) {
                            t.unclear(&case, &r.stderr);
                        }
                    }
                }
                continue;
            }
            let (data, sym) = (s.data.clone(), symfs.clone());
            match bounded(Duration::from_secs(30), move || types_report(&data, &sym)) {
                Outcome::Done(Ok((n, rows, texts))) => {
                    t.accepted += 1;
                    changed += usize::from(texts != intact);
                    if n != samples || rows != samples {
                        let got = format!("{n} samples, {rows} in rows; intact: {samples}");
                        t.lost(&case, &got);
                    }
                }
                Outcome::Done(Err(msg)) => {
                    t.refused += 1;
                    if !msg.contains(&bin_name) {
                        t.unclear(&case, &msg);
                    }
                }
                Outcome::Panic(p) => t.panic(&case, &p),
                Outcome::Hang => t.hang(&case),
            }
        }
    }
    eprintln!("reports that differ from the intact binary's: {changed}");
    t.finish();
}
