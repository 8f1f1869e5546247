//! The kernel's generic cache events (`PERF_TYPE_HW_CACHE`: `config` =
//! cache | op << 8 | result << 16, `L1-dcache-loads` …) as register
//! encodings, per CPU model, so the msr backend programs what
//! `perf_event_open` would.
//!
//! The values are the kernel's tables (Linux 6.1,
//! `arch/x86/events/intel/core.c`: `hsw_`, `skl_` and `spr_hw_cache_event_ids`;
//! `arch/x86/events/amd/core.c`: `amd_hw_cache_event_ids` before family
//! 17h, `amd_hw_cache_event_ids_f17h` from it on), chosen by model as
//! `intel_pmu_init` and `amd_pmu_init` choose them. In those tables 0
//! means "not supported" and -1 "no such operation". On Intel the
//! last-level-cache and node events are `OFFCORE_RESPONSE` events
//! (0x01b7, or 0x012a from Sapphire Rapids on) whose meaning is the
//! filter in `MSR_OFFCORE_RSP_0`: the kernel's `hw_cache_extra_regs`
//! tables give it (`hsw_`, `skl_`, `spr_`, and the four values
//! `intel_pmu_init` changes for Broadwell), and [`generic_cache_event`]
//! puts it in `config1`, which the plan writes to that register
//! ([`crate::plan::offcore_register`]). A table with such an event but no
//! filter would be refused ([`CacheGap::Offcore`]; none of pmx's). On a
//! hybrid client (Alder Lake, Raptor Lake) the table is the performance
//! cores' (`cpu_core`).

use pmx_model::cpu::{CpuId, Vendor};
use pmx_model::encoding::{Arch, Encoded, PerfAttr};

/// Why a cache event has no encoding the msr backend can program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheGap {
    /// No kernel table for this CPU (vendor, family or model pmx does not
    /// map).
    NoTable,
    /// The kernel's table says the CPU does not count it (0 or -1).
    NotCounted,
    /// The kernel counts it with `OFFCORE_RESPONSE` (this event select)
    /// and a filter pmx has no copy of.
    Offcore(u64),
}

/// Not supported (the kernel's 0).
const NS: i32 = 0;
/// No such operation (the kernel's -1).
const NO: i32 = -1;

/// [cache][op][result]: caches L1D, L1I, LL, DTLB, ITLB, BPU, NODE; ops
/// read, write, prefetch; results access, miss.
type Table = [[[i32; 2]; 3]; 7];

/// Haswell and Broadwell (`hsw_hw_cache_event_ids`).
const HSW: Table = [
    [[0x81d0, 0x151], [0x82d0, NS], [NS, NS]],
    [[NS, 0x280], [NO, NO], [NS, NS]],
    [[0x1b7, 0x1b7], [0x1b7, 0x1b7], [NS, NS]],
    [[0x81d0, 0x108], [0x82d0, 0x149], [NS, NS]],
    [[0x6085, 0x185], [NO, NO], [NO, NO]],
    [[0xc4, 0xc5], [NO, NO], [NO, NO]],
    [[0x1b7, 0x1b7], [0x1b7, 0x1b7], [NS, NS]],
];

/// Skylake to Tiger Lake, client and server (`skl_hw_cache_event_ids`).
const SKL: Table = [
    [[0x81d0, 0x151], [0x82d0, NS], [NS, NS]],
    [[NS, 0x283], [NO, NO], [NS, NS]],
    [[0x1b7, 0x1b7], [0x1b7, 0x1b7], [NS, NS]],
    [[0x81d0, 0xe08], [0x82d0, 0xe49], [NS, NS]],
    [[0x2085, 0xe85], [NO, NO], [NO, NO]],
    [[0xc4, 0xc5], [NO, NO], [NO, NO]],
    [[0x1b7, 0x1b7], [0x1b7, 0x1b7], [NS, NS]],
];

/// Sapphire Rapids, Emerald Rapids and the Golden Cove cores of the
/// hybrid clients (`spr_hw_cache_event_ids`, later `glc_`).
const SPR: Table = [
    [[0x81d0, 0xe124], [0x82d0, NS], [NS, NS]],
    [[NS, 0xe424], [NO, NO], [NS, NS]],
    [[0x12a, 0x12a], [0x12a, 0x12a], [NS, NS]],
    [[0x81d0, 0xe12], [0x82d0, 0xe13], [NS, NS]],
    [[NO, 0xe11], [NO, NO], [NO, NO]],
    [[0x4c4, 0x4c5], [NO, NO], [NO, NO]],
    [[0x12a, 0x12a], [NS, NS], [NS, NS]],
];

/// AMD before family 17h (`amd_hw_cache_event_ids`).
const AMD_K8: Table = [
    [[0x40, 0x141], [NS, NS], [0x267, 0x167]],
    [[0x80, 0x81], [NO, NO], [0x14b, NS]],
    [[0x37d, 0x37e], [0x17f, NS], [NS, NS]],
    [[0x40, 0x746], [NS, NS], [NS, NS]],
    [[0x80, 0x385], [NO, NO], [NO, NO]],
    [[0xc2, 0xc3], [NO, NO], [NO, NO]],
    [[0xb8e9, 0x98e9], [NO, NO], [NO, NO]],
];

/// AMD family 17h and later, Zen 1–5 (`amd_hw_cache_event_ids_f17h`).
const AMD_ZEN: Table = [
    [[0x40, 0xc860], [NS, NS], [0xff5a, NS]],
    [[0x80, 0x81], [NO, NO], [NS, NS]],
    [[NS, NS], [NS, NS], [NS, NS]],
    [[0xff45, 0xf045], [NS, NS], [NS, NS]],
    [[0x84, 0xff85], [NO, NO], [NO, NO]],
    [[0xc2, 0xc3], [NO, NO], [NO, NO]],
    [[NS, NS], [NO, NO], [NO, NO]],
];

/// The kernel's `hw_cache_extra_regs`: the `MSR_OFFCORE_RSP_0` filter of
/// LLC (cache 2) and node (cache 6) reads and writes, [access, miss].
/// Built from its named bits (demand read bit 0, RFO bit 1, any response
/// 16, supplier none 17, snoops 31–37 …) and checked against the compiled
/// tables in the tests.
type Filters = [[[u64; 2]; 2]; 2];

/// Haswell (`hsw_hw_cache_extra_regs`).
const HSW_FILTERS: Filters = [
    [[0x10001, 0x3fb8400001], [0x10002, 0x3fb8400002]],
    [[0x1f80400001, 0x1fb8000001], [0x1f80400002, 0x1fb8000002]],
];

/// Broadwell: Haswell's with the local-DRAM bit at 26, as
/// `intel_pmu_init` patches four of them.
const BDW_FILTERS: Filters = [
    [[0x10001, 0x1fbc000001], [0x10002, 0x1fbc000002]],
    [[0x1f84000001, 0x1fb8000001], [0x1f84000002, 0x1fb8000002]],
];

/// Skylake to Tiger Lake (`skl_hw_cache_extra_regs`).
const SKL_FILTERS: Filters = [
    [[0x3fc0010001, 0x3ffc020001], [0x3fc0010002, 0x3ffc020002]],
    [[0x1fc4000001, 0x1ff8000001], [0x1fc4000002, 0x1ff8000002]],
];

/// Sapphire Rapids and the Golden Cove cores (`spr_hw_cache_extra_regs`,
/// later `glc_`; no node writes).
const SPR_FILTERS: Filters = [
    [[0x10001, 0x3fbfc00001], [0x3f3ffc0002, 0x3f3fc00002]],
    [[0x10c000001, 0x3fb3000001], [0, 0]],
];

/// The filter the kernel writes for cache event `config` on `cpu`.
fn filter(cpu: &CpuId, config: u64) -> Option<u64> {
    let (cache, op, result) = (config & 0xff, (config >> 8) & 0xff, (config >> 16) & 0xff);
    let filters = match table(cpu)?.0 {
        "hsw" if matches!(cpu.model, 0x3d | 0x47 | 0x4f | 0x56) => &BDW_FILTERS,
        "hsw" => &HSW_FILTERS,
        "skl" => &SKL_FILTERS,
        "spr" => &SPR_FILTERS,
        _ => return None,
    };
    let c = match cache {
        2 => 0,
        6 => 1,
        _ => return None,
    };
    filters[c]
        .get(op as usize)?
        .get(result as usize)
        .copied()
        .filter(|&f| f != 0)
}

/// The kernel's table for `cpu`, with its name (for messages and docs).
pub fn table_name(cpu: &CpuId) -> Option<&'static str> {
    table(cpu).map(|(name, _)| name)
}

fn table(cpu: &CpuId) -> Option<(&'static str, &'static Table)> {
    match cpu.vendor {
        Vendor::Intel if cpu.family == 6 => match cpu.model {
            0x3c | 0x3f | 0x45 | 0x46 | 0x3d | 0x47 | 0x4f | 0x56 => Some(("hsw", &HSW)),
            0x4e | 0x5e | 0x55 | 0x8e | 0x9e | 0xa5 | 0xa6 | 0x7d | 0x7e | 0x9d | 0x6a | 0x6c
            | 0x8c | 0x8d | 0xa7 => Some(("skl", &SKL)),
            0x8f | 0xcf | 0x97 | 0x9a | 0xb7 | 0xba | 0xbf => Some(("spr", &SPR)),
            _ => None,
        },
        Vendor::Amd | Vendor::Hygon if cpu.family >= 0x17 => Some(("amd_f17h", &AMD_ZEN)),
        Vendor::Amd if cpu.family >= 0xf => Some(("amd", &AMD_K8)),
        _ => None,
    }
}

/// The event select the kernel programs for cache event `config` on
/// `cpu` (before privilege bits), or why there is none; an
/// `OFFCORE_RESPONSE` select's filter is [`cache_event_encoding`]'s.
pub fn cache_event_select(cpu: &CpuId, config: u64) -> Result<u64, CacheGap> {
    cache_event_encoding(cpu, config).map(|(select, _)| select)
}

/// The event select and the `MSR_OFFCORE_RSP_0` filter (0 for an event
/// without one) the kernel programs for cache event `config` on `cpu`.
pub fn cache_event_encoding(cpu: &CpuId, config: u64) -> Result<(u64, u64), CacheGap> {
    let (_, t) = table(cpu).ok_or(CacheGap::NoTable)?;
    let (cache, op, result) = (config & 0xff, (config >> 8) & 0xff, (config >> 16) & 0xff);
    let value = t
        .get(cache as usize)
        .and_then(|c| c.get(op as usize))
        .and_then(|o| o.get(result as usize))
        .copied()
        .filter(|&v| v > 0)
        .ok_or(CacheGap::NotCounted)?;
    let select = value as u64;
    let offcore = matches!(select, 0x1b7 | 0x1bb | 0x12a | 0x12b);
    if cpu.vendor == Vendor::Intel && offcore {
        return filter(cpu, config)
            .map(|f| (select, f))
            .ok_or(CacheGap::Offcore(select));
    }
    Ok((select, 0))
}

/// The kernel's generic cache event `config` on `cpu` as a register
/// encoding, privilege from `attr`, as [`crate::generic_hardware_event`]
/// encodes the generic hardware events.
pub fn generic_cache_event(cpu: &CpuId, config: u64, attr: &PerfAttr) -> Result<Encoded, CacheGap> {
    let arch = match cpu.vendor {
        Vendor::Intel => Arch::Intel,
        Vendor::Amd | Vendor::Hygon => Arch::Amd,
        Vendor::Other(_) => return Err(CacheGap::NoTable),
    };
    let (select, filter) = cache_event_encoding(cpu, config)?;
    let mut enc = crate::plan::raw_event(arch, select, attr);
    enc.attr.config1 = filter;
    Ok(enc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(vendor: Vendor, family: u32, model: u32) -> CpuId {
        CpuId::new(vendor, family, model, None)
    }

    /// Every filter, LLC and node, read and write, access and miss, as
    /// the kernel's compiled tables hold them (Skylake's as LLVM printed
    /// `skl_hw_cache_extra_regs`, in decimal; the others from its named
    /// bits), and Broadwell's four patched values.
    #[test]
    fn filters_are_the_kernels() {
        let skl = cpu(Vendor::Intel, 6, 0x5e);
        let configs = [2, 0x10002, 0x102, 0x10102, 6, 0x10006, 0x106, 0x10106];
        let got = |c: &CpuId| -> Vec<u64> {
            configs
                .iter()
                .map(|&k| cache_event_encoding(c, k).map_or(0, |e| e.1))
                .collect()
        };
        assert_eq!(
            got(&skl),
            [
                273804230657,
                274810929153,
                273804230658,
                274810929154,
                136432320513,
                137304735745,
                136432320514,
                137304735746
            ]
        );
        let hsw = got(&cpu(Vendor::Intel, 6, 0x3c));
        let bdw = got(&cpu(Vendor::Intel, 6, 0x4f));
        let changed: Vec<usize> = (0..8).filter(|&i| hsw[i] != bdw[i]).collect();
        assert_eq!(
            changed,
            [1, 3, 4, 6],
            "LL read/write miss, node read/write access"
        );
        assert!(bdw.iter().all(|f| f & (1 << 22) == 0) && bdw[4] & (1 << 26) != 0);
        assert_eq!(got(&cpu(Vendor::Intel, 6, 0x8f))[6..], [0, 0]);
    }

    #[test]
    fn models_pick_the_kernels_tables() {
        let skx = cpu(Vendor::Intel, 6, 0x55);
        assert_eq!(cache_event_select(&skx, 0), Ok(0x81d0));
        assert_eq!(cache_event_select(&skx, 0x10000), Ok(0x151));
        // LLC-loads: OFFCORE_RESPONSE with its filter.
        assert_eq!(cache_event_encoding(&skx, 2), Ok((0x1b7, 0x3fc0010001)));
        // L1-dcache-store-misses: 0 in the table.
        assert_eq!(cache_event_select(&skx, 0x10100), Err(CacheGap::NotCounted));
        // iTLB-stores: -1 in the table; a cache id past NODE: nothing.
        assert_eq!(cache_event_select(&skx, 0x104), Err(CacheGap::NotCounted));
        assert_eq!(cache_event_select(&skx, 9), Err(CacheGap::NotCounted));
        let spr = cpu(Vendor::Intel, 6, 0x8f);
        assert_eq!(cache_event_select(&spr, 0x10000), Ok(0xe124));
        assert_eq!(cache_event_encoding(&spr, 2), Ok((0x12a, 0x10001)));
        assert_eq!(
            cache_event_select(&cpu(Vendor::Intel, 6, 0x3c), 0x10003),
            Ok(0x108)
        );
        // Node writes: none on Sapphire Rapids, a filter on Skylake.
        assert_eq!(cache_event_select(&spr, 0x106), Err(CacheGap::NotCounted));
        assert_eq!(
            cache_event_encoding(&skx, 0x10106),
            Ok((0x1b7, 0x1ff8000002))
        );
        let zen4 = cpu(Vendor::Amd, 0x19, 0x11);
        assert_eq!(cache_event_select(&zen4, 0x10000), Ok(0xc860));
        assert_eq!(cache_event_select(&zen4, 2), Err(CacheGap::NotCounted));
        let k10 = cpu(Vendor::Amd, 0x10, 2);
        assert_eq!(cache_event_select(&k10, 0x10002), Ok(0x37e));
        assert_eq!(
            cache_event_select(&cpu(Vendor::Intel, 6, 0x1a), 0),
            Err(CacheGap::NoTable)
        );
    }
}
