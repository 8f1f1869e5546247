//! Two regions with known work on two threads, like
//! `examples/c/regions.c`: "alloc" touches A fresh pages, "fill" B, both
//! inside "outer"; the second thread does twice as much.
//!
//! ```sh
//! cargo build -p pmx --example regions
//! pmx stat --regions -e page-faults,task-clock -- target/debug/examples/regions 64 16
//! # or on its own: the table on stderr
//! PMX_EVENTS=page-faults target/debug/examples/regions
//! ```

/// Touch `n` fresh pages of a new mapping: exactly `n` minor faults.
fn touch_pages(n: usize) {
    let len = n.max(1) * 4096;
    // SAFETY: a fresh private anonymous mapping, written within its
    // length, then unmapped.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            eprintln!("mmap: {}", std::io::Error::last_os_error());
            std::process::exit(1);
        }
        libc::madvise(p, len, libc::MADV_NOHUGEPAGE);
        for i in 0..n {
            std::ptr::write_volatile((p as *mut u8).add(i * 4096), 1);
        }
        libc::munmap(p, len);
    }
}

fn work(a: usize, b: usize) {
    let _outer = pmx::region("outer");
    pmx::region::scope("alloc", || touch_pages(a));
    pmx::region::scope("fill", || touch_pages(b));
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (a, b) = match args[..] {
        [a, b] => (a, b),
        _ => (64, 16),
    };
    if let Err(e) = pmx::region::thread_init() {
        eprintln!("{e}");
        std::process::exit(1);
    }
    std::thread::spawn(move || work(2 * a, 2 * b))
        .join()
        .expect("worker");
    work(a, b);
    if let Some(e) = pmx::region::last_error() {
        eprintln!("{e}");
    }
    // Under `pmx stat --regions` the results file is written at exit;
    // on its own, print the table.
    if std::env::var_os(pmx::region::ENV_OUT).is_none() {
        eprint!("{}", pmx::region::results().to_table());
    }
}
