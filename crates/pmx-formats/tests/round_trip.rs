//! Every form pmx writes reads back to the report it was written from:
//! totals CSV (with and without header) and JSON (with every run of `-r N`
//! kept), interval CSV and JSON lines, and perf's `-x,` and `-j` forms. The
//! table is for reading only; CSV keeps the mean and spread, not the runs.

use pmx_formats::model::EventList;
use pmx_formats::{
    perf, read_text, write, Domain, EventStatus, Exit, IntervalCsv, IntervalJson, IntervalRows,
    MetricLine, Provenance, ReportRow, Row, RowStatus, RunCount, RunMetric, SourceFormat, Spread,
    StatReport, StatView, Tool,
};
use pmx_model::count::Count;
use std::path::Path;
use std::time::Duration;

/// Four events (a clock with a unit, one whose name needs quoting, one in
/// a group of its own, one not supported).
fn plan() -> EventList {
    let ev = |n: &str, u: Option<&str>, g| (n.to_string(), u.map(str::to_string), g);
    EventList {
        events: vec![
            ev("task-clock", Some("msec"), 0),
            ev("faults, \"odd\" name", None, 0),
            ev("cpu/event=0x3c,umask=0x00/", None, 1),
            ev("gone", None, 2),
        ],
    }
}

fn status() -> Vec<EventStatus> {
    vec![
        EventStatus::Counted,
        EventStatus::Counted,
        EventStatus::Counted,
        EventStatus::NotSupported("no such event, \"here\"".into()),
    ]
}

/// Values every form writes exactly: halves and quarters.
fn row(event: usize, domain: Domain, value: Option<f64>, running: u64) -> Row {
    let count = Count {
        value: 1000 + event as u64,
        enabled: 4_000_000,
        running,
    };
    Row {
        event,
        domain,
        count,
        value,
        running_share: count.running_share(),
        instances: 2,
    }
}

fn rows() -> Vec<Row> {
    vec![
        row(0, Domain::Cpu { cpu: 0 }, Some(1234.5), 4_000_000),
        row(0, Domain::Cpu { cpu: 17 }, Some(0.25), 2_000_000),
        row(
            1,
            Domain::Core {
                package: 1,
                core: 3,
            },
            Some(77.0),
            1_000_000,
        ),
        row(2, Domain::Thread { tid: 4321 }, None, 0),
        row(3, Domain::Socket { package: 0 }, None, 0),
    ]
}

fn metrics() -> Vec<MetricLine> {
    vec![
        MetricLine {
            name: "IPC".to_string(),
            domain: String::new(),
            value: Some(1.5),
            unit: String::new(),
            reliability: Some(0.5),
            estimate: true,
            missing: None,
        },
        MetricLine {
            name: "Frontend_Bound".to_string(),
            domain: "CPU0".to_string(),
            value: None,
            unit: "%".to_string(),
            reliability: None,
            estimate: false,
            missing: Some("needs IDQ_UOPS_NOT_DELIVERED.CORE, not counted".to_string()),
        },
    ]
}

fn read(text: &str) -> StatReport {
    read_text(Path::new("f"), text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn provenance(format: SourceFormat) -> Provenance {
    Provenance {
        format: Some(format),
        path: Some("f".into()),
        ..Provenance::default()
    }
}

/// The part of `report` a CSV file states: rows and metrics.
fn csv_part(mut report: StatReport, format: SourceFormat) -> StatReport {
    for r in &mut report.rows {
        (r.spread, r.counters, r.group) = (None, None, None);
        r.repeats.clear();
    }
    for m in &mut report.metrics {
        m.repeats.clear();
    }
    StatReport {
        provenance: provenance(format),
        rows: report.rows,
        metrics: report.metrics,
        ..StatReport::default()
    }
}

#[test]
fn totals_csv_and_json_read_back() {
    let (plan, status, rows, metrics) = (plan(), status(), rows(), metrics());
    let mut spreads = vec![None; rows.len()];
    spreads[0] = Some(Spread {
        runs: 3,
        mean: 1234.5,
        stddev: 2.5,
        relative: 0.125,
    });
    // `-r 3` keeps every run: a row's three counts (one multiplexed) and
    // a metric's three values (one without a value).
    let mut repeats = vec![Vec::new(); rows.len()];
    repeats[0] = [
        (1234.0, 4_000_000),
        (1234.25, 4_000_000),
        (1235.25, 1_000_000),
    ]
    .map(|(v, running)| RunCount {
        value: Some(v),
        raw: v as u64,
        time_enabled_ns: 4_000_000,
        time_running_ns: running,
    })
    .to_vec();
    repeats[3] = vec![RunCount {
        value: None,
        raw: 0,
        time_enabled_ns: 4_000_000,
        time_running_ns: 0,
    }];
    let mut metric_repeats = vec![Vec::new(); metrics.len()];
    metric_repeats[0] = vec![
        RunMetric {
            value: Some(1.5),
            reliability: Some(0.5),
        },
        RunMetric {
            value: None,
            reliability: None,
        },
    ];
    let view = StatView {
        target: "'sleep 1'".to_string(),
        plan: &plan,
        status,
        rows,
        spreads,
        repeats,
        runs: 3,
        elapsed: Duration::from_millis(1500),
        exit: Some(Exit::Code { code: 3 }),
        interrupted: false,
        notes: vec!["3 runs".to_string()],
        metrics,
        metric_repeats,
    };
    let want = view.to_report();
    assert_eq!(want.rows[3].status, RowStatus::NotCounted);
    assert_eq!(want.rows[3].reason, "never ran");
    assert_eq!(want.rows[4].status, RowStatus::NotSupported);
    assert_eq!(want.rows[1].status, RowStatus::Estimate);
    assert_eq!(want.rows[0].repeats[2].value, Some(1235.25));
    assert!(want.rows[0].repeats[2].is_estimate());
    assert_eq!(want.metrics[0].repeats[1].value, None);
    for header in [false, true] {
        let text = write::csv(&view, ",", header);
        assert_eq!(read(&text), csv_part(want.clone(), SourceFormat::PmxCsv));
    }
    let mut doc = write::json(&view).to_string();
    let mut json = want.clone();
    json.provenance.format = Some(SourceFormat::PmxJson);
    json.provenance.path = Some("f".into());
    assert_eq!(read(&doc), json);
    // As `pmx merge` reads it: with the rank and host `-o` files record.
    doc.insert_str(1, "\"host\":\"n01\",\"rank\":7,");
    let dir = std::env::temp_dir().join(format!("pmx-formats-rt-{}", std::process::id()));
    std::fs::write(&dir, &doc).unwrap();
    let ranked = pmx_formats::read::rank::read_rank_file(&dir).unwrap();
    std::fs::remove_file(&dir).unwrap();
    assert_eq!(ranked.provenance.host.as_deref(), Some("n01"));
    assert_eq!(ranked.provenance.rank, Some(7));
    assert_eq!((ranked.rows, ranked.metrics), (json.rows, json.metrics));
}

#[test]
fn interval_csv_and_json_read_back() {
    let (plan, status, metrics) = (plan(), status(), metrics());
    let first = rows();
    let mut second = rows();
    second[0].value = Some(99.5);
    second.truncate(3);
    let intervals = [(1.5, &first), (2.75, &second)];
    let mut csv = IntervalCsv::new(",");
    let mut json = IntervalJson::new();
    let mut csv_text = write::interval_csv_header(",");
    let mut json_text = String::new();
    let mut want = StatReport::default();
    for (time, rows) in intervals {
        let iv = IntervalRows {
            time,
            plan: &plan,
            status: &status,
            rows,
            metrics: &metrics,
        };
        csv_text.push_str(csv.format(&iv));
        json_text.push_str(json.format(&iv));
        let part = iv.to_report();
        want.rows.extend(part.rows);
        want.metrics.extend(part.metrics);
    }
    assert_eq!(want.rows[3].reason, "did not run in this interval");
    want.provenance = provenance(SourceFormat::PmxCsvIntervals);
    assert_eq!(read(&csv_text), want);
    // `pmx plot` reads the same samples as the report has interval rows.
    let timeline = pmx_formats::Timeline::read(&csv_text).unwrap();
    assert_eq!(Some(timeline), pmx_formats::Timeline::from_report(&want));
    // Without the header, too.
    let body = csv_text.split_once('\n').unwrap().1;
    assert_eq!(read(body), want);
    want.provenance = provenance(SourceFormat::PmxJsonIntervals);
    assert_eq!(read(&json_text), want);
}

/// perf's rows: counted with run time and share, not counted, not
/// supported; totals and per CPU.
fn perf_rows(time: Option<f64>) -> Vec<ReportRow> {
    let mut out = Vec::new();
    for (domain, event, value, unit) in [
        ("", "task-clock", Some(1234.5), "msec"),
        ("CPU0", "cycles", Some(1000.0), ""),
        ("CPU3", "cpu/event=0x3c,umask=0x00/", None, ""),
        ("", "gone", None, ""),
    ] {
        let mut r = ReportRow::new(event, domain);
        r.origin = Tool::Perf;
        r.time = time;
        r.value = value;
        r.unit = unit.to_string();
        if value.is_some() {
            r.runtime_ns = Some(2_000_000.0);
            r.running_pct = Some(50.0);
        } else if event == "gone" {
            // perf writes a run time of 0 at 100% for rows without a
            // count (`<not supported>,,cycles,0,100.00,,`).
            r.runtime_ns = Some(0.0);
            r.running_pct = Some(100.0);
            r.status = RowStatus::NotSupported;
            r.reason = "perf: <not supported>".to_string();
        } else {
            r.runtime_ns = Some(0.0);
            r.running_pct = Some(100.0);
            r.status = RowStatus::NotCounted;
            r.reason = "perf: <not counted>".to_string();
        }
        out.push(r);
    }
    out
}

#[test]
fn perf_forms_read_back() {
    for (time, csv_form, json_form) in [
        (None, SourceFormat::PerfCsv, SourceFormat::PerfJson),
        (
            Some(1.5),
            SourceFormat::PerfCsvIntervals,
            SourceFormat::PerfJsonIntervals,
        ),
    ] {
        let mut report = StatReport {
            rows: perf_rows(time),
            ..StatReport::default()
        };
        // The writers add perf's shadow metrics beside the counts, which
        // the readers keep in `printed`: the rows read back as written.
        let rows_of = |mut r: StatReport| {
            r.printed.clear();
            r
        };
        report.provenance = provenance(csv_form);
        assert_eq!(rows_of(read(&perf::csv(&report, ","))), report);
        report.provenance = provenance(json_form);
        assert_eq!(rows_of(read(&perf::json(&report))), report);
    }
}

/// Per CPU, counts whose shadow metrics `--metric-only` shows (GHz,
/// insn per cycle, branch-misses of all branches) and a `-M` metric.
fn metric_only_report(time: Option<f64>) -> StatReport {
    let mut rows = Vec::new();
    let mut metrics = Vec::new();
    for (cpu, k) in [("CPU0", 1.0), ("CPU1", 2.0)] {
        for (event, value, unit) in [
            ("task-clock", 100.0, "msec"),
            ("cycles", 250e6 * k, ""),
            ("instructions", 500e6, ""),
            ("branches", 1e6, ""),
            ("branch-misses", 2.5e4, ""),
        ] {
            let mut r = ReportRow::new(event, cpu);
            r.time = time;
            (r.value, r.unit) = (Some(value), unit.to_string());
            (r.running_ns, r.enabled_ns) = (Some(100_000_000), Some(100_000_000));
            rows.push(r);
        }
        metrics.push(pmx_formats::ReportMetric {
            time,
            name: "tma_retiring".into(),
            domain: cpu.into(),
            value: Some(41.0 * k),
            unit: "%".into(),
            reliability: None,
            estimate: false,
            missing: None,
            repeats: Vec::new(),
        });
    }
    StatReport {
        rows,
        metrics,
        ..StatReport::default()
    }
}

/// `--metric-only` in perf's `-x` and `-j` forms, totals and `-I`: the
/// readers give back each domain's metrics as perf printed them.
#[test]
fn perf_metric_only_forms_read_back() {
    for time in [None, Some(0.100143434)] {
        let report = metric_only_report(time);
        for form in [
            perf::PerfForm::Text,
            perf::PerfForm::Csv(",".into()),
            perf::PerfForm::Json,
        ] {
            let mut o = perf::PerfOptions::new(form.clone());
            (o.metric_only, o.elapsed) = (true, (0.1, 0.0));
            // The table keeps the `%` perf prints after the value.
            let pct = if form == perf::PerfForm::Text {
                "% "
            } else {
                ""
            };
            let text = match time {
                None => perf::totals(&report, &o),
                Some(_) => perf::PerfIntervals::new(o).format(&report, 0.1),
            };
            let back = read(&text);
            let got: Vec<(String, String, Option<f64>)> = back
                .printed
                .iter()
                .map(|p| (p.domain.clone(), p.unit.clone(), p.value))
                .collect();
            let want = |cpu: &str, ghz: f64, tma: f64| {
                vec![
                    (cpu.to_string(), "GHz".to_string(), Some(ghz)),
                    (
                        cpu.into(),
                        "insn per cycle".into(),
                        Some(if ghz > 3.0 { 1.0 } else { 2.0 }),
                    ),
                    (
                        cpu.into(),
                        format!("{pct}branch-misses of all branches"),
                        Some(2.5),
                    ),
                    (cpu.into(), "% tma_retiring".into(), Some(tma)),
                ]
            };
            let mut expect = want("CPU0", 2.5, 41.0);
            expect.extend(want("CPU1", 5.0, 82.0));
            assert_eq!(got, expect, "{form:?} {time:?}:\n{text}");
            assert!(back.printed.iter().all(|p| p.time == time), "{text}");
        }
    }
}

/// `-G`/`--for-each-cgroup` rows in perf's text, `-x` and `-j` forms:
/// the cgroup column reads back beside the event, the counts as written.
#[test]
fn perf_cgroup_forms_read_back() {
    let mut rows = Vec::new();
    for (cg, v) in [("pmx-a", 12.5), ("/", 250.25)] {
        for cpu in ["CPU0", "CPU1"] {
            let mut r = ReportRow::new(&format!("task-clock (cgroup {cg})"), cpu);
            (r.value, r.unit) = (Some(v), "msec".into());
            (r.running_ns, r.enabled_ns) = (Some(1_000_000), Some(1_000_000));
            rows.push(r);
        }
    }
    let report = StatReport {
        rows,
        ..StatReport::default()
    };
    for form in [
        perf::PerfForm::Text,
        perf::PerfForm::Csv(",".into()),
        perf::PerfForm::Json,
    ] {
        let mut o = perf::PerfOptions::new(form.clone());
        (o.target, o.elapsed) = ("'system wide'".into(), (0.3, 0.0));
        let text = perf::totals(&report, &o);
        let back = read(&text);
        let got: Vec<(String, String, Option<f64>)> = back
            .rows
            .iter()
            .map(|r| (r.domain.clone(), r.event.clone(), r.value))
            .collect();
        let want: Vec<(String, String, Option<f64>)> = report
            .rows
            .iter()
            .map(|r| {
                let (event, cg) = r
                    .event
                    .trim_end_matches(')')
                    .split_once(" (cgroup ")
                    .unwrap();
                (format!("{} {cg}", r.domain), event.to_string(), r.value)
            })
            .collect();
        assert_eq!(got, want, "{form:?}:\n{text}");
    }
}

/// A counter that did not count leaves its column empty (perf's
/// `printout` with no running time): each value reads back under its own
/// column in every form, the table's by where the columns end.
#[test]
fn perf_metric_only_empty_columns_read_back() {
    let mut report = metric_only_report(None);
    let gone = report
        .rows
        .iter_mut()
        .find(|r| r.domain == "CPU1" && r.event == "instructions")
        .unwrap();
    (gone.value, gone.status) = (None, RowStatus::NotCounted);
    for form in [
        perf::PerfForm::Text,
        perf::PerfForm::Csv(",".into()),
        perf::PerfForm::Json,
    ] {
        let mut o = perf::PerfOptions::new(form.clone());
        (o.metric_only, o.elapsed) = (true, (0.1, 0.0));
        let text = perf::totals(&report, &o);
        let back = read(&text);
        let got: Vec<(String, String)> = back
            .printed
            .iter()
            .filter(|p| p.domain == "CPU1" && p.value.is_some())
            .map(|p| (p.unit.replace("% ", ""), format!("{:?}", p.value)))
            .collect();
        let want = [
            ("GHz", "Some(5.0)"),
            ("branch-misses of all branches", "Some(2.5)"),
            ("% tma_retiring", "Some(82.0)"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(u, v)| (u.replace("% ", ""), v.to_string()))
            .collect();
        assert_eq!(got, want, "{form:?}:\n{text}");
    }
}

/// Software events alone: perf's `--metric-only` lines hold no metric
/// (rates and utilizations are left out), only headers, time stamps and
/// domains; every form reads as a file without counts, not as a bad line.
#[test]
fn perf_metric_only_without_metrics_reads_as_no_counts() {
    for domain in ["", "CPU0", "S0-D0-C1", "S0", "N0"] {
        for time in [None, Some(0.1)] {
            let mut r = ReportRow::new("page-faults", domain);
            (r.value, r.time) = (Some(12.0), time);
            (r.running_ns, r.enabled_ns) = (Some(1_000_000), Some(1_000_000));
            let report = StatReport {
                rows: vec![r],
                ..StatReport::default()
            };
            for form in [
                perf::PerfForm::Text,
                perf::PerfForm::Csv(",".into()),
                perf::PerfForm::Json,
            ] {
                let mut o = perf::PerfOptions::new(form.clone());
                (o.metric_only, o.elapsed) = (true, (0.1, 0.0));
                let text = match time {
                    None => perf::totals(&report, &o),
                    Some(_) => perf::PerfIntervals::new(o).format(&report, 0.1),
                };
                match read_text(Path::new("f"), &text) {
                    Err(pmx_formats::ReadError::NoCounts { .. }) => {}
                    other => panic!("{form:?} {domain:?} {time:?}: {other:?}\n{text}"),
                }
            }
        }
    }
}
