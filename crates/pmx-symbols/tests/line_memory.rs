//! The binary cache's bound is honest: what an [`ElfFile`] says it holds
//! ([`ElfFile::held_bytes`], what `elf::cache` evicts by) against the
//! heap it really holds after its symbols, source lines and inline frames
//! were looked up — every function symbol's start and middle, as a long
//! `pmx serve` ends up asking of a binary it keeps.
//!
//! The heap is counted exactly: this test binary's global allocator adds
//! up the bytes alive, and this file has a single test, so nothing else
//! allocates while it measures. Binaries: a C program built with `-g -O2`
//! (inlined functions), this test program (a Rust debug build, line
//! tables), pmx's debug build when there is one, and the C library read
//! through its separate debug file when installed (compressed DWARF).
//!
//! The test fails when `held_bytes` is below the heap by more than
//! [`UNDER`] or above it by more than [`OVER`].

use pmx_symbols::elf::ElfFile;
use pmx_symbols::Demangle;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; the
// counter only adds up the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        // SAFETY: `p` came from this allocator with layout `l`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new as isize - l.size() as isize, Ordering::Relaxed);
        // SAFETY: `p` came from this allocator with layout `l`.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// `held_bytes` may be this many times below the heap the binary holds…
const UNDER: f64 = 1.5;
/// …or this many times above it.
const OVER: f64 = 1.5;
/// Besides, a file may differ by this many bytes (`held_bytes` counts
/// 64 KiB of a mapped file's headers; a tiny program holds less).
const SLACK: usize = 64 << 10;

/// A C program of many functions, each with a structure type and a
/// function inlined into it, so that its DWARF (one unit, full debug
/// info) has a long line program, types, subprograms and inlined
/// subroutines.
fn c_source(functions: usize) -> String {
    let mut s = String::from("#include <stdio.h>\n#include <stdlib.h>\n");
    for i in 0..functions {
        s += &format!(
            "struct s{i} {{ int a; long b[{n}]; double c; }};\n\
             static inline long in{i}(struct s{i} *p, int x) {{ p->b[x % {n}] += x; return p->b[(x * 7) % {n}] + p->a; }}\n\
             __attribute__((noinline)) long f{i}(int n) {{ struct s{i} v = {{0}}; long t = 0;\n\
               for (int k = 0; k < n; k++) t += in{i}(&v, k) * (k & {m});\n\
               return t + (long)v.c; }}\n",
            n = i % 13 + 2,
            m = i % 7 + 1,
        );
    }
    s += "int main(int c, char **v) { int n = c > 1 ? atoi(v[1]) : 10; long t = 0;\n";
    for i in 0..functions {
        s += &format!("  t += f{i}(n);\n");
    }
    s + "  printf(\"%ld\\n\", t); return 0; }\n"
}

struct Measured {
    name: String,
    heap: isize,
    held: usize,
    after_symbols: (isize, usize),
    after_first: (isize, usize),
    after_some: (isize, usize),
    after_lines: (isize, usize),
    lookups: usize,
    lines_found: usize,
    frames: usize,
}

/// Open `path`, look up every function symbol's start and middle (its
/// line, then its inline frames) and count the heap the file holds then.
fn measure(path: &Path) -> Option<Measured> {
    // The addresses are taken from another instance, dropped before the
    // count starts (the vector itself is the test's, not the file's).
    let addresses: Vec<u64> = {
        let f = ElfFile::open(path).ok()?;
        (f.symbols().iter())
            .flat_map(|s| [s.start, s.start + (s.end - s.start) / 2])
            .collect()
    };
    let base = LIVE.load(Ordering::Relaxed);
    let f = ElfFile::open(path).ok()?;
    let _ = f.symbols();
    let after_symbols = (LIVE.load(Ordering::Relaxed) - base, f.held_bytes());
    let mut lines_found = 0;
    // The first lookup makes addr2line's context: every unit's header.
    if let Some(&a) = addresses.first() {
        lines_found += usize::from(f.line(a).is_some());
    }
    let after_first = (LIVE.load(Ordering::Relaxed) - base, f.held_bytes());
    // A fiftieth of the addresses, as a profile of a few hot places asks.
    for &a in addresses.iter().step_by(50) {
        lines_found += usize::from(f.line(a).is_some());
    }
    let after_some = (LIVE.load(Ordering::Relaxed) - base, f.held_bytes());
    for &a in &addresses {
        lines_found += usize::from(f.line(a).is_some());
    }
    let after_lines = (LIVE.load(Ordering::Relaxed) - base, f.held_bytes());
    let mut frames = 0;
    for &a in &addresses {
        frames += f.inline_chain(a, Demangle::Short).len();
    }
    let heap = LIVE.load(Ordering::Relaxed) - base;
    let held = f.held_bytes();
    drop(f);
    Some(Measured {
        name: path.display().to_string(),
        heap,
        held,
        after_symbols,
        after_first,
        after_some,
        after_lines,
        lookups: addresses.len(),
        lines_found,
        frames,
    })
}

fn mib(b: isize) -> f64 {
    b as f64 / 1048576.0
}

fn pair((heap, held): (isize, usize)) -> String {
    format!("{:.2}/{:.2}", mib(heap), mib(held as isize))
}

#[test]
fn held_bytes_bounds_the_heap_after_lines_and_inline_frames() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths: Vec<PathBuf> = Vec::new();
    if pmx_testkit::cc::require() {
        match pmx_testkit::cc::compile(dir.path(), "inl", &c_source(600), &["-g", "-O2"]) {
            Ok(p) => paths.push(p),
            Err(e) => panic!("{e}"),
        }
    }
    paths.push(std::env::current_exe().unwrap());
    let pmx = pmx_testkit::cc::repo().join("target/debug/pmx");
    if pmx.exists() {
        paths.push(pmx);
    } else {
        pmx_testkit::skip("no target/debug/pmx (cargo build -p pmx-cli): not measured");
    }
    let libc = ["/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib64/libc.so.6"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists());
    match libc {
        Some(p) => paths.push(p.to_path_buf()),
        None => pmx_testkit::skip("no libc.so.6 at the usual paths"),
    }
    let mut bad = Vec::new();
    for p in &paths {
        let Some(m) = measure(p) else {
            pmx_testkit::skip(format!("{}: cannot be opened", p.display()));
            continue;
        };
        let ratio = m.heap as f64 / m.held.max(1) as f64;
        eprintln!(
            "{}: {} addresses ({} lines, {} inline frames); heap {:.2} MiB, held_bytes {:.2} MiB: \
             heap/held {ratio:.2}; heap/held in MiB after the symbols {}, the first lookup {}, \
             a fiftieth of the lines {}, all lines {}",
            m.name,
            m.lookups,
            m.lines_found,
            m.frames,
            mib(m.heap),
            mib(m.held as isize),
            pair(m.after_symbols),
            pair(m.after_first),
            pair(m.after_some),
            pair(m.after_lines),
        );
        let (heap, held) = (m.heap.max(0) as f64, m.held as f64);
        if heap > held * UNDER + SLACK as f64 || held > heap * OVER + SLACK as f64 {
            bad.push(format!("{}: heap/held_bytes {ratio:.2}", m.name));
        }
        // On the way, held_bytes never falls short by more either.
        for (stage, (heap, held)) in [
            ("the symbols", m.after_symbols),
            ("the first lookup", m.after_first),
            ("a fiftieth of the lines", m.after_some),
            ("all lines", m.after_lines),
        ] {
            if heap.max(0) as f64 > held as f64 * UNDER + SLACK as f64 {
                bad.push(format!(
                    "{}: after {stage}: heap {heap} bytes, held_bytes {held}",
                    m.name
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "held_bytes is not within {UNDER}x below / {OVER}x above the heap (± {SLACK} bytes):\n{}",
        bad.join("\n")
    );
}
