//! Reading a counter from user space: the `perf_event_mmap_page` and
//! `rdpmc`.
//!
//! When a hardware event counts the calling thread, the kernel can let the
//! thread read the counter itself, without a system call. The event's fd
//! is mapped (the first page, [`UserPageMap`] over [`crate::mmap::Mmap`]);
//! the page ([`UserPage`]) holds, under a sequence lock:
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

use crate::mmap::Mmap;
pub use crate::mmap::UserPage;
use crate::Counter;
use pmx_model::count::Count;
use std::io;

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
pub fn tsc_to_ns(p: &UserPage, tsc: u64) -> u64 {
    let cyc = if p.cap_user_time_short() {
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
pub fn compute(p: &UserPage, pmc: u64, tsc: u64) -> Option<Count> {
    if !p.cap_user_rdpmc() || p.index == 0 {
        return None;
    }
    let value = p.offset.wrapping_add(sign_extend(pmc, p.pmc_width)) as u64;
    let (mut enabled, mut running) = (p.time_enabled, p.time_running);
    if p.cap_user_time() && enabled != running {
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

/// The first page of an event's mapping, for user-space reads.
#[derive(Debug)]
pub struct UserPageMap {
    map: Mmap,
}

impl UserPageMap {
    /// Map `counter`'s metadata page (no ring buffer).
    pub fn new(counter: &Counter) -> io::Result<UserPageMap> {
        Ok(UserPageMap {
            map: Mmap::new(counter, 0)?,
        })
    }

    /// One consistent snapshot of the page (without reading the counter).
    pub fn fields(&self) -> UserPage {
        self.map.user_page()
    }

    /// The counter's count read from user space, or `None` when the page
    /// does not allow it now (`index` 0, no `cap_user_rdpmc`, not x86):
    /// read the fd instead.
    pub fn read(&self) -> Option<Count> {
        if !cfg!(any(target_arch = "x86_64", target_arch = "x86")) {
            return None;
        }
        let (p, (pmc, tsc)) = self.map.user_page_with(|p| {
            let tsc = if p.cap_user_time() && p.time_enabled != p.time_running {
                rdtsc()
            } else {
                0
            };
            let pmc = if p.cap_user_rdpmc() && p.index != 0 {
                // SAFETY: the kernel set cap_user_rdpmc for this event and
                // index names the counter it is on now (CR4.PCE is set for
                // this task), so rdpmc does not fault.
                unsafe { rdpmc(p.index - 1) }
            } else {
                0
            };
            (pmc, tsc)
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
    use crate::mmap::cap;

    fn page() -> UserPage {
        UserPage {
            index: 3,
            offset: 1000,
            time_enabled: 5_000,
            time_running: 5_000,
            capabilities: cap::USER_RDPMC | cap::USER_TIME,
            pmc_width: 48,
            ..UserPage::default()
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
        let p = UserPage {
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
        assert_eq!(compute(&UserPage { index: 0, ..page() }, 1, 0), None);
        assert_eq!(
            compute(
                &UserPage {
                    capabilities: cap::USER_TIME,
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
        let p = UserPage {
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
            &UserPage {
                capabilities: cap::USER_RDPMC,
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
        let p = UserPage {
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
        let p = UserPage {
            capabilities: cap::USER_RDPMC | cap::USER_TIME | cap::USER_TIME_SHORT,
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
        assert!(!f.cap_user_rdpmc());
        assert_eq!(compute(&f, 0, 0), None);
    }
}
