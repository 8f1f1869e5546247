//! PLT entries and symbol bounds, against objdump: every `<NAME@plt>`
//! label objdump prints in `.plt`, `.plt.sec` and `.plt.got` is the
//! symbol pmx finds at that address and through the whole entry; PLT0 is
//! `.plt`; the symbol before the PLT (`_init`, zero-sized) does not reach
//! into it. Programs built here three ways (lazy binding, `-z now`, the
//! IBT layout with `.plt.sec`) and the system's own libraries.

use pmx_symbols::demangle::demangle;
use pmx_symbols::elf::ElfFile;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROGRAM: &str = r#"
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    /* strlen's address is taken: its calls go through .plt.got */
    size_t (*f)(const char *) = strlen;
    puts(argv[0]);
    char *p = malloc(16);
    free(p);
    return (int)f(argv[0]) + (int)strlen(argv[0]);
}
"#;

/// objdump's PLT labels of `bin`: (address, name).
fn objdump_plt(bin: &Path) -> Option<Vec<(u64, String)>> {
    let o = Command::new("objdump")
        .args(["-d", "-j", ".plt", "-j", ".plt.sec", "-j", ".plt.got"])
        .arg(bin)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&o.stdout);
    let mut out = Vec::new();
    for line in text.lines() {
        // `0000000000001030 <puts@plt>:`
        let Some((addr, rest)) = line.split_once(" <") else {
            continue;
        };
        let Some(name) = rest.strip_suffix(">:") else {
            continue;
        };
        if name.contains("@plt-0x") || !name.ends_with("@plt") {
            continue;
        }
        if let Ok(a) = u64::from_str_radix(addr.trim(), 16) {
            out.push((a, name.to_string()));
        }
    }
    Some(out)
}

fn check(bin: &Path) -> usize {
    let Some(labels) = objdump_plt(bin) else {
        pmx_testkit::skip("no objdump (binutils)");
        return 0;
    };
    let elf = ElfFile::open(bin).unwrap();
    let name_at = |a: u64| elf.lookup(a).map(|i| &elf.symbols()[i]);
    for (addr, want) in &labels {
        let got = name_at(*addr)
            .unwrap_or_else(|| panic!("{}: nothing at {addr:#x} ({want})", bin.display()));
        // An IRELATIVE slot: objdump writes `*ABS*+0xADDEND@plt`, pmx the
        // IFUNC symbol at the addend when the binary names one.
        if want.starts_with("*ABS*+") {
            assert!(
                got.name.ends_with("@plt"),
                "{}: {addr:#x}: {got:?}",
                bin.display()
            );
        } else {
            // objdump's name is versioned (`memcpy@GLIBC_2.14@plt`) only
            // where the symbol table's is.
            let plain = want.split('@').next().unwrap();
            assert_eq!(
                got.name.split('@').next().unwrap(),
                plain,
                "{}: {addr:#x}",
                bin.display()
            );
        }
        assert_eq!(got.start, *addr, "{}: {want}", bin.display());
        // The whole entry is the stub's, and nothing past it.
        assert!(
            got.end - got.start == 8 || got.end - got.start == 16,
            "{got:?}"
        );
        assert_eq!(name_at(got.end - 1).map(|s| s.start), Some(*addr));
    }
    // PLT0 is `.plt`, and the symbol before it does not reach into it.
    if let Some(plt0) = elf.symbols().iter().find(|s| s.name == ".plt") {
        assert_eq!(name_at(plt0.start).unwrap().name, ".plt");
        if let Some(before) = elf.symbols().iter().rev().find(|s| s.start < plt0.start) {
            assert!(
                before.end <= plt0.start,
                "{} reaches into the PLT: {before:?}",
                bin.display()
            );
        }
    }
    labels.len()
}

#[test]
fn plt_entries_are_objdumps_in_programs_built_three_ways() {
    if !pmx_testkit::cc::require() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for (name, flags) in [
        ("lazy", &["-O0", "-Wl,-z,lazy"][..]),
        ("now", &["-O0", "-Wl,-z,now"][..]),
        ("ibt", &["-O0", "-fcf-protection=full", "-Wl,-z,ibtplt"][..]),
    ] {
        let bin = match pmx_testkit::cc::compile(dir.path(), name, PROGRAM, flags) {
            Ok(b) => b,
            Err(e) => {
                pmx_testkit::skip(format!("{name}: {e}"));
                continue;
            }
        };
        let n = check(&bin);
        let elf = ElfFile::open(&bin).unwrap();
        let names: Vec<&str> = elf.symbols().iter().map(|s| s.name.as_str()).collect();
        for want in ["puts@plt", "strlen@plt", "free@plt"] {
            assert!(names.contains(&want), "{name}: no {want} in {names:?}");
        }
        assert!(n >= 3 || n == 0, "{name}: {n} labels");
        seen += n;
    }
    eprintln!("{seen} PLT entries checked against objdump");
}

#[test]
fn plt_entries_are_objdumps_in_the_systems_libraries() {
    let libs: Vec<PathBuf> = [
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
        "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0",
        "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
        "/usr/bin/python3.11",
    ]
    .iter()
    .map(PathBuf::from)
    .filter(|p| p.exists())
    .collect();
    if libs.is_empty() {
        pmx_testkit::skip("none of the x86-64 Debian libraries is here");
        return;
    }
    for lib in &libs {
        let n = check(lib);
        eprintln!("{}: {n} PLT entries agree with objdump", lib.display());
    }
}

/// A C++ name in the PLT is demangled as perf prints it, with its suffix.
#[test]
fn plt_names_demangle_with_their_suffix() {
    assert_eq!(
        demangle("_ZSt29_Rb_tree_insert_and_rebalancebPSt18_Rb_tree_node_baseS0_RS_@plt"),
        "std::_Rb_tree_insert_and_rebalance@plt"
    );
    assert_eq!(demangle("_Znwm@plt"), "operator new@plt");
}
