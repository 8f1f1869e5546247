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

/// perf's names of the branch types (`branch_type_name`).
const TYPES: [&str; 16] = [
    "N/A",
    "JCC",
    "JMP",
    "IND_JMP",
    "CALL",
    "IND_CALL",
    "RET",
    "SYSCALL",
    "SYSRET",
    "COND_CALL",
    "COND_RET",
    "ERET",
    "IRQ",
    "SERROR",
    "NO_TX",
    "EXTEND_ABI",
];

impl Note {
    /// A branch's target (`from` → `to`, its type and flags).
    pub fn target(from: u64, to: u64, kind: u8, predicted: bool, abort: bool) -> Note {
        let mut n = Note {
            branches: 1,
            to: true,
            predicted: u64::from(predicted),
            abort: u64::from(abort),
            ..Note::default()
        };
        if kind != 0 && from != 0 {
            n.types[usize::from(kind & 15)] = 1;
            if kind == 1 {
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

    /// perf's `branch_type_str`: the conditional directions, the other
    /// types seen and the boundaries crossed.
    fn type_text(&self) -> Option<String> {
        if self.types.iter().all(|&n| n == 0) {
            return None;
        }
        let mut w: Vec<&str> = Vec::new();
        (self.cond_fwd > 0).then(|| w.push("JCC fwd"));
        (self.cond_bwd > 0).then(|| w.push("JCC bwd"));
        for (i, &n) in self.types.iter().enumerate() {
            if i != 1 && n > 0 {
                w.push(TYPES[i]);
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
        let mut t = Note::target(0x10, 0x20, 0, true, false);
        assert_eq!(t.text(), "");
        t.add(&Note::target(0x10, 0x20, 0, false, false));
        assert_eq!(t.text(), " (predicted:50.0%)");
        let mut s = Note::source(9, 0, 0);
        s.add(&Note::source(0, 0, 0));
        assert_eq!(s.text(), " (cycles:4)");
        assert_eq!(Note::source(0, 3, 40).text(), " (iter:3 avg_cycles:13)");
        assert_eq!(Note::source(0, 3, 40).first().text(), "");
        assert_eq!(Note::default().text(), " (calltrace)");
        let j = Note::target(0x1010, 0x1000, 1, true, false);
        assert_eq!(j.text(), " (JCC bwd)");
        let far = Note::target(0x1000, 0x10, 4, false, false);
        assert_eq!(far.text(), " (CALL CROSS_4K predicted:0.0%)");
    }
}
