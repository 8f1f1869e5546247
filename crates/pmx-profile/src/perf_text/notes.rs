//! The branch notes of perf report's `--branch-history` call graph: what
//! each node of the graph says of the branches that passed through it.
//!
//! With `--branch-history` a sample's chain begins with its branch stack
//! (each branch's target, then its source), and perf sums, per node of
//! the graph, what those entries carried: at a branch's target how many
//! were predicted (`(predicted:97.5%)` when not all), aborted and of which
//! types; at a branch's source the cycles (`(cycles:4)`, the average) and
//! the loop iterations its stack's repeated runs were folded into
//! (`(iter:2 avg_cycles:12)`); a frame of the ordinary call chain after
//! them says `(calltrace)`. A node that was a target in one sample and a
//! source in another is shown as the last sample saw it, as in perf.

use pmx_perfdata::branch::{branch_type, BranchFlags};

/// The longest note perf prints (its buffer's 64 bytes less the NUL).
const NOTE_MAX: usize = 63;

/// What a graph node's entries said of their branches (perf's
/// `callchain_list` counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Note {
    /// Entries that were a branch's end (0: a call-chain frame).
    pub branches: u64,
    /// The last entry was a branch's target (else its source).
    pub to: bool,
    /// Targets whose branch was predicted.
    pub predicted: u64,
    /// Targets whose branch was a transaction abort.
    pub abort: u64,
    /// Sources' cycles, summed.
    pub cycles: u64,
    /// Sources' folded loop iterations, summed.
    pub iter: u64,
    /// The cycles of those iterations, summed.
    pub iter_cycles: u64,
    /// Sources counted.
    pub from: u64,
    /// Targets per branch type (`PERF_BR_*`, 16 kinds).
    pub types: [u32; 16],
    /// Targets of type `EXTEND_ABI` per `new_type` (`PERF_BR_NEW_*`).
    pub new_types: [u32; 8],
    /// Conditional branches forward and backward; branches crossing a
    /// 4 KiB and a 2 MiB boundary.
    pub cond_fwd: u32,
    /// See `cond_fwd`.
    pub cond_bwd: u32,
    /// See `cond_fwd`.
    pub cross_4k: u32,
    /// See `cond_fwd`.
    pub cross_2m: u32,
}

impl Note {
    /// A branch's target (`from` → `to`, its flag word): counted as
    /// perf 6.1's `branch_type_count` counts it (nothing for an unknown
    /// type or source; `EXTEND_ABI` by its `new_type`, one past perf's
    /// eight — where perf writes beyond its array — not at all).
    pub fn target(from: u64, to: u64, flags: BranchFlags) -> Note {
        let mut n = Note {
            branches: 1,
            to: true,
            predicted: u64::from(flags.predicted()),
            abort: u64::from(flags.abort()),
            ..Note::default()
        };
        let kind = flags.kind();
        if kind != branch_type::UNKNOWN && from != 0 {
            match kind {
                branch_type::EXTEND_ABI => {
                    if let Some(c) = n.new_types.get_mut(usize::from(flags.new_type())) {
                        *c = 1;
                    }
                }
                k => n.types[usize::from(k & 15)] = 1,
            }
            if kind == branch_type::COND {
                (n.cond_fwd, n.cond_bwd) = (u32::from(to > from), u32::from(to <= from));
            }
            let crosses = |size: u64| from & !(size - 1) != to & !(size - 1);
            if crosses(1 << 21) {
                n.cross_2m = 1;
            } else if crosses(1 << 12) {
                n.cross_4k = 1;
            }
        }
        n
    }

    /// A branch's source: its cycles, and the loop iterations folded
    /// into it with their cycles.
    pub fn source(cycles: u64, iter: u64, iter_cycles: u64) -> Note {
        Note {
            branches: 1,
            cycles,
            iter,
            iter_cycles,
            from: 1,
            ..Note::default()
        }
    }

    /// The note of a node made for this entry: perf's `fill_node` copies
    /// everything but the count of sources, which only later entries
    /// through the node raise (so `iter:` shows once a source was seen
    /// twice).
    pub fn first(&self) -> Note {
        Note { from: 0, ..*self }
    }

    /// Add another entry's counts (a chain through this node); its role
    /// is the node's from now on when it was a branch's end.
    pub fn add(&mut self, o: &Note) {
        if o.branches == 0 {
            return;
        }
        self.branches += o.branches;
        self.to = o.to;
        self.predicted += o.predicted;
        self.abort += o.abort;
        self.cycles += o.cycles;
        self.iter += o.iter;
        self.iter_cycles += o.iter_cycles;
        self.from += o.from;
        for (a, b) in self.types.iter_mut().zip(o.types) {
            *a += b;
        }
        for (a, b) in self.new_types.iter_mut().zip(o.new_types) {
            *a += b;
        }
        self.cond_fwd += o.cond_fwd;
        self.cond_bwd += o.cond_bwd;
        self.cross_4k += o.cross_4k;
        self.cross_2m += o.cross_2m;
    }

    /// perf's text after the frame: ` (predicted:97.5%)`, ` (cycles:4)`,
    /// ` (calltrace)`, or nothing.
    pub fn text(&self) -> String {
        if self.branches == 0 {
            return " (calltrace)".into();
        }
        let mut parts: Vec<String> = Vec::new();
        if self.to {
            if let Some(t) = self.type_text() {
                parts.push(t);
            }
            let share = |n: u64| (n as f64 * 100.0 / self.branches as f64) as f32;
            if self.predicted < self.branches {
                parts.push(format!("predicted:{:.1}%", share(self.predicted)));
            }
            if self.abort > 0 && share(self.abort) >= 0.1 {
                parts.push(format!("abort:{:.1}%", share(self.abort)));
            }
        } else {
            let cycles = self.cycles / self.branches;
            if cycles > 0 {
                parts.push(format!("cycles:{cycles}"));
            }
            let v = match (self.iter, self.from) {
                (0, _) | (_, 0) => 0,
                (i, f) => i / f,
            };
            if v > 0 {
                parts.push(format!("iter:{v}"));
                parts.push(format!("avg_cycles:{}", self.iter_cycles / self.iter));
            }
        }
        match parts.is_empty() {
            true => String::new(),
            false => format!(" ({})", parts.join(" ")),
        }
    }

    /// [`Note::text`] as perf prints it on a line of the graph's levels
    /// (`ipchain__fprintf_graph`): built in a 64-byte buffer, so a longer
    /// text is cut to 63 bytes, its `)` lost. (The lines of a single top
    /// chain, `---name`, are printed whole.)
    pub fn text_cut(&self) -> String {
        let mut t = self.text();
        t.truncate(NOTE_MAX);
        t
    }

    /// perf 6.1's `branch_type_str`: the conditional directions, the
    /// other types seen, the extended types, the boundaries crossed; none
    /// when no target had a type of the main table (perf's total counts
    /// only those: extended types alone print nothing).
    fn type_text(&self) -> Option<String> {
        if self.types.iter().all(|&n| n == 0) {
            return None;
        }
        let mut w: Vec<&str> = Vec::new();
        (self.cond_fwd > 0).then(|| w.push("COND_FWD"));
        (self.cond_bwd > 0).then(|| w.push("COND_BWD"));
        for (i, &n) in self.types.iter().enumerate() {
            if i != usize::from(branch_type::COND) && n > 0 {
                w.push(branch_type::NAMES[i]);
            }
        }
        for (i, &n) in self.new_types.iter().enumerate() {
            if n > 0 {
                w.push(branch_type::NEW_NAMES[i]);
            }
        }
        (self.cross_4k > 0).then(|| w.push("CROSS_4K"));
        (self.cross_2m > 0).then(|| w.push("CROSS_2M"));
        Some(w.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_read_as_perf_prints_them() {
        let f = |kind: u8, new_type: u8, predicted: bool| {
            BranchFlags::new(!predicted, predicted, false, false, 0, kind, 0, new_type, 0)
        };
        let mut t = Note::target(0x10, 0x20, f(0, 0, true));
        assert_eq!(t.text(), "");
        t.add(&Note::target(0x10, 0x20, f(0, 0, false)));
        assert_eq!(t.text(), " (predicted:50.0%)");
        let mut s = Note::source(9, 0, 0);
        s.add(&Note::source(0, 0, 0));
        assert_eq!(s.text(), " (cycles:4)");
        assert_eq!(Note::source(0, 3, 40).text(), " (iter:3 avg_cycles:13)");
        assert_eq!(Note::source(0, 3, 40).first().text(), "");
        assert_eq!(Note::default().text(), " (calltrace)");
        let j = Note::target(0x1010, 0x1000, f(1, 0, true));
        assert_eq!(j.text(), " (COND_BWD)");
        let mut far = Note::target(0x1000, 0x10, f(4, 0, false));
        assert_eq!(far.text(), " (CALL CROSS_4K predicted:0.0%)");
        far.add(&Note::target(0x1000, 0x1010, f(1, 0, true)));
        far.add(&Note::target(0x2000, 0x2010, f(15, 2, true)));
        assert_eq!(
            far.text(),
            " (COND_FWD CALL FAULT_INST CROSS_4K predicted:66.7%)"
        );
        // Extended types alone: perf's total counts none, no types shown.
        let ext = Note::target(0x2000, 0x2010, f(15, 0, true));
        assert_eq!(ext.text(), "");
        // perf's buffer cuts a long note.
        let mut all = Note::target(0x2000, 0x2010, f(6, 0, true));
        for k in [7, 8, 9, 10, 11, 12, 13, 14] {
            all.add(&Note::target(0x2000, 0x2010, f(k, 0, false)));
        }
        assert_eq!(
            all.text_cut(),
            " (RET SYSCALL SYSRET COND_CALL COND_RET ERET IRQ SERROR NO_TX p"
        );
        assert!(all.text().ends_with(" predicted:11.1%)"), "{}", all.text());
        // A new_type past perf's eight names is not counted.
        assert_eq!(
            Note::target(0x2000, 0x2010, f(15, 9, true)).new_types,
            [0; 8]
        );
    }
}
