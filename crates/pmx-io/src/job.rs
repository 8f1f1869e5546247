//! Where this process runs in a job (host, pid, rank, job id), and the
//! output file patterns built from it for runs under a job launcher:
//! `pmx stat -o 'out-%h-%p-%r.json'` leaves one file per host, process
//! and rank.
//!
//! | pattern | expands to |
//! |---|---|
//! | `%h` | the host name (`uname -n`) |
//! | `%p` | pmx's process id |
//! | `%r` | the rank in the job: `OMPI_COMM_WORLD_RANK` (Open MPI), `PMIX_RANK` (PMIx), `PMI_RANK` (MPICH, Intel MPI), `MV2_COMM_WORLD_RANK` (MVAPICH2), then `SLURM_PROCID` (Slurm); `0` when none is set (a run outside a launcher is a one-rank job) |
//! | `%j` | the job id: `SLURM_JOB_ID`, `PBS_JOBID`, `LSB_JOBID`, `JOB_ID`; an error when none is set |
//! | `%%` | `%` |
//!
//! The MPI launchers' variables win over Slurm's because `mpirun` inside a
//! Slurm allocation starts every rank with the batch script's
//! `SLURM_PROCID=0`. Any other `%x` is a usage error (exit 2), so a typo
//! does not silently write every rank to one file. `/` in an expanded
//! value becomes `_`.

/// A rank variable that is not a number, or a pattern that cannot be
/// expanded: the user's input (the CLI's exit code 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JobError(pub String);

/// The rank variables, in the order they are believed.
pub const RANK_VARS: [&str; 5] = [
    "OMPI_COMM_WORLD_RANK",
    "PMIX_RANK",
    "PMI_RANK",
    "MV2_COMM_WORLD_RANK",
    "SLURM_PROCID",
];

/// The job-id variables, in the order they are believed.
pub const JOB_VARS: [&str; 4] = ["SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "JOB_ID"];

/// Where this process runs in a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobContext {
    /// Host name.
    pub host: String,
    /// pmx's pid.
    pub pid: u32,
    /// The rank and the variable it came from, when one is set.
    pub rank: Option<(u64, &'static str)>,
    /// The job id, when one is set.
    pub job: Option<String>,
}

/// The host name from `uname(2)`.
pub fn host_name() -> String {
    // SAFETY: uname fills the struct it is given.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a zeroed utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown-host".to_string();
    }
    let bytes: Vec<u8> = u
        .nodename
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl JobContext {
    /// This process's context, from `env` (a lookup such as
    /// `std::env::var`).
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<JobContext, JobError> {
        let mut rank = None;
        for var in RANK_VARS {
            if let Some(v) = env(var) {
                let v = v.trim().to_string();
                if v.is_empty() {
                    continue;
                }
                let n: u64 = v
                    .parse()
                    .map_err(|_| JobError(format!("{var}={v}: not a rank (a number from 0)")))?;
                rank = Some((n, var));
                break;
            }
        }
        let job = JOB_VARS
            .iter()
            .filter_map(|v| env(v))
            .map(|v| v.trim().to_string())
            .find(|v| !v.is_empty());
        Ok(JobContext {
            host: host_name(),
            pid: std::process::id(),
            rank,
            job,
        })
    }

    /// From the process environment: the `from_env` of the edge (the CLI
    /// and the other entry points call it; the library takes the context
    /// or a lookup, [`JobContext::from_env`]).
    pub fn current() -> Result<JobContext, JobError> {
        JobContext::from_env(&|k| std::env::var(k).ok())
    }

    /// Expand `%h %p %r %j %%` in `pattern`.
    pub fn expand(&self, pattern: &str) -> Result<String, JobError> {
        let clean = |s: &str| s.replace('/', "_");
        let mut out = String::with_capacity(pattern.len() + 16);
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('h') => out.push_str(&clean(&self.host)),
                Some('p') => out.push_str(&self.pid.to_string()),
                Some('r') => out.push_str(&self.rank.map(|(r, _)| r).unwrap_or(0).to_string()),
                Some('j') => match &self.job {
                    Some(j) => out.push_str(&clean(j)),
                    None => {
                        return Err(JobError(format!(
                            "-o {pattern}: %j needs a job id, and none of {} is set",
                            JOB_VARS.join(", ")
                        )))
                    }
                },
                Some('%') => out.push('%'),
                Some(x) => {
                    return Err(JobError(format!(
                        "-o {pattern}: unknown pattern %{x} (%h host, %p pid, %r rank, %j job id, %% a percent sign)"
                    )))
                }
                None => {
                    return Err(JobError(format!(
                        "-o {pattern}: a lone % at the end (write %% for a percent sign)"
                    )))
                }
            }
        }
        Ok(out)
    }

    /// The fields a JSON report records about where it ran.
    pub fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("host".into(), self.host.clone().into());
        m.insert("pid".into(), self.pid.into());
        m.insert(
            "rank".into(),
            self.rank
                .map(|(r, _)| serde_json::Value::from(r))
                .unwrap_or(serde_json::Value::Null),
        );
        m.insert(
            "job".into(),
            self.job
                .clone()
                .map(serde_json::Value::from)
                .unwrap_or(serde_json::Value::Null),
        );
        m
    }
}

/// An output path (`-o`) with this process's job patterns expanded:
/// unchanged without `%`; an error when it is not UTF-8 or a pattern
/// cannot be expanded.
pub fn expand_path(pattern: &std::path::Path) -> Result<std::path::PathBuf, JobError> {
    let text = (pattern.to_str())
        .ok_or_else(|| JobError(format!("-o {}: not valid UTF-8", pattern.display())))?;
    if !text.contains('%') {
        return Ok(pattern.to_path_buf());
    }
    Ok(JobContext::current()?.expand(text)?.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn ctx(vars: &[(&str, &str)]) -> Result<JobContext, JobError> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        JobContext::from_env(&|k| m.get(k).cloned())
    }

    #[test]
    fn expands_every_pattern() {
        let c = ctx(&[("SLURM_PROCID", "3"), ("SLURM_JOB_ID", "991")]).unwrap();
        let s = c.expand("out-%h-%p-%r-%j-100%%.json").unwrap();
        assert_eq!(
            s,
            format!(
                "out-{}-{}-3-991-100%.json",
                host_name().replace('/', "_"),
                std::process::id()
            )
        );
        assert_eq!(c.rank, Some((3, "SLURM_PROCID")));
    }

    #[test]
    fn mpi_rank_wins_over_slurm() {
        let c = ctx(&[("SLURM_PROCID", "0"), ("OMPI_COMM_WORLD_RANK", "5")]).unwrap();
        assert_eq!(c.rank, Some((5, "OMPI_COMM_WORLD_RANK")));
        for var in ["PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK"] {
            let c = ctx(&[("SLURM_PROCID", "0"), (var, "7")]).unwrap();
            assert_eq!(c.rank, Some((7, var)));
        }
    }

    #[test]
    fn no_rank_is_rank_zero_no_job_is_an_error() {
        let c = ctx(&[]).unwrap();
        assert_eq!(c.rank, None);
        assert_eq!(c.expand("r%r").unwrap(), "r0");
        assert!(c.expand("j%j").unwrap_err().0.contains("SLURM_JOB_ID"));
    }

    #[test]
    fn bad_patterns_and_values() {
        let c = ctx(&[]).unwrap();
        assert!(c
            .expand("a%x")
            .unwrap_err()
            .0
            .contains("unknown pattern %x"));
        assert!(c.expand("a%").unwrap_err().0.contains("lone %"));
        assert!(ctx(&[("PMI_RANK", "two")])
            .unwrap_err()
            .0
            .contains("PMI_RANK=two"));
        let c = ctx(&[("PBS_JOBID", "12.server/x")]).unwrap();
        assert_eq!(c.expand("%j").unwrap(), "12.server_x");
    }

    #[test]
    fn paths_expand_only_with_a_percent_and_must_be_utf8() {
        use std::os::unix::ffi::OsStrExt;
        use std::path::Path;
        let plain = Path::new("out-h.json");
        assert_eq!(expand_path(plain), Ok(plain.to_path_buf()));
        assert_eq!(expand_path(Path::new("a%%b")), Ok("a%b".into()));
        let bad = Path::new(std::ffi::OsStr::from_bytes(b"x\xffy"));
        assert_eq!(
            expand_path(bad),
            Err(JobError("-o x\u{FFFD}y: not valid UTF-8".into()))
        );
    }
}
