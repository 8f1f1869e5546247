//! `--switch-output`: one recording written as several files. When the
//! current file holds SIZE bytes of records, or TIME has passed since it
//! began, or SIGUSR2 arrives (`signal`), it is finished (its features
//! written) and renamed `OUTPUT.YYYYmmddHHMMSScc` (UTC), and a new one
//! begins; the last one is renamed too, as perf does. A new file starts
//! with the side-band records seen so far (COMM, MMAP, MMAP2, FORK,
//! EXIT: who ran what where), so each file reports on its own.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// When to switch to a new file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchOutput {
    /// On SIGUSR2.
    Signal,
    /// When the file holds this many bytes of records.
    Size(u64),
    /// When the file is this old.
    Time(Duration),
}

impl SwitchOutput {
    /// perf's forms: `signal`, a size (`100M`; B, K, M, G), a time
    /// (`30s`; s, m, h, d; `m` is minutes, `M` megabytes).
    pub fn parse(s: &str) -> Result<SwitchOutput, String> {
        if s == "signal" {
            return Ok(SwitchOutput::Signal);
        }
        let bad = || {
            format!("--switch-output={s}: give signal, a size (100M: B, K, M, G) or a time (30s: s, m, h, d)")
        };
        let split = s.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let n: u64 = s[..split].parse().map_err(|_| bad())?;
        // perf's tags: B K M G for sizes, s m h d for times (case matters).
        let unit = &s[split..];
        let size = |k: u64| n.checked_mul(k).map(SwitchOutput::Size).ok_or_else(bad);
        let time = |k: u64| {
            n.checked_mul(k)
                .map(|v| SwitchOutput::Time(Duration::from_secs(v)))
                .ok_or_else(bad)
        };
        match unit {
            "B" => size(1),
            "K" => size(1 << 10),
            "M" => size(1 << 20),
            "G" => size(1 << 30),
            "s" => time(1),
            "m" => time(60),
            "h" => time(3600),
            "d" => time(86_400),
            _ => Err(bad()),
        }
        .and_then(|v| match v {
            SwitchOutput::Size(0) | SwitchOutput::Time(Duration::ZERO) => Err(bad()),
            v => Ok(v),
        })
    }
}

/// The side-band record types a new file starts with.
pub(super) fn is_side_band(kind: u32) -> bool {
    matches!(kind, 1 | 3 | 4 | 7 | 10)
}

/// The switching state of a recording.
pub(super) struct Switch {
    pub(super) when: SwitchOutput,
    pub(super) started: Instant,
    /// The bytes the current file began with (the side band replayed into
    /// it): they never count towards a size switch, or a side band larger
    /// than the size would switch on every drain.
    pub(super) base: u64,
    /// The side-band records so far.
    pub(super) side_band: Vec<Vec<u8>>,
    /// The files finished so far.
    pub(super) files: Vec<PathBuf>,
}

impl Switch {
    pub(super) fn new(when: SwitchOutput) -> Switch {
        Switch {
            when,
            started: Instant::now(),
            base: 0,
            side_band: Vec::new(),
            files: Vec::new(),
        }
    }

    /// Time to switch, the current file holding `bytes` of records?
    pub(super) fn due(&self, bytes: u64) -> bool {
        match self.when {
            SwitchOutput::Signal => pmx_count::signals::take_switch(),
            SwitchOutput::Size(n) => bytes.saturating_sub(self.base) >= n,
            SwitchOutput::Time(t) => self.started.elapsed() >= t,
        }
    }
}

/// `path.YYYYmmddHHMMSScc` (UTC, as perf names them in local time), one
/// not taken yet.
pub(super) fn stamped(path: &Path) -> PathBuf {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let (secs, cs) = (now.as_secs(), now.subsec_millis() / 10);
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let stamp = format!(
        "{y:04}{m:02}{d:02}{:02}{:02}{:02}{cs:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    );
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{stamp}"));
    let mut p = PathBuf::from(name);
    let mut n = 1;
    while p.exists() {
        let mut again = path.as_os_str().to_owned();
        again.push(format!(".{stamp}.{n}"));
        p = PathBuf::from(again);
        n += 1;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_forms() {
        assert_eq!(SwitchOutput::parse("signal"), Ok(SwitchOutput::Signal));
        assert_eq!(SwitchOutput::parse("10M"), Ok(SwitchOutput::Size(10 << 20)));
        assert_eq!(SwitchOutput::parse("1K"), Ok(SwitchOutput::Size(1024)));
        assert_eq!(
            SwitchOutput::parse("2m"),
            Ok(SwitchOutput::Time(Duration::from_secs(120)))
        );
        assert_eq!(
            SwitchOutput::parse("30s"),
            Ok(SwitchOutput::Time(Duration::from_secs(30)))
        );
        assert_eq!(
            SwitchOutput::parse("2h"),
            Ok(SwitchOutput::Time(Duration::from_secs(7200)))
        );
        for bad in ["", "x", "10", "0M", "5q", "M"] {
            assert!(SwitchOutput::parse(bad).is_err(), "{bad}");
        }
        let p = stamped(Path::new("/nonexistent/perf.data"));
        let s = p.to_str().unwrap();
        assert_eq!(s.len(), "/nonexistent/perf.data.".len() + 16, "{s}");
    }
}
