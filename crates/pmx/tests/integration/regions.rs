//! Regions on the real kernel: exact page-fault counts per region and
//! thread, nesting, errors, the results file.

use pmx::region::{self, Config};
use pmx_testkit::workload::{thread_cpu_ns, tid, touch_pages};
use std::sync::Once;

static SETUP: Once = Once::new();

fn setup() {
    SETUP.call_once(|| {
        region::init(Config {
            events: Some("page-faults,task-clock".to_string()),
            ..Config::default()
        })
        .unwrap();
    });
}

fn faults(r: &pmx::results::RegionResults, name: &str, tid: i32) -> (u64, u64) {
    let rec = r
        .regions
        .iter()
        .find(|x| x.name == name && x.tid == tid)
        .unwrap_or_else(|| panic!("no record of {name} on {tid}: {r:?}"));
    (rec.counts[0].value, rec.calls)
}

#[test]
fn two_regions_on_two_threads_count_their_own_page_faults() {
    setup();
    let work = |a: usize, b: usize| {
        for _ in 0..2 {
            {
                let _r = pmx::region("alloc");
                touch_pages(a).unwrap();
            }
            pmx::region::scope("fill", || touch_pages(b).unwrap());
        }
        tid()
    };
    let other = std::thread::spawn(move || work(30, 10));
    let me = work(50, 20);
    let other = other.join().unwrap();
    let r = region::results();
    assert_eq!(r.events[0].name, "page-faults");
    assert_eq!(faults(&r, "alloc", me), (100, 2));
    assert_eq!(faults(&r, "fill", me), (40, 2));
    assert_eq!(faults(&r, "alloc", other), (60, 2));
    assert_eq!(faults(&r, "fill", other), (20, 2));
    // The thread's own view agrees.
    let mine = region::get("alloc").unwrap();
    assert_eq!((mine.counts[0].value, mine.tid), (100, me));
    // Both threads are numbered, differently.
    let threads: std::collections::BTreeSet<usize> = r
        .regions
        .iter()
        .filter(|x| x.tid == me || x.tid == other)
        .map(|x| x.thread)
        .collect();
    assert_eq!(threads.len(), 2);
}

#[test]
fn nested_regions_get_inclusive_counts() {
    setup();
    std::thread::spawn(|| {
        region::begin("outer").unwrap();
        touch_pages(5).unwrap();
        region::begin("inner").unwrap();
        touch_pages(7).unwrap();
        region::end("inner").unwrap();
        touch_pages(3).unwrap();
        region::end("outer").unwrap();
        let r = region::results();
        assert_eq!(faults(&r, "inner", tid()).0, 7);
        assert_eq!(faults(&r, "outer", tid()).0, 15);
    })
    .join()
    .unwrap();
}

#[test]
fn ending_a_region_that_is_not_innermost_is_an_error() {
    setup();
    std::thread::spawn(|| {
        assert!(matches!(
            region::end("never"),
            Err(region::Error::Nesting { .. })
        ));
        region::begin("a").unwrap();
        region::begin("b").unwrap();
        let e = region::end("a").unwrap_err();
        assert!(
            e.to_string().contains("innermost open region is 'b'"),
            "{e}"
        );
        region::end("b").unwrap();
        region::end("a").unwrap();
    })
    .join()
    .unwrap();
}

#[test]
fn task_clock_follows_the_thread_cpu_time_inside() {
    setup();
    std::thread::spawn(|| {
        let c0 = thread_cpu_ns();
        let r = pmx::region("spin");
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        drop(r);
        let cpu = (thread_cpu_ns() - c0) as f64;
        let rec = region::get("spin").unwrap();
        let task = rec.counts[1].value as f64;
        // The thread's CPU clock around the region and task-clock inside
        // it agree (two clocks of the scheduler, sampled differently).
        assert!(
            (task - cpu).abs() <= cpu * 0.2 + 1e6,
            "task-clock {task} ns, thread CPU {cpu} ns"
        );
        assert!(rec.wall_ns >= 30_000_000);
    })
    .join()
    .unwrap();
}

#[test]
fn the_results_file_reads_back_with_the_calibration() {
    setup();
    std::thread::spawn(|| {
        pmx::region::scope("file", || touch_pages(4).unwrap());
    })
    .join()
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let written = region::write_results(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let back = pmx::results::RegionResults::from_json(&text).unwrap();
    assert_eq!(back, written);
    let cal = back.calibration.expect("calibration measured");
    assert!(cal.pair_ns > 0.0 && cal.pairs > 0);
    // An empty region takes no page fault (the machine may add a stray one
    // over the 250 calibration pairs, not one per pair).
    assert!(cal.counts[0] < 0.05, "{:?}", cal.counts);
    assert!(back
        .regions
        .iter()
        .any(|r| r.name == "file" && r.counts[0].value == 4));
    assert!(back.regions.iter().all(|r| !r.name.starts_with('\0')));
}
