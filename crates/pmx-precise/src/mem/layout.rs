//! What perf's report flags make of a memory report: the keys, the
//! `Sort order` line and the number columns (`-s`, `-F`, `-n`).

use super::keys::{self, MemKey, DEFAULT_SORT};
use super::table::MemColumns;

/// The keys, the sort order's text and the columns of a memory report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The row keys (the columns after the numbers).
    pub keys: Vec<MemKey>,
    /// The `Sort order` line's text.
    pub sort_order: String,
    /// Overhead and Samples.
    pub columns: MemColumns,
}

/// Whether report flags ask for a memory report: `--mem-mode`, or a
/// memory key in `-s` or `-F`.
pub fn wanted(mem_mode: bool, sort: Option<&str>, fields: Option<&str>) -> bool {
    mem_mode
        || [sort, fields]
            .iter()
            .flatten()
            .any(|s| s.split(',').any(|k| keys::is_memory_key(k.trim())))
}

/// The layout of `-s SORT`, `-F FIELDS`, `-n`: the keys are `-F`'s when
/// given (its `overhead` and `sample` are columns), else the sort's (perf's
/// default memory keys without `-s`). perf 6.1 ends a sort order naming
/// `symbol…` (not `sym`) with an IPC column, dashes without branch stacks.
pub fn layout(
    sort: Option<&str>,
    fields: Option<&str>,
    nr_samples: bool,
) -> Result<Layout, String> {
    let mut sort_order = sort.unwrap_or(DEFAULT_SORT).to_string();
    if sort.is_some() && sort_order.contains("symbol") && !sort_order.contains("ipc") {
        sort_order.push_str(",ipc_null");
    }
    let list = fields.map_or_else(|| sort_order.clone(), str::to_string);
    let words: Vec<&str> = list.split(',').map(str::trim).collect();
    let keys = (words.iter().copied()).filter(|k| !matches!(*k, "overhead" | "sample"));
    let keys = keys::parse(&keys.collect::<Vec<_>>().join(","))?;
    let has = |c: &str| fields.is_none() || words.contains(&c);
    Ok(Layout {
        keys,
        sort_order,
        columns: MemColumns {
            overhead: has("overhead"),
            samples: nr_samples || (fields.is_some() && has("sample")),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_make_perfs_layouts() {
        let l = layout(None, None, true).unwrap();
        assert_eq!((l.keys.len(), l.sort_order.as_str()), (12, DEFAULT_SORT));
        assert!(l.columns.overhead && l.columns.samples);
        let l = layout(Some("symbol_daddr"), None, false).unwrap();
        assert_eq!(l.sort_order, "symbol_daddr,ipc_null");
        assert_eq!(l.keys, [MemKey::SymbolDaddr, MemKey::IpcNull]);
        let l = layout(None, Some("mem,sym"), false).unwrap();
        assert!(!l.columns.overhead && l.sort_order == DEFAULT_SORT);
        assert!(wanted(false, Some("comm,snoop"), None) && !wanted(false, Some("sym"), None));
    }
}
