//! The query of `GET /debug/pprof/profile`: `seconds` (default 30, as Go's
//! `net/http/pprof`), `hz` (default 100), and the filters `pid` (a comma
//! list), `comm` (a command name, exactly) and `cgroup` (a cgroup path and
//! everything under it); `offcpu=1` asks for where threads waited instead
//! of where they ran (`hz` is then not used). Values are percent-decoded; a bad or out-of-range
//! value is an error whose text is the 400's body. Other keys are ignored,
//! as Go's handler ignores them.

/// Default profile length, in seconds (Go's).
pub const DEFAULT_SECONDS: u64 = 30;
/// Default sampling rate, per CPU.
pub const DEFAULT_HZ: u32 = 100;

/// What a profile request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// How long to sample.
    pub seconds: u64,
    /// Samples per second per CPU.
    pub hz: u32,
    /// Only these processes (empty: all).
    pub pids: Vec<u32>,
    /// Only threads of this name.
    pub comm: Option<String>,
    /// Only processes in this cgroup or below it.
    pub cgroup: Option<String>,
    /// `offcpu=1`: the off-CPU profile (`offcpu=0`: the CPU profile).
    pub offcpu: bool,
}

/// The limits a query is checked against.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest profile.
    pub max_seconds: u64,
    /// Highest rate.
    pub max_hz: u32,
}

/// `%XX` and `+` decoded; `None` for a broken escape or text that is not UTF-8.
pub fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

fn number(key: &str, v: &str, max: u64, what: &str, limit_key: &str) -> Result<u64, String> {
    let n: u64 = v
        .parse()
        .map_err(|_| format!("{key}={v}: not a whole number of {what} (give 1 to {max})"))?;
    if n == 0 {
        return Err(format!("{key}=0: give 1 to {max} {what}"));
    }
    if n > max {
        return Err(format!(
            "{key}={v}: more than the maximum of {max} {what} (pmx serve's {limit_key})"
        ));
    }
    Ok(n)
}

impl Query {
    /// Parse the query string (after the `?`).
    pub fn parse(query: &str, limits: Limits) -> Result<Query, String> {
        let mut q = Query {
            seconds: DEFAULT_SECONDS.min(limits.max_seconds),
            hz: DEFAULT_HZ.min(limits.max_hz),
            pids: Vec::new(),
            comm: None,
            cgroup: None,
            offcpu: false,
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let (Some(k), Some(v)) = (decode(k), decode(v)) else {
                return Err(format!("{pair}: bad percent-encoding"));
            };
            match k.as_str() {
                "seconds" => {
                    let max = limits.max_seconds;
                    q.seconds = number("seconds", &v, max, "seconds", "profile-max-seconds")?
                }
                "hz" => {
                    let max = u64::from(limits.max_hz);
                    q.hz = number("hz", &v, max, "samples per second", "profile-max-hz")? as u32
                }
                "pid" => {
                    for p in v.split(',') {
                        let pid = p.trim().parse::<u32>().ok();
                        let pid = pid.filter(|&p| p > 0 && p <= i32::MAX as u32);
                        q.pids.push(pid.ok_or_else(|| {
                            format!("pid={v}: '{p}' is not a process id (pid=1234 or pid=1,2)")
                        })?);
                    }
                }
                "comm" if v.is_empty() => return Err("comm=: give a command name".into()),
                "comm" => q.comm = Some(v),
                "cgroup" if !v.starts_with('/') => {
                    return Err(format!(
                        "cgroup={v}: give a cgroup path from the root, e.g. /system.slice"
                    ))
                }
                "cgroup" => q.cgroup = Some(v.trim_end_matches('/').to_string()),
                "offcpu" => {
                    q.offcpu = match v.as_str() {
                        "1" | "true" => true,
                        "0" | "false" => false,
                        _ => return Err(format!("offcpu={v}: give 1 (where threads wait) or 0")),
                    }
                }
                _ => {}
            }
        }
        Ok(q)
    }

    /// Whether a thread passes the filters (`cgroup`: its process's).
    pub fn keeps(&self, pid: u32, comm: &str, cgroup: Option<&str>) -> bool {
        let pid_ok = self.pids.is_empty() || self.pids.contains(&pid);
        let comm_ok = self.comm.as_deref().is_none_or(|c| c == comm);
        let cgroup_ok = match (&self.cgroup, cgroup) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(want), Some(have)) => {
                want.is_empty()
                    || have == want
                    || have
                        .strip_prefix(want.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            }
        };
        pid_ok && comm_ok && cgroup_ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Limits = Limits {
        max_seconds: 60,
        max_hz: 1000,
    };

    #[test]
    fn defaults_values_and_filters() {
        let q = Query::parse("", L).unwrap();
        assert_eq!((q.seconds, q.hz), (30, 100));
        let q = Query::parse(
            "seconds=3&hz=250&pid=1,22&comm=my+prog&cgroup=%2Fa%2Fb%2F&x=y",
            L,
        )
        .unwrap();
        assert_eq!((q.seconds, q.hz, q.pids.clone()), (3, 250, vec![1, 22]));
        assert_eq!(q.comm.as_deref(), Some("my prog"));
        assert!(!q.offcpu);
        assert!(Query::parse("offcpu=1", L).unwrap().offcpu);
        assert_eq!(q.cgroup.as_deref(), Some("/a/b"));
        assert!(q.keeps(22, "my prog", Some("/a/b/c")));
        assert!(q.keeps(1, "my prog", Some("/a/b")));
        assert!(!q.keeps(1, "my prog", Some("/a/bc")));
        assert!(!q.keeps(2, "my prog", Some("/a/b")));
        assert!(!q.keeps(1, "other", Some("/a/b")));
        assert!(!q.keeps(1, "my prog", None));
        // A short maximum lowers the default.
        let short = Limits {
            max_seconds: 5,
            max_hz: 50,
        };
        let q = Query::parse("", short).unwrap();
        assert_eq!((q.seconds, q.hz), (5, 50));
    }

    #[test]
    fn bad_values_say_why() {
        for (bad, says) in [
            ("seconds=-1", "not a whole number"),
            ("seconds=abc", "not a whole number"),
            ("seconds=0", "give 1 to 60"),
            ("seconds=61", "maximum of 60 seconds"),
            ("hz=1001", "maximum of 1000"),
            ("hz=", "not a whole number"),
            ("pid=x", "not a process id"),
            ("pid=0", "not a process id"),
            ("comm=", "command name"),
            ("cgroup=a", "from the root"),
            ("seconds=%zz", "percent-encoding"),
            ("offcpu=yes", "give 1"),
        ] {
            let e = Query::parse(bad, L).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
