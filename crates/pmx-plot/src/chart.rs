//! The chart model: which lines go into which panel, with which labels.
//!
//! Decisions, in order:
//!
//! - **Lines.** [`SeriesBy::Domain`] (`--per-cpu`) draws one line per
//!   domain (CPU, core, socket, thread); it is the default when the file
//!   has per-domain rows. [`SeriesBy::Event`] (`--per-event`) draws one
//!   line per event; it is the default for a file of totals. Per event, a
//!   file without totals rows is summed over its domains, interval by
//!   interval; per domain, totals rows are left out when there are domain
//!   rows (a file of totals alone gives one line, `total`).
//! - **Events.** The events asked for, in the order given; by default the
//!   first event of the file per domain, and every event per event.
//! - **Panels.** Per domain: one panel per event, stacked vertically
//!   ("small multiples"), sharing the time axis and the legend (a domain has
//!   the same colour in every panel). Per event: one panel per unit (all
//!   `msec` events together, all plain counts together), so lines that
//!   share a panel share a scale.
//! - **Time.** Seconds since the start, from 0. Epoch timestamps
//!   (`--timestamps absolute`, anything past 1e8 s) are shown as seconds
//!   since the whole second before the first sample, named in the axis
//!   label in UTC; the axis then starts where the first interval began.
//! - **Gaps.** Intervals without a value (not counted) are left out of the
//!   line, which joins its neighbours (one polyline per series), and are
//!   recorded as [`Series::gaps`]: the chart shades them and the legend
//!   says "not counted". A line with no value at all is listed in the
//!   legend as `EVENT (not counted)` (per event) and not shaded.

use super::PlotError;
use pmx_formats::timeline::{Sample, Timeline};
use std::cmp::Ordering;
use std::collections::HashMap;

/// What one line stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesBy {
    /// One line per CPU, core, socket or thread; one panel per event.
    Domain,
    /// One line per event; one panel per unit.
    Event,
}

/// What to draw.
#[derive(Debug, Clone, Default)]
pub struct ChartOptions {
    /// Events to draw, in this order; empty for the default (module docs).
    pub events: Vec<String>,
    /// Lines per domain or per event; `None` chooses from the file.
    pub series_by: Option<SeriesBy>,
    /// The title; `None` for one made from the events and the source.
    pub title: Option<String>,
    /// The input's name for the default title (a file name), or empty.
    pub source_name: String,
}

/// A colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// `#rrggbb`.
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

/// The first ten colours (the widely used "category 10" set), then
/// golden-angle hues.
const PALETTE: [Rgb; 10] = [
    Rgb(0x1f, 0x77, 0xb4),
    Rgb(0xff, 0x7f, 0x0e),
    Rgb(0x2c, 0xa0, 0x2c),
    Rgb(0xd6, 0x27, 0x28),
    Rgb(0x94, 0x67, 0xbd),
    Rgb(0x8c, 0x56, 0x4b),
    Rgb(0xe3, 0x77, 0xc2),
    Rgb(0x7f, 0x7f, 0x7f),
    Rgb(0xbc, 0xbd, 0x22),
    Rgb(0x17, 0xbe, 0xcf),
];

/// The colour of the `i`-th line.
pub fn palette(i: usize) -> Rgb {
    if let Some(&c) = PALETTE.get(i) {
        return c;
    }
    // Hue by the golden angle, in whole degrees; two lightnesses.
    let hue = ((i as u64 * 137_508 / 1000) % 360) as f64;
    let light = if i.is_multiple_of(2) { 0.42 } else { 0.55 };
    hsl(hue, 0.65, light)
}

fn hsl(h: f64, s: f64, l: f64) -> Rgb {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let hp = h / 60.0;
    let x = c * (1.0 - (hp % 2.0 - 1.0).abs());
    let (r, g, b) = match hp as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let q = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    Rgb(q(r), q(g), q(b))
}

/// One line: points (seconds, value) in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Its legend label (`CPU3`, `cycles`, `total`).
    pub label: String,
    /// Its colour.
    pub color: Rgb,
    /// (x in seconds, y) — intervals without a value left out.
    pub points: Vec<(f64, f64)>,
    /// Time spans (from the previous sample, in seconds) of the intervals
    /// that had no value.
    pub gaps: Vec<(f64, f64)>,
}

/// (seconds, value) pairs: points, or spans of time.
type Pairs = Vec<(f64, f64)>;
/// (seconds, value if counted), in file order.
type Timed = Vec<(f64, Option<f64>)>;

/// Split (time, value) samples into points and the spans of the missing
/// ones (each from the sample before it, or from 0 for the first).
fn line(samples: &[(f64, Option<f64>)]) -> (Pairs, Pairs) {
    let mut points = Vec::new();
    let mut gaps: Vec<(f64, f64)> = Vec::new();
    for (k, &(t, v)) in samples.iter().enumerate() {
        match v {
            Some(v) => points.push((t, v)),
            None => {
                let start = if k == 0 { t.min(0.0) } else { samples[k - 1].0 };
                match gaps.last_mut() {
                    Some(g) if g.1 == start => g.1 = t,
                    _ => gaps.push((start, t)),
                }
            }
        }
    }
    (points, gaps)
}

/// One panel: a y axis and its lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// The y-axis label with the unit: `task-clock (msec)`.
    pub y_label: String,
    /// The lines, in legend order.
    pub series: Vec<Series>,
}

/// One legend entry.
#[derive(Debug, Clone, PartialEq)]
pub struct LegendEntry {
    /// The label.
    pub label: String,
    /// The line's colour.
    pub color: Rgb,
}

/// A chart ready to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// The title.
    pub title: String,
    /// The x-axis label: `time (s)`.
    pub x_label: String,
    /// The x axis' extent, in seconds.
    pub x_range: (f64, f64),
    /// Panels, top to bottom; at least one.
    pub panels: Vec<Panel>,
    /// The legend, shared by all panels.
    pub legend: Vec<LegendEntry>,
    /// What a line stands for.
    pub series_by: SeriesBy,
}

/// Epoch timestamps start here (about 1973).
const EPOCH_LIKE: f64 = 1e8;

impl Chart {
    /// The chart for `timeline` (decisions in the module documentation).
    pub fn build(timeline: &Timeline, options: &ChartOptions) -> Result<Chart, PlotError> {
        let samples = &timeline.samples;
        if samples.is_empty() {
            return Err(PlotError::Empty);
        }
        let infos = timeline.events();
        let mut selected: Vec<(String, String)> = Vec::new();
        for e in &options.events {
            let Some(info) = infos.iter().find(|i| &i.name == e) else {
                return Err(PlotError::UnknownEvent {
                    event: e.clone(),
                    available: infos.iter().map(|i| i.name.clone()).collect(),
                });
            };
            if !selected.iter().any(|(n, _)| n == e) {
                selected.push((info.name.clone(), info.unit.clone()));
            }
        }
        let has_domains = samples.iter().any(|s| !s.domain.is_empty());
        let series_by = options.series_by.unwrap_or(if has_domains {
            SeriesBy::Domain
        } else {
            SeriesBy::Event
        });
        if selected.is_empty() {
            let take = match series_by {
                SeriesBy::Domain => 1,
                SeriesBy::Event => infos.len(),
            };
            selected = infos
                .iter()
                .take(take)
                .map(|i| (i.name.clone(), i.unit.clone()))
                .collect();
        }
        let t0 = samples.iter().map(|s| s.time).fold(f64::INFINITY, f64::min);
        let first = t0;
        let (t0, x_label) = if first >= EPOCH_LIKE {
            let t0 = first.floor();
            (t0, format!("time (s since {})", utc(t0)))
        } else {
            (0.0, "time (s)".to_string())
        };
        // With epoch times the axis starts where the first interval began
        // (one interval before its stamp), not at the whole second.
        let start = if t0 > 0.0 {
            let next = samples
                .iter()
                .map(|s| s.time)
                .filter(|&t| t > first)
                .fold(f64::INFINITY, f64::min);
            let step = if next.is_finite() { next - first } else { 0.0 };
            (first - step - t0).max(0.0)
        } else {
            0.0
        };
        let names: Vec<&str> = selected.iter().map(|(n, _)| n.as_str()).collect();
        let (panels, legend, domains) = match series_by {
            SeriesBy::Domain => by_domain(samples, &selected, t0),
            SeriesBy::Event => {
                let (p, l) = by_event(samples, &selected, t0);
                (p, l, Vec::new())
            }
        };
        let all = || {
            panels
                .iter()
                .flat_map(|p| &p.series)
                .flat_map(|s| &s.points)
        };
        if all().next().is_none() {
            return Err(PlotError::NoValues {
                events: names.iter().map(|s| s.to_string()).collect(),
            });
        }
        let xmin = all().map(|p| p.0).fold(f64::INFINITY, f64::min).min(start);
        let mut xmax = all().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
        if xmax <= xmin {
            xmax = xmin + 1.0;
        }
        let title = options.title.clone().unwrap_or_else(|| {
            let what = if names.len() > 4 {
                format!("{} events", names.len())
            } else {
                names.join(", ")
            };
            let what = match series_by {
                SeriesBy::Domain if domains.iter().any(|d| !d.is_empty()) => {
                    format!("{what} per {}", domain_kind(&domains))
                }
                _ => what,
            };
            if options.source_name.is_empty() {
                what
            } else {
                format!("{}: {what}", options.source_name)
            }
        });
        Ok(Chart {
            title,
            x_label,
            x_range: (xmin, xmax),
            panels,
            legend,
            series_by,
        })
    }

    /// The height that gives each panel room: 540 pixels for one panel,
    /// 260 more for each further one.
    pub fn default_height(&self) -> u32 {
        let n = self.panels.len().max(1) as u32;
        540u32
            .saturating_add(260u32.saturating_mul(n - 1))
            .min(super::MAX_SIZE)
    }

    /// How many lines the chart draws, over all panels.
    pub fn series_count(&self) -> usize {
        self.panels.iter().map(|p| p.series.len()).sum()
    }
}

fn axis_label(event: &str, unit: &str) -> String {
    if unit.is_empty() {
        format!("{event} (count)")
    } else {
        format!("{event} ({unit})")
    }
}

type Built = (Vec<Panel>, Vec<LegendEntry>, Vec<String>);

fn by_domain(samples: &[Sample], selected: &[(String, String)], t0: f64) -> Built {
    let wanted = |s: &&Sample| selected.iter().any(|(n, _)| n == &s.event);
    let mut domains: Vec<String> = Vec::new();
    for s in samples.iter().filter(wanted) {
        if !s.domain.is_empty() && !domains.contains(&s.domain) {
            domains.push(s.domain.clone());
        }
    }
    domains.sort_by(|a, b| natural_cmp(a, b));
    if domains.is_empty() {
        domains.push(String::new());
    }
    let mut rows: HashMap<(&str, &str), Timed> = HashMap::new();
    for s in samples.iter().filter(wanted) {
        rows.entry((s.event.as_str(), s.domain.as_str()))
            .or_default()
            .push((s.time - t0, s.value));
    }
    let label = |d: &str| {
        if d.is_empty() {
            "total".to_string()
        } else {
            d.to_string()
        }
    };
    let panels = selected
        .iter()
        .map(|(event, unit)| Panel {
            y_label: axis_label(event, unit),
            series: domains
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let (points, gaps) = rows
                        .get(&(event.as_str(), d.as_str()))
                        .map(|r| line(r))
                        .unwrap_or_default();
                    Series {
                        label: label(d),
                        color: palette(i),
                        points,
                        gaps,
                    }
                })
                .collect(),
        })
        .collect();
    let legend = domains
        .iter()
        .enumerate()
        .map(|(i, d)| LegendEntry {
            label: label(d),
            color: palette(i),
        })
        .collect();
    (panels, legend, domains)
}

/// One event's samples: its totals rows, or the sum over domains per time
/// (missing where no domain has a value).
fn event_samples(samples: &[Sample], event: &str, t0: f64) -> Timed {
    let rows = || samples.iter().filter(move |s| s.event == event);
    if rows().any(|s| s.domain.is_empty()) {
        return rows()
            .filter(|s| s.domain.is_empty())
            .map(|s| (s.time - t0, s.value))
            .collect();
    }
    let mut sums: Vec<(f64, Option<f64>)> = Vec::new();
    let mut at: HashMap<u64, usize> = HashMap::new();
    for s in rows() {
        let i = *at.entry(s.time.to_bits()).or_insert_with(|| {
            sums.push((s.time, None));
            sums.len() - 1
        });
        if let Some(v) = s.value {
            let slot = &mut sums[i].1;
            *slot = Some(slot.unwrap_or(0.0) + v);
        }
    }
    sums.into_iter().map(|(t, v)| (t - t0, v)).collect()
}

fn by_event(
    samples: &[Sample],
    selected: &[(String, String)],
    t0: f64,
) -> (Vec<Panel>, Vec<LegendEntry>) {
    let mut units: Vec<&str> = Vec::new();
    for (_, u) in selected {
        if !units.contains(&u.as_str()) {
            units.push(u);
        }
    }
    let mut legend = Vec::new();
    let mut lines: Vec<(usize, Series)> = Vec::new();
    for (i, (event, unit)) in selected.iter().enumerate() {
        let (points, gaps) = line(&event_samples(samples, event, t0));
        let label = if points.is_empty() {
            format!("{event} (not counted)")
        } else {
            event.clone()
        };
        legend.push(LegendEntry {
            label,
            color: palette(i),
        });
        let panel = units.iter().position(|u| u == unit).unwrap_or(0);
        lines.push((
            panel,
            Series {
                label: event.clone(),
                color: palette(i),
                points,
                gaps,
            },
        ));
    }
    let panels = units
        .iter()
        .enumerate()
        .map(|(p, unit)| {
            let series: Vec<Series> = lines
                .iter()
                .filter(|(q, _)| *q == p)
                .map(|(_, s)| s.clone())
                .collect();
            let y_label = match series.as_slice() {
                [one] => axis_label(&one.label, unit),
                _ if unit.is_empty() => "count".to_string(),
                _ => unit.to_string(),
            };
            Panel { y_label, series }
        })
        .collect();
    (panels, legend)
}

/// Compare labels with digit runs as numbers: `CPU2` < `CPU10`.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a, b);
    loop {
        let (Some(ca), Some(cb)) = (a.chars().next(), b.chars().next()) else {
            return a.len().cmp(&b.len());
        };
        if ca.is_ascii_digit() && cb.is_ascii_digit() {
            let na = a.find(|c: char| !c.is_ascii_digit()).unwrap_or(a.len());
            let nb = b.find(|c: char| !c.is_ascii_digit()).unwrap_or(b.len());
            let (da, db) = (
                a[..na].trim_start_matches('0'),
                b[..nb].trim_start_matches('0'),
            );
            let o = da.len().cmp(&db.len()).then_with(|| da.cmp(db));
            if o != Ordering::Equal {
                return o;
            }
            a = &a[na..];
            b = &b[nb..];
        } else {
            if ca != cb {
                return ca.cmp(&cb);
            }
            a = &a[ca.len_utf8()..];
            b = &b[cb.len_utf8()..];
        }
    }
}

/// `CPU`, `core`, `socket`, `thread`, … for a list of domain labels.
fn domain_kind(domains: &[String]) -> &'static str {
    fn digits(s: &str) -> bool {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
    }
    fn kind(d: &str) -> &'static str {
        let parts: Vec<&str> = d.split('-').collect();
        let is = |p: &str, c: char| p.strip_prefix(c).is_some_and(digits);
        if d.strip_prefix("CPU").is_some_and(digits) {
            "CPU"
        } else if d.strip_prefix("tid ").is_some_and(digits) {
            "thread"
        } else if parts
            .iter()
            .all(|p| ['S', 'D', 'C'].iter().any(|&c| is(p, c)))
        {
            match parts.last().and_then(|p| p.chars().next()) {
                Some('C') => "core",
                Some('D') => "die",
                _ => "socket",
            }
        } else if is(d, 'N') {
            "node"
        } else if parts.len() >= 2 && parts.last().is_some_and(|p| digits(p)) {
            "thread"
        } else {
            "domain"
        }
    }
    let mut kinds = domains.iter().filter(|d| !d.is_empty()).map(|d| kind(d));
    let first = kinds.next().unwrap_or("domain");
    if kinds.all(|k| k == first) {
        first
    } else {
        "domain"
    }
}

/// `2024-05-01 12:00:00 UTC` for epoch seconds.
fn utc(t: f64) -> String {
    let secs = t.floor() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Days since 1970-01-01 to a civil date (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(time: f64, domain: &str, event: &str, value: Option<f64>) -> Sample {
        Sample {
            time,
            domain: domain.into(),
            event: event.into(),
            unit: if event == "task-clock" {
                "msec".into()
            } else {
                String::new()
            },
            value,
        }
    }

    fn timeline(samples: Vec<Sample>) -> Timeline {
        Timeline {
            format: super::super::SourceFormat::PmxCsv,
            samples,
        }
    }

    #[test]
    fn gaps_merge_and_start_at_zero() {
        let (p, g) = line(&[(1.0, None), (2.0, None), (3.0, Some(5.0)), (4.0, None)]);
        assert_eq!(p, [(3.0, 5.0)]);
        assert_eq!(g, [(0.0, 2.0), (3.0, 4.0)]);
    }

    #[test]
    fn natural_order() {
        let mut v = vec!["CPU10", "CPU2", "CPU1", "S0-C1", "CPU02x", ""];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["", "CPU1", "CPU2", "CPU02x", "CPU10", "S0-C1"]);
    }

    #[test]
    fn dates() {
        assert_eq!(utc(0.0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_714_564_800.5), "2024-05-01 12:00:00 UTC");
        assert_eq!(utc(951_782_400.0), "2000-02-29 00:00:00 UTC");
    }

    #[test]
    fn kinds() {
        let k = |v: &[&str]| domain_kind(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(k(&["CPU0", "CPU1"]), "CPU");
        assert_eq!(k(&["S0-C1", "S0-D0-C0"]), "core");
        assert_eq!(k(&["S0", "S1"]), "socket");
        assert_eq!(k(&["tid 5", "bash-13022"]), "thread");
        assert_eq!(k(&["CPU0", "S0"]), "domain");
    }

    #[test]
    fn per_domain_by_default_with_domains() {
        let t = timeline(vec![
            sample(1.0, "CPU1", "task-clock", Some(1.0)),
            sample(1.0, "CPU0", "task-clock", Some(2.0)),
            sample(1.0, "CPU0", "cycles", Some(5.0)),
            sample(2.0, "CPU1", "task-clock", None),
            sample(2.0, "CPU0", "task-clock", Some(3.0)),
        ]);
        let c = Chart::build(&t, &ChartOptions::default()).unwrap();
        assert_eq!(c.series_by, SeriesBy::Domain);
        assert_eq!(c.panels.len(), 1);
        assert_eq!(c.panels[0].y_label, "task-clock (msec)");
        assert_eq!(c.title, "task-clock per CPU");
        let labels: Vec<_> = c.panels[0]
            .series
            .iter()
            .map(|s| s.label.as_str())
            .collect();
        assert_eq!(labels, ["CPU0", "CPU1"]);
        assert_eq!(c.panels[0].series[1].points, [(1.0, 1.0)]);
        assert_eq!(c.panels[0].series[1].gaps, [(1.0, 2.0)]);
        assert!(c.panels[0].series[0].gaps.is_empty());
        assert_eq!(c.x_range, (0.0, 2.0));
        let both = ChartOptions {
            events: vec!["cycles".into(), "task-clock".into()],
            ..ChartOptions::default()
        };
        let c = Chart::build(&t, &both).unwrap();
        assert_eq!(c.panels.len(), 2);
        assert_eq!(c.panels[0].y_label, "cycles (count)");
        let per_event = ChartOptions {
            series_by: Some(SeriesBy::Event),
            source_name: "f.csv".into(),
            ..ChartOptions::default()
        };
        let c = Chart::build(&t, &per_event).unwrap();
        assert_eq!(c.title, "f.csv: task-clock, cycles");
        assert_eq!(c.panels.len(), 2, "msec and counts apart");
        assert_eq!(c.panels[0].series[0].points, [(1.0, 3.0), (2.0, 3.0)]);
    }

    #[test]
    fn epoch_times() {
        let t = timeline(vec![
            sample(1_714_564_800.5, "", "cycles", Some(1.0)),
            sample(1_714_564_800.75, "", "cycles", Some(2.0)),
        ]);
        let c = Chart::build(&t, &ChartOptions::default()).unwrap();
        assert_eq!(c.x_label, "time (s since 2024-05-01 12:00:00 UTC)");
        assert_eq!(c.x_range, (0.25, 0.75));
        assert_eq!(c.panels[0].series[0].points, [(0.5, 1.0), (0.75, 2.0)]);
    }

    #[test]
    fn errors() {
        let t = timeline(vec![sample(1.0, "", "cycles", None)]);
        let e = Chart::build(&t, &ChartOptions::default()).unwrap_err();
        assert!(matches!(e, PlotError::NoValues { .. }));
        let o = ChartOptions {
            events: vec!["nope".into()],
            ..ChartOptions::default()
        };
        let e = Chart::build(&t, &o).unwrap_err();
        assert_eq!(e.to_string(), "no event 'nope' in the file; it has: cycles");
    }

    #[test]
    fn palette_is_distinct_and_stable() {
        let colours: Vec<Rgb> = (0..40).map(palette).collect();
        for (i, a) in colours.iter().enumerate() {
            assert_ne!(*a, Rgb(255, 255, 255), "{i}");
        }
        assert_eq!(palette(0).hex(), "#1f77b4");
        assert_eq!(palette(12), palette(12));
    }
}
