//! No ELF file on this machine crashes the symbol and unwind code (issue
//! 29, item 6): every ELF file under `/usr/bin`, `/usr/lib` and
//! `/usr/lib/debug` (separate debug files included) is opened as `pmx
//! report` opens it — its symbols ([`ElfFile::open`], which also reads
//! the separate debug file by build-id), symbol lookups, file offsets,
//! DWARF lines and inline frames, demangled names, and its unwind tables
//! ([`probe_file`]: `.eh_frame`/`.eh_frame_hdr`, else `.debug_frame` of
//! the file or of its debug file, and a fake stack unwound by framehop)
//! — at a spread of addresses: symbol starts, middles and ends, between
//! and outside symbols, outside the file, 0 and `u64::MAX`.
//!
//! Each file runs under `catch_unwind`: a panic names the file and the
//! sweep goes on; the test fails at the end listing every failing file.
//! A file that takes longer than [`HANG`] stops the test with its name.
//! Memory: the peak RSS of the whole sweep (`VmHWM`, mapped files
//! included) must stay under [`PEAK_RSS_MIB`].
//!
//! `PMX_SWEEP_DIRS` (colon-separated) replaces the directories, e.g. to
//! sweep one directory while fixing a finding. An absent directory is
//! skipped with a message.

use pmx_symbols::demangle::demangle;
use pmx_symbols::elf::ElfFile;
use pmx_symbols::unwind::probe::probe_file;
use pmx_symbols::Demangle;
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

/// A file taking this long is taken for a hang (the whole sweep takes
/// about two minutes on a 2-core machine).
const HANG: Duration = Duration::from_secs(120);

/// The bound on the sweep's peak resident memory (`VmHWM`: heap and the
/// pages of the mapped files): 2 GiB, for up to 4 workers each holding
/// one file, its DWARF sections copied out (decompressed) and addr2line's
/// tables. A Debian machine with the usual packages peaks near 80 MiB.
const PEAK_RSS_MIB: u64 = 2048;

/// Symbols looked up per file (evenly spread over the table), and
/// addresses asked of DWARF (line and inline frames) per file.
const SYMBOL_PROBES: usize = 96;
const DWARF_PROBES: usize = 16;

#[derive(Default, Clone, Copy)]
struct Tally {
    elf: u64,
    opened: u64,
    symbols: u64,
    lookups: u64,
    dwarf: u64,
    lines: u64,
    unwind_tables: u64,
    walks: u64,
    frames: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.elf += o.elf;
        self.opened += o.opened;
        self.symbols += o.symbols;
        self.lookups += o.lookups;
        self.dwarf += o.dwarf;
        self.lines += o.lines;
        self.unwind_tables += o.unwind_tables;
        self.walks += o.walks;
        self.frames += o.frames;
    }
}

#[test]
fn every_elf_file_on_the_machine() {
    let started = Instant::now();
    let dirs: Vec<PathBuf> = match std::env::var("PMX_SWEEP_DIRS") {
        Ok(v) => v
            .split(':')
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .collect(),
        Err(_) => ["/usr/bin", "/usr/lib", "/usr/lib/debug"]
            .iter()
            .map(PathBuf::from)
            .collect(),
    };
    let (files, seen) = elf_files(&dirs);
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| l.to_string()).unwrap_or_default();
        LAST_PANIC
            .with(|p| *p.borrow_mut() = Some(format!("{} at {at}", panic_text(info.payload()))));
    }));
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(2, 4);
    let next = AtomicUsize::new(0);
    let running: Mutex<Vec<Option<(PathBuf, Instant)>>> = Mutex::new(vec![None; workers]);
    let (done_tx, done_rx) = mpsc::channel::<(Tally, Vec<(PathBuf, String)>)>();
    let outcome = std::thread::scope(|s| {
        for w in 0..workers {
            let (files, next, running, done_tx) = (&files, &next, &running, done_tx.clone());
            std::thread::Builder::new()
                .name(format!("sweep-{w}"))
                .stack_size(64 << 20)
                .spawn_scoped(s, move || {
                    let mut tally = Tally::default();
                    let mut failed = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(path) = files.get(i) else { break };
                        running.lock().unwrap()[w] = Some((path.clone(), Instant::now()));
                        match catch_unwind(AssertUnwindSafe(|| sweep_file(path))) {
                            Ok(t) => tally.add(&t),
                            Err(p) => failed.push((
                                path.clone(),
                                LAST_PANIC
                                    .with(|l| l.borrow_mut().take())
                                    .unwrap_or_else(|| panic_text(&*p)),
                            )),
                        }
                        running.lock().unwrap()[w] = None;
                    }
                    done_tx.send((tally, failed)).unwrap();
                })
                .unwrap();
        }
        drop(done_tx);
        watch(&done_rx, &running, workers, started)
    });
    drop(std::panic::take_hook());
    outcome.report(&files, seen, started, &dirs);
}

/// Collect the workers' results; stop the test when a file hangs.
fn watch(
    done_rx: &mpsc::Receiver<(Tally, Vec<(PathBuf, String)>)>,
    running: &Mutex<Vec<Option<(PathBuf, Instant)>>>,
    workers: usize,
    started: Instant,
) -> Outcome {
    let mut out = Outcome::default();
    let mut finished = 0;
    while finished < workers {
        match done_rx.recv_timeout(Duration::from_secs(5)) {
            Ok((t, f)) => {
                out.tally.add(&t);
                out.failed.extend(f);
                finished += 1;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let slots = running.lock().unwrap_or_else(|e| e.into_inner());
                for (path, since) in slots.iter().flatten() {
                    if since.elapsed() > HANG {
                        eprintln!(
                            "HANG: {} still running after {:?} (sweep at {:?})",
                            path.display(),
                            since.elapsed(),
                            started.elapsed()
                        );
                        std::process::exit(1);
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    out
}

#[derive(Default)]
struct Outcome {
    tally: Tally,
    failed: Vec<(PathBuf, String)>,
}

impl Outcome {
    fn report(mut self, files: &[PathBuf], seen: u64, started: Instant, dirs: &[PathBuf]) {
        let t = self.tally;
        let peak = peak_rss_mib();
        let debug = files
            .iter()
            .filter(|p| p.starts_with("/usr/lib/debug"))
            .count();
        eprintln!(
            "sweep of {}: {seen} files seen, {} ELF files ({debug} under /usr/lib/debug), \
             {} opened, {} symbols, {} lookups, {} DWARF lookups ({} with a line), \
             {} with CFI, {} unwinds ({} frames), {} failed, {:.1} s, peak RSS {peak} MiB",
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            t.elf,
            t.opened,
            t.symbols,
            t.lookups,
            t.dwarf,
            t.lines,
            t.unwind_tables,
            t.walks,
            t.frames,
            self.failed.len(),
            started.elapsed().as_secs_f64()
        );
        self.failed.sort();
        let list: Vec<String> = self
            .failed
            .iter()
            .map(|(p, m)| format!("  {}: {m}", p.display()))
            .collect();
        assert!(
            self.failed.is_empty(),
            "{} files crashed the symbol or unwind code:\n{}",
            self.failed.len(),
            list.join("\n")
        );
        assert!(
            peak < PEAK_RSS_MIB,
            "peak RSS {peak} MiB over the bound of {PEAK_RSS_MIB} MiB"
        );
    }
}

/// Every regular ELF file under `dirs` (symbolic links not followed, each
/// inode once), largest first so the workers finish together; and how
/// many regular files were seen.
fn elf_files(dirs: &[PathBuf]) -> (Vec<PathBuf>, u64) {
    let mut inodes = HashSet::new();
    let mut found = Vec::new();
    let mut seen = 0;
    for dir in dirs {
        if !dir.is_dir() {
            pmx_testkit::skip(format!("{} is absent: not swept", dir.display()));
            continue;
        }
        let mut stack = vec![dir.clone()];
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let Ok(m) = e.metadata() else { continue };
                if m.is_dir() {
                    stack.push(e.path());
                } else if m.is_file() && inodes.insert((m.dev(), m.ino())) {
                    seen += 1;
                    if m.len() >= 64 && is_elf(&e.path()) {
                        found.push((m.len(), e.path()));
                    }
                }
            }
        }
    }
    found.sort_by(|a, b| b.cmp(a));
    (found.into_iter().map(|(_, p)| p).collect(), seen)
}

fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"\x7fELF"
}

/// One file: symbols, lookups, DWARF, unwind tables. Panics on a broken
/// invariant (a lookup answering a symbol that does not hold the address).
fn sweep_file(path: &Path) -> Tally {
    let mut t = Tally {
        elf: 1,
        ..Tally::default()
    };
    let mut addresses = vec![0, 1, u64::MAX, u64::MAX - 1, 1 << 63, 0x1000, 0x40_0000];
    if let Ok(f) = ElfFile::open(path) {
        t.opened = 1;
        let syms = f.symbols();
        t.symbols = syms.len() as u64;
        let step = (syms.len() / SYMBOL_PROBES).max(1);
        for s in syms.iter().step_by(step) {
            assert!(s.start <= s.end, "symbol {} ends before it starts", s.name);
            let mid = s.start + (s.end - s.start) / 2;
            addresses.extend([
                s.start,
                mid,
                s.end.wrapping_sub(1),
                s.end,
                s.start.wrapping_sub(1),
            ]);
        }
        if let (Some(first), Some(last)) = (syms.first(), syms.last()) {
            addresses.extend([
                first.start.wrapping_sub(0x1000),
                last.end.wrapping_add(0x1000),
            ]);
        }
        for &a in &addresses {
            t.lookups += 1;
            if let Some(i) = f.lookup(a) {
                let s = &f.symbols()[i];
                assert!(
                    s.start <= a && a < s.end,
                    "lookup({a:#x}) gave {} [{:#x}, {:#x})",
                    s.name,
                    s.start,
                    s.end
                );
                std::hint::black_box(demangle(&s.name));
            }
            if let Some(off) = f.vaddr_to_offset(a) {
                std::hint::black_box(f.offset_to_vaddr(off));
            }
            std::hint::black_box(f.offset_to_vaddr(a));
        }
        // DWARF: the middles of a few symbols, and two absurd addresses.
        let dwarf: Vec<u64> = addresses
            .iter()
            .skip(7 + 1)
            .step_by(5 * (addresses.len() / 5 / DWARF_PROBES).max(1))
            .take(DWARF_PROBES)
            .copied()
            .chain([0, u64::MAX])
            .collect();
        for a in dwarf {
            t.dwarf += 1;
            t.lines += u64::from(f.line(a).is_some());
            std::hint::black_box(f.inlined(a, Demangle::Short));
        }
    }
    if let Ok(p) = probe_file(path, &addresses) {
        t.unwind_tables = u64::from(p.cfi);
        t.walks = p.walks;
        t.frames = p.frames;
    }
    t
}

thread_local! {
    /// The message and place of this thread's last panic (the hook keeps
    /// them: the payload has no place).
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".to_string())
}

/// The process's peak resident set (`VmHWM`), in MiB.
fn peak_rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}
