//! For `bench/mem_report.sh`: `mem_report FILE` — `pmx report --mem-mode
//! --stdio` under perf's name (perf's default memory keys and layout) as
//! the engine makes it, without the command line around it: the report
//! of FILE printed to standard output.

use pmx_precise::mem::{self, MemOptions};
use std::io::Write;

fn main() {
    let Some(file) = std::env::args().nth(1) else {
        eprintln!("usage: mem_report FILE");
        std::process::exit(2);
    };
    let l = mem::layout(None, None, false).expect("perf's default layout");
    let opts = MemOptions::new(file.into(), l.keys, l.sort_order);
    let r = match mem::mem_report(&opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mem_report: {e}");
            std::process::exit(1);
        }
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let done = mem::table::print_exports(&mut out, &r, l.columns, &opts.exports);
    if let Err(e) = done.and_then(|_| out.flush()) {
        eprintln!("mem_report: {e}");
        std::process::exit(1);
    }
}
