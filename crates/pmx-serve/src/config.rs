//! `pmx serve --config FILE`: a small `key = value` file.
//!
//! ```text
//! # pmx serve configuration
//! listen = 127.0.0.1:9464
//! events = task-clock,page-faults       # repeatable: lists add up
//! events = context-switches
//! metrics = IPC                         # names or groups, as -M
//! per = cpu                             # cpu | core | socket
//! define faults_per_second = page-faults / duration_time
//! max-connections = 32
//! profiles = on                         # /debug/pprof/profile (on | off)
//! profile-events = {cycles,instructions}:S
//! profile-max-seconds = 300
//! profile-max-hz = 1000
//! profile-sessions = 2
//! profile-keepalive = 5                 # s: a vanished client is seen within 4×
//! profile-symbol-cache = 64             # MiB of binaries' tables kept between profiles
//! write-timeout = 10                    # s to take an answer, then closed
//! ```
//!
//! One setting per line; `#` starts a comment (outside quotes); a value may
//! be wrapped in double quotes. `define NAME = FORMULA` adds a user metric
//! (pmx's formula language, `duration_time` is the window in seconds) and
//! exports it. Unknown keys, malformed lines and bad values are errors that
//! name the line. Command-line flags override the file.

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;

/// Default listen address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9464";
/// Default cap on open connections (at the cap the oldest waiting one is
/// closed to make room).
pub const DEFAULT_MAX_CONNECTIONS: usize = 32;

/// How the series are split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Per {
    /// One series per CPU (default).
    Cpu,
    /// One per physical core.
    Core,
    /// One per package.
    Socket,
}

impl Per {
    /// Parse `cpu`, `core`, `socket` (also `package`).
    pub fn parse(s: &str) -> Option<Per> {
        match s {
            "cpu" => Some(Per::Cpu),
            "core" => Some(Per::Core),
            "socket" | "package" => Some(Per::Socket),
            _ => None,
        }
    }

    /// The matching aggregation.
    pub fn aggregation(self) -> pmx_count::stat::Aggregation {
        match self {
            Per::Cpu => pmx_count::stat::Aggregation::PerCpu,
            Per::Core => pmx_count::stat::Aggregation::PerCore,
            Per::Socket => pmx_count::stat::Aggregation::PerSocket,
        }
    }
}

/// What a configuration file sets (each `None`/empty when not set).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileConfig {
    /// `listen`.
    pub listen: Option<SocketAddr>,
    /// `events`, each line one `-e` list.
    pub events: Vec<String>,
    /// `metrics`, each line one `-M` list.
    pub metrics: Vec<String>,
    /// `per`.
    pub per: Option<Per>,
    /// `define NAME = FORMULA`: user metrics, in order.
    pub defines: Vec<(String, String)>,
    /// `max-connections`.
    pub max_connections: Option<usize>,
    /// `profiles = on|off`.
    pub profiles: Option<bool>,
    /// `profile-events`.
    pub profile_events: Option<String>,
    /// `profile-max-seconds`.
    pub profile_max_seconds: Option<u64>,
    /// `profile-max-hz`.
    pub profile_max_hz: Option<u32>,
    /// `profile-sessions`.
    pub profile_sessions: Option<usize>,
    /// `profile-keepalive`: seconds of silence before, and between, the
    /// TCP keepalive probes of a profile's connection.
    pub profile_keepalive: Option<u64>,
    /// `profile-symbol-cache`: MiB of parsed binaries (symbol and line
    /// tables) kept between profiles.
    pub profile_symbol_cache: Option<u64>,
    /// `write-timeout`: seconds a client has to take an answer.
    pub write_timeout: Option<u64>,
}

/// A configuration error, with the line it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// 1-based line number (0: the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// Strip a comment that is not inside double quotes.
fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '#' if !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

fn unquote(v: &str, line: usize) -> Result<String, ConfigError> {
    let v = v.trim();
    if let Some(inner) = v.strip_prefix('"') {
        return inner
            .strip_suffix('"')
            .filter(|i| !i.contains('"'))
            .map(str::to_string)
            .ok_or(ConfigError {
                line,
                message: format!("unbalanced quotes in {v}"),
            });
    }
    Ok(v.to_string())
}

fn positive(value: &str, key: &str, line: usize) -> Result<u64, ConfigError> {
    value
        .parse()
        .ok()
        .filter(|&m| m > 0)
        .ok_or_else(|| ConfigError {
            line,
            message: format!("{key}: '{value}' is not a positive number"),
        })
}

impl FileConfig {
    /// Parse the text of a configuration file.
    pub fn parse(text: &str) -> Result<FileConfig, ConfigError> {
        let mut c = FileConfig::default();
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = strip_comment(raw).trim();
            if line.is_empty() {
                continue;
            }
            let err = |message: String| ConfigError { line: n, message };
            if let Some(rest) = line
                .strip_prefix("define ")
                .or(line.strip_prefix("define\t"))
            {
                let (name, formula) = rest
                    .split_once('=')
                    .ok_or_else(|| err("define needs NAME = FORMULA".into()))?;
                let name = name.trim();
                if name.is_empty()
                    || !name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
                {
                    return Err(err(format!(
                        "define: '{name}' is not a metric name (letters, digits, _ and .)"
                    )));
                }
                let formula = unquote(formula, n)?;
                if formula.is_empty() {
                    return Err(err(format!("define {name}: the formula is empty")));
                }
                c.defines.push((name.to_string(), formula));
                continue;
            }
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| err(format!("expected key = value, found '{line}'")))?;
            let key = key.trim();
            let value = unquote(value, n)?;
            if value.is_empty() {
                return Err(err(format!("{key}: empty value")));
            }
            match key {
                "listen" => {
                    c.listen = Some(value.parse().map_err(|_| {
                        err(format!(
                            "listen: '{value}' is not ADDRESS:PORT (e.g. 127.0.0.1:9464)"
                        ))
                    })?)
                }
                "events" | "event" => c.events.push(value),
                "metrics" | "metric" => c.metrics.push(value),
                "per" => {
                    c.per =
                        Some(Per::parse(&value).ok_or_else(|| {
                            err(format!("per: '{value}' is not cpu, core or socket"))
                        })?)
                }
                "max-connections" | "max_connections" => {
                    let m: usize = value.parse().ok().filter(|&m| m > 0).ok_or_else(|| {
                        err(format!(
                            "max-connections: '{value}' is not a positive number"
                        ))
                    })?;
                    c.max_connections = Some(m);
                }
                "profiles" => {
                    c.profiles = Some(match value.as_str() {
                        "on" | "true" | "yes" => true,
                        "off" | "false" | "no" => false,
                        _ => return Err(err(format!("profiles: '{value}' is not on or off"))),
                    })
                }
                "profile-events" | "profile_events" => c.profile_events = Some(value),
                "profile-max-seconds" | "profile_max_seconds" => {
                    c.profile_max_seconds = Some(positive(&value, "profile-max-seconds", n)?)
                }
                "profile-max-hz" | "profile_max_hz" => {
                    let hz = positive(&value, "profile-max-hz", n)?;
                    c.profile_max_hz = Some(u32::try_from(hz).map_err(|_| {
                        err(format!("profile-max-hz: '{value}' is too large"))
                    })?)
                }
                "profile-sessions" | "profile_sessions" => {
                    c.profile_sessions = Some(positive(&value, "profile-sessions", n)? as usize)
                }
                "profile-keepalive" | "profile_keepalive" => {
                    c.profile_keepalive = Some(positive(&value, "profile-keepalive", n)?)
                }
                "profile-symbol-cache" | "profile_symbol_cache" => {
                    c.profile_symbol_cache = Some(positive(&value, "profile-symbol-cache", n)?)
                }
                "write-timeout" | "write_timeout" => {
                    c.write_timeout = Some(positive(&value, "write-timeout", n)?)
                }
                other => {
                    return Err(err(format!(
                    "unknown key '{other}' (listen, events, metrics, per, define, max-connections, profiles, profile-events, profile-max-seconds, profile-max-hz, profile-sessions, profile-keepalive, profile-symbol-cache, write-timeout)"
                )))
                }
            }
        }
        Ok(c)
    }

    /// Read and parse a file.
    pub fn load(path: &Path) -> Result<FileConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            line: 0,
            message: format!("{}: {e}", path.display()),
        })?;
        FileConfig::parse(&text).map_err(|e| ConfigError {
            line: 0,
            message: format!("{}: {e}", path.display()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file() {
        let c = FileConfig::parse(
            "# comment\nlisten = 127.0.0.1:9000\nevents = task-clock,page-faults # two\n\
             events = \"{a,b}\"\nmetrics=IPC\nper = core\n\
             define fps = page-faults / duration_time\nmax-connections = 4\n\
             profiles = off\nprofile-events = \"{cycles,instructions}:S\"\n\
             profile-max-seconds = 60\nprofile-max-hz = 200\nprofile-sessions = 3\n\
             profile-keepalive = 2\nwrite-timeout = 7\nprofile-symbol-cache = 128\n",
        )
        .unwrap();
        assert_eq!((c.profile_keepalive, c.write_timeout), (Some(2), Some(7)));
        assert_eq!(c.profile_symbol_cache, Some(128));
        assert_eq!(c.profiles, Some(false));
        assert_eq!(c.profile_events.as_deref(), Some("{cycles,instructions}:S"));
        assert_eq!(
            (c.profile_max_seconds, c.profile_max_hz, c.profile_sessions),
            (Some(60), Some(200), Some(3))
        );
        assert_eq!(c.listen, Some("127.0.0.1:9000".parse().unwrap()));
        assert_eq!(c.events, vec!["task-clock,page-faults", "{a,b}"]);
        assert_eq!(c.metrics, vec!["IPC"]);
        assert_eq!(c.per, Some(Per::Core));
        assert_eq!(
            c.defines,
            vec![("fps".to_string(), "page-faults / duration_time".to_string())]
        );
        assert_eq!(c.max_connections, Some(4));
    }

    #[test]
    fn errors_name_the_line() {
        let e = FileConfig::parse("listen = 1.2.3.4:1\nbogus = 3\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("unknown key 'bogus'"));
        for bad in [
            "listen = nowhere",
            "per = thread",
            "just words",
            "max-connections = 0",
            "events = \"open",
            "define = x",
            "define a b = 1",
            "events =",
            "profiles = maybe",
            "profile-max-seconds = 0",
            "profile-sessions = -1",
            "profile-keepalive = 0",
            "profile-symbol-cache = lots",
            "write-timeout = soon",
        ] {
            let e = FileConfig::parse(bad).unwrap_err();
            assert_eq!(e.line, 1, "{bad}");
        }
    }
}
