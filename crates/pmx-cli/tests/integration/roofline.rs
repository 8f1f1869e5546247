//! `pmx roofline -- CMD`: the ceilings are measured (here too, where no
//! FP or memory-controller counter exists), the chart is valid SVG with
//! each ceiling's line and label, the JSON has the documented shape, and
//! the DRAM ceiling is within the issue's 15% of a STREAM triad compiled
//! here with `cc -O3`, and the FMA ceiling within its 20% of clock ×
//! FLOPs per cycle, gated on a multiply-add kernel of the test's own —
//! each pair measured in turns, each side's best kept.

use crate::common::pmx;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Tags open and close in order (`<x …/>` closes itself); nothing but
/// whitespace outside the root element.
fn well_formed(svg: &str) -> bool {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = svg.trim();
    if !rest.starts_with("<svg") {
        return false;
    }
    while let Some(i) = rest.find('<') {
        let Some(j) = rest[i..].find('>') else {
            return false;
        };
        let tag = &rest[i + 1..i + j];
        if let Some(name) = tag.strip_prefix('/') {
            if stack.pop().as_deref() != Some(name.trim()) {
                return false;
            }
        } else if !tag.ends_with('/') {
            stack.push(tag.split_whitespace().next().unwrap_or("").to_string());
        }
        rest = &rest[i + j + 1..];
    }
    stack.is_empty()
}

/// The roofline tests one at a time: each measures the machine's
/// ceilings with every core it may use, and the others' triads and
/// multiply-adds beside it would be measured too.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

fn roofline(dir: &Path) -> (Value, String) {
    let svg = dir.join("r.svg");
    let out = pmx(&[
        "roofline",
        "--json",
        "--threads",
        "1",
        "-o",
        svg.to_str().unwrap(),
        "--",
        "true",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    (v, std::fs::read_to_string(svg).expect("chart written"))
}

#[test]
fn roofline_measures_ceilings_writes_the_chart_and_explains_the_point() {
    let _one_at_a_time = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (v, svg) = roofline(dir.path());
    assert_eq!(v["threads"], 1);
    let ceilings = v["ceilings"].as_array().unwrap();
    let named = |n: &str| {
        ceilings
            .iter()
            .find(|c| c["name"] == n)
            .unwrap_or_else(|| panic!("{n}: {v}"))
    };
    assert_eq!(named("DRAM")["kind"], "memory");
    assert_eq!(named("scalar")["kind"], "compute");
    memory_ceilings_fit_their_level(ceilings);
    for c in ceilings {
        assert!(
            c["one_core"].as_f64().unwrap() > 0.0 && c["all_cores"].as_f64().unwrap() > 0.0,
            "{c}"
        );
        assert!(c["how"].is_string());
    }
    let p = &v["point"];
    assert!(p["seconds"].as_f64().unwrap() >= 0.0);
    if !Path::new("/sys/bus/event_source/devices/uncore_imc_0").exists() {
        assert_eq!(p["available"], false, "{p}");
        assert!(
            p["reason"].as_str().unwrap().contains("memory-controller"),
            "{p}"
        );
        assert!(p["intensity"].is_null());
    }
    assert!(well_formed(&svg), "{svg}");
    assert!(
        svg.matches("class=\"memory-roof\"").count()
            == ceilings.iter().filter(|c| c["kind"] == "memory").count()
    );
    assert!(
        svg.matches("class=\"compute-roof\"").count()
            == ceilings.iter().filter(|c| c["kind"] == "compute").count()
    );
    assert!(
        svg.contains(">DRAM ") && svg.contains(">scalar "),
        "labels: {svg}"
    );
    if p["available"] == false {
        assert!(svg.contains("point unavailable"), "{svg}");
    }
    let bad = pmx(&["roofline", "-o", "chart.jpg", "--", "true"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("name a .svg or .png file"));
}

/// Each memory ceiling carries its buffer, sized for its level (a cache
/// ceiling's three arrays fill half the cache; DRAM's are 4 × the
/// last-level cache each), and each measured rate is positive.
fn memory_ceilings_fit_their_level(ceilings: &[Value]) {
    let caches = pmx::kernels::cache::CacheInfo::read(Path::new("/"));
    let mut order = Vec::new();
    for (name, level) in [("L2", caches.l2), ("L3", caches.llc), ("DRAM", caches.llc)] {
        let Some(c) = ceilings.iter().find(|c| c["name"] == name) else {
            continue;
        };
        let buffer = c["buffer_bytes"].as_u64().unwrap_or_else(|| panic!("{c}"));
        if let Some(size) = level {
            match name {
                "DRAM" => assert!(buffer >= 3 * 4 * size - 3 * 8, "{c}"),
                _ => assert!(buffer <= size / 2 && buffer > size / 4, "{c}"),
            }
        }
        order.push((name, c["one_core"].as_f64().unwrap()));
    }
    assert!(order.iter().any(|o| o.0 == "DRAM"), "{ceilings:?}");
    // The rates themselves are the machine's: on a loaded machine every
    // try of one level can be preempted (L3 measured at half of DRAM's
    // rate at load 10), so one run's order is shown here; the order of
    // the bests over several runs is asserted beside STREAM's triad.
    assert!(order.iter().all(|o| o.1 > 0.0), "{order:?}");
    if !order.windows(2).all(|w| w[0].1 >= w[1].1) {
        eprintln!("measured out of order (a busy machine?): {order:?}");
    }
    for c in ceilings.iter().filter(|c| c["kind"] == "compute") {
        assert!(c["buffer_bytes"].is_null(), "{c}");
    }
}

/// `-o r.png`: the chart as a PNG of 800 × 560 with the roofs drawn in
/// their colours and dark text; `fma_check` in the JSON compares the
/// widest compute ceiling with cores × clock × FLOPs per cycle, its
/// arithmetic as documented (docs/roofline.md).
#[test]
fn roofline_writes_a_png_and_checks_the_fma_ceiling() {
    let _one_at_a_time = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.png");
    let args = [
        "roofline",
        "--json",
        "--threads",
        "1",
        "-o",
        path.to_str().unwrap(),
        "--",
        "true",
    ];
    let out = pmx(&args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let bytes = std::fs::read(&path).expect("the PNG is written");
    let mut reader = png::Decoder::new(std::io::Cursor::new(&bytes))
        .read_info()
        .expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).expect("a frame");
    assert_eq!(
        (info.width, info.height, info.color_type),
        (800, 560, png::ColorType::Rgb)
    );
    let px: Vec<&[u8]> = buf[..info.buffer_size()].chunks(3).collect();
    // The first roof's colour (#1f77b4, the DRAM roof) and dark text.
    let near = |p: &[u8], c: [u8; 3]| p.iter().zip(c).all(|(a, b)| a.abs_diff(b) < 10);
    let roof = px.iter().filter(|p| near(p, [0x1f, 0x77, 0xb4])).count();
    assert!(roof > 100, "only {roof} pixels of the DRAM roof");
    assert!(
        px.iter().filter(|p| p.iter().all(|&c| c < 0x50)).count() > 200,
        "no text"
    );
    assert!(px.iter().filter(|p| p.iter().all(|&c| c == 0xff)).count() > px.len() / 2);

    let f = &v["fma_check"];
    let num = |k: &str| f[k].as_f64().unwrap_or_else(|| panic!("{k}: {f}"));
    let widest = v["ceilings"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|c| c["kind"] == "compute")
        .unwrap();
    assert_eq!(f["width"], widest["name"]);
    assert_eq!(f["cores"], 1);
    assert_eq!(num("measured"), widest["all_cores"].as_f64().unwrap());
    let expected = num("cores") * num("hz") * num("flops_per_cycle");
    assert!((num("expected") - expected).abs() <= 1e-9 * expected, "{f}");
    assert!(
        (num("ratio") - num("measured") / expected).abs() < 1e-9,
        "{f}"
    );
    let one = v["ceilings"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|c| c["kind"] == "compute")
        .unwrap();
    let one_ratio = one["one_core"].as_f64().unwrap() / (num("hz") * num("flops_per_cycle"));
    assert!((num("one_core_ratio") - one_ratio).abs() < 1e-9, "{f}");
    assert_eq!(f["within"], (one_ratio - 1.0).abs() <= 0.2, "{f}");
    assert!(num("flops_per_cycle") >= 2.0 && f["basis"].as_str().unwrap().contains("doubles"));
    // One run's `within` is not asserted here: under load the FMA rate
    // falls while the clock's integer adds do not (0.19–0.47 of the figure
    // at load 13 on this 2-vCPU guest, 0.99 when quiet); the issue's bound
    // is asserted, load-proof, by the_fma_ceiling_is_within_20_percent_of_the_hardware.
    if f["within"] == false {
        eprintln!("the FMA ceiling is not within 20% here (a busy machine?): {f}");
    }
}

const STREAM_TRIAD: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
    long n = atol(argv[1]);
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c) return 1;
    for (long i = 0; i < n; i++) { a[i] = 0; b[i] = 1; c[i] = 2; }
    double best = 1e30, s = 3.0;
    for (int k = 0; k < 5; k++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double t = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
        if (t < best) best = t;
    }
    printf("%f %f\n", 24.0 * n / best, a[n / 2]);
    return 0;
}
"#;

/// The issue's bound: the DRAM ceiling within 15% of STREAM's triad.
const STREAM_TOLERANCE: f64 = 0.15;

/// pmx's DRAM ceiling (one core) within [`STREAM_TOLERANCE`] of a STREAM
/// triad compiled here. The triad is built with `cc -O3` and no `-march`:
/// vectorized for the baseline x86-64 instruction set, as pmx's kernel
/// is compiled (at `-O2` GCC leaves the loop scalar and one core moves
/// ~30% less; with `-march=native` up to ~30% more). On a loaded machine
/// any one measurement may be slowed (a preempted pass, another
/// builder's memory traffic), never sped up, so both sides are measured
/// in turns, each keeping its best so far (STREAM keeps its best pass
/// too), until the two bests agree or the rounds run out. The bests of
/// the memory levels must be in their order, L2 ≥ L3 ≥ DRAM, too.
#[test]
fn the_dram_ceiling_agrees_with_a_stream_triad_built_here() {
    let _one_at_a_time = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("triad.c");
    let bin = dir.path().join("triad");
    std::fs::write(&src, STREAM_TRIAD).unwrap();
    let built = Command::new("cc")
        .args(["-O3", "-o"])
        .arg(&bin)
        .arg(&src)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        pmx_testkit::skip(format_args!("no C compiler (cc) to build the STREAM triad"));
        return;
    }
    let llc = pmx::kernels::cache::CacheInfo::read(Path::new("/"))
        .llc
        .unwrap_or(32 << 20);
    let n = pmx::kernels::triad::elements_beyond(llc, 4);
    let stream = || -> f64 {
        let out = Command::new(&bin).arg(n.to_string()).output().unwrap();
        let s = String::from_utf8_lossy(&out.stdout);
        s.split_whitespace()
            .next()
            .and_then(|x| x.parse().ok())
            .unwrap_or(0.0)
    };
    // Each memory level's best one-core rate so far: L2, L3, DRAM (a
    // level this machine does not report stays 0 and is left out).
    let (mut best, mut theirs, mut seen) = ([0.0f64; 3], 0.0f64, Vec::new());
    for round in 0..10 {
        theirs = theirs.max(stream());
        let (v, _) = roofline(dir.path());
        for (i, name) in ["L2", "L3", "DRAM"].iter().enumerate() {
            let c = v["ceilings"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == *name);
            if let Some(rate) = c.and_then(|c| c["one_core"].as_f64()) {
                best[i] = best[i].max(rate);
            }
        }
        theirs = theirs.max(stream());
        let ours = best[2];
        let ours_all = best.map(|b| format!("{b:.3e}")).join(" ");
        seen.push(format!("pmx {ours_all} B/s, STREAM {theirs:.3e} B/s"));
        let levels: Vec<f64> = best.iter().copied().filter(|&b| b > 0.0).collect();
        let ordered = levels.windows(2).all(|w| w[0] >= w[1]);
        if round >= 1 && ordered && (ours / theirs - 1.0).abs() <= STREAM_TOLERANCE {
            return;
        }
    }
    panic!("the memory ceilings' bests (L2, L3, DRAM) out of order, or DRAM's more than 15% from STREAM's triad, by round: {seen:?}");
}

/// A multiply-add kernel of the test's own, for [`the_fma_ceiling_is_within_20_percent_of_the_hardware`]:
/// `iterations` × 10 independent `acc += m·a` on full vectors of `width`
/// (`avx2`: ymm, `avx512`: zmm), written here in assembly, not pmx's;
/// its best FLOP rate of 5 runs, or `None` for another width or CPU.
fn own_fma_rate(width: &str, iterations: u64) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        let lanes = match width {
            "avx2" if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") => 4,
            "avx512" if is_x86_feature_detected!("avx512f") => 8,
            _ => return None,
        };
        let consts = [0.999_999f64, 1e-9];
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = std::time::Instant::now();
            // SAFETY: the width's features were detected above; registers
            // only, besides reading `consts`; every vector register is
            // caller-saved in the C ABI (`clobber_abi`).
            unsafe {
                if lanes == 4 {
                    std::arch::asm!(
                        "vbroadcastsd ymm10, qword ptr [rsi]",
                        "vbroadcastsd ymm11, qword ptr [rsi + 8]",
                        "vmovapd ymm0, ymm11", "vmovapd ymm1, ymm11", "vmovapd ymm2, ymm11",
                        "vmovapd ymm3, ymm11", "vmovapd ymm4, ymm11", "vmovapd ymm5, ymm11",
                        "vmovapd ymm6, ymm11", "vmovapd ymm7, ymm11", "vmovapd ymm8, ymm11",
                        "vmovapd ymm9, ymm11",
                        "2:",
                        "vfmadd231pd ymm0, ymm10, ymm11", "vfmadd231pd ymm1, ymm10, ymm11",
                        "vfmadd231pd ymm2, ymm10, ymm11", "vfmadd231pd ymm3, ymm10, ymm11",
                        "vfmadd231pd ymm4, ymm10, ymm11", "vfmadd231pd ymm5, ymm10, ymm11",
                        "vfmadd231pd ymm6, ymm10, ymm11", "vfmadd231pd ymm7, ymm10, ymm11",
                        "vfmadd231pd ymm8, ymm10, ymm11", "vfmadd231pd ymm9, ymm10, ymm11",
                        "dec rcx",
                        "jnz 2b",
                        "vzeroupper",
                        in("rsi") consts.as_ptr(),
                        inout("rcx") iterations.max(1) => _,
                        clobber_abi("C"),
                        options(nostack, readonly),
                    );
                } else {
                    std::arch::asm!(
                        "vbroadcastsd zmm10, qword ptr [rsi]",
                        "vbroadcastsd zmm11, qword ptr [rsi + 8]",
                        "vmovapd zmm0, zmm11", "vmovapd zmm1, zmm11", "vmovapd zmm2, zmm11",
                        "vmovapd zmm3, zmm11", "vmovapd zmm4, zmm11", "vmovapd zmm5, zmm11",
                        "vmovapd zmm6, zmm11", "vmovapd zmm7, zmm11", "vmovapd zmm8, zmm11",
                        "vmovapd zmm9, zmm11",
                        "2:",
                        "vfmadd231pd zmm0, zmm10, zmm11", "vfmadd231pd zmm1, zmm10, zmm11",
                        "vfmadd231pd zmm2, zmm10, zmm11", "vfmadd231pd zmm3, zmm10, zmm11",
                        "vfmadd231pd zmm4, zmm10, zmm11", "vfmadd231pd zmm5, zmm10, zmm11",
                        "vfmadd231pd zmm6, zmm10, zmm11", "vfmadd231pd zmm7, zmm10, zmm11",
                        "vfmadd231pd zmm8, zmm10, zmm11", "vfmadd231pd zmm9, zmm10, zmm11",
                        "dec rcx",
                        "jnz 2b",
                        "vzeroupper",
                        in("rsi") consts.as_ptr(),
                        inout("rcx") iterations.max(1) => _,
                        clobber_abi("C"),
                        options(nostack, readonly),
                    );
                }
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        Some((iterations.max(1) * 10 * lanes * 2) as f64 / best.max(1e-9))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (width, iterations);
        None
    }
}

/// The issue's bound: the FMA ceiling within 20% of one core's clock ×
/// FLOPs per cycle for the widest width (`fma_check`'s `hz` and
/// `flops_per_cycle`, docs/roofline.md).
const FMA_TOLERANCE: f64 = 0.20;

/// `pmx roofline`'s one-core FMA ceiling of the widest width within 20%
/// of clock × FLOPs per cycle, asserted so that load cannot fail it. A
/// busy machine slows multiply-adds (other guests share the core's FP
/// pipes, other processes take the core) while the clock's integer chain
/// keeps its rate, so a bare bound fails there; load only ever slows a
/// kernel, never speeds it. So the test runs a kernel of its own
/// ([`own_fma_rate`]) right before and right after each pmx run:
/// - always: no rate above the bound by more than 20% (a wrong FLOP
///   count or clock that overstates);
/// - pmx's best ceiling within 20% of the bound in any round passes
///   (load cannot raise a rate, so a rate that high is pmx's own);
/// - a round whose kernel runs before *and* after pmx both reach 80% of
///   the bound had the FP pipes free around pmx's run (a quiet round);
///   after eight rounds, three quiet ones and pmx's best never within 20%
///   of the bound fail;
/// - with fewer than three quiet rounds (a busy machine: the best of two
///   maxima of unequal luck is no measure) the bound is not judged, and
///   the SKIP line says so with every round's figures.
///
/// Halving pmx's FLOPs per lane fails on a quiet machine (pmx at half
/// the bound in every round); doubling them fails the upper bound
/// anywhere. The text table on stderr shows the same check (its `FMA
/// check` line).
#[test]
fn the_fma_ceiling_is_within_20_percent_of_the_hardware() {
    let _one_at_a_time = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (mut seen, mut quiet, mut best) = (Vec::new(), 0, 0.0f64);
    let mut width = String::new();
    for round in 0..8 {
        let before = own_fma_rate(&width, 2_000_000).unwrap_or(0.0);
        let (v, _) = roofline(dir.path());
        let f = &v["fma_check"];
        if f.is_null() {
            pmx_testkit::skip(format_args!("no FMA check here (no clock kernel): {v}"));
            return;
        }
        width = f["width"].as_str().unwrap().to_string();
        let widest = v["ceilings"]
            .as_array()
            .unwrap()
            .iter()
            .rfind(|c| c["kind"] == "compute")
            .unwrap();
        let Some(after) = own_fma_rate(&width, 2_000_000) else {
            pmx_testkit::skip(format_args!(
                "the widest width here is {width}: the test's own kernel covers avx2 and avx512"
            ));
            return;
        };
        // The first round's `before` ran before the width was known.
        let before = if round == 0 { after } else { before };
        let ours = widest["one_core"].as_f64().unwrap();
        best = best.max(ours);
        let bound = f["hz"].as_f64().unwrap() * f["flops_per_cycle"].as_f64().unwrap();
        seen.push(format!(
            "round {round}: test {before:.3e}, pmx {ours:.3e}, test {after:.3e}, bound {bound:.3e} FLOP/s"
        ));
        for (who, rate) in [("pmx's", ours), ("the test's kernel's", before.max(after))] {
            assert!(
                rate <= bound * (1.0 + FMA_TOLERANCE),
                "{who} {width} rate is above clock × FLOPs per cycle by more than 20%: {seen:?}"
            );
        }
        if best >= bound * (1.0 - FMA_TOLERANCE) {
            return text_table_shows_the_check(&width);
        }
        if before.min(after) >= bound * (1.0 - FMA_TOLERANCE) {
            quiet += 1;
        }
    }
    assert!(
        quiet < 3,
        "in {quiet} rounds the test's own {width} kernel reached 80% of the bound both before and after pmx's run, and pmx's best ceiling ({best:.3e}) never came within 20% of it: {seen:?}"
    );
    pmx_testkit::skip(format_args!(
        "the bound itself not judged: only {quiet} of 8 rounds were quiet (the test's own {width} kernel at 80% of clock × FLOPs per cycle both before and after pmx's run; a busy machine): {seen:?}"
    ));
    text_table_shows_the_check(&width);
}

/// The text table (stderr, without `--json`) has the FMA check's line.
fn text_table_shows_the_check(width: &str) {
    let out = pmx(&["roofline", "--threads", "1", "--", "true"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with(&format!("FMA check ({width}): one core ")))
        .unwrap_or_else(|| panic!("no FMA check line: {err}"));
    assert!(
        line.contains(" FLOPs/cycle (")
            && (line.contains(" within 20%") || line.contains(" OUTSIDE 20%")),
        "{line}"
    );
}
