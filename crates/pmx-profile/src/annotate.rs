//! `pmx annotate` as a library call: [`annotate()`] takes
//! [`AnnotateOptions`] (the file, the function, the binary and event
//! when several) and returns an [`Annotation`]: the function's machine
//! code disassembled (x86-64, iced-x86, laid out as objdump and
//! `perf annotate` write it), each instruction's samples per event, and
//! its DWARF source line. [`render`] draws it as text or JSON.
//!
//! The samples come from the profile's places
//! ([`crate::profile::build_with_addresses`]): per (function, binary,
//! address) a set of per-event weights. Each instruction gets the
//! weights of the addresses from its first byte up to the next
//! instruction; its share is of the function's period per event (perf's
//! "local period" percent). A sample that carries other events' counts
//! (a sample-read group, `{A,B}:S`) adds each member's delta to its
//! column, and to the group's moments at that instruction
//! ([`GroupSamples`]); [`Annotation::add_metrics`] then evaluates metrics
//! over them (IPC per instruction and over the function, with their 95%
//! intervals, as `pmx report -M` does per row: [`crate::group_metrics`]).
//! Branch stacks with cycle counts give perf annotate's IPC and Cycle
//! columns ([`BranchCycles`], module `cycles`: perf's `cyc_hist` model),
//! memory samples their levels and weights (module `precise`); both come
//! from one second read of the file.

mod code;
mod cycles;
pub mod disasm;
pub mod find;
mod precise;
pub mod render;
mod types;

pub use cycles::CycHist;
pub use types::{
    AnnotateOptions, Annotation, BranchCycles, CycleCell, EventColumn, GroupSamples, Instruction,
    MemoryCell, MetricColumn, SourceLine, Syntax, HOT_PERCENT, WARM_PERCENT,
};

use crate::group_metrics::{cells, Evaluate};
use crate::profile::{build_with_addresses, AddressSamples, KernelSymbols, MachineId, Options};
use crate::profile::{Profile, SortKey, Weight};
use crate::report::ReportError;
use code::Binary;
use find::Candidate;
use pmx_perfdata::Reader;
use pmx_symbols::demangle::demangle_as;
use pmx_symbols::symbolize::hex;
use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};

/// Why there is no annotation.
#[derive(Debug, thiserror::Error)]
pub enum AnnotateError {
    /// The file is missing or unreadable, or the event is not in it (its
    /// message holds the cause: no source, so that it is said once).
    #[error("{0}")]
    Report(ReportError),
    /// No function of that name has samples.
    #[error("{symbol}: no samples in {file}{}{}", did_you_mean(.close), hottest(.top))]
    NoSymbol {
        /// The name asked for.
        symbol: String,
        /// The file as shown.
        file: String,
        /// Names close to it.
        close: Vec<String>,
        /// The functions with the most samples, and their samples.
        top: Vec<(String, u64)>,
    },
    /// Several binaries have a function of that name.
    #[error("{symbol} has samples in several binaries ({}): choose one with --dso", .dsos.join(", "))]
    Ambiguous {
        /// The name asked for.
        symbol: String,
        /// The binaries (paths).
        dsos: Vec<String>,
    },
    /// Kernel code: its machine code is in the kernel image.
    #[error(
        "{symbol} is kernel code ({dso}): annotating it needs the kernel image (vmlinux), \
         which pmx does not read; `perf annotate -k /path/to/vmlinux {symbol}` can"
    )]
    Kernel {
        /// The function.
        symbol: String,
        /// Its DSO (`[kernel.kallsyms]`, a module).
        dso: String,
    },
    /// The function's code cannot be read.
    #[error("{symbol}: {reason}")]
    NoCode {
        /// The function.
        symbol: String,
        /// Why.
        reason: String,
    },
    /// Code of another architecture.
    #[error("{symbol} in {path} is {arch} code: pmx annotate disassembles x86-64 code only")]
    Arch {
        /// The function.
        symbol: String,
        /// The binary.
        path: String,
        /// Its architecture.
        arch: String,
    },
    /// Metrics asked for a function without samples of a sample-read group.
    #[error(
        "{symbol} has no samples of a sample-read group in {file}: per-instruction metrics \
         need one, recorded with -e '{{A,B,…}}:S'"
    )]
    NoGroup {
        /// The function.
        symbol: String,
        /// The file as shown.
        file: String,
    },
}

impl AnnotateError {
    /// The message of a user's mistake (a name without samples or with
    /// several binaries, an event not in the file, metrics without a
    /// group); `None` for a failure (a file or binary unreadable…).
    pub fn bad_input(&self) -> Option<String> {
        match self {
            AnnotateError::Report(e) => e.bad_input(),
            AnnotateError::NoSymbol { .. }
            | AnnotateError::Ambiguous { .. }
            | AnnotateError::NoGroup { .. } => Some(self.to_string()),
            _ => None,
        }
    }
}

impl From<ReportError> for AnnotateError {
    fn from(e: ReportError) -> AnnotateError {
        AnnotateError::Report(e)
    }
}

fn did_you_mean(close: &[String]) -> String {
    if close.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", close.join(", "))
    }
}

fn hottest(top: &[(String, u64)]) -> String {
    if top.is_empty() {
        return " (it has no samples in user code with a readable binary)".to_string();
    }
    let list: Vec<String> = top.iter().map(|(s, n)| format!("{s} ({n})")).collect();
    format!(
        " (its hottest functions, with samples: {})",
        list.join(", ")
    )
}

/// Read `opts.input` and annotate `opts.symbol`; `progress` is called
/// now and then with (bytes read, total bytes when known).
pub fn annotate(
    opts: &AnnotateOptions,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<Annotation, AnnotateError> {
    let (profile, places, precise, file) = read(opts, progress)?;
    let mut a = annotate_places(&profile, &places, &precise, &file, opts)?;
    second_read(&mut a, &profile, &places, opts)?;
    Ok(a)
}

/// One function of [`annotate_all`]: `NAME in DSO`, and its annotation
/// or why it has none (its binary unreadable…).
pub type Annotated = (String, Result<Annotation, AnnotateError>);

/// perf annotate without a symbol: every sampled user function of
/// `opts.input` (in the events selected), heaviest first, each annotated
/// as [`annotate`] does (`opts.symbol` and `opts.dso` are not used).
/// Unresolved addresses are left out (there is no function to decode).
pub fn annotate_all(
    opts: &AnnotateOptions,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<Vec<Annotated>, AnnotateError> {
    let (profile, places, precise, file) = read(opts, progress)?;
    let selected = select(&profile, opts.event.as_deref(), &file)?;
    let funcs = find::candidates(&places, &selected).into_iter();
    let funcs = funcs.filter(|c| !c.kernel && !pmx_symbols::symbolize::is_address(&c.symbol));
    Ok(funcs
        .map(|c| {
            let mut o = opts.clone();
            (o.symbol, o.dso) = (c.symbol.clone(), Some(c.dso_path.clone()));
            let a = annotate_places(&profile, &places, &precise, &file, &o);
            let a = a.and_then(|mut a| second_read(&mut a, &profile, &places, &o).map(|()| a));
            (format!("{} in {}", c.symbol, c.dso), a)
        })
        .collect())
}

/// Add `a`'s memory columns (module `precise`) and IPC and Cycle columns
/// (module `cycles`) from one more read of `opts.input`, made only when
/// one of the selected events feeds either (not from a pipe, which
/// cannot be read twice).
fn second_read(
    a: &mut Annotation,
    profile: &Profile,
    places: &[AddressSamples],
    opts: &AnnotateOptions,
) -> Result<(), AnnotateError> {
    if opts.input.as_os_str() == "-" {
        return Ok(());
    }
    let selected = select(profile, opts.event.as_deref(), &a.file)?;
    let chosen = choose(places, &selected, opts, &a.file)?;
    let reader = Reader::open(&opts.input).map_err(|source| {
        AnnotateError::Report(ReportError::Read {
            file: a.file.clone(),
            source,
        })
    })?;
    let types: Vec<u64> = reader.events().iter().map(|e| e.attr.sample_type).collect();
    let mut cyc = cycles::Cycles::new(a);
    let pick = |want: fn(u64) -> bool, on: bool| -> Vec<bool> {
        let each = types.iter().enumerate();
        each.map(|(e, &t)| on && selected.contains(&e) && want(t))
            .collect()
    };
    let mem_wanted = pick(precise::Memory::wants, true);
    let cyc_wanted = pick(cycles::Cycles::wants, cyc.is_some());
    let wanted: Vec<bool> = mem_wanted
        .iter()
        .zip(&cyc_wanted)
        .map(|(m, c)| m | c)
        .collect();
    if !wanted.contains(&true) {
        return Ok(());
    }
    let mut mem = precise::Memory::new(a, &types);
    let mut each = |s: &pmx_perfdata::read::Sample<'_>, at: &dyn Fn(u64) -> Option<u64>| {
        if mem_wanted[s.event] {
            mem.sample(a, s, at);
        }
        if let (Some(c), true) = (cyc.as_mut(), cyc_wanted[s.event]) {
            c.sample(s, at);
        }
    };
    precise::samples(a, &chosen.dso_path, reader, &wanted, opts, &mut each)?;
    mem.finish(a);
    if let Some(c) = cyc {
        c.finish(a);
    }
    Ok(())
}

/// The file's profile with its places, each event's `precise_ip`, and
/// the file as messages name it.
fn read(
    opts: &AnnotateOptions,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<(Profile, Vec<AddressSamples>, Vec<u8>, String), AnnotateError> {
    let (mut reader, file) = open(&opts.input)?;
    let options = Options {
        sort: vec![SortKey::Dso, SortKey::Symbol],
        kallsyms: KernelSymbols::Load,
        this_machine: MachineId::current(),
        root: opts.symfs.clone(),
        symbols: opts.symbols.clone(),
        ..Options::default()
    };
    let (profile, places) =
        build_with_addresses(&mut reader, &options, progress).map_err(|source| {
            ReportError::Read {
                file: file.clone(),
                source,
            }
        })?;
    let precise: Vec<u8> = reader
        .events()
        .iter()
        .map(|e| e.attr.precise_ip())
        .collect();
    Ok((profile, places, precise, file))
}

/// Annotate `opts.symbol` (its `input` is not read) from a profile and
/// its places already built — a file's, or a live session's
/// ([`crate::Live::snapshot`] and [`crate::Live::addresses`], `pmx top`'s
/// annotate view); `precise` is each event's `precise_ip`, `file` the
/// source as messages name it.
pub fn annotate_places(
    profile: &Profile,
    places: &[AddressSamples],
    precise: &[u8],
    file: &str,
    opts: &AnnotateOptions,
) -> Result<Annotation, AnnotateError> {
    let selected = select(profile, opts.event.as_deref(), file)?;
    let chosen = choose(places, &selected, opts, file)?;
    if chosen.kernel {
        return Err(AnnotateError::Kernel {
            symbol: chosen.symbol,
            dso: chosen.dso,
        });
    }
    let mine: Vec<&AddressSamples> = places
        .iter()
        .filter(|p| p.symbol == chosen.symbol && p.dso_path == chosen.dso_path && !p.kernel)
        .collect();
    let path = match &opts.symfs {
        Some(r) => r.join(chosen.dso_path.trim_start_matches('/')),
        None => PathBuf::from(&chosen.dso_path),
    };
    // A binary deleted or replaced under a process that still runs:
    // the mapped file itself.
    let path = match mine.iter().find_map(|p| p.mapped_file.as_ref()) {
        Some(link) if link.exists() => link.clone(),
        _ => pmx_symbols::buildid_cache::resolve(
            &opts.symbols.dirs.buildid,
            &path,
            chosen.build_id.as_deref(),
        ),
    };
    let mut a = disassemble(&chosen, &path, mine[0].addr, opts)?;
    a.file = file.to_string();
    a.warnings = profile.warnings.clone();
    a.cpuid = profile.features.cpuid.clone();
    a.events = columns(profile, &selected, &mine, precise);
    credit(&mut a, &mine);
    a.groups = group_samples(profile, &selected, &mine, &a);
    Ok(a)
}

/// The selected sample-read groups' moments per instruction.
fn group_samples(
    profile: &Profile,
    selected: &[usize],
    mine: &[&AddressSamples],
    a: &Annotation,
) -> Vec<GroupSamples> {
    let mut out = Vec::new();
    for &e in selected {
        let Some(g) = &profile.events[e].group else {
            continue;
        };
        let mut gs = GroupSamples {
            leader: e,
            members: (g.members.iter())
                .map(|&m| profile.events[m].name.clone())
                .collect(),
            symbol: Default::default(),
            instructions: vec![Default::default(); a.instructions.len()],
        };
        for p in mine {
            let i = a.instructions.partition_point(|ins| ins.addr <= p.addr);
            if i == 0 || p.addr >= a.end {
                continue;
            }
            for (_, m) in p.groups.iter().filter(|(l, _)| *l == e) {
                gs.instructions[i - 1].merge(m);
                gs.symbol.merge(m);
            }
        }
        if gs.symbol.samples > 0 {
            out.push(gs);
        }
    }
    out
}

impl Annotation {
    /// Every member of the groups with samples here (to choose the
    /// metrics' definitions by).
    pub fn group_events(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for n in self.groups.iter().flat_map(|g| &g.members) {
            if !v.contains(n) {
                v.push(n.clone());
            }
        }
        v
    }

    /// Evaluate the metrics `names` (through `eval`, as `pmx report -M`
    /// does per row) over each group's deltas: per instruction and over
    /// the function. An error when the function has no group samples.
    pub fn add_metrics(
        &mut self,
        names: &[String],
        eval: Evaluate<'_>,
    ) -> Result<(), AnnotateError> {
        if self.groups.is_empty() {
            return Err(AnnotateError::NoGroup {
                symbol: self.symbol.clone(),
                file: self.file.clone(),
            });
        }
        let several = self.groups.len() > 1;
        for (k, g) in self.groups.iter().enumerate() {
            let of = |m: &crate::profile::Moments| cells(m, &g.members, names.len(), eval);
            let symbol = of(&g.symbol);
            let per: Vec<Option<Vec<_>>> = (g.instructions.iter())
                .map(|m| (m.samples > 0).then(|| of(m)))
                .collect();
            for (j, name) in names.iter().enumerate() {
                self.metrics.push(MetricColumn {
                    name: name.clone(),
                    label: if several {
                        format!("{name}[{}]", g.members[0])
                    } else {
                        name.clone()
                    },
                    group: k,
                    symbol: symbol[j],
                    instructions: per.iter().map(|c| c.as_ref().map(|c| c[j])).collect(),
                });
            }
        }
        Ok(())
    }
}

/// The reader of `input` (`-`: standard input) and the file as shown.
fn open(input: &Path) -> Result<(Reader, String), ReportError> {
    let stdin = input.as_os_str() == "-";
    let file = if stdin {
        "standard input".to_string()
    } else {
        input.display().to_string()
    };
    let path = if stdin {
        Path::new("/dev/stdin")
    } else {
        input
    };
    match Reader::open(path) {
        Ok(r) => Ok((r, file)),
        Err(pmx_perfdata::Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(ReportError::NotFound(file))
        }
        Err(source) => Err(ReportError::Read { file, source }),
    }
}

/// The events named `event` (with or without modifiers), or all.
fn select(p: &Profile, event: Option<&str>, file: &str) -> Result<Vec<usize>, ReportError> {
    let found: Vec<usize> = (0..p.events.len())
        .filter(|&i| {
            event.is_none_or(|n| {
                p.events[i].name == n || p.events[i].name.split(':').next() == Some(n)
            })
        })
        .collect();
    match event {
        Some(name) if found.is_empty() => Err(ReportError::UnknownEvent {
            event: name.to_string(),
            file: file.to_string(),
            known: p.events.iter().map(|e| e.name.clone()).collect(),
            warnings: p.warnings.clone(),
        }),
        _ => Ok(found),
    }
}

/// The one function matching the options, or why there is none.
fn choose(
    places: &[AddressSamples],
    selected: &[usize],
    opts: &AnnotateOptions,
    file: &str,
) -> Result<Candidate, AnnotateError> {
    let cands = find::candidates(places, selected);
    let (name, dso) = (opts.symbol.as_str(), opts.dso.as_deref());
    let mut found: Vec<&Candidate> = cands
        .iter()
        .filter(|c| find::is_match(c, name, dso))
        .collect();
    if found.is_empty() {
        found = cands
            .iter()
            .filter(|c| find::is_short_match(c, name, dso))
            .collect();
    }
    match found.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(AnnotateError::NoSymbol {
            symbol: opts.symbol.clone(),
            file: file.to_string(),
            close: find::close_names(&cands, &opts.symbol),
            top: cands
                .iter()
                .take(5)
                .map(|c| (format!("{} in {}", c.symbol, c.dso), c.samples))
                .collect(),
        }),
        many => Err(AnnotateError::Ambiguous {
            symbol: opts.symbol.clone(),
            dsos: many.iter().map(|c| c.dso_path.clone()).collect(),
        }),
    }
}

/// The function of `chosen` that holds `addr`, decoded from `path`;
/// events and weights are filled in later.
fn disassemble(
    chosen: &Candidate,
    path: &Path,
    addr: u64,
    opts: &AnnotateOptions,
) -> Result<Annotation, AnnotateError> {
    let no_code = |reason: String| AnnotateError::NoCode {
        symbol: chosen.symbol.clone(),
        reason,
    };
    let (elf, _) = opts.symbols.binaries.open(path).map_err(no_code)?;
    let style = opts.symbols.demangle;
    let bin = Binary::open(path).map_err(no_code)?;
    if !bin.is_x86_64() {
        return Err(AnnotateError::Arch {
            symbol: chosen.symbol.clone(),
            path: path.display().to_string(),
            arch: bin.arch_name(),
        });
    }
    let sym = elf
        .lookup(addr)
        .map(|i| elf.symbols()[i].clone())
        .ok_or_else(|| no_code(format!("{} has no symbol at {addr:#x}", path.display())))?;
    let code = bin.code(sym.start, sym.end).ok_or_else(|| {
        no_code(format!(
            "{}: no code at {:#x}..{:#x} (a stripped or different binary?)",
            path.display(),
            sym.start,
            sym.end
        ))
    })?;
    let names: Vec<(u64, u64, String)> = elf
        .symbols()
        .iter()
        .map(|s| (s.start, s.end, demangle_as(&s.name, style)))
        .collect();
    let mut label = |a: u64| {
        if let Some(plt) = bin.plt_name(a) {
            return Some(plt);
        }
        let Some(i) = names.partition_point(|s| s.0 <= a).checked_sub(1) else {
            return bin.data_label(a);
        };
        let (start, end, name) = &names[i];
        if a >= *end {
            return bin.data_label(a);
        }
        Some(match a - start {
            0 => name.clone(),
            off => format!("{name}+{off:#x}"),
        })
    };
    let decoded = disasm::disassemble(code, sym.start, opts.syntax, &mut label);
    let mut sources = SourceText::default();
    let instructions = decoded
        .into_iter()
        .map(|d| Instruction {
            offset: d.addr - sym.start,
            source: elf.line(d.addr).map(|(file, line)| SourceLine {
                text: sources.line(&file, line),
                file,
                line,
            }),
            addr: d.addr,
            bytes: d.bytes,
            text: d.text,
            target: d.target,
            weights: Vec::new(),
        })
        .collect();
    Ok(Annotation {
        file: String::new(),
        symbol: chosen.symbol.clone(),
        dso: chosen.dso.clone(),
        path: path.display().to_string(),
        build_id: chosen.build_id.as_deref().or(elf.build_id()).map(hex),
        start: sym.start,
        end: sym.end,
        arch: "x86-64",
        syntax: opts.syntax,
        events: Vec::new(),
        instructions,
        groups: Vec::new(),
        metrics: Vec::new(),
        warnings: Vec::new(),
        cpuid: None,
        memory: Vec::new(),
        cycles: None,
    })
}

/// The columns: the selected events with samples in the function.
fn columns(
    profile: &Profile,
    selected: &[usize],
    mine: &[&AddressSamples],
    precise: &[u8],
) -> Vec<EventColumn> {
    selected
        .iter()
        .filter_map(|&e| {
            let mut symbol = Weight::default();
            for p in mine {
                symbol.add(p.weights.get(e).copied().unwrap_or_default());
            }
            let ev = &profile.events[e];
            (symbol.samples > 0 || symbol.period > 0).then(|| EventColumn {
                name: ev.name.clone(),
                index: e,
                symbol,
                file: Weight {
                    samples: ev.samples,
                    period: ev.period,
                },
                precise: precise.get(e).copied().unwrap_or(0),
            })
        })
        .collect()
}

/// Each place's weights to the instruction that holds its address;
/// places outside the function's code are counted in a warning.
fn credit(a: &mut Annotation, mine: &[&AddressSamples]) {
    let cols: Vec<usize> = a.events.iter().map(|c| c.index).collect();
    for ins in &mut a.instructions {
        ins.weights = vec![Weight::default(); cols.len()];
    }
    let mut outside = 0u64;
    for p in mine {
        let i = a.instructions.partition_point(|ins| ins.addr <= p.addr);
        let inside = i > 0 && p.addr < a.end;
        for (c, &e) in cols.iter().enumerate() {
            let w = p.weights.get(e).copied().unwrap_or_default();
            if inside {
                a.instructions[i - 1].weights[c].add(w);
            } else {
                outside += w.samples;
            }
        }
    }
    if outside > 0 {
        a.warnings.push(format!(
            "{outside} sample(s) of {} lie outside its code {:#x}..{:#x} (another symbol of that name?) and are not shown",
            a.symbol, a.start, a.end
        ));
    }
}

/// Source files read once each (`None`: not readable here).
#[derive(Default)]
struct SourceText {
    files: HashMap<String, Option<Vec<String>>>,
}

impl SourceText {
    /// Line `line` (1-based) of `file`, without its end of line.
    fn line(&mut self, file: &str, line: u32) -> Option<String> {
        let lines = self.files.entry(file.to_string()).or_insert_with(|| {
            let bytes = std::fs::read(file).ok()?;
            Some(
                String::from_utf8_lossy(&bytes)
                    .lines()
                    .map(str::to_string)
                    .collect(),
            )
        });
        let text = lines.as_ref()?.get((line as usize).checked_sub(1)?)?;
        Some(text.trim_end().to_string())
    }
}
