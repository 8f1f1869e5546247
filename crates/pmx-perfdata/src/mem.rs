//! A memory access as a sample describes it: `PERF_SAMPLE_DATA_SRC`'s
//! `union perf_mem_data_src` split into its fields (the kernel's layout,
//! `include/uapi/linux/perf_event.h`), with the bits of each field named.
//! What the fields mean in words (perf's strings) is `pmx-profile`'s.

/// The fields of a `perf_mem_data_src`, each as the kernel packs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DataSrc {
    /// `mem_op` (5 bits): [`op`].
    pub op: u8,
    /// `mem_lvl` (14 bits): [`lvl`], the older level namespace.
    pub lvl: u16,
    /// `mem_snoop` (5 bits): [`snoop`].
    pub snoop: u8,
    /// `mem_lock` (2 bits): [`lock`].
    pub lock: u8,
    /// `mem_dtlb` (7 bits): [`tlb`].
    pub dtlb: u8,
    /// `mem_lvl_num` (4 bits): [`lvlnum`].
    pub lvl_num: u8,
    /// `mem_remote` (1 bit): the level is remote.
    pub remote: u8,
    /// `mem_snoopx` (2 bits): [`snoopx`].
    pub snoopx: u8,
    /// `mem_blk` (3 bits): [`blk`].
    pub blk: u8,
    /// `mem_hops` (3 bits): 0 none, 1 another core of the node, 2 another
    /// node of the socket, 3 another socket of the board, 4 another board.
    pub hops: u8,
}

impl DataSrc {
    /// Split a raw `data_src` value.
    pub fn from_raw(v: u64) -> DataSrc {
        let f = |shift: u32, bits: u32| ((v >> shift) & ((1u64 << bits) - 1)) as u16;
        DataSrc {
            op: f(0, 5) as u8,
            lvl: f(5, 14),
            snoop: f(19, 5) as u8,
            lock: f(24, 2) as u8,
            dtlb: f(26, 7) as u8,
            lvl_num: f(33, 4) as u8,
            remote: f(37, 1) as u8,
            snoopx: f(38, 2) as u8,
            blk: f(40, 3) as u8,
            hops: f(43, 3) as u8,
        }
    }

    /// The raw value again (reserved bits 0).
    pub fn to_raw(self) -> u64 {
        u64::from(self.op)
            | u64::from(self.lvl) << 5
            | u64::from(self.snoop) << 19
            | u64::from(self.lock) << 24
            | u64::from(self.dtlb) << 26
            | u64::from(self.lvl_num) << 33
            | u64::from(self.remote) << 37
            | u64::from(self.snoopx) << 38
            | u64::from(self.blk) << 40
            | u64::from(self.hops) << 43
    }
}

/// `mem_op` bits.
pub mod op {
    /// Not available.
    pub const NA: u8 = 0x01;
    /// A load.
    pub const LOAD: u8 = 0x02;
    /// A store.
    pub const STORE: u8 = 0x04;
    /// A prefetch.
    pub const PFETCH: u8 = 0x08;
    /// Code (execution).
    pub const EXEC: u8 = 0x10;
}

/// `mem_lvl` bits (bit i is perf's i-th level name).
pub mod lvl {
    /// Not available.
    pub const NA: u16 = 0x01;
    /// Hit in the level.
    pub const HIT: u16 = 0x02;
    /// Missed the level.
    pub const MISS: u16 = 0x04;
    /// L1.
    pub const L1: u16 = 0x08;
    /// Line fill buffer (miss address buffer on AMD).
    pub const LFB: u16 = 0x10;
    /// L2.
    pub const L2: u16 = 0x20;
    /// L3.
    pub const L3: u16 = 0x40;
    /// Local DRAM.
    pub const LOC_RAM: u16 = 0x80;
    /// Remote DRAM, one hop.
    pub const REM_RAM1: u16 = 0x100;
    /// Remote DRAM, two hops.
    pub const REM_RAM2: u16 = 0x200;
    /// Remote cache, one hop.
    pub const REM_CCE1: u16 = 0x400;
    /// Remote cache, two hops.
    pub const REM_CCE2: u16 = 0x800;
    /// I/O memory.
    pub const IO: u16 = 0x1000;
    /// Uncached memory.
    pub const UNC: u16 = 0x2000;
}

/// `mem_lvl_num` values.
pub mod lvlnum {
    /// CXL memory (Linux 6.2+).
    pub const CXL: u8 = 0x09;
    /// I/O (Linux 6.2+).
    pub const IO: u8 = 0x0a;
    /// Any cache.
    pub const ANY_CACHE: u8 = 0x0b;
    /// Line fill buffer / miss address buffer.
    pub const LFB: u8 = 0x0c;
    /// DRAM.
    pub const RAM: u8 = 0x0d;
    /// Persistent memory.
    pub const PMEM: u8 = 0x0e;
    /// Not available.
    pub const NA: u8 = 0x0f;
}

/// `mem_snoop` bits.
pub mod snoop {
    /// Not available.
    pub const NA: u8 = 0x01;
    /// No snoop.
    pub const NONE: u8 = 0x02;
    /// Snoop hit.
    pub const HIT: u8 = 0x04;
    /// Snoop miss.
    pub const MISS: u8 = 0x08;
    /// Snoop hit a modified line.
    pub const HITM: u8 = 0x10;
}

/// `mem_snoopx` bits.
pub mod snoopx {
    /// Forwarded.
    pub const FWD: u8 = 0x01;
    /// Hit in a peer cache.
    pub const PEER: u8 = 0x02;
}

/// `mem_lock` bits.
pub mod lock {
    /// Not available.
    pub const NA: u8 = 0x01;
    /// A locked transaction.
    pub const LOCKED: u8 = 0x02;
}

/// `mem_dtlb` bits.
pub mod tlb {
    /// Not available.
    pub const NA: u8 = 0x01;
    /// Hit.
    pub const HIT: u8 = 0x02;
    /// Miss.
    pub const MISS: u8 = 0x04;
    /// L1 TLB.
    pub const L1: u8 = 0x08;
    /// L2 TLB.
    pub const L2: u8 = 0x10;
    /// The hardware page walker.
    pub const WK: u8 = 0x20;
    /// The OS fault handler.
    pub const OS: u8 = 0x40;
}

/// `mem_blk` bits.
pub mod blk {
    /// Not available.
    pub const NA: u8 = 0x01;
    /// Blocked on data (a store forward).
    pub const DATA: u8 = 0x02;
    /// Blocked on an address conflict.
    pub const ADDR: u8 = 0x04;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skylake_load_splits_into_its_fields_and_back() {
        // A PEBS load of perf_data_converter's weight_struct recording:
        // L3 hit, no snoop, L2 TLB miss, lvl_num L3, no lock bit, blk N/A.
        let d = DataSrc::from_raw(0x10650100842);
        assert_eq!(d.op, op::LOAD);
        assert_eq!(d.lvl, lvl::HIT | lvl::L3);
        assert_eq!(d.snoop, snoop::NONE);
        assert_eq!(d.lock, 0);
        assert_eq!(d.dtlb, tlb::MISS | tlb::L2);
        assert_eq!(d.lvl_num, 3);
        assert_eq!(d.blk, blk::NA);
        assert_eq!(d.to_raw(), 0x10650100842);
        let every = DataSrc {
            op: 0x1f,
            lvl: 0x3fff,
            snoop: 0x1f,
            lock: 3,
            dtlb: 0x7f,
            lvl_num: 0xf,
            remote: 1,
            snoopx: 3,
            blk: 7,
            hops: 7,
        };
        assert_eq!(DataSrc::from_raw(every.to_raw()), every);
        assert_eq!(every.to_raw(), (1 << 46) - 1);
    }
}
