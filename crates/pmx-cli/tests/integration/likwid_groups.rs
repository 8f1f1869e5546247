//! LIKWID's performance groups (`-M MEM`, `-M FLOPS_DP` …) from perf stat
//! CSV files (`-x,`) with known counts: for Skylake-SP, Ice Lake-SP,
//! Sapphire Rapids, Alder Lake and Zen 2–5, `pmx analyze` gives each
//! metric the value LIKWID's formula gives, computed here by hand from the
//! counts. The memory controllers' counts come as perf's per-box lines
//! (`UNC_M_CAS_COUNT.RD [uncore_imc_3]`, `amd_umc_5/umc_cas_cmd.wr/`), one
//! count per box, and every FP width has a count of its own, so a sum that
//! skips a box or a width, or a wrong lane weight, gives another number.
//!
//! Needs nothing but pmx: Intel's and AMD's tables are built in.

use crate::common::{pmx, stderr, stdout};
use std::collections::BTreeMap;
use std::path::Path;

/// The run's wall-clock time in the files, seconds.
const SECS: f64 = 2.0;

/// A perf stat `-x,` file: `(event as perf prints it, value, unit)`.
fn csv(rows: &[(String, f64, &str)]) -> String {
    let mut s = String::new();
    for (event, value, unit) in rows {
        s.push_str(&format!("{value},{unit},{event},2000000000,100.00,,\n"));
    }
    s.push_str(&format!(
        "{},ns,duration_time,2000000000,100.00,,\n",
        SECS * 1e9
    ));
    s
}

/// `pmx analyze FILE --cpu CPU -M GROUPS --json`: each metric's value (or
/// `None`) and its missing input, by name.
fn analyze(cpu: &str, text: &str, groups: &str) -> BTreeMap<String, (Option<f64>, String)> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("counts.csv");
    std::fs::write(&file, text).unwrap();
    let out = pmx(&[
        "analyze",
        file.to_str().unwrap(),
        "--cpu",
        cpu,
        "-M",
        groups,
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{cpu}: {}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let computed = v["metrics"].as_array().unwrap().iter();
    computed
        .chain(v["not_computed"].as_array().unwrap())
        .map(|m| {
            let missing = m["missing"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            (
                m["name"].as_str().unwrap().to_string(),
                (m["value"].as_f64(), missing),
            )
        })
        .collect()
}

fn check(cpu: &str, got: &BTreeMap<String, (Option<f64>, String)>, want: &[(&str, f64)]) {
    for (name, w) in want {
        let (v, why) = got
            .get(*name)
            .unwrap_or_else(|| panic!("{cpu}: no metric '{name}' in {got:?}"));
        let v = v.unwrap_or_else(|| panic!("{cpu}: '{name}' not computed: {why}"));
        assert!(
            (v - w).abs() <= 1e-9 * w.abs().max(1e-12),
            "{cpu}: '{name}' = {v}, LIKWID's formula gives {w}"
        );
    }
}

/// Distinct counts: the n-th input of a file.
fn count(n: usize) -> f64 {
    (1_000_003 * (n as u64 + 1) + 7_919 * (n as u64 * n as u64)) as f64
}

/// Per-box lines of an event over `boxes` boxes of `pmu`, alternating
/// perf's two spellings; the counts and their sum.
fn per_box(
    rows: &mut Vec<(String, f64, &'static str)>,
    event: &str,
    pmu: &str,
    boxes: usize,
    first: usize,
) -> (Vec<f64>, f64) {
    let counts: Vec<f64> = (0..boxes).map(|b| count(first + b)).collect();
    for (b, c) in counts.iter().enumerate() {
        let name = if b % 2 == 0 {
            format!("{event} [{pmu}_{b}]")
        } else {
            format!("{pmu}_{b}/{event}/")
        };
        rows.push((name, *c, ""));
    }
    let sum = counts.iter().sum();
    (counts, sum)
}

struct IntelCpu {
    cpu: &'static str,
    rd: &'static str,
    wr: &'static str,
    boxes: usize,
    avx512: bool,
    icache: bool,
    l3_evict: &'static str,
    walk: &'static str,
}

const INTEL: &[IntelCpu] = &[
    IntelCpu {
        cpu: "GenuineIntel-6-55-4",
        rd: "UNC_M_CAS_COUNT.RD",
        wr: "UNC_M_CAS_COUNT.WR",
        boxes: 6,
        avx512: true,
        icache: true,
        l3_evict: "L2_TRANS.L2_WB",
        walk: "MISS_CAUSES_A_WALK",
    },
    IntelCpu {
        cpu: "GenuineIntel-6-6A",
        rd: "UNC_M_CAS_COUNT.RD",
        wr: "UNC_M_CAS_COUNT.WR",
        boxes: 8,
        avx512: true,
        icache: true,
        l3_evict: "L2_LINES_OUT.NON_SILENT",
        walk: "WALK_COMPLETED",
    },
    IntelCpu {
        cpu: "GenuineIntel-6-8F",
        rd: "UNC_M_CAS_COUNT.RD",
        wr: "UNC_M_CAS_COUNT.WR",
        boxes: 16,
        avx512: true,
        icache: false,
        l3_evict: "L2_LINES_OUT.NON_SILENT",
        walk: "WALK_COMPLETED",
    },
    IntelCpu {
        cpu: "GenuineIntel-6-97",
        rd: "UNC_M_CAS_COUNT_RD",
        wr: "UNC_M_CAS_COUNT_WR",
        boxes: 2,
        avx512: false,
        icache: false,
        l3_evict: "L2_LINES_OUT.NON_SILENT",
        walk: "WALK_COMPLETED",
    },
];

const INTEL_GROUPS: &str =
    "MEM,MEM_DP,MEM_SP,FLOPS_DP,FLOPS_SP,FLOPS_AVX,L2,L3,CACHES,BRANCH,DATA,TLB_DATA,ENERGY";
const ZEN_GROUPS: &str =
    "MEM,MEM_DP,MEM_SP,FLOPS_DP,FLOPS_SP,L2,L3,CACHE,BRANCH,DATA,TLB_DATA,ENERGY";

/// The file of an Intel CPU and the metrics by LIKWID's formulas.
fn intel_case(c: &IntelCpu) -> (String, Vec<(&'static str, f64)>) {
    let mut rows = Vec::new();
    let (_, rd) = per_box(&mut rows, c.rd, "uncore_imc", c.boxes, 0);
    let (_, wr) = per_box(&mut rows, c.wr, "uncore_imc", c.boxes, 100);
    let mut n = 200;
    let mut core = |rows: &mut Vec<(String, f64, &str)>, e: &str| {
        n += 1;
        rows.push((e.to_string(), count(n), ""));
        count(n)
    };
    let fp = "FP_ARITH_INST_RETIRED";
    let sd = core(&mut rows, &format!("{fp}.SCALAR_DOUBLE"));
    let d128 = core(&mut rows, &format!("{fp}.128B_PACKED_DOUBLE"));
    let d256 = core(&mut rows, &format!("{fp}.256B_PACKED_DOUBLE"));
    let ss = core(&mut rows, &format!("{fp}.SCALAR_SINGLE"));
    let s128 = core(&mut rows, &format!("{fp}.128B_PACKED_SINGLE"));
    let s256 = core(&mut rows, &format!("{fp}.256B_PACKED_SINGLE"));
    let (d512, s512) = if c.avx512 {
        (
            core(&mut rows, &format!("{fp}.512B_PACKED_DOUBLE")),
            core(&mut rows, &format!("{fp}.512B_PACKED_SINGLE")),
        )
    } else {
        (0.0, 0.0)
    };
    let repl = core(&mut rows, "L1D.REPLACEMENT");
    let icache = if c.icache {
        core(&mut rows, "ICACHE_64B.IFTAG_MISS")
    } else {
        0.0
    };
    let l3_in = core(&mut rows, "L2_LINES_IN.ALL");
    let l3_out = core(&mut rows, c.l3_evict);
    let instr = core(&mut rows, "instructions");
    let br = core(&mut rows, "branches");
    let brm = core(&mut rows, "branch-misses");
    let loads = core(&mut rows, "MEM_INST_RETIRED.ALL_LOADS");
    let stores = core(&mut rows, "MEM_INST_RETIRED.ALL_STORES");
    let lw = core(&mut rows, &format!("DTLB_LOAD_MISSES.{}", c.walk));
    let la = core(&mut rows, "DTLB_LOAD_MISSES.WALK_ACTIVE");
    let sw = core(&mut rows, &format!("DTLB_STORE_MISSES.{}", c.walk));
    let sa = core(&mut rows, "DTLB_STORE_MISSES.WALK_ACTIVE");
    rows.push(("power/energy-pkg/".into(), 123.25, "Joules"));
    rows.push(("power/energy-cores/".into(), 80.5, "Joules"));
    let t = SECS;
    // LIKWID's formulas (skylakeX/icelakeX/sapphirerapids groups).
    let dp = sd + 2.0 * d128 + 4.0 * d256 + 8.0 * d512;
    let sp = ss + 4.0 * s128 + 8.0 * s256 + 16.0 * s512;
    let bytes = (rd + wr) * 64.0;
    let mut want = vec![
        ("Runtime (RDTSC) [s]", t),
        ("Memory read bandwidth [MBytes/s]", 1.0E-06 * rd * 64.0 / t),
        ("Memory read data volume [GBytes]", 1.0E-09 * rd * 64.0),
        ("Memory write bandwidth [MBytes/s]", 1.0E-06 * wr * 64.0 / t),
        ("Memory write data volume [GBytes]", 1.0E-09 * wr * 64.0),
        (
            "Memory bandwidth [MBytes/s]",
            1.0E-06 * (rd + wr) * 64.0 / t,
        ),
        ("Memory data volume [GBytes]", 1.0E-09 * (rd + wr) * 64.0),
        ("DP [MFLOP/s]", 1.0E-06 * dp / t),
        ("AVX DP [MFLOP/s]", 1.0E-06 * (d256 * 4.0 + d512 * 8.0) / t),
        ("Packed [MUOPS/s]", 1.0E-06 * (d128 + d256 + d512) / t),
        ("Scalar [MUOPS/s]", 1.0E-06 * sd / t),
        (
            "Vectorization ratio [%]",
            100.0 * (d128 + d256 + d512) / (sd + d128 + d256 + d512),
        ),
        ("SP [MFLOP/s]", 1.0E-06 * sp / t),
        ("AVX SP [MFLOP/s]", 1.0E-06 * (s256 * 8.0 + s512 * 16.0) / t),
        ("Packed SP [MUOPS/s]", 1.0E-06 * (s128 + s256 + s512) / t),
        ("Scalar SP [MUOPS/s]", 1.0E-06 * ss / t),
        ("Operational intensity", dp / bytes),
        ("Operational intensity SP", sp / bytes),
        (
            "Packed SP [MFLOP/s]",
            1.0E-06 * (s256 * 8.0 + s512 * 16.0) / t,
        ),
        (
            "Packed DP [MFLOP/s]",
            1.0E-06 * (d256 * 4.0 + d512 * 8.0) / t,
        ),
        ("L2D load bandwidth [MBytes/s]", 1.0E-06 * repl * 64.0 / t),
        ("L2D load data volume [GBytes]", 1.0E-09 * repl * 64.0),
        (
            "L2 bandwidth [MBytes/s]",
            1.0E-06 * (repl + icache) * 64.0 / t,
        ),
        ("L2 data volume [GBytes]", 1.0E-09 * (repl + icache) * 64.0),
        ("L3 load bandwidth [MBytes/s]", 1.0E-06 * l3_in * 64.0 / t),
        ("L3 load data volume [GBytes]", 1.0E-09 * l3_in * 64.0),
        ("L3 evict bandwidth [MBytes/s]", 1.0E-06 * l3_out * 64.0 / t),
        ("L3 evict data volume [GBytes]", 1.0E-09 * l3_out * 64.0),
        (
            "L3 bandwidth [MBytes/s]",
            1.0E-06 * (l3_in + l3_out) * 64.0 / t,
        ),
        ("L3 data volume [GBytes]", 1.0E-09 * (l3_in + l3_out) * 64.0),
        ("Branch rate", br / instr),
        ("Branch misprediction rate", brm / instr),
        ("Branch misprediction ratio", brm / br),
        ("Instructions per branch", instr / br),
        ("Load to store ratio", loads / stores),
        ("Load ratio", loads / instr),
        ("Store ratio", stores / instr),
        ("L1 DTLB load misses", lw),
        ("L1 DTLB load miss rate", lw / instr),
        ("L1 DTLB load miss duration [Cyc]", la / lw),
        ("L1 DTLB store misses", sw),
        ("L1 DTLB store miss rate", sw / instr),
        ("L1 DTLB store miss duration [Cyc]", sa / sw),
        ("Energy [J]", 123.25),
        ("Power [W]", 123.25 / t),
        ("Energy PP0 [J]", 80.5),
        ("Power PP0 [W]", 80.5 / t),
    ];
    if c.avx512 {
        want.push(("AVX512 DP [MFLOP/s]", 1.0E-06 * d512 * 8.0 / t));
        want.push(("AVX512 SP [MFLOP/s]", 1.0E-06 * s512 * 16.0 / t));
    }
    (csv(&rows), want)
}

#[test]
fn intel_groups_compute_likwids_formulas_from_every_box_and_width() {
    for c in INTEL {
        let (text, want) = intel_case(c);
        let got = analyze(c.cpu, &text, INTEL_GROUPS);
        check(c.cpu, &got, &want);
    }
}

#[test]
fn every_memory_controller_box_is_in_the_sum() {
    let c = &INTEL[0];
    let (text, _) = intel_case(c);
    let t = SECS;
    let full = analyze(c.cpu, &text, "MEM");
    let read = |m: &BTreeMap<String, (Option<f64>, String)>| {
        m["Memory read bandwidth [MBytes/s]"].0.unwrap()
    };
    let mut rows = Vec::new();
    let (boxes, sum) = per_box(&mut rows, c.rd, "uncore_imc", c.boxes, 0);
    assert!((read(&full) - 1.0E-06 * sum * 64.0 / t).abs() < 1e-9);
    // Each box has a count of its own, so the full sum above holds only
    // with every box in it. The file without one box's line: that count,
    // and only it, is missing from the sum.
    for (b, cnt) in boxes.iter().enumerate().skip(3).take(1) {
        let line = rows[b].0.clone();
        let without: String = text
            .lines()
            .filter(|l| l.split(',').nth(2) != Some(line.as_str()))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(without.lines().count() + 1, text.lines().count(), "{line}");
        let got = read(&analyze(c.cpu, &without, "MEM"));
        let want = 1.0E-06 * (sum - cnt) * 64.0 / t;
        assert!((got - want).abs() < 1e-9, "without {line}: {got} vs {want}");
    }
    // A box that could not be counted leaves no value, and says which.
    let hidden = text.replace(
        &format!("{},,{},", boxes[3], rows[3].0),
        &format!("<not supported>,,{},", rows[3].0),
    );
    assert_ne!(hidden, text);
    let got = analyze(c.cpu, &hidden, "MEM");
    let (v, why) = &got["Memory read bandwidth [MBytes/s]"];
    assert_eq!(*v, None, "{got:?}");
    assert!(why.contains("uncore_imc_3"), "{why}");
}

/// AMD Zen: (cpu, generation).
const ZEN: &[(&str, u8)] = &[
    ("AuthenticAMD-23-31", 2),
    ("AuthenticAMD-25-1", 3),
    ("AuthenticAMD-25-11", 4),
    ("AuthenticAMD-26-2", 5),
];

fn zen_case(gen: u8) -> (String, Vec<(&'static str, f64)>) {
    let mut rows = Vec::new();
    let t = SECS;
    let mut want = vec![("Runtime (RDTSC) [s]", t)];
    // Memory: the data fabric's eight channels (Zen 2, 3) or every UMC's
    // CAS commands (Zen 4, 5).
    let bytes = if gen <= 3 {
        let mut sum = 0.0;
        for ch in 0..8 {
            let v = count(ch);
            rows.push((format!("dram_channel_data_controller_{ch}"), v, ""));
            sum += v;
        }
        sum * 64.0
    } else {
        let (_, rd) = per_box(&mut rows, "umc_cas_cmd.rd", "amd_umc", 12, 0);
        let (_, wr) = per_box(&mut rows, "umc_cas_cmd.wr", "amd_umc", 12, 100);
        want.extend([
            ("Memory read bandwidth [MBytes/s]", 1.0E-06 * rd * 64.0 / t),
            ("Memory read data volume [GBytes]", 1.0E-09 * rd * 64.0),
            ("Memory write bandwidth [MBytes/s]", 1.0E-06 * wr * 64.0 / t),
            ("Memory write data volume [GBytes]", 1.0E-09 * wr * 64.0),
        ]);
        (rd + wr) * 64.0
    };
    want.extend([
        ("Memory bandwidth [MBytes/s]", 1.0E-06 * bytes / t),
        ("Memory data volume [GBytes]", 1.0E-09 * bytes),
    ]);
    let mut n = 300;
    let mut core = |rows: &mut Vec<(String, f64, &str)>, e: &str| {
        n += 1;
        rows.push((e.to_string(), count(n), ""));
        count(n)
    };
    let (dp, sp) = if gen <= 4 {
        let all = core(&mut rows, "fp_ret_sse_avx_ops.all");
        (all, all)
    } else {
        let f = "fp_ret_sse_avx_ops";
        let sd = core(&mut rows, &format!("{f}.scalar_double_flops"));
        let pd = core(&mut rows, &format!("{f}.packed_double_flops"));
        let ss = core(&mut rows, &format!("{f}.scalar_single_flops"));
        let ps = core(&mut rows, &format!("{f}.packed_single_flops"));
        want.extend([
            ("Packed DP [MFLOP/s]", 1.0E-06 * pd / t),
            ("Packed SP [MFLOP/s]", 1.0E-06 * ps / t),
        ]);
        (sd + pd, ss + ps)
    };
    want.extend([
        ("DP [MFLOP/s]", 1.0E-06 * dp / t),
        ("SP [MFLOP/s]", 1.0E-06 * sp / t),
        ("Operational intensity", dp / bytes),
        ("Operational intensity SP", sp / bytes),
    ]);
    let instr = core(&mut rows, "instructions");
    let l2 = core(&mut rows, "l2_request_g1.all_no_prefetch");
    let (l3_acc, l3_miss) = match gen {
        2 => (
            "l3_request_g1.caching_l3_cache_accesses",
            "l3_comb_clstr_state.request_miss",
        ),
        3 => (
            "l3_lookup_state.all_l3_req_typs",
            "l3_comb_clstr_state.request_miss",
        ),
        _ => (
            "l3_lookup_state.all_coherent_accesses_to_l3",
            "l3_lookup_state.l3_miss",
        ),
    };
    let acc = core(&mut rows, l3_acc);
    let miss = core(&mut rows, l3_miss);
    let (dc, from_l2) = match gen {
        2 | 3 => ("ls_dc_accesses", "rf064"),
        4 => ("r729", "l2_cache_req_stat.dc_hit_in_l2"),
        _ => ("ls_dispatch.all", "l2_cache_req_stat.dc_hit_in_l2"),
    };
    let dca = core(&mut rows, dc);
    let dcm = core(&mut rows, from_l2) + core(&mut rows, "l2_cache_req_stat.ls_rd_blk_c");
    let br = core(&mut rows, "branches");
    let brm = core(&mut rows, "branch-misses");
    let ld = core(&mut rows, "ls_dispatch.ld_dispatch");
    let st = core(&mut rows, "ls_dispatch.store_dispatch");
    let ldst = core(&mut rows, "ls_dispatch.ld_st_dispatch");
    let l1tlb = core(&mut rows, "ls_l1_d_tlb_miss.all");
    let l2tlb = core(
        &mut rows,
        if gen <= 3 {
            "rf045"
        } else {
            "ls_l1_d_tlb_miss.all_l2_miss"
        },
    );
    rows.push(("power/energy-pkg/".into(), 61.5, "Joules"));
    want.extend([
        ("L2 bandwidth [MBytes/s]", 1.0E-06 * l2 * 64.0 / t),
        ("L2 data volume [GBytes]", 1.0E-09 * l2 * 64.0),
        ("L3 access bandwidth [MBytes/s]", 1.0E-06 * acc * 64.0 / t),
        ("L3 access data volume [GBytes]", 1.0E-09 * acc * 64.0),
        ("L3 access rate [%]", (acc / instr) * 100.0),
        ("L3 miss rate [%]", (miss / instr) * 100.0),
        ("L3 miss ratio [%]", (miss / acc) * 100.0),
        ("data cache requests", dca),
        ("data cache request rate", dca / instr),
        ("data cache misses", dcm),
        ("data cache miss rate", dcm / instr),
        ("data cache miss ratio", dcm / dca),
        ("Branch rate", br / instr),
        ("Branch misprediction rate", brm / instr),
        ("Branch misprediction ratio", brm / br),
        ("Instructions per branch", instr / br),
        ("Load to store ratio", (ld + ldst) / (st + ldst)),
        ("Load ratio", (ld + ldst) / instr),
        ("Store ratio", (st + ldst) / instr),
        ("L1 DTLB misses", l1tlb),
        ("L1 DTLB miss rate", l1tlb / instr),
        ("L2 DTLB misses", l2tlb),
        ("L2 DTLB miss rate", l2tlb / instr),
        ("L2 DTLB miss ratio", l2tlb / l1tlb),
        ("Energy [J]", 61.5),
        ("Power [W]", 61.5 / t),
    ]);
    (csv(&rows), want)
}

#[test]
fn zen_groups_compute_likwids_formulas_per_generation() {
    for &(cpu, gen) in ZEN {
        let (text, want) = zen_case(gen);
        let groups = if gen == 5 {
            format!("{ZEN_GROUPS},FLOPS_AVX")
        } else {
            ZEN_GROUPS.to_string()
        };
        let got = analyze(cpu, &text, &groups);
        check(cpu, &got, &want);
    }
}

#[test]
fn each_listed_cpu_names_the_groups() {
    let cpus = INTEL.iter().map(|c| c.cpu).chain(ZEN.iter().map(|z| z.0));
    for cpu in cpus {
        let out = pmx(&["list", "--raw-dump", "metricgroups", "--cpu", cpu]);
        assert_eq!(out.status.code(), Some(0), "{cpu}: {}", stderr(&out));
        let groups = stdout(&out);
        let groups: Vec<&str> = groups.split_whitespace().collect();
        let cache = if cpu.starts_with("GenuineIntel") {
            "CACHES"
        } else {
            "CACHE"
        };
        for g in [
            "MEM", "MEM_DP", "MEM_SP", "FLOPS_DP", "FLOPS_SP", "L2", "L3", cache, "BRANCH", "DATA",
            "TLB_DATA", "ENERGY", "CLOCK",
        ] {
            assert!(groups.contains(&g), "{cpu}: {g} not in {groups:?}");
        }
        // perf's metric listing (split on spaces by perf's scripts) keeps
        // LIKWID's spaced names out.
        let out = pmx(&["list", "--raw-dump", "metrics", "--cpu", cpu]);
        assert!(!stdout(&out).contains("MBytes/s"), "{cpu}");
    }
}

#[test]
fn a_group_this_generation_cannot_count_says_why() {
    // Zen 2–4 count FLOPs without a packed share: no FLOPS_AVX.
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), "1,,instructions,1,100.00,,\n").unwrap();
    let out = pmx(&[
        "analyze",
        f.path().to_str().unwrap(),
        "--cpu",
        "AuthenticAMD-25-1",
        "-M",
        "FLOPS_AVX",
    ]);
    assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("'FLOPS_AVX'") && err.contains("without a packed or width share"),
        "{err}"
    );
    // On this VM (or any machine), stat says the same before counting.
    let out = pmx(&[
        "stat",
        "--cpu",
        "AuthenticAMD-25-1",
        "-M",
        "FLOPS_AVX",
        "true",
    ]);
    let err = stderr(&out);
    assert!(err.contains("without a packed or width share"), "{err}");
    // A CPU pmx defines no LIKWID groups for says that instead.
    let out = pmx(&[
        "analyze",
        f.path().to_str().unwrap(),
        "--cpu",
        "AuthenticAMD-16-2",
        "-M",
        "MEM",
    ]);
    let err = stderr(&out);
    assert!(err.contains("not defined for this CPU"), "{err}");
    assert!(Path::new(f.path()).exists());
}
