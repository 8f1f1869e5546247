use pmx_kernels::cache::{parse_size, CacheInfo};
use pmx_kernels::chase::{Chase, LINE};
use pmx_kernels::fma::{self, Width};
use pmx_kernels::{ops, runner, triad::Triad};

fn rusage() -> libc::rusage {
    // SAFETY: a zeroed struct filled by the kernel.
    unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut r);
        r
    }
}

#[test]
fn touching_pages_faults_once_per_page() {
    // Warm the code path first so its own pages are in.
    ops::touch_pages(1).unwrap();
    let mut best = i64::MAX;
    for _ in 0..5 {
        let before = rusage().ru_minflt;
        ops::touch_pages(300).unwrap();
        best = best.min(rusage().ru_minflt - before);
    }
    assert_eq!(best, 300, "minor faults of touching 300 fresh pages");
}

#[test]
fn ping_pong_blocks_each_round() {
    ops::ping_pong(1).unwrap();
    let switches = || {
        let r = rusage();
        r.ru_nvcsw + r.ru_nivcsw
    };
    let before = switches();
    ops::ping_pong(200).unwrap();
    let switched = switches() - before;
    // On one CPU the parent leaves it once a round: blocked in its read,
    // or preempted by the child it woke.
    assert!(switched >= 200, "context switches: {switched}");
}

#[test]
fn the_chase_is_one_cycle_through_every_line() {
    let c = Chase::new(64 * LINE, 7);
    assert_eq!(c.bytes(), 64 * LINE);
    let start = c.run(0);
    let mut seen = std::collections::HashSet::new();
    for k in 1..=64 {
        assert!(seen.insert(c.run(k)), "line revisited after {k} steps");
    }
    assert_eq!(c.run(64), start, "64 steps come back to the start");
}

#[test]
fn fma_flops_are_counted_per_width() {
    assert!(Width::Scalar.available());
    for w in fma::available() {
        assert_eq!(
            fma::run(w, 10),
            Some(10 * fma::ACCUMULATORS * w.lanes() * 2)
        );
        assert!(fma::peak(w, 10_000, 2).unwrap() > 1e6, "{w:?}");
    }
    assert_eq!(Width::from_name("avx2"), Some(Width::Avx2));
}

#[test]
fn triad_counts_stream_bytes() {
    let mut t = Triad::new(1 << 16);
    assert_eq!(t.bytes(), 24 << 16);
    assert!(t.best_bandwidth(3) > 1e8);
}

#[test]
fn cache_sizes_parse_and_read() {
    assert_eq!(parse_size("32K"), Some(32768));
    assert_eq!(parse_size("32M"), Some(32 << 20));
    assert_eq!(parse_size("x"), None);
    let dir = tempdir();
    let idx = dir.join("sys/devices/system/cpu/cpu0/cache");
    for (i, level, kind, size) in [
        (0, 1, "Data", "48K"),
        (1, 1, "Instruction", "32K"),
        (2, 2, "Unified", "2048K"),
        (3, 3, "Unified", "105M"),
    ] {
        let d = idx.join(format!("index{i}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("level"), format!("{level}\n")).unwrap();
        std::fs::write(d.join("type"), format!("{kind}\n")).unwrap();
        std::fs::write(d.join("size"), format!("{size}\n")).unwrap();
    }
    let c = CacheInfo::read(&dir);
    assert_eq!(
        (c.l1d, c.l2, c.llc),
        (Some(48 << 10), Some(2 << 20), Some(105 << 20))
    );
    assert_eq!(CacheInfo::read(&dir.join("none")), CacheInfo::default());
}

fn tempdir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("pmx-kernels-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn the_runner_names_its_kernels_and_refuses_bad_ones() {
    let args = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    runner::run(&args("loop 1000")).unwrap();
    runner::run(&args("pages 3")).unwrap();
    runner::run(&args("fma scalar 10")).unwrap();
    runner::run(&args("chase 4096 100")).unwrap();
    assert!(runner::run(&args("nope 1"))
        .unwrap_err()
        .0
        .contains("no kernel named"));
    assert!(runner::run(&args("loop x"))
        .unwrap_err()
        .0
        .contains("not a number"));
    assert!(runner::run(&args("fma wide 1"))
        .unwrap_err()
        .0
        .contains("width"));
    assert!(runner::run(&[]).is_err());
}
