//! `pmx stat -I` on many CPUs runs its interval path thousands of times a
//! second, so once its buffers have grown it must not allocate: not in the
//! library's read loop (`pmx::stat::run_with`: tickers, group reads,
//! deltas), not in folding rows (`Aggregator`), not in writing interval
//! CSV (`IntervalCsv`) or JSON lines (`IntervalJson`). A counting
//! allocator checks it on the real kernel, system-wide, over 120
//! intervals.

use pmx::stat::{self, Aggregation, Aggregator, RunOptions, Scope, Tick};
use pmx_output::stat::{IntervalCsv, IntervalJson, IntervalRows};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; the
// counter is only an atomic add.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn the_interval_path_allocates_nothing_once_warm() {
    let groups = pmx::parse_event_list(
        "task-clock,cpu-clock,page-faults,context-switches,cpu-migrations,minor-faults",
    )
    .unwrap();
    let cpu = pmx_sys::caps::cpu_id(&pmx_sys::NativeCpuid).expect("cpuid");
    let db = pmx_events::Database::light(
        pmx_events::Target { cpu, host: true },
        std::path::Path::new("/"),
    );
    let mut plan = stat::plan(&groups, &db).unwrap();
    plan.group_software();
    let cpus = stat::online_cpus();
    let opts = RunOptions {
        scope: Scope::Cpus(cpus.clone()),
        command: Vec::new(),
        inherit: false,
        pin: None,
        duration: None,
        interval: Some(Duration::from_millis(10)),
        interval_count: Some(120),
        trace_tasks: false,
        hooks: Default::default(),
        tickers: true,
        spawn: Default::default(),
    };
    let mut aggregator = Aggregator::new(Aggregation::PerCpu);
    let mut csv = IntervalCsv::new(",");
    let mut json = IntervalJson::new();
    let mut at_tick: Vec<u64> = Vec::with_capacity(1000);
    let mut bytes = 0usize;
    let mut on_tick = |t: &Tick| {
        let rows = aggregator.rows(&plan, t.instances, None);
        let iv = IntervalRows {
            time: t.at.as_secs_f64(),
            plan: &plan,
            status: t.status,
            rows,
            metrics: &[],
        };
        bytes += csv.format(&iv).len();
        bytes += json.format(&iv).len();
        at_tick.push(ALLOCATIONS.load(Ordering::Relaxed));
    };
    match stat::run_with(&plan, &opts, &mut on_tick) {
        Ok(_) => {}
        Err(e) => {
            pmx_testkit::skip(format_args!("cannot count system-wide here: {e}"));
            return;
        }
    }
    assert!(at_tick.len() >= 120, "{} intervals", at_tick.len());
    assert!(bytes > 0);
    // From the 10th interval to the 120th: the loop, the reads, the rows
    // and the CSV of 110 intervals on every CPU, including two of the
    // loop's decisions where to run (every 50 intervals). Buffers are sized
    // for pmx waking up to 8 intervals late; on a machine so loaded that it
    // wakes later still, an interval may grow one, so a few intervals with
    // an allocation are allowed — an allocating path has one in every
    // interval.
    let with_alloc: Vec<usize> = (10..120)
        .filter(|&k| at_tick[k] != at_tick[k - 1])
        .collect();
    assert!(
        with_alloc.len() <= 3,
        "{} of 110 warm intervals allocated on {} CPUs (intervals {with_alloc:?})",
        with_alloc.len(),
        cpus.len()
    );
}
