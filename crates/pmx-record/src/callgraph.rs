//! How call chains are recorded: `-g`, `--call-graph fp|dwarf[,SIZE]|lbr`
//! and the `call-graph=`/`stack-size=` event terms, spelt and turned into
//! attr bits the way perf does (`tools/perf/util/callchain.c`,
//! `parse_callchain_record`; `evsel.c`, `__evsel__config_callchain`).
//!
//! - **fp**: the kernel walks frame pointers at each sample
//!   (`PERF_SAMPLE_CALLCHAIN`). Code built without them (most release
//!   builds and distribution libraries) yields one or two frames.
//! - **dwarf**: each sample also carries the user registers
//!   (`PERF_SAMPLE_REGS_USER`, perf's x86-64 mask `0xff0fff`) and a copy
//!   of SIZE bytes of user stack from the stack pointer up
//!   (`PERF_SAMPLE_STACK_USER`, default 8192, at most 65528); the kernel's
//!   chain keeps only its kernel part (`exclude_callchain_user`) and the
//!   reader unwinds the user part from the binaries' CFI (`.eh_frame`,
//!   `.debug_frame`). Samples grow by SIZE + 168 bytes.
//! - **lbr**: Intel's LBR call-stack mode (`PERF_SAMPLE_BRANCH_STACK` with
//!   `branch_sample_type` USER | CALL_STACK | NO_FLAGS | NO_CYCLES |
//!   HW_INDEX): needs a CPU with LBR call stacks and a hardware event.

use pmx_perf::{sample_type, Attr};
use pmx_perfdata::format::{branch_sample_type as branch, regs_x86_64};

/// perf's default user stack copy for `dwarf` (bytes).
pub const DEFAULT_STACK_SIZE: u32 = 8192;

/// The largest user stack copy: the kernel's u16 record size, rounded
/// down to 8 bytes (perf's `round_down(USHRT_MAX, sizeof(u64))`).
pub const MAX_STACK_SIZE: u32 = 65528;

/// How call chains are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallGraph {
    /// No call chains.
    #[default]
    None,
    /// Frame pointers, walked by the kernel; `max_stack` from `fp,N`.
    Fp {
        /// The deepest chain (`sample_max_stack`), when given.
        max_stack: Option<u16>,
    },
    /// User registers and a user stack copy of `stack_size` bytes per
    /// sample, unwound with DWARF CFI when the file is read.
    Dwarf {
        /// Bytes of user stack per sample (a multiple of 8).
        stack_size: u32,
    },
    /// The LBR call stack (Intel).
    Lbr,
}

impl CallGraph {
    /// perf's spelling: `fp[,MAX_STACK]`, `dwarf[,SIZE]` (SIZE rounded up
    /// to 8, 8…65528; `0x` hex taken), `lbr`; errors as perf words them.
    pub fn parse(s: &str) -> Result<CallGraph, CallGraphError> {
        let mut parts = s.split(',');
        let mode = parts.next().unwrap_or("");
        // strtok_r, as perf splits it, skips empty fields.
        let arg = parts.next().filter(|a| !a.is_empty());
        if parts.next().is_some() {
            return Err(bad(format!("--call-graph {s}: too many values")));
        }
        match (mode, arg) {
            ("fp", None) => Ok(CallGraph::Fp { max_stack: None }),
            ("fp", Some(n)) => number(n)
                .and_then(|n| u16::try_from(n).ok())
                .map(|n| CallGraph::Fp { max_stack: Some(n) })
                .ok_or_else(|| bad(format!("--call-graph {s}: '{n}' is not a stack depth"))),
            ("dwarf", None) => Ok(CallGraph::Dwarf {
                stack_size: DEFAULT_STACK_SIZE,
            }),
            ("dwarf", Some(n)) => Ok(CallGraph::Dwarf {
                stack_size: stack_size(number(n), n)?,
            }),
            ("lbr", None) => Ok(CallGraph::Lbr),
            ("lbr", Some(_)) => Err(bad(format!(
                "--call-graph {s}: no more arguments needed for --call-graph lbr"
            ))),
            _ => Err(bad(format!(
                "--call-graph {s}: unknown mode '{mode}' (give fp, dwarf[,SIZE] or lbr)"
            ))),
        }
    }

    /// The mode of `-g` and `--call-graph MODE` together (`--call-graph`
    /// wins; `-g` alone is frame pointers, as in perf).
    pub fn from_flags(g: bool, mode: Option<&str>) -> Result<CallGraph, CallGraphError> {
        match mode {
            Some(m) => CallGraph::parse(m),
            None if g => Ok(CallGraph::Fp { max_stack: None }),
            None => Ok(CallGraph::None),
        }
    }

    /// The event terms `call-graph=` and `stack-size=` (perf's per-event
    /// form): `None` when the event gives no `call-graph=`.
    pub fn from_terms(
        mode: Option<&str>,
        size: Option<u64>,
        event: &str,
    ) -> Result<Option<CallGraph>, CallGraphError> {
        Ok(match (mode, size) {
            (Some("dwarf"), size) => Some(CallGraph::Dwarf {
                stack_size: match size {
                    Some(n) => stack_size(Some(n), &n.to_string())?,
                    None => DEFAULT_STACK_SIZE,
                },
            }),
            (_, Some(_)) => {
                return Err(bad(format!(
                    "{event}: stack-size= goes with call-graph=dwarf"
                )))
            }
            (Some("fp"), None) => Some(CallGraph::Fp { max_stack: None }),
            (Some("lbr"), None) => Some(CallGraph::Lbr),
            (Some(_), None) => Some(CallGraph::None),
            (None, None) => None,
        })
    }

    /// Samples of this mode carry a call chain.
    pub fn records_chains(self) -> bool {
        self != CallGraph::None
    }

    /// Set `attr`'s call-chain bits as perf does for this mode.
    pub fn apply(self, attr: &mut Attr) {
        if self == CallGraph::None {
            return;
        }
        attr.sample_type |= sample_type::CALLCHAIN;
        match self {
            CallGraph::None => {}
            CallGraph::Fp { max_stack } => {
                if let Some(m) = max_stack {
                    attr.sample_max_stack = m;
                }
            }
            CallGraph::Dwarf { stack_size } => {
                attr.sample_type |= sample_type::REGS_USER | sample_type::STACK_USER;
                attr.sample_regs_user = regs_x86_64::DWARF_MASK;
                attr.sample_stack_user = stack_size;
                attr.exclude_callchain_user = true;
            }
            CallGraph::Lbr => {
                attr.sample_type |= sample_type::BRANCH_STACK;
                attr.branch_sample_type = branch::USER
                    | branch::CALL_STACK
                    | branch::NO_FLAGS
                    | branch::NO_CYCLES
                    | branch::HW_INDEX;
            }
        }
    }
}

/// A call-graph mode or size that cannot be recorded (bad input: the
/// CLI exits 2), worded as perf words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CallGraphError(pub String);

fn bad(m: String) -> CallGraphError {
    CallGraphError(m)
}

/// A number as `strtoul(s, _, 0)` reads it, whole: decimal, `0x` hex, `0` octal.
fn number(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

/// A stack dump size, rounded up to 8 and checked as perf's `get_stack_size`.
fn stack_size(n: Option<u64>, given: &str) -> Result<u32, CallGraphError> {
    n.and_then(|n| n.checked_next_multiple_of(8))
        .filter(|&n| n > 0 && n <= u64::from(MAX_STACK_SIZE))
        .map(|n| n as u32)
        .ok_or_else(|| {
            bad(format!(
                "callchain: Incorrect stack dump size (max {MAX_STACK_SIZE}): {given}"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_as_perf_spells_them() {
        let dwarf = |n| CallGraph::Dwarf { stack_size: n };
        assert_eq!(CallGraph::parse("dwarf").unwrap(), dwarf(8192));
        assert_eq!(CallGraph::parse("dwarf,4096").unwrap(), dwarf(4096));
        // Rounded up to 8 bytes; hex as strtoul reads it.
        assert_eq!(CallGraph::parse("dwarf,1001").unwrap(), dwarf(1008));
        assert_eq!(CallGraph::parse("dwarf,0x1000").unwrap(), dwarf(4096));
        assert_eq!(CallGraph::parse("dwarf,65528").unwrap(), dwarf(65528));
        assert_eq!(CallGraph::parse("dwarf,").unwrap(), dwarf(8192));
        for bad in ["dwarf,0", "dwarf,65529", "dwarf,8k"] {
            let e = CallGraph::parse(bad).unwrap_err().to_string();
            assert!(
                e.starts_with("callchain: Incorrect stack dump size (max 65528): "),
                "{bad}: {e}"
            );
        }
        assert_eq!(
            CallGraph::parse("fp").unwrap(),
            CallGraph::Fp { max_stack: None }
        );
        assert_eq!(
            CallGraph::parse("fp,16").unwrap(),
            CallGraph::Fp {
                max_stack: Some(16)
            }
        );
        assert_eq!(CallGraph::parse("lbr").unwrap(), CallGraph::Lbr);
        assert!(CallGraph::parse("lbr,4").is_err());
        let e = CallGraph::parse("dwraf").unwrap_err().to_string();
        assert!(e.contains("unknown mode 'dwraf'"), "{e}");
        assert_eq!(
            CallGraph::from_flags(true, None).unwrap(),
            CallGraph::Fp { max_stack: None }
        );
        assert_eq!(CallGraph::from_flags(false, None).unwrap(), CallGraph::None);
        assert_eq!(
            CallGraph::from_flags(true, Some("dwarf")).unwrap(),
            dwarf(8192)
        );
        assert_eq!(
            CallGraph::from_terms(Some("dwarf"), Some(2048), "e").unwrap(),
            Some(dwarf(2048))
        );
        assert_eq!(
            CallGraph::from_terms(Some("no"), None, "e").unwrap(),
            Some(CallGraph::None)
        );
        assert!(CallGraph::from_terms(Some("fp"), Some(2048), "e").is_err());
    }

    /// The attrs `perf record -vv` printed here (perf 6.1) for
    /// `--call-graph dwarf` (`sample_type IP|TID|TIME|ADDR|CALLCHAIN|PERIOD|
    /// REGS_USER|STACK_USER|DATA_SRC`, `exclude_callchain_user 1`,
    /// `sample_regs_user 0xff0fff`, `sample_stack_user 8192`) and for
    /// `--call-graph lbr` (`branch_sample_type USER|CALL_STACK|NO_FLAGS|
    /// NO_CYCLES|HW_INDEX`), for the call-graph bits.
    #[test]
    fn attr_bits_as_perf_sets_them() {
        let mut a = Attr::default();
        CallGraph::parse("dwarf").unwrap().apply(&mut a);
        assert_eq!(a.sample_type, (1 << 5) | (1 << 12) | (1 << 13));
        assert_eq!((a.sample_regs_user, a.sample_stack_user), (0xff0fff, 8192));
        assert!(a.exclude_callchain_user && !a.exclude_callchain_kernel);
        assert_eq!(a.branch_sample_type, 0);

        let mut l = Attr::default();
        CallGraph::Lbr.apply(&mut l);
        assert_eq!(l.sample_type, (1 << 5) | (1 << 11));
        // USER 1<<0, CALL_STACK 1<<11, NO_FLAGS 1<<14, NO_CYCLES 1<<15, HW_INDEX 1<<17.
        assert_eq!(l.branch_sample_type, 0x2_c801);
        assert_eq!((l.sample_regs_user, l.sample_stack_user), (0, 0));

        let mut f = Attr::default();
        CallGraph::Fp { max_stack: None }.apply(&mut f);
        assert_eq!((f.sample_type, f.exclude_callchain_user), (1 << 5, false));
        let mut n = Attr::default();
        CallGraph::None.apply(&mut n);
        assert_eq!(n.sample_type, 0);
    }
}
