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

use pmx_perf::workload::touch_pages;

/// `a` then `b` fresh pages (exactly one minor fault each); a mapping
/// that fails ends the program.
fn work(a: usize, b: usize) {
    let _outer = pmx::region("outer");
    let done = pmx::region::scope("alloc", || touch_pages(a))
        .and_then(|()| pmx::region::scope("fill", || touch_pages(b)));
    if let Err(e) = done {
        eprintln!("mmap: {e}");
        std::process::exit(1);
    }
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
