//! The fault campaign's harness: run a case with a time bound, catching
//! panics; run `pmx` with a time bound; count outcomes per category and
//! print them as one `FAULTS|…` line (bench/faults.sh collects those for
//! docs/RELIABILITY.md). Every failure names its seed so it replays.
// Each campaign module uses a different part of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const PMX: &str = env!("CARGO_BIN_EXE_pmx");
pub const WORKLOAD: &str = env!("CARGO_BIN_EXE_pmx-workload");

/// What one case did.
#[derive(Debug)]
pub enum Outcome<T> {
    /// It finished with this value.
    Done(T),
    /// It panicked (the message).
    Panic(String),
    /// It did not finish within the bound.
    Hang,
}

/// Run `f` on its own thread, catching a panic, until it finishes or
/// its thread has used `cpu` of CPU time (a loop), or ten times that of
/// wall time (a case that waits for what never comes, or works on other
/// threads): [`bounded_within`]. A hung case's thread is left behind
/// (the test then fails anyway).
///
/// CPU time, not the wall clock: on the shared 2-CPU machine, at load 16
/// under `nice -n 10`, views cases of about a second of CPU each took
/// over 30 s of wall time (session 20, views seed 1; docs/RELIABILITY.md)
/// and counted as hangs.
pub fn bounded<T: Send + 'static>(
    cpu: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Outcome<T> {
    bounded_within(cpu, cpu * 10, f)
}

/// [`bounded`] with its wall-time bound given (the CPU bound alone where
/// the system has no thread CPU clock).
pub fn bounded_within<T: Send + 'static>(
    cpu: Duration,
    wall: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Outcome<T> {
    use pmx_testkit::process::ThreadClock;
    let (tx, rx) = mpsc::channel();
    let (clock_tx, clock_rx) = mpsc::channel();
    let started = Instant::now();
    std::thread::spawn(move || {
        let _ = clock_tx.send(ThreadClock::current());
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r);
    });
    let clock = clock_rx.recv().ok().flatten();
    let wall = if clock.is_some() { wall } else { cpu };
    loop {
        // A result ends the wait at once; the bounds are looked at every
        // 100 ms.
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Ok(v)) => return Outcome::Done(v),
            Ok(Err(p)) => {
                return Outcome::Panic(
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "(not a string)".into()),
                )
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Outcome::Panic("the case's thread ended without a result".into())
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        let worked = clock.and_then(|c| c.used()).is_some_and(|used| used > cpu);
        if worked || started.elapsed() > wall {
            return Outcome::Hang;
        }
    }
}

/// Found by views seed 1 (session 20): five cases over a 30 s wall-time
/// bound that each took about a second of CPU. A case that waits five
/// times its CPU bound finishes; one that spins is a hang.
#[test]
fn a_case_is_bounded_by_its_cpu_time_not_the_wall_clock() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let cpu = Duration::from_millis(100);
    let waits = bounded_within(cpu, Duration::from_secs(120), move || {
        std::thread::sleep(cpu * 5);
        7
    });
    assert!(matches!(waits, Outcome::Done(7)), "{waits:?}");
    let stop = Arc::new(AtomicBool::new(false));
    let spinning = Arc::clone(&stop);
    let spins = bounded_within(cpu, Duration::from_secs(600), move || {
        while !spinning.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    });
    stop.store(true, Ordering::Relaxed);
    assert!(matches!(spins, Outcome::Hang), "{spins:?}");
}

/// A finished `pmx` run.
#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

impl Run {
    /// Rust's panic exit (101) or a message saying so.
    pub fn panicked(&self) -> bool {
        self.status.code() == Some(101) || self.stderr.contains("panicked at")
    }

    /// Killed by a signal (SIGSEGV, SIGABRT…): a crash.
    pub fn crashed(&self) -> bool {
        use std::os::unix::process::ExitStatusExt;
        self.status.signal().is_some()
    }
}

/// Run `cmd` with its output captured, killing it after `bound`
/// (`None` then).
pub fn run_bounded(cmd: &mut Command, bound: Duration) -> Option<Run> {
    let t = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            String::from_utf8_lossy(&v).into_owned()
        })
    };
    let (o, e) = (read(Box::new(out)), read(Box::new(err)));
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(Run {
                status,
                stdout: o.join().unwrap(),
                stderr: e.join().unwrap(),
                took: t.elapsed(),
            });
        }
        if t.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The counts of one category.
#[derive(Debug, Default)]
pub struct Tally {
    pub category: String,
    pub tried: usize,
    pub panics: usize,
    pub hangs: usize,
    pub unclear: usize,
    pub lost: usize,
    /// Cases that ran to a result, and that were refused with an error.
    pub accepted: usize,
    pub refused: usize,
    pub failures: Vec<String>,
    pub started: Option<Instant>,
    /// The current case's mutant (its seed and file), kept when the
    /// case fails: [`Tally::mutant`].
    pub mutant: Option<(u64, std::path::PathBuf)>,
}

impl Tally {
    pub fn new(category: &str) -> Tally {
        Tally {
            category: category.to_string(),
            started: Some(Instant::now()),
            ..Tally::default()
        }
    }

    /// The file of the case about to run (its mutant's seed and path):
    /// should the case fail, its bytes are kept (`target/tmp/faults-kept/
    /// SEED.data`, named in the failure line), since a source the test
    /// records itself differs from run to run and its seed alone does
    /// not give the same mutant again.
    pub fn mutant(&mut self, seed: u64, path: &Path) {
        self.mutant = Some((seed, path.to_path_buf()));
    }

    fn fail(&mut self, kind: &str, case: &str, detail: &str) {
        let kept = match &self.mutant {
            Some((seed, from)) => {
                let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("faults-kept");
                let to = dir.join(format!("{seed}.data"));
                match std::fs::create_dir_all(&dir).and_then(|_| std::fs::copy(from, &to)) {
                    Ok(_) => format!(" [kept as {}]", to.display()),
                    Err(e) => format!(" [not kept: {e}]"),
                }
            }
            None => String::new(),
        };
        if self.failures.len() < 20 {
            let detail: String = detail.chars().take(400).collect();
            self.failures
                .push(format!("{kind}: {case}{kept}: {detail}"));
        }
    }

    pub fn panic(&mut self, case: &str, detail: &str) {
        self.panics += 1;
        self.fail("PANIC", case, detail);
    }

    pub fn hang(&mut self, case: &str) {
        self.hangs += 1;
        self.fail("HANG", case, "over the time bound");
    }

    pub fn unclear(&mut self, case: &str, detail: &str) {
        self.unclear += 1;
        self.fail("UNCLEAR ERROR", case, detail);
    }

    pub fn lost(&mut self, case: &str, detail: &str) {
        self.lost += 1;
        self.fail("DATA LOST", case, detail);
    }

    /// Print the `FAULTS|` line and fail the test with every failure
    /// (seeds included) when anything went wrong.
    pub fn finish(self) {
        let secs = self
            .started
            .map(|t| t.elapsed().as_secs_f64())
            .unwrap_or(0.0);
        eprintln!(
            "FAULTS|{}|{}|{}|{}|{}|{}|{:.1}|{}|{}",
            self.category,
            self.tried,
            self.panics,
            self.hangs,
            self.unclear,
            self.lost,
            secs,
            self.accepted,
            self.refused
        );
        let bad = self.panics + self.hangs + self.unclear + self.lost;
        assert!(
            bad == 0,
            "{}: {bad} of {} cases failed (replay a case with its seed):\n{}",
            self.category,
            self.tried,
            self.failures.join("\n")
        );
    }
}

/// How many cases: the fast count, or the long one when `PMX_FAULTS_LONG`
/// is set (bench/faults.sh) ; `PMX_FAULTS_SEED` moves every seed.
pub fn cases(fast: usize, long: usize) -> usize {
    if std::env::var_os("PMX_FAULTS_LONG").is_some() {
        long
    } else {
        fast
    }
}

/// The first seed of a run: 0, or `PMX_FAULTS_SEED` × 10⁹. A case's
/// seed is this plus its source's index × 10⁶ plus its number, so the
/// campaigns of two seeds share no mutant (with `SEED` itself as the base,
/// seed 1's 400 cases of a source were seed 0's cases 1–399 again, plus
/// one); the seed a failure prints is the mutant's own.
pub fn base_seed() -> u64 {
    std::env::var("PMX_FAULTS_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0)
        .wrapping_mul(1_000_000_000)
}

/// Write `bytes` to `dir/name` and return the path.
pub fn put(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}
