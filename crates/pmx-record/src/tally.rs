//! The counts kept while records stream from the rings to the file:
//! samples per event (by sample id), LOST/LOST_SAMPLES, THROTTLE/UNTHROTTLE,
//! the time span of the samples and every mapped file (for build ids).

use pmx_perf::mmap::record as rt;
use pmx_perf::mmap::RecordHeader;
use pmx_perf::{record_misc, sample_type};
use std::collections::{BTreeMap, HashMap};

/// Counts kept while the records stream past.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) samples: Vec<u64>,
    pub(super) lost_events: u64,
    pub(super) lost_records: u64,
    pub(super) lost_samples: u64,
    pub(super) throttled: u64,
    pub(super) unthrottled: u64,
    pub(super) first_time: Option<u64>,
    pub(super) last_time: Option<u64>,
    /// Mapped files and their cpumode (kernel or user), for build ids.
    pub(super) mapped: BTreeMap<String, u16>,
    /// User files as their first MMAP2 record saw them mapped, for build
    /// ids when the path leads elsewhere at the end (see [`Mapped`]).
    pub(super) places: HashMap<String, Mapped>,
}

/// Where a file was mapped (an MMAP2 record): its process, an address in
/// the mapping, its inode; and, for a file already deleted then (`PATH
/// (deleted)`), its build id read at once through
/// `/proc/PID/map_files/`, while the process surely lives.
pub(super) struct Mapped {
    pub(super) pid: u32,
    pub(super) addr: u64,
    pub(super) ino: u64,
    pub(super) build_id: Option<Vec<u8>>,
}

pub(super) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

pub(super) fn c_string_at(b: &[u8], at: usize) -> Option<String> {
    let tail = b.get(at..)?;
    let end = tail.iter().position(|&c| c == 0).unwrap_or(tail.len());
    Some(String::from_utf8_lossy(&tail[..end]).into_owned())
}

impl Tally {
    /// Account one record; `st` is the (shared) sample_type, `by_id` maps
    /// ids to events when there are several.
    pub(super) fn see(&mut self, rec: &[u8], st: u64, by_id: &HashMap<u64, usize>) {
        let Some(h) = RecordHeader::parse(rec) else {
            return;
        };
        match h.type_ {
            rt::SAMPLE => {
                let mut at = 8;
                let mut id = None;
                if st & sample_type::IDENTIFIER != 0 {
                    id = u64_at(rec, at);
                    at += 8;
                }
                for bit in [sample_type::IP, sample_type::TID] {
                    if st & bit != 0 {
                        at += 8;
                    }
                }
                if st & sample_type::TIME != 0 {
                    if let Some(t) = u64_at(rec, at) {
                        self.first_time = Some(self.first_time.map_or(t, |f| f.min(t)));
                        self.last_time = Some(self.last_time.map_or(t, |l| l.max(t)));
                    }
                }
                let event = match id {
                    Some(id) => by_id.get(&id).copied(),
                    None => Some(0),
                };
                if let Some(slot) = event.and_then(|e| self.samples.get_mut(e)) {
                    *slot += 1;
                }
            }
            rt::LOST => {
                self.lost_events += 1;
                self.lost_records += u64_at(rec, 16).unwrap_or(0);
            }
            rt::LOST_SAMPLES => self.lost_samples += u64_at(rec, 8).unwrap_or(0),
            rt::THROTTLE => self.throttled += 1,
            rt::UNTHROTTLE => self.unthrottled += 1,
            rt::MMAP | rt::MMAP2 => {
                let at = if h.type_ == rt::MMAP { 40 } else { 72 };
                if let Some(name) = c_string_at(rec, at) {
                    let mode = h.misc & record_misc::CPUMODE_MASK;
                    let inode = h.misc & record_misc::MMAP_BUILD_ID == 0;
                    if h.type_ == rt::MMAP2 && inode && mode != record_misc::KERNEL {
                        self.place(rec, &name);
                    }
                    self.mapped.entry(name).or_insert(mode);
                }
            }
            _ => {}
        }
    }
}

impl Tally {
    /// Remember where an MMAP2 record (with an inode) mapped file `name`,
    /// the first time it is seen; a deleted file's build id is read now.
    fn place(&mut self, rec: &[u8], name: &str) {
        if self.places.contains_key(name) || !name.starts_with('/') || name.starts_with("//") {
            return;
        }
        let (Some(ids), Some(addr), Some(ino)) = (u64_at(rec, 8), u64_at(rec, 16), u64_at(rec, 48))
        else {
            return;
        };
        if ino == 0 {
            return; // no file's inode: nothing to compare
        }
        let pid = ids as u32;
        let deleted = name.ends_with(" (deleted)") && !name.starts_with("/memfd:");
        let build_id = if deleted {
            super::buildid::of_mapped_file(pid, addr, ino)
        } else {
            None
        };
        let place = Mapped {
            pid,
            addr,
            ino,
            build_id,
        };
        self.places.insert(name.to_string(), place);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tally_counts_samples_per_event_and_lost() {
        let st = sample_type::IDENTIFIER | sample_type::IP | sample_type::TID | sample_type::TIME;
        let by_id: HashMap<u64, usize> = [(10, 0), (11, 1)].into_iter().collect();
        let mut t = Tally {
            samples: vec![0, 0],
            ..Tally::default()
        };
        let sample = |id: u64, time: u64| {
            let mut v = Vec::new();
            v.extend_from_slice(&rt::SAMPLE.to_ne_bytes());
            v.extend_from_slice(&2u16.to_ne_bytes());
            v.extend_from_slice(&40u16.to_ne_bytes());
            for w in [id, 0x400000, 0, time] {
                v.extend_from_slice(&w.to_ne_bytes());
            }
            v
        };
        t.see(&sample(10, 50), st, &by_id);
        t.see(&sample(11, 20), st, &by_id);
        t.see(&sample(11, 90), st, &by_id);
        t.see(&sample(12, 5), st, &by_id); // unknown id: no event
        let mut lost = Vec::new();
        lost.extend_from_slice(&rt::LOST.to_ne_bytes());
        lost.extend_from_slice(&0u16.to_ne_bytes());
        lost.extend_from_slice(&24u16.to_ne_bytes());
        lost.extend_from_slice(&10u64.to_ne_bytes());
        lost.extend_from_slice(&33u64.to_ne_bytes());
        t.see(&lost, st, &by_id);
        assert_eq!(t.samples, vec![1, 2]);
        assert_eq!((t.first_time, t.last_time), (Some(5), Some(90)));
        assert_eq!((t.lost_events, t.lost_records), (1, 33));
    }
}
