//! `pmx stat` on a PMU the kernel registers only as numbered boxes, side
//! by side with the installed perf. The boxes `uncore_imc_0` …
//! `uncore_imc_2` of a fixture sysfs tree are the software PMU's
//! page-fault counter (type 1, config 2) under an uncore name and alias
//! (`cas_count_read` = `event=0x2`), so the kernel counts for real: each
//! box counts the command's page faults, the merged row is three times
//! the `page-faults` row of the same run, and `--no-merge` prints a row
//! per box. perf 6.1 is shown the same tree (bind-mounted over
//! `/sys/bus/event_source/devices` in a mount namespace of its own) and
//! must name and sum the rows alike. `pmx serve` opens the same boxes
//! on every CPU and exports their sum as one series per CPU.

use crate::common::{pmx, stderr};
use pmx_testkit::skip;
use std::path::Path;
use std::process::Command;

/// The tree: three boxes and, for perf, the machine's own PMUs beside them.
fn tree(dir: &Path) -> std::path::PathBuf {
    let dev = dir.join("sys/bus/event_source/devices");
    for n in 0..3 {
        let b = dev.join(format!("uncore_imc_{n}"));
        std::fs::create_dir_all(b.join("format")).unwrap();
        std::fs::create_dir_all(b.join("events")).unwrap();
        std::fs::write(b.join("type"), "1\n").unwrap();
        std::fs::write(b.join("format/event"), "config:0-63\n").unwrap();
        std::fs::write(b.join("events/cas_count_read"), "event=0x2\n").unwrap();
    }
    for e in std::fs::read_dir("/sys/bus/event_source/devices")
        .unwrap()
        .flatten()
    {
        if let Ok(target) = std::fs::canonicalize(e.path()) {
            let _ = std::os::unix::fs::symlink(target, dev.join(e.file_name()));
        }
    }
    dev
}

/// `-x,` lines as (value, event), pmx's columns or perf's.
fn rows(text: &str, event_col: usize) -> Vec<(u64, String)> {
    text.lines()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f.len() > event_col && f[event_col - 2].parse::<u64>().is_ok())
        .map(|f| (f[event_col - 2].parse().unwrap(), f[event_col].to_string()))
        .collect()
}

const EVENTS: &str = "uncore_imc/cas_count_read/,cas_count_read,page-faults";

fn pmx_rows(root: &Path, extra: &[&str]) -> Vec<(u64, String)> {
    let root = root.to_str().unwrap();
    let mut args = vec!["stat", "--sysfs-root", root, "-x,", "-e", EVENTS];
    args.extend(extra);
    args.push("true");
    let o = pmx(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    rows(&stderr(&o), 3)
}

/// perf's rows with the tree mounted, or `None` (said) where perf or a
/// mount namespace is not to be had.
fn perf_rows(dev: &Path, extra: &str) -> Option<Vec<(u64, String)>> {
    let script = format!(
        "mount --bind {} /sys/bus/event_source/devices && perf stat -x, {extra} -e {EVENTS} true",
        dev.display()
    );
    let o = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output();
    match o {
        Ok(o) if o.status.success() => Some(rows(&String::from_utf8_lossy(&o.stderr), 2)),
        Ok(o) => {
            skip(format!(
                "perf on the fixture tree: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
            None
        }
        Err(e) => {
            skip(format!("unshare: {e}"));
            None
        }
    }
}

/// The three boxes' sum in one row per event, named as typed.
fn check_merged(rows: &[(u64, String)], who: &str) {
    let names: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(
        names,
        [
            "uncore_imc/cas_count_read/",
            "cas_count_read",
            "page-faults"
        ],
        "{who}"
    );
    let faults = rows[2].0;
    assert!(faults > 0, "{who}");
    assert_eq!(
        (rows[0].0, rows[1].0),
        (3 * faults, 3 * faults),
        "{who}: {rows:?}"
    );
}

/// A row per box, each the command's page faults.
fn check_split(rows: &[(u64, String)], who: &str) {
    let mut names: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    names.sort_unstable();
    let want = [
        "cas_count_read [uncore_imc_0]",
        "cas_count_read [uncore_imc_1]",
        "cas_count_read [uncore_imc_2]",
        "page-faults",
        "uncore_imc_0/cas_count_read/",
        "uncore_imc_1/cas_count_read/",
        "uncore_imc_2/cas_count_read/",
    ];
    assert_eq!(names, want, "{who}");
    let faults = rows.iter().find(|r| r.1 == "page-faults").unwrap().0;
    assert!(rows.iter().all(|r| r.0 == faults), "{who}: {rows:?}");
}

#[test]
fn numbered_boxes_are_summed_unless_no_merge_as_perf_does() {
    let dir = tempfile::tempdir().unwrap();
    let dev = tree(dir.path());
    check_merged(&pmx_rows(dir.path(), &[]), "pmx");
    check_split(&pmx_rows(dir.path(), &["--no-merge"]), "pmx --no-merge");
    if let Some(rows) = perf_rows(&dev, "") {
        check_merged(&rows, "perf");
    }
    if let Some(rows) = perf_rows(&dev, "--no-merge") {
        check_split(&rows, "perf --no-merge");
    }
}

/// `pmx serve --sysfs-root`: the boxes of `uncore_imc` opened on every
/// CPU and summed into one series per CPU, so after N pages touched the
/// box event grows by three times what `page-faults` grew (each box
/// counts every fault), and by at least 3 N.
#[test]
fn serve_opens_every_box_and_exports_their_sum() {
    use crate::serve_support::{samples, scrape, series, start, sum};
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path());
    let root = dir.path().to_str().unwrap();
    let cas = "uncore_imc/cas_count_read/";
    let d = start(&["--sysfs-root", root, "-e", &format!("{cas},page-faults")]);
    let a = samples(&scrape(&d.addr, true));
    assert_eq!(sum(&a, "pmx_event_supported", &[("event", cas)]), 1.0);
    let per_cpu = series(&a, "pmx_events_total", &[("event", cas)]);
    let faults_cpus = series(&a, "pmx_events_total", &[("event", "page-faults")]);
    assert!(
        !per_cpu.is_empty() && per_cpu.len() == faults_cpus.len(),
        "{per_cpu:?}"
    );
    assert!(per_cpu.iter().all(|l| l.contains_key("cpu")), "{per_cpu:?}");
    let n = 30_000u64;
    pmx_testkit::workload::touch_pages(n as usize).unwrap();
    let b = samples(&scrape(&d.addr, true));
    let grew = |e: &str| {
        sum(&b, "pmx_events_total", &[("event", e)]) - sum(&a, "pmx_events_total", &[("event", e)])
    };
    let (boxes, faults) = (grew(cas), grew("page-faults"));
    assert!(
        boxes >= 3.0 * n as f64,
        "boxes grew by {boxes}, faults by {faults}"
    );
    let ratio = boxes / faults;
    assert!(
        (2.7..=3.3).contains(&ratio),
        "boxes {boxes} / faults {faults} = {ratio}"
    );
}

/// A data fabric of three boxes (`amd_df_0` … `amd_df_2`, each with a
/// cpumask): the software PMU's `cpu-clock` (type 1, config 0) under the
/// names of perf's Zen 3 table, whose `event` and `umask` terms land in
/// `config1`/`config2`, which the software PMU ignores — so each of
/// `dram_channel_data_controller_0…7` counts real time on every box.
fn fabric(dir: &Path) -> std::path::PathBuf {
    let dev = dir.join("sys/bus/event_source/devices");
    for n in 0..3 {
        let b = dev.join(format!("amd_df_{n}"));
        std::fs::create_dir_all(b.join("format")).unwrap();
        std::fs::write(b.join("type"), "1\n").unwrap();
        std::fs::write(b.join("cpumask"), "0\n").unwrap();
        std::fs::write(b.join("format/event"), "config1:0-7,32-35\n").unwrap();
        std::fs::write(b.join("format/umask"), "config2:8-15\n").unwrap();
    }
    for e in std::fs::read_dir("/sys/bus/event_source/devices")
        .unwrap()
        .flatten()
    {
        if let Ok(target) = std::fs::canonicalize(e.path()) {
            let _ = std::os::unix::fs::symlink(target, dev.join(e.file_name()));
        }
    }
    dev
}

/// Of `-x,` lines: the event rows' values summed, the values of the
/// metric's lines. `value`/`name`: the columns of a row's value and
/// name; a metric line has `nps1_die_to_dram` in its name column.
fn sum_and_metric(text: &str, value: usize, name: usize) -> (f64, Vec<f64>) {
    let (mut sum, mut metric) = (0.0, Vec::new());
    for f in text.lines().map(|l| l.split(',').collect::<Vec<_>>()) {
        let Some(v) = f.get(value).and_then(|v| v.parse::<f64>().ok()) else {
            continue;
        };
        match f.get(name) {
            Some(n) if n.contains("nps1_die_to_dram") => metric.push(v),
            Some(n) if n.starts_with("dram_channel_data_controller_") => sum += v,
            _ => {}
        }
    }
    (sum, metric)
}

/// A metric over box events with `--no-merge`: perf 6.1 prints one value,
/// its inputs summed over every box (not one per box), so pmx does too:
/// with and without `--no-merge` the one value is the same multiple of
/// the rows' sum (perf's is the table's `6.1e-5MiB`).
#[test]
fn a_metric_over_split_boxes_has_the_boxes_sum_as_perf_gives_it() {
    let Some(tables) = pmx_testkit::shared::shared_data("linux-perf-events") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dev = fabric(dir.path());
    let pmx_run = |extra: &[&str]| {
        let (root, tables) = (dir.path().to_str().unwrap(), tables.to_str().unwrap());
        let mut args = vec!["stat", "--cpu", "AuthenticAMD-25-1-1", "--sysfs-root", root];
        args.extend(["--events-dir", tables, "-x,", "-M", "nps1_die_to_dram"]);
        args.extend(extra);
        args.push("true");
        let o = pmx(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        // pmx's -x, lines: the raw count in column 6, the name in 3; a
        // metric line's value in 1.
        let text = stderr(&o);
        let (sum, _) = sum_and_metric(&text, 6, 3);
        let (_, metric) = sum_and_metric(&text, 1, 3);
        let rows = text.matches("dram_channel_data_controller_").count();
        (sum, metric, rows, text)
    };
    let (merged, m1, n1, t1) = pmx_run(&[]);
    let (split, m2, n2, t2) = pmx_run(&["--no-merge"]);
    assert_eq!((n1, n2), (8, 24), "{t1}{t2}");
    assert_eq!((m1.len(), m2.len()), (1, 1), "{t1}{t2}");
    let (f1, f2) = (m1[0] / merged, m2[0] / split);
    assert!((f1 - f2).abs() <= f1 * 1e-6, "{f1} {f2}\n{t1}{t2}");
    // perf on the same tree, where this host's CPU gives perf the metric.
    let script = format!(
        "mount --bind {} /sys/bus/event_source/devices && perf stat -x, --no-merge -a -M nps1_die_to_dram sleep 0.01",
        dev.display()
    );
    let o = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output();
    let text = match o {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stderr).into_owned(),
        Ok(o) => {
            return skip(format!(
                "perf on the fabric tree: {}",
                String::from_utf8_lossy(&o.stderr)
            ))
        }
        Err(e) => return skip(format!("unshare: {e}")),
    };
    if !text.contains("nps1_die_to_dram") {
        return skip(format!("perf has no nps1_die_to_dram for this CPU: {text}"));
    }
    let (sum, _) = sum_and_metric(&text, 0, 2);
    let (_, metric) = sum_and_metric(&text, 4, 5);
    assert_eq!(
        text.matches("dram_channel_data_controller_").count(),
        24,
        "{text}"
    );
    assert_eq!(metric.len(), 1, "perf's one value: {text}");
    assert!(
        (metric[0] / sum / 6.1e-5 - 1.0).abs() < 1e-3,
        "{sum} {metric:?}\n{text}"
    );
}

/// perf's stderr with `dev` mounted over the PMUs, or why not (said).
fn perf_on(dev: &Path, args: &str) -> Option<String> {
    let script = format!(
        "mount --bind {} /sys/bus/event_source/devices && perf stat {args}",
        dev.display()
    );
    let o = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output();
    match o {
        Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stderr).into_owned()),
        Ok(o) => {
            skip(format!(
                "perf on the fabric tree: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
            None
        }
        Err(e) => {
            skip(format!("unshare: {e}"));
            None
        }
    }
}

/// Two metrics of perf's Zen 3 table over the data fabric's boxes, each
/// with its `ScaleUnit` (`6.1e-5MiB`, `3e-5MiB`): pmx prints the sum of
/// the inputs times the scale, in the unit, as perf 6.1 does on the same
/// tree (each tool's value over its own rows' sum, so no timing enters).
#[test]
fn box_metrics_are_scaled_by_their_scale_unit_as_perf_prints_them() {
    let Some(tables) = pmx_testkit::shared::shared_data("linux-perf-events") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dev = fabric(dir.path());
    let metrics = [
        ("nps1_die_to_dram", "dram_channel_data_controller_", 6.1e-5),
        (
            "all_remote_links_outbound",
            "remote_outbound_data_controller_",
            3e-5,
        ),
    ];
    // (metric/sum, unit) per metric, from -x, lines: a row's value and
    // name at `value`/`name`, a metric's value and `UNIT  NAME` or
    // (unit, name) at `mv`/`mn`.
    let ratios = |text: &str, (value, name, mv, mn): (usize, usize, usize, usize)| {
        let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
        let num = |f: &Vec<&str>, i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
        metrics.map(|(m, prefix, _)| {
            let sum: f64 = (lines.iter())
                .filter(|f| f.get(name).is_some_and(|n| n.starts_with(prefix)))
                .filter_map(|f| num(f, value))
                .sum();
            let line = (lines.iter())
                .find(|f| f.get(mn).is_some_and(|n| n.ends_with(m)) && num(f, mv).is_some())
                .unwrap_or_else(|| panic!("{m}: {text}"));
            let unit = line[mn].trim_end_matches(m).trim().to_string();
            let unit = if unit.is_empty() {
                line[mn - 1].to_string()
            } else {
                unit
            };
            (num(line, mv).unwrap() / sum, unit)
        })
    };
    let (root, tables) = (dir.path().to_str().unwrap(), tables.to_str().unwrap());
    let o = pmx(&[
        "stat",
        "--cpu",
        "AuthenticAMD-25-1-1",
        "--sysfs-root",
        root,
        "--events-dir",
        tables,
        "-x,",
        "-a",
        "-M",
        "nps1_die_to_dram,all_remote_links_outbound",
        "sleep",
        "0.05",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // pmx's -x, columns: raw count 6, name 3; a metric: value 1, unit 2, name 3.
    let ours = ratios(&stderr(&o), (6, 3, 1, 3));
    for ((r, unit), (m, _, scale)) in ours.iter().zip(metrics) {
        assert!((r / scale - 1.0).abs() < 1e-6, "pmx {m}: {r} {unit}");
        assert_eq!(unit, "MiB", "pmx {m}");
    }
    let Some(text) = perf_on(
        &dev,
        "-x, -a -M nps1_die_to_dram,all_remote_links_outbound sleep 0.05",
    ) else {
        return;
    };
    if !text.contains("nps1_die_to_dram") {
        return skip(format!("perf has no nps1_die_to_dram for this CPU: {text}"));
    }
    // perf's: a row's value 0, name 2; a metric's value 4, `UNIT  NAME` 5
    // (its value printed with one decimal).
    let theirs = ratios(&text, (0, 2, 4, 5));
    for ((a, b), (m, _, scale)) in ours.iter().zip(&theirs).zip(metrics) {
        assert_eq!(a.1, b.1, "{m}: the unit");
        assert!((b.0 / scale - 1.0).abs() < 1e-3, "perf {m}: {b:?}\n{text}");
    }
}

/// An uncore box's `cpumask` (CPU 0 here): with `-a` pmx opens its
/// events on the mask's CPUs alone, as perf does; with `-C 1` on CPU 1,
/// as perf 6.1 does (it takes the user's CPUs over the mask).
#[test]
fn box_events_follow_the_cpumask_with_a_and_the_named_cpus_with_c() {
    let dir = tempfile::tempdir().unwrap();
    let dev = fabric(dir.path());
    let root = dir.path().to_str().unwrap();
    let events = "amd_df_0/event=0x1/,amd_df/event=0x1/";
    // The CPU column of each -A row, in order.
    let cpus = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.contains("amd_df"))
            .filter_map(|l| l.split(',').next())
            .map(str::to_string)
            .collect()
    };
    for (flags, want) in [
        (&["-a"][..], ["CPU0", "CPU0"]),
        (&["-C", "1"][..], ["CPU1", "CPU1"]),
    ] {
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
        if flags[0] == "-C" && online.trim() == "0" {
            skip("one CPU online: no CPU 1 to name with -C");
            continue;
        }
        let mut args = vec!["stat", "--sysfs-root", root, "-x,", "-A", "-e", events];
        args.extend(flags);
        args.extend(["sleep", "0.01"]);
        let o = pmx(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_eq!(cpus(&stderr(&o)), want, "pmx {flags:?}: {}", stderr(&o));
        let line = format!("-x, -A {} -e {events} sleep 0.01", flags.join(" "));
        if let Some(text) = perf_on(&dev, &line) {
            assert_eq!(cpus(&text), want, "perf {flags:?}: {text}");
        }
    }
}
