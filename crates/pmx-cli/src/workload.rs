//! `pmx-workload`: small programs with exactly known behaviour, used by
//! pmx's tests and benchmarks (not needed to use pmx).
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

static TARGET: AtomicU64 = AtomicU64::new(0);

/// Touch `n` fresh pages: exactly `n` minor page faults.
fn touch_pages(n: usize) {
    if pmx_perf::workload::touch_pages(n).is_err() {
        eprintln!("mmap failed");
        std::process::exit(1);
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

fn arg<T: std::str::FromStr>(args: &[String], i: usize) -> T {
    args.get(i).and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        eprintln!("pmx-workload: bad or missing argument {i}");
        std::process::exit(2)
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("pages" | "touch") => touch_pages(arg(&args, 2)),
        Some("fork-pages") => {
            let n: usize = arg(&args, 2);
            // SAFETY: the child only touches memory and exits.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                touch_pages(n);
                unsafe { libc::_exit(0) };
            }
            let mut st = 0;
            // SAFETY: waiting for our own child.
            unsafe { libc::waitpid(pid, &mut st, 0) };
        }
        Some("spin") => {
            let s: f64 = arg(&args, 2);
            std::hint::black_box(spin(Duration::from_secs_f64(s)));
        }
        Some("work") => {
            let n: u64 = arg(&args, 2);
            let mut x = 1u64;
            for i in 0..n * 1_000_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
            }
            std::hint::black_box(x);
        }
        Some("threads") => {
            let n: usize = arg(&args, 2);
            let s: f64 = arg(&args, 3);
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
        }
        Some("addr") => println!("{:#x}", TARGET.as_ptr() as usize),
        Some("writes") => {
            let n: u64 = arg(&args, 2);
            let p = TARGET.as_ptr();
            for i in 0..n {
                // SAFETY: writing our own static through its pointer.
                unsafe { std::ptr::write_volatile(p, i) };
            }
            TARGET.load(Ordering::Relaxed);
        }
        Some("exit") => std::process::exit(arg(&args, 2)),
        Some("kill") => {
            let sig: i32 = arg(&args, 2);
            // SAFETY: signalling ourselves.
            unsafe { libc::raise(sig) };
            std::process::exit(0);
        }
        _ => {
            eprintln!("usage: pmx-workload pages N | fork-pages N | spin S | work N | threads N S | addr | writes N | exit CODE | kill SIG");
            std::process::exit(2);
        }
    }
}
