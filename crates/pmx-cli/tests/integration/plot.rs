//! `pmx plot` end to end: the real binary on pmx and perf interval files
//! (the perf files under `tests/data/plot/` were written by perf 6.1), SVG
//! and PNG output, a golden SVG, and bad input.
//!
//! Regenerate the golden files with `PMX_BLESS=1 cargo test -p pmx-cli
//! --test integration plot::`.

use crate::common::{pmx, stderr};
use pmx_testkit::process::interrupt_after;
use std::path::{Path, PathBuf};
use std::process::Output;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/plot")
        .join(name)
}

/// Run `pmx plot` writing to `out` in a temporary directory; the output.
fn plot(input: &Path, out: &str, extra: &[&str]) -> (Output, Vec<u8>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(out);
    let mut args = vec![
        "plot",
        input.to_str().unwrap(),
        "-o",
        path.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = pmx(&args);
    let bytes = std::fs::read(&path).unwrap_or_default();
    (o, bytes, dir)
}

fn plot_ok(input: &Path, out: &str, extra: &[&str]) -> Vec<u8> {
    let (o, bytes, _dir) = plot(input, out, extra);
    assert!(o.status.success(), "pmx plot failed: {}", stderr(&o));
    bytes
}

fn svg_text(bytes: &[u8]) -> String {
    let s = String::from_utf8(bytes.to_vec()).expect("SVG is UTF-8");
    assert!(s.starts_with("<?xml"), "{s}");
    assert!(s.trim_end().ends_with("</svg>"), "{s}");
    s
}

fn polylines(svg: &str) -> usize {
    svg.matches("<polyline").count()
}

/// Series labels, in order (each polyline's `<title>`).
fn series_labels(svg: &str) -> Vec<String> {
    svg.split("<polyline")
        .skip(1)
        .filter_map(|p| {
            let t = p.split("<title>").nth(1)?;
            Some(t.split("</title>").next()?.to_string())
        })
        .collect()
}

/// A pmx interval CSV: `cpus` CPUs × `intervals`, events task-clock and
/// cycles, no header.
fn pmx_csv(cpus: u32, intervals: u32) -> String {
    let mut s = String::new();
    for i in 1..=intervals {
        for (event, unit) in [("task-clock", "msec"), ("cycles", "")] {
            for cpu in 0..cpus {
                let v = f64::from((i * 37 + cpu * 101) % 500) + 0.25;
                s.push_str(&format!(
                    "{:.6},CPU{cpu},{v},{unit},{event},counted,100.00,{},100000000,100000000,,\n",
                    f64::from(i) * 0.1,
                    v as u64
                ));
            }
        }
    }
    s
}

#[test]
fn per_cpu_svg_has_one_polyline_per_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("run.csv");
    std::fs::write(&input, pmx_csv(12, 20)).unwrap();
    let svg = svg_text(&plot_ok(&input, "run.svg", &[]));
    assert_eq!(polylines(&svg), 12, "one line per CPU for the first event");
    let labels = series_labels(&svg);
    let expect: Vec<String> = (0..12).map(|c| format!("CPU{c}")).collect();
    assert_eq!(labels, expect, "natural order: CPU2 before CPU10");
    assert!(
        svg.contains("aria-label=\"task-clock (msec)\""),
        "y label with unit"
    );
    assert!(svg.contains("aria-label=\"time (s)\""));
    assert!(svg.contains("aria-label=\"run.csv: task-clock per CPU\""));
    // Each polyline has 20 points.
    let first = svg
        .split("points=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    assert_eq!(first.split(' ').count(), 20);

    // Two events per CPU: two panels of 12 lines, one legend of 12.
    let svg = svg_text(&plot_ok(
        &input,
        "two.svg",
        &["-e", "cycles", "-e", "task-clock"],
    ));
    assert_eq!(polylines(&svg), 24);
    assert!(svg.contains("aria-label=\"cycles (count)\""));
    // Per event: the two events summed over the CPUs, one line each.
    let svg = svg_text(&plot_ok(&input, "ev.svg", &["--per-event"]));
    assert_eq!(series_labels(&svg), ["task-clock", "cycles"]);
}

#[test]
fn default_output_is_the_input_with_svg() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("run.csv");
    std::fs::write(&input, pmx_csv(2, 3)).unwrap();
    let o = pmx(&["plot", input.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let svg = std::fs::read_to_string(dir.path().join("run.svg")).unwrap();
    assert_eq!(polylines(&svg), 2);
    assert!(stderr(&o).contains("run.svg"), "{}", stderr(&o));
}

#[test]
fn png_decodes_with_the_requested_size() {
    let input = data("small.csv");
    let bytes = plot_ok(&input, "small.png", &["--width", "640", "--height", "360"]);
    let decoder = png::Decoder::new(std::io::Cursor::new(&bytes));
    let mut reader = decoder.read_info().expect("a PNG header");
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).expect("a PNG frame");
    assert_eq!((info.width, info.height), (640, 360));
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let px = &buf[..info.buffer_size()];
    // The first line's colour (#1f77b4) is drawn somewhere, solid.
    let solid = px
        .chunks(3)
        .filter(|p| p[0].abs_diff(0x1f) < 8 && p[1].abs_diff(0x77) < 8 && p[2].abs_diff(0xb4) < 8)
        .count();
    assert!(solid > 200, "only {solid} pixels of the first line");
    // Text is drawn: dark pixels exist.
    assert!(px.chunks(3).any(|p| p.iter().all(|&c| c < 0x40)));

    // The same input gives the same bytes.
    let again = plot_ok(&input, "again.png", &["--width", "640", "--height", "360"]);
    assert!(bytes == again, "PNG output differs between runs");
}

#[test]
fn perf_csv_input() {
    // perf stat -I 100 -x, -a -A -e task-clock,context-switches -- sleep 1
    let svg = svg_text(&plot_ok(&data("perf-A.csv"), "a.svg", &[]));
    assert_eq!(series_labels(&svg), ["CPU0", "CPU1"]);
    assert!(svg.contains("aria-label=\"task-clock (msec)\""));
    let svg = svg_text(&plot_ok(
        &data("perf-A.csv"),
        "b.svg",
        &["-e", "context-switches"],
    ));
    assert_eq!(polylines(&svg), 2);
    assert!(svg.contains("aria-label=\"context-switches (count)\""));

    // Without -A, with <not counted> and <not supported>: one line per event.
    let svg = svg_text(&plot_ok(&data("perf-total.csv"), "t.svg", &[]));
    assert_eq!(
        series_labels(&svg),
        ["task-clock", "context-switches", "cycles"]
    );
    assert!(svg.contains("aria-label=\"cycles (not counted)\""));
    assert!(
        svg.contains("aria-label=\"not counted\""),
        "gaps are shaded and named"
    );

    // --per-core with -x';': a CPU-count column after the domain.
    let svg = svg_text(&plot_ok(&data("perf-per-core.csv"), "c.svg", &[]));
    assert_eq!(series_labels(&svg), ["S0-D0-C0", "S0-D0-C1"]);
    assert!(svg.contains("task-clock per core"));
}

#[test]
fn json_lines_input_draws_like_the_csv() {
    let title = ["--title", "same data"];
    let csv = svg_text(&plot_ok(&data("small.csv"), "c.svg", &title));
    let json = svg_text(&plot_ok(&data("small.jsonl"), "j.svg", &title));
    assert_eq!(polylines(&json), 2);
    assert!(
        csv == json,
        "the JSON lines and the CSV of the same run draw differently"
    );
    let both = svg_text(&plot_ok(
        &data("small.jsonl"),
        "b.svg",
        &["-e", "cycles", "-e", "task-clock"],
    ));
    assert_eq!(polylines(&both), 4);
}

#[test]
fn golden_svg() {
    let golden = data("small.svg");
    let svg = plot_ok(
        &data("small.csv"),
        "small.svg",
        &["-e", "task-clock", "-e", "cycles"],
    );
    if std::env::var_os("PMX_BLESS").is_some() {
        std::fs::write(&golden, &svg).unwrap();
    }
    let want = std::fs::read(&golden).expect("golden file (PMX_BLESS=1 writes it)");
    assert!(
        svg == want,
        "SVG differs from {}; if the change is intended, rerun with PMX_BLESS=1",
        golden.display()
    );
}

#[test]
fn svg_to_standard_output() {
    let o = pmx(&["plot", data("small.csv").to_str().unwrap(), "-o", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(polylines(&svg_text(&o.stdout)), 2);
}

/// Run on `text` as a file; the output.
fn plot_text(text: &[u8], extra: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    std::fs::write(&input, text).unwrap();
    let out = dir.path().join("out.svg");
    let mut args = vec!["plot", input.to_str().unwrap(), "-o", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    pmx(&args)
}

fn assert_usage_error(o: &Output, needle: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    assert!(e.contains(needle), "expected {needle:?} in: {e}");
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    assert_usage_error(&plot_text(b"", &[]), "no interval rows");
    assert_usage_error(&plot_text(b"# nothing\n\n", &[]), "no interval rows");
    assert_usage_error(
        &plot_text(pmx_csv(2, 2).as_bytes(), &["-e", "instructions"]),
        "no event 'instructions' in the file; it has: task-clock, cycles",
    );
    let mut broken = pmx_csv(2, 2);
    broken.push_str("0.300000,CPU0,12x,msec,task-clock,counted,100.00,1,1,1,,\n");
    assert_usage_error(
        &plot_text(broken.as_bytes(), &[]),
        "in.csv: line 9: value \"12x\" is not a number",
    );
    assert_usage_error(
        &plot_text(
            b"{\"time\": 1, \"event\": \"a\", \"value\": 1}\n{\"time\": 2,\n",
            &[],
        ),
        "line 2: not a JSON object",
    );
    assert_usage_error(
        &plot_text(b"Performance counter stats\n", &[]),
        "line 1: not an interval row",
    );
    let o = pmx(&["plot", "/nonexistent/run.csv"]);
    assert_usage_error(&o, "/nonexistent/run.csv");
    let o = pmx(&["plot", data("small.csv").to_str().unwrap(), "-o", "x.gif"]);
    assert_usage_error(&o, "use a name ending in .svg or .png");
    let o = pmx(&["plot", data("small.csv").to_str().unwrap(), "--width", "5"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = pmx(&[
        "plot",
        data("small.csv").to_str().unwrap(),
        "--per-cpu",
        "--per-event",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn garbage_input_exits_2_without_panic() {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    // Pure noise, then noise made of the characters interval files use.
    let alphabet = b"0123456789.,;:|\t\"{}[]<>- CPUtimevalueevent#nul\n";
    for round in 0..60 {
        let len = (next() % 400) as usize;
        let bytes: Vec<u8> = if round % 2 == 0 {
            (0..len).map(|_| next() as u8).collect()
        } else {
            (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect()
        };
        let o = plot_text(&bytes, &[]);
        let e = stderr(&o);
        assert!(!e.contains("panicked"), "panic on {bytes:?}: {e}");
        assert_eq!(o.status.code(), Some(2), "input {bytes:?}: {e}");
        assert!(e.starts_with("pmx: "), "{e}");
    }
}

#[test]
fn odd_but_valid_input_does_not_panic() {
    // One interval; a single CPU; huge and negative values; epoch times;
    // names the font does not have; a CSV separator of two characters.
    let cases: [&[u8]; 5] = [
        b"1.0,CPU0,5,,ev,counted,100.00,5,1,1,,\n",
        b"1700000000.5,CPU0,1e29,,ev,counted,100.00,5,1,1,,\n1700000001.5,CPU0,-3,,ev,counted,100.00,5,1,1,,\n",
        "0.1,CPU0,1,,\u{e9}v\u{e9}nement <&>,counted,100.00,5,1,1,,\n".as_bytes(),
        b"time::domain::value::unit::event\n0.1::::7::::e\n0.2::::8::::e\n",
        b"0.1,,0,,e,counted,100.00,0,1,1,,\n0.2,,0,,e,counted,100.00,0,1,1,,\n",
    ];
    for text in cases {
        let o = plot_text(text, &[]);
        assert!(
            o.status.success(),
            "{:?}: {}",
            String::from_utf8_lossy(text),
            stderr(&o)
        );
    }
    let o = plot_text(cases[1], &["--width", "100", "--height", "100"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn pmx_interval_files_from_the_real_tool() {
    // pmx stat -I 100 -a -A -x, -e task-clock,context-switches -- sleep 0.5
    // (totals at the end as '#' lines), and the same with --json (a totals
    // object at the end).
    for name in ["pmx-A.csv", "pmx-A.jsonl"] {
        let svg = svg_text(&plot_ok(&data(name), "a.svg", &[]));
        assert_eq!(series_labels(&svg), ["CPU0", "CPU1"], "{name}");
        let svg = svg_text(&plot_ok(&data(name), "b.svg", &["--per-event"]));
        assert_eq!(
            series_labels(&svg),
            ["task-clock", "context-switches"],
            "{name}"
        );
    }
}

fn ncpu() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Wait (up to a minute) until a file in `dir` whose name holds `name`
/// has `n` lines that are not comments.
fn wait_for_lines(dir: &Path, name: &str, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        let lines = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(name))
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .map(|t| t.lines().filter(|l| !l.starts_with('#')).count())
            .max()
            .unwrap_or(0);
        if lines >= n {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_run_stopped_with_sigint_plots_one_line_per_cpu() {
    let dir = tempfile::tempdir().unwrap();
    for (name, form) in [("run.csv", "-x,"), ("run.jsonl", "--json")] {
        let file = dir.path().join(name);
        let child = crate::common::spawn_system_intervals("50", form, &file);
        // Interrupted once two intervals of every CPU are written (to the
        // temporary file `-o` renames at the end), however slow the
        // machine is, and 400 ms later.
        wait_for_lines(dir.path(), name, 2 * 2 * ncpu());
        let o = interrupt_after(child, std::time::Duration::from_millis(400));
        assert!(o.status.success(), "{}", stderr(&o));
        let svg = svg_text(&plot_ok(&file, "run.svg", &[]));
        assert_eq!(polylines(&svg), ncpu(), "{name}");
        let png = plot_ok(&file, "run.png", &["--width", "500", "--height", "300"]);
        let info = png::Decoder::new(std::io::Cursor::new(&png))
            .read_info()
            .expect("a PNG")
            .info()
            .clone();
        assert_eq!((info.width, info.height), (500, 300));
    }
}
