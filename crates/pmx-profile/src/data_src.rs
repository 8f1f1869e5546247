//! A sample's `data_src` in words, as perf 6.1 writes it (its
//! `perf_mem__*_scnprintf` family): the operation, the level (with the
//! `mem_lvl_num` level, remote and hops), the snoop (with `snoopx`), the
//! TLB, the lock and the block, and perf script's `|OP …|LVL …|…` line.

use pmx_perfdata::mem::{blk, lock, lvl, op, snoop, tlb, DataSrc};

const LVL_NAMES: [&str; 14] = [
    "N/A",
    "HIT",
    "MISS",
    "L1",
    "LFB/MAB",
    "L2",
    "L3",
    "Local RAM",
    "Remote RAM (1 hop)",
    "Remote RAM (2 hops)",
    "Remote Cache (1 hop)",
    "Remote Cache (2 hops)",
    "I/O",
    "Uncached",
];

const HOPS: [&str; 5] = [
    "N/A",
    "core, same node",
    "node, same socket",
    "socket, same board",
    "board",
];

const TLB_NAMES: [&str; 7] = ["N/A", "HIT", "MISS", "L1", "L2", "Walker", "Fault"];
const SNOOP_NAMES: [&str; 5] = ["N/A", "None", "Hit", "Miss", "HitM"];
const SNOOPX_NAMES: [&str; 2] = ["Fwd", "Peer"];

/// The names of the bits set in `m` (bit i → `names[i]`), joined by " or ".
fn bits(out: &mut String, m: u64, names: &[&str]) {
    for (i, name) in names.iter().enumerate() {
        if m & (1 << i) != 0 {
            if !out.is_empty() {
                out.push_str(" or ");
            }
            out.push_str(name);
        }
    }
}

/// The operation: `LOAD`, `STORE`, `PFETCH`, `EXEC`, `N/A` or `No`.
pub fn op_text(d: &DataSrc) -> &'static str {
    let m = d.op;
    if m & op::NA != 0 {
        "N/A"
    } else if m & op::LOAD != 0 {
        "LOAD"
    } else if m & op::STORE != 0 {
        "STORE"
    } else if m & op::PFETCH != 0 {
        "PFETCH"
    } else if m & op::EXEC != 0 {
        "EXEC"
    } else {
        "No"
    }
}

/// The level: `Remote ` when remote, the hops (which replace the
/// `mem_lvl` names) or the `mem_lvl` names, then the `mem_lvl_num`
/// level, then ` hit`/` miss` (`L3 or L3 hit`, `Remote core, same node L2`).
pub fn lvl_text(d: &DataSrc) -> String {
    let mut out = String::new();
    if d.remote != 0 {
        out.push_str("Remote ");
    }
    let mut printed = false;
    if d.hops != 0 {
        // perf indexes its table past its end for hops 5-7 (values no
        // kernel writes); pmx says N/A there.
        out.push_str(HOPS.get(d.hops as usize).copied().unwrap_or("N/A"));
        out.push(' ');
    } else {
        let m = d.lvl & !(lvl::HIT | lvl::MISS);
        for (i, name) in LVL_NAMES.iter().enumerate() {
            if m & (1 << i) != 0 {
                if printed {
                    out.push_str(" or ");
                }
                printed = true;
                out.push_str(name);
            }
        }
    }
    if d.lvl_num != 0 {
        if printed {
            out.push_str(" or ");
        }
        match d.lvl_num {
            0x09 => out.push_str("CXL"),
            0x0a => out.push_str("I/O"),
            0x0b => out.push_str("Any cache"),
            0x0c => out.push_str("LFB/MAB"),
            0x0d => out.push_str("RAM"),
            0x0e => out.push_str("PMEM"),
            0x0f => out.push_str("N/A"),
            n => {
                out.push('L');
                out.push_str(&n.to_string());
            }
        }
    }
    if out.is_empty() {
        out.push_str("N/A");
    }
    if d.lvl & lvl::HIT != 0 {
        out.push_str(" hit");
    }
    if d.lvl & lvl::MISS != 0 {
        out.push_str(" miss");
    }
    out
}

/// The snoop: the `mem_snoop` names, then the `mem_snoopx` ones.
pub fn snoop_text(d: &DataSrc) -> String {
    let mut out = String::new();
    bits(&mut out, u64::from(d.snoop), &SNOOP_NAMES);
    bits(&mut out, u64::from(d.snoopx), &SNOOPX_NAMES);
    if out.is_empty() {
        out.push_str("N/A");
    }
    out
}

/// The TLB: its names, then ` hit`/` miss` (`L1 or L2 hit`).
pub fn tlb_text(d: &DataSrc) -> String {
    let mut out = String::new();
    let m = d.dtlb & !(tlb::HIT | tlb::MISS);
    bits(&mut out, u64::from(m), &TLB_NAMES);
    if out.is_empty() {
        out.push_str("N/A");
    }
    if d.dtlb & tlb::HIT != 0 {
        out.push_str(" hit");
    }
    if d.dtlb & tlb::MISS != 0 {
        out.push_str(" miss");
    }
    out
}

/// The lock: `N/A`, `Yes` or `No`.
pub fn lock_text(d: &DataSrc) -> &'static str {
    if d.lock & lock::NA != 0 {
        "N/A"
    } else if d.lock & lock::LOCKED != 0 {
        "Yes"
    } else {
        "No"
    }
}

/// The block, with perf's leading space: ` N/A`, ` Data`, ` Addr`, ` Data Addr`.
pub fn blk_text(d: &DataSrc) -> String {
    if d.blk == 0 || d.blk & blk::NA != 0 {
        return " N/A".into();
    }
    let mut out = String::new();
    if d.blk & blk::DATA != 0 {
        out.push_str(" Data");
    }
    if d.blk & blk::ADDR != 0 {
        out.push_str(" Addr");
    }
    out
}

/// Whether a snoop hit a modified line (HITM) — what c2c counts.
pub fn is_hitm(d: &DataSrc) -> bool {
    d.snoop & snoop::HITM != 0
}

/// perf script's `data_src` field before its padding: the raw value in
/// `%16x`, a space and `|OP …|LVL …|SNP …|TLB …|LCK …|BLK …`, cut at 99
/// bytes as perf's 100-byte buffer cuts it.
pub fn script_field(raw: u64) -> String {
    let d = DataSrc::from_raw(raw);
    let mut s = format!(
        "{raw:16x} |OP {}|LVL {}|SNP {}|TLB {}|LCK {}|BLK {}",
        op_text(&d),
        lvl_text(&d),
        snoop_text(&d),
        tlb_text(&d),
        lock_text(&d),
        blk_text(&d)
    );
    s.truncate(99);
    s
}

/// A page size as perf names it: divided by 1024 while the quotient is
/// above 1 (so 1024 stays `1024B` and 1 GiB is `1024M`), `N/A` for 0.
pub fn page_size_name(n: u64) -> String {
    if n == 0 {
        return "N/A".into();
    }
    let (mut n, mut unit) = (n, 0);
    while n / 1024 > 1 && unit < 3 {
        n /= 1024;
        unit += 1;
    }
    format!("{n}{}", ['B', 'K', 'M', 'G'][unit])
}

/// An address as perf's `%#.*llx` with 16 digits writes it (`0x` and
/// 16 digits; C writes no `0x` for zero).
pub fn address(a: u64) -> String {
    if a == 0 {
        "0000000000000000".into()
    } else {
        format!("{a:#018x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values and perf 6.1's words for them (`perf script -F data_src`
    /// on perf_data_converter's weight_struct recording with its samples'
    /// `data_src` rewritten).
    #[test]
    fn the_words_are_perfs() {
        let cases: &[(u64, &str)] = &[
            (
                0x11868100242,
                "|OP LOAD|LVL LFB/MAB or LFB/MAB hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A",
            ),
            (
                0x10650100842,
                "|OP LOAD|LVL L3 or L3 hit|SNP None|TLB L2 miss|LCK No|BLK  N/A",
            ),
            (
                0x1026a100142,
                "|OP LOAD|LVL L1 or L1 hit|SNP None|TLB L1 or L2 hit|LCK Yes|BLK  N/A",
            ),
            (0, "|OP No|LVL N/A|SNP N/A|TLB N/A|LCK No|BLK  N/A"),
            (
                0x180000000840,
                "|OP No|LVL socket, same board  hit|SNP N/A|TLB N/A|LCK No|BLK  N/A",
            ),
            (
                0x3a00000000,
                "|OP No|LVL Remote RAM|SNP N/A|TLB N/A|LCK No|BLK  N/A",
            ),
            (0xa00000000, "|OP No|LVL L5|SNP N/A|TLB N/A|LCK No|BLK  N/A"),
            (
                0x82400000000,
                "|OP No|LVL Remote core, same node L2|SNP N/A|TLB N/A|LCK No|BLK  N/A",
            ),
            (
                0xc000800000,
                "|OP No|LVL N/A|SNP HitM or Fwd or Peer|TLB N/A|LCK No|BLK  N/A",
            ),
            (0x3000000, "|OP No|LVL N/A|SNP N/A|TLB N/A|LCK N/A|BLK  N/A"),
            (
                0x184000000,
                "|OP No|LVL N/A|SNP N/A|TLB N/A or Walker or Fault|LCK No|BLK  N/A",
            ),
            (
                0x60000000000,
                "|OP No|LVL N/A|SNP N/A|TLB N/A|LCK No|BLK  Data Addr",
            ),
            (
                0x103a00002000,
                "|OP No|LVL Remote node, same socket RAM|SNP N/A|TLB N/A|LCK No|BLK  N/A",
            ),
        ];
        for &(v, words) in cases {
            assert_eq!(script_field(v), format!("{v:16x} {words}"), "{v:#x}");
        }
        // Long ones are cut at 99 bytes, as perf's buffer cuts them.
        assert_eq!(
            script_field(0x7ff80),
            "           7ff80 |OP No|LVL L1 or LFB/MAB or L2 or L3 or Local RAM or Remote RAM (1 hop) or Remote "
        );
    }

    #[test]
    fn page_sizes_are_named_as_perf_names_them() {
        let names: Vec<String> = [0, 1024, 2048, 4096, 2 << 20, 1 << 30]
            .iter()
            .map(|&n| page_size_name(n))
            .collect();
        assert_eq!(names, ["N/A", "1024B", "2K", "4K", "2M", "1024M"]);
    }
}
