//! The values a counting result is made of, shared by the library that
//! produces them (`pmx::stat`, which re-exports them under their old
//! paths) and the writers and readers here: the domain a row covers, the
//! status of an event, one row, the spread over repeats, how the command
//! ended, one metric line.

use pmx_model::count::Count;
use serde::Serialize;

/// Below this running share a count is an estimate.
pub const ESTIMATE_BELOW: f64 = 0.7;

/// Why an event has no count.
///
/// Serialized as `{"status": "not-supported", "reason": "<text>"}`, the
/// reason as its rendered text ([`Reason`]'s `Display`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "reason", rename_all = "kebab-case")]
pub enum EventStatus {
    /// Opened and read.
    Counted,
    /// Could not be opened here.
    NotSupported(Reason),
    /// Opened but never ran (or its group could not be opened).
    NotCounted(Reason),
}

/// Why an event (or a report's input) has no count, in two parts: the
/// `cause`, the same for every event that fails for it (so a report can
/// group events by it), and an optional `detail` specific to this event
/// (which event in a list, which CPU's tables).
///
/// Both parts are kept as given when the reason is made, where the error
/// is known; a reader asks for [`Reason::cause`] and [`Reason::detail`]
/// and never takes the text apart. The text is `detail: cause`, or the
/// cause alone ([`Reason::as_str`], `Display`, and the serialized form).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reason {
    /// The whole text: `detail: cause`, or `cause`.
    text: String,
    /// Where the cause starts in `text` (0 without a detail).
    cause_at: usize,
}

impl Reason {
    /// A reason with no event-specific part.
    pub fn new(cause: impl Into<String>) -> Reason {
        Reason {
            text: cause.into(),
            cause_at: 0,
        }
    }

    /// A reason whose `detail` is specific to the event and whose `cause`
    /// is shared by every event failing for it.
    pub fn with_detail(detail: impl std::fmt::Display, cause: impl std::fmt::Display) -> Reason {
        let detail = detail.to_string();
        Reason {
            cause_at: detail.len() + 2,
            text: format!("{detail}: {cause}"),
        }
    }

    /// The part shared by every event failing for the same cause.
    pub fn cause(&self) -> &str {
        &self.text[self.cause_at..]
    }

    /// The part specific to this event, when there is one.
    pub fn detail(&self) -> Option<&str> {
        (self.cause_at > 0).then(|| &self.text[..self.cause_at - 2])
    }

    /// The whole text: `detail: cause`, or the cause alone.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl From<String> for Reason {
    fn from(cause: String) -> Reason {
        Reason::new(cause)
    }
}

impl From<&str> for Reason {
    fn from(cause: &str) -> Reason {
        Reason::new(cause)
    }
}

/// The domain a row covers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Domain {
    /// Everything.
    Total,
    /// One CPU.
    Cpu {
        /// CPU number.
        cpu: u32,
    },
    /// One core.
    Core {
        /// Package.
        package: u32,
        /// Core id.
        core: u32,
    },
    /// One package.
    Socket {
        /// Package.
        package: u32,
    },
    /// One thread.
    Thread {
        /// Thread id.
        tid: i32,
    },
}

impl Domain {
    /// Short label: `CPU1`, `S0-C3`, `S0`, `tid 1234`.
    pub fn label(&self) -> String {
        match self {
            Domain::Total => String::new(),
            Domain::Cpu { cpu } => format!("CPU{cpu}"),
            Domain::Core { package, core } => format!("S{package}-C{core}"),
            Domain::Socket { package } => format!("S{package}"),
            Domain::Thread { tid } => format!("tid {tid}"),
        }
    }
}

/// One output row: one event in one domain.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Index into the plan's events.
    pub event: usize,
    /// The domain.
    pub domain: Domain,
    /// Summed raw value, enabled and running times.
    pub count: Count,
    /// Value scaled for multiplexing (per instance, then summed), times the
    /// event's scale; `None` when it never ran.
    pub value: Option<f64>,
    /// running / enabled.
    pub running_share: Option<f64>,
    /// How many counters were summed.
    pub instances: usize,
}

impl Row {
    /// Ran less than [`ESTIMATE_BELOW`] of the time.
    pub fn is_estimate(&self) -> bool {
        self.running_share.is_some_and(|s| s < ESTIMATE_BELOW)
    }
}

/// Mean, standard deviation and relative spread over repeated runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Number of runs with a value.
    pub runs: usize,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation.
    pub stddev: f64,
    /// stddev / mean, as a fraction.
    pub relative: f64,
}

impl Spread {
    /// Statistics of `values`; `None` when empty.
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = if values.len() > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        let stddev = var.sqrt();
        let relative = if mean != 0.0 {
            stddev / mean.abs()
        } else {
            0.0
        };
        Some(Spread {
            runs: values.len(),
            mean,
            stddev,
            relative,
        })
    }
}

impl Domain {
    /// The domain a label names ([`Domain::label`] read back): `""` is the
    /// total, `CPU3`, `S0-C1`, `S0`, `tid 123`; `None` for anything else.
    pub fn parse_label(label: &str) -> Option<Domain> {
        if label.is_empty() {
            return Some(Domain::Total);
        }
        if let Some(cpu) = label.strip_prefix("CPU") {
            return cpu.parse().ok().map(|cpu| Domain::Cpu { cpu });
        }
        if let Some(tid) = label.strip_prefix("tid ") {
            return tid.parse().ok().map(|tid| Domain::Thread { tid });
        }
        let rest = label.strip_prefix('S')?;
        match rest.split_once("-C") {
            Some((p, c)) => Some(Domain::Core {
                package: p.parse().ok()?,
                core: c.parse().ok()?,
            }),
            None => rest.parse().ok().map(|package| Domain::Socket { package }),
        }
    }
}

/// One run's count of one event in one domain: what `pmx stat -r N`
/// keeps of every run beside the mean, so that runs can be compared later
/// (`pmx compare`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RunCount {
    /// The scaled value (as [`Row::value`]); `None` when it did not run.
    pub value: Option<f64>,
    /// The raw count.
    pub raw: u64,
    /// Time enabled in ns.
    pub time_enabled_ns: u64,
    /// Time running in ns.
    pub time_running_ns: u64,
}

impl RunCount {
    /// The run's values of `row`.
    pub fn of(row: &Row) -> RunCount {
        RunCount {
            value: row.value,
            raw: row.count.value,
            time_enabled_ns: row.count.enabled,
            time_running_ns: row.count.running,
        }
    }

    /// Ran less than [`ESTIMATE_BELOW`] of the time it was enabled.
    pub fn is_estimate(&self) -> bool {
        self.time_enabled_ns > 0
            && (self.time_running_ns as f64) < ESTIMATE_BELOW * self.time_enabled_ns as f64
    }
}

/// One run's value of one metric (`pmx stat -r N -M …`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RunMetric {
    /// The value; `None` when an input was missing in that run.
    pub value: Option<f64>,
    /// Smallest running share among the inputs in that run.
    pub reliability: Option<f64>,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "how", rename_all = "lowercase")]
pub enum Exit {
    /// Exited with this status.
    Code {
        /// The status.
        code: i32,
    },
    /// Killed by this signal.
    Signal {
        /// The signal number.
        signal: i32,
    },
}

impl Exit {
    /// From a `waitpid` status of a task that ended (exited or killed),
    /// decoded as Linux lays it out: the signal in the low 7 bits (0 when
    /// it exited), the exit code in the next byte.
    pub fn from_wait_status(st: i32) -> Exit {
        let signal = st & 0x7f;
        // 0x7f in the low bits is a stopped task, not a killed one.
        if signal != 0 && signal != 0x7f {
            Exit::Signal { signal }
        } else {
            Exit::Code {
                code: (st >> 8) & 0xff,
            }
        }
    }

    /// The shell's view: the code, or 128 + signal.
    pub fn shell_code(&self) -> i32 {
        match *self {
            Exit::Code { code } => code,
            Exit::Signal { signal } => 128 + signal,
        }
    }
}

/// One derived metric in one domain.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MetricLine {
    /// The metric's name.
    pub name: String,
    /// Domain label (empty for totals).
    pub domain: String,
    /// The value, or `None` when an input is missing.
    pub value: Option<f64>,
    /// Unit (`%`, `GHz`…), may be empty.
    pub unit: String,
    /// Smallest running share among the inputs used.
    pub reliability: Option<f64>,
    /// Reliability below 0.7.
    pub estimate: bool,
    /// Why there is no value: the chain down to the missing input.
    pub missing: Option<String>,
}

/// The events a result's rows point into (`Row::event` is an index), as
/// the writers need them: `pmx::stat::StatPlan` is one.
pub trait EventTable: std::fmt::Debug {
    /// How many events.
    fn len(&self) -> usize;
    /// No events at all.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Event `i` as typed.
    fn name(&self, i: usize) -> &str;
    /// Its unit (`msec`, a sysfs unit), if it has one.
    fn unit(&self, i: usize) -> Option<&str>;
    /// Its group's index.
    fn group(&self, i: usize) -> usize;
}

/// A plain list of events, for results that were not planned here (read
/// from a file, built in tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventList {
    /// Per event: name, unit, group.
    pub events: Vec<(String, Option<String>, usize)>,
}

impl EventTable for EventList {
    fn len(&self) -> usize {
        self.events.len()
    }
    fn name(&self, i: usize) -> &str {
        &self.events[i].0
    }
    fn unit(&self, i: usize) -> Option<&str> {
        self.events[i].1.as_deref()
    }
    fn group(&self, i: usize) -> usize {
        self.events[i].2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread() {
        let s = Spread::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.mean, 5.0);
        assert!(Spread::of(&[]).is_none());
        assert_eq!(Spread::of(&[3.0]).unwrap().stddev, 0.0);
    }

    #[test]
    fn labels_read_back() {
        for d in [
            Domain::Total,
            Domain::Cpu { cpu: 17 },
            Domain::Core {
                package: 1,
                core: 3,
            },
            Domain::Socket { package: 2 },
            Domain::Thread { tid: 4321 },
        ] {
            assert_eq!(Domain::parse_label(&d.label()), Some(d));
        }
        assert_eq!(Domain::parse_label("node0"), None);
    }

    #[test]
    fn wait_status() {
        assert_eq!(Exit::from_wait_status(3 << 8), Exit::Code { code: 3 });
        assert_eq!(Exit::from_wait_status(9), Exit::Signal { signal: 9 });
        assert_eq!(Exit::Code { code: 3 }.shell_code(), 3);
        assert_eq!(Exit::Signal { signal: 9 }.shell_code(), 137);
    }

    #[test]
    fn a_reason_keeps_its_parts_and_serializes_as_its_text() {
        let r = Reason::with_detail("cycles", "no PMU: none at all");
        assert_eq!(r.detail(), Some("cycles"));
        assert_eq!(r.cause(), "no PMU: none at all");
        assert_eq!(r.to_string(), "cycles: no PMU: none at all");
        let plain = Reason::new("a: b");
        assert_eq!((plain.detail(), plain.cause()), (None, "a: b"));
        let json = serde_json::to_string(&EventStatus::NotSupported(r)).unwrap();
        assert_eq!(
            json,
            r#"{"status":"not-supported","reason":"cycles: no PMU: none at all"}"#
        );
    }
}
