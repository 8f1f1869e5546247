//! How long evaluating a CPU's whole metric library takes, per interval.
//!
//! ```sh
//! cargo run --release -p pmx-metrics --example eval_speed -- ../shared/data/intel-perfmon GenuineIntel-6-8F-8 10000 [all|tma]
//! ```
//!
//! Loads Intel's tables and the built-in metrics for the CPU, then for each
//! of N intervals builds fresh inputs (multiplexed at 80 %) and evaluates:
//! `all` (the default) — every event the library refers to, every metric,
//! every threshold and the top-down tree to its full depth; `tma` — only the
//! inputs of the top-down tree, and the tree to its full depth (what
//! `pmx analyze --tma` of a file recorded for it does).

use pmx_metrics::{Inputs, Library, Machine, Reading};
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(
        args.next()
            .unwrap_or_else(|| "../shared/data/intel-perfmon".into()),
    );
    let key = args.next().unwrap_or_else(|| "GenuineIntel-6-8F-8".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let tma_only = args.next().as_deref() == Some("tma");
    let cpu = match key.parse() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let t0 = Instant::now();
    let lib = Library::for_cpu(Some(&cpu), Some(&dir));
    let load = t0.elapsed();
    let tree = lib.tma_tree();
    let machine = Machine {
        smt_on: Some(true),
        num_cpus: Some(64),
        num_packages: Some(2),
        tsc_frequency_hz: Some(2.0e9),
        ..Machine::default()
    };
    let names: Vec<String> = match (&tree, tma_only) {
        (Some(t), true) => lib
            .requirements(&t.metrics_to_level(u32::MAX), true, Some(&machine))
            .events
            .into_iter()
            .map(|e| e.name)
            .collect(),
        _ => lib.events().iter().map(|e| e.name.clone()).collect(),
    };
    // Keys once, as a reader of many intervals would.
    let keys: Vec<String> = names.iter().map(|n| Inputs::new().key(n)).collect();
    let t1 = Instant::now();
    let mut valued = 0usize;
    let mut t_inputs = std::time::Duration::ZERO;
    for i in 0..n {
        let ti = Instant::now();
        let mut inputs = Inputs::new();
        inputs.reserve(keys.len());
        for (k, key) in keys.iter().enumerate() {
            inputs.insert_keyed(
                key.clone(),
                Reading::count(1_000 + (i * 7 + k * 13) as u64 % 5_000, 1_000, 800),
            );
        }
        inputs.duration = Some(0.1);
        t_inputs += ti.elapsed();
        let mut ev = lib.evaluator(&inputs, &machine);
        if !tma_only {
            for (id, _) in lib.iter() {
                if ev.metric(id).value().is_some() {
                    valued += 1;
                }
                let _ = ev.threshold(id);
            }
        }
        if let Some(t) = &tree {
            let r = t.evaluate(&mut ev, u32::MAX);
            if tma_only {
                valued += r.nodes.iter().filter(|n| n.percent.is_some()).count();
            }
        }
    }
    let eval = t1.elapsed();
    println!("{} formula nodes", nodes(&lib));
    println!("building inputs: {:.1} ms", t_inputs.as_secs_f64() * 1e3);
    println!(
        "{key}: {} metrics, {} events, {} sources; load {:.1} ms; {n} intervals in {:.1} ms ({:.1} µs per interval, {:.2} µs per metric); {valued} values",
        lib.len(),
        names.len(),
        lib.sources().len(),
        load.as_secs_f64() * 1e3,
        eval.as_secs_f64() * 1e3,
        eval.as_secs_f64() * 1e6 / n as f64,
        eval.as_secs_f64() * 1e6 / (n * lib.len()) as f64,
    );
}

fn nodes(lib: &Library) -> usize {
    let mut n = 0;
    for m in lib.metrics() {
        m.formula.root().walk(&mut |_| n += 1);
        if let Some(t) = &m.threshold {
            t.formula.root().walk(&mut |_| n += 1);
        }
    }
    n
}
