//! Every event a file holds, as read: its value over the file (the rows
//! of all domains and intervals summed, in the file's unit), its running
//! share, its spread over the intervals, the hybrid PMU it counted on.
//! `pmx analyze` shows these before any metric, so what the metrics are
//! made of — and how much of the time each input was really counted —
//! is on the page.

use super::IntervalSpread;
use pmx_formats::{ReportRow, RowStatus, StatReport};
use std::collections::HashMap;

/// One event of the file.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRead {
    /// The name as the file has it (`cpu_core/cycles/`, `task-clock:u`).
    pub event: String,
    /// 0, or 1, 2, … for the second, third, … counter of the same event
    /// in one interval and domain (perf prints an event once per metric
    /// group that needs it).
    pub instance: usize,
    /// The hybrid core PMU it counted on (`cpu_core`, `cpu_atom`), when
    /// the file names one.
    pub pmu: Option<String>,
    /// The unit the file gives its values in (`msec`), empty for counts.
    pub unit: String,
    /// The rows' values summed over domains and intervals (perf's and
    /// pmx's values are already scaled by enabled / running); `None` when
    /// no row has a value.
    pub value: Option<f64>,
    /// Without a value: why not, as the file says (`perf: <not counted>`).
    pub why_not: Option<String>,
    /// The share of its enabled time the counter ran, in %, over all its
    /// rows (weighted by run time where the file gives it); `None` when
    /// the file does not say.
    pub running_pct: Option<f64>,
    /// The smallest share of any one row (interval or domain), in %.
    pub running_min_pct: Option<f64>,
    /// Rows with a value that ran part of the time (multiplexed).
    pub multiplexed_rows: usize,
    /// The domains its rows came from (CPUs, cores, threads); 1 for totals.
    pub domains: usize,
    /// Interval files: its value per interval (domains summed).
    pub spread: Option<IntervalSpread>,
}

#[derive(Default)]
struct Acc {
    value: Option<f64>,
    why_not: Option<String>,
    unit: String,
    share_w: f64,
    weight: f64,
    share_min: Option<f64>,
    multiplexed: usize,
    domains: Vec<String>,
    /// (time, value) per interval, in file order.
    per_time: Vec<(Option<f64>, f64)>,
}

/// A row's running share in % and its weight (run time in ns, else 1).
fn share(row: &ReportRow) -> Option<(f64, f64)> {
    if let (Some(e), Some(r)) = (row.enabled_ns, row.running_ns) {
        if e > 0 {
            return Some((100.0 * r as f64 / e as f64, r.max(1) as f64));
        }
    }
    let pct = row.running_pct?;
    let w = row.runtime_ns.filter(|w| *w > 0.0).unwrap_or(1.0);
    Some((pct, w))
}

impl Acc {
    fn add(&mut self, row: &ReportRow) {
        if self.unit.is_empty() {
            self.unit.clone_from(&row.unit);
        }
        if !self.domains.contains(&row.domain) {
            self.domains.push(row.domain.clone());
        }
        let counted = !matches!(row.status, RowStatus::NotCounted | RowStatus::NotSupported);
        let Some(v) = row.value.filter(|_| counted) else {
            if self.why_not.is_none() {
                let why = if row.reason.is_empty() {
                    "no value in the file".to_string()
                } else {
                    row.reason.clone()
                };
                self.why_not = Some(why);
            }
            return;
        };
        self.value = Some(self.value.unwrap_or(0.0) + v);
        match self.per_time.last_mut() {
            Some((t, sum)) if *t == row.time => *sum += v,
            _ => self.per_time.push((row.time, v)),
        }
        if let Some((pct, w)) = share(row) {
            self.share_w += pct * w;
            self.weight += w;
            self.share_min = Some(self.share_min.map_or(pct, |m: f64| m.min(pct)));
            if pct < 100.0 - 1e-9 {
                self.multiplexed += 1;
            }
        }
    }

    fn finish(self, (event, instance): (String, usize), intervals: bool) -> EventRead {
        let values: Vec<f64> = self.per_time.iter().map(|(_, v)| *v).collect();
        EventRead {
            pmu: super::printed::core_type(&event).map(str::to_string),
            event,
            instance,
            unit: self.unit,
            why_not: self.value.is_none().then_some(self.why_not).flatten(),
            value: self.value,
            running_pct: (self.weight > 0.0).then(|| self.share_w / self.weight),
            running_min_pct: self.share_min,
            multiplexed_rows: self.multiplexed,
            domains: self.domains.len().max(1),
            spread: if intervals && values.len() > 1 {
                IntervalSpread::of(&values)
            } else {
                None
            },
        }
    }
}

/// Every event of `report`, in the order the file first names them.
pub fn events_read(report: &StatReport) -> Vec<EventRead> {
    let mut keys: Vec<(&str, usize)> = Vec::new();
    let mut accs: Vec<Acc> = Vec::new();
    let mut seen: HashMap<(Option<u64>, &str, &str), usize> = HashMap::new();
    let intervals = report.is_interval();
    // perf's `--summary` totals after the intervals repeat them.
    for row in report
        .rows
        .iter()
        .filter(|r| !intervals || r.time.is_some())
    {
        let at = (
            row.time.map(f64::to_bits),
            row.domain.as_str(),
            row.event.as_str(),
        );
        let n = seen.entry(at).or_insert(0);
        let key = (row.event.as_str(), *n);
        *n += 1;
        let i = match keys.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                keys.push(key);
                accs.push(Acc::default());
                keys.len() - 1
            }
        };
        accs[i].add(row);
    }
    keys.into_iter()
        .zip(accs)
        .map(|((e, n), a)| a.finish((e.to_string(), n), intervals))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn read(text: &str) -> Vec<EventRead> {
        events_read(&pmx_formats::read_text(Path::new("t"), text).unwrap())
    }

    #[test]
    fn values_shares_and_intervals_per_event() {
        // perf -x, -I -A: two CPUs, two intervals, cycles multiplexed.
        let e = read(
            "1.000000000,CPU0,100,,cycles,500,50.00,,\n\
             1.000000000,CPU1,300,,cycles,1500,75.00,,\n\
             1.000000000,CPU0,<not supported>,,instructions,0,100.00,,\n\
             2.000000000,CPU0,200,,cycles,1000,100.00,,\n\
             2.000000000,CPU1,400,,cycles,1000,100.00,,\n",
        );
        assert_eq!(e.len(), 2);
        let c = &e[0];
        assert_eq!(c.event, "cycles");
        assert_eq!(c.value, Some(1000.0));
        assert_eq!(c.domains, 2);
        // (50 × 500 + 75 × 1500 + 100 × 1000 + 100 × 1000) / 4000.
        assert!((c.running_pct.unwrap() - 84.375).abs() < 1e-9);
        assert_eq!(c.running_min_pct, Some(50.0));
        assert_eq!(c.multiplexed_rows, 2);
        let s = c.spread.unwrap();
        assert_eq!((s.min, s.mean, s.max, s.n), (400.0, 500.0, 600.0, 2));
        assert_eq!(e[1].value, None);
        assert_eq!(e[1].why_not.as_deref(), Some("perf: <not supported>"));
    }

    #[test]
    fn an_event_counted_twice_is_two_events() {
        let e = read(
            "100,,cycles,500,50.00,,\n200,,instructions,500,50.00,,\n300,,cycles,400,40.00,,\n",
        );
        let got: Vec<(&str, usize, Option<f64>)> = e
            .iter()
            .map(|e| (e.event.as_str(), e.instance, e.value))
            .collect();
        assert_eq!(
            got,
            [
                ("cycles", 0, Some(100.0)),
                ("instructions", 0, Some(200.0)),
                ("cycles", 1, Some(300.0))
            ]
        );
    }

    #[test]
    fn hybrid_rows_name_their_pmu() {
        let e = read(
            "775564,,cpu_atom/cycles/u,276334,42.00,1.196,GHz\n\
             <not counted>,,cpu_core/cycles/u,0,0.00,,\n\
             0.65,msec,task-clock:u,648266,100.00,0.534,CPUs utilized\n",
        );
        let pmus: Vec<Option<&str>> = e.iter().map(|e| e.pmu.as_deref()).collect();
        assert_eq!(pmus, [Some("cpu_atom"), Some("cpu_core"), None]);
        assert_eq!(e[0].running_pct, Some(42.0));
        assert!(e.iter().all(|e| e.instance == 0));
        assert_eq!(e[2].unit, "msec");
        // perf's msec clock takes its ns from the run-time column.
        assert_eq!(e[2].value, Some(0.648266));
    }
}
