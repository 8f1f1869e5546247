//! What reading counters costs, in ns per operation: the bare `read(2)`
//! of a 4-event software group, [`pmx::Counters::read_into`] and
//! [`pmx::Counters::read`] of the same group, and one region begin/end
//! pair (two group reads). The variants are measured in turn, round after
//! round (so a machine that slows down or speeds up affects them alike),
//! timed with the thread's CPU clock so that waiting for a CPU on a shared
//! machine does not count. Each ns figure is the median over the rounds;
//! each percentage is the median over the rounds of that round's ratio to
//! the bare read *of the same round*, which cancels the drift of the
//! system call's own cost (±10% between rounds in a VM).
//!
//! ```sh
//! cargo run --release -p pmx --example bench_regions [N]
//! ```

use pmx::region::{self, Config};
use pmx_model::count::Count;
use pmx_perf::{read_format, software, Attr, Counter, Target};
use pmx_testkit::workload::thread_cpu_ns;
use std::os::fd::AsRawFd;

const EVENTS: &str = "task-clock,page-faults,context-switches,cpu-migrations";
const RUNS: usize = 41;

fn time_ns(n: u64, f: &mut dyn FnMut()) -> f64 {
    let t = thread_cpu_ns();
    for _ in 0..n {
        f();
    }
    (thread_cpu_ns() - t) as f64 / n as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(50_000);
    // The bare system call: the same group opened with pmx-perf, read
    // with libc::read into a stack buffer.
    let this = Target { pid: 0, cpu: -1 };
    let rf = read_format::GROUP
        | read_format::ID
        | read_format::TOTAL_TIME_ENABLED
        | read_format::TOTAL_TIME_RUNNING;
    let sw = |config, leader: Option<&Counter>| {
        Counter::open(
            &Attr {
                type_: pmx_perf::event_type::SOFTWARE,
                config,
                disabled: leader.is_none(),
                read_format: rf,
                ..Attr::default()
            },
            this,
            leader,
        )
        .expect("software events open")
    };
    let leader = sw(software::TASK_CLOCK, None);
    let _m: Vec<Counter> = [
        software::PAGE_FAULTS,
        software::CONTEXT_SWITCHES,
        software::CPU_MIGRATIONS,
    ]
    .iter()
    .map(|&c| sw(c, Some(&leader)))
    .collect();
    leader.enable(true).unwrap();
    let fd = leader.as_raw_fd();
    let mut buf = [0u64; 3 + 2 * 4];
    let mut bare_read = || {
        // SAFETY: reading into a live stack buffer of the given size.
        let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), std::mem::size_of_val(&buf)) };
        assert!(r > 0);
        std::hint::black_box(&buf);
    };

    let mut c = pmx::Counters::new(EVENTS).expect("counters");
    assert_eq!(c.group_count(), 1);
    c.enable().unwrap();
    let mut out = vec![Count::default(); 4];
    let mut c2 = pmx::Counters::new(EVENTS).expect("counters");
    c2.enable().unwrap();

    region::init(Config {
        events: Some(EVENTS.to_string()),
        ..Config::default()
    })
    .unwrap();
    region::thread_init().unwrap();

    let (mut bare, mut read_into, mut read_vec, mut pair) = (vec![], vec![], vec![], vec![]);
    for _ in 0..RUNS {
        bare.push(time_ns(n, &mut bare_read));
        read_into.push(time_ns(n, &mut || {
            c.read_into(&mut out).unwrap();
            std::hint::black_box(&out);
        }));
        read_vec.push(time_ns(n / 4, &mut || {
            std::hint::black_box(c2.read().unwrap());
        }));
        pair.push(time_ns(n / 2, &mut || {
            region::begin("bench").unwrap();
            region::end("bench").unwrap();
        }));
    }
    // Per-round ratios to the same round's bare read.
    let ratio = |v: &[f64], k: f64| -> f64 {
        median(v.iter().zip(&bare).map(|(x, b)| x / (k * b)).collect())
    };
    let (r_into, r_vec, r_pair) = (
        ratio(&read_into, 1.0),
        ratio(&read_vec, 1.0),
        ratio(&pair, 2.0),
    );
    let (bare, read_into, read_vec, pair) = (
        median(bare.clone()),
        median(read_into.clone()),
        median(read_vec.clone()),
        median(pair.clone()),
    );
    let cal = region::results().calibration;

    println!(
        "events: {EVENTS} (one group), {n} operations per round, {RUNS} interleaved rounds (medians; % = median of per-round ratios)"
    );
    println!("bare read(2) of the group        {bare:8.1} ns");
    println!(
        "Counters::read_into              {read_into:8.1} ns  ({:+.1}% vs bare read)",
        (r_into - 1.0) * 100.0
    );
    println!(
        "Counters::read (named)            {read_vec:7.1} ns  ({:+.1}% vs bare read)",
        (r_vec - 1.0) * 100.0
    );
    println!(
        "region begin + end (2 reads)     {pair:8.1} ns  ({:+.1}% vs 2 bare reads)",
        (r_pair - 1.0) * 100.0
    );
    if let Some(cal) = cal {
        println!(
            "calibration at start: {:.1} ns per empty region, task-clock inside {:.0} ns",
            cal.pair_ns, cal.counts[0]
        );
    }
}
