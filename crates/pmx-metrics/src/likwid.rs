//! LIKWID's performance groups under LIKWID's names (`-M MEM`,
//! `-M FLOPS_DP`, `-M L3` …), defined by pmx for each CPU it knows.
//!
//! LIKWID (RRZE-HPC) names a *group* for each question an HPC user asks
//! (how much memory bandwidth, how many FLOP/s, how much L2 traffic) and
//! prints each answer under a fixed name with its unit in brackets
//! (`Memory bandwidth [MBytes/s]`, `DP [MFLOP/s]`). Users search for those
//! names; pmx keeps them. LIKWID's group files are the reference for what
//! each metric computes; the definitions here are pmx's own, written per
//! vendor and generation with the events of Intel's tables and of Linux
//! perf's AMD tables. docs/groups.md has the full table.
//!
//! | group | Intel (Skylake-SP, Ice Lake-SP, Sapphire Rapids, Skylake, Alder Lake) | AMD Zen 2–5 |
//! |---|---|---|
//! | `MEM` | CAS reads and writes of every memory controller (`UNC_M_CAS_COUNT.RD`/`.WR`, boxes summed; Skylake client: the IMC's `data_reads`/`data_writes`) × 64 bytes | Zen 2, 3: the data fabric's eight DRAM channel events × 64 bytes (reads and writes together); Zen 4, 5: every UMC's `umc_cas_cmd.rd`/`.wr` × 64 bytes |
//! | `FLOPS_DP`, `FLOPS_SP` | `FP_ARITH_INST_RETIRED.*` × lanes (scalar 1, 128b 2/4, 256b 4/8, 512b 8/16) | Zen 2–4: `fp_ret_sse_avx_ops.all` (no precision split); Zen 5: the scalar and packed FLOP counts per precision |
//! | `FLOPS_AVX` | 256b and 512b packed FLOPs | Zen 5: packed FLOPs per precision |
//! | `MEM_DP`, `MEM_SP` | `MEM` + `FLOPS_DP`/`FLOPS_SP` + operational intensity (FLOPs / memory bytes) | the same |
//! | `L2` | `L1D.REPLACEMENT`, the L1 write-backs, instruction-cache misses × 64 | `l2_request_g1.all_no_prefetch` × 64 |
//! | `L3` | `L2_LINES_IN.ALL`, L2 evictions × 64 | the L3 PMU's accesses and misses |
//! | `CACHES` / `CACHE` | Intel: `L2` + `L3` + `MEM` | AMD: L1 data-cache requests and misses |
//! | `BRANCH`, `DATA`, `TLB_DATA`, `ENERGY`, `CLOCK` | branches, loads/stores, data-TLB walks, RAPL, clock | the same questions, AMD's events |
//!
//! The memory-controller counts are per box (`uncore_imc_0…N`,
//! `amd_umc_0…N`); a metric reads the sum over every box, which
//! `pmx analyze` forms from perf's per-box lines. A group answers only
//! what its CPU can count: where a generation has no event for a
//! quantity, the group has no such metric, and [`absent`] says why when
//! the user asks for it.
//!
//! Each metric is defined once and belongs to every group that prints
//! it; where LIKWID gives one name two meanings (`Packed [MUOPS/s]` in
//! `FLOPS_DP` and in `FLOPS_SP`), pmx adds the precision to the single
//! precision one (`Packed SP [MUOPS/s]`). LIKWID's `CPI` is pmx's `CPI`.

use crate::amd_cache::zen_cache_events;
use crate::formula::{Dialect, Formula};
use crate::library::{Metric, MetricSource, MetricTable, SourceKind};
use pmx_model::cpu::{CpuId, Vendor};

/// The group names pmx defines (LIKWID's), in LIKWID's order.
pub const GROUPS: &[&str] = &[
    "MEM",
    "MEM_DP",
    "MEM_SP",
    "FLOPS_DP",
    "FLOPS_SP",
    "FLOPS_AVX",
    "L2",
    "L3",
    "CACHES",
    "CACHE",
    "BRANCH",
    "DATA",
    "TLB_DATA",
    "ENERGY",
    "CLOCK",
];

const T: &str = "duration_time";

/// How a CPU's memory traffic is counted.
#[derive(Debug, Clone, Copy)]
enum Mem {
    /// Read and write CAS commands of each memory-controller box (summed
    /// over the boxes), 64 bytes each.
    Cas { rd: &'static str, wr: &'static str },
    /// Data-fabric DRAM channel events (reads and writes together), 64
    /// bytes each.
    Channels(&'static [&'static str]),
}

/// How FLOPs are counted.
#[derive(Debug, Clone, Copy)]
enum Fp {
    /// Intel's `FP_ARITH_INST_RETIRED.*`, with or without 512-bit.
    Intel { avx512: bool },
    /// AMD Zen 2–4: one FLOP count of both precisions.
    AmdAll,
    /// AMD Zen 5: FLOP counts per precision, scalar and packed.
    AmdSplit,
}

/// One CPU's inputs.
#[derive(Debug, Clone, Copy)]
struct Cpu {
    label: &'static str,
    mem: Mem,
    fp: Fp,
    /// Intel: instruction-cache misses (L2 requests of the L1I).
    l2_icache: Option<&'static str>,
    /// Intel: L2 evictions toward the L3 (and memory).
    l3_evict: &'static str,
    /// Intel: the DTLB walk events (`MISS_CAUSES_A_WALK` or
    /// `WALK_COMPLETED`).
    dtlb_walk: &'static str,
    /// Intel servers: DRAM energy (`power/energy-ram/`).
    dram_energy: bool,
    /// AMD: the generation code (`zen2`…).
    zen: &'static str,
}

const SKX: Cpu = Cpu {
    label: "Skylake-SP",
    mem: Mem::Cas {
        rd: "UNC_M_CAS_COUNT.RD",
        wr: "UNC_M_CAS_COUNT.WR",
    },
    fp: Fp::Intel { avx512: true },
    l2_icache: Some("ICACHE_64B.IFTAG_MISS"),
    l3_evict: "L2_TRANS.L2_WB",
    dtlb_walk: "MISS_CAUSES_A_WALK",
    dram_energy: true,
    zen: "",
};

const ICX: Cpu = Cpu {
    label: "Ice Lake-SP",
    l3_evict: "L2_LINES_OUT.NON_SILENT",
    dtlb_walk: "WALK_COMPLETED",
    ..SKX
};

const SPR: Cpu = Cpu {
    label: "Sapphire Rapids",
    l2_icache: None,
    ..ICX
};

const SKL: Cpu = Cpu {
    label: "Skylake",
    mem: Mem::Cas {
        rd: "uncore_imc/data_reads/",
        wr: "uncore_imc/data_writes/",
    },
    fp: Fp::Intel { avx512: false },
    dram_energy: false,
    ..SKX
};

const ADL: Cpu = Cpu {
    label: "Alder Lake",
    mem: Mem::Cas {
        rd: "UNC_M_CAS_COUNT_RD",
        wr: "UNC_M_CAS_COUNT_WR",
    },
    fp: Fp::Intel { avx512: false },
    l2_icache: None,
    l3_evict: "L2_LINES_OUT.NON_SILENT",
    dtlb_walk: "WALK_COMPLETED",
    dram_energy: false,
    zen: "",
};

const DF_CHANNELS: &[&str] = &[
    "dram_channel_data_controller_0",
    "dram_channel_data_controller_1",
    "dram_channel_data_controller_2",
    "dram_channel_data_controller_3",
    "dram_channel_data_controller_4",
    "dram_channel_data_controller_5",
    "dram_channel_data_controller_6",
    "dram_channel_data_controller_7",
];

const UMC: Mem = Mem::Cas {
    rd: "umc_cas_cmd.rd",
    wr: "umc_cas_cmd.wr",
};

const ZEN2: Cpu = Cpu {
    label: "Zen 2",
    mem: Mem::Channels(DF_CHANNELS),
    fp: Fp::AmdAll,
    l2_icache: None,
    l3_evict: "",
    dtlb_walk: "",
    dram_energy: false,
    zen: "zen2",
};

const ZEN3: Cpu = Cpu {
    label: "Zen 3",
    zen: "zen3",
    ..ZEN2
};

const ZEN4: Cpu = Cpu {
    label: "Zen 4",
    mem: UMC,
    zen: "zen4",
    ..ZEN2
};

const ZEN5: Cpu = Cpu {
    label: "Zen 5",
    mem: UMC,
    fp: Fp::AmdSplit,
    zen: "zen5",
    ..ZEN2
};

fn cpu_of(cpu: &CpuId) -> Option<Cpu> {
    let arch = cpu.microarch()?;
    match (&cpu.vendor, arch.code) {
        (&Vendor::Intel, "SKX" | "CLX") => Some(SKX),
        (&Vendor::Intel, "ICX") => Some(ICX),
        (&Vendor::Intel, "SPR" | "EMR") => Some(SPR),
        (&Vendor::Intel, "SKL") => Some(SKL),
        (&Vendor::Intel, "ADL") => Some(ADL),
        (&Vendor::Amd, "zen2") => Some(ZEN2),
        (&Vendor::Amd, "zen3") => Some(ZEN3),
        (&Vendor::Amd, "zen4") => Some(ZEN4),
        (&Vendor::Amd, "zen5") => Some(ZEN5),
        _ => None,
    }
}

/// One metric before it is parsed.
struct Def {
    name: &'static str,
    formula: String,
    unit: &'static str,
    groups: &'static [&'static str],
    description: String,
}

fn def(
    name: &'static str,
    formula: impl Into<String>,
    unit: &'static str,
    groups: &'static [&'static str],
    description: impl Into<String>,
) -> Def {
    Def {
        name,
        formula: formula.into(),
        unit,
        groups,
        description: description.into(),
    }
}

const MEM_GROUPS: &[&str] = &["MEM", "MEM_DP", "MEM_SP", "CACHES"];
const MEM_GROUPS_AMD: &[&str] = &["MEM", "MEM_DP", "MEM_SP"];

/// The memory metrics and the formula of the bytes moved (for the
/// operational intensity).
fn memory(c: &Cpu, out: &mut Vec<Def>) -> String {
    let groups = if c.zen.is_empty() {
        MEM_GROUPS
    } else {
        MEM_GROUPS_AMD
    };
    let boxes = "summed over every memory-controller box";
    match c.mem {
        Mem::Cas { rd, wr } => {
            let pairs = [
                ("read", rd.to_string()),
                ("write", wr.to_string()),
                ("", format!("{rd} + {wr}")),
            ];
            for (what, sum) in pairs {
                let (bw, vol) = match what {
                    "read" => (
                        "Memory read bandwidth [MBytes/s]",
                        "Memory read data volume [GBytes]",
                    ),
                    "write" => (
                        "Memory write bandwidth [MBytes/s]",
                        "Memory write data volume [GBytes]",
                    ),
                    _ => ("Memory bandwidth [MBytes/s]", "Memory data volume [GBytes]"),
                };
                let cmds = if what.is_empty() {
                    "read and write".to_string()
                } else {
                    what.to_string()
                };
                out.push(def(
                    bw,
                    format!("1e-6 * 64 * ({sum}) / {T}"),
                    "MBytes/s",
                    groups,
                    format!("DRAM {cmds} bandwidth: CAS commands × 64 bytes per second, {boxes}"),
                ));
                out.push(def(
                    vol,
                    format!("1e-9 * 64 * ({sum})"),
                    "GBytes",
                    groups,
                    format!("DRAM {cmds} data volume: CAS commands × 64 bytes, {boxes}"),
                ));
            }
            format!("64 * ({rd} + {wr})")
        }
        Mem::Channels(ch) => {
            let sum = ch.join(" + ");
            let why = "the data fabric's DRAM channel requests with data (64 bytes each), every channel summed; reads and writes are not told apart";
            out.push(def(
                "Memory bandwidth [MBytes/s]",
                format!("1e-6 * 64 * ({sum}) / {T}"),
                "MBytes/s",
                groups,
                format!("DRAM bandwidth: {why}"),
            ));
            out.push(def(
                "Memory data volume [GBytes]",
                format!("1e-9 * 64 * ({sum})"),
                "GBytes",
                groups,
                format!("DRAM data volume: {why}"),
            ));
            format!("64 * ({sum})")
        }
    }
}

const FAI: &str = "FP_ARITH_INST_RETIRED";

/// Intel's FP_ARITH terms of one precision: (scalar, [(packed event,
/// lanes)]).
fn intel_fp(prec: &str, avx512: bool) -> (String, Vec<(String, u32)>) {
    let lanes = if prec == "DOUBLE" { 1 } else { 2 };
    let mut packed = vec![
        (format!("{FAI}.128B_PACKED_{prec}"), 2 * lanes),
        (format!("{FAI}.256B_PACKED_{prec}"), 4 * lanes),
    ];
    if avx512 {
        packed.push((format!("{FAI}.512B_PACKED_{prec}"), 8 * lanes));
    }
    (format!("{FAI}.SCALAR_{prec}"), packed)
}

fn weighted(terms: &[(String, u32)]) -> String {
    terms
        .iter()
        .map(|(e, w)| format!("{w} * {e}"))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// The FLOP-rate metrics of one precision; returns the FLOPs formula.
fn flops(c: &Cpu, dp: bool, out: &mut Vec<Def>) -> String {
    let (p, groups, flops_only): (&str, &'static [&'static str], &'static [&'static str]) = if dp {
        ("DP", &["FLOPS_DP", "MEM_DP"], &["FLOPS_DP"])
    } else {
        ("SP", &["FLOPS_SP", "MEM_SP"], &["FLOPS_SP"])
    };
    let rate = if dp { "DP [MFLOP/s]" } else { "SP [MFLOP/s]" };
    match c.fp {
        Fp::Intel { avx512 } => {
            let (scalar, packed) = intel_fp(if dp { "DOUBLE" } else { "SINGLE" }, avx512);
            let all = format!("{scalar} + {}", weighted(&packed));
            let lanes: Vec<String> = packed.iter().map(|(_, w)| w.to_string()).collect();
            out.push(def(
                rate,
                format!("1e-6 * ({all}) / {T}"),
                "MFLOP/s",
                groups,
                format!("{p} FLOP rate: FP_ARITH_INST_RETIRED scalar × 1 + packed × {} lanes, per second", lanes.join("/")),
            ));
            let avx = weighted(&packed[1..]);
            out.push(def(
                if dp {
                    "AVX DP [MFLOP/s]"
                } else {
                    "AVX SP [MFLOP/s]"
                },
                format!("1e-6 * ({avx}) / {T}"),
                "MFLOP/s",
                groups,
                format!("{p} FLOP rate of 256-bit and wider packed instructions"),
            ));
            if avx512 {
                out.push(def(
                    if dp {
                        "AVX512 DP [MFLOP/s]"
                    } else {
                        "AVX512 SP [MFLOP/s]"
                    },
                    format!("1e-6 * ({}) / {T}", weighted(&packed[2..])),
                    "MFLOP/s",
                    flops_only,
                    format!("{p} FLOP rate of 512-bit packed instructions"),
                ));
            }
            let uops: Vec<&str> = packed.iter().map(|(e, _)| e.as_str()).collect();
            let uops = uops.join(" + ");
            out.push(def(
                if dp {
                    "Packed [MUOPS/s]"
                } else {
                    "Packed SP [MUOPS/s]"
                },
                format!("1e-6 * ({uops}) / {T}"),
                "MUOPS/s",
                groups,
                format!("Packed {p} FP instructions retired per second (every width)"),
            ));
            out.push(def(
                if dp {
                    "Scalar [MUOPS/s]"
                } else {
                    "Scalar SP [MUOPS/s]"
                },
                format!("1e-6 * {scalar} / {T}"),
                "MUOPS/s",
                groups,
                format!("Scalar {p} FP instructions retired per second"),
            ));
            out.push(def(
                if dp {
                    "Vectorization ratio [%]"
                } else {
                    "Vectorization ratio SP [%]"
                },
                format!("100 * ({uops}) / ({scalar} + {uops})"),
                "%",
                flops_only,
                format!("Share of {p} FP instructions that were packed"),
            ));
            all
        }
        Fp::AmdAll => {
            let all = "fp_ret_sse_avx_ops.all".to_string();
            out.push(def(
                rate,
                format!("1e-6 * {all} / {T}"),
                "MFLOP/s",
                groups,
                format!("FLOP rate of SSE and AVX instructions (multiply-add counted as 2): this generation counts FLOPs of both precisions in one event, so the {p} group reports all of them, as LIKWID does on Zen 2"),
            ));
            all
        }
        Fp::AmdSplit => {
            let (s, pk) = if dp {
                ("scalar_double_flops", "packed_double_flops")
            } else {
                ("scalar_single_flops", "packed_single_flops")
            };
            let all = format!("fp_ret_sse_avx_ops.{s} + fp_ret_sse_avx_ops.{pk}");
            out.push(def(
                rate,
                format!("1e-6 * ({all}) / {T}"),
                "MFLOP/s",
                groups,
                format!("{p} FLOP rate of SSE and AVX instructions, scalar and packed"),
            ));
            all
        }
    }
}

fn flops_avx(c: &Cpu, out: &mut Vec<Def>) {
    let g: &'static [&'static str] = &["FLOPS_AVX"];
    let (sp, dp, what) = match c.fp {
        Fp::Intel { avx512 } => {
            let s = intel_fp("SINGLE", avx512).1;
            let d = intel_fp("DOUBLE", avx512).1;
            (
                weighted(&s[1..]),
                weighted(&d[1..]),
                "256-bit and 512-bit packed instructions",
            )
        }
        Fp::AmdSplit => (
            "fp_ret_sse_avx_ops.packed_single_flops".to_string(),
            "fp_ret_sse_avx_ops.packed_double_flops".to_string(),
            "packed SSE and AVX instructions of every width (Zen 5 counts no 128-bit share apart)",
        ),
        Fp::AmdAll => return,
    };
    out.push(def(
        "Packed SP [MFLOP/s]",
        format!("1e-6 * ({sp}) / {T}"),
        "MFLOP/s",
        g,
        format!("SP FLOP rate of {what}"),
    ));
    out.push(def(
        "Packed DP [MFLOP/s]",
        format!("1e-6 * ({dp}) / {T}"),
        "MFLOP/s",
        g,
        format!("DP FLOP rate of {what}"),
    ));
}

fn intensity(flops_dp: &str, flops_sp: &str, bytes: &str, out: &mut Vec<Def>) {
    out.push(def(
        "Operational intensity",
        format!("({flops_dp}) / ({bytes})"),
        "FLOP/Byte",
        &["MEM_DP"],
        "DP FLOPs per byte moved to and from DRAM (the socket's memory traffic)",
    ));
    out.push(def(
        "Operational intensity SP",
        format!("({flops_sp}) / ({bytes})"),
        "FLOP/Byte",
        &["MEM_SP"],
        "SP FLOPs per byte moved to and from DRAM (the socket's memory traffic)",
    ));
}

/// A bandwidth and data-volume pair of cache lines.
fn lines(
    out: &mut Vec<Def>,
    names: (&'static str, &'static str),
    sum: &str,
    groups: &'static [&'static str],
    what: &str,
) {
    out.push(def(
        names.0,
        format!("1e-6 * 64 * ({sum}) / {T}"),
        "MBytes/s",
        groups,
        format!("{what}: cache lines × 64 bytes per second"),
    ));
    out.push(def(
        names.1,
        format!("1e-9 * 64 * ({sum})"),
        "GBytes",
        groups,
        format!("{what}: cache lines × 64 bytes"),
    ));
}

fn intel_caches(c: &Cpu, out: &mut Vec<Def>) {
    let g: &'static [&'static str] = &["L2", "CACHES"];
    let load = "L1D.REPLACEMENT";
    lines(
        out,
        (
            "L2D load bandwidth [MBytes/s]",
            "L2D load data volume [GBytes]",
        ),
        load,
        g,
        "Lines loaded from the L2 into the L1 data cache",
    );
    // Intel's tables publish no event for the L1's write-backs to the L2
    // (LIKWID reads unpublished encodings): the L2 traffic here is the
    // lines loaded into the L1 data and instruction caches.
    let mut all = vec![load];
    all.extend(c.l2_icache);
    lines(
        out,
        ("L2 bandwidth [MBytes/s]", "L2 data volume [GBytes]"),
        &all.join(" + "),
        g,
        "Lines loaded from the L2 into the L1 data and instruction caches (Intel publishes no event for the L1 write-backs)",
    );
    let g: &'static [&'static str] = &["L3", "CACHES"];
    lines(
        out,
        (
            "L3 load bandwidth [MBytes/s]",
            "L3 load data volume [GBytes]",
        ),
        "L2_LINES_IN.ALL",
        g,
        "Lines brought into the L2 (from the L3 or memory)",
    );
    lines(
        out,
        (
            "L3 evict bandwidth [MBytes/s]",
            "L3 evict data volume [GBytes]",
        ),
        c.l3_evict,
        g,
        "Lines written back from the L2 toward the L3",
    );
    lines(
        out,
        ("L3 bandwidth [MBytes/s]", "L3 data volume [GBytes]"),
        &format!("L2_LINES_IN.ALL + {}", c.l3_evict),
        g,
        "Traffic between the L2 and the L3 (loads and evictions)",
    );
}

fn amd_caches(c: &Cpu, out: &mut Vec<Def>) {
    lines(
        out,
        ("L2 bandwidth [MBytes/s]", "L2 data volume [GBytes]"),
        "l2_request_g1.all_no_prefetch",
        &["L2"],
        "L2 requests from the core other than prefetches",
    );
    let Some(ev) = zen_cache_events(c.zen) else {
        return;
    };
    let g: &'static [&'static str] = &["L3"];
    lines(
        out,
        (
            "L3 access bandwidth [MBytes/s]",
            "L3 access data volume [GBytes]",
        ),
        ev.l3_requests,
        g,
        "L3 accesses of the core complex (L3 PMU)",
    );
    let i = "instructions";
    let rows: [(&'static str, String, &'static str, &str); 3] = [
        (
            "L3 access rate [%]",
            format!("100 * {} / {i}", ev.l3_requests),
            "%",
            "L3 accesses (core complex) per 100 instructions",
        ),
        (
            "L3 miss rate [%]",
            format!("100 * {} / {i}", ev.l3_misses),
            "%",
            "L3 misses (core complex) per 100 instructions",
        ),
        (
            "L3 miss ratio [%]",
            format!("100 * {} / {}", ev.l3_misses, ev.l3_requests),
            "%",
            "Share of L3 accesses that missed",
        ),
    ];
    for (n, f, u, d) in rows {
        out.push(def(n, f, u, g, d));
    }
    let g: &'static [&'static str] = &["CACHE"];
    let misses = format!("{} + {}", ev.dc_from_l2, ev.dc_from_system);
    let rows: [(&'static str, String, &str); 5] = [
        (
            "data cache requests",
            ev.dc_accesses.to_string(),
            "L1 data-cache accesses",
        ),
        (
            "data cache request rate",
            format!("{} / {i}", ev.dc_accesses),
            "L1 data-cache accesses per instruction",
        ),
        (
            "data cache misses",
            misses.clone(),
            "L1 data-cache refills (from the L2 and from beyond it)",
        ),
        (
            "data cache miss rate",
            format!("({misses}) / {i}"),
            "L1 data-cache refills per instruction",
        ),
        (
            "data cache miss ratio",
            format!("({misses}) / {}", ev.dc_accesses),
            "L1 data-cache refills per access",
        ),
    ];
    for (n, f, d) in rows {
        out.push(def(n, f, "", g, d));
    }
}

fn branch(out: &mut Vec<Def>) {
    let g: &'static [&'static str] = &["BRANCH"];
    out.push(def(
        "Branch rate",
        "branches / instructions",
        "",
        g,
        "Branches retired per instruction",
    ));
    out.push(def(
        "Branch misprediction rate",
        "branch-misses / instructions",
        "",
        g,
        "Mispredicted branches per instruction",
    ));
    out.push(def(
        "Branch misprediction ratio",
        "branch-misses / branches",
        "",
        g,
        "Mispredicted branches per branch",
    ));
    out.push(def(
        "Instructions per branch",
        "instructions / branches",
        "",
        g,
        "Instructions retired per branch",
    ));
}

fn data(c: &Cpu, out: &mut Vec<Def>) {
    let g: &'static [&'static str] = &["DATA"];
    let (loads, stores, how) = if c.zen.is_empty() {
        (
            "MEM_INST_RETIRED.ALL_LOADS".to_string(),
            "MEM_INST_RETIRED.ALL_STORES".to_string(),
            "retired load and store instructions",
        )
    } else {
        let both = "ls_dispatch.ld_st_dispatch";
        (
            format!("(ls_dispatch.ld_dispatch + {both})"),
            format!("(ls_dispatch.store_dispatch + {both})"),
            "dispatched loads and stores (a load-op-store counts as both)",
        )
    };
    out.push(def(
        "Load to store ratio",
        format!("{loads} / {stores}"),
        "",
        g,
        format!("Loads per store: {how}"),
    ));
    out.push(def(
        "Load ratio",
        format!("{loads} / instructions"),
        "",
        g,
        format!("Loads per instruction: {how}"),
    ));
    out.push(def(
        "Store ratio",
        format!("{stores} / instructions"),
        "",
        g,
        format!("Stores per instruction: {how}"),
    ));
}

fn tlb_data(c: &Cpu, out: &mut Vec<Def>) {
    let g: &'static [&'static str] = &["TLB_DATA"];
    if c.zen.is_empty() {
        for (kind, ev) in [("load", "DTLB_LOAD_MISSES"), ("store", "DTLB_STORE_MISSES")] {
            let walks = format!("{ev}.{}", c.dtlb_walk);
            let (n, r, d) = match kind {
                "load" => (
                    "L1 DTLB load misses",
                    "L1 DTLB load miss rate",
                    "L1 DTLB load miss duration [Cyc]",
                ),
                _ => (
                    "L1 DTLB store misses",
                    "L1 DTLB store miss rate",
                    "L1 DTLB store miss duration [Cyc]",
                ),
            };
            out.push(def(
                n,
                walks.clone(),
                "",
                g,
                format!("Data-TLB {kind} misses that walked the page table ({walks})"),
            ));
            out.push(def(
                r,
                format!("{walks} / instructions"),
                "",
                g,
                format!("Page walks for {kind}s per instruction"),
            ));
            out.push(def(
                d,
                format!("{ev}.WALK_ACTIVE / {walks}"),
                "Cyc",
                g,
                format!("Cycles a page walk for a {kind} took, on average"),
            ));
        }
        return;
    }
    let l2_miss = if matches!(c.zen, "zen2" | "zen3") {
        r"cpu@event\=0x45\,umask\=0xf0@"
    } else {
        "ls_l1_d_tlb_miss.all_l2_miss"
    };
    let rows: [(&'static str, String, &str); 5] = [
        (
            "L1 DTLB misses",
            "ls_l1_d_tlb_miss.all".into(),
            "L1 data-TLB misses",
        ),
        (
            "L1 DTLB miss rate",
            "ls_l1_d_tlb_miss.all / instructions".into(),
            "L1 data-TLB misses per instruction",
        ),
        (
            "L2 DTLB misses",
            l2_miss.into(),
            "L1 data-TLB misses that missed the L2 TLB too (page walks)",
        ),
        (
            "L2 DTLB miss rate",
            format!("{l2_miss} / instructions"),
            "L2 data-TLB misses per instruction",
        ),
        (
            "L2 DTLB miss ratio",
            format!("{l2_miss} / ls_l1_d_tlb_miss.all"),
            "Share of L1 data-TLB misses that missed the L2 TLB",
        ),
    ];
    for (n, f, d) in rows {
        out.push(def(n, f, "", g, d));
    }
}

fn energy(c: &Cpu, out: &mut Vec<Def>) {
    let g: &'static [&'static str] = &["ENERGY", "CLOCK"];
    let mut domains = vec![("", "power/energy-pkg/", "the package")];
    if c.zen.is_empty() {
        domains.push((" PP0", "power/energy-cores/", "the cores (PP0)"));
    }
    if c.dram_energy {
        domains.push((" DRAM", "power/energy-ram/", "the DRAM"));
    }
    for (tag, ev, what) in domains {
        let (e, p): (&'static str, &'static str) = match tag {
            "" => ("Energy [J]", "Power [W]"),
            " PP0" => ("Energy PP0 [J]", "Power PP0 [W]"),
            _ => ("Energy DRAM [J]", "Power DRAM [W]"),
        };
        let groups: &'static [&'static str] = if tag.is_empty() { g } else { &["ENERGY"] };
        out.push(def(
            e,
            ev,
            "J",
            groups,
            format!("Energy of {what} (RAPL, in Joules as perf scales it)"),
        ));
        out.push(def(
            p,
            format!("{ev} / {T}"),
            "W",
            groups,
            format!("Average power of {what}"),
        ));
    }
}

fn clock(c: &Cpu, out: &mut Vec<Def>) {
    let g: &'static [&'static str] = &["CLOCK"];
    let (ratio, how) = if c.zen.is_empty() {
        (
            "cycles / ref-cycles",
            "unhalted core cycles over reference (TSC-rate) cycles",
        )
    } else {
        (
            "msr/aperf/ / msr/mperf/",
            "APERF over MPERF (actual over maximum clock)",
        )
    };
    out.push(def(
        "Clock [MHz]",
        format!("1e-6 * {ratio} * #system_tsc_freq"),
        "MHz",
        g,
        format!("Average clock while running: {how}, times the TSC frequency"),
    ));
    out.push(def(
        "Runtime unhalted [s]",
        "cycles / #system_tsc_freq",
        "s",
        g,
        "Unhalted core cycles at the TSC frequency, in seconds",
    ));
}

fn defs(c: &Cpu) -> Vec<Def> {
    let mut out = vec![def(
        "Runtime (RDTSC) [s]",
        T,
        "s",
        GROUPS,
        "Wall-clock time of the measurement",
    )];
    let bytes = memory(c, &mut out);
    let dp = flops(c, true, &mut out);
    let sp = flops(c, false, &mut out);
    intensity(&dp, &sp, &bytes, &mut out);
    flops_avx(c, &mut out);
    if c.zen.is_empty() {
        intel_caches(c, &mut out);
    } else {
        amd_caches(c, &mut out);
    }
    branch(&mut out);
    data(c, &mut out);
    tlb_data(c, &mut out);
    energy(c, &mut out);
    clock(c, &mut out);
    out
}

/// LIKWID's groups for `cpu`, when pmx defines them for its generation
/// (Skylake-SP/Cascade Lake, Ice Lake-SP, Sapphire/Emerald Rapids,
/// Skylake and Alder Lake clients, AMD Zen 2–5).
pub fn table(cpu: Option<&CpuId>) -> Option<MetricTable> {
    let c = cpu.and_then(cpu_of)?;
    let mut table = MetricTable::new(MetricSource {
        kind: SourceKind::Groups,
        origin: format!("LIKWID groups ({})", c.label),
        version: None,
        pmu: None,
    });
    for d in defs(&c) {
        match Formula::parse(&d.formula, Dialect::Pmx) {
            Ok(f) => {
                let mut m = Metric::from_formula(d.name, f, d.unit, 1.0);
                m.description = d.description;
                m.groups = d.groups.iter().map(|g| g.to_string()).collect();
                m.category = Some("LIKWID".to_string());
                table.metrics.push(m);
            }
            Err(e) => table.warnings.push(format!("{}: {e}", d.name)),
        }
    }
    // Every group keeps the runtime only when it has a metric of its own.
    let used: Vec<String> = GROUPS
        .iter()
        .filter(|g| {
            table
                .metrics
                .iter()
                .any(|m| m.name != "Runtime (RDTSC) [s]" && m.in_group(g))
        })
        .map(|g| g.to_string())
        .collect();
    if let Some(rt) = table.metrics.first_mut() {
        rt.groups = used;
    }
    Some(table)
}

/// Why `group` (a LIKWID group name) has no metric on `cpu`, when pmx
/// knows: the generation has no event for it, or pmx defines LIKWID's
/// groups for other CPUs only. `None` for a name that is not LIKWID's.
pub fn absent(group: &str, cpu: &CpuId) -> Option<String> {
    let g = GROUPS.iter().find(|g| g.eq_ignore_ascii_case(group))?;
    let Some(c) = cpu_of(cpu) else {
        return Some(format!(
            "pmx defines LIKWID's groups for Skylake-SP, Cascade Lake, Ice Lake-SP, Sapphire and Emerald Rapids, Skylake and Alder Lake clients, and AMD Zen 2–5; {g} is not defined for this CPU"
        ));
    };
    let why = match (*g, c.fp, c.zen.is_empty()) {
        ("FLOPS_AVX", Fp::AmdAll, _) => {
            format!("{} counts SSE and AVX FLOPs in one event, without a packed or width share, so FLOPS_AVX has nothing to report", c.label)
        }
        ("CACHES", _, false) => format!(
            "on AMD, LIKWID's cache group is CACHE (L1 data-cache requests and misses); {} has no CACHES",
            c.label
        ),
        ("CACHE", _, true) => format!(
            "on Intel, LIKWID's cache group is CACHES (L2, L3 and memory traffic); {} has no CACHE",
            c.label
        ),
        _ => return None,
    };
    Some(why)
}
