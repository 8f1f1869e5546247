//! pmx's built-in metrics, written from the published definitions.
//!
//! - Every CPU: `IPC`, `CPI`, `branch_miss_ratio`, `frequency` (GHz =
//!   cycles / duration), `running_frequency` (GHz = cycles / task-clock),
//!   over the kernel's generic events (`cycles`, `instructions`, `branches`,
//!   `branch-misses`), which every perf-capable x86 kernel maps; and perf's
//!   shadow metrics with `stat-shadow.c`'s formulas: `CPUs_utilized`
//!   (task-clock / wall time), `frontend_cycles_idle`,
//!   `backend_cycles_idle`, `stalled_cycles_per_insn` (the larger stall
//!   count per instruction), `cache_miss_ratio`, the L1d/L1i/LLC/dTLB/iTLB
//!   load miss ratios, and `cs_per_second`, `migrations_per_second`,
//!   `page_faults_per_second` (per second of task-clock).
//! - Intel big cores: `llc_miss_ratio` and `llc_mpki` from the
//!   architectural `LONGEST_LAT_CACHE` events; top-down level 1 (Yasin,
//!   ISPASS 2014; Intel SDM "Top-down Microarchitecture Analysis"):
//!   - Sandy Bridge through Cascade Lake (4-wide, no PERF_METRICS):
//!     `slots = 4 × core cycles` (`CPU_CLK_UNHALTED.THREAD_ANY / 2` per
//!     thread when SMT is on, as Intel's tables count them);
//!     Frontend Bound = `IDQ_UOPS_NOT_DELIVERED.CORE / slots`;
//!     Bad Speculation = `(UOPS_ISSUED.ANY − UOPS_RETIRED.RETIRE_SLOTS +
//!     4 × recovery cycles) / slots` (`INT_MISC.RECOVERY_CYCLES_ANY / 2` with
//!     SMT, else `INT_MISC.RECOVERY_CYCLES`); Retiring =
//!     `UOPS_RETIRED.RETIRE_SLOTS / slots`; Backend Bound = 1 − the others.
//!   - Ice Lake and newer: the `PERF_METRICS` fractions with the `TOPDOWN.SLOTS`
//!     fixed counter, read through perf's `topdown-fe-bound`,
//!     `topdown-bad-spec`, `topdown-retiring`, `topdown-be-bound`; each
//!     category is its field over the sum of the four (the fields are
//!     fractions of 255 in the MSR and slot counts in perf; the ratio is the
//!     same). Intel's tables refine Frontend Bound with
//!     `INT_MISC.UOP_DROPPING` (and, for Ice Lake, Backend Bound with
//!     `INT_MISC.CLEARS_COUNT`); load them for those and for levels 2–6.
//!
//!   Thresholds are Intel's level-1 ones: Frontend Bound > 15 %, Bad
//!   Speculation > 15 %, Backend Bound > 20 %, Retiring > 70 %.
//! - AMD Zen 1–5: the cache-hierarchy group `amd_cache` (see
//!   [`crate::amd_cache`]), with perf's event names per generation; Zen 3
//!   and 4: `l3_demand_miss_ratio`, the share
//!   of demand data-cache fills from beyond the L2 that came from beyond the
//!   core complex's L3 (PMCx043).
//! - AMD Zen 4 and Zen 5: the pipeline-utilization tree, levels 1 and 2
//!   (AMD's PPRs, "Pipeline Utilization"): [`crate::amd_pipeline`].
//! - AMD family 10h: the classic cache-hierarchy group (`fam10h_cache`,
//!   also answering to `amd_cache`): request rates and miss ratios of the L1
//!   data and instruction caches, the L2 and the L3.
//!
//! Event names are Intel's for Intel; for AMD, libpfm4's
//! (`amd64_fam10h_barcelona`, `amd64_fam19h_zen3`, `amd64_fam19h_zen4`) in
//! the family 10h group, `l3_demand_miss_ratio` and the Zen 4 tree, AMD's
//! mnemonics in the Zen 5 tree, and
//! Linux perf's (`ls_dispatch.all`, `ic_cache_fill_l2`) in `amd_cache`.

use crate::formula::{Dialect, Formula};
use crate::library::{Metric, MetricSource, MetricTable, SourceKind, Threshold};
use pmx_model::cpu::{CoreKind, CpuId, Vendor};

struct Def {
    name: &'static str,
    formula: &'static str,
    unit: &'static str,
    scale: f64,
    description: &'static str,
    groups: &'static [&'static str],
    threshold: Option<&'static str>,
    level: Option<u32>,
}

const fn def(
    name: &'static str,
    formula: &'static str,
    unit: &'static str,
    scale: f64,
    description: &'static str,
    groups: &'static [&'static str],
) -> Def {
    Def {
        name,
        formula,
        unit,
        scale,
        description,
        groups,
        threshold: None,
        level: None,
    }
}

const fn tma(
    name: &'static str,
    formula: &'static str,
    description: &'static str,
    threshold: &'static str,
) -> Def {
    Def {
        name,
        formula,
        unit: "%",
        scale: 100.0,
        description,
        groups: &["TopdownL1", "TmaL1", "tma_L1_group"],
        threshold: Some(threshold),
        level: Some(1),
    }
}

const GENERIC: &[Def] = &[
    def(
        "IPC",
        "instructions / cycles",
        "instructions per cycle",
        1.0,
        "Instructions retired per unhalted core cycle",
        &["Summary", "basic"],
    ),
    def(
        "CPI",
        "cycles / instructions",
        "cycles per instruction",
        1.0,
        "Unhalted core cycles per instruction retired",
        &["Summary", "basic"],
    ),
    def(
        "branch_miss_ratio",
        "branch-misses / branches",
        "%",
        100.0,
        "Share of retired branches that were mispredicted",
        &["Summary", "basic", "branch"],
    ),
    def(
        "frequency",
        "cycles / duration_time / 1e9",
        "GHz",
        1.0,
        "Unhalted core cycles per second of wall-clock time: the clock of one busy CPU; for a command, cycles of all its threads over the run's duration",
        &["Summary", "basic"],
    ),
    def(
        "running_frequency",
        "cycles / task-clock",
        "GHz",
        1.0,
        "Unhalted core cycles per nanosecond the task ran (task-clock): the average clock while running",
        &["Summary", "basic"],
    ),
    // perf's shadow metrics (tools/perf/util/stat-shadow.c), with perf's
    // formulas, for the events perf prints them beside.
    def(
        "CPUs_utilized",
        "task-clock / (duration_time * 1e9)",
        "CPUs utilized",
        1.0,
        "CPUs busy on average: task-clock (ns) over the wall-clock time, as perf prints beside task-clock",
        &["Summary", "basic", "perf"],
    ),
    def(
        "frontend_cycles_idle",
        "stalled-cycles-frontend / cycles",
        "%",
        100.0,
        "Share of cycles the frontend stalled (perf's \"frontend cycles idle\")",
        &["perf", "stalls"],
    ),
    def(
        "backend_cycles_idle",
        "stalled-cycles-backend / cycles",
        "%",
        100.0,
        "Share of cycles the backend stalled (perf's \"backend cycles idle\")",
        &["perf", "stalls"],
    ),
    def(
        "stalled_cycles_per_insn",
        "max(stalled-cycles-frontend, stalled-cycles-backend) / instructions if has_event(stalled-cycles-frontend) and has_event(stalled-cycles-backend) else (stalled-cycles-frontend / instructions if has_event(stalled-cycles-frontend) else stalled-cycles-backend / instructions)",
        "stalled cycles per insn",
        1.0,
        "The larger of the frontend and backend stalled cycles per instruction, as perf prints it (one not supported counts as 0, as in perf)",
        &["perf", "stalls"],
    ),
    def(
        "cache_miss_ratio",
        "cache-misses / cache-references",
        "%",
        100.0,
        "Share of cache references that missed (perf's \"of all cache refs\")",
        &["perf", "cache"],
    ),
    def(
        "l1d_load_miss_ratio",
        "L1-dcache-load-misses / L1-dcache-loads",
        "%",
        100.0,
        "Share of L1 data cache loads that missed (perf's \"of all L1-dcache accesses\")",
        &["perf", "cache"],
    ),
    def(
        "l1i_load_miss_ratio",
        "L1-icache-load-misses / L1-icache-loads",
        "%",
        100.0,
        "Share of L1 instruction cache loads that missed (perf's \"of all L1-icache accesses\")",
        &["perf", "cache"],
    ),
    def(
        "llc_load_miss_ratio",
        "LLC-load-misses / LLC-loads",
        "%",
        100.0,
        "Share of last-level cache loads that missed (perf's \"of all LL-cache accesses\")",
        &["perf", "cache"],
    ),
    def(
        "dtlb_load_miss_ratio",
        "dTLB-load-misses / dTLB-loads",
        "%",
        100.0,
        "Share of data TLB loads that missed (perf's \"of all dTLB cache accesses\")",
        &["perf", "tlb"],
    ),
    def(
        "itlb_load_miss_ratio",
        "iTLB-load-misses / iTLB-loads",
        "%",
        100.0,
        "Share of instruction TLB loads that missed (perf's \"of all iTLB cache accesses\")",
        &["perf", "tlb"],
    ),
    def(
        "cs_per_second",
        "context-switches / task-clock * 1e9",
        "/sec",
        1.0,
        "Context switches per second the task ran (perf's K/sec beside context-switches)",
        &["perf", "software"],
    ),
    def(
        "migrations_per_second",
        "cpu-migrations / task-clock * 1e9",
        "/sec",
        1.0,
        "CPU migrations per second the task ran (perf's K/sec beside cpu-migrations)",
        &["perf", "software"],
    ),
    def(
        "page_faults_per_second",
        "page-faults / task-clock * 1e9",
        "/sec",
        1.0,
        "Page faults per second the task ran (perf's K/sec beside page-faults)",
        &["perf", "software"],
    ),
];

const INTEL_CACHE: &[Def] = &[
    def(
        "llc_miss_ratio",
        "LONGEST_LAT_CACHE.MISS / LONGEST_LAT_CACHE.REFERENCE",
        "%",
        100.0,
        "Share of last-level-cache references (core requests) that missed the LLC",
        &["cache", "Summary"],
    ),
    def(
        "llc_mpki",
        "1000 * LONGEST_LAT_CACHE.MISS / INST_RETIRED.ANY",
        "per 1000 instructions",
        1.0,
        "Last-level-cache misses per thousand instructions",
        &["cache"],
    ),
];

const INTEL_TMA_CLASSIC: &[Def] = &[
    def(
        "tma_slots",
        "4 * (CPU_CLK_UNHALTED.THREAD_ANY / 2 if #smt_on else CPU_CLK_UNHALTED.THREAD)",
        "slots",
        1.0,
        "Issue slots of the thread: pipeline width (4) × core cycles (per thread when SMT is on)",
        &["tma_info"],
    ),
    tma(
        "tma_frontend_bound",
        "IDQ_UOPS_NOT_DELIVERED.CORE / tma_slots",
        "Share of issue slots the frontend left empty while the backend could accept uops",
        "tma_frontend_bound > 0.15",
    ),
    tma(
        "tma_bad_speculation",
        "(UOPS_ISSUED.ANY - UOPS_RETIRED.RETIRE_SLOTS + 4 * (INT_MISC.RECOVERY_CYCLES_ANY / 2 if #smt_on else INT_MISC.RECOVERY_CYCLES)) / tma_slots",
        "Share of issue slots spent on uops that never retired, and on recovering from mispredictions and machine clears",
        "tma_bad_speculation > 0.15",
    ),
    tma(
        "tma_backend_bound",
        "1 - (tma_frontend_bound + tma_bad_speculation + tma_retiring)",
        "Share of issue slots left empty because the backend could not accept uops",
        "tma_backend_bound > 0.2",
    ),
    tma(
        "tma_retiring",
        "UOPS_RETIRED.RETIRE_SLOTS / tma_slots",
        "Share of issue slots that retired uops",
        "tma_retiring > 0.7",
    ),
];

const INTEL_TMA_SLOTS: &[Def] = &[
    def(
        "tma_slots",
        "TOPDOWN.SLOTS",
        "slots",
        1.0,
        "Issue slots (the TOPDOWN.SLOTS fixed counter)",
        &["tma_info"],
    ),
    tma(
        "tma_frontend_bound",
        "topdown-fe-bound / (topdown-fe-bound + topdown-bad-spec + topdown-retiring + topdown-be-bound)",
        "Share of issue slots the frontend left empty while the backend could accept uops (PERF_METRICS)",
        "tma_frontend_bound > 0.15",
    ),
    tma(
        "tma_bad_speculation",
        "topdown-bad-spec / (topdown-fe-bound + topdown-bad-spec + topdown-retiring + topdown-be-bound)",
        "Share of issue slots wasted by incorrect speculation (PERF_METRICS)",
        "tma_bad_speculation > 0.15",
    ),
    tma(
        "tma_backend_bound",
        "topdown-be-bound / (topdown-fe-bound + topdown-bad-spec + topdown-retiring + topdown-be-bound)",
        "Share of issue slots left empty because the backend could not accept uops (PERF_METRICS)",
        "tma_backend_bound > 0.2",
    ),
    tma(
        "tma_retiring",
        "topdown-retiring / (topdown-fe-bound + topdown-bad-spec + topdown-retiring + topdown-be-bound)",
        "Share of issue slots that retired uops (PERF_METRICS)",
        "tma_retiring > 0.7",
    ),
];

const ZEN3_L3: &[Def] = &[def(
    "l3_demand_miss_ratio",
    "DEMAND_DATA_CACHE_FILLS_FROM_SYSTEM:EXT_CACHE_LCL:MEM_IO_LCL:EXT_CACHE_RMT:MEM_IO_RMT / DEMAND_DATA_CACHE_FILLS_FROM_SYSTEM:INT_CACHE:EXT_CACHE_LCL:MEM_IO_LCL:EXT_CACHE_RMT:MEM_IO_RMT",
    "%",
    100.0,
    "Share of demand data-cache fills from beyond the L2 that came from beyond the core complex's L3 (other CCX, DRAM, I/O) (PMCx043)",
    &["cache", "l3", "Summary"],
)];

const ZEN4_L3: &[Def] = &[def(
    "l3_demand_miss_ratio",
    "DEMAND_DATA_CACHE_FILLS_FROM_SYSTEM:NEAR_CACHE_NEAR_FAR:DRAM_IO_NEAR:FAR_CACHE_NEAR_FAR:DRAM_IO_FAR:ALT_MEM_NEAR_FAR / DEMAND_DATA_CACHE_FILLS_FROM_SYSTEM:LOCAL_CCX:NEAR_CACHE_NEAR_FAR:DRAM_IO_NEAR:FAR_CACHE_NEAR_FAR:DRAM_IO_FAR:ALT_MEM_NEAR_FAR",
    "%",
    100.0,
    "Share of demand data-cache fills from beyond the L2 that came from beyond the core complex's L3 (other CCX, DRAM, I/O, extension memory) (PMCx043)",
    &["cache", "l3", "Summary"],
)];

const FAM10H_CACHE: &[Def] = &[
    def(
        "dc_request_rate",
        "DATA_CACHE_ACCESSES / RETIRED_INSTRUCTIONS",
        "per instruction",
        1.0,
        "DC request rate: L1 data-cache accesses per instruction",
        &["fam10h_cache", "amd_cache", "cache"],
    ),
    def(
        "dc_misses",
        "DATA_CACHE_REFILLS:L2_SHARED:L2_EXCLUSIVE:L2_OWNED:L2_MODIFIED + DATA_CACHE_REFILLS_FROM_SYSTEM:SHARED:EXCLUSIVE:OWNED:MODIFIED",
        "misses",
        1.0,
        "DC misses: L1 data-cache refills from the L2 and from the system",
        &["fam10h_cache", "amd_cache", "cache"],
    ),
    def(
        "dc_miss_ratio",
        "dc_misses / DATA_CACHE_ACCESSES",
        "%",
        100.0,
        "DC miss ratio: DC misses / DC accesses",
        &["fam10h_cache", "amd_cache", "cache"],
    ),
    def(
        "ic_request_rate",
        "INSTRUCTION_CACHE_FETCHES / RETIRED_INSTRUCTIONS",
        "per instruction",
        1.0,
        "IC request rate: L1 instruction-cache fetches per instruction",
        &["fam10h_cache", "amd_cache", "cache"],
    ),
    def(
        "ic_misses",
        "INSTRUCTION_CACHE_REFILLS_FROM_L2 + INSTRUCTION_CACHE_REFILLS_FROM_SYSTEM",
        "misses",
        1.0,
        "IC misses: L1 instruction-cache refills from the L2 and from the system",
        &["fam10h_cache", "amd_cache", "cache"],
    ),
    def(
        "ic_miss_ratio",
        "ic_misses / INSTRUCTION_CACHE_FETCHES",
        "%",
        100.0,
        "IC miss ratio: IC misses / IC fetches",
        &["fam10h_cache", "amd_cache", "cache"],
    ),
    def(
        "l2_requests",
        "dc_misses + ic_misses + REQUESTS_TO_L2:TLB_WALK",
        "requests",
        1.0,
        "L2 requests: DC misses + IC misses + L2 requests for TLB fills",
        &["fam10h_cache", "amd_cache", "cache"],
    ),
    def(
        "l2_request_rate",
        "l2_requests / RETIRED_INSTRUCTIONS",
        "per instruction",
        1.0,
        "L2 request rate: L2 requests per instruction",
        &["fam10h_cache", "amd_cache", "cache"],
    ),
    def(
        "l2_misses",
        "DATA_CACHE_REFILLS_FROM_SYSTEM:SHARED:EXCLUSIVE:OWNED:MODIFIED + INSTRUCTION_CACHE_REFILLS_FROM_SYSTEM + L2_CACHE_MISS:TLB_WALK",
        "misses",
        1.0,
        "L2 misses: DC and IC refills from the system + L2 misses for TLB fills",
        &["fam10h_cache", "amd_cache", "cache"],
    ),
    def(
        "l2_miss_ratio",
        "l2_misses / l2_requests",
        "%",
        100.0,
        "L2 miss ratio: L2 misses / L2 requests",
        &["fam10h_cache", "amd_cache", "cache"],
    ),
    def(
        "l3_request_rate",
        "READ_REQUEST_TO_L3_CACHE:ALL_CORES / RETIRED_INSTRUCTIONS",
        "per instruction",
        1.0,
        "L3 request rate: L3 read requests (all cores) per instruction",
        &["fam10h_cache", "amd_cache", "cache"],
    ),
    def(
        "l3_miss_ratio",
        "L3_CACHE_MISSES:ALL_CORES / READ_REQUEST_TO_L3_CACHE:ALL_CORES",
        "%",
        100.0,
        "L3 miss ratio: L3 misses / L3 read requests (all cores)",
        &["fam10h_cache", "amd_cache", "cache"],
    ),
];

/// Which top-down form an Intel core uses.
fn intel_tma_form(code: &str) -> Option<&'static [Def]> {
    match code {
        "SNB" | "JKT" | "IVB" | "IVT" | "HSW" | "HSX" | "BDW" | "BDX" | "BDW-DE" | "SKL"
        | "SKX" | "CLX" | "CNL" => Some(INTEL_TMA_CLASSIC),
        "ICL" | "ICX" | "RKL" | "TGL" | "SPR" | "EMR" | "GNR" | "ADL" | "MTL" | "ARL" | "LNL"
        | "PTL" | "NVL" | "DMR" => Some(INTEL_TMA_SLOTS),
        _ => None,
    }
}

/// The built-in metrics that apply to `cpu` (the generic ones only when the
/// CPU is not known).
pub fn builtin_table(cpu: Option<&CpuId>) -> MetricTable {
    let arch = cpu.and_then(|c| c.microarch());
    let mut parts: Vec<&[Def]> = vec![GENERIC];
    let mut what = String::from("built-in");
    if let (Some(cpu), Some(arch)) = (cpu, arch) {
        what = format!("built-in ({})", arch.name);
        match cpu.vendor {
            Vendor::Intel if arch.kind != CoreKind::Small && arch.kind != CoreKind::ManyCore => {
                parts.push(INTEL_CACHE);
                if let Some(t) = intel_tma_form(arch.code) {
                    parts.push(t);
                }
            }
            Vendor::Amd | Vendor::Hygon => match arch.code {
                "zen3" => parts.push(ZEN3_L3),
                "zen4" => parts.push(ZEN4_L3),
                "fam10h" => parts.push(FAM10H_CACHE),
                _ => {}
            },
            _ => {}
        }
    }
    let mut table = MetricTable::new(MetricSource {
        kind: SourceKind::Builtin,
        origin: what,
        version: None,
        pmu: None,
    });
    for d in parts.into_iter().flatten() {
        match build(d) {
            Ok(m) => table.metrics.push(m),
            Err(e) => table.warnings.push(format!("{}: {e}", d.name)),
        }
    }
    if let Some(cpu) = cpu.filter(|c| c.vendor.is_amd_like()) {
        crate::amd_pipeline::add(&mut table, cpu);
    }
    if let Some(ev) = arch.and_then(|a| crate::amd_cache::zen_cache_events(a.code)) {
        crate::amd_cache::add_zen_cache(&mut table, ev);
    }
    crate::perf_x86::pipeline_thresholds(&mut table);
    table
}

/// Every built-in definition for every CPU, for tests and documentation.
pub fn all_builtin_tables() -> Vec<MetricTable> {
    let mut out = Vec::new();
    for key in [
        "GenuineIntel-6-55-4",
        "GenuineIntel-6-8F",
        "AuthenticAMD-23-31",
        "AuthenticAMD-25-1",
        "AuthenticAMD-25-11",
        "AuthenticAMD-26-2",
        "AuthenticAMD-16-2",
    ] {
        if let Ok(cpu) = key.parse::<CpuId>() {
            out.push(builtin_table(Some(&cpu)));
        }
    }
    out
}

fn build(d: &Def) -> Result<Metric, crate::FormulaError> {
    let mut m = Metric::from_formula(
        d.name,
        Formula::parse(d.formula, Dialect::Pmx)?,
        d.unit,
        d.scale,
    );
    m.description = d.description.to_string();
    m.groups = d.groups.iter().map(|g| g.to_string()).collect();
    m.level = d.level;
    if let Some(t) = d.threshold {
        m.threshold = Some(Threshold {
            formula: Formula::parse(t, Dialect::Pmx)?,
            issues: Vec::new(),
            supplied_by: None,
        });
    }
    if d.groups.contains(&"TmaL1") {
        m.category = Some("TMA".to_string());
    }
    Ok(m)
}
