//! `pmx roofline -- CMD`: the machine's ceilings measured by
//! `pmx-kernels` (memory bandwidth as STREAM's triad reports it, 24
//! bytes per element over arrays 4 × the last-level cache; L2 and L3
//! bandwidth with arrays that fit them; the peak FLOP rate of every
//! vector width the CPU has), and the command's point: FLOPs from the FP
//! events with their weights, bytes from the memory controllers' boxes,
//! both through `pmx stat`'s session. Where the counters are missing (no
//! FP events, boxes hidden by a hypervisor), the point says why and the
//! ceilings are still measured.
//!
//! Each ceiling is measured on one core and on `threads` cores at once
//! (every thread its own arrays), the best of [`TRIES`]. [`render`]
//! prints the report (text, JSON, the chart through `pmx-plot`).
//!
//! The widest compute ceiling is checked against the hardware's figure
//! ([`FmaCheck`]): cores × clock × FLOPs per cycle, the clock measured
//! as it runs ([`pmx_kernels::clock`]) and the FLOPs per cycle from the
//! FMA pipes and their datapath width for the CPU ([`flops_per_cycle`]);
//! the one-core ceiling within [`FMA_TOLERANCE`] of one core's figure
//! agrees.

pub mod render;

use crate::check::{count, why::Machine};
use pmx_count::database::{self, DatabaseOptions};
use pmx_kernels::cache::CacheInfo;
use pmx_kernels::fma::{self, Width};
use pmx_kernels::triad::{self, Triad};
use pmx_model::cpu::{CpuId, Vendor};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Runs of each ceiling; the best is kept (as STREAM keeps its best).
pub const TRIES: u32 = 5;

/// What to measure.
#[derive(Debug, Clone, Default)]
pub struct RooflineOptions {
    /// The command whose point is plotted.
    pub command: Vec<String>,
    /// Threads for the all-core ceilings (0: the CPUs this process may
    /// run on).
    pub threads: usize,
    /// The event tables (for the FP events).
    pub database: DatabaseOptions,
    /// Where `/sys` and `/proc` are (`/` on a live system).
    pub root: PathBuf,
}

/// One ceiling.
#[derive(Debug, Clone, Serialize)]
pub struct Ceiling {
    /// `DRAM`, `L2`, `L3`, `scalar`, `sse`, `avx2`, `avx512`.
    pub name: String,
    /// `memory` (bytes/s) or `compute` (FLOP/s).
    pub kind: &'static str,
    /// On one core.
    pub one_core: f64,
    /// On `threads` cores at once.
    pub all_cores: f64,
    /// How it was measured.
    pub how: String,
    /// A memory ceiling's buffer on one core: the triad's three arrays,
    /// in bytes (the all-core DRAM ceiling splits it among the threads;
    /// the cache ceilings give each thread its own); `None` for compute.
    pub buffer_bytes: Option<u64>,
}

/// The command's place on the chart.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Both coordinates were measured.
    pub available: bool,
    /// Why not.
    pub reason: Option<String>,
    /// FLOPs the FP events counted.
    pub flops: Option<f64>,
    /// Bytes the memory controllers moved.
    pub bytes: Option<f64>,
    /// The command's wall-clock time in seconds.
    pub seconds: f64,
    /// FLOPs per byte.
    pub intensity: Option<f64>,
    /// FLOP/s.
    pub flop_rate: Option<f64>,
}

/// Ceilings and point.
#[derive(Debug, Clone, Serialize)]
pub struct RooflineReport {
    /// Threads of the all-core ceilings.
    pub threads: usize,
    /// Memory ceilings first, then compute, narrowest first.
    pub ceilings: Vec<Ceiling>,
    /// The command's point.
    pub point: Point,
    /// The command's exit status.
    pub exit_code: i32,
    /// The widest compute ceiling against cores × clock × FLOPs per
    /// cycle; `None` without a compute ceiling or a clock.
    pub fma_check: Option<FmaCheck>,
}

/// How far a measured FMA ceiling may be from the hardware's figure.
pub const FMA_TOLERANCE: f64 = 0.20;

/// The widest compute ceiling against the hardware's figure.
#[derive(Debug, Clone, Serialize)]
pub struct FmaCheck {
    /// The width (`avx2`).
    pub width: String,
    /// Cores the all-core ceiling ran on (its threads).
    pub cores: usize,
    /// The core clock in Hz, measured with a chain of dependent additions.
    pub hz: f64,
    /// Double-precision FLOPs per cycle and core at this width.
    pub flops_per_cycle: f64,
    /// Where that figure comes from (pipes, datapath).
    pub basis: String,
    /// cores × hz × flops_per_cycle, FLOP/s.
    pub expected: f64,
    /// The measured all-core ceiling, FLOP/s.
    pub measured: f64,
    /// measured / expected.
    pub ratio: f64,
    /// The one-core ceiling over hz × flops_per_cycle.
    pub one_core_ratio: f64,
    /// `one_core_ratio` within [`FMA_TOLERANCE`] of 1: the clock is
    /// measured on one core, and all cores at once may run slower (a
    /// lower turbo, other work on a shared machine), so `ratio` is shown
    /// but not judged.
    pub within: bool,
}

/// Double-precision FLOPs per cycle on one core for `w`, and why: two
/// FMA pipes of the CPU's datapath width (Zen 1: 128 bits, Zen 2–4: 256
/// bits, so AVX-512 in two halves; Zen 5 and Intel: the full width; Intel
/// parts with one AVX-512 FMA unit reach half), two FLOPs per lane; a
/// multiply pipe and an add pipe without FMA.
pub fn flops_per_cycle(w: Width, cpu: Option<&CpuId>, fused: bool) -> (f64, String) {
    let amd = cpu.filter(|c| c.vendor == Vendor::Amd);
    let (bits, path) = match amd.map(|c| (c.family, c.model)) {
        Some((0x17, m)) if m < 0x30 => (128, "Zen 1 (128-bit FP pipes)"),
        Some((0x17 | 0x19, _)) => (256, "Zen 2-4 (256-bit FP pipes)"),
        _ => (512, "pipes of the full width"),
    };
    let lanes = w.lanes().min(bits / 64) as f64;
    match fused {
        true => (
            4.0 * lanes,
            format!("2 FMA pipes x {lanes} doubles x 2 FLOPs, {path}"),
        ),
        false => (
            2.0 * lanes,
            format!("a multiply and an add pipe x {lanes} doubles, {path}"),
        ),
    }
}

/// Check the widest compute ceiling of `ceilings` against `threads` ×
/// `hz` × [`flops_per_cycle`].
pub fn fma_check(
    ceilings: &[Ceiling],
    threads: usize,
    hz: f64,
    cpu: Option<&CpuId>,
) -> Option<FmaCheck> {
    let c = ceilings.iter().rfind(|c| c.kind == "compute")?;
    let w = Width::from_name(&c.name)?;
    let (fpc, basis) = flops_per_cycle(w, cpu, fma::fused());
    let expected = threads as f64 * hz * fpc;
    if expected.is_nan() || expected <= 0.0 {
        return None;
    }
    let ratio = c.all_cores / expected;
    Some(FmaCheck {
        width: c.name.clone(),
        cores: threads,
        hz,
        flops_per_cycle: fpc,
        basis,
        expected,
        measured: c.all_cores,
        ratio,
        one_core_ratio: c.one_core / (hz * fpc),
        within: (c.one_core / (hz * fpc) - 1.0).abs() <= FMA_TOLERANCE,
    })
}

/// Why roofline could not run.
#[derive(Debug, thiserror::Error)]
pub enum RooflineError {
    /// The event tables.
    #[error(transparent)]
    Database(#[from] database::DatabaseError),
    /// The command could not be counted or run.
    #[error("{0}")]
    Command(String),
}

/// Measure the ceilings, then count the command.
pub fn run(opts: &RooflineOptions) -> Result<RooflineReport, RooflineError> {
    if opts.command.is_empty() {
        return Err(RooflineError::Command("give a command after --".into()));
    }
    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let ceilings = ceilings(&CacheInfo::read(&opts.root), threads);
    // Short runs, many: one a scheduler tick on a loaded CPU does not spoil.
    let hz = pmx_kernels::clock::hz(100_000, 50);
    let cpu = database::host_cpu_id();
    let fma_check = hz.and_then(|hz| fma_check(&ceilings, threads, hz, cpu.as_ref()));
    let db = database::load(&opts.database)?;
    let machine = Machine::read(&opts.root);
    let (point, exit_code) = point(opts, &machine, &db)?;
    Ok(RooflineReport {
        threads,
        ceilings,
        point,
        exit_code,
        fma_check,
    })
}

/// Every ceiling this machine has.
pub fn ceilings(caches: &CacheInfo, threads: usize) -> Vec<Ceiling> {
    let mut out = Vec::new();
    let llc = caches.llc.unwrap_or(32 << 20);
    let dram = triad::elements_beyond(llc, 4);
    out.push(memory(
        "DRAM",
        dram,
        2,
        threads,
        true,
        format!("triad, 3 arrays of {} MiB in all", (dram * 8) >> 20),
    ));
    if let Some(l2) = caches.l2 {
        let n = (l2 / 2 / 24) as usize;
        out.push(memory(
            "L2",
            n,
            4000,
            threads,
            false,
            format!("triad, 3 arrays of {} KiB per thread", (n * 8) >> 10),
        ));
    }
    if let Some(l3) = caches.llc.filter(|&l| Some(l) != caches.l2) {
        let n = (l3 / 2 / 24 / threads as u64).max(1024) as usize;
        out.push(memory(
            "L3",
            n,
            40,
            threads,
            false,
            format!("triad, 3 arrays of {} KiB per thread", (n * 8) >> 10),
        ));
    }
    for w in fma::available() {
        let how = format!(
            "{} independent {} multiply-adds",
            fma::ACCUMULATORS,
            w.name()
        );
        let one = parallel(1, |_| flop_rate(w));
        let all = parallel(threads, |_| flop_rate(w));
        out.push(Ceiling {
            name: w.name().into(),
            kind: "compute",
            one_core: one,
            all_cores: all,
            how,
            buffer_bytes: None,
        });
    }
    out
}

fn flop_rate(w: Width) -> f64 {
    fma::peak(w, 2_000_000, TRIES).unwrap_or(0.0)
}

/// A triad ceiling: on one thread with arrays of `n` elements, and on
/// `threads` at once, each with its share of `n` (the memory ceiling
/// keeps its total size; a cache ceiling is per core, so `split` is
/// false and every thread has `n`). Each thread allocates and warms its
/// arrays once, then every try starts all of them together and lasts as
/// long as the slowest; the best try counts.
fn memory(name: &str, n: usize, passes: u32, threads: usize, split: bool, how: String) -> Ceiling {
    let rate = |t: usize| {
        let each = if split { (n / t).max(1 << 20) } else { n };
        let barrier = Barrier::new(t);
        let per_thread: Vec<Vec<Duration>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..t)
                .map(|_| {
                    let b = &barrier;
                    s.spawn(move || {
                        let mut tr = Triad::new(each);
                        tr.pass();
                        (0..TRIES)
                            .map(|_| {
                                b.wait();
                                let start = Instant::now();
                                for _ in 0..passes {
                                    tr.pass();
                                }
                                start.elapsed()
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        let best = (0..TRIES as usize)
            .map(|i| {
                per_thread
                    .iter()
                    .filter_map(|d| d.get(i))
                    .max()
                    .copied()
                    .unwrap_or(Duration::MAX)
            })
            .min()
            .unwrap_or(Duration::MAX);
        (each as u64 * triad::BYTES_PER_ELEMENT * u64::from(passes) * t as u64) as f64
            / best.as_secs_f64().max(1e-9)
    };
    Ceiling {
        name: name.into(),
        kind: "memory",
        one_core: rate(1),
        all_cores: rate(threads),
        how,
        buffer_bytes: Some(n as u64 * triad::BYTES_PER_ELEMENT),
    }
}

/// The sum of `f` run on `threads` threads at once.
fn parallel(threads: usize, f: impl Fn(usize) -> f64 + Sync) -> f64 {
    let barrier = Barrier::new(threads);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|i| {
                let (f, b) = (&f, &barrier);
                s.spawn(move || {
                    b.wait();
                    f(i)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or(0.0)).sum()
    })
}

/// The FP events with their FLOPs per count: Intel's
/// `FP_ARITH_INST_RETIRED.*` (lanes per instruction; a multiply-add
/// counts twice), else AMD's `FP_RET_SSE_AVX_OPS.ALL` (FLOPs already).
pub fn fp_events(db: &database::Database) -> Vec<(String, f64)> {
    let resolves = |n: &str| {
        pmx_count::parse_event_list(n)
            .ok()
            .is_some_and(|g| pmx_count::stat::plan(&g, db).is_ok())
    };
    let intel: Vec<(String, f64)> = [
        ("SCALAR_DOUBLE", 1.0),
        ("128B_PACKED_DOUBLE", 2.0),
        ("256B_PACKED_DOUBLE", 4.0),
        ("512B_PACKED_DOUBLE", 8.0),
        ("SCALAR_SINGLE", 1.0),
        ("128B_PACKED_SINGLE", 4.0),
        ("256B_PACKED_SINGLE", 8.0),
        ("512B_PACKED_SINGLE", 16.0),
    ]
    .iter()
    .map(|(n, w)| (format!("FP_ARITH_INST_RETIRED.{n}"), *w))
    .filter(|(n, _)| resolves(n))
    .collect();
    if !intel.is_empty() {
        return intel;
    }
    match resolves("FP_RET_SSE_AVX_OPS.ALL") {
        true => vec![("FP_RET_SSE_AVX_OPS.ALL".into(), 1.0)],
        false => Vec::new(),
    }
}

/// Count the command: FLOPs and bytes when the counters exist.
fn point(
    opts: &RooflineOptions,
    machine: &Machine,
    db: &database::Database,
) -> Result<(Point, i32), RooflineError> {
    let fp = fp_events(db);
    let boxes = machine.boxes("uncore_imc");
    let mut events: Vec<String> = vec!["task-clock".into()];
    events.extend(fp.iter().map(|(n, _)| n.clone()));
    let mut missing = Vec::new();
    if fp.is_empty() {
        missing.push(format!(
            "no floating-point events in the event tables for {}",
            db.target.cpu
        ));
    }
    let at = match boxes.is_empty() {
        true => {
            missing.push("no memory-controller PMU is exposed (no uncore_imc_* under /sys/bus/event_source/devices), so no bytes".into());
            count::Where {
                pin: None,
                cpus: None,
            }
        }
        false => {
            events.extend(boxes.iter().flat_map(|b| {
                [
                    format!("{b}/cas_count_read/"),
                    format!("{b}/cas_count_write/"),
                ]
            }));
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
            count::Where {
                pin: None,
                cpus: Some((0..cpus).collect()),
            }
        }
    };
    let run = count::run(&events, &opts.command, &at, db).map_err(RooflineError::Command)?;
    let value = |i: usize| run.values[i].value.clone();
    let mut flops = Some(0.0);
    for (i, (_, w)) in fp.iter().enumerate() {
        match value(i + 1) {
            Ok(v) => flops = flops.map(|f| f + v * w),
            Err(why) => {
                missing.push(format!("{}: {}", events[i + 1], machine.no_value(&why)));
                flops = None;
            }
        }
    }
    flops = flops.filter(|_| !fp.is_empty());
    let mut bytes = (!boxes.is_empty()).then_some(0.0);
    for (i, event) in events.iter().enumerate().skip(1 + fp.len()) {
        match value(i) {
            Ok(mib) => bytes = bytes.map(|b| b + mib * 1024.0 * 1024.0),
            Err(why) => {
                missing.push(format!("{event}: {}", machine.no_value(&why)));
                bytes = None;
            }
        }
    }
    let seconds = run.elapsed.as_secs_f64();
    let intensity = flops
        .zip(bytes)
        .filter(|(_, b)| *b > 0.0)
        .map(|(f, b)| f / b);
    let point = Point {
        available: intensity.is_some(),
        reason: (!missing.is_empty()).then(|| missing.join("; ")),
        flops,
        bytes,
        seconds,
        intensity,
        flop_rate: flops.map(|f| f / seconds.max(1e-9)),
    };
    Ok((point, run.exit_code))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(s: &str) -> CpuId {
        s.parse().unwrap()
    }

    /// Two FMA pipes × the lanes the datapath carries × 2 FLOPs.
    #[test]
    fn flops_per_cycle_follow_the_pipes_and_the_datapath() {
        let fpc = |w, c: &str, fused| flops_per_cycle(w, Some(&cpu(c)), fused).0;
        assert_eq!(
            fpc(Width::Avx2, "AuthenticAMD-23-1", true),
            8.0,
            "Zen 1: 128-bit"
        );
        assert_eq!(fpc(Width::Avx2, "AuthenticAMD-25-1", true), 16.0, "Zen 3");
        assert_eq!(
            fpc(Width::Avx512, "AuthenticAMD-25-11", true),
            16.0,
            "Zen 4: halves"
        );
        assert_eq!(fpc(Width::Avx512, "AuthenticAMD-26-2", true), 32.0, "Zen 5");
        assert_eq!(fpc(Width::Avx512, "GenuineIntel-6-55-4", true), 32.0);
        assert_eq!(
            fpc(Width::Sse, "GenuineIntel-6-55-4", false),
            4.0,
            "mul + add"
        );
        assert_eq!(flops_per_cycle(Width::Scalar, None, true).0, 4.0);
    }

    /// expected = cores × clock × FLOPs per cycle, against the widest
    /// compute ceiling's all-core rate.
    #[test]
    fn the_widest_ceiling_is_compared() {
        let c = |name: &str, kind, all| Ceiling {
            name: name.into(),
            kind,
            one_core: all / 2.0,
            all_cores: all,
            how: String::new(),
            buffer_bytes: None,
        };
        let ceilings = [
            c("DRAM", "memory", 1e10),
            c("sse", "compute", 1e10),
            c("avx2", "compute", 1.2e11),
        ];
        let zen3 = cpu("AuthenticAMD-25-1");
        let f = fma_check(&ceilings, 2, 3e9, Some(&zen3)).unwrap();
        assert_eq!(f.width, "avx2");
        let fpc = flops_per_cycle(Width::Avx2, Some(&zen3), fma::fused()).0;
        assert_eq!(f.expected, 2.0 * 3e9 * fpc);
        assert_eq!(f.ratio, 1.2e11 / f.expected);
        assert_eq!(f.one_core_ratio, 6e10 / (3e9 * fpc));
        assert_eq!(f.within, (f.one_core_ratio - 1.0).abs() <= FMA_TOLERANCE);
        assert!(
            fma_check(&ceilings[..1], 2, 3e9, None).is_none(),
            "no compute ceiling"
        );
    }
}
