//! The rows `pmx check` knows: for each, the events counted, the kernel
//! and its two sizes, and the answer the difference between the sizes
//! must give (the start-up of the kernel's process is the same at both
//! sizes, so it cancels).

use super::why::Machine;
use pmx_count::database::Database;
use pmx_kernels::cache::CacheInfo;
use pmx_kernels::fma::{self, Width};

/// How a row's measured value comes from its runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// The first event's value at the large size minus the small.
    Difference,
    /// The runs' wall-clock times, large minus small, in msec.
    Wall,
    /// The first event per second of the second (task-clock, msec), at
    /// the large size alone.
    PerCpuSecond,
    /// The sum of the events per second of wall time (system-wide), at
    /// the large size alone.
    PerSecond,
}

/// One row to check.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The row's name (`-e` matches it or its first event).
    pub id: String,
    /// Events counted; the first is the row's.
    pub events: Vec<String>,
    /// The kernel and its fixed arguments; the size is appended.
    pub kernel: Vec<String>,
    /// The two sizes (only the large one for the rate measures).
    pub sizes: (u64, u64),
    /// What the row shows, in words.
    pub what: String,
    /// The unit of the values.
    pub unit: &'static str,
    /// The answer, when there is one value.
    pub expected: Option<f64>,
    /// The accepted range of the measured value.
    pub range: (f64, f64),
    /// The tolerance as printed (`exact`, `±0.5%`).
    pub tolerance: String,
    /// How the value is measured.
    pub measure: Measure,
    /// Counts a hardware PMU (the reasons differ).
    pub hardware: bool,
    /// Count these CPUs instead of the kernel (system-wide boxes).
    pub cpus: Option<Vec<u32>>,
    /// Pin the kernel here (a hybrid CPU's core type).
    pub pin: Option<Vec<u32>>,
    /// The core type's PMU on a hybrid CPU.
    pub pmu: Option<String>,
    /// A metric this row checks (`-M` matches it).
    pub metric: Option<&'static str>,
    /// Why it cannot run, known before running.
    pub unavailable: Option<String>,
    /// Run the kernel's process in the real-time class from its exec on,
    /// pinned to the CPU check runs on (`Realtime`): its
    /// start-up, not only its kernel, cannot be preempted or migrated.
    pub realtime: bool,
}

impl Probe {
    fn new(id: &str, event: &str, kernel: &[&str], sizes: (u64, u64), what: String) -> Probe {
        Probe {
            id: id.into(),
            events: vec![event.into()],
            kernel: kernel.iter().map(|s| s.to_string()).collect(),
            sizes,
            what,
            unit: "",
            expected: None,
            range: (0.0, 0.0),
            tolerance: String::new(),
            measure: Measure::Difference,
            hardware: false,
            cpus: None,
            pin: None,
            pmu: None,
            metric: None,
            unavailable: None,
            realtime: false,
        }
    }

    fn exact(mut self, expected: f64, unit: &'static str) -> Probe {
        (self.expected, self.range, self.unit) = (Some(expected), (expected, expected), unit);
        self.tolerance = "exact".into();
        self
    }

    fn relative(mut self, expected: f64, below: f64, above: f64, unit: &'static str) -> Probe {
        self.expected = Some(expected);
        self.range = (expected * (1.0 - below), expected * (1.0 + above));
        self.unit = unit;
        self.tolerance = match below == above {
            true => format!("±{}%", below * 100.0),
            false => format!("-{}%/+{}%", below * 100.0, above * 100.0),
        };
        self
    }

    fn absolute(mut self, expected: f64, below: f64, above: f64, unit: &'static str) -> Probe {
        (self.expected, self.range, self.unit) =
            (Some(expected), (expected - below, expected + above), unit);
        self.tolerance = match below == above {
            true => format!("±{below} {unit}"),
            false => format!("-{below}/+{above} {unit}"),
        };
        self
    }

    fn hardware(mut self) -> Probe {
        self.hardware = true;
        self
    }
}

/// Whether `name` names an event here (in the kernel's lists or the
/// database's tables).
fn resolves(name: &str, db: &Database) -> bool {
    pmx_count::parse_event_list(name)
        .ok()
        .is_some_and(|g| pmx_count::stat::plan(&g, db).is_ok())
}

/// The first of `names` this CPU's tables know.
fn first_known(names: &[&str], db: &Database) -> Option<String> {
    names
        .iter()
        .find(|n| resolves(n, db))
        .map(|n| n.to_string())
}

/// Every row for this machine, software first.
pub fn all(
    machine: &Machine,
    db: &Database,
    caches: &CacheInfo,
    tsc_hz: Option<f64>,
) -> Vec<Probe> {
    let mut rows = software(machine, tsc_hz);
    let types: Vec<(Option<String>, Option<Vec<u32>>)> = match machine.core_types.is_empty() {
        true => vec![(None, None)],
        false => machine
            .core_types
            .iter()
            .map(|(p, cpus)| (Some(p.clone()), cpus.first().map(|c| vec![*c])))
            .collect(),
    };
    for (pmu, pin) in types {
        for mut p in hardware(db, caches) {
            if let Some(pmu) = &pmu {
                p.events[0] = format!("{pmu}/{}/", p.events[0]);
                p.id = format!("{}:{pmu}", p.id);
            }
            (p.pmu, p.pin) = (pmu.clone(), pin.clone());
            rows.push(p);
        }
    }
    rows.push(memory(machine));
    rows
}

fn software(machine: &Machine, tsc_hz: Option<f64>) -> Vec<Probe> {
    let mut sleep_wall = Probe::new(
        "wall-time",
        "task-clock",
        &["sleep"],
        (20, 220),
        "wall time of 200 ms more sleep (a loaded machine delays starts and wake-ups: up to double is a busy machine, not a wrong clock)".into(),
    )
    .relative(200.0, 0.3, 1.0, "msec");
    sleep_wall.measure = Measure::Wall;
    let mut tsc = Probe::new(
        "msr/tsc",
        "msr/tsc/",
        &["spin"],
        (0, 100),
        "TSC ticks per second of CPU time, against the TSC's rate measured on the clock".into(),
    );
    tsc.events.push("task-clock".into());
    tsc.measure = Measure::PerCpuSecond;
    tsc = match tsc_hz {
        Some(hz) => tsc.relative(hz, 0.02, 0.02, "Hz"),
        None => {
            tsc.unavailable = Some("no time-stamp counter on this architecture".into());
            tsc
        }
    };
    if !machine.pmus.iter().any(|p| p == "msr") {
        tsc.unavailable = Some(
            "not supported here: the kernel lists no msr PMU (CONFIG_X86 perf msr driver)".into(),
        );
    }
    let mut rapl = Probe::new(
        "energy-pkg",
        "power/energy-pkg/",
        &["spin"],
        (0, 200),
        "package power while one CPU spins, from RAPL's energy in its unit (Joules)".into(),
    );
    (rapl.measure, rapl.cpus, rapl.unit) = (Measure::PerSecond, Some(vec![0]), "W");
    (rapl.range, rapl.tolerance) = ((0.05, 2000.0), "0.05–2000 W".into());
    if !machine.pmus.iter().any(|p| p == "power") {
        rapl.unavailable = Some("not supported here: the kernel lists no power PMU (RAPL), which hypervisors rarely pass through".into());
    }
    let mut switches = Probe::new(
        "context-switches",
        "context-switches",
        &["ping-pong"],
        (100, 600),
        "500 more pipe round trips on one CPU".into(),
    )
    .absolute(1000.0, 2.0, 2.0, "switches");
    // A loaded CPU preempts the kernel's process while it starts (before
    // the kernel takes the real-time class itself): switches that differ
    // from run to run and do not cancel.
    switches.realtime = true;
    vec![
        Probe::new(
            "page-faults",
            "page-faults",
            &["pages"],
            (100, 1100),
            "1000 more fresh pages touched".into(),
        )
        .exact(1000.0, "faults"),
        switches,
        Probe::new(
            "task-clock",
            "task-clock",
            &["sleep"],
            (20, 120),
            "CPU time of 100 ms more sleep".into(),
        )
        .absolute(0.0, 5.0, 5.0, "msec"),
        sleep_wall,
        tsc,
        rapl,
    ]
}

fn hardware(db: &Database, caches: &CacheInfo) -> Vec<Probe> {
    const N: (u64, u64) = (1_000_000, 11_000_000);
    let delta = (N.1 - N.0) as f64;
    let loop_what = || "10M more iterations of dec/jnz".to_string();
    let mut rows = vec![
        Probe::new("instructions", "instructions", &["loop"], N, loop_what())
            .relative(2.0 * delta, 0.005, 0.005, "instructions")
            .hardware(),
        Probe::new("branches", "branches", &["loop"], N, loop_what())
            .relative(delta, 0.005, 0.005, "branches")
            .hardware(),
    ];
    let taken = [
        "BR_INST_RETIRED.NEAR_TAKEN",
        "ex_ret_brn_tkn",
        "BR_RETIRED.TAKEN",
    ];
    let mut t = Probe::new("taken-branches", taken[0], &["loop"], N, loop_what())
        .relative(delta, 0.005, 0.005, "branches")
        .hardware();
    match first_known(&taken, db) {
        Some(e) => t.events[0] = e,
        None => {
            t.unavailable = Some(format!(
                "no taken-branch event in the event tables for {}",
                db.target.cpu
            ))
        }
    }
    rows.push(t);
    let l1 = caches.l1d.unwrap_or(32 << 10) / 2;
    let l1s = l1.to_string();
    rows.push(
        Probe::new(
            "L1-dcache-loads",
            "L1-dcache-loads",
            &["chase", &l1s],
            N,
            format!("10M more loads chasing pointers in {} KiB", l1 >> 10),
        )
        .relative(delta, 0.02, 0.02, "loads")
        .hardware(),
    );
    let mut miss = Probe::new(
        "L1-dcache-load-misses",
        "L1-dcache-load-misses",
        &["chase", &l1s],
        N,
        format!(
            "10M more loads chasing pointers in {} KiB (inside L1)",
            l1 >> 10
        ),
    )
    .hardware();
    (miss.expected, miss.range, miss.unit, miss.tolerance) = (
        Some(0.0),
        (0.0, delta * 0.01),
        "misses",
        "+1% of the loads".into(),
    );
    rows.push(miss);
    let far = caches
        .llc
        .unwrap_or(32 << 20)
        .saturating_mul(4)
        .max(64 << 20);
    let steps = (100_000, 1_100_000);
    rows.push(
        Probe::new(
            "LLC-load-misses",
            "LLC-load-misses",
            &["chase", &far.to_string()],
            steps,
            format!(
                "1M more loads chasing pointers in {} MiB (4 × the LLC)",
                far >> 20
            ),
        )
        .relative(1e6, 0.5, 0.2, "misses")
        .hardware(),
    );
    rows.extend(Width::ALL.into_iter().map(|w| flops(w, db)));
    rows
}

/// The FP-event row of a width: Intel's `FP_ARITH_INST_RETIRED` counts
/// each multiply-add twice (2 per accumulator step, fused or not); AMD's
/// `FP_RET_SSE_AVX_OPS.ALL` counts FLOPs.
fn flops(w: Width, db: &Database) -> Probe {
    const N: (u64, u64) = (1_000_000, 11_000_000);
    let intel = match w {
        Width::Scalar => "FP_ARITH_INST_RETIRED.SCALAR_DOUBLE",
        Width::Sse => "FP_ARITH_INST_RETIRED.128B_PACKED_DOUBLE",
        Width::Avx2 => "FP_ARITH_INST_RETIRED.256B_PACKED_DOUBLE",
        Width::Avx512 => "FP_ARITH_INST_RETIRED.512B_PACKED_DOUBLE",
    };
    let amd = "FP_RET_SSE_AVX_OPS.ALL";
    let iters = (N.1 - N.0) as f64;
    let what = format!(
        "10M more iterations of {} {} multiply-adds",
        fma::ACCUMULATORS,
        w.name()
    );
    let p = Probe::new(
        &format!("fp-{}", w.name()),
        intel,
        &["fma", w.name()],
        N,
        what,
    )
    .hardware();
    let mut p = if resolves(intel, db) {
        p.relative(iters * (fma::ACCUMULATORS * 2) as f64, 0.01, 0.01, "ops")
    } else if resolves(amd, db) {
        let mut p = p.relative(iters * w.flops_per_iteration() as f64, 0.01, 0.01, "FLOPs");
        p.events[0] = amd.into();
        p
    } else {
        let mut p = p.relative(iters * w.flops_per_iteration() as f64, 0.01, 0.01, "FLOPs");
        p.unavailable = Some(format!(
            "no floating-point event in the event tables for {}",
            db.target.cpu
        ));
        p
    };
    p.metric = Some("FLOPs");
    if !w.available() {
        p.unavailable = Some(format!("this CPU has no {} unit (CPUID)", w.name()));
    }
    p
}

/// The memory controllers' row: the triad's bytes against the boxes'
/// CAS counts (Intel's `uncore_imc_N` with the kernel's `cas_count_*`
/// aliases, in MiB).
fn memory(machine: &Machine) -> Probe {
    let boxes = machine.boxes("uncore_imc");
    let n: u64 = 4 << 20;
    let mut p = Probe::new(
        "memory-bandwidth",
        "uncore_imc/cas_count_read/",
        &["triad", &n.to_string()],
        (0, 10),
        "memory traffic of 10 triad passes over 3 × 32 MiB, per second".into(),
    );
    (p.measure, p.cpus, p.hardware, p.unit) = (Measure::PerSecond, Some(vec![0]), true, "MiB/s");
    p.metric = Some("MEM");
    (p.range, p.tolerance) = ((1.0, f64::MAX), "above 0 (a box that counts)".into());
    if boxes.is_empty() {
        let amd = machine.boxes("amd_umc").len() + machine.boxes("amd_df").len();
        p.unavailable = Some(match amd {
            0 => "not supported here: no memory-controller PMU is exposed (no uncore_imc_*, amd_umc_* or amd_df under /sys/bus/event_source/devices); hypervisors and most cloud instances hide them".into(),
            _ => "the AMD memory-controller boxes are listed, but pmx check does not program them yet".into(),
        });
        return p;
    }
    p.events = boxes
        .iter()
        .flat_map(|b| {
            [
                format!("{b}/cas_count_read/"),
                format!("{b}/cas_count_write/"),
            ]
        })
        .collect();
    p
}
