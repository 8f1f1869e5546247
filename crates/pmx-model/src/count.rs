//! A counter reading: the value and how long the counter was enabled and
//! actually running (multiplexing makes `running < enabled`).

use serde::{Deserialize, Serialize};

/// One reading of one counter, as `read(2)` on a perf event returns it with
/// `PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Count {
    /// Raw counter value.
    pub value: u64,
    /// Nanoseconds the event was enabled.
    pub enabled: u64,
    /// Nanoseconds the event was actually on a counter.
    pub running: u64,
}

impl Count {
    /// Share of the enabled time the event was running, in `[0, 1]`;
    /// `None` when it was never enabled.
    pub fn running_share(&self) -> Option<f64> {
        if self.enabled == 0 {
            None
        } else {
            Some((self.running as f64 / self.enabled as f64).min(1.0))
        }
    }

    /// The value scaled for multiplexing (`value × enabled / running`);
    /// `None` when the event never ran, so there is nothing to scale.
    pub fn scaled(&self) -> Option<f64> {
        if self.running == 0 {
            if self.enabled == 0 && self.value != 0 {
                return Some(self.value as f64);
            }
            return None;
        }
        if self.running >= self.enabled {
            return Some(self.value as f64);
        }
        Some(self.value as f64 * self.enabled as f64 / self.running as f64)
    }

    /// The difference between two readings of the same counter (for
    /// intervals); saturates instead of wrapping.
    pub fn delta_since(&self, earlier: &Count) -> Count {
        Count {
            value: self.value.saturating_sub(earlier.value),
            enabled: self.enabled.saturating_sub(earlier.enabled),
            running: self.running.saturating_sub(earlier.running),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_follows_enabled_over_running() {
        let c = Count {
            value: 500,
            enabled: 1000,
            running: 250,
        };
        assert_eq!(c.running_share(), Some(0.25));
        assert_eq!(c.scaled(), Some(2000.0));
        let never = Count {
            value: 0,
            enabled: 1000,
            running: 0,
        };
        assert_eq!(never.scaled(), None);
        let full = Count {
            value: 7,
            enabled: 10,
            running: 10,
        };
        assert_eq!(full.scaled(), Some(7.0));
    }

    #[test]
    fn delta_of_two_readings() {
        let a = Count {
            value: 10,
            enabled: 100,
            running: 50,
        };
        let b = Count {
            value: 25,
            enabled: 300,
            running: 150,
        };
        assert_eq!(
            b.delta_since(&a),
            Count {
                value: 15,
                enabled: 200,
                running: 100
            }
        );
    }
}
