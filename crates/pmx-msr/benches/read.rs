//! Cost of reading counters through the msr device, on fixture files.
//!
//! `cargo bench -p pmx-msr --bench read` prints:
//!
//! 1. one counter read (`MsrDevice::read`: one `pread` of 8 bytes) against
//!    opening the device for every read, as a naive rdmsr loop does;
//! 2. one interval of 8 counters on every CPU, for 2 to 256 CPUs: the
//!    session's batched read (fds opened once, slots grouped by CPU, one
//!    reused buffer: `Session::read_into`), the allocating `Session::read`,
//!    and the same reads spread over one thread per CPU.
//!
//! Fixture files measure pmx's own cost (syscall, bookkeeping). On real
//! hardware each `pread` of `/dev/cpu/N/msr` from another CPU adds an
//! inter-processor interrupt (the driver runs `rdmsr` on CPU N); see
//! docs/BENCHMARKS.md.

use pmx_model::encoding::{encode_spec, Arch, EncodeOptions};
use pmx_model::spec::parse_spec;
use pmx_model::topology::Topology;
use pmx_msr::{
    plan, CounterReading, Mode, MsrDevice, MsrEvent, MsrRoot, PmuCounters, Session, SessionOptions,
    Signals,
};
use pmx_testkit::msr::msr_files as fixture;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Median time per iteration of `f` over `samples` samples of `iters` each.
fn time(samples: usize, iters: u32, mut f: impl FnMut()) -> Duration {
    for _ in 0..iters.min(1000) {
        f();
    }
    let mut v: Vec<Duration> = (0..samples)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed() / iters
        })
        .collect();
    v.sort();
    v[v.len() / 2]
}

fn eight_events() -> Vec<MsrEvent> {
    let codes = [0x3c, 0xc0, 0xc4, 0xc5, 0x2e, 0xa3, 0xd1, 0x0e];
    codes
        .iter()
        .map(|c| {
            let spec = format!("cpu/event={c:#x},umask=0x1/");
            let enc = encode_spec(
                &parse_spec(&spec).unwrap(),
                EncodeOptions {
                    arch: Arch::Intel,
                    sampling: false,
                },
            )
            .unwrap();
            MsrEvent::new(spec, enc)
        })
        .collect()
}

fn main() {
    // `cargo test --benches` runs this with --bench absent: keep it short.
    let quick = !std::env::args().any(|a| a == "--bench");
    let (samples, scale) = if quick { (3, 1) } else { (15, 20) };

    let dir = fixture(1);
    let root = MsrRoot::new(dir.path());
    let dev = MsrDevice::open(&root, &[0], Mode::Read).unwrap();
    let one = time(samples, 5_000 * scale, || {
        black_box(dev.read(0, black_box(0xc1)).unwrap());
    });
    let reopen = time(samples, 500 * scale, || {
        let d = MsrDevice::open(&root, &[0], Mode::Read).unwrap();
        black_box(d.read(0, 0xc1).unwrap());
    });
    println!("## one counter read (fixture file)");
    println!("| how | ns per read |");
    println!("|---|---|");
    println!(
        "| `MsrDevice::read` (fd kept open, one pread) | {} |",
        one.as_nanos()
    );
    println!("| open + pread + close per read | {} |", reopen.as_nanos());

    println!();
    println!("## one interval: 8 counters on every CPU (fixture files)");
    println!("| CPUs | reads | `read_into` (batched) | per read | `read` (allocates) | one thread per CPU |");
    println!("|---|---|---|---|---|---|");
    let mut pmu = PmuCounters::assumed(Arch::Intel, None);
    pmu.general = 8;
    for cpus in [2u32, 16, 64, 256] {
        let dir = fixture(cpus);
        let root = MsrRoot::new(dir.path());
        let all: Vec<u32> = (0..cpus).collect();
        let p = plan(&eight_events(), &all, &pmu, &Topology::default()).unwrap();
        let slots = p.slots.clone();
        let dev = MsrDevice::open(&root, &all, Mode::ReadWrite).unwrap();
        let mut s = Session::start(
            dev,
            p,
            &SessionOptions {
                force: true,
                signals: Signals::Ignore,
            },
        )
        .unwrap();
        let iters = (200 * scale / cpus).max(5);
        let mut buf: Vec<CounterReading> = Vec::new();
        let batched = time(samples, iters, || {
            s.read_into(&mut buf).unwrap();
            black_box(&buf);
        });
        let allocating = time(samples, iters, || {
            black_box(s.read().unwrap());
        });
        // The same reads, one scoped thread per CPU (what a reader pinned
        // to each CPU would do to avoid the driver's cross-CPU calls).
        let dev = s.device();
        let threaded = time(samples, iters.div_ceil(4), || {
            std::thread::scope(|scope| {
                for group in slots.chunk_by(|a, b| a.cpu == b.cpu) {
                    scope.spawn(move || {
                        for sl in group {
                            black_box(dev.read(sl.cpu, sl.address).unwrap());
                        }
                    });
                }
            });
        });
        let reads = slots.len() as u128;
        println!(
            "| {cpus} | {reads} | {:.1} µs | {} ns | {:.1} µs | {:.1} µs |",
            batched.as_nanos() as f64 / 1000.0,
            batched.as_nanos() / reads,
            allocating.as_nanos() as f64 / 1000.0,
            threaded.as_nanos() as f64 / 1000.0,
        );
    }
}
