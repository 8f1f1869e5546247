//! The keys of a branch table (perf's branch `--sort` keys): their names,
//! headings, cells, what makes two branches one row, and perf's order
//! of rows of equal share.

use super::{BranchRow, End};
use std::sync::Arc;

/// A key branch rows are grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BranchKey {
    /// The thread's command (`comm`).
    Comm,
    /// The source's binary (`dso_from`).
    DsoFrom,
    /// The target's binary (`dso_to`).
    DsoTo,
    /// The source's function, or its address without one (`symbol_from`).
    SymbolFrom,
    /// The target's function (`symbol_to`).
    SymbolTo,
    /// The source address (`addr_from`): function and offset.
    AddrFrom,
    /// The target address (`addr_to`).
    AddrTo,
    /// Mispredicted or not (`mispredict`).
    Mispredict,
    /// Cycles since the previous branch (`cycles`).
    Cycles,
    /// A transaction abort (`abort`).
    Abort,
    /// In a transaction (`in_tx`).
    InTx,
    /// The branch type (`type`; pmx's: perf 6.1 has no such key).
    Type,
}

/// perf report's default keys with `--branch-stack`.
pub const DEFAULT_KEYS: &str = "comm,dso_from,symbol_from,symbol_to,cycles";

const NAMES: [(BranchKey, &str, &str); 12] = [
    (BranchKey::Comm, "comm", "Command"),
    (BranchKey::DsoFrom, "dso_from", "Source Shared Object"),
    (BranchKey::DsoTo, "dso_to", "Target Shared Object"),
    (BranchKey::SymbolFrom, "symbol_from", "Source Symbol"),
    (BranchKey::SymbolTo, "symbol_to", "Target Symbol"),
    (BranchKey::AddrFrom, "addr_from", "Source Address"),
    (BranchKey::AddrTo, "addr_to", "Target Address"),
    (BranchKey::Mispredict, "mispredict", "Branch Mispredicted"),
    (BranchKey::Cycles, "cycles", "Basic Block Cycles"),
    (BranchKey::Abort, "abort", "Transaction abort"),
    (BranchKey::InTx, "in_tx", "Branch in transaction"),
    (BranchKey::Type, "type", "Branch Type"),
];

/// The names of the branch types (`type`), pmx-perfdata's one table
/// (perf 6.1's `branch_type_name`; 0 is `N/A` here).
pub use pmx_perfdata::branch::branch_type::NAMES as TYPE_NAMES;

/// Parse perf's comma-separated branch keys (empty: [`DEFAULT_KEYS`]).
pub fn parse(list: &str) -> Result<Vec<BranchKey>, String> {
    let list = if list.trim().is_empty() {
        DEFAULT_KEYS
    } else {
        list
    };
    let mut keys = Vec::new();
    for w in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let w = match w {
            "sym_from" => "symbol_from",
            "sym_to" => "symbol_to",
            w => w,
        };
        let Some(&(k, _, _)) = NAMES.iter().find(|(_, n, _)| *n == w) else {
            let known: Vec<&str> = NAMES.iter().map(|(_, n, _)| *n).collect();
            return Err(format!(
                "{w}: not a key of branch reports (known: {})",
                known.join(", ")
            ));
        };
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    Ok(keys)
}

impl BranchKey {
    /// perf's name of the key.
    pub fn name(self) -> &'static str {
        NAMES.iter().find(|n| n.0 == self).map_or("", |n| n.1)
    }

    /// perf's heading of its column.
    pub fn heading(self) -> &'static str {
        NAMES.iter().find(|n| n.0 == self).map_or("", |n| n.2)
    }

    /// The row's cell (not padded); `ends`: those its indices name.
    pub fn cell(self, ends: &[End], r: &BranchRow) -> String {
        let mut s = String::new();
        self.cell_into(ends, r, &mut s);
        s
    }

    /// The row's cell (not padded) appended to `out`.
    pub(super) fn cell_into(self, ends: &[End], r: &BranchRow, out: &mut String) {
        let (from, to) = (&ends[r.from as usize], &ends[r.to as usize]);
        use std::fmt::Write;
        // An address as perf's `%-#.*llx` prints it (no `0x` for zero).
        // (`{a:#018x}` written by hand: a table may have millions.)
        let hex = |out: &mut String, a: u64| match a {
            0 => out.push_str("0000000000000000"),
            a => {
                let mut b = *b"0x0000000000000000";
                for (i, d) in b[2..].iter_mut().rev().enumerate() {
                    *d = b"0123456789abcdef"[(a >> (4 * i)) as usize & 15];
                }
                out.push_str(std::str::from_utf8(&b).unwrap_or_default());
            }
        };
        let mark = |out: &mut String, level: char| {
            out.push('[');
            out.push(level);
            out.push_str("] ");
        };
        let sym = |out: &mut String, e: &End| {
            mark(out, e.level);
            match &e.symbol {
                Some(s) => out.push_str(s),
                None => hex(out, e.shown),
            }
        };
        let addr = |out: &mut String, e: &End| {
            mark(out, r.sample_level);
            match &e.symbol {
                Some(s) if e.offset > 0 => {
                    _ = write!(out, "{s}+{:#x}", e.offset);
                }
                Some(s) => out.push_str(s),
                None => hex(out, e.shown),
            }
        };
        fn dso(e: &End) -> &str {
            e.dso.as_deref().unwrap_or("[unknown]")
        }
        let flag = |on: bool, c: &'static str| if on { c } else { "." };
        let text = match self {
            BranchKey::Comm => r.comm.as_deref().unwrap_or_default(),
            BranchKey::DsoFrom => dso(from),
            BranchKey::DsoTo => dso(to),
            BranchKey::SymbolFrom => return sym(out, from),
            BranchKey::SymbolTo => return sym(out, to),
            BranchKey::AddrFrom => return addr(out, from),
            BranchKey::AddrTo => return addr(out, to),
            BranchKey::Mispredict => match (r.predicted, r.mispred) {
                (true, _) => "N",
                (false, true) => "Y",
                _ => "N/A",
            },
            // perf's `%hd`: a count past 32767 shows as negative.
            BranchKey::Cycles if r.cycles == 0 => "-",
            BranchKey::Cycles => {
                _ = write!(out, "{}", r.cycles as i16);
                return;
            }
            BranchKey::Abort => flag(r.abort, "A"),
            BranchKey::InTx => flag(r.in_tx, "T"),
            BranchKey::Type => TYPE_NAMES[r.kind as usize & 15],
        };
        out.push_str(text);
    }

    /// The narrowest column perf gives the row's cell (`hists__calc_col_len`):
    /// a symbol's name and its mark, 22 for an address; a binary's name
    /// only with a symbol, at least 16.
    pub(super) fn width(self, ends: &[End], r: &BranchRow) -> usize {
        let (from, to) = (&ends[r.from as usize], &ends[r.to as usize]);
        // Characters, counted fast for the usual ASCII name.
        let chars = |s: &str| match s.is_ascii() {
            true => s.len(),
            false => s.chars().count(),
        };
        let sym = |e: &End| e.symbol.as_ref().map_or(22, |s| chars(s) + 4);
        let dso = |e: &End| match (&e.symbol, &e.dso) {
            (Some(_), Some(d)) => chars(d).max(16),
            _ => 16,
        };
        match self {
            BranchKey::Comm => r.comm.as_ref().map_or(0, |c| chars(c)),
            BranchKey::DsoFrom => dso(from),
            BranchKey::DsoTo => dso(to),
            BranchKey::SymbolFrom | BranchKey::AddrFrom => sym(from),
            BranchKey::SymbolTo | BranchKey::AddrTo => sym(to),
            BranchKey::Cycles if r.cycles == 0 => 1,
            BranchKey::Cycles => {
                let c = i32::from(r.cycles as i16);
                let digits = c
                    .unsigned_abs()
                    .checked_ilog10()
                    .map_or(1, |d| d as usize + 1);
                digits + usize::from(c < 0)
            }
            _ => self.cell(ends, r).chars().count(),
        }
    }

    /// Whether perf cuts the cell to its column (`%-*.*s`).
    pub(super) fn cut(self) -> bool {
        matches!(
            self,
            BranchKey::Comm | BranchKey::DsoFrom | BranchKey::DsoTo
        )
    }

    /// Whether the cell is a function or an address, which perf does not
    /// pad in the last column.
    pub(super) fn unpadded_last(self) -> bool {
        matches!(
            self,
            BranchKey::SymbolFrom | BranchKey::SymbolTo | BranchKey::AddrFrom | BranchKey::AddrTo
        )
    }

    /// perf 6.1's comparator of the key (`sort__*_cmp`): `> 0` when
    /// `l` is "greater" (shown first among rows of equal share), 0 when
    /// the two are one row. Commands and addresses come ascending
    /// (addresses compared as perf does, by the sign of a wrapping
    /// difference), binaries' names descending with no binary first,
    /// functions by their start alone (two functions of one name are two
    /// rows, as perf's symbols are) with a function before an address,
    /// cycles descending. `mispredict`, `abort` and `in_tx` answer only
    /// 0 or 1 (see [`super::rbtree`]).
    pub(super) fn perf_cmp(self, ends: &[End], l: &BranchRow, r: &BranchRow) -> i64 {
        // perf's `cmp_null`: -1 when only the left is missing.
        let null = |l: bool, r: bool| match (l, r) {
            (true, true) => 0,
            (true, false) => -1,
            _ => 1,
        };
        // The rows' names are shared, one `Arc` per text (see
        // `collect`): the same `Arc` is the same name without comparing
        // texts; the same end (index) is equal.
        let dso = |l: &Option<Arc<str>>, r: &Option<Arc<str>>| match (l, r) {
            (Some(a), Some(b)) if Arc::ptr_eq(a, b) => 0,
            (Some(a), Some(b)) => a.cmp(b) as i64,
            // `cmp_null(dso_r, dso_l)`.
            _ => null(r.is_none(), l.is_none()),
        };
        let addr = |l: u64, r: u64| r.wrapping_sub(l) as i64;
        let sym = |l: u32, r: u32| match (&ends[l as usize], &ends[r as usize]) {
            _ if l == r => 0,
            (l, r) => match (&l.symbol, &r.symbol) {
                (None, None) => addr(l.addr, r.addr),
                (Some(_), Some(_)) => addr(l.start, r.start),
                _ => null(l.symbol.is_none(), r.symbol.is_none()),
            },
        };
        let at = |l: u32, r: u32| {
            let (l, r) = (&ends[l as usize], &ends[r as usize]);
            match dso(&l.dso, &r.dso) {
                0 => addr(l.addr, r.addr),
                c => c,
            }
        };
        let end = |i: u32| &ends[i as usize];
        match self {
            BranchKey::Comm => match (&l.comm, &r.comm) {
                (Some(a), Some(b)) if Arc::ptr_eq(a, b) => 0,
                _ => r.comm.cmp(&l.comm) as i64,
            },
            BranchKey::DsoFrom => dso(&end(l.from).dso, &end(r.from).dso),
            BranchKey::DsoTo => dso(&end(l.to).dso, &end(r.to).dso),
            BranchKey::SymbolFrom => sym(l.from, r.from),
            BranchKey::SymbolTo => sym(l.to, r.to),
            BranchKey::AddrFrom => at(l.from, r.from),
            BranchKey::AddrTo => at(l.to, r.to),
            BranchKey::Mispredict => (l.mispred != r.mispred || l.predicted != r.predicted) as i64,
            BranchKey::Cycles => i64::from(l.cycles) - i64::from(r.cycles),
            BranchKey::Abort => (l.abort != r.abort) as i64,
            BranchKey::InTx => (l.in_tx != r.in_tx) as i64,
            BranchKey::Type => i64::from(r.kind) - i64::from(l.kind),
        }
    }

    /// Whether perf's comparator of the key is no order (0 or 1 only).
    pub(super) fn unordered(self) -> bool {
        matches!(
            self,
            BranchKey::Mispredict | BranchKey::Abort | BranchKey::InTx
        )
    }

    /// Whether perf merges rows again by this key after reading
    /// (`se_collapse`: the command, by its name).
    pub(super) fn collapses(self) -> bool {
        self == BranchKey::Comm
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_with_perfs_names_and_refuse_others() {
        let k = parse("dso_from,dso_to,mispredict,cycles").unwrap();
        assert_eq!(
            k,
            [
                BranchKey::DsoFrom,
                BranchKey::DsoTo,
                BranchKey::Mispredict,
                BranchKey::Cycles
            ]
        );
        assert_eq!(parse("").unwrap().len(), 5);
        assert_eq!(parse("sym_from").unwrap(), [BranchKey::SymbolFrom]);
        let e = parse("dso,symbol_to").unwrap_err();
        assert!(
            e.starts_with("dso: not a key") && e.contains("symbol_from"),
            "{e}"
        );
    }
}
