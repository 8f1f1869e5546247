//! The AMD cache-hierarchy group on every Zen (`-M amd_cache`): the method
//! pmx's family 10h group uses (DC and IC accesses, their refills from the
//! L2 and from the system, L2 requests and misses, L3 requests and misses;
//! rates per instruction and miss ratios), written per Zen generation with
//! the events of Linux perf's tables (`x86/amdzenN`, the processor
//! programming references' names).
//!
//! | input | Zen 1, Zen 2 | Zen 3 | Zen 4 | Zen 5 |
//! |---|---|---|---|---|
//! | instructions | `instructions` | = | = | = |
//! | DC accesses | `ls_dc_accesses` (PMCx040) | = | PMCx029 umask 0x07 (`ls_dispatch.ld_dispatch` + `store_dispatch` + `ld_st_dispatch`) | `ls_dispatch.all` |
//! | DC refills from L2 | PMCx064 umask 0xF0 (`l2_cache_req_stat.ls_rd_blk_x` + `ls_rd_blk_l_hit_s` + `ls_rd_blk_l_hit_x` + `ls_rd_blk_cs`) | = | `l2_cache_req_stat.dc_hit_in_l2` | = |
//! | DC refills from system | `l2_cache_req_stat.ls_rd_blk_c` | = | = | = |
//! | IC accesses | `ic_fw32` (PMCx080) | `ic_tag_hit_miss.all_instruction_cache_accesses` | = | = |
//! | IC refills from L2 / system | `ic_cache_fill_l2` / `ic_cache_fill_sys` | = | = | = |
//! | L3 requests (L3 PMU) | `l3_request_g1.caching_l3_cache_accesses` | `l3_lookup_state.all_l3_req_typs` | `l3_lookup_state.all_coherent_accesses_to_l3` | = |
//! | L3 misses (L3 PMU) | `l3_comb_clstr_state.request_miss` | = | `l3_lookup_state.l3_miss` | = |
//!
//! Combinations of unit masks that perf's tables name only one by one are
//! written as perf's raw terms (`cpu@event\=0x64\,umask\=0xf0@`), one
//! counter each. The derived values: DC misses = DC refills from L2 + from
//! system; IC misses likewise; L2 requests = DC misses + IC misses; L2
//! misses = DC + IC refills from system (Zen has no event for the page
//! walker's L2 requests, which family 10h adds); `l2_mpki` = 1000 × L2
//! misses / instructions.
//!
//! Counting: seven core-PMU events (two passes of the six counters, or
//! multiplexed) and two L3-PMU events, which have counters of their own.
//! No metric needs more than five core events, so each can be computed
//! from one pass. The L3 counts are the whole core complex's (every core
//! sharing the L3), as family 10h's `ALL_CORES` ones.

use crate::formula::{Dialect, Formula};
use crate::library::{Metric, MetricTable};

/// The inputs of the group on one Zen generation (formula terms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZenCacheEvents {
    /// DC accesses.
    pub dc_accesses: &'static str,
    /// DC refills from the L2.
    pub dc_from_l2: &'static str,
    /// DC refills from the system (beyond the L2).
    pub dc_from_system: &'static str,
    /// IC accesses (fetches).
    pub ic_accesses: &'static str,
    /// IC refills from the L2.
    pub ic_from_l2: &'static str,
    /// IC refills from the system.
    pub ic_from_system: &'static str,
    /// L3 requests (L3 PMU).
    pub l3_requests: &'static str,
    /// L3 misses (L3 PMU).
    pub l3_misses: &'static str,
}

const DC_HIT_L2_RAW: &str = r"cpu@event\=0x64\,umask\=0xf0@";

const ZEN12: ZenCacheEvents = ZenCacheEvents {
    dc_accesses: "ls_dc_accesses",
    dc_from_l2: DC_HIT_L2_RAW,
    dc_from_system: "l2_cache_req_stat.ls_rd_blk_c",
    ic_accesses: "ic_fw32",
    ic_from_l2: "ic_cache_fill_l2",
    ic_from_system: "ic_cache_fill_sys",
    l3_requests: "l3_request_g1.caching_l3_cache_accesses",
    l3_misses: "l3_comb_clstr_state.request_miss",
};

const ZEN3: ZenCacheEvents = ZenCacheEvents {
    ic_accesses: "ic_tag_hit_miss.all_instruction_cache_accesses",
    l3_requests: "l3_lookup_state.all_l3_req_typs",
    ..ZEN12
};

const ZEN4: ZenCacheEvents = ZenCacheEvents {
    dc_accesses: r"cpu@event\=0x29\,umask\=0x07@",
    dc_from_l2: "l2_cache_req_stat.dc_hit_in_l2",
    l3_requests: "l3_lookup_state.all_coherent_accesses_to_l3",
    l3_misses: "l3_lookup_state.l3_miss",
    ..ZEN3
};

const ZEN5: ZenCacheEvents = ZenCacheEvents {
    dc_accesses: "ls_dispatch.all",
    ..ZEN4
};

/// The group's inputs for a microarchitecture code (`zen1`…`zen5`).
pub fn zen_cache_events(arch_code: &str) -> Option<ZenCacheEvents> {
    match arch_code {
        "zen1" | "zen2" => Some(ZEN12),
        "zen3" => Some(ZEN3),
        "zen4" => Some(ZEN4),
        "zen5" => Some(ZEN5),
        _ => None,
    }
}

/// Add the group's metrics for `ev` to `table` (a formula that does not
/// parse becomes a warning, never a panic).
pub fn add_zen_cache(table: &mut MetricTable, ev: ZenCacheEvents) {
    let i = "instructions";
    let defs: [(&str, String, &str, f64, &str); 13] = [
        (
            "dc_request_rate",
            format!("{} / {i}", ev.dc_accesses),
            "per instruction",
            1.0,
            "DC request rate: L1 data-cache accesses per instruction",
        ),
        (
            "dc_misses",
            format!("{} + {}", ev.dc_from_l2, ev.dc_from_system),
            "misses",
            1.0,
            "DC misses: L1 data-cache refills from the L2 and from the system",
        ),
        (
            "dc_miss_ratio",
            format!("dc_misses / {}", ev.dc_accesses),
            "%",
            100.0,
            "DC miss ratio: DC misses / DC accesses",
        ),
        (
            "ic_request_rate",
            format!("{} / {i}", ev.ic_accesses),
            "per instruction",
            1.0,
            "IC request rate: L1 instruction-cache fetches per instruction",
        ),
        (
            "ic_misses",
            format!("{} + {}", ev.ic_from_l2, ev.ic_from_system),
            "misses",
            1.0,
            "IC misses: L1 instruction-cache refills from the L2 and from the system",
        ),
        (
            "ic_miss_ratio",
            format!("ic_misses / {}", ev.ic_accesses),
            "%",
            100.0,
            "IC miss ratio: IC misses / IC fetches",
        ),
        (
            "l2_requests",
            "dc_misses + ic_misses".into(),
            "requests",
            1.0,
            "L2 requests: DC misses + IC misses",
        ),
        (
            "l2_request_rate",
            format!("l2_requests / {i}"),
            "per instruction",
            1.0,
            "L2 request rate: L2 requests per instruction",
        ),
        (
            "l2_misses",
            format!("{} + {}", ev.dc_from_system, ev.ic_from_system),
            "misses",
            1.0,
            "L2 misses: DC and IC refills from the system",
        ),
        (
            "l2_miss_ratio",
            "l2_misses / l2_requests".into(),
            "%",
            100.0,
            "L2 miss ratio: L2 misses / L2 requests",
        ),
        (
            "l2_mpki",
            format!("1000 * l2_misses / {i}"),
            "per 1000 instructions",
            1.0,
            "L2 misses per thousand instructions",
        ),
        (
            "l3_request_rate",
            format!("{} / {i}", ev.l3_requests),
            "per instruction",
            1.0,
            "L3 request rate: L3 requests (the whole core complex) per instruction",
        ),
        (
            "l3_miss_ratio",
            format!("{} / {}", ev.l3_misses, ev.l3_requests),
            "%",
            100.0,
            "L3 miss ratio: L3 misses / L3 requests (the whole core complex)",
        ),
    ];
    for (name, formula, unit, scale, description) in defs {
        match Formula::parse(&formula, Dialect::Pmx) {
            Ok(f) => {
                let mut m = Metric::from_formula(name, f, unit, scale);
                m.description = description.to_string();
                m.groups = vec!["amd_cache".into(), "cache".into()];
                table.metrics.push(m);
            }
            Err(e) => table.warnings.push(format!("{name}: {e}")),
        }
    }
}
