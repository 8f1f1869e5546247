//! The kernel's side of `perf_event_open(2)`: `struct perf_event_attr` as
//! the ABI lays it out (declared once, in [`pmx_perfdata::attr`]), the
//! ioctl request numbers, and the syscall itself.
//!
//! Nothing here decides anything; [`crate::Counter`] and [`crate::Attr`] do.

use crate::{Attr, SampleRate, Wakeup};
use std::mem::size_of;

pub use pmx_perfdata::attr::{flag, PerfEventAttr};
use pmx_perfdata::format::attr_size;

/// `PERF_ATTR_SIZE_VER7`: the struct up to and including `sig_data`
/// (Linux 5.13); the largest perf 6.1 reads from a perf.data file.
pub(crate) const PERF_ATTR_SIZE_VER7: u32 = attr_size::VER7;

/// `PERF_ATTR_SIZE_VER8`: the struct up to and including `config3`
/// (Linux 6.3). Older kernels accept a larger struct as long as the bytes
/// they do not know are zero, which they are unless a caller sets a field
/// the kernel lacks.
pub(crate) const PERF_ATTR_SIZE_VER8: u32 = attr_size::VER8;

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
        (
            matches!(attr.sample, Some(SampleRate::Frequency(_))),
            flag::FREQ,
        ),
        (matches!(attr.wakeup, Wakeup::Watermark(_)), flag::WATERMARK),
        (attr.mmap, flag::MMAP),
        (attr.mmap2, flag::MMAP2),
        (attr.mmap_data, flag::MMAP_DATA),
        (attr.comm, flag::COMM),
        (attr.comm_exec, flag::COMM_EXEC),
        (attr.task, flag::TASK),
        (attr.context_switch, flag::CONTEXT_SWITCH),
        (attr.namespaces, flag::NAMESPACES),
        (attr.sample_id_all, flag::SAMPLE_ID_ALL),
        (
            attr.exclude_callchain_kernel,
            flag::EXCLUDE_CALLCHAIN_KERNEL,
        ),
        (attr.exclude_callchain_user, flag::EXCLUDE_CALLCHAIN_USER),
        (attr.clockid.is_some(), flag::USE_CLOCKID),
    ];
    let flags = bits
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |acc, (_, bit)| acc | bit)
        | (u64::from(attr.precise_ip & 0b11) << flag::PRECISE_IP_SHIFT);
    let sample_period = match attr.sample {
        Some(SampleRate::Period(n)) | Some(SampleRate::Frequency(n)) => n,
        None => 0,
    };
    let wakeup_events = match attr.wakeup {
        Wakeup::Events(n) | Wakeup::Watermark(n) => n,
    };
    PerfEventAttr {
        type_: attr.type_,
        size: PERF_ATTR_SIZE_VER8,
        config: attr.config,
        sample_period,
        sample_type: attr.sample_type,
        read_format: attr.read_format,
        flags,
        wakeup_events,
        bp_type: attr.bp_type,
        config1: attr.config1,
        config2: attr.config2,
        branch_sample_type: attr.branch_sample_type,
        sample_regs_user: attr.sample_regs_user,
        sample_stack_user: attr.sample_stack_user,
        clockid: attr.clockid.unwrap_or(0),
        sample_max_stack: attr.sample_max_stack,
        config3: attr.config3,
        ..PerfEventAttr::default()
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

/// `PERF_FLAG_PID_CGROUP`: `pid` is an fd of a cgroup directory.
pub(crate) const PERF_FLAG_PID_CGROUP: libc::c_ulong = 1 << 2;

/// `perf_event_open(attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC | flags)`.
pub(crate) fn perf_event_open_flags(
    attr: &PerfEventAttr,
    pid: i32,
    cpu: i32,
    group_fd: i32,
    flags: libc::c_ulong,
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
            PERF_FLAG_FD_CLOEXEC | flags,
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
            config3: 0xdef0,
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
            sample: Some(SampleRate::Frequency(4000)),
            sample_type: crate::sample_type::IP | crate::sample_type::CALLCHAIN,
            wakeup: Wakeup::Watermark(4096),
            sample_id_all: true,
            mmap: true,
            mmap2: true,
            mmap_data: true,
            comm: true,
            comm_exec: true,
            task: true,
            context_switch: true,
            // Bit 28, beyond the bits checked below.
            namespaces: false,
            exclude_callchain_kernel: true,
            exclude_callchain_user: true,
            branch_sample_type: 0x2_c801,
            sample_regs_user: 0xff_0fff,
            sample_stack_user: 8192,
            sample_max_stack: 127,
            clockid: Some(libc::CLOCK_MONOTONIC),
        };
        let k = from_attr(&all);
        assert_eq!(k.size, 136);
        assert_eq!(
            (k.type_, k.config, k.config1, k.config2),
            (9, 0x1234, 0x5678, 0x9abc)
        );
        assert_eq!(k.config3, 0xdef0);
        assert_eq!(k.read_format, 12);
        assert_eq!((k.sample_period, k.sample_type), (4000, 0x21));
        assert_eq!(k.wakeup_events, 4096);
        assert_eq!(
            (k.sample_max_stack, k.clockid),
            (127, libc::CLOCK_MONOTONIC)
        );
        assert_eq!(
            (
                k.branch_sample_type,
                k.sample_regs_user,
                k.sample_stack_user
            ),
            (0x2_c801, 0xff_0fff, 8192)
        );
        // At their ABI offsets (72, 80, 88) in the bytes the kernel reads.
        let b = k.to_bytes();
        assert_eq!(u64::from_ne_bytes(b[72..80].try_into().unwrap()), 0x2_c801);
        assert_eq!(u64::from_ne_bytes(b[80..88].try_into().unwrap()), 0xff_0fff);
        assert_eq!(u32::from_ne_bytes(b[88..92].try_into().unwrap()), 8192);
        // Every bit from 0 to 26 except inherit_stat (11).
        assert_eq!(k.flags, ((1u64 << 27) - 1) & !(1 << 11));

        let one = |a: Attr| from_attr(&a).flags;
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
    fn sampling_flags_land_on_their_bits() {
        let one = |a: Attr| from_attr(&a).flags;
        let d = Attr::default;
        let cases: [(Attr, u64); 14] = [
            (Attr { mmap: true, ..d() }, 1 << 8),
            (Attr { comm: true, ..d() }, 1 << 9),
            (
                Attr {
                    sample: Some(SampleRate::Frequency(99)),
                    ..d()
                },
                1 << 10,
            ),
            (
                Attr {
                    sample: Some(SampleRate::Period(99)),
                    ..d()
                },
                0,
            ),
            (Attr { task: true, ..d() }, 1 << 13),
            (
                Attr {
                    wakeup: Wakeup::Watermark(1),
                    ..d()
                },
                1 << 14,
            ),
            (
                Attr {
                    mmap_data: true,
                    ..d()
                },
                1 << 17,
            ),
            (
                Attr {
                    sample_id_all: true,
                    ..d()
                },
                1 << 18,
            ),
            (
                Attr {
                    exclude_callchain_kernel: true,
                    ..d()
                },
                1 << 21,
            ),
            (
                Attr {
                    exclude_callchain_user: true,
                    ..d()
                },
                1 << 22,
            ),
            (Attr { mmap2: true, ..d() }, 1 << 23),
            (
                Attr {
                    comm_exec: true,
                    ..d()
                },
                1 << 24,
            ),
            (
                Attr {
                    clockid: Some(1),
                    ..d()
                },
                1 << 25,
            ),
            (
                Attr {
                    context_switch: true,
                    ..d()
                },
                1 << 26,
            ),
        ];
        for (a, bit) in cases {
            assert_eq!(one(a.clone()), bit, "{a:?}");
        }
        let k = from_attr(&Attr {
            sample: Some(SampleRate::Period(100_003)),
            wakeup: Wakeup::Events(7),
            ..d()
        });
        assert_eq!((k.sample_period, k.wakeup_events, k.flags), (100_003, 7, 0));
    }

    #[test]
    fn perf_data_bytes_fit_perf_6_1() {
        let a = Attr {
            sample: Some(SampleRate::Frequency(4000)),
            sample_type: crate::sample_type::IP | crate::sample_type::TID,
            ..Attr::default()
        };
        let full = a.to_kernel_bytes();
        let file = a.to_perf_data_bytes();
        assert_eq!((full.len(), file.len()), (136, 128));
        assert_eq!(u32::from_ne_bytes(file[4..8].try_into().unwrap()), 128);
        assert_eq!(full[8..128], file[8..128]);
        assert_eq!(u64::from_ne_bytes(file[16..24].try_into().unwrap()), 4000);
        assert_eq!(u64::from_ne_bytes(file[24..32].try_into().unwrap()), 3);
    }

    #[test]
    fn breakpoint_fields_use_the_union_slots() {
        let k = from_attr(&Attr::breakpoint(0x7000_1000, 8, bp::W));
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
