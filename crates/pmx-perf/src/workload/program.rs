//! The `pmx-workload` program's commands: small programs with exactly
//! known behaviour, used by pmx's tests and benchmarks. [`run`] takes the
//! program's arguments and returns its exit status; the `pmx-workload`
//! binary (in `pmx-cli`, where the command-line tests find it) only calls
//! it.
//!
//! ```text
//! pmx-workload pages N         touch N fresh pages (N page faults; also `touch N`)
//! pmx-workload fork-pages N    a child touches N fresh pages; the parent none
//! pmx-workload spin SECONDS    busy loop on the CPU
//! pmx-workload work N          a fixed amount of CPU work (N × 1e6 steps)
//! pmx-workload addr            print the address of the write target
//! pmx-workload writes N        write the target N times
//! pmx-workload exit CODE       exit with CODE
//! pmx-workload kill SIGNAL     kill itself with SIGNAL
//! pmx-workload threads N SECONDS   N threads spinning for SECONDS
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The target of `addr` and `writes`.
static TARGET: AtomicU64 = AtomicU64::new(0);

/// The usage line printed (status 2) for an unknown command.
pub const USAGE: &str = "usage: pmx-workload pages N | fork-pages N | spin S | work N | threads N S | addr | writes N | exit CODE | kill SIG";

/// The status of [`super::touch_pages`]: 0, or 1 and `mmap failed`
/// when the mapping fails.
fn status(touched: std::io::Result<()>) -> i32 {
    match touched {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("mmap failed: {e}");
            1
        }
    }
}

fn spin(d: Duration) -> u64 {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < d {
        for i in 0..10_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
    }
    x
}

/// Argument `i`, parsed; else the message to print (status 2).
fn arg<T: std::str::FromStr>(args: &[String], i: usize) -> Result<T, String> {
    (args.get(i).and_then(|s| s.parse().ok()))
        .ok_or_else(|| format!("pmx-workload: bad or missing argument {i}"))
}

/// Run the command `args[1]` with its arguments (`args[0]` is the program
/// name) and return the exit status (`exit CODE`: CODE).
pub fn run(args: &[String]) -> i32 {
    match command(args) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("{msg}");
            2
        }
    }
}

fn command(args: &[String]) -> Result<i32, String> {
    Ok(match args.get(1).map(String::as_str) {
        Some("pages" | "touch") => status(super::touch_pages(arg(args, 2)?)),
        Some("fork-pages") => {
            let n: usize = arg(args, 2)?;
            // SAFETY: the child only touches memory and exits.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                let code = status(super::touch_pages(n));
                // SAFETY: the child ends here, without the parent's atexit work.
                unsafe { libc::_exit(code) };
            }
            let mut st = 0;
            // SAFETY: waiting for our own child.
            unsafe { libc::waitpid(pid, &mut st, 0) };
            0
        }
        Some("spin") => {
            let s: f64 = arg(args, 2)?;
            std::hint::black_box(spin(Duration::from_secs_f64(s)));
            0
        }
        Some("work") => {
            let n: u64 = arg(args, 2)?;
            let mut x = 1u64;
            for i in 0..n * 1_000_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
            }
            std::hint::black_box(x);
            0
        }
        Some("threads") => {
            let n: usize = arg(args, 2)?;
            let s: f64 = arg(args, 3)?;
            let hs: Vec<_> = (0..n)
                .map(|_| {
                    std::thread::spawn(move || {
                        std::hint::black_box(spin(Duration::from_secs_f64(s)))
                    })
                })
                .collect();
            for h in hs {
                let _ = h.join();
            }
            0
        }
        Some("addr") => {
            println!("{:#x}", TARGET.as_ptr() as usize);
            0
        }
        Some("writes") => {
            let n: u64 = arg(args, 2)?;
            let p = TARGET.as_ptr();
            for i in 0..n {
                // SAFETY: writing our own static through its pointer.
                unsafe { std::ptr::write_volatile(p, i) };
            }
            TARGET.load(Ordering::Relaxed);
            0
        }
        Some("exit") => arg(args, 2)?,
        Some("kill") => {
            let sig: i32 = arg(args, 2)?;
            // SAFETY: signalling ourselves.
            unsafe { libc::raise(sig) };
            0
        }
        _ => return Err(USAGE.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        std::iter::once("pmx-workload")
            .chain(words.iter().copied())
            .map(String::from)
            .collect()
    }

    #[test]
    fn exit_returns_the_code_and_bad_input_is_status_2() {
        assert_eq!(run(&argv(&["exit", "7"])), 7);
        assert_eq!(run(&argv(&["exit", "x"])), 2);
        assert_eq!(run(&argv(&["pages"])), 2);
        assert_eq!(run(&argv(&["nonsense"])), 2);
        assert_eq!(run(&argv(&[])), 2);
        assert_eq!(
            command(&argv(&["threads", "2"])),
            Err("pmx-workload: bad or missing argument 3".to_string())
        );
    }

    #[test]
    fn quick_commands_succeed() {
        assert_eq!(run(&argv(&["pages", "3"])), 0);
        assert_eq!(run(&argv(&["work", "0"])), 0);
        assert_eq!(run(&argv(&["writes", "5"])), 0);
        assert_eq!(TARGET.load(Ordering::Relaxed), 4);
        assert_eq!(run(&argv(&["threads", "2", "0"])), 0);
    }
}
