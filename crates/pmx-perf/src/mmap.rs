//! The mmap'd side of a perf event: the metadata page and the ring buffer.
//!
//! `mmap(2)` of an event fd maps one **metadata page** (`struct
//! perf_event_mmap_page`) followed by 2^n **data pages**, the ring buffer
//! into which the kernel writes records (samples, side-band, LOST …).
//!
//! - The metadata page says, for a self-monitoring task, how to read the
//!   counter from user space (`index`, `offset`, `pmc_width`, the time
//!   conversion fields), under a sequence lock that [`Mmap::user_page`]
//!   honours: it returns a consistent [`UserPage`] snapshot.
//! - The ring: the kernel advances `data_head` after writing records; the
//!   reader consumes the bytes between `data_tail` and `data_head` and then
//!   stores the new `data_tail` (the mapping is writable, so the kernel
//!   never overwrites what was not consumed; it counts what it had to drop
//!   and emits a `PERF_RECORD_LOST` record instead). Every record starts
//!   with `struct perf_event_header { u32 type; u16 misc; u16 size; }`,
//!   sizes are multiples of 8, and a record may wrap around the end of the
//!   ring: [`Mmap::read_records`] hands each one out contiguous.
//! - Several events on one CPU can share one ring:
//!   [`Counter::set_output`] redirects an event's records into another
//!   event's ring (both on the same CPU, or both per-task on the same
//!   task).
//!
//! Memory ordering follows the kernel's contract: `data_head` is read with
//! acquire semantics before the records are read, and `data_tail` is
//! stored with release semantics after they have been copied out.
//!
//! [`parse_sample_read`] decodes the `PERF_SAMPLE_READ` part of a sample,
//! which uses the same layout as `read(2)`.

use std::io;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU64, Ordering};

use pmx_model::count::Count;

use crate::Counter;

/// `PERF_EVENT_IOC_SET_OUTPUT`: `_IO('$', 5)`.
const IOC_SET_OUTPUT: u64 = (b'$' as u64) << 8 | 5;

/// Byte offsets of the metadata page's fields (`include/uapi/linux/
/// perf_event.h`). The layout is ABI; the data-ring fields start at 1024.
mod off {
    pub const LOCK: usize = 8;
    pub const INDEX: usize = 12;
    pub const OFFSET: usize = 16;
    pub const TIME_ENABLED: usize = 24;
    pub const TIME_RUNNING: usize = 32;
    pub const CAPABILITIES: usize = 40;
    pub const PMC_WIDTH: usize = 48;
    pub const TIME_SHIFT: usize = 50;
    pub const TIME_MULT: usize = 52;
    pub const TIME_OFFSET: usize = 56;
    pub const TIME_ZERO: usize = 64;
    pub const TIME_CYCLES: usize = 80;
    pub const TIME_MASK: usize = 88;
    pub const DATA_HEAD: usize = 1024;
    pub const DATA_TAIL: usize = 1032;
    pub const DATA_OFFSET: usize = 1040;
    pub const DATA_SIZE: usize = 1048;
}

/// Capability bits of the metadata page's `capabilities` word.
pub mod cap {
    /// `cap_user_rdpmc`: `rdpmc` with `index - 1` reads the counter.
    pub const USER_RDPMC: u64 = 1 << 2;
    /// `cap_user_time`: `time_shift`, `time_mult`, `time_offset` are valid.
    pub const USER_TIME: u64 = 1 << 3;
    /// `cap_user_time_zero`: `time_zero` is valid (TSC → perf clock).
    pub const USER_TIME_ZERO: u64 = 1 << 4;
    /// `cap_user_time_short`: `time_cycles` and `time_mask` are valid (the
    /// clock is narrower than 64 bits).
    pub const USER_TIME_SHORT: u64 = 1 << 5;
}

/// A consistent snapshot of the metadata page's self-monitoring fields.
///
/// For a counter the calling task can read itself: the value is
/// `offset + rdpmc(index - 1)` (the raw counter sign-extended from
/// `pmc_width` bits) when `index != 0` and `cap_user_rdpmc` is set; the
/// times advance from `time_enabled`/`time_running` by the TSC delta
/// converted with `time_mult`/`time_shift`/`time_offset`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UserPage {
    /// `lock`, the sequence number the snapshot was taken at.
    pub lock: u32,
    /// `index`: the hardware counter + 1, or 0 when it cannot be read in
    /// user space now.
    pub index: u32,
    /// `offset`: added to the raw counter.
    pub offset: i64,
    /// `time_enabled` at the last update (ns).
    pub time_enabled: u64,
    /// `time_running` at the last update (ns).
    pub time_running: u64,
    /// The `capabilities` word (see [`cap`]).
    pub capabilities: u64,
    /// `pmc_width`: bits of the hardware counter.
    pub pmc_width: u16,
    /// `time_shift`.
    pub time_shift: u16,
    /// `time_mult`.
    pub time_mult: u32,
    /// `time_offset`.
    pub time_offset: u64,
    /// `time_zero`.
    pub time_zero: u64,
    /// `time_cycles`.
    pub time_cycles: u64,
    /// `time_mask`.
    pub time_mask: u64,
}

impl UserPage {
    /// The fields from a copy of the page's bytes (native-endian); `None`
    /// when `page` is too short.
    pub fn decode(page: &[u8]) -> Option<UserPage> {
        let u16_at = |o: usize| Some(u16::from_ne_bytes(page.get(o..o + 2)?.try_into().ok()?));
        let u32_at = |o: usize| Some(u32::from_ne_bytes(page.get(o..o + 4)?.try_into().ok()?));
        let u64_at = |o: usize| Some(u64::from_ne_bytes(page.get(o..o + 8)?.try_into().ok()?));
        Some(UserPage {
            lock: u32_at(off::LOCK)?,
            index: u32_at(off::INDEX)?,
            offset: u64_at(off::OFFSET)? as i64,
            time_enabled: u64_at(off::TIME_ENABLED)?,
            time_running: u64_at(off::TIME_RUNNING)?,
            capabilities: u64_at(off::CAPABILITIES)?,
            pmc_width: u16_at(off::PMC_WIDTH)?,
            time_shift: u16_at(off::TIME_SHIFT)?,
            time_mult: u32_at(off::TIME_MULT)?,
            time_offset: u64_at(off::TIME_OFFSET)?,
            time_zero: u64_at(off::TIME_ZERO)?,
            time_cycles: u64_at(off::TIME_CYCLES)?,
            time_mask: u64_at(off::TIME_MASK)?,
        })
    }

    /// `cap_user_rdpmc`.
    pub fn cap_user_rdpmc(&self) -> bool {
        self.capabilities & cap::USER_RDPMC != 0
    }
    /// `cap_user_time`.
    pub fn cap_user_time(&self) -> bool {
        self.capabilities & cap::USER_TIME != 0
    }
    /// `cap_user_time_zero`.
    pub fn cap_user_time_zero(&self) -> bool {
        self.capabilities & cap::USER_TIME_ZERO != 0
    }
    /// `cap_user_time_short`.
    pub fn cap_user_time_short(&self) -> bool {
        self.capabilities & cap::USER_TIME_SHORT != 0
    }
}

/// The header every ring record starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// `type`: `PERF_RECORD_*`.
    pub type_: u32,
    /// `misc`: cpumode and record-specific flags.
    pub misc: u16,
    /// `size`: the whole record in bytes, header included.
    pub size: u16,
}

impl RecordHeader {
    /// The header at the start of `record` (`None` if shorter than 8 bytes).
    pub fn parse(record: &[u8]) -> Option<RecordHeader> {
        let b = record.get(..8)?;
        Some(RecordHeader {
            type_: u32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
            misc: u16::from_ne_bytes([b[4], b[5]]),
            size: u16::from_ne_bytes([b[6], b[7]]),
        })
    }
}

/// `PERF_RECORD_*` numbers of the records (those below 64 are the kernel's).
pub use pmx_perfdata::format::record_type as record;

/// One event's mapping: the metadata page and `data_pages` ring pages.
///
/// Unmapped on drop. The mapping stays valid after the event's fd is
/// closed, but the kernel writes nothing more into it.
#[derive(Debug)]
pub struct Mmap {
    base: NonNull<u8>,
    len: usize,
    /// Byte offset of the ring from `base` (0 when there is none).
    data_offset: usize,
    /// Ring size in bytes, a power of two (0 when there is none).
    data_size: usize,
    /// Reassembly buffer for records that wrap around the ring's end.
    scratch: Vec<u8>,
}

// SAFETY: the mapping is plain shared memory owned by this value; moving it
// to another thread moves the only handle through which pmx reads it.
unsafe impl Send for Mmap {}

/// The system's page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

impl Mmap {
    /// Map `counter`'s metadata page and `data_pages` ring pages (0 for the
    /// metadata page alone, else a power of two).
    ///
    /// The kernel refuses (`EINVAL`) a ring for an event opened with
    /// `inherit` on cpu -1, and counts the ring's pages against
    /// `perf_event_mlock_kb` (`EPERM` beyond it without `CAP_IPC_LOCK`).
    pub fn new(counter: &Counter, data_pages: usize) -> io::Result<Mmap> {
        if data_pages != 0 && !data_pages.is_power_of_two() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a perf ring needs a power of two of data pages, not {data_pages}"),
            ));
        }
        let page = page_size();
        let len = (data_pages + 1)
            .checked_mul(page)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "ring too large"))?;
        // SAFETY: a fresh shared mapping of the event fd, which is open for
        // the duration of the call; the kernel checks the length.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                counter.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            let hint = match e.raw_os_error() {
                Some(libc::EPERM) => {
                    "; the ring exceeds kernel.perf_event_mlock_kb (raise it, or run with \
                     CAP_IPC_LOCK, or use fewer pages)"
                }
                Some(libc::EINVAL) if data_pages != 0 => {
                    "; the kernel has no ring for an inherited event on every CPU (open one \
                     per CPU)"
                }
                _ => "",
            };
            return Err(io::Error::new(
                e.kind(),
                format!("cannot map the perf event's ring buffer: {e}{hint}"),
            ));
        }
        let base = NonNull::new(p.cast::<u8>())
            .ok_or_else(|| io::Error::other("mmap returned a null mapping"))?;
        let mut m = Mmap {
            base,
            len,
            data_offset: 0,
            data_size: 0,
            scratch: Vec::new(),
        };
        if data_pages != 0 {
            // Kernels since 4.1 fill data_offset/data_size; older ones leave
            // them 0 and the ring starts right after the metadata page.
            let (o, s) = (m.load_u64(off::DATA_OFFSET), m.load_u64(off::DATA_SIZE));
            let (o, s) = if s == 0 {
                (page, data_pages * page)
            } else {
                (
                    usize::try_from(o).unwrap_or(0),
                    usize::try_from(s).unwrap_or(0),
                )
            };
            if !s.is_power_of_two() || o.checked_add(s).is_none_or(|end| end > len) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("the kernel describes a ring at {o:#x}+{s:#x} outside the {len:#x}-byte mapping"),
                ));
            }
            m.data_offset = o;
            m.data_size = s;
        }
        Ok(m)
    }

    /// Ring size in bytes (0 without a ring).
    pub fn data_size(&self) -> usize {
        self.data_size
    }

    fn atomic_u64(&self, at: usize) -> &AtomicU64 {
        debug_assert!(at + 8 <= self.len && at.is_multiple_of(8));
        // SAFETY: `at` is an 8-aligned offset inside the mapping (page
        // aligned base), which lives as long as `self`; the kernel writes
        // these words concurrently, hence atomics.
        unsafe { &*self.base.as_ptr().add(at).cast::<AtomicU64>() }
    }

    fn load_u64(&self, at: usize) -> u64 {
        self.atomic_u64(at).load(Ordering::Relaxed)
    }

    fn volatile<T: Copy>(&self, at: usize) -> T {
        debug_assert!(at + std::mem::size_of::<T>() <= self.len);
        // SAFETY: inside the mapping and naturally aligned (the offsets are
        // the ABI's); volatile because the kernel changes them under us.
        unsafe { std::ptr::read_volatile(self.base.as_ptr().add(at).cast::<T>()) }
    }

    /// A consistent snapshot of the metadata page (retried while the
    /// kernel is updating it).
    pub fn user_page(&self) -> UserPage {
        self.user_page_with(|_| ()).0
    }

    /// A consistent snapshot of the metadata page and what `inside`
    /// returned, called within the same pass of the sequence lock (a
    /// user-space counter read — `rdpmc`, `rdtsc` — must happen there);
    /// the pass is retried, `inside` included, while the kernel updates
    /// the page.
    pub fn user_page_with<T>(&self, mut inside: impl FnMut(&UserPage) -> T) -> (UserPage, T) {
        loop {
            let lock: u32 = self.volatile(off::LOCK);
            fence(Ordering::Acquire);
            let page = UserPage {
                lock,
                index: self.volatile(off::INDEX),
                offset: self.volatile(off::OFFSET),
                time_enabled: self.volatile(off::TIME_ENABLED),
                time_running: self.volatile(off::TIME_RUNNING),
                capabilities: self.volatile(off::CAPABILITIES),
                pmc_width: self.volatile(off::PMC_WIDTH),
                time_shift: self.volatile(off::TIME_SHIFT),
                time_mult: self.volatile(off::TIME_MULT),
                time_offset: self.volatile(off::TIME_OFFSET),
                time_zero: self.volatile(off::TIME_ZERO),
                time_cycles: self.volatile(off::TIME_CYCLES),
                time_mask: self.volatile(off::TIME_MASK),
            };
            let out = inside(&page);
            fence(Ordering::Acquire);
            // The kernel bumps the lock before and after an update: an odd
            // value is an update in progress.
            if lock & 1 == 0 && self.volatile::<u32>(off::LOCK) == lock {
                return (page, out);
            }
            std::hint::spin_loop();
        }
    }

    /// Whether the ring holds unread bytes.
    pub fn has_data(&self) -> bool {
        self.data_size != 0
            && self.atomic_u64(off::DATA_HEAD).load(Ordering::Acquire)
                != self.load_u64(off::DATA_TAIL)
    }

    /// Hand every complete record between the tail and the head to `f`
    /// (header included, contiguous even when it wraps around the ring's
    /// end), then release the space to the kernel. Returns how many records
    /// were handed out.
    ///
    /// A record whose header is malformed (size 0, not a multiple of 8, or
    /// running past the head) ends the read: the rest is skipped, so a
    /// confused ring can never loop or read outside the mapping.
    pub fn read_records(&mut self, mut f: impl FnMut(&[u8])) -> usize {
        if self.data_size == 0 {
            return 0;
        }
        let head = self.atomic_u64(off::DATA_HEAD).load(Ordering::Acquire);
        let mut tail = self.load_u64(off::DATA_TAIL);
        let mask = (self.data_size - 1) as u64;
        let mut n = 0;
        let ring = self.data_offset;
        while head.wrapping_sub(tail) >= 8 {
            let avail = head.wrapping_sub(tail);
            if avail > self.data_size as u64 {
                // The kernel never laps a reader of a writable mapping; a
                // tail this far behind means the words are garbage.
                tail = head;
                break;
            }
            let start = (tail & mask) as usize;
            // Records are 8-byte multiples in a ring of 8-byte multiples, so
            // a header never wraps.
            let hdr = self.ring_bytes(ring, start, 8);
            let size = u64::from(u16::from_ne_bytes([hdr[6], hdr[7]]));
            if size < 8 || size % 8 != 0 || size > avail {
                tail = head;
                break;
            }
            let size = size as usize;
            if start + size <= self.data_size {
                // SAFETY: [ring + start, ring + start + size) lies inside the
                // ring, checked above; the kernel does not write this range
                // until we move the tail past it.
                let rec = unsafe {
                    std::slice::from_raw_parts(self.base.as_ptr().add(ring + start), size)
                };
                f(rec);
            } else {
                let first = self.data_size - start;
                let mut buf = std::mem::take(&mut self.scratch);
                buf.clear();
                buf.extend_from_slice(self.ring_bytes(ring, start, first));
                buf.extend_from_slice(self.ring_bytes(ring, 0, size - first));
                f(&buf);
                self.scratch = buf;
            }
            tail = tail.wrapping_add(size as u64);
            n += 1;
        }
        self.atomic_u64(off::DATA_TAIL)
            .store(tail, Ordering::Release);
        n
    }

    /// Append every unread byte of the ring to `out` as it is (whole
    /// records, in at most two copies), then release the space to the
    /// kernel; returns the bytes appended. What a reader thread does to
    /// empty a ring fast and leave the parsing to another: the records are
    /// walked by their headers afterwards (the kernel moves the head past
    /// whole records only). A tail more than a ring behind the head (words
    /// the kernel did not write) drops what is there, as
    /// [`Mmap::read_records`] does.
    pub fn read_into(&mut self, out: &mut Vec<u8>) -> usize {
        if self.data_size == 0 {
            return 0;
        }
        let head = self.atomic_u64(off::DATA_HEAD).load(Ordering::Acquire);
        let tail = self.load_u64(off::DATA_TAIL);
        let avail = head.wrapping_sub(tail);
        let n = match avail <= self.data_size as u64 {
            true => avail as usize,
            false => 0,
        };
        let start = (tail & (self.data_size - 1) as u64) as usize;
        let first = n.min(self.data_size - start);
        out.reserve(n);
        out.extend_from_slice(self.ring_bytes(self.data_offset, start, first));
        out.extend_from_slice(self.ring_bytes(self.data_offset, 0, n - first));
        self.atomic_u64(off::DATA_TAIL)
            .store(head, Ordering::Release);
        n
    }

    /// `len` bytes of the ring from `start` (no wrap: the caller splits).
    fn ring_bytes(&self, ring: usize, start: usize, len: usize) -> &[u8] {
        let len = len.min(self.data_size.saturating_sub(start));
        // SAFETY: [ring + start, ring + start + len) is inside the ring by the
        // clamp above and the ring is inside the mapping (checked in new);
        // the kernel does not write it until the tail moves past it.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(ring + start), len) }
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly the mapping made in `new`, and no
        // reference into it outlives `self`.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}

impl Counter {
    /// `PERF_EVENT_IOC_SET_OUTPUT`: send this event's records to
    /// `target`'s ring (this event then needs no mapping of its own). Both
    /// must be on the same CPU, or per-task events of the same task.
    pub fn set_output(&self, target: &Counter) -> io::Result<()> {
        // SAFETY: SET_OUTPUT takes another perf fd as an integer argument;
        // both fds are open for the call.
        let ret = unsafe {
            libc::ioctl(
                self.as_raw_fd(),
                IOC_SET_OUTPUT as libc::Ioctl,
                target.as_raw_fd() as libc::c_ulong,
            )
        };
        if ret < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

/// One member of a sampled group read: its id (`None` without
/// `PERF_FORMAT_ID`) and count.
pub type SampleReadEntry = (Option<u64>, Count);

/// Decode the `PERF_SAMPLE_READ` part of a sample taken with
/// `read_format` `rf` and `PERF_FORMAT_GROUP`: `(id, count)` for every
/// member, leader first (ids are `None` without `PERF_FORMAT_ID`).
/// Returns the entries and the number of `u64` words consumed.
pub fn parse_sample_read(words: &[u64], rf: u64) -> io::Result<(Vec<SampleReadEntry>, usize)> {
    let mut out = Vec::new();
    let len = visit_sample_read(words, rf, |id, c| out.push((id, c)))?;
    Ok((out, len))
}

/// [`parse_sample_read`] without collecting: `f` gets every member, leader
/// first; returns the number of `u64` words consumed. A malformed read
/// visits nothing.
pub fn visit_sample_read(
    words: &[u64],
    rf: u64,
    f: impl FnMut(Option<u64>, Count),
) -> io::Result<usize> {
    let nr = *words
        .first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "empty sample read"))?;
    let nr = usize::try_from(nr).unwrap_or(usize::MAX);
    let len = crate::read::group_len(rf, nr).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("sample read of {nr} members"),
        )
    })?;
    let body = words.get(..len).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "sample read needs {len} words, the record has {}",
                words.len()
            ),
        )
    })?;
    crate::read::visit_group(body, rf, f)?;
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{event_type, read_format, software, Attr, Target};

    #[test]
    fn set_output_number_matches_the_kernel_header() {
        assert_eq!(IOC_SET_OUTPUT, 0x2405);
    }

    #[test]
    fn header_parses_native_endian() {
        let mut b = Vec::new();
        b.extend_from_slice(&9u32.to_ne_bytes());
        b.extend_from_slice(&2u16.to_ne_bytes());
        b.extend_from_slice(&48u16.to_ne_bytes());
        assert_eq!(
            RecordHeader::parse(&b),
            Some(RecordHeader {
                type_: 9,
                misc: 2,
                size: 48
            })
        );
        assert_eq!(RecordHeader::parse(&b[..7]), None);
    }

    #[test]
    fn user_page_decodes_the_kernel_layout() {
        let mut b = vec![0u8; 128];
        b[off::INDEX..off::INDEX + 4].copy_from_slice(&2u32.to_ne_bytes());
        b[off::OFFSET..off::OFFSET + 8].copy_from_slice(&(-5i64).to_ne_bytes());
        b[off::TIME_ENABLED..off::TIME_ENABLED + 8].copy_from_slice(&7u64.to_ne_bytes());
        b[off::TIME_RUNNING..off::TIME_RUNNING + 8].copy_from_slice(&6u64.to_ne_bytes());
        let caps = cap::USER_RDPMC | cap::USER_TIME | cap::USER_TIME_SHORT | 2;
        b[off::CAPABILITIES..off::CAPABILITIES + 8].copy_from_slice(&caps.to_ne_bytes());
        b[off::PMC_WIDTH..off::PMC_WIDTH + 2].copy_from_slice(&48u16.to_ne_bytes());
        b[off::TIME_SHIFT..off::TIME_SHIFT + 2].copy_from_slice(&31u16.to_ne_bytes());
        b[off::TIME_MULT..off::TIME_MULT + 4].copy_from_slice(&99u32.to_ne_bytes());
        b[off::TIME_MASK..off::TIME_MASK + 8].copy_from_slice(&0xFFu64.to_ne_bytes());
        let p = UserPage::decode(&b).unwrap();
        assert_eq!(p.index, 2);
        assert_eq!(p.offset, -5);
        assert_eq!((p.time_enabled, p.time_running), (7, 6));
        assert!(p.cap_user_rdpmc() && p.cap_user_time() && p.cap_user_time_short());
        assert!(!p.cap_user_time_zero());
        assert_eq!((p.pmc_width, p.time_shift, p.time_mult), (48, 31, 99));
        assert_eq!(p.time_mask, 0xFF);
        assert_eq!(UserPage::decode(&b[..40]), None);
    }

    #[test]
    fn sample_read_group_layout() {
        let rf = read_format::GROUP
            | read_format::ID
            | read_format::TOTAL_TIME_ENABLED
            | read_format::TOTAL_TIME_RUNNING;
        let words = [2, 100, 90, 7, 11, 8, 12, 999];
        let (entries, used) = parse_sample_read(&words, rf).unwrap();
        assert_eq!(used, 7);
        assert_eq!(entries[0].0, Some(11));
        assert_eq!(entries[0].1.value, 7);
        assert_eq!(entries[1].1.value, 8);
        assert_eq!(entries[1].1.enabled, 100);
        assert_eq!(entries[1].1.running, 90);
        assert!(parse_sample_read(&words[..5], rf).is_err());
        assert!(parse_sample_read(&[], rf).is_err());
    }

    #[test]
    fn odd_page_counts_are_refused() {
        let c = Counter::open(
            &Attr {
                type_: event_type::SOFTWARE,
                config: software::DUMMY,
                ..Attr::default()
            },
            Target { pid: 0, cpu: -1 },
            None,
        );
        let Ok(c) = c else {
            eprintln!("skipped: cannot open a dummy event here");
            return;
        };
        assert!(Mmap::new(&c, 3).is_err());
        let m = Mmap::new(&c, 0).unwrap();
        assert_eq!(m.data_size(), 0);
        assert!(!m.has_data());
        let page = m.user_page();
        assert_eq!(page.lock & 1, 0);
    }
}
