//! Reading a counter from user space: the `perf_event_mmap_page` and
//! `rdpmc`.
//!
//! When a hardware event counts the calling thread, the kernel can let the
//! thread read the counter itself, without a system call. The event's fd
//! is mapped (the first page, [`UserPageMap`]); the page holds, under a
//! sequence lock:
//!
//! - `index`: the hardware counter + 1, or 0 when the event is not on a
//!   counter now (or cannot be read from user space: software events);
//! - `offset`: what to add to the counter's raw value;
//! - `pmc_width`: the counter's width, to sign-extend the raw value;
//! - `time_enabled`, `time_running`: the times at the last kernel update;
//! - with `cap_user_time`: `time_mult`, `time_shift`, `time_offset`, which
//!   turn a TSC reading into the nanoseconds since that update; with
//!   `cap_user_time_short`, `time_cycles` and `time_mask` correct a TSC
//!   narrower than 64 bits.
//!
//! The reader loops until the lock word is the same before and after its
//! reads (the kernel bumps it around every update), with `rdpmc(index −
//! 1)` and `rdtsc` *inside* the loop:
//!
//! ```text
//! value   = offset + sign_extend(rdpmc(index − 1), pmc_width)
//! cyc     = time_cycles + ((tsc − time_cycles) & time_mask)   (time_short)
//! delta   = time_offset + (cyc >> shift) · mult + ((cyc & (2^shift − 1)) · mult >> shift)
//! enabled = time_enabled + delta; running = time_running + delta (if index)
//! ```
//!
//! (`include/uapi/linux/perf_event.h`.) The arithmetic ([`compute`],
//! [`sign_extend`], [`tsc_to_ns`]) is pure and tested with made-up pages;
//! the `rdpmc` instruction is used only when `cap_user_rdpmc` is set and
//! `index` is not 0. Otherwise [`UserPageMap::read`] returns `None` and the
//! caller falls back to `read(2)`.

use crate::Counter;
use pmx_model::count::Count;
use std::io;
use std::os::fd::AsRawFd;

/// The fields of `struct perf_event_mmap_page` the read needs, as read
/// inside one consistent pass of the sequence lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageFields {
    /// Hardware counter + 1; 0 = not readable from user space now.
    pub index: u32,
    /// Added to the counter's raw value.
    pub offset: i64,
    /// Enabled time at the kernel's last update (ns).
    pub time_enabled: u64,
    /// Running time at the kernel's last update (ns).
    pub time_running: u64,
    /// `rdpmc` may be used.
    pub cap_user_rdpmc: bool,
    /// `time_mult`, `time_shift`, `time_offset` are valid.
    pub cap_user_time: bool,
    /// `time_zero` is valid.
    pub cap_user_time_zero: bool,
    /// `time_cycles`, `time_mask` are valid (a TSC narrower than 64 bits).
    pub cap_user_time_short: bool,
    /// Counter width in bits.
    pub pmc_width: u16,
    /// TSC → ns shift.
    pub time_shift: u16,
    /// TSC → ns multiplier.
    pub time_mult: u32,
    /// TSC → ns offset.
    pub time_offset: u64,
    /// TSC value at time zero.
    pub time_zero: u64,
    /// Short TSC: the last full value.
    pub time_cycles: u64,
    /// Short TSC: the implemented bits.
    pub time_mask: u64,
}

/// Byte offsets in `struct perf_event_mmap_page`.
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
}

/// Capability bits.
mod cap {
    pub const USER_RDPMC: u64 = 1 << 2;
    pub const USER_TIME: u64 = 1 << 3;
    pub const USER_TIME_ZERO: u64 = 1 << 4;
    pub const USER_TIME_SHORT: u64 = 1 << 5;
}

/// `raw` as a signed `width`-bit number, widened to 64 bits (a counter
/// programmed to a negative start, for overflow, reads as negative).
/// `width` 0 or ≥ 64 leaves `raw` as it is.
pub fn sign_extend(raw: u64, width: u16) -> i64 {
    if width == 0 || width >= 64 {
        return raw as i64;
    }
    let sh = 64 - u32::from(width);
    ((raw << sh) as i64) >> sh
}

/// Nanoseconds since the kernel's last update from a TSC reading `tsc`,
/// with the page's conversion; the short-TSC correction when the page
/// says so.
pub fn tsc_to_ns(p: &PageFields, tsc: u64) -> u64 {
    let cyc = if p.cap_user_time_short {
        p.time_cycles
            .wrapping_add(tsc.wrapping_sub(p.time_cycles) & p.time_mask)
    } else {
        tsc
    };
    let shift = u32::from(p.time_shift).min(63);
    let mult = u64::from(p.time_mult);
    let quot = cyc >> shift;
    let rem = cyc & ((1u64 << shift) - 1);
    p.time_offset
        .wrapping_add(quot.wrapping_mul(mult))
        .wrapping_add(rem.wrapping_mul(mult) >> shift)
}

/// The count from one consistent pass: `pmc` is what `rdpmc(index − 1)`
/// returned, `tsc` what `rdtsc` returned (both ignored when the page does
/// not allow them). `None` when the counter cannot be read from user
/// space (`index` 0 or no `cap_user_rdpmc`): read it with `read(2)`.
pub fn compute(p: &PageFields, pmc: u64, tsc: u64) -> Option<Count> {
    if !p.cap_user_rdpmc || p.index == 0 {
        return None;
    }
    let value = p.offset.wrapping_add(sign_extend(pmc, p.pmc_width)) as u64;
    let (mut enabled, mut running) = (p.time_enabled, p.time_running);
    if p.cap_user_time && enabled != running {
        let delta = tsc_to_ns(p, tsc);
        enabled = enabled.wrapping_add(delta);
        running = running.wrapping_add(delta);
    }
    Some(Count {
        value,
        enabled,
        running,
    })
}

impl From<&crate::mmap::UserPage> for PageFields {
    /// The fields of a [`crate::mmap::Mmap::user_page`] snapshot. Its
    /// times can be extended with [`tsc_to_ns`]; a counter value needs
    /// `rdpmc` inside the same pass of the lock, which
    /// [`UserPageMap::read`] does.
    fn from(u: &crate::mmap::UserPage) -> PageFields {
        PageFields {
            index: u.index,
            offset: u.offset,
            time_enabled: u.time_enabled,
            time_running: u.time_running,
            cap_user_rdpmc: u.cap_user_rdpmc(),
            cap_user_time: u.cap_user_time(),
            cap_user_time_zero: u.cap_user_time_zero(),
            cap_user_time_short: u.cap_user_time_short(),
            pmc_width: u.pmc_width,
            time_shift: u.time_shift,
            time_mult: u.time_mult,
            time_offset: u.time_offset,
            time_zero: u.time_zero,
            time_cycles: u.time_cycles,
            time_mask: u.time_mask,
        }
    }
}

/// Decode the fields from the page's bytes (native-endian), e.g. a copy.
pub fn decode(page: &[u8]) -> Option<PageFields> {
    let u16_at = |o: usize| Some(u16::from_ne_bytes(page.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_ne_bytes(page.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_ne_bytes(page.get(o..o + 8)?.try_into().ok()?));
    let caps = u64_at(off::CAPABILITIES)?;
    Some(PageFields {
        index: u32_at(off::INDEX)?,
        offset: u64_at(off::OFFSET)? as i64,
        time_enabled: u64_at(off::TIME_ENABLED)?,
        time_running: u64_at(off::TIME_RUNNING)?,
        cap_user_rdpmc: caps & cap::USER_RDPMC != 0,
        cap_user_time: caps & cap::USER_TIME != 0,
        cap_user_time_zero: caps & cap::USER_TIME_ZERO != 0,
        cap_user_time_short: caps & cap::USER_TIME_SHORT != 0,
        pmc_width: u16_at(off::PMC_WIDTH)?,
        time_shift: u16_at(off::TIME_SHIFT)?,
        time_mult: u32_at(off::TIME_MULT)?,
        time_offset: u64_at(off::TIME_OFFSET)?,
        time_zero: u64_at(off::TIME_ZERO)?,
        time_cycles: u64_at(off::TIME_CYCLES)?,
        time_mask: u64_at(off::TIME_MASK)?,
    })
}

/// The first page of an event's mapping, for user-space reads.
#[derive(Debug)]
pub struct UserPageMap {
    page: *const u8,
    len: usize,
}

// SAFETY: the mapping is read-only shared memory the kernel updates under
// its sequence lock; reading it from any thread is what the ABI is for.
unsafe impl Send for UserPageMap {}
// SAFETY: as above; `&self` methods only read.
unsafe impl Sync for UserPageMap {}

impl Drop for UserPageMap {
    fn drop(&mut self) {
        // SAFETY: `page` and `len` are the mapping made in `new`, unmapped
        // once here.
        unsafe { libc::munmap(self.page as *mut libc::c_void, self.len) };
    }
}

impl UserPageMap {
    /// Map `counter`'s metadata page (read-only, no ring buffer).
    pub fn new(counter: &Counter) -> io::Result<UserPageMap> {
        // SAFETY: sysconf has no preconditions.
        let len = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let len = if len > 0 { len as usize } else { 4096 };
        // SAFETY: a fresh shared read-only mapping of the event's fd; the
        // kernel decides what it contains; we only read it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                counter.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(UserPageMap {
            page: p as *const u8,
            len,
        })
    }

    /// # Safety
    /// `o` + size of `T` is within the page and aligned for `T`.
    unsafe fn field<T: Copy>(&self, o: usize) -> T {
        std::ptr::read_volatile(self.page.add(o) as *const T)
    }

    /// One consistent snapshot of the fields (without reading the
    /// counter).
    pub fn fields(&self) -> PageFields {
        self.read_with(|_| 0).0
    }

    /// Read the fields and, inside the same pass of the lock, call
    /// `inside(&fields)` (which reads the counter); retried until the
    /// kernel did not update the page meanwhile.
    fn read_with(&self, mut inside: impl FnMut(&PageFields) -> u64) -> (PageFields, u64, u64) {
        use std::sync::atomic::{compiler_fence, Ordering};
        loop {
            // SAFETY (every field read): the offsets are those of the
            // kernel's struct, within the first page and naturally aligned.
            let seq: u32 = unsafe { self.field(off::LOCK) };
            compiler_fence(Ordering::SeqCst);
            let caps: u64 = unsafe { self.field(off::CAPABILITIES) };
            let p = PageFields {
                index: unsafe { self.field(off::INDEX) },
                offset: unsafe { self.field(off::OFFSET) },
                time_enabled: unsafe { self.field(off::TIME_ENABLED) },
                time_running: unsafe { self.field(off::TIME_RUNNING) },
                cap_user_rdpmc: caps & cap::USER_RDPMC != 0,
                cap_user_time: caps & cap::USER_TIME != 0,
                cap_user_time_zero: caps & cap::USER_TIME_ZERO != 0,
                cap_user_time_short: caps & cap::USER_TIME_SHORT != 0,
                pmc_width: unsafe { self.field(off::PMC_WIDTH) },
                time_shift: unsafe { self.field(off::TIME_SHIFT) },
                time_mult: unsafe { self.field(off::TIME_MULT) },
                time_offset: unsafe { self.field(off::TIME_OFFSET) },
                time_zero: unsafe { self.field(off::TIME_ZERO) },
                time_cycles: unsafe { self.field(off::TIME_CYCLES) },
                time_mask: unsafe { self.field(off::TIME_MASK) },
            };
            let tsc = if p.cap_user_time && p.time_enabled != p.time_running {
                rdtsc()
            } else {
                0
            };
            let pmc = inside(&p);
            compiler_fence(Ordering::SeqCst);
            let again: u32 = unsafe { self.field(off::LOCK) };
            // An odd lock is an update in progress (the kernel bumps it
            // before and after): retry then too.
            if again == seq && seq & 1 == 0 {
                return (p, pmc, tsc);
            }
            std::hint::spin_loop();
        }
    }

    /// The counter's count read from user space, or `None` when the page
    /// does not allow it now (`index` 0, no `cap_user_rdpmc`, not x86):
    /// read the fd instead.
    pub fn read(&self) -> Option<Count> {
        if !cfg!(any(target_arch = "x86_64", target_arch = "x86")) {
            return None;
        }
        let (p, pmc, tsc) = self.read_with(|p| {
            if p.cap_user_rdpmc && p.index != 0 {
                // SAFETY: the kernel set cap_user_rdpmc for this event and
                // index names the counter it is on now (CR4.PCE is set for
                // this task), so rdpmc does not fault.
                unsafe { rdpmc(p.index - 1) }
            } else {
                0
            }
        });
        compute(&p, pmc, tsc)
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtsc is always allowed in user mode on Linux (CR4.TSD clear).
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(target_arch = "x86")]
    // SAFETY: as above.
    unsafe {
        core::arch::x86::_rdtsc()
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
fn rdtsc() -> u64 {
    0
}

/// `rdpmc` of counter `ecx`.
///
/// # Safety
/// Faults unless the kernel allows user-space `rdpmc` for this task and
/// `ecx` names a counter that exists.
#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
unsafe fn rdpmc(ecx: u32) -> u64 {
    let (lo, hi): (u32, u32);
    std::arch::asm!("rdpmc", in("ecx") ecx, out("eax") lo, out("edx") hi,
        options(nomem, nostack, preserves_flags));
    (u64::from(hi) << 32) | u64::from(lo)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
unsafe fn rdpmc(_ecx: u32) -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> PageFields {
        PageFields {
            index: 3,
            offset: 1000,
            time_enabled: 5_000,
            time_running: 5_000,
            cap_user_rdpmc: true,
            cap_user_time: true,
            pmc_width: 48,
            ..PageFields::default()
        }
    }

    #[test]
    fn sign_extension_follows_the_width() {
        assert_eq!(sign_extend(5, 48), 5);
        assert_eq!(sign_extend(0xFFFF_FFFF_FFFF, 48), -1);
        assert_eq!(sign_extend(0x8000_0000_0000, 48), -(1 << 47));
        // Bits above the width are ignored.
        assert_eq!(sign_extend(0xABCD_0000_0000_0007, 48), 7);
        assert_eq!(sign_extend(u64::MAX, 64), -1);
        assert_eq!(sign_extend(0x7F, 0), 0x7F);
    }

    #[test]
    fn value_is_offset_plus_the_sign_extended_counter() {
        let p = page();
        assert_eq!(compute(&p, 234, 0).unwrap().value, 1234);
        // A counter started at -100 (48 bits) that counted 150 reads 50
        // above zero; offset compensates in the kernel.
        let p = PageFields {
            offset: 100,
            ..page()
        };
        let raw = (0x1_0000_0000_0000u64 - 100 + 150) & 0xFFFF_FFFF_FFFF;
        assert_eq!(compute(&p, raw, 0).unwrap().value, 150);
        let neg = (0x1_0000_0000_0000u64 - 40) & 0xFFFF_FFFF_FFFF;
        assert_eq!(compute(&p, neg, 0).unwrap().value, 60);
    }

    #[test]
    fn index_zero_or_no_capability_means_read_the_fd() {
        assert_eq!(compute(&PageFields { index: 0, ..page() }, 1, 0), None);
        assert_eq!(
            compute(
                &PageFields {
                    cap_user_rdpmc: false,
                    ..page()
                },
                1,
                0
            ),
            None
        );
    }

    #[test]
    fn times_are_untouched_when_enabled_equals_running() {
        let c = compute(&page(), 0, 123_456).unwrap();
        assert_eq!((c.enabled, c.running), (5_000, 5_000));
    }

    #[test]
    fn tsc_extends_the_times_when_multiplexed() {
        // 3 GHz TSC: ns = cyc · 1/3 → mult = 2^32/3 with shift 32 rounds
        // down; take an exact one instead: 2 GHz, mult 2^31, shift 32.
        let p = PageFields {
            time_enabled: 10_000,
            time_running: 4_000,
            time_mult: 1 << 31,
            time_shift: 32,
            time_offset: (-(500i64)) as u64,
            ..page()
        };
        // 2_000_000 cycles at 2 GHz = 1_000_000 ns, minus the offset 500.
        assert_eq!(tsc_to_ns(&p, 2_000_000), 999_500);
        let c = compute(&p, 0, 2_000_000).unwrap();
        assert_eq!(c.enabled, 10_000 + 999_500);
        assert_eq!(c.running, 4_000 + 999_500);
        // Without cap_user_time the stored times stand.
        let c = compute(
            &PageFields {
                cap_user_time: false,
                ..p
            },
            0,
            2_000_000,
        )
        .unwrap();
        assert_eq!((c.enabled, c.running), (10_000, 4_000));
    }

    #[test]
    fn quotient_and_remainder_split_avoids_overflow() {
        // cyc · mult would overflow 64 bits; the split does not.
        let p = PageFields {
            time_mult: 3 << 20,
            time_shift: 22,
            ..page()
        };
        let cyc = 1u64 << 50;
        let exact = (u128::from(cyc) * u128::from(p.time_mult)) >> 22;
        assert_eq!(u128::from(tsc_to_ns(&p, cyc)), exact);
        let cyc = (1u64 << 50) + 12345;
        let exact = (u128::from(cyc) * u128::from(p.time_mult)) >> 22;
        assert_eq!(u128::from(tsc_to_ns(&p, cyc)), exact);
    }

    #[test]
    fn short_tsc_is_corrected_from_time_cycles() {
        // A 32-bit clock: the page saw 0xFFFF_FF00 last; the clock has
        // wrapped to 0x100 since: 0x200 cycles later.
        let p = PageFields {
            cap_user_time_short: true,
            time_cycles: 0xFFFF_FF00,
            time_mask: 0xFFFF_FFFF,
            time_mult: 1,
            time_shift: 0,
            time_offset: 0,
            ..page()
        };
        assert_eq!(tsc_to_ns(&p, 0x1_0000_0100), 0x1_0000_0100);
        // The read TSC only has 32 bits (wrapped): corrected to the
        // 64-bit timeline.
        assert_eq!(tsc_to_ns(&p, 0x100), 0x1_0000_0100);
    }

    #[test]
    fn decode_reads_the_kernel_layout() {
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
        let p = decode(&b).unwrap();
        assert_eq!(p.index, 2);
        assert_eq!(p.offset, -5);
        assert_eq!((p.time_enabled, p.time_running), (7, 6));
        assert!(p.cap_user_rdpmc && p.cap_user_time && p.cap_user_time_short);
        assert!(!p.cap_user_time_zero);
        assert_eq!((p.pmc_width, p.time_shift, p.time_mult), (48, 31, 99));
        assert_eq!(p.time_mask, 0xFF);
        assert_eq!(decode(&b[..40]), None);
    }

    #[test]
    fn a_software_event_page_says_read_the_fd() {
        // The real kernel: task-clock is never on a hardware counter.
        let c = Counter::open(
            &crate::Attr {
                type_: crate::event_type::SOFTWARE,
                config: crate::software::TASK_CLOCK,
                ..crate::Attr::default()
            },
            crate::Target { pid: 0, cpu: -1 },
            None,
        )
        .unwrap();
        let m = UserPageMap::new(&c).unwrap();
        let f = m.fields();
        assert_eq!(f.index, 0);
        assert_eq!(m.read(), None);
        // The same page through the ring-buffer mapping reads the same.
        let mm = crate::mmap::Mmap::new(&c, 0).unwrap();
        let g = PageFields::from(&mm.user_page());
        assert_eq!((g.index, g.cap_user_rdpmc), (0, false));
        assert_eq!(compute(&g, 0, 0), None);
    }
}
