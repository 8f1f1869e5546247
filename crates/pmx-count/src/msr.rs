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
//!
//! [`MsrSession`] is the same access for a program of its own (the C
//! API's `pmx_msr_*`): read registers, program an event list, restore.

mod access;
mod error;
mod plan;
mod session;

pub use access::{domain_label, extract, parse_field};
pub use access::{read, select_cpus, write, DomainRead, DomainWrite, Reading, Writing};
pub use access::{MsrTarget, ReadOptions, WriteOptions};
pub use error::MsrCommandError;
pub use plan::{event_specs, msr_arch, plan, PlanOptions, PlanReport};
pub use pmx_msr::catalogue::{arch_name, Register, Scope};
pub use pmx_msr::CounterReading;
pub use pmx_msr::{
    Domain, DomainId, MsrError, MsrEvent, MsrRoot, Plan, RestoreValue, RestoreWrite,
};
pub use session::{MsrSession, MsrSessionOptions};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_bit_ranges_or_one_bit() {
        assert_eq!(parse_field("63:32").unwrap(), (63, 32));
        assert_eq!(parse_field(" 5 ").unwrap(), (5, 5));
        for bad in ["64:0", "3:4", "x", "1:"] {
            assert!(
                matches!(parse_field(bad), Err(MsrCommandError::Usage(_))),
                "{bad}"
            );
        }
        assert_eq!(extract(0x7_0000_000f, (35, 32)), 7);
        assert_eq!(extract(u64::MAX, (63, 0)), u64::MAX);
        assert_eq!(extract(0b100, (2, 2)), 1);
    }

    #[test]
    fn a_refused_write_says_how_to_force_it() {
        let e = MsrCommandError::Refused("IA32_TSC is not writable".into());
        assert_eq!(
            e.to_string(),
            "refusing to write: IA32_TSC is not writable (--unsafe writes anyway)"
        );
    }
}
