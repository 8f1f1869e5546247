//! The plain values a counting run reports: the [`Domain`] a row covers,
//! the [`Row`]s themselves, an event's [`EventStatus`] and the [`Spread`]
//! of repeated runs. They hold no behaviour beyond small accessors, so
//! renderers and readers of result files can use them without the engine.

use pmx_model::count::Count;
use serde::Serialize;

/// Below this running share a count is an estimate.
pub const ESTIMATE_BELOW: f64 = 0.7;

/// Why an event has no count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "reason", rename_all = "kebab-case")]
pub enum EventStatus {
    /// Opened and read.
    Counted,
    /// Could not be opened here.
    NotSupported(String),
    /// Opened but never ran (or its group could not be opened).
    NotCounted(String),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread() {
        let s = Spread::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.mean, 5.0);
        assert!((s.stddev - 2.138).abs() < 1e-3);
        assert!(Spread::of(&[]).is_none());
        assert_eq!(Spread::of(&[3.0]).unwrap().stddev, 0.0);
    }
}
