//! The memory fields of a `pmx script` line: `addr`, `data_src`,
//! `weight`, `ins_lat` (printed before the address of the sample, as
//! perf 6.1 does) and `phys_addr`, `data_page_size`, `code_page_size`
//! (after it), in perf script's formats, and their JSON members.

use super::fields::{Field, Fields};
use pmx_perfdata::read::Sample;
use std::fmt::Write as _;

/// A sample's memory fields, kept with it until its round.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct MemFields {
    pub(crate) addr: u64,
    pub(crate) data_src: u64,
    pub(crate) weight: u64,
    pub(crate) ins_lat: u16,
    pub(crate) phys_addr: u64,
    pub(crate) data_page_size: u64,
    pub(crate) code_page_size: u64,
}

impl MemFields {
    pub(crate) fn of(s: &Sample<'_>) -> MemFields {
        MemFields {
            addr: s.addr,
            data_src: s.data_src,
            weight: s.weight,
            ins_lat: s.ins_lat,
            phys_addr: s.phys_addr,
            data_page_size: s.data_page_size,
            code_page_size: s.code_page_size,
        }
    }
}

/// The fields before the sample's address: `%16x` address, the decoded
/// `data_src` left-aligned to the longest seen so far (`width`, perf's
/// running maximum), `%16u` weight, `%16u` instruction latency.
pub(crate) fn text_before_ip(b: &mut Vec<u8>, m: &MemFields, f: Fields, width: &mut usize) {
    let mut s = String::new();
    if f.has(Field::Addr) {
        let _ = write!(s, "{:16x}", m.addr);
    }
    if f.has(Field::DataSrc) {
        let d = crate::data_src::script_field(m.data_src);
        *width = (*width).max(d.len());
        let _ = write!(s, "{d:<w$}", w = *width);
    }
    if f.has(Field::Weight) {
        let _ = write!(s, "{:16}", m.weight);
    }
    if f.has(Field::InsLat) {
        let _ = write!(s, "{:16}", m.ins_lat);
    }
    b.extend_from_slice(s.as_bytes());
}

/// The fields after it: `%16x` physical address, the page sizes (` 4K`).
pub(crate) fn text_after_ip(b: &mut Vec<u8>, m: &MemFields, f: Fields) {
    let mut s = String::new();
    if f.has(Field::PhysAddr) {
        let _ = write!(s, "{:16x}", m.phys_addr);
    }
    if f.has(Field::DataPageSize) {
        let _ = write!(s, " {}", crate::data_src::page_size_name(m.data_page_size));
    }
    if f.has(Field::CodePageSize) {
        let _ = write!(s, " {}", crate::data_src::page_size_name(m.code_page_size));
    }
    b.extend_from_slice(s.as_bytes());
}

/// The JSON members: `"addr":"0x…"`, `"data_src":"0x…"` with its words
/// in `"mem"`, `"weight"`, `"ins_lat"`, `"phys_addr"`, page sizes in bytes.
pub(crate) fn json(b: &mut Vec<u8>, m: &MemFields, f: Fields) {
    let mut s = String::new();
    if f.has(Field::Addr) {
        let _ = write!(s, ",\"addr\":\"{:#x}\"", m.addr);
    }
    if f.has(Field::DataSrc) {
        let d = pmx_perfdata::mem::DataSrc::from_raw(m.data_src);
        use crate::data_src as w;
        let _ = write!(
            s,
            ",\"data_src\":\"{:#x}\",\"mem\":{{\"op\":\"{}\",\"lvl\":\"{}\",\"snoop\":\"{}\",\"tlb\":\"{}\",\"lock\":\"{}\",\"blk\":\"{}\"}}",
            m.data_src,
            w::op_text(&d),
            w::lvl_text(&d),
            w::snoop_text(&d),
            w::tlb_text(&d),
            w::lock_text(&d),
            w::blk_text(&d).trim_start()
        );
    }
    if f.has(Field::Weight) {
        let _ = write!(s, ",\"weight\":{}", m.weight);
    }
    if f.has(Field::InsLat) {
        let _ = write!(s, ",\"ins_lat\":{}", m.ins_lat);
    }
    if f.has(Field::PhysAddr) {
        let _ = write!(s, ",\"phys_addr\":\"{:#x}\"", m.phys_addr);
    }
    if f.has(Field::DataPageSize) {
        let _ = write!(s, ",\"data_page_size\":{}", m.data_page_size);
    }
    if f.has(Field::CodePageSize) {
        let _ = write!(s, ",\"code_page_size\":{}", m.code_page_size);
    }
    b.extend_from_slice(s.as_bytes());
}
