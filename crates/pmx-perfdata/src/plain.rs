//! Plain samples read in place: a sample whose event records only fixed
//! fields and a call chain (`IDENTIFIER`, `IP`, `TID`, `TIME`, `ADDR`,
//! `ID`, `STREAM_ID`, `CPU`, `PERIOD`, `CALLCHAIN`: what `perf record -g`
//! of a software or hardware event writes) has every field at an offset
//! fixed by its event, so a reader over a mapped file can leave the
//! record where it is and read the few fields a report needs when it
//! needs them ([`Reader::next_in_place`](crate::read::Reader::next_in_place)),
//! with no [`Sample`](crate::read::Sample) built and nothing copied.

use crate::attr::PerfEventAttr;
use crate::format::{le_u32, le_u64, sample_type};

/// The sample_type bits a [`Layout`] covers.
const PLAIN: u64 = sample_type::IDENTIFIER
    | sample_type::IP
    | sample_type::TID
    | sample_type::TIME
    | sample_type::ADDR
    | sample_type::ID
    | sample_type::STREAM_ID
    | sample_type::CPU
    | sample_type::PERIOD
    | sample_type::CALLCHAIN;

/// Where a plain sample's fields lie in its record (offsets from the
/// record's header; `u16::MAX`: not recorded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    ip: u16,
    tid: u16,
    time: u16,
    cpu: u16,
    period: u16,
    /// The call chain's `nr` word.
    pub(crate) chain: u16,
    /// The bytes before the call chain's entries.
    pub(crate) fixed: u16,
    /// The period of a sample without `PERIOD` (the attr's, as
    /// [`parse_sample`](crate::read::parse_sample) gives).
    default_period: u64,
}

const NONE: u16 = u16::MAX;

/// The fields of a plain sample a profile uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plain<'a> {
    /// The header's misc (CPU mode in the low 3 bits).
    pub misc: u16,
    /// Instruction pointer (0 without `IP`).
    pub ip: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Timestamp.
    pub time: u64,
    /// CPU.
    pub cpu: u32,
    /// Period (the attr's without `PERIOD`).
    pub period: u64,
    /// The call chain's entries, raw (u64 little-endian each; markers
    /// included); empty without `CALLCHAIN`.
    pub chain: &'a [u8],
}

impl Layout {
    /// The layout of `attr`'s samples, when its sample_type is plain.
    pub fn of(attr: &PerfEventAttr) -> Option<Layout> {
        let st = attr.sample_type;
        if st & !PLAIN != 0 {
            return None;
        }
        let mut at = 8u16;
        let mut field = |bit: u64| {
            if st & bit == 0 {
                return NONE;
            }
            at += 8;
            at - 8
        };
        field(sample_type::IDENTIFIER);
        let ip = field(sample_type::IP);
        let tid = field(sample_type::TID);
        let time = field(sample_type::TIME);
        field(sample_type::ADDR);
        field(sample_type::ID);
        field(sample_type::STREAM_ID);
        let cpu = field(sample_type::CPU);
        let period = field(sample_type::PERIOD);
        let chain = field(sample_type::CALLCHAIN);
        Some(Layout {
            ip,
            tid,
            time,
            cpu,
            period,
            chain,
            fixed: at,
            default_period: attr.sample_period,
        })
    }

    /// The timestamp of `rec` (0 without `TIME`) when [`Layout::read`]
    /// would read it, else `None`: what a reader checks and keeps of a
    /// record it leaves in place (its fields are read later, once).
    #[inline]
    pub fn time(&self, rec: &[u8]) -> Option<u64> {
        if rec.len() < self.fixed as usize {
            return None;
        }
        if self.chain != NONE {
            let nr = le_u64(rec, self.chain as usize);
            if nr > ((rec.len() - self.fixed as usize) / 8) as u64 {
                return None;
            }
        }
        Some(if self.time == NONE {
            0
        } else {
            le_u64(rec, self.time as usize)
        })
    }

    /// The fields of `rec` (a SAMPLE record of this layout's event,
    /// header included), or `None` when they do not fit the record (a
    /// corrupt one: [`parse_sample`](crate::read::parse_sample) says why).
    #[inline]
    pub fn read<'a>(&self, rec: &'a [u8]) -> Option<Plain<'a>> {
        if rec.len() < self.fixed as usize {
            return None;
        }
        let u64_at = |at: u16| {
            if at == NONE {
                0
            } else {
                le_u64(rec, at as usize)
            }
        };
        let u32_at = |at: u16, plus: usize| {
            if at == NONE {
                0
            } else {
                le_u32(rec, at as usize + plus)
            }
        };
        let chain = if self.chain == NONE {
            &[][..]
        } else {
            let nr = le_u64(rec, self.chain as usize);
            let room = (rec.len() - self.fixed as usize) / 8;
            if nr > room as u64 {
                return None;
            }
            &rec[self.fixed as usize..self.fixed as usize + nr as usize * 8]
        };
        Some(Plain {
            misc: u16::from_le_bytes([rec[4], rec[5]]),
            ip: u64_at(self.ip),
            pid: u32_at(self.tid, 0),
            tid: u32_at(self.tid, 4),
            time: u64_at(self.time),
            cpu: u32_at(self.cpu, 0),
            period: if self.period == NONE {
                self.default_period
            } else {
                le_u64(rec, self.period as usize)
            },
            chain,
        })
    }
}
