//! The kernel's side of `perf_event_open(2)`: `struct perf_event_attr` as
//! the ABI lays it out, the ioctl request numbers, and the syscall itself.
//!
//! Nothing here decides anything; [`crate::Counter`] and [`crate::Attr`] do.

use crate::Attr;
use std::mem::{offset_of, size_of};

/// `PERF_ATTR_SIZE_VER8`: the struct up to and including `config3`
/// (Linux 6.3). Older kernels accept a larger struct as long as the bytes
/// they do not know are zero, which they are unless a caller sets a field
/// the kernel lacks.
pub(crate) const PERF_ATTR_SIZE_VER8: u32 = 136;

/// `struct perf_event_attr`, field for field (`include/uapi/linux/
/// perf_event.h`). Unions are represented by the member pmx uses; the
/// comments name the other.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PerfEventAttr {
    pub type_: u32,
    pub size: u32,
    pub config: u64,
    /// Union with `sample_freq`.
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    /// The bitfield word: see [`flag`].
    pub flags: u64,
    /// Union with `wakeup_watermark`.
    pub wakeup_events: u32,
    pub bp_type: u32,
    /// Union with `bp_addr`, `kprobe_func`, `uprobe_path`.
    pub config1: u64,
    /// Union with `bp_len`, `kprobe_addr`, `probe_offset`.
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub reserved_2: u16,
    pub aux_sample_size: u32,
    pub reserved_3: u32,
    pub sig_data: u64,
    pub config3: u64,
}

// The layout is the ABI: any drift is a compile error, not a kernel EINVAL.
const _: () = {
    assert!(size_of::<PerfEventAttr>() == PERF_ATTR_SIZE_VER8 as usize);
    assert!(offset_of!(PerfEventAttr, config) == 8);
    assert!(offset_of!(PerfEventAttr, read_format) == 32);
    assert!(offset_of!(PerfEventAttr, flags) == 40);
    assert!(offset_of!(PerfEventAttr, bp_type) == 52);
    assert!(offset_of!(PerfEventAttr, config1) == 56);
    assert!(offset_of!(PerfEventAttr, config2) == 64);
    assert!(offset_of!(PerfEventAttr, sample_regs_intr) == 96);
    assert!(offset_of!(PerfEventAttr, sig_data) == 120);
    assert!(offset_of!(PerfEventAttr, config3) == 128);
};

/// Bits of [`PerfEventAttr::flags`].
pub(crate) mod flag {
    pub const DISABLED: u64 = 1 << 0;
    pub const INHERIT: u64 = 1 << 1;
    pub const PINNED: u64 = 1 << 2;
    pub const EXCLUSIVE: u64 = 1 << 3;
    pub const EXCLUDE_USER: u64 = 1 << 4;
    pub const EXCLUDE_KERNEL: u64 = 1 << 5;
    pub const EXCLUDE_HV: u64 = 1 << 6;
    pub const EXCLUDE_IDLE: u64 = 1 << 7;
    pub const ENABLE_ON_EXEC: u64 = 1 << 12;
    /// `precise_ip` occupies bits 15–16.
    pub const PRECISE_IP_SHIFT: u32 = 15;
    pub const EXCLUDE_HOST: u64 = 1 << 19;
    pub const EXCLUDE_GUEST: u64 = 1 << 20;
}

impl PerfEventAttr {
    /// The kernel struct for `attr`. `precise_ip` must already be checked
    /// to fit its two bits (the caller reports it otherwise); it is masked
    /// here so a bad value can never spill into `mmap_data`.
    pub(crate) fn from_attr(attr: &Attr) -> PerfEventAttr {
        let bits = [
            (attr.disabled, flag::DISABLED),
            (attr.inherit, flag::INHERIT),
            (attr.pinned, flag::PINNED),
            (attr.exclusive, flag::EXCLUSIVE),
            (attr.exclude_user, flag::EXCLUDE_USER),
            (attr.exclude_kernel, flag::EXCLUDE_KERNEL),
            (attr.exclude_hv, flag::EXCLUDE_HV),
            (attr.exclude_idle, flag::EXCLUDE_IDLE),
            (attr.enable_on_exec, flag::ENABLE_ON_EXEC),
            (attr.exclude_host, flag::EXCLUDE_HOST),
            (attr.exclude_guest, flag::EXCLUDE_GUEST),
        ];
        let flags = bits
            .iter()
            .filter(|(on, _)| *on)
            .fold(0, |acc, (_, bit)| acc | bit)
            | (u64::from(attr.precise_ip & 0b11) << flag::PRECISE_IP_SHIFT);
        PerfEventAttr {
            type_: attr.type_,
            size: PERF_ATTR_SIZE_VER8,
            config: attr.config,
            read_format: attr.read_format,
            flags,
            bp_type: attr.bp_type,
            config1: attr.config1,
            config2: attr.config2,
            ..PerfEventAttr::default()
        }
    }
}

/// `PERF_FLAG_FD_CLOEXEC`: the new fd is close-on-exec.
pub(crate) const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// `PERF_IOC_FLAG_GROUP`: an ioctl applies to the whole group.
pub(crate) const PERF_IOC_FLAG_GROUP: libc::c_ulong = 1;

// ioctl request numbers as `<asm-generic/ioctl.h>` builds them:
// dir << 30 | size << 16 | type << 8 | nr, with type '$'.
const IOC_TYPE: u64 = b'$' as u64;
const IOC_READ: u64 = 2;

const fn io(nr: u64) -> u64 {
    (IOC_TYPE << 8) | nr
}

const fn ior(nr: u64, size: usize) -> u64 {
    (IOC_READ << 30) | ((size as u64) << 16) | (IOC_TYPE << 8) | nr
}

/// `PERF_EVENT_IOC_ENABLE`: `_IO('$', 0)`.
pub(crate) const IOC_ENABLE: u64 = io(0);
/// `PERF_EVENT_IOC_DISABLE`: `_IO('$', 1)`.
pub(crate) const IOC_DISABLE: u64 = io(1);
/// `PERF_EVENT_IOC_RESET`: `_IO('$', 3)`.
pub(crate) const IOC_RESET: u64 = io(3);
/// `PERF_EVENT_IOC_ID`: `_IOR('$', 7, __u64 *)`. The kernel header sizes
/// it by the *pointer* type, so it differs between 32- and 64-bit ABIs.
pub(crate) const IOC_ID: u64 = ior(7, size_of::<*mut u64>());

/// `perf_event_open(attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC)`:
/// the new fd, or the errno.
pub(crate) fn perf_event_open(
    attr: &PerfEventAttr,
    pid: i32,
    cpu: i32,
    group_fd: i32,
) -> Result<i32, i32> {
    // SAFETY: `attr` points to a live, fully initialised struct whose `size`
    // field matches its real size, so the kernel reads only memory we own;
    // the other arguments are plain integers.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            pid as libc::c_int,
            cpu as libc::c_int,
            group_fd as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if ret < 0 {
        Err(last_errno())
    } else {
        // An fd always fits in an int.
        i32::try_from(ret).map_err(|_| libc::EOVERFLOW)
    }
}

/// The calling thread's errno.
pub(crate) fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{bp, read_format};

    #[test]
    fn ioctl_numbers_match_the_kernel_headers() {
        assert_eq!(IOC_ENABLE, 0x2400);
        assert_eq!(IOC_DISABLE, 0x2401);
        assert_eq!(IOC_RESET, 0x2403);
        #[cfg(target_pointer_width = "64")]
        assert_eq!(IOC_ID, 0x8008_2407);
    }

    #[test]
    fn every_attr_field_lands_on_its_bit() {
        let all = Attr {
            type_: 9,
            config: 0x1234,
            config1: 0x5678,
            config2: 0x9abc,
            bp_type: 0,
            read_format: read_format::GROUP | read_format::ID,
            disabled: true,
            inherit: true,
            enable_on_exec: true,
            pinned: true,
            exclusive: true,
            exclude_user: true,
            exclude_kernel: true,
            exclude_hv: true,
            exclude_idle: true,
            exclude_guest: true,
            exclude_host: true,
            precise_ip: 3,
        };
        let k = PerfEventAttr::from_attr(&all);
        assert_eq!(k.size, 136);
        assert_eq!(
            (k.type_, k.config, k.config1, k.config2),
            (9, 0x1234, 0x5678, 0x9abc)
        );
        assert_eq!(k.read_format, 12);
        // bits 0-7, 12, 15-16, 19, 20.
        assert_eq!(k.flags, 0xff | 1 << 12 | 0b11 << 15 | 1 << 19 | 1 << 20);

        let one = |a: Attr| PerfEventAttr::from_attr(&a).flags;
        let d = Attr::default;
        assert_eq!(one(d()), 0);
        assert_eq!(
            one(Attr {
                disabled: true,
                ..d()
            }),
            1
        );
        assert_eq!(
            one(Attr {
                inherit: true,
                ..d()
            }),
            1 << 1
        );
        assert_eq!(
            one(Attr {
                pinned: true,
                ..d()
            }),
            1 << 2
        );
        assert_eq!(
            one(Attr {
                exclusive: true,
                ..d()
            }),
            1 << 3
        );
        assert_eq!(
            one(Attr {
                exclude_user: true,
                ..d()
            }),
            1 << 4
        );
        assert_eq!(
            one(Attr {
                exclude_kernel: true,
                ..d()
            }),
            1 << 5
        );
        assert_eq!(
            one(Attr {
                exclude_hv: true,
                ..d()
            }),
            1 << 6
        );
        assert_eq!(
            one(Attr {
                exclude_idle: true,
                ..d()
            }),
            1 << 7
        );
        assert_eq!(
            one(Attr {
                enable_on_exec: true,
                ..d()
            }),
            1 << 12
        );
        assert_eq!(
            one(Attr {
                precise_ip: 1,
                ..d()
            }),
            1 << 15
        );
        assert_eq!(
            one(Attr {
                precise_ip: 2,
                ..d()
            }),
            1 << 16
        );
        assert_eq!(
            one(Attr {
                exclude_host: true,
                ..d()
            }),
            1 << 19
        );
        assert_eq!(
            one(Attr {
                exclude_guest: true,
                ..d()
            }),
            1 << 20
        );
    }

    #[test]
    fn breakpoint_fields_use_the_union_slots() {
        let k = PerfEventAttr::from_attr(&Attr::breakpoint(0x7000_1000, 8, bp::W));
        // SAFETY: PerfEventAttr is plain old data (integers only, no
        // padding: the size assertion above sums the fields), so viewing it
        // as bytes is sound.
        let bytes: &[u8] = unsafe {
            std::slice::from_raw_parts(
                (&k as *const PerfEventAttr).cast::<u8>(),
                size_of::<PerfEventAttr>(),
            )
        };
        let u32_at = |o: usize| u32::from_ne_bytes(bytes[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_ne_bytes(bytes[o..o + 8].try_into().unwrap());
        assert_eq!(u32_at(0), 5, "type");
        assert_eq!(u32_at(4), 136, "size");
        assert_eq!(u32_at(52), bp::W, "bp_type");
        assert_eq!(u64_at(56), 0x7000_1000, "bp_addr");
        assert_eq!(u64_at(64), 8, "bp_len");
    }
}
