//! The periodic recorder on a simulated MSR device (fixture files, a
//! register at byte 8·N) whose counters the test advances between reads:
//! the Delta transform gives the exact per-CPU CSV, wrap-around included;
//! and on the real kernel with a per-CPU perf event, the background thread
//! fills the buffer and stops.

use pmx::recorder::{MsrHandle, PerfHandle, Recorder, Transform};
use pmx_msr::{Mode, MsrDevice, MsrRoot};
use pmx_testkit::msr::{msr_files, set};
use std::sync::Arc;
use std::time::Duration;

const IA32_FIXED_CTR0: u32 = 0x309;
const IA32_TIME_STAMP_COUNTER: u32 = 0x10;

#[test]
fn delta_on_a_simulated_msr_device_gives_the_exact_csv() {
    let dir = msr_files(2);
    let p = dir.path();
    // Instructions retired (48-bit fixed counter 0) and the TSC.
    set(p, 0, IA32_FIXED_CTR0, 1_000);
    set(p, 1, IA32_FIXED_CTR0, 0xFFFF_FFFF_FF00); // about to wrap
    set(p, 0, IA32_TIME_STAMP_COUNTER, 5_000_000);
    set(p, 1, IA32_TIME_STAMP_COUNTER, 5_000_100);
    let dev = Arc::new(MsrDevice::open(&MsrRoot::new(p), &[0, 1], Mode::Read).unwrap());
    let mut rec = Recorder::new(Duration::from_millis(10), 3);
    rec.add(
        MsrHandle::new("instructions", dev.clone(), IA32_FIXED_CTR0, &[0, 1], 48),
        Transform::Delta,
    );
    rec.add(
        MsrHandle::new("tsc", dev, IA32_TIME_STAMP_COUNTER, &[0, 1], 64),
        Transform::None,
    );
    let mut t = 0u64;
    rec.with_clock(Box::new(move || {
        t += 10_000_000;
        t
    }));
    rec.read_baseline().unwrap();
    // Per step: fixed counter 0 and TSC on CPUs 0 and 1.
    let steps: [([u64; 2], [u64; 2]); 3] = [
        ([1_500, 0xFFFF_FFFF_FFFF], [6_000_000, 6_000_100]),
        ([1_500, 0x0000_0000_00FF], [7_000_000, 7_000_100]), // CPU 1 wrapped
        ([9_000, 0x0000_0000_10FF], [8_000_000, 8_000_100]),
    ];
    for (ctr, tsc) in steps {
        for cpu in 0..2usize {
            set(p, cpu as u32, IA32_FIXED_CTR0, ctr[cpu]);
            set(p, cpu as u32, IA32_TIME_STAMP_COUNTER, tsc[cpu]);
        }
        assert!(rec.sample().unwrap());
    }
    assert!(!rec.sample().unwrap(), "the buffer holds 3 samples");
    assert_eq!(
        rec.to_csv(),
        "sample,time_s,cpu,instructions,tsc\n\
         1,0.010000000,0,500,6000000\n\
         1,0.010000000,1,255,6000100\n\
         2,0.020000000,0,0,7000000\n\
         2,0.020000000,1,256,7000100\n\
         3,0.030000000,0,7500,8000000\n\
         3,0.030000000,1,4096,8000100\n"
    );
}

#[test]
fn the_background_thread_fills_the_buffer_and_stops() {
    let cpus: Vec<u32> = (0..std::thread::available_parallelism().map_or(1, |n| n.get()) as u32)
        .take(2)
        .collect();
    let h = match PerfHandle::open("cpu-clock", &cpus) {
        Ok(h) => h,
        Err(e) => {
            pmx_testkit::skip(format_args!("per-CPU cpu-clock cannot be opened here: {e}"));
            return;
        }
    };
    let mut rec = Recorder::new(Duration::from_millis(5), 6);
    rec.add(h, Transform::Delta);
    let rec = rec.start().unwrap().wait().unwrap();
    assert_eq!(rec.len(), 6);
    assert!(rec.is_full());
    let mut last = 0;
    for i in 0..6 {
        let (t, v) = rec.get(i, 0).unwrap();
        assert!(t > last, "time goes forward");
        last = t;
        // cpu-clock per CPU advances with wall time: about 5 ms a sample
        // (more after a late wake-up), never more than the time elapsed.
        for &ns in v {
            assert!(ns <= t + 1_000_000, "sample {i}: {ns} ns in {t} ns");
        }
    }
    assert!(last >= 6 * 5_000_000 - 1_000_000, "{last}");
    let csv = rec.to_csv();
    assert_eq!(csv.lines().count(), 1 + 6 * cpus.len(), "{csv}");
}

#[test]
fn stop_keeps_the_samples_so_far() {
    let h = match PerfHandle::open("cpu-clock", &[0]) {
        Ok(h) => h,
        Err(e) => {
            pmx_testkit::skip(format_args!("per-CPU cpu-clock cannot be opened here: {e}"));
            return;
        }
    };
    let mut rec = Recorder::new(Duration::from_millis(2), 100_000);
    rec.add(h, Transform::Delta);
    let running = rec.start().unwrap();
    std::thread::sleep(Duration::from_millis(30));
    let rec = running.stop().unwrap();
    assert!(!rec.is_full());
    assert!(!rec.is_empty() && rec.len() < 100, "{}", rec.len());
}
