//! The memory sort keys of `report --mem-mode` (perf 6.1's names,
//! headings, least widths and orders) and the ordinary keys a memory
//! report may mix in (`sym`, `dso`, `comm`).

/// A row key of a memory report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemKey {
    /// `local_weight`: the row's weight per sample.
    LocalWeight,
    /// `weight`: the row's total weight.
    Weight,
    /// `mem`: the memory level (grouped by `mem_lvl`, as perf).
    Mem,
    /// `snoop`.
    Snoop,
    /// `tlb`.
    Tlb,
    /// `locked`.
    Locked,
    /// `blocked`.
    Blocked,
    /// `sym`/`symbol`: the instruction's function.
    Sym,
    /// `dso`: the instruction's binary.
    Dso,
    /// `symbol_daddr`: the data address (its symbol where known).
    SymbolDaddr,
    /// `dso_daddr`: the data address's mapping.
    DsoDaddr,
    /// `dcacheline`: the data address's 64-byte line.
    Dcacheline,
    /// `local_ins_lat`: the instruction latency per sample.
    LocalInsLat,
    /// `ins_lat`: the row's total instruction latency.
    InsLat,
    /// `local_p_stage_cyc` (POWER only: no column on x86, as perf).
    LocalPStageCyc,
    /// `p_stage_cyc` (POWER only).
    PStageCyc,
    /// `data_page_size`.
    DataPageSize,
    /// `phys_daddr`.
    PhysDaddr,
    /// `comm`.
    Comm,
    /// `type`: the data type the access touches (perf 6.8's; DWARF's).
    Type,
    /// `typeoff`: the data type, the offset in it and the field there.
    TypeOff,
    /// `ipc_null`: perf mem's store order ends with it (an IPC column of
    /// dashes: a memory sample has no branch cycles).
    IpcNull,
}

/// perf's names, in [`MemKey`]'s order of declaration.
pub const NAMES: &[(&str, MemKey)] = &[
    ("local_weight", MemKey::LocalWeight),
    ("weight", MemKey::Weight),
    ("mem", MemKey::Mem),
    ("snoop", MemKey::Snoop),
    ("tlb", MemKey::Tlb),
    ("locked", MemKey::Locked),
    ("blocked", MemKey::Blocked),
    ("sym", MemKey::Sym),
    ("symbol", MemKey::Sym),
    ("dso", MemKey::Dso),
    ("symbol_daddr", MemKey::SymbolDaddr),
    ("dso_daddr", MemKey::DsoDaddr),
    ("dcacheline", MemKey::Dcacheline),
    ("local_ins_lat", MemKey::LocalInsLat),
    ("ins_lat", MemKey::InsLat),
    ("local_p_stage_cyc", MemKey::LocalPStageCyc),
    ("p_stage_cyc", MemKey::PStageCyc),
    ("data_page_size", MemKey::DataPageSize),
    ("phys_daddr", MemKey::PhysDaddr),
    ("comm", MemKey::Comm),
    ("type", MemKey::Type),
    ("typeoff", MemKey::TypeOff),
    ("ipc_null", MemKey::IpcNull),
];

/// perf's sort order with `--mem-mode` and no `--sort`.
pub const DEFAULT_SORT: &str = "local_weight,mem,sym,dso,symbol_daddr,dso_daddr,snoop,tlb,locked,blocked,local_ins_lat,local_p_stage_cyc";

/// The keys only a memory report has (a `--sort` naming one makes the
/// report a memory report).
pub fn is_memory_key(name: &str) -> bool {
    NAMES.iter().any(|(n, k)| {
        *n == name
            && !matches!(
                k,
                MemKey::Sym | MemKey::Dso | MemKey::Comm | MemKey::IpcNull
            )
    })
}

/// A comma-separated `--sort` list, or the name that is not a key.
pub fn parse(list: &str) -> Result<Vec<MemKey>, String> {
    let mut out = Vec::new();
    for w in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let k = NAMES.iter().find(|(n, _)| *n == w).map(|&(_, k)| k);
        let k = k.ok_or_else(|| {
            let names: Vec<&str> = NAMES.iter().map(|(n, _)| *n).collect();
            format!("{w}: not a key of a memory report ({})", names.join(", "))
        })?;
        if !out.contains(&k) {
            out.push(k);
        }
    }
    Ok(out)
}

impl MemKey {
    /// The column's heading, as perf's.
    pub fn heading(self) -> &'static str {
        match self {
            MemKey::LocalWeight => "Local Weight",
            MemKey::Weight => "Weight",
            MemKey::Mem => "Memory access",
            MemKey::Snoop => "Snoop",
            MemKey::Tlb => "TLB access",
            MemKey::Locked => "Locked",
            MemKey::Blocked => "Blocked",
            MemKey::Sym => "Symbol",
            MemKey::Dso => "Shared Object",
            MemKey::SymbolDaddr => "Data Symbol",
            MemKey::DsoDaddr => "Data Object",
            MemKey::Dcacheline => "Data Cacheline",
            MemKey::LocalInsLat => "Local INSTR Latency",
            MemKey::InsLat => "INSTR Latency",
            MemKey::LocalPStageCyc => "Local Pipeline Stage Cycle",
            MemKey::PStageCyc => "Pipeline Stage Cycle",
            MemKey::DataPageSize => "Data Page Size",
            MemKey::PhysDaddr => "Data Physical Address",
            MemKey::Comm => "Command",
            MemKey::Type => "Data Type",
            MemKey::TypeOff => "Data Type Offset",
            MemKey::IpcNull => "IPC   [IPC Coverage]",
        }
    }

    /// The least width perf gives the column (before its heading's).
    pub fn least_width(self) -> usize {
        match self {
            MemKey::LocalWeight | MemKey::Weight => 12,
            MemKey::Mem => 24,
            MemKey::Snoop => 12,
            MemKey::Tlb => 22,
            MemKey::Locked => 6,
            MemKey::Blocked => 10,
            MemKey::LocalInsLat | MemKey::InsLat => 13,
            MemKey::LocalPStageCyc | MemKey::PStageCyc => 13,
            MemKey::DataPageSize | MemKey::PhysDaddr => 22,
            _ => 0,
        }
    }

    /// Whether perf on x86 shows the column (the pipeline-stage keys are
    /// POWER's: perf keeps them in the sort order and draws no column).
    pub fn shown(self) -> bool {
        !matches!(self, MemKey::LocalPStageCyc | MemKey::PStageCyc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse() {
        assert_eq!(parse(DEFAULT_SORT).unwrap().len(), 12);
        assert_eq!(parse("sym,symbol,mem").unwrap(), [MemKey::Sym, MemKey::Mem]);
        assert!(parse("mem,nope").unwrap_err().starts_with("nope:"));
        assert!(is_memory_key("snoop") && !is_memory_key("sym"));
    }
}
