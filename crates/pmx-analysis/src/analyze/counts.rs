//! A report's rows folded into what the metric formulas read: per event
//! and interval the summed value (rows of one event in several domains
//! are summed), the running share weighted by running time, or why there
//! is no value.
//!
//! An uncore event counted on every box of a PMU (the memory controllers
//! `uncore_imc_0…N`, AMD's `amd_umc_0…N`) is one input: perf's per-box
//! lines (`UNC_M_CAS_COUNT.RD [uncore_imc_2]`, as perf up to 6.5 writes
//! them with `--no-merge`; `uncore_imc_2/…/`) are summed under the event's
//! name ([`per_box`]). When a box has no value, the sum has none either:
//! it says which box and why.

use pmx_formats::{ReportRow, RowStatus, StatReport, Tool};
use pmx_metrics::{Inputs, Reading};
use std::borrow::Cow;
use std::collections::HashMap;

/// What is known about one event in one interval (or in the totals).
#[derive(Debug, Clone, Default)]
pub(crate) struct Acc {
    value: f64,
    has_value: bool,
    /// Sum of weight × running share, and the weights (running time when
    /// known, else 1 per row).
    share_w: f64,
    weight: f64,
    share_known: bool,
    not_supported: Option<String>,
    not_counted: Option<String>,
    /// A box of a per-box sum without a value, and why.
    box_missing: Option<String>,
}

impl Acc {
    fn add_value(&mut self, v: f64, share: Option<f64>, weight: f64) {
        self.value += v;
        self.has_value = true;
        if let Some(s) = share {
            let w = if weight > 0.0 { weight } else { 1.0 };
            self.share_w += w * s.clamp(0.0, 1.0);
            self.weight += w;
            self.share_known = true;
        }
    }

    fn merge(&mut self, o: &Acc) {
        if o.has_value {
            self.value += o.value;
            self.has_value = true;
        }
        self.share_w += o.share_w;
        self.weight += o.weight;
        self.share_known |= o.share_known;
        if self.not_supported.is_none() {
            self.not_supported.clone_from(&o.not_supported);
        }
        if self.not_counted.is_none() {
            self.not_counted.clone_from(&o.not_counted);
        }
        if self.box_missing.is_none() {
            self.box_missing.clone_from(&o.box_missing);
        }
    }

    fn reading(&self) -> Reading {
        if let Some(why) = self.box_missing.as_ref().filter(|_| self.has_value) {
            return Reading::NotCounted {
                why: Some(format!(
                    "{why}; the sum over the other boxes would be partial"
                )),
            };
        }
        if self.has_value {
            Reading::Scaled {
                value: self.value,
                running_share: (self.share_known && self.weight > 0.0)
                    .then(|| self.share_w / self.weight),
            }
        } else if let Some(why) = &self.not_supported {
            Reading::NotSupported { why: why.clone() }
        } else {
            Reading::NotCounted {
                why: self.not_counted.clone(),
            }
        }
    }
}

/// One interval (or the whole run for a totals file).
#[derive(Debug, Clone, Default)]
pub(crate) struct Interval {
    time: Option<f64>,
    accs: Vec<Acc>,
    duration: Option<f64>,
}

/// A file's counts per event and interval.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counts {
    pub events: Vec<String>,
    index: HashMap<String, usize>,
    pub intervals: Vec<Interval>,
    elapsed: Option<f64>,
}

impl Counts {
    fn interval_at(&mut self, time: Option<f64>) -> &mut Interval {
        let same = self
            .intervals
            .last()
            .is_some_and(|iv| match (iv.time, time) {
                (Some(a), Some(b)) => (a - b).abs() < 1e-9,
                (None, None) => true,
                _ => false,
            });
        if !same {
            self.intervals.push(Interval {
                time,
                ..Interval::default()
            });
        }
        self.intervals.last_mut().expect("just pushed")
    }

    fn acc(&mut self, time: Option<f64>, event: &str) -> &mut Acc {
        let n = self.events.len();
        let i = *self.index.entry(event.to_string()).or_insert(n);
        if i == n {
            self.events.push(event.to_string());
        }
        let iv = self.interval_at(time);
        if iv.accs.len() <= i {
            iv.accs.resize(i + 1, Acc::default());
        }
        &mut iv.accs[i]
    }

    pub(crate) fn is_interval(&self) -> bool {
        self.intervals.iter().any(|i| i.time.is_some())
    }

    /// Per-interval durations from the time stamps; the `duration_time`
    /// event (ns) when the file has it.
    fn finish(&mut self) {
        let mut prev = 0.0;
        let dt = self.index.get("duration_time").copied();
        for iv in &mut self.intervals {
            if let Some(t) = iv.time {
                iv.duration = Some((t - prev).max(0.0));
                prev = t;
            }
            if let Some(a) = dt.and_then(|i| iv.accs.get(i)).filter(|a| a.has_value) {
                iv.duration = Some(a.value / 1e9);
            }
        }
    }

    pub(crate) fn totals(&self) -> Interval {
        let mut t = Interval {
            time: None,
            accs: vec![Acc::default(); self.events.len()],
            duration: self.elapsed,
        };
        let mut dur = 0.0;
        let mut any_dur = false;
        for iv in &self.intervals {
            for (i, a) in iv.accs.iter().enumerate() {
                t.accs[i].merge(a);
            }
            if let Some(d) = iv.duration {
                dur += d;
                any_dur = true;
            }
        }
        if t.duration.is_none() && any_dur {
            t.duration = Some(dur);
        }
        t
    }
}

/// Build the inputs of one interval.
pub(crate) fn inputs_of(key: &pmx_metrics::KeyFn, keys: &[String], iv: &Interval) -> Inputs {
    let mut inputs = Inputs::with_key_fn(key.clone());
    inputs.reserve(iv.accs.len());
    for (i, a) in iv.accs.iter().enumerate() {
        inputs.insert_keyed(keys[i].clone(), a.reading());
    }
    // perf counts a stall event it did not print as 0 in `stalled cycles
    // per insn`: make it read as not supported (`has_event` 0).
    for (have, other) in [
        ("stalled-cycles-frontend", "stalled-cycles-backend"),
        ("stalled-cycles-backend", "stalled-cycles-frontend"),
    ] {
        let (h, o) = (inputs.key(have), inputs.key(other));
        if keys.contains(&h) && !keys.contains(&o) {
            inputs.insert_keyed(
                o,
                Reading::NotSupported {
                    why: "not in the file".into(),
                },
            );
        }
    }
    // perf's clock for CPUs utilized, GHz and rates is task-clock or,
    // counting system-wide, cpu-clock (stat-shadow's `evsel__is_clock`).
    let task = inputs.key("task-clock");
    if !keys.contains(&task) {
        let cpu = inputs.key("cpu-clock");
        if let Some(i) = keys.iter().position(|k| *k == cpu) {
            inputs.insert_keyed(task, iv.accs[i].reading());
        }
    }
    inputs.duration = iv.duration;
    inputs
}

impl Counts {
    /// Fold the rows of `report` (and, as pmx has always read them, the
    /// metric lines of `-I --json` files, as counts named by the metric)
    /// in file order.
    pub(crate) fn of(report: &StatReport) -> Counts {
        let mut c = Counts {
            elapsed: report.elapsed_s,
            ..Counts::default()
        };
        let timed_metrics = report.metrics.iter().filter(|m| m.time.is_some());
        let mut metrics = timed_metrics.peekable();
        let interval = report.is_interval();
        let rows = one_per_counter(&report.rows);
        for (i, row) in rows.iter().enumerate() {
            // perf's `--summary` totals after the intervals repeat them.
            if interval && row.time.is_none() {
                continue;
            }
            let boxed = per_box(&row.event);
            let acc = c.acc(row.time, boxed.as_ref().map_or(&row.event, |(e, _)| e));
            match row.origin {
                Tool::Pmx => pmx_row(acc, row),
                Tool::Perf => perf_row(acc, row),
            }
            let empty = row.value.is_none()
                || matches!(row.status, RowStatus::NotSupported | RowStatus::NotCounted);
            if let Some((_, pmu)) = boxed.filter(|_| empty && acc.box_missing.is_none()) {
                let why = if row.reason.is_empty() {
                    "no value".to_string()
                } else {
                    row.reason.clone()
                };
                acc.box_missing = Some(format!("box {pmu}: {why}"));
            }
            // An interval's metric lines follow its rows.
            let last_of_time = rows.get(i + 1).is_none_or(|n| n.time != row.time);
            while last_of_time && metrics.peek().is_some_and(|m| m.time == row.time) {
                let m = metrics.next().expect("peeked");
                metric_line(c.acc(m.time, &m.name), m.value);
            }
        }
        for m in metrics {
            metric_line(c.acc(m.time, &m.name), m.value);
        }
        if !report.is_interval()
            && report.provenance.format == Some(pmx_formats::SourceFormat::PmxJson)
        {
            let elapsed = c.elapsed;
            c.intervals.iter_mut().for_each(|i| i.duration = elapsed);
        }
        c.finish();
        c
    }
}

/// An uncore PMU's box: `uncore_imc_2` → `uncore_imc`, `amd_umc_0` →
/// `amd_umc` (a PMU name with a box number, of an uncore kind).
fn box_stem(pmu: &str) -> Option<&str> {
    let (stem, n) = pmu.rsplit_once('_')?;
    let numbered = !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    (numbered && (stem.starts_with("uncore_") || stem.starts_with("amd_"))).then_some(stem)
}

/// The event a per-box line counts and the box: `NAME [uncore_imc_2]`
/// and `uncore_imc_2/NAME/` → (`NAME`, `uncore_imc_2`);
/// `uncore_imc_2/event=0x4,umask=0x3/` → (`uncore_imc/event=0x4,umask=0x3/`,
/// `uncore_imc_2`). `None` for any other name.
pub(crate) fn per_box(name: &str) -> Option<(String, String)> {
    if let Some(inner) = name.strip_suffix(']') {
        let (event, pmu) = inner.rsplit_once(" [")?;
        box_stem(pmu)?;
        return Some((event.trim().to_string(), pmu.to_string()));
    }
    let (pmu, rest) = name.split_once('/')?;
    let stem = box_stem(pmu)?;
    // `uncore_imc_2/UNC_M_CAS_COUNT.RD/`: the event's own name, as the
    // other spelling gives it.
    let named = rest
        .strip_suffix('/')
        .filter(|b| !b.is_empty() && !b.contains(['=', ',', '/']));
    let event = named.map_or_else(|| format!("{stem}/{rest}"), str::to_string);
    Some((event, pmu.to_string()))
}

/// perf counts an event once per metric group that needs it: rows of the
/// same event, interval and domain are counters of one quantity, not
/// parts of it. Such perf rows become one, each value weighted by its
/// run time (a counter that ran longer measured more of it).
fn one_per_counter(rows: &[ReportRow]) -> Vec<Cow<'_, ReportRow>> {
    let mut out: Vec<Cow<ReportRow>> = Vec::with_capacity(rows.len());
    let mut at: HashMap<(Option<u64>, &str, &str), usize> = HashMap::new();
    for row in rows {
        let key = (
            row.time.map(f64::to_bits),
            row.domain.as_str(),
            row.event.as_str(),
        );
        match at.get(&key) {
            Some(&i) if row.origin == Tool::Perf && out[i].origin == Tool::Perf => {
                merge_counter(out[i].to_mut(), row)
            }
            _ => {
                at.insert(key, out.len());
                out.push(Cow::Borrowed(row));
            }
        }
    }
    out
}

fn merge_counter(into: &mut ReportRow, row: &ReportRow) {
    let Some(v) = row.value.filter(|_| row.status != RowStatus::NotSupported) else {
        return;
    };
    let counted = into.value.is_some() && into.status != RowStatus::NotSupported;
    if !counted {
        *into = row.clone();
        return;
    }
    let weight = |r: &ReportRow| r.runtime_ns.filter(|w| *w > 0.0).unwrap_or(1.0);
    let (w0, w1) = (weight(into), weight(row));
    let mean = |a: f64, b: f64| (a * w0 + b * w1) / (w0 + w1);
    into.value = into.value.map(|x| mean(x, v));
    into.running_pct = match (into.running_pct, row.running_pct) {
        (Some(a), Some(b)) => Some(mean(a, b)),
        (a, b) => a.or(b),
    };
    into.runtime_ns = Some(w0 + w1);
}

fn metric_line(acc: &mut Acc, value: Option<f64>) {
    match value {
        Some(v) => acc.add_value(v, None, 0.0),
        None => acc.not_counted = Some("no value in the file".into()),
    }
}

/// A row of pmx's forms: the raw count scaled by enabled / running when
/// the form has them (task-clock stays in ns, as formulas want), else the
/// value.
fn pmx_row(acc: &mut Acc, row: &ReportRow) {
    let reason = row.reason.clone();
    match row.status {
        RowStatus::NotSupported => {
            acc.not_supported = Some(if reason.is_empty() {
                "not supported".into()
            } else {
                reason
            })
        }
        RowStatus::NotCounted => {
            acc.not_counted = Some(if reason.is_empty() {
                "not counted".into()
            } else {
                reason
            })
        }
        _ => match (row.raw, row.enabled_ns, row.running_ns) {
            (Some(r), Some(e), Some(ru)) if ru > 0 => acc.add_value(
                r as f64 * e as f64 / ru as f64,
                Some(ru as f64 / e.max(1) as f64),
                ru as f64,
            ),
            (Some(r), _, _) => acc.add_value(r as f64, None, 0.0),
            _ => match row.value {
                Some(v) => acc.add_value(v, None, 0.0),
                None => acc.not_counted = Some("no value in the file".into()),
            },
        },
    }
}

/// A row of perf's forms: clocks in msec (formulas count nanoseconds).
fn perf_row(acc: &mut Acc, row: &ReportRow) {
    match (row.status, row.value) {
        (RowStatus::NotSupported, _) => acc.not_supported = Some(row.reason.clone()),
        (_, None) => acc.not_counted = Some(row.reason.clone()),
        (_, Some(mut x)) => {
            // perf up to 4.x wrote clocks in msec without a unit
            // (`1920.159821 task-clock`, `1002.070440;;cpu-clock`).
            let clock = matches!(row.event.as_str(), "task-clock" | "cpu-clock");
            if row.unit == "msec" || (clock && row.unit.is_empty() && x.fract() != 0.0) {
                x *= 1e6;
            }
            acc.add_value(
                x,
                row.running_pct.map(|p| p / 100.0),
                row.runtime_ns.unwrap_or(0.0),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn counts(text: &str) -> Counts {
        Counts::of(&pmx_formats::read_text(Path::new("t"), text).unwrap())
    }

    fn reading(c: &Counts, interval: usize, event: &str) -> Reading {
        let i = c.events.iter().position(|e| e == event).unwrap();
        c.intervals[interval].accs[i].reading()
    }

    #[test]
    fn pmx_rows_are_scaled_from_raw_and_domains_summed() {
        let c = counts(
            "CPU0,2000,,cycles,estimate,50.00,1000,4000,2000,,\n\
             CPU1,3000,,cycles,counted,100.00,3000,4000,4000,,\n\
             ,,,gone,not-supported,,0,0,0,,no such event\n",
        );
        assert_eq!(c.events, ["cycles", "gone"]);
        match reading(&c, 0, "cycles") {
            Reading::Scaled {
                value,
                running_share,
            } => {
                assert_eq!(value, 5000.0);
                // Weighted by running time: (2000 × 0.5 + 4000 × 1) / 6000.
                assert!((running_share.unwrap() - 5.0 / 6.0).abs() < 1e-12);
            }
            r => panic!("{r:?}"),
        }
        assert_eq!(
            reading(&c, 0, "gone"),
            Reading::NotSupported {
                why: "no such event".into()
            }
        );
    }

    #[test]
    fn perf_clocks_count_nanoseconds_and_intervals_have_durations() {
        let c = counts(
            "1.000100000,2.50,msec,task-clock,2500000,100.00,,\n\
             1.000100000,<not counted>,,cycles,0,0.00,,\n\
             2.000200000,1.25,msec,task-clock,1250000,100.00,,\n",
        );
        assert!(c.is_interval());
        assert_eq!(c.intervals.len(), 2);
        let Reading::Scaled { value, .. } = reading(&c, 1, "task-clock") else {
            panic!()
        };
        assert_eq!(value, 1.25e6);
        assert_eq!(
            reading(&c, 0, "cycles"),
            Reading::NotCounted {
                why: Some("perf: <not counted>".into())
            }
        );
        assert!((c.intervals[1].duration.unwrap() - 1.0001).abs() < 1e-9);
        assert!((c.totals().duration.unwrap() - 2.0002).abs() < 1e-9);
    }

    #[test]
    fn a_perf_event_counted_twice_is_one_quantity() {
        // perf 6.4 on Alder Lake prints cpu_atom/TOPDOWN_RETIRING.ALL/
        // once per metric group (17-alderlake-perf-tools-next.txt).
        let c = counts(
            "32110597,,cpu_atom/TOPDOWN_RETIRING.ALL/,3000,72.48,,\n\
             5,,cycles,1000,100.00,,\n\
             31363579,,cpu_atom/TOPDOWN_RETIRING.ALL/,1000,73.37,,\n",
        );
        let Reading::Scaled {
            value,
            running_share,
        } = reading(&c, 0, "cpu_atom/TOPDOWN_RETIRING.ALL/")
        else {
            panic!()
        };
        // (32110597 × 3000 + 31363579 × 1000) / 4000, not their sum.
        assert_eq!(value, (32110597.0 * 3.0 + 31363579.0) / 4.0);
        assert!((running_share.unwrap() - (0.7248 * 3.0 + 0.7337) / 4.0).abs() < 1e-12);
    }

    #[test]
    fn per_box_lines_are_one_input_summed_over_the_boxes() {
        assert_eq!(
            per_box("UNC_M_CAS_COUNT.RD [uncore_imc_2]"),
            Some(("UNC_M_CAS_COUNT.RD".into(), "uncore_imc_2".into()))
        );
        assert_eq!(
            per_box("amd_umc_11/umc_cas_cmd.rd/"),
            Some(("umc_cas_cmd.rd".into(), "amd_umc_11".into()))
        );
        assert_eq!(
            per_box("amd_umc_1/event=0xa,rdwrmask=0x1/"),
            Some(("amd_umc/event=0xa,rdwrmask=0x1/".into(), "amd_umc_1".into()))
        );
        for other in [
            "cpu/cycles/",
            "cpu_core/cycles/",
            "power/energy-pkg/",
            "x [cpu_core]",
        ] {
            assert_eq!(per_box(other), None, "{other}");
        }
        let c = counts(
            "100,,UNC_M_CAS_COUNT.RD [uncore_imc_0],1000,100.00,,\n\
             250,,UNC_M_CAS_COUNT.RD [uncore_imc_1],1000,100.00,,\n\
             7,,uncore_imc_0/event=0x4,umask=0xc/,1000,100.00,,\n\
             <not supported>,,uncore_imc_1/event=0x4,umask=0xc/,0,100.00,,\n",
        );
        assert_eq!(
            c.events,
            ["UNC_M_CAS_COUNT.RD", "uncore_imc/event=0x4,umask=0xc/"]
        );
        let Reading::Scaled { value, .. } = reading(&c, 0, "UNC_M_CAS_COUNT.RD") else {
            panic!()
        };
        assert_eq!(value, 350.0);
        let Reading::NotCounted { why: Some(why) } =
            reading(&c, 0, "uncore_imc/event=0x4,umask=0xc/")
        else {
            panic!()
        };
        assert!(why.starts_with("box uncore_imc_1: "), "{why}");
    }

    #[test]
    fn interval_json_metric_lines_count_after_their_rows() {
        let c = counts(
            "{\"time\":1.0,\"event\":\"cycles\",\"value\":10,\"raw\":10,\"time_enabled_ns\":5,\"time_running_ns\":5}\n\
             {\"time\":1.0,\"kind\":\"metric\",\"event\":\"IPC\",\"value\":1.5}\n\
             {\"time\":2.0,\"event\":\"instructions\",\"value\":10,\"raw\":10,\"time_enabled_ns\":5,\"time_running_ns\":5}\n",
        );
        assert_eq!(c.events, ["cycles", "IPC", "instructions"]);
    }
}
