//! Write a perf.data file of N plain `perf record -g` samples of a
//! cpu-clock event (pmx-testkit's `many_samples`: three processes, a COMM
//! and an MMAP2 every 40,000 samples, ~600 distinct stacks, rounds out of
//! time order) through pmx-perfdata's writer, streaming: the memory used
//! does not grow with N. The input of issue 43's bounded-memory bench
//! (`bench/report.sh`'s `SIZES=...g`): 10M samples are about 0.9 GB.
//!
//! `cargo run --release -p pmx-perfdata --example many_samples -- OUT N
//! [NAMES]`: with NAMES, the COMMs and maps reuse that many names
//! (`many_samples_named`), so the commands and binaries stop growing.

use pmx_testkit::perfdata::{attr, many_samples_named, CALLCHAIN_SAMPLES, SAMPLE_ID_ALL};
use std::io::{BufWriter, IsTerminal, Write};

fn main() -> std::io::Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let n = a.get(1).and_then(|n| n.parse::<u64>().ok());
    let names = a.get(2).map_or(Some(u64::MAX), |k| k.parse::<u64>().ok());
    let (Some(out), Some(n), Some(names), 2..=3) = (a.first(), n, names, a.len()) else {
        eprintln!("usage: many_samples OUT N [NAMES] (N: the samples to write; NAMES: the commands' and binaries' names)");
        std::process::exit(2);
    };
    let file = BufWriter::with_capacity(1 << 20, std::fs::File::create(out)?);
    let files = vec![pmx_perfdata::FileAttr {
        attr: attr(128, 1000, CALLCHAIN_SAMPLES, SAMPLE_ID_ALL),
        ids: vec![1],
        name: "cpu-clock".into(),
    }];
    let mut w = pmx_perfdata::Writer::create(file, files)?;
    let tty = std::io::stderr().is_terminal();
    many_samples_named(&mut w, n, names, &mut |done| {
        if tty {
            eprint!("\r{done} of {n} samples written");
        }
    })?;
    let bytes = w.data_size();
    w.finish(&Default::default())?.flush()?;
    if tty {
        eprint!("\r");
    }
    eprintln!("{out}: {n} samples, {bytes} bytes of records");
    Ok(())
}
