//! `pmx analyze FILE`: metrics and the top-down tree from counts saved
//! earlier.
//!
//! Reads pmx's own stat CSV (totals or `-I` interval form, with or without
//! header) and JSON (the totals document or `-I` JSON lines), and perf's
//! `perf stat -x,` CSV (with `-I` time and `-A`/`--per-*` domain columns)
//! and `perf stat -j` JSON lines.
//!
//! Counts are matched to metric inputs by encoding: every event name in the
//! file and in the metric library is resolved with the event database of
//! the CPU, so `r019c`, `cpu/event=0x9c,umask=0x01/` and
//! `IDQ_UOPS_NOT_DELIVERED.CORE` are one input. Names that do not resolve
//! (perf's `topdown-*` aliases, software events) are matched by
//! [`pmx_metrics::event_key`].
//!
//! Interval files: the metrics are computed over the summed totals of all
//! intervals (the headline values), and also per interval; the per-interval
//! minimum, mean and maximum are shown beside each value. Rows of one event
//! in several domains (`-A`, `--per-core`) are summed.

use crate::db::DbArgs;
use crate::exit::UsageError;
use pmx_metrics::{event_key, Evaluated, EventRef, Inputs, Library, Machine, MetricId, Reading};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

/// Arguments of `pmx analyze`.
#[derive(Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// The counts: pmx stat CSV/JSON, perf stat -x, CSV or perf stat -j JSON.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Metrics or metric groups to compute, comma-separated (default: every
    /// metric whose inputs are in the file).
    #[arg(short = 'M', long = "metrics", value_name = "LIST")]
    pub metrics: Option<String>,
    /// Show the top-down tree.
    #[arg(long)]
    pub tma: bool,
    /// With --tma: down to this level.
    #[arg(
        short = 'l',
        long = "level",
        value_name = "N",
        default_value_t = 1,
        requires = "tma"
    )]
    pub level: u32,
    /// SMT was on where the counts were taken (default: off).
    #[arg(long, value_name = "on|off", default_value = "off", value_parser = ["on", "off"])]
    pub smt: String,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

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
    }

    fn reading(&self) -> Reading {
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

/// A file of counts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counts {
    pub format: &'static str,
    pub cpu: Option<String>,
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

    fn is_interval(&self) -> bool {
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

    fn totals(&self) -> Interval {
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

fn bad(path: &std::path::Path, line: usize, msg: impl std::fmt::Display) -> anyhow::Error {
    UsageError(format!("{}:{line}: {msg}", path.display())).into()
}

/// Split one CSV line, honouring double quotes.
fn split_csv(line: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    cur.push('"');
                    chars.next();
                } else {
                    quoted = false;
                }
            } else {
                cur.push(c);
            }
        } else if c == '"' && cur.is_empty() {
            quoted = true;
        } else if c == sep {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    out
}

/// perf does not quote `cpu/event=0x9c,umask=0x01/` in `-x,` output:
/// join fields until each has balanced slashes.
fn rejoin_slashes(fields: Vec<String>, sep: char) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(fields.len());
    let mut open = false;
    for f in fields {
        let odd = f.matches('/').count() % 2 == 1;
        if open {
            let last = out.last_mut().expect("open implies a field");
            last.push(sep);
            last.push_str(&f);
            if odd {
                open = false;
            }
        } else {
            open = odd;
            out.push(f);
        }
    }
    out
}

fn num(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn is_value_like(s: &str) -> bool {
    let s = s.trim();
    num(s).is_some() || s.starts_with("<not ")
}

/// pmx's status words; `metric*` rows are skipped (the metrics are recomputed here).
use pmx_output::stat::STATUS_WORDS as PMX_STATUS;

/// A CPU named in a comment: `# cpu: GenuineIntel-6-5E-3`.
fn cpu_comment(line: &str) -> Option<String> {
    let l = line.trim_start_matches('#').trim();
    let (k, v) = l.split_once(':')?;
    let k = k.trim().to_ascii_lowercase();
    (k == "cpu" || k == "cpuid" || k == "pmx-cpu").then(|| v.trim().to_string())
}

fn parse_csv(path: &std::path::Path, text: &str) -> anyhow::Result<Counts> {
    let mut c = Counts::default();
    let sep = text
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            if !l.contains(',') && l.contains(';') {
                ';'
            } else {
                ','
            }
        })
        .unwrap_or(',');
    for (n, raw) in text.lines().enumerate() {
        let ln = n + 1;
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with('#') {
            if let Some(cpu) = cpu_comment(line) {
                c.cpu = Some(cpu);
            }
            continue;
        }
        let f: Vec<String> = rejoin_slashes(split_csv(line, sep), sep);
        let f: Vec<&str> = f.iter().map(|s| s.trim()).collect();
        // pmx header lines.
        if f.first() == Some(&"time")
            || (f.first() == Some(&"domain") && f.get(1) == Some(&"value"))
        {
            continue;
        }
        // pmx: [time,]domain,value,unit,event,status,running_pct,raw,enabled,running,stddev,reason
        let pmx_k = [0usize, 1].into_iter().find(|&k| {
            f.len() >= 11 + k
                && f.get(4 + k).is_some_and(|s| PMX_STATUS.contains(s))
                && (k == 0 || num(f[0]).is_some())
        });
        if let Some(k) = pmx_k {
            c.format = if k == 1 {
                "pmx stat CSV (intervals)"
            } else {
                "pmx stat CSV"
            };
            let time = if k == 1 { num(f[0]) } else { None };
            let (event, status) = (f[3 + k], f[4 + k]);
            if status.starts_with("metric") {
                continue;
            }
            let raw = f[6 + k].parse::<u64>().ok();
            let enabled = f[7 + k].parse::<u64>().ok();
            let running = f[8 + k].parse::<u64>().ok();
            let reason = f.get(10 + k).copied().unwrap_or("").to_string();
            let acc = c.acc(time, event);
            pmx_row(acc, status, raw, enabled, running, num(f[1 + k]), reason);
            continue;
        }
        // perf: [time,][domain,]value,unit,event,run_time_ns,pct_running,…
        let perf_k = (0usize..=2).find(|&k| {
            f.len() >= 5 + k
                && is_value_like(f[k])
                && num(f[k + 2]).is_none()
                && !f[k + 2].is_empty()
                && (f[k + 3].is_empty() || num(f[k + 3]).is_some())
                && (f[k + 4].is_empty() || num(f[k + 4]).is_some())
                && (k == 0 || num(f[0]).is_some() || k == 1)
                && (k < 2 || num(f[0]).is_some())
        });
        let Some(k) = perf_k else {
            return Err(bad(
                path,
                ln,
                format!("not a line of pmx stat -x, or perf stat -x, output: '{line}'"),
            ));
        };
        c.format = "perf stat CSV";
        let time = if k >= 1 { num(f[0]) } else { None };
        if time.is_some() {
            c.format = "perf stat CSV (intervals)";
        }
        let (value, unit, event) = (f[k], f[k + 1], f[k + 2]);
        let acc = c.acc(time, event);
        perf_row(acc, value, unit, num(f[k + 3]), num(f[k + 4]));
    }
    if c.events.is_empty() {
        return Err(UsageError(format!("{}: no counts found", path.display())).into());
    }
    Ok(c)
}

fn pmx_row(
    acc: &mut Acc,
    status: &str,
    raw: Option<u64>,
    enabled: Option<u64>,
    running: Option<u64>,
    value: Option<f64>,
    reason: String,
) {
    match status {
        "not-supported" => {
            acc.not_supported = Some(if reason.is_empty() {
                "not supported".into()
            } else {
                reason
            })
        }
        "not-counted" => {
            acc.not_counted = Some(if reason.is_empty() {
                "not counted".into()
            } else {
                reason
            })
        }
        _ => match (raw, enabled, running) {
            // The raw count scaled (task-clock stays in ns, as formulas want).
            (Some(r), Some(e), Some(ru)) if ru > 0 => acc.add_value(
                r as f64 * e as f64 / ru as f64,
                Some(ru as f64 / e.max(1) as f64),
                ru as f64,
            ),
            (Some(r), _, _) => acc.add_value(r as f64, None, 0.0),
            _ => match value {
                Some(v) => acc.add_value(v, None, 0.0),
                None => acc.not_counted = Some("no value in the file".into()),
            },
        },
    }
}

fn perf_row(acc: &mut Acc, value: &str, unit: &str, runtime: Option<f64>, pct: Option<f64>) {
    match value {
        "<not supported>" => acc.not_supported = Some("perf: <not supported>".into()),
        v if v.starts_with("<not") => acc.not_counted = Some(format!("perf: {v}")),
        v => {
            let Some(mut x) = num(v) else {
                acc.not_counted = Some(format!("perf: '{v}'"));
                return;
            };
            // perf shows clocks in msec; formulas count nanoseconds.
            if unit == "msec" {
                x *= 1e6;
            }
            acc.add_value(x, pct.map(|p| p / 100.0), runtime.unwrap_or(0.0));
        }
    }
}

fn jstr<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn jnum(v: &Value, k: &str) -> Option<f64> {
    match v.get(k)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => num(s),
        _ => None,
    }
}

fn parse_json(path: &std::path::Path, text: &str) -> anyhow::Result<Counts> {
    let mut c = Counts::default();
    // The pmx totals document.
    if let Ok(doc) = serde_json::from_str::<Value>(text) {
        if let Some(evs) = doc.get("events").and_then(Value::as_array) {
            c.format = "pmx stat JSON";
            c.cpu = jstr(&doc, "cpu").map(str::to_string);
            c.elapsed = jnum(&doc, "elapsed_s");
            for e in evs {
                pmx_json_row(&mut c, e, None)?;
            }
            c.intervals.iter_mut().for_each(|i| i.duration = c.elapsed);
            return Ok(c);
        }
    }
    for (n, line) in text.lines().enumerate() {
        let ln = n + 1;
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            if let Some(cpu) = cpu_comment(l) {
                c.cpu = Some(cpu);
            }
            continue;
        }
        let v: Value =
            serde_json::from_str(l).map_err(|e| bad(path, ln, format!("not JSON: {e}")))?;
        if !v.is_object() {
            return Err(bad(path, ln, "expected a JSON object"));
        }
        if let Some(cpu) = jstr(&v, "cpu_id") {
            c.cpu = Some(cpu.to_string());
        }
        if v.get("counter-value").is_some() {
            c.format = if v.get("interval").is_some() {
                "perf stat JSON (intervals)"
            } else {
                "perf stat JSON"
            };
            let Some(event) = jstr(&v, "event") else {
                return Err(bad(path, ln, "no \"event\""));
            };
            let value = match v.get("counter-value") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(x)) => x.to_string(),
                _ => return Err(bad(path, ln, "no \"counter-value\"")),
            };
            let time = jnum(&v, "interval");
            let unit = jstr(&v, "unit").unwrap_or("").to_string();
            let (rt, pct) = (jnum(&v, "event-runtime"), jnum(&v, "pcnt-running"));
            let acc = c.acc(time, event);
            perf_row(acc, &value, &unit, rt, pct);
        } else if v.get("event").is_some() {
            c.format = "pmx stat JSON (intervals)";
            let time = jnum(&v, "time");
            pmx_json_row(&mut c, &v, time).map_err(|e| bad(path, ln, e))?;
        } else if v.get("events").is_some() {
            // The totals document pmx writes after its interval lines: the
            // intervals already hold these counts.
            if c.events.is_empty() {
                c.format = "pmx stat JSON";
                c.elapsed = jnum(&v, "elapsed_s");
                for e in v["events"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                    pmx_json_row(&mut c, e, None).map_err(|e| bad(path, ln, e))?;
                }
            }
            continue;
        } else if v.get("metric-value").is_some()
            || v.get("metric-unit").is_some()
            || v.get("metric").is_some()
            || v.get("name").is_some()
        {
            continue; // perf's metric-only lines
        } else {
            return Err(bad(path, ln, "neither a pmx nor a perf stat JSON line"));
        }
    }
    if c.events.is_empty() {
        return Err(UsageError(format!("{}: no counts found", path.display())).into());
    }
    Ok(c)
}

fn pmx_json_row(c: &mut Counts, e: &Value, time: Option<f64>) -> anyhow::Result<()> {
    let event = jstr(e, "event").ok_or_else(|| anyhow::anyhow!("an entry without \"event\""))?;
    let status = jstr(e, "status").unwrap_or("counted").to_string();
    let raw = e.get("raw").and_then(Value::as_u64);
    let en = e.get("time_enabled_ns").and_then(Value::as_u64);
    let ru = e.get("time_running_ns").and_then(Value::as_u64);
    let value = jnum(e, "value");
    let reason = jstr(e, "reason").unwrap_or("").to_string();
    let acc = c.acc(time, event);
    pmx_row(acc, &status, raw, en, ru, value, reason);
    Ok(())
}

/// Read a file of counts in any of the formats pmx understands.
pub(crate) fn read_counts(path: &std::path::Path) -> anyhow::Result<Counts> {
    let bytes = std::fs::read(path).map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| UsageError(format!("{}: not a text file", path.display())))?;
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or("");
    let mut c = if first.starts_with('{') {
        parse_json(path, &text)?
    } else {
        parse_csv(path, &text)?
    };
    c.finish();
    Ok(c)
}

/// The matching key of an event: its encoding when the database resolves
/// it, else [`event_key`].
fn encoding_key(db: &pmx_events::Database, name: &str) -> Option<String> {
    let ek = event_key(name);
    if ek.starts_with("perf_metrics.") || ek == "topdown.slots" || ek == "duration_time" {
        return None;
    }
    let er = EventRef::new(name);
    if er.retire_latency {
        return None;
    }
    let text = er.spec("cpu").unwrap_or_else(|| name.to_string());
    let spec = pmx_model::spec::parse_spec(&text).ok()?;
    let r = db.resolve(&spec).ok()?;
    let a = &r.attr;
    let pmu = if a.pmu.is_empty() {
        "cpu"
    } else {
        a.pmu.as_str()
    };
    // perf's generic events count on Intel's fixed counters: `cycles`,
    // `instructions` and `ref-cycles` are the same inputs as
    // CPU_CLK_UNHALTED.THREAD(_P), INST_RETIRED.ANY(_P) and
    // CPU_CLK_UNHALTED.REF_TSC.
    let mods = format!(
        "{}{}{}",
        u8::from(a.exclude_user),
        u8::from(a.exclude_kernel),
        u8::from(a.exclude_hv)
    );
    let generic = match (a.type_, a.config) {
        (Some(0), 0) => Some("cycles"),
        (Some(0), 1) => Some("instructions"),
        (Some(0), 9) => Some("ref-cycles"),
        (Some(4), c)
            if is_core(pmu)
                && db.target.cpu.vendor == pmx_model::cpu::Vendor::Intel
                && c >> 16 == 0
                && a.config1 == 0 =>
        {
            match c & 0xffff {
                0x0100 | 0x00c0 => Some("instructions"),
                0x0200 | 0x003c => Some("cycles"),
                0x0300 => Some("ref-cycles"),
                _ => None,
            }
        }
        _ => None,
    };
    if let Some(g) = generic {
        return Some(format!("gen:{g}:{mods}"));
    }
    Some(format!(
        "enc:{pmu}:{}:{:#x}:{:#x}:{:#x}:{}{}{}",
        a.type_.map(|t| t.to_string()).unwrap_or_default(),
        a.config,
        a.config1,
        a.config2,
        u8::from(a.exclude_user),
        u8::from(a.exclude_kernel),
        u8::from(a.exclude_hv),
    ))
}

fn is_core(pmu: &str) -> bool {
    pmu == "cpu" || pmu == "cpu_core" || pmu == "cpu_atom"
}

/// A key function over the names of the library and of the file.
pub(crate) fn key_fn<'a>(
    db: &pmx_events::Database,
    names: impl IntoIterator<Item = &'a str>,
) -> pmx_metrics::KeyFn {
    let mut map: HashMap<String, String> = HashMap::new();
    for n in names {
        if !map.contains_key(n) {
            let k = encoding_key(db, n).unwrap_or_else(|| event_key(n));
            map.insert(n.to_string(), k);
        }
    }
    let map = Arc::new(map);
    Arc::new(move |name: &str| map.get(name).cloned().unwrap_or_else(|| event_key(name)))
}

/// Build the inputs of one interval.
fn inputs_of(key: &pmx_metrics::KeyFn, keys: &[String], iv: &Interval) -> Inputs {
    let mut inputs = Inputs::with_key_fn(key.clone());
    inputs.reserve(iv.accs.len());
    for (i, a) in iv.accs.iter().enumerate() {
        inputs.insert_keyed(keys[i].clone(), a.reading());
    }
    inputs.duration = iv.duration;
    inputs
}

/// min, mean, max of a metric over the intervals.
#[derive(Debug, Clone, Copy)]
struct Spread {
    min: f64,
    mean: f64,
    max: f64,
    n: usize,
}

fn spread(values: &[f64]) -> Option<Spread> {
    if values.is_empty() {
        return None;
    }
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    Some(Spread {
        min,
        mean,
        max,
        n: values.len(),
    })
}

struct Row {
    id: MetricId,
    name: String,
    ev: Evaluated,
    spread: Option<Spread>,
    /// For metrics without a value: the counted inputs the file lacks.
    absent: Vec<String>,
}

fn fmt_value(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e7 || v.abs() < 1e-3) {
        format!("{v:.4e}")
    } else {
        format!("{v:.4}")
    }
}

pub fn run(args: &AnalyzeArgs) -> anyhow::Result<i32> {
    let counts = read_counts(&args.file)?;
    let mut db_args = args.db.clone();
    if db_args.cpu.is_none() {
        match &counts.cpu {
            Some(c) => db_args.cpu = Some(c.clone()),
            None => {
                return Err(UsageError(format!(
                    "{}: the file does not say which CPU it was counted on: give --cpu ID (e.g. GenuineIntel-6-5E-3)",
                    args.file.display()
                ))
                .into())
            }
        }
    }
    if args.level == 0 {
        return Err(UsageError("-l 0: levels start at 1".to_string()).into());
    }
    let db = db_args.load()?;
    let cpu = db.target.cpu.clone();
    let events_dir = pmx_events::default_events_dir(db_args.events_dir.clone());
    let lib = Library::for_cpu(Some(&cpu), events_dir.as_deref().filter(|d| d.is_dir()));
    let machine = Machine {
        smt_on: Some(args.smt == "on"),
        threads_per_core: Some(if args.smt == "on" { 2 } else { 1 }),
        core_wide: Some(false),
        cpuid: Some(cpu.to_string()),
        ..Machine::default()
    };
    let names = lib
        .events()
        .iter()
        .map(|e| e.name.as_str())
        .chain(counts.events.iter().map(String::as_str));
    let key = key_fn(&db, names);
    let keys: Vec<String> = counts.events.iter().map(|e| key(e)).collect();
    let totals = counts.totals();
    let total_inputs = inputs_of(&key, &keys, &totals);
    let per_interval: Vec<Inputs> = if counts.is_interval() && counts.intervals.len() > 1 {
        counts
            .intervals
            .iter()
            .map(|iv| inputs_of(&key, &keys, iv))
            .collect()
    } else {
        Vec::new()
    };

    // Which metrics.
    let selected: Vec<Vec<MetricId>> = match &args.metrics {
        Some(list) => lib.select(list).map_err(|u| {
            let mut msg = format!("-M: no metric or group '{}' for {cpu}", u.name);
            if !u.suggestions.is_empty() {
                let _ = write!(msg, " (did you mean {}?)", u.suggestions.join(", "));
            }
            UsageError(msg)
        })?,
        None if args.tma => Vec::new(),
        None => {
            let mut seen: Vec<bool> = vec![false; lib.len()];
            let mut out = Vec::new();
            for (id, _) in lib.iter() {
                if seen[id.index()] {
                    continue;
                }
                let alts = lib.alternatives(id);
                for a in &alts {
                    seen[a.index()] = true;
                }
                out.push(alts);
            }
            out
        }
    };
    let mut rows: Vec<Row> = Vec::new();
    {
        let mut ev = lib.evaluator(&total_inputs, &machine);
        for alts in &selected {
            if alts.is_empty() {
                continue;
            }
            let (id, e) = match ev.first_with_value(alts) {
                Some(x) => x,
                None => (alts[0], ev.metric(alts[0])),
            };
            let absent = if e.value().is_none() {
                lib.absent_inputs(&[id], &total_inputs, Some(&machine))
                    .into_iter()
                    .map(|e| e.name)
                    .collect()
            } else {
                Vec::new()
            };
            rows.push(Row {
                id,
                name: lib.metric(id).name.clone(),
                ev: e,
                spread: None,
                absent,
            });
        }
    }
    if !per_interval.is_empty() {
        let mut vals: Vec<Vec<f64>> = vec![Vec::new(); rows.len()];
        for inputs in &per_interval {
            let mut ev = lib.evaluator(inputs, &machine);
            for (i, r) in rows.iter().enumerate() {
                if r.ev.value().is_some() {
                    if let Some(v) = ev.metric(r.id).value() {
                        vals[i].push(lib.metric(r.id).display_value(v));
                    }
                }
            }
        }
        for (r, v) in rows.iter_mut().zip(vals) {
            r.spread = spread(&v);
        }
    }
    // In the default mode only metrics with at least one input in the file
    // are listed as not computed (the rest of the library is not about
    // this file).
    let default_mode = args.metrics.is_none();
    let tma = if args.tma {
        match lib.tma_tree() {
            Some(tree) => {
                let mut ev = lib.evaluator(&total_inputs, &machine);
                let report = tree.evaluate(&mut ev, args.level);
                let absent = lib.absent_inputs(
                    &tree.metrics_to_level(args.level),
                    &total_inputs,
                    Some(&machine),
                );
                Some((report, absent))
            }
            None => {
                return Err(UsageError(format!("no top-down metrics are known for {cpu}")).into())
            }
        }
    } else {
        None
    };

    let intervals = if counts.is_interval() {
        counts.intervals.len()
    } else {
        0
    };
    if args.json {
        let metric_json = |r: &Row| {
            let m = lib.metric(r.id);
            json!({
                "name": r.name,
                "value": r.ev.value().map(|v| m.display_value(v)),
                "unit": m.unit,
                "reliability": r.ev.reliability,
                "least_running": r.ev.least_running,
                "estimate": r.ev.is_estimate(),
                "missing": r.ev.missing().map(|x| json!({
                    "input": x.input, "reason": x.reason.to_string(), "chain": x.chain, "text": x.to_string(),
                })),
                "absent_inputs": r.absent,
                "intervals": r.spread.map(|s| json!({"n": s.n, "min": s.min, "mean": s.mean, "max": s.max})),
                "assumptions": r.ev.assumptions,
            })
        };
        let computed: Vec<Value> = rows
            .iter()
            .filter(|r| r.ev.value().is_some())
            .map(metric_json)
            .collect();
        let not: Vec<Value> = rows
            .iter()
            .filter(|r| {
                r.ev.value().is_none()
                    && (!default_mode || has_any_input(&lib, r.id, &total_inputs, &machine))
            })
            .map(metric_json)
            .collect();
        let doc = json!({
            "file": args.file.display().to_string(),
            "format": counts.format,
            "cpu": cpu.to_string(),
            "events": counts.events,
            "intervals": intervals,
            "smt_on": args.smt == "on",
            "metrics": computed,
            "not_computed": not,
            "tma": tma.as_ref().map(|(r, absent)| crate::tma::report_json(&lib, r, absent)),
            "warnings": lib.warnings,
        });
        println!("{doc}");
        return Ok(0);
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: {}, {} events{}, CPU {cpu}{}",
        args.file.display(),
        counts.format,
        counts.events.len(),
        if intervals > 0 {
            format!(
                ", {intervals} intervals (values over their sum; min/mean/max per interval beside)"
            )
        } else {
            String::new()
        },
        if args.smt == "on" {
            ", SMT on"
        } else {
            ", SMT off (--smt on if it was on)"
        },
    );
    let shown: Vec<&Row> = rows.iter().filter(|r| r.ev.value().is_some()).collect();
    if !selected.is_empty() {
        let w = shown
            .iter()
            .map(|r| r.name.len())
            .max()
            .unwrap_or(10)
            .clamp(10, 48);
        let _ = writeln!(s, "\nMetrics ({} computed):", shown.len());
        for r in &shown {
            let m = lib.metric(r.id);
            let v = m.display_value(r.ev.value().unwrap_or(0.0));
            let mut tail = String::new();
            if let Some(rel) = r.ev.reliability {
                let _ = write!(tail, "  reliability {:.0}%", rel * 100.0);
            }
            if r.ev.is_estimate() {
                let _ = write!(
                    tail,
                    "  ESTIMATE ({} ran {:.0}% of the time)",
                    r.ev.least_running.as_deref().unwrap_or("an input"),
                    r.ev.reliability.unwrap_or(0.0) * 100.0
                );
            }
            if let Some(sp) = r.spread {
                let _ = write!(
                    tail,
                    "  per interval min {} mean {} max {}",
                    fmt_value(sp.min),
                    fmt_value(sp.mean),
                    fmt_value(sp.max)
                );
            }
            let _ = writeln!(
                s,
                "  {:<w$} {:>14} {:<8}{tail}",
                r.name,
                fmt_value(v),
                m.unit
            );
        }
        let not: Vec<&Row> = rows
            .iter()
            .filter(|r| {
                r.ev.value().is_none()
                    && (!default_mode || has_any_input(&lib, r.id, &total_inputs, &machine))
            })
            .collect();
        if !not.is_empty() {
            let _ = writeln!(s, "\nNot computed ({}):", not.len());
            for r in &not {
                let why = r.ev.missing().map(|m| m.to_string()).unwrap_or_default();
                if r.absent.is_empty() {
                    let _ = writeln!(s, "  {}: {why}", r.name);
                } else {
                    const SHOW: usize = 6;
                    let mut list = r.absent[..r.absent.len().min(SHOW)].join(", ");
                    if r.absent.len() > SHOW {
                        let _ = write!(
                            list,
                            " and {} more (--json lists all)",
                            r.absent.len() - SHOW
                        );
                    }
                    let _ = writeln!(s, "  {}: missing {list}", r.name);
                }
            }
        }
        if default_mode {
            let other = rows.iter().filter(|r| r.ev.value().is_none()).count() - not.len();
            if other > 0 {
                let _ = writeln!(
                    s,
                    "\n({other} other metrics of the library have none of their inputs in the file; name them with -M to see what they need)"
                );
            }
        }
    }
    if let Some((report, absent)) = &tma {
        s.push('\n');
        s.push_str(&crate::tma::render(&lib, report, args.level, absent, false));
    }
    for w in &lib.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    print!("{s}");
    Ok(0)
}

/// Does the file have a reading for any counted input of `id`?
fn has_any_input(lib: &Library, id: MetricId, inputs: &Inputs, machine: &Machine) -> bool {
    lib.requirements(&[id], false, Some(machine))
        .events
        .iter()
        .any(|e| inputs.get(&e.name).is_some())
}
