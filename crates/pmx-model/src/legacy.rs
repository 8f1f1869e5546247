//! perf's legacy event names: the symbols its lexer knows for the generic
//! hardware and software events, and every spelling of a generic cache
//! event it accepts.
//!
//! Sources (Linux 6.1): `tools/perf/util/parse-events.l` (the symbol
//! tokens, and the cache-name pattern `{lc_type}-{lc_op_result}(-{lc_op_result})?`),
//! `tools/perf/util/evsel.c` (`evsel__hw_cache`, `evsel__hw_cache_op`,
//! `evsel__hw_cache_result`: the aliases of each cache, op and result, and
//! `evsel__hw_cache_stat`: which ops each cache has) and
//! `parse_events_add_cache` in `parse-events.c` (a missing op means
//! `load`, a missing result means `access`; the first word that names an
//! op is the op, the first that names a result is the result).
//!
//! The names match without regard to case here (perf's lexer is
//! case-sensitive: pmx accepts a superset).

/// `PERF_TYPE_HARDWARE` symbols: (names, config).
pub const HARDWARE: &[(&[&str], u64)] = &[
    (&["cpu-cycles", "cycles"], 0),
    (&["instructions"], 1),
    (&["cache-references"], 2),
    (&["cache-misses"], 3),
    (&["branch-instructions", "branches"], 4),
    (&["branch-misses"], 5),
    (&["bus-cycles"], 6),
    (&["stalled-cycles-frontend", "idle-cycles-frontend"], 7),
    (&["stalled-cycles-backend", "idle-cycles-backend"], 8),
    (&["ref-cycles"], 9),
];

/// `PERF_TYPE_SOFTWARE` symbols: (names, config).
pub const SOFTWARE: &[(&[&str], u64)] = &[
    (&["cpu-clock"], 0),
    (&["task-clock"], 1),
    (&["page-faults", "faults"], 2),
    (&["context-switches", "cs"], 3),
    (&["cpu-migrations", "migrations"], 4),
    (&["minor-faults"], 5),
    (&["major-faults"], 6),
    (&["alignment-faults"], 7),
    (&["emulation-faults"], 8),
    (&["dummy"], 9),
    (&["bpf-output"], 10),
    (&["cgroup-switches"], 11),
];

/// `evsel__hw_cache`: each cache's names, the first canonical
/// (`PERF_COUNT_HW_CACHE_L1D` … `NODE`).
pub const CACHES: &[&[&str]] = &[
    &["L1-dcache", "l1-d", "l1d", "L1-data"],
    &["L1-icache", "l1-i", "l1i", "L1-instruction"],
    &["LLC", "L2"],
    &["dTLB", "d-tlb", "Data-TLB"],
    &["iTLB", "i-tlb", "Instruction-TLB"],
    &["branch", "branches", "bpu", "btb", "bpc"],
    &["node"],
];

/// `evsel__hw_cache_op`: read (load), write (store), prefetch.
pub const OPS: &[&[&str]] = &[
    &["load", "loads", "read"],
    &["store", "stores", "write"],
    &[
        "prefetch",
        "prefetches",
        "speculative-read",
        "speculative-load",
    ],
];

/// `evsel__hw_cache_result`: access, miss.
pub const RESULTS: &[&[&str]] = &[&["refs", "Reference", "ops", "access"], &["misses", "miss"]];

/// `evsel__hw_cache_stat`: the ops (bit per op) each cache has.
const CACHE_OPS: [u8; 7] = [0b111, 0b101, 0b111, 0b111, 0b001, 0b001, 0b111];

/// Does cache `cache` have op `op` (`evsel__is_cache_op_valid`)?
pub fn cache_op_valid(cache: u64, op: u64) -> bool {
    CACHE_OPS
        .get(cache as usize)
        .is_some_and(|m| op < 3 && m & (1 << op) != 0)
}

/// The `PERF_TYPE_HARDWARE` or `PERF_TYPE_SOFTWARE` symbol `name`:
/// (type, config).
pub fn symbol(name: &str) -> Option<(u32, u64)> {
    let find = |table: &[(&[&str], u64)]| {
        table
            .iter()
            .find(|(names, _)| names.iter().any(|n| n.eq_ignore_ascii_case(name)))
            .map(|(_, c)| *c)
    };
    find(HARDWARE)
        .map(|c| (0, c))
        .or_else(|| find(SOFTWARE).map(|c| (1, c)))
}

fn index_of(table: &[&[&str]], word: &str) -> Option<u64> {
    table
        .iter()
        .position(|names| names.iter().any(|n| n.eq_ignore_ascii_case(word)))
        .map(|i| i as u64)
}

/// Split `rest` into one or two op/result words (words may hold '-').
fn op_result_words(rest: &str) -> Option<Vec<&str>> {
    let is_word = |w: &str| index_of(OPS, w).is_some() || index_of(RESULTS, w).is_some();
    if is_word(rest) {
        return Some(vec![rest]);
    }
    for (i, _) in rest.match_indices('-') {
        let (a, b) = (&rest[..i], &rest[i + 1..]);
        if is_word(a) && is_word(b) {
            return Some(vec![a, b]);
        }
    }
    None
}

/// The `PERF_TYPE_HW_CACHE` config of a cache-event name in any of perf's
/// spellings (`L1-dcache-load-misses`, `L1-dcache-load-miss`,
/// `l1d-misses`, `LLC-loads`, `branch-load-misses`), as perf computes it:
/// `cache | op << 8 | result << 16`. `None` when the name is not of that
/// form or names an op the cache does not have (`L1-icache-stores`).
pub fn cache_config(name: &str) -> Option<u64> {
    let mut best: Option<(u64, &str)> = None;
    for (i, names) in CACHES.iter().enumerate() {
        for n in *names {
            let Some(head) = name.get(..n.len()) else {
                continue;
            };
            if head.eq_ignore_ascii_case(n)
                && name.as_bytes().get(n.len()) == Some(&b'-')
                && best.is_none_or(|(_, b)| b.len() < n.len())
            {
                best = Some((i as u64, n));
            }
        }
    }
    let (cache, type_name) = best?;
    let words = op_result_words(&name[type_name.len() + 1..])?;
    let (mut op, mut result) = (None, None);
    for w in words {
        if op.is_none() {
            if let Some(o) = index_of(OPS, w) {
                if !cache_op_valid(cache, o) {
                    return None;
                }
                op = Some(o);
                continue;
            }
        }
        if result.is_none() {
            if let Some(r) = index_of(RESULTS, w) {
                result = Some(r);
            }
        }
    }
    Some(cache | op.unwrap_or(0) << 8 | result.unwrap_or(0) << 16)
}

/// Is `name` a symbol perf's lexer reads as an event (a hardware, software
/// or cache event name), so that `name/…/` is that event with terms rather
/// than a PMU?
pub fn is_event_symbol(name: &str) -> bool {
    symbol(name).is_some() || cache_config(name).is_some()
}

/// The canonical cache-event names perf lists (`L1-dcache-loads`,
/// `L1-dcache-load-misses`, …): every op a cache has, access and miss.
pub fn cache_names() -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for (c, names) in CACHES.iter().enumerate() {
        for (o, ops) in OPS.iter().enumerate() {
            if !cache_op_valid(c as u64, o as u64) {
                continue;
            }
            let config = c as u64 | (o as u64) << 8;
            out.push((format!("{}-{}", names[0], ops[1]), config));
            out.push((format!("{}-{}-misses", names[0], ops[0]), config | 1 << 16));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_spellings_as_perf_reads_them() {
        // Expected configs written from perf's tables (evsel.c) and
        // tools/perf/tests/parse-events.c (`L1-dcache-load-miss` is
        // PERF_COUNT_HW_CACHE_L1D | OP_READ << 8 | RESULT_MISS << 16).
        for (name, config) in [
            ("L1-dcache-load-miss", 0x10000),
            ("L1-dcache-load-misses", 0x10000),
            ("L1-dcache-misses", 0x10000),
            ("L1-dcache-loads", 0x0),
            ("l1d-miss", 0x10000),
            ("L1-data-store-misses", 0x10100),
            ("L1-icache-prefetches", 0x201),
            ("LLC-load-misses", 0x10002),
            ("L2-stores", 0x102),
            ("dTLB-load-misses", 0x10003),
            ("Data-TLB-speculative-read-miss", 0x10203),
            ("iTLB-load-misses", 0x10004),
            ("branch-load-misses", 0x10005),
            ("bpu-loads", 0x5),
            ("node-store-misses", 0x10106),
            ("L1-dcache-miss-load", 0x10000),
            ("LLC-refs", 0x2),
        ] {
            assert_eq!(cache_config(name), Some(config), "{name}");
        }
        for bad in [
            "L1-icache-stores",
            "iTLB-stores",
            "L1-dcache-lod-miss",
            "L1-dcache",
            "L1-dcache-",
            "L3-loads",
        ] {
            assert_eq!(cache_config(bad), None, "{bad}");
        }
        assert_eq!(cache_names().len(), 32);
        assert_eq!(symbol("cs"), Some((1, 3)));
        assert_eq!(symbol("Cycles"), Some((0, 0)));
        assert!(is_event_symbol("L1-dcache-misses") && !is_event_symbol("msr"));
    }
}
