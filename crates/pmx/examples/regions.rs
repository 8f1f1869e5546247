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
    if let Err(e) = pmx_perf::workload::touch_pages(n) {
        eprintln!("mmap: {e}");
        std::process::exit(1);
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
