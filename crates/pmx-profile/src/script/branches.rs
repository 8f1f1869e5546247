//! The branch stack fields of `pmx script`: `brstack` (perf script's
//! `0xFROM/0xTO/P/-/-/CYCLES/TYPE` per branch) and `brstacksym` (the
//! same by `function+0xOFF`, `[unknown]` where no symbol covers an end),
//! and the `brstack` array of the JSON lines.

use super::fields::{Field, Fields};
use pmx_perfdata::branch::BranchFlags;
use pmx_symbols::symbolize::{FrameId, FrameName, Symbolizer};
use std::io::Write;

/// perf 6.1's names of the branch types, as `perf script` prints them
/// (nothing for an unknown type; for 15, `EXTEND_ABI`, perf 6.1 has no
/// name and prints C's `(null)`).
const TYPES: [&str; 16] = [
    "",
    "COND",
    "UNCOND",
    "IND",
    "CALL",
    "IND_CALL",
    "RET",
    "SYSCALL",
    "SYSRET",
    "COND_CALL",
    "COND_RET",
    "ERET",
    "IRQ",
    "SERROR",
    "NO_TX",
    "(null)",
];

/// `/P/-/-/CYCLES/TYPE `: the flags as perf script prints them.
fn flags(b: &mut Vec<u8>, f: BranchFlags) {
    let pred = match (f.predicted(), f.mispred()) {
        (true, _) => 'P',
        (false, true) => 'M',
        _ => '-',
    };
    let tx = if f.in_tx() { 'X' } else { '-' };
    let abort = if f.abort() { 'A' } else { '-' };
    let kind = TYPES[f.kind() as usize & 15];
    let _ = write!(b, "/{pred}/{tx}/{abort}/{}/{kind} ", f.cycles());
}

/// An end by its function: `name+0xOFF`, or `[unknown]`; `space` is
/// the address in the frame's symbol space.
fn symbol(b: &mut Vec<u8>, (frame, space): (FrameId, u64), sym: &Symbolizer) {
    match (&sym.frame(frame).name, sym.frame_start(frame)) {
        (FrameName::Symbol(s), Some(start)) => {
            let _ = write!(b, "{s}+{:#x}", space.saturating_sub(start));
        }
        _ => b.extend_from_slice(b"[unknown]"),
    }
}

/// The text fields of one sample: `raw` its (from, to, flags) triples,
/// `ends` each end resolved (frame, address in its symbol space; with
/// `brstacksym`).
pub(crate) fn text(
    b: &mut Vec<u8>,
    f: Fields,
    raw: &[u64],
    ends: &[(FrameId, u64)],
    sym: &Symbolizer,
) {
    if f.has(Field::Brstack) {
        for e in raw.chunks_exact(3) {
            let _ = write!(b, " {:#x}/{:#x}", e[0], e[1]);
            flags(b, BranchFlags(e[2]));
        }
    }
    if f.has(Field::Brstacksym) {
        for (e, ends) in raw.chunks_exact(3).zip(ends.chunks_exact(2)) {
            symbol(b, ends[0], sym);
            b.push(b'/');
            symbol(b, ends[1], sym);
            flags(b, BranchFlags(e[2]));
        }
    }
}

/// `,"brstack":[{"from":…,"to":…,"mispred":…,…},…]`.
pub(crate) fn json(b: &mut Vec<u8>, raw: &[u64]) {
    if b.last() != Some(&b'{') {
        b.push(b',');
    }
    b.extend_from_slice(b"\"brstack\":[");
    for (i, e) in raw.chunks_exact(3).enumerate() {
        let f = BranchFlags(e[2]);
        if i > 0 {
            b.push(b',');
        }
        let _ = write!(
            b,
            "{{\"from\":{},\"to\":{},\"mispred\":{},\"predicted\":{},\"in_tx\":{},\"abort\":{},\"cycles\":{},\"type\":{}}}",
            e[0],
            e[1],
            f.mispred(),
            f.predicted(),
            f.in_tx(),
            f.abort(),
            f.cycles(),
            f.kind()
        );
    }
    b.push(b']');
}
