//! `pmx msr read|write|plan` as calls: raw MSR access through
//! `/dev/cpu/N/msr` with the PMU registers' names, their scope (a package
//! register is read once per package) and their fields, and the plan of
//! writes `pmx stat --backend msr` would make. Each call takes its
//! options and returns a typed value ([`Reading`], [`Writing`],
//! [`PlanReport`]); `pmx-output`'s `msr` renders them. The `pmx-msr` types
//! a front end needs are re-exported here.
//!
//! Reads and writes go domain by domain; a failure on one domain is kept
//! in the result after the domains done before it, so a renderer shows
//! those first, as `rdmsr`/`wrmsr` would.

mod access;
mod plan;

pub use access::{read, select_cpus, write, DomainRead, DomainWrite, Reading, Writing};
pub use access::{MsrTarget, ReadOptions, WriteOptions};
pub use plan::{event_specs, msr_arch, plan, PlanOptions, PlanReport};
pub use pmx_msr::catalogue::{arch_name, Register};
pub use pmx_msr::{Domain, DomainId, MsrError, MsrEvent, MsrRoot, Plan};

/// Why an msr command did nothing (or stopped).
#[derive(Debug, thiserror::Error)]
pub enum MsrCommandError {
    /// Bad input: a register name, a field, a CPU list, a value, an event.
    #[error("{0}")]
    Usage(String),
    /// A write the allow-list refuses (without `--unsafe`).
    #[error("refusing to write: {0} (--unsafe writes anyway)")]
    Refused(String),
    /// The device could not be opened or read.
    #[error(transparent)]
    Msr(#[from] MsrError),
    /// A write failed on one domain.
    #[error("{domain}: writing {register}")]
    Write {
        /// The domain.
        domain: String,
        /// The register's label.
        register: String,
        /// Why.
        #[source]
        source: MsrError,
    },
}

/// `HI:LO` or `N` → (hi, lo): the bits `--field` selects.
pub fn parse_field(text: &str) -> Result<(u32, u32), MsrCommandError> {
    let bad = || {
        MsrCommandError::Usage(format!(
            "--field {text}: give bits as HI:LO (63:32) or one bit N"
        ))
    };
    let (hi, lo) = match text.split_once(':') {
        Some((h, l)) => (h.trim().parse::<u32>(), l.trim().parse::<u32>()),
        None => (text.trim().parse::<u32>(), text.trim().parse::<u32>()),
    };
    let (hi, lo) = (hi.map_err(|_| bad())?, lo.map_err(|_| bad())?);
    if hi > 63 || lo > hi {
        return Err(bad());
    }
    Ok((hi, lo))
}

/// Bits `hi:lo` of `value`, shifted down.
pub fn extract(value: u64, (hi, lo): (u32, u32)) -> u64 {
    let width = hi - lo + 1;
    let mask = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    (value >> lo) & mask
}

/// How a domain is shown: `cpu 3`, or `package 0 (cpu 0)`.
pub fn domain_label(d: &Domain) -> String {
    match d.id {
        DomainId::Cpu { .. } => d.id.to_string(),
        _ => format!("{} (cpu {})", d.id, d.cpu),
    }
}
