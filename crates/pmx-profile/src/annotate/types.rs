//! The values of an annotation: the options ([`AnnotateOptions`],
//! [`Syntax`]) and what was built ([`Annotation`], its
//! [`EventColumn`]s and [`Instruction`]s, and for sample-read groups
//! their [`GroupSamples`] and [`MetricColumn`]s).

use crate::group_metrics::MetricCell;
use crate::profile::{Moments, Weight};
use pmx_symbols::SymbolOptions;
use std::path::PathBuf;

/// Assembly syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Syntax {
    /// AT&T, as objdump and perf annotate print by default.
    #[default]
    Att,
    /// Intel (`-M intel`).
    Intel,
}

impl std::str::FromStr for Syntax {
    type Err = String;
    fn from_str(s: &str) -> Result<Syntax, String> {
        match s {
            "att" | "at&t" => Ok(Syntax::Att),
            "intel" => Ok(Syntax::Intel),
            _ => Err(format!("{s}: give att or intel")),
        }
    }
}

impl Syntax {
    /// `att` or `intel`.
    pub fn name(self) -> &'static str {
        match self {
            Syntax::Att => "att",
            Syntax::Intel => "intel",
        }
    }
}

/// What to annotate.
#[derive(Debug, Clone, Default)]
pub struct AnnotateOptions {
    /// The perf.data file; `-` reads a pipe-mode stream from standard input.
    pub input: PathBuf,
    /// The function, as `pmx report` names it.
    pub symbol: String,
    /// Only the function of this binary (base name or path), when several have it.
    pub dso: Option<String>,
    /// Only this event (its name as in the file, or without modifiers).
    pub event: Option<String>,
    /// Look binaries up under this directory (perf's `--symfs`).
    pub symfs: Option<PathBuf>,
    /// Assembly syntax.
    pub syntax: Syntax,
    /// Demangling, directories and binary cache of the symbolizer.
    pub symbols: SymbolOptions,
}

/// One event's column: its samples in the function and in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventColumn {
    /// The event's name.
    pub name: String,
    /// Index into the file's events.
    pub index: usize,
    /// The function's samples and period (the instructions' sum).
    pub symbol: Weight,
    /// The event's samples and period in the whole file.
    pub file: Weight,
    /// The event's `precise_ip` (0: the sample's address may skid).
    pub precise: u8,
}

/// A sample-read group's samples in the function: the moments of its
/// members' deltas per instruction, the inputs of its metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupSamples {
    /// The leader (index into the file's events).
    pub leader: usize,
    /// The members' names, leader first (the order of the moments).
    pub members: Vec<String>,
    /// Over the whole function.
    pub symbol: Moments,
    /// Per instruction, in the order of [`Annotation::instructions`].
    pub instructions: Vec<Moments>,
}

/// One metric of one group: over the function and per instruction.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricColumn {
    /// The metric's name (`IPC`).
    pub name: String,
    /// Its heading and JSON key: the name, then `[leader]` when the
    /// function has samples of several groups.
    pub label: String,
    /// Index into [`Annotation::groups`].
    pub group: usize,
    /// Over the whole function.
    pub symbol: MetricCell,
    /// Per instruction; `None` where the group has no sample.
    pub instructions: Vec<Option<MetricCell>>,
}

/// A source line of an instruction (DWARF line info).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLine {
    /// The source file as the debug info names it.
    pub file: String,
    /// Its line.
    pub line: u32,
    /// The line's text, when the file is readable here.
    pub text: Option<String>,
}

/// One instruction of the function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// Its address (the binary's virtual address, or the kernel's).
    pub addr: u64,
    /// Bytes from the function's start.
    pub offset: u64,
    /// Its encoding.
    pub bytes: Vec<u8>,
    /// The instruction as objdump writes it (jump and call targets as
    /// `ADDR <symbol+0xOFF>`).
    pub text: String,
    /// The target of a direct jump or call.
    pub target: Option<u64>,
    /// Its source line.
    pub source: Option<SourceLine>,
    /// Per column of [`Annotation::events`].
    pub weights: Vec<Weight>,
}

/// A function's code with the samples of each instruction.
#[derive(Debug, Clone)]
pub struct Annotation {
    /// The perf.data file as shown.
    pub file: String,
    /// The function's name.
    pub symbol: String,
    /// The binary's base name.
    pub dso: String,
    /// The binary's path (as read, under `--symfs` when given).
    pub path: String,
    /// The binary's build-id (hex), recorded or read.
    pub build_id: Option<String>,
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// The architecture (`x86-64`).
    pub arch: &'static str,
    /// The assembly syntax.
    pub syntax: Syntax,
    /// One column per event with samples in the function.
    pub events: Vec<EventColumn>,
    /// The instructions, in address order.
    pub instructions: Vec<Instruction>,
    /// The sample-read groups with samples in the function.
    pub groups: Vec<GroupSamples>,
    /// The metrics asked for ([`Annotation::add_metrics`]), per group.
    pub metrics: Vec<MetricColumn>,
    /// Warnings (the profile's and the annotation's own).
    pub warnings: Vec<String>,
    /// The recording's CPU as perf's `CPUID` header gives it
    /// (`GenuineIntel,6,78,3`), for choosing a metric library.
    pub cpuid: Option<String>,
    /// Per instruction, its memory samples (those carrying `data_src`
    /// or a weight); empty when the function has none.
    pub memory: Vec<Option<MemoryCell>>,
    /// perf annotate's IPC and Cycle columns, from the branch stacks'
    /// cycle counts; `None` when no branch from the function has any.
    pub cycles: Option<BranchCycles>,
}

/// One instruction's figures from the LBR's cycle counts.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CycleCell {
    /// The IPC of the basic block measured that holds it (perf's
    /// 32-bit float); 0 when none was.
    pub ipc: f32,
    /// A branch from here: the average cycles since the branch before
    /// (integer division, as perf); 0 when none counted.
    pub cycles: u64,
    /// Their minimum (perf: the smallest non-zero after a first zero)…
    pub min: u64,
    /// … and maximum.
    pub max: u64,
    /// The branches from here counted.
    pub branches: u64,
}

/// The function's IPC and Cycle columns (perf's `cyc_hist` model, see
/// [the module](super)).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BranchCycles {
    /// Per instruction, in the order of [`Annotation::instructions`].
    pub instructions: Vec<CycleCell>,
    /// The cycles of the blocks that gave an IPC.
    pub hit_cycles: u64,
    /// Their instructions, each block's times its branches.
    pub hit_insn: u64,
    /// Instructions given an IPC.
    pub covered: u64,
    /// The function's instructions.
    pub total: u64,
}

impl BranchCycles {
    /// perf's "Average IPC": the instructions of the blocks measured
    /// over their cycles.
    pub fn average_ipc(&self) -> f64 {
        if self.hit_cycles == 0 {
            0.0
        } else {
            self.hit_insn as f64 / self.hit_cycles as f64
        }
    }

    /// perf's "IPC Coverage": the share (percent) of the function's
    /// instructions that have an IPC.
    pub fn coverage(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.covered as f64 * 100.0 / self.total as f64
        }
    }
}

/// The memory samples of one instruction: their count, the sum of their
/// weights (the access latency the PMU measured, in cycles) and how many
/// were served at each level (perf's words, `L1 or L1 hit`), most first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemoryCell {
    /// Samples.
    pub samples: u64,
    /// The sum of their weights.
    pub weight: u64,
    /// (level, samples), most samples first, then by name.
    pub levels: Vec<(String, u64)>,
}

impl MemoryCell {
    /// The average weight.
    pub fn average(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.weight as f64 / self.samples as f64
        }
    }

    /// `LEVEL ×N, LEVEL ×M`: the levels as a column shows them.
    pub fn levels_text(&self) -> String {
        let parts: Vec<String> = (self.levels.iter())
            .map(|(l, n)| format!("{l} \u{d7}{n}"))
            .collect();
        parts.join(", ")
    }
}

/// Instructions with at least this share (percent) of a column are hot
/// (perf colours them red).
pub const HOT_PERCENT: f64 = 5.0;
/// Instructions with at least this share are warm (perf: green).
pub const WARM_PERCENT: f64 = 0.5;

impl Annotation {
    /// Instruction `i`'s share (percent) of column `c`'s period in the
    /// function (perf's "local period" percent).
    pub fn percent(&self, i: usize, c: usize) -> f64 {
        let total = self.events[c].symbol.period;
        let w = self.instructions[i].weights[c].period;
        if total == 0 {
            0.0
        } else {
            w as f64 * 100.0 / total as f64
        }
    }

    /// The largest share of instruction `i` over the columns.
    pub fn max_percent(&self, i: usize) -> f64 {
        (0..self.events.len())
            .map(|c| self.percent(i, c))
            .fold(0.0, f64::max)
    }

    /// Source lines by their share of column `c`, heaviest first:
    /// (file, line, weight).
    pub fn lines_by_weight(&self, c: usize) -> Vec<(String, u32, Weight)> {
        let mut by: std::collections::BTreeMap<(String, u32), Weight> = Default::default();
        for ins in &self.instructions {
            if let Some(s) = &ins.source {
                by.entry((s.file.clone(), s.line))
                    .or_default()
                    .add(ins.weights[c]);
            }
        }
        let mut v: Vec<(String, u32, Weight)> =
            by.into_iter().map(|((f, l), w)| (f, l, w)).collect();
        v.sort_by(|a, b| b.2.period.cmp(&a.2.period).then(a.1.cmp(&b.1)));
        v
    }
}
