//! Sampling attrs on the real kernel: what [`Attr`]'s sampling fields ask
//! for is what the ring buffer then holds.

use crate::mmap::{record, Mmap, RecordHeader};
use crate::{event_type, sample_type, software, Attr, Counter, SampleRate, Target};
use std::time::Duration;

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap())
}

/// Burn `d` of this thread's own CPU time (not of wall-clock time: on a
/// loaded machine the thread may get a fraction of the CPU, and a
/// cpu-clock sampler counts only the time it runs).
fn spin(d: Duration) -> u64 {
    let start = thread_cpu();
    let mut x = 0u64;
    while thread_cpu().saturating_sub(start) < d {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
    }
    x
}

/// This thread's CPU time.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u32 }
}

/// Open a cpu-clock sampler on this thread with a ring, or `None` (with a
/// message) where perf events are unavailable.
fn sampler(attr: &Attr) -> Option<(Counter, Mmap)> {
    let c = match Counter::open(attr, Target { pid: 0, cpu: -1 }, None) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("skipped: cannot open a cpu-clock sampler: {e}");
            return None;
        }
    };
    let m = Mmap::new(&c, 16).expect("ring of 16 pages");
    Some((c, m))
}

#[test]
fn a_fixed_period_gives_samples_of_this_thread_with_that_period() {
    let attr = Attr {
        type_: event_type::SOFTWARE,
        config: software::CPU_CLOCK,
        disabled: true,
        // cpu-clock counts nanoseconds: one sample per 200 µs on the CPU.
        sample: Some(SampleRate::Period(200_000)),
        sample_type: sample_type::IP | sample_type::TID | sample_type::TIME | sample_type::PERIOD,
        ..Attr::default()
    };
    let Some((c, mut ring)) = sampler(&attr) else {
        return;
    };
    c.enable(false).unwrap();
    spin(Duration::from_millis(40));
    c.disable(false).unwrap();
    let (tid, pid) = (gettid(), std::process::id());
    let mut samples = 0;
    let mut last_time = 0;
    ring.read_records(|r| {
        let h = RecordHeader::parse(r).unwrap();
        if h.type_ != record::SAMPLE {
            return;
        }
        // IP, pid/tid, TIME, PERIOD: 8 + 4 * 8 bytes.
        assert_eq!(h.size, 40);
        assert_eq!((u32_at(r, 16), u32_at(r, 20)), (pid, tid));
        let time = u64_at(r, 24);
        assert!(time >= last_time, "times go backwards in one ring");
        last_time = time;
        assert_eq!(u64_at(r, 32), 200_000, "the period");
        samples += 1;
    });
    // 40 ms of CPU at one sample per 0.2 ms; the thread may be preempted.
    assert!(samples >= 20, "{samples} samples");
}

#[test]
fn a_frequency_and_side_band_records_carry_the_sample_id() {
    let attr = Attr {
        type_: event_type::SOFTWARE,
        config: software::CPU_CLOCK,
        disabled: true,
        sample: Some(SampleRate::Frequency(2000)),
        sample_type: sample_type::IP | sample_type::TID | sample_type::PERIOD,
        comm: true,
        sample_id_all: true,
        ..Attr::default()
    };
    let Some((c, mut ring)) = sampler(&attr) else {
        return;
    };
    let name = |n: &[u8]| {
        // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16
        // bytes; only this thread's name changes.
        unsafe { libc::prctl(libc::PR_SET_NAME, n.as_ptr()) };
    };
    c.enable(false).unwrap();
    name(b"pmx-sampler\0");
    spin(Duration::from_millis(30));
    c.disable(false).unwrap();
    name(b"pmx-perf-test\0");
    let (tid, pid) = (gettid(), std::process::id());
    let mut comm = None;
    let mut periods = Vec::new();
    ring.read_records(|r| {
        let h = RecordHeader::parse(r).unwrap();
        match h.type_ {
            record::COMM => {
                // pid, tid, name padded to 8, then the TID trailer.
                let end = r[16..].iter().position(|&b| b == 0).unwrap();
                let text = String::from_utf8_lossy(&r[16..16 + end]).into_owned();
                let trailer = r.len() - 8;
                comm = Some((text, u32_at(r, trailer), u32_at(r, trailer + 4)));
            }
            record::SAMPLE => periods.push(u64_at(r, 24)),
            _ => {}
        }
    });
    assert_eq!(comm, Some(("pmx-sampler".to_string(), pid, tid)));
    assert!(!periods.is_empty());
    // In frequency mode the kernel re-computes the period as it goes: at
    // 2 kHz it converges toward 500 µs of cpu-clock.
    assert!(
        periods.iter().any(|&p| p != periods[0]) || periods[0] != 2000,
        "periods {periods:?} look like a fixed period of 2000"
    );
}

#[test]
fn call_chains_start_with_a_context_marker() {
    let attr = Attr {
        type_: event_type::SOFTWARE,
        config: software::CPU_CLOCK,
        disabled: true,
        sample: Some(SampleRate::Period(500_000)),
        sample_type: sample_type::IP | sample_type::CALLCHAIN,
        exclude_callchain_kernel: true,
        sample_max_stack: 8,
        ..Attr::default()
    };
    let Some((c, mut ring)) = sampler(&attr) else {
        return;
    };
    c.enable(false).unwrap();
    spin(Duration::from_millis(20));
    c.disable(false).unwrap();
    const CONTEXT_USER: u64 = (-512i64) as u64;
    let mut chains = 0;
    ring.read_records(|r| {
        if RecordHeader::parse(r).unwrap().type_ != record::SAMPLE {
            return;
        }
        let nr = u64_at(r, 16) as usize;
        assert!((1..=8 + 1).contains(&nr), "nr {nr} with sample_max_stack 8");
        // No kernel part was asked for: the chain is the user marker and
        // user addresses.
        assert_eq!(u64_at(r, 24), CONTEXT_USER);
        chains += 1;
    });
    assert!(chains > 5, "{chains} chains");
}

/// What `--call-graph dwarf` asks for: the user registers of perf's mask
/// and a copy of the user stack; the sample's `rsp` is this thread's
/// stack and its `rip` the sample's ip.
#[test]
fn user_registers_and_stack_copies() {
    use pmx_perfdata::format::{regs_abi, regs_x86_64 as x};
    let attr = Attr {
        type_: event_type::SOFTWARE,
        config: software::CPU_CLOCK,
        disabled: true,
        exclude_kernel: true,
        sample: Some(SampleRate::Period(500_000)),
        sample_type: sample_type::IP | sample_type::REGS_USER | sample_type::STACK_USER,
        sample_regs_user: x::DWARF_MASK,
        sample_stack_user: 4096,
        exclude_callchain_user: true,
        ..Attr::default()
    };
    let Some((c, mut ring)) = sampler(&attr) else {
        return;
    };
    let file_attr = pmx_perfdata::PerfEventAttr::parse(&attr.to_perf_data_bytes(), 0).unwrap();
    let here = &file_attr as *const _ as u64;
    c.enable(false).unwrap();
    spin(Duration::from_millis(20));
    c.disable(false).unwrap();
    let mut samples = 0;
    ring.read_records(|r| {
        if RecordHeader::parse(r).unwrap().type_ != record::SAMPLE {
            return;
        }
        let s = pmx_perfdata::read::parse_sample(r, 0, &file_attr, 0).unwrap();
        assert_eq!(s.user_regs.abi, regs_abi::ABI_64);
        assert_eq!(
            s.user_regs.values.len(),
            20 * 8,
            "20 registers in perf's mask"
        );
        assert_eq!(s.user_regs.get(x::IP), Some(s.ip));
        let sp = s.user_regs.get(x::SP).unwrap();
        // The spinning frame is below this test's frame, within a few pages.
        assert!(
            sp < here && here - sp < 64 * 1024,
            "sp {sp:#x}, a local at {here:#x}"
        );
        assert!(!s.user_stack.is_empty() && s.user_stack.len() <= 4096);
        samples += 1;
    });
    assert!(samples > 5, "{samples} samples");
}

#[test]
fn read_into_copies_whole_records_across_the_rings_end() {
    let attr = Attr {
        type_: event_type::SOFTWARE,
        config: software::CPU_CLOCK,
        disabled: true,
        sample: Some(SampleRate::Period(200_000)),
        sample_type: sample_type::IP | sample_type::TID | sample_type::TIME | sample_type::PERIOD,
        ..Attr::default()
    };
    let Some((c, mut ring)) = sampler(&attr) else {
        return;
    };
    // A 16-page ring of 40-byte samples read in several rounds: some
    // rounds' bytes wrap around the ring's end.
    let (tid, pid) = (gettid(), std::process::id());
    let (mut bytes, mut samples, mut last_time) = (Vec::new(), 0, 0);
    for _ in 0..8 {
        c.enable(false).unwrap();
        spin(Duration::from_millis(50));
        c.disable(false).unwrap();
        let before = bytes.len();
        let n = ring.read_into(&mut bytes);
        assert_eq!(bytes.len() - before, n);
        assert!(!ring.has_data(), "the ring was emptied");
    }
    let mut at = 0;
    while at < bytes.len() {
        let h = RecordHeader::parse(&bytes[at..]).unwrap();
        let r = &bytes[at..at + h.size as usize];
        if h.type_ == record::SAMPLE {
            assert_eq!(h.size, 40);
            assert_eq!((u32_at(r, 16), u32_at(r, 20)), (pid, tid));
            assert!(u64_at(r, 24) >= last_time, "times go backwards");
            last_time = u64_at(r, 24);
            assert_eq!(u64_at(r, 32), 200_000, "the period");
            samples += 1;
        }
        at += h.size as usize;
    }
    assert_eq!(at, bytes.len(), "whole records");
    // 400 ms of CPU at one sample per 0.2 ms (50 ms, 10 KB, per round):
    // more than the 64 KiB ring holds, so the reads went round it.
    assert!(samples * 40 > 16 * 4096, "{samples} samples");
}
