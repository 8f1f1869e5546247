//! Branch stacks: a sample's `PERF_SAMPLE_BRANCH_STACK` field.
//!
//! The layout (`perf_event_open(2)`, `struct perf_branch_stack`), in the
//! order a sample holds it:
//!
//! - `nr`, a u64: how many entries follow;
//! - `hw_idx`, a u64, only when the event's `branch_sample_type` has
//!   `PERF_SAMPLE_BRANCH_HW_INDEX` (Linux 5.7): the LBR's top of stack
//!   (`-1` when the hardware gives none); files without that bit, every
//!   file before 5.7 among them, have no such word, which is how perf 6.1
//!   reads them too;
//! - `nr` entries of three u64: `from`, `to`, and a word of bit fields
//!   (little-endian bit order): `mispred:1 predicted:1 in_tx:1 abort:1
//!   cycles:16 type:4 spec:2 new_type:4 priv:3`, the rest reserved. Older
//!   kernels filled fewer fields and left the others 0 (3.x: mispred and
//!   predicted; 3.11: in_tx, abort; 4.3: cycles; 4.14: type; 6.1: spec,
//!   new_type, priv), so one decoding reads every layout;
//! - with `PERF_SAMPLE_BRANCH_COUNTERS` (Linux 6.8), `nr` u64 more: each
//!   entry's occurrence counts of the group's events.
//!
//! [`BranchStack`] is a view of those bytes in a sample (checked once,
//! when the sample is parsed, by [`parse`]); [`BranchEntry`] one entry;
//! [`BranchFlags`] its flag word; [`encode`] writes the field back, for
//! samples a writer builds. [`max_branches`] reads the LBR's depth from
//! the header's CPU_PMU_CAPS (`branches=`; written by
//! [`crate::write::cpu_pmu_caps`]).

use crate::format::branch_sample_type as bst;
use crate::Error;

/// One branch: where it left, where it went, and what the PMU said of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BranchEntry {
    /// The branch instruction's address.
    pub from: u64,
    /// Its target.
    pub to: u64,
    /// The flag word.
    pub flags: BranchFlags,
}

/// An entry's flag word (`perf_branch_entry`'s third u64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, PartialOrd, Ord)]
pub struct BranchFlags(pub u64);

/// The `type` field's values (`PERF_BR_*`).
pub mod branch_type {
    /// Unknown.
    pub const UNKNOWN: u8 = 0;
    /// Conditional.
    pub const COND: u8 = 1;
    /// Unconditional.
    pub const UNCOND: u8 = 2;
    /// Indirect.
    pub const IND: u8 = 3;
    /// Function call.
    pub const CALL: u8 = 4;
    /// Indirect call.
    pub const IND_CALL: u8 = 5;
    /// Function return.
    pub const RET: u8 = 6;
    /// System call.
    pub const SYSCALL: u8 = 7;
    /// System call return.
    pub const SYSRET: u8 = 8;
    /// Conditional call.
    pub const COND_CALL: u8 = 9;
    /// Conditional return.
    pub const COND_RET: u8 = 10;
    /// Exception return.
    pub const ERET: u8 = 11;
    /// Interrupt.
    pub const IRQ: u8 = 12;
    /// System error.
    pub const SERROR: u8 = 13;
    /// Not in a transaction.
    pub const NO_TX: u8 = 14;
    /// The type is in `new_type` (`PERF_BR_EXTEND_ABI`).
    pub const EXTEND_ABI: u8 = 15;

    /// The names of the types, by value: perf 6.1's (`branch_type_name`:
    /// `N/A`, `COND`, `UNCOND`, `IND`, `CALL` …, the kernel's `PERF_BR_*`
    /// without the prefix; perf 4.x and 5.x printed `JCC`, `JMP`,
    /// `IND_JMP` in some places). perf 6.1's own table stops at `NO_TX`:
    /// it has no name for 15 and prints C's `(null)` where it prints one
    /// (`perf script`'s `brstack`); `EXTEND_ABI` here is the kernel's name.
    /// One table for every output that names a type: `perf script`,
    /// the branch table's `type` key, `--branch-history`'s notes.
    pub const NAMES: [&str; 16] = [
        "N/A",
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
        "EXTEND_ABI",
    ];

    /// The names of `new_type`'s values (`PERF_BR_NEW_*`) when the type
    /// is [`EXTEND_ABI`], as perf 6.1 built for x86 names them
    /// (`branch_new_type_name`; built for arm64 it names 3–7 `ARM64_FIQ`,
    /// `ARM64_DEBUG_HALT` …); 8–15 have no name.
    pub const NEW_NAMES: [&str; 8] = [
        "FAULT_ALGN",
        "FAULT_DATA",
        "FAULT_INST",
        "ARCH_1",
        "ARCH_2",
        "ARCH_3",
        "ARCH_4",
        "ARCH_5",
    ];
}

impl BranchFlags {
    fn bits(self, shift: u32, width: u32) -> u64 {
        (self.0 >> shift) & ((1 << width) - 1)
    }
    /// The target was mispredicted.
    pub fn mispred(self) -> bool {
        self.bits(0, 1) != 0
    }
    /// The target was predicted.
    pub fn predicted(self) -> bool {
        self.bits(1, 1) != 0
    }
    /// The branch was inside a transaction (TSX).
    pub fn in_tx(self) -> bool {
        self.bits(2, 1) != 0
    }
    /// The branch was a transaction's abort.
    pub fn abort(self) -> bool {
        self.bits(3, 1) != 0
    }
    /// Cycles since the previous branch (0: not recorded).
    pub fn cycles(self) -> u16 {
        self.bits(4, 16) as u16
    }
    /// The branch type ([`branch_type`]).
    pub fn kind(self) -> u8 {
        self.bits(20, 4) as u8
    }
    /// Speculation outcome (`PERF_BR_SPEC_*`: 0 N/A, 1 wrong path,
    /// 2 correct path, 3 correct path and retired).
    pub fn spec(self) -> u8 {
        self.bits(24, 2) as u8
    }
    /// The extended type when [`BranchFlags::kind`] is
    /// [`branch_type::EXTEND_ABI`] (`PERF_BR_NEW_*`).
    pub fn new_type(self) -> u8 {
        self.bits(26, 4) as u8
    }
    /// Privilege level of the target (`PERF_BR_PRIV_*`: 0 unknown, 1 user,
    /// 2 kernel, 3 hypervisor).
    pub fn privilege(self) -> u8 {
        self.bits(30, 3) as u8
    }
    /// The flag word of these fields (each cut to its width).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        mispred: bool,
        predicted: bool,
        in_tx: bool,
        abort: bool,
        cycles: u16,
        kind: u8,
        spec: u8,
        new_type: u8,
        privilege: u8,
    ) -> BranchFlags {
        BranchFlags(
            u64::from(mispred)
                | u64::from(predicted) << 1
                | u64::from(in_tx) << 2
                | u64::from(abort) << 3
                | u64::from(cycles) << 4
                | u64::from(kind & 0xf) << 20
                | u64::from(spec & 3) << 24
                | u64::from(new_type & 0xf) << 26
                | u64::from(privilege & 7) << 30,
        )
    }
}

/// A sample's branch stack, as bytes of the record checked to hold it.
#[derive(Debug, Clone, Copy, Default)]
pub struct BranchStack<'a> {
    /// `hw_idx`, when the event's `branch_sample_type` has `HW_INDEX`.
    pub hw_idx: Option<u64>,
    entries: &'a [u8],
    counters: &'a [u8],
}

impl<'a> BranchStack<'a> {
    /// Entries (0 for a sample without a branch stack).
    pub fn len(&self) -> usize {
        self.entries.len() / 24
    }
    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    /// Entry `i` (0 is the most recent branch).
    pub fn get(&self, i: usize) -> Option<BranchEntry> {
        let b = self.entries.get(i * 24..i * 24 + 24)?;
        let w = |k: usize| u64::from_le_bytes(b[k * 8..k * 8 + 8].try_into().unwrap_or_default());
        Some(BranchEntry {
            from: w(0),
            to: w(1),
            flags: BranchFlags(w(2)),
        })
    }
    /// The entries, most recent first.
    pub fn iter(&self) -> impl Iterator<Item = BranchEntry> + 'a {
        let me = *self;
        (0..me.len()).filter_map(move |i| me.get(i))
    }
    /// `PERF_SAMPLE_BRANCH_COUNTERS`' words, one per entry (empty without).
    pub fn counters(&self) -> impl Iterator<Item = u64> + 'a {
        (self.counters.chunks_exact(8))
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
    }
}

/// The bytes of a branch stack field at the start of `b` for an event of
/// `branch_sample_type`: the stack and how many bytes it took. `at` (the
/// field's offset in the file) goes into the errors: a count that runs
/// past the record is an error naming it, never a short read.
pub fn parse(
    b: &[u8],
    branch_sample_type: u64,
    at: u64,
) -> Result<(BranchStack<'_>, usize), Error> {
    let word = |i: usize| {
        b.get(i * 8..i * 8 + 8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()))
    };
    let short = |what: String| Error::format(at, what);
    let nr = word(0).ok_or_else(|| short("SAMPLE branch stack: no room for its count".into()))?;
    let hw = branch_sample_type & bst::HW_INDEX != 0;
    let counted = branch_sample_type & bst::COUNTERS != 0;
    let mut pos = 8;
    let hw_idx = if hw {
        pos += 8;
        Some(word(1).ok_or_else(|| {
            short(
                "SAMPLE branch stack: its attr has HW_INDEX but the record ends before hw_idx"
                    .into(),
            )
        })?)
    } else {
        None
    };
    let per = if counted { 32 } else { 24 };
    let room = b.len().saturating_sub(pos);
    if nr > (room / per) as u64 {
        let with = if hw {
            " after hw_idx (the attr has HW_INDEX)"
        } else {
            ""
        };
        return Err(short(format!(
            "SAMPLE branch stack of {nr} entries ({per} bytes each) does not fit the {room} bytes left in its record{with}"
        )));
    }
    let n = nr as usize * 24;
    let entries = &b[pos..pos + n];
    pos += n;
    let counters = if counted {
        let c = &b[pos..pos + nr as usize * 8];
        pos += c.len();
        c
    } else {
        &[]
    };
    Ok((
        BranchStack {
            hw_idx,
            entries,
            counters,
        },
        pos,
    ))
}

/// Append the branch stack field of `entries` to `out`, laid out for an
/// event of `branch_sample_type`: `hw_idx` is written when that has
/// `HW_INDEX` (`-1`, "none", when `hw_idx` is `None`), `counters` (one
/// per entry, 0 for those missing) when it has `COUNTERS`.
pub fn encode(
    out: &mut Vec<u8>,
    branch_sample_type: u64,
    hw_idx: Option<u64>,
    entries: &[BranchEntry],
    counters: &[u64],
) {
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    if branch_sample_type & bst::HW_INDEX != 0 {
        out.extend_from_slice(&hw_idx.unwrap_or(u64::MAX).to_le_bytes());
    }
    for e in entries {
        for w in [e.from, e.to, e.flags.0] {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }
    if branch_sample_type & bst::COUNTERS != 0 {
        for i in 0..entries.len() {
            out.extend_from_slice(&counters.get(i).copied().unwrap_or(0).to_le_bytes());
        }
    }
}

/// The capabilities of a CPU_PMU_CAPS section (`u32 nr`, then each name
/// and value as a perf string: u32 length, the bytes NUL-padded); `None`
/// when the section is short or not UTF-8.
pub fn cpu_pmu_caps(body: &[u8]) -> Option<Vec<(String, String)>> {
    let word = |at: usize| Some(u32::from_le_bytes(body.get(at..at + 4)?.try_into().ok()?));
    let nr = word(0)? as usize;
    let mut at = 4;
    let string = |at: &mut usize| -> Option<String> {
        let len = word(*at)? as usize;
        let bytes = body.get(*at + 4..(*at + 4).checked_add(len)?)?;
        *at += 4 + len;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        String::from_utf8(bytes[..end].to_vec()).ok()
    };
    let mut out = Vec::with_capacity(nr.min(64));
    for _ in 0..nr {
        let name = string(&mut at)?;
        out.push((name, string(&mut at)?));
    }
    Some(out)
}

/// The LBR's depth a file's header gives (CPU_PMU_CAPS `branches=`), as
/// perf reads it, from its features' raw sections (`FileFeatures::raw`);
/// `None` without it.
pub fn max_branches(raw: &std::collections::BTreeMap<u32, Vec<u8>>) -> Option<u64> {
    let body = raw.get(&crate::format::feature::CPU_PMU_CAPS)?;
    let caps = cpu_pmu_caps(body)?;
    let (_, v) = caps.into_iter().find(|(n, _)| n == "branches")?;
    v.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries() -> Vec<BranchEntry> {
        vec![
            BranchEntry {
                from: 0x1000,
                to: 0x2000,
                flags: BranchFlags::new(true, false, true, false, 513, 4, 2, 0, 1),
            },
            BranchEntry {
                from: 0xffff_ffff_8100_0000,
                to: 0x3000,
                flags: BranchFlags::new(false, true, false, true, 0xffff, 15, 3, 9, 7),
            },
        ]
    }

    #[test]
    fn every_layout_round_trips() {
        for kind in [
            0,
            bst::HW_INDEX,
            bst::COUNTERS,
            bst::HW_INDEX | bst::COUNTERS,
        ] {
            let mut b = Vec::new();
            encode(&mut b, kind, Some(5), &entries(), &[7, 8]);
            b.extend_from_slice(&[0xee; 8]); // the next field
            let (s, used) = parse(&b, kind, 0).unwrap();
            assert_eq!(used, b.len() - 8, "{kind:#x}");
            assert_eq!(s.iter().collect::<Vec<_>>(), entries());
            assert_eq!(s.hw_idx, (kind & bst::HW_INDEX != 0).then_some(5));
            let want: Vec<u64> = if kind & bst::COUNTERS != 0 {
                vec![7, 8]
            } else {
                vec![]
            };
            assert_eq!(s.counters().collect::<Vec<_>>(), want);
        }
    }

    #[test]
    fn fields_decode_at_their_bits() {
        let f = entries()[1].flags;
        assert!(!f.mispred() && f.predicted() && !f.in_tx() && f.abort());
        assert_eq!(
            (f.cycles(), f.kind(), f.spec(), f.new_type(), f.privilege()),
            (0xffff, 15, 3, 9, 7)
        );
        let f = entries()[0].flags;
        assert!(f.mispred() && !f.predicted() && f.in_tx() && !f.abort());
        assert_eq!(
            (f.cycles(), f.kind(), f.spec(), f.new_type(), f.privilege()),
            (513, 4, 2, 0, 1)
        );
        // Bits 33.. are reserved: set, they change nothing decoded.
        let g = BranchFlags(f.0 | !0 << 33);
        assert_eq!((g.cycles(), g.kind(), g.privilege()), (513, 4, 1));
    }

    #[test]
    fn counts_past_the_record_are_errors() {
        let mut b = Vec::new();
        encode(&mut b, 0, None, &entries(), &[]);
        // One entry's bytes short.
        let cut = &b[..b.len() - 24];
        let e = parse(cut, 0, 0x40).unwrap_err().to_string();
        assert!(e.contains("2 entries") && e.contains("at byte 0x40"), "{e}");
        // A huge count never overflows.
        let mut huge = u64::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(&[0; 48]);
        assert!(parse(&huge, bst::HW_INDEX, 0).is_err());
        // A file without hw_idx read as if it had it: the last entry no
        // longer fits, and the message says why it might not.
        let e = parse(&b, bst::HW_INDEX, 0).unwrap_err().to_string();
        assert!(e.contains("HW_INDEX"), "{e}");
        assert!(parse(&[1, 2, 3], 0, 0).is_err());
        assert!(parse(&0u64.to_le_bytes(), bst::HW_INDEX, 0).is_err());
    }

    #[test]
    fn cpu_pmu_caps_give_the_lbr_depth() {
        let (id, body) = crate::write::cpu_pmu_caps(&[("pmu_name", "skylake"), ("branches", "32")]);
        let caps = cpu_pmu_caps(&body).unwrap();
        assert_eq!(caps[1], ("branches".to_string(), "32".to_string()));
        let mut raw = std::collections::BTreeMap::new();
        raw.insert(id, body.clone());
        assert_eq!(max_branches(&raw), Some(32));
        // Cut short, or without the capability: none.
        raw.insert(id, body[..body.len() - 70].to_vec());
        assert_eq!(max_branches(&raw), None);
        let (_, other) = crate::write::cpu_pmu_caps(&[("pmu_name", "skylake")]);
        raw.insert(id, other);
        assert_eq!(max_branches(&raw), None);
    }
}
