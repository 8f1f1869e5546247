//! `-b` and `-j/--branch-filter`: which taken branches each sample's
//! branch stack keeps, as `perf_event_attr.branch_sample_type` bits.
//!
//! The words are perf's (`perf record -j`), compared without case and
//! OR-ed together; a list of privilege words alone (`u`, `k`, `hv`,
//! and the entry-format words) means any branch, and perf 6.1 then drops
//! the privilege words too (`-j u` records as `-j any`): pmx does the
//! same, so a file records what perf's would. pmx also takes the words
//! later perf versions added (`hw_index`, `no_flags`, `no_cycles`,
//! `counter`), which perf 6.1 refuses.

use pmx_perfdata::format::branch_sample_type as b;

/// perf's words and their bits.
pub const WORDS: [(&str, u64); 20] = [
    ("u", b::USER),
    ("k", b::KERNEL),
    ("hv", b::HV),
    ("any", b::ANY),
    ("any_call", b::ANY_CALL),
    ("any_ret", b::ANY_RETURN),
    ("ind_call", b::IND_CALL),
    ("abort_tx", b::ABORT_TX),
    ("in_tx", b::IN_TX),
    ("no_tx", b::NO_TX),
    ("cond", b::COND),
    ("ind_jmp", b::IND_JUMP),
    ("call", b::CALL),
    ("save_type", b::TYPE_SAVE),
    ("stack", b::CALL_STACK),
    ("hw_index", b::HW_INDEX),
    ("priv", b::PRIV_SAVE),
    ("no_flags", b::NO_FLAGS),
    ("no_cycles", b::NO_CYCLES),
    ("counter", b::COUNTERS),
];

/// The privilege words, which alone select no branch type (perf's `ONLY_PLM`).
const ONLY_PLM: u64 = b::USER | b::KERNEL | b::HV;

/// `branch_sample_type` of a `-j` list (`-b` is `any`), or a message
/// naming the unknown word.
pub fn parse(list: &str) -> Result<u64, String> {
    let mut mode = 0;
    for w in list.split(',') {
        let w = w.trim();
        let Some(&(_, bit)) = WORDS.iter().find(|(n, _)| n.eq_ignore_ascii_case(w)) else {
            let known: Vec<&str> = WORDS.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "-j {list}: unknown branch filter '{w}' (known: {})",
                known.join(", ")
            ));
        };
        mode |= bit;
    }
    if mode & !ONLY_PLM == 0 {
        mode = b::ANY;
    }
    Ok(mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_as_perf_reads_them() {
        assert_eq!(parse("any").unwrap(), b::ANY);
        assert_eq!(parse("any_call,u").unwrap(), b::ANY_CALL | b::USER);
        assert_eq!(parse("COND,k").unwrap(), b::COND | b::KERNEL);
        // Privilege words alone: any branch, the words dropped (perf 6.1).
        assert_eq!(parse("u,k").unwrap(), b::ANY);
        let e = parse("any,sideways").unwrap_err();
        assert!(
            e.contains("unknown branch filter 'sideways'") && e.contains("ind_jmp"),
            "{e}"
        );
        assert!(parse("").is_err());
    }
}
