//! `-F`: which fields `pmx script` prints, per event type, with perf
//! script's names, defaults and syntax (`[type:][+-]field,…`).

use pmx_perfdata::format::sample_type;
use pmx_perfdata::read::Event;

/// A field of a sample line (perf script's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Field {
    /// `comm`: the thread's command name.
    Comm,
    /// `tid`: thread id.
    Tid,
    /// `pid`: process id.
    Pid,
    /// `time`: seconds.microseconds.
    Time,
    /// `cpu`: `[NNN]`.
    Cpu,
    /// `event`: the event's name.
    Event,
    /// `ip`: the address (map-relative in call chains, as perf).
    Ip,
    /// `sym`: the symbol.
    Sym,
    /// `symoff`: `+0xOFF` after the symbol.
    Symoff,
    /// `dso`: the binary, in parentheses.
    Dso,
    /// `period`: the sample's weight.
    Period,
    /// `brstack`: the branch stack, `0xFROM/0xTO/P/-/-/CYCLES/TYPE` each.
    Brstack,
    /// `brstacksym`: the branch stack by function and offset.
    Brstacksym,
    /// `trace`: a tracepoint's fields, as its print format shows them.
    Trace,
    /// `addr`: the sample's data address.
    Addr,
    /// `data_src`: the memory access's source, decoded.
    DataSrc,
    /// `weight`: the access's cost (latency) — not the period.
    Weight,
    /// `ins_lat`: the instruction latency (WEIGHT_STRUCT).
    InsLat,
    /// `phys_addr`: the data's physical address.
    PhysAddr,
    /// `data_page_size`: the data address's page size.
    DataPageSize,
    /// `code_page_size`: the instruction's page size.
    CodePageSize,
    /// `brstackoff`: the branch stack by binary offset (perf's rule).
    Brstackoff,
    /// `brstackinsn`: the instructions between consecutive branches.
    Brstackinsn,
    /// `brstackinsnlen`: `brstackinsn` with each branch's length.
    Brstackinsnlen,
    /// `brcntr`: each branch's counter word (`PERF_SAMPLE_BRANCH_COUNTERS`).
    Brcntr,
}

impl Field {
    /// The fields of a call-chain site.
    const CHAIN_SITE: [Field; 4] = [Field::Ip, Field::Sym, Field::Symoff, Field::Dso];
}

/// Every field, in the order of [`Field`]'s values.
pub const ALL: [(Field, &str); 25] = [
    (Field::Comm, "comm"),
    (Field::Tid, "tid"),
    (Field::Pid, "pid"),
    (Field::Time, "time"),
    (Field::Cpu, "cpu"),
    (Field::Event, "event"),
    (Field::Ip, "ip"),
    (Field::Sym, "sym"),
    (Field::Symoff, "symoff"),
    (Field::Dso, "dso"),
    (Field::Period, "period"),
    (Field::Brstack, "brstack"),
    (Field::Brstacksym, "brstacksym"),
    (Field::Trace, "trace"),
    (Field::Addr, "addr"),
    (Field::DataSrc, "data_src"),
    (Field::Weight, "weight"),
    (Field::InsLat, "ins_lat"),
    (Field::PhysAddr, "phys_addr"),
    (Field::DataPageSize, "data_page_size"),
    (Field::CodePageSize, "code_page_size"),
    (Field::Brstackoff, "brstackoff"),
    (Field::Brstackinsn, "brstackinsn"),
    (Field::Brstackinsnlen, "brstackinsnlen"),
    (Field::Brcntr, "brcntr"),
];

/// perf script's other field names, which pmx does not print.
const PERF_ONLY: &[&str] = &[
    "srcline",
    "iregs",
    "uregs",
    "flags",
    "bpf-output",
    "callindent",
    "insn",
    "insnlen",
    "synth",
    "metric",
    "misc",
    "srccode",
    "ipc",
    "machine_pid",
    "vcpu",
    "tod",
    "dsoff",
];

/// A set of fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Fields(u32);

impl Fields {
    /// Whether `f` is in the set.
    pub fn has(self, f: Field) -> bool {
        self.0 & (1 << f as u8) != 0
    }
    fn with(self, f: Field, on: bool) -> Fields {
        if on {
            Fields(self.0 | 1 << f as u8)
        } else {
            Fields(self.0 & !(1 << f as u8))
        }
    }
    fn of(list: &[Field]) -> Fields {
        list.iter().fold(Fields(0), |s, &f| s.with(f, true))
    }
}

/// perf script's output types: which defaults an event gets and which
/// `type:` prefix addresses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Hw,
    Sw,
    Trace,
    Raw,
}

const KINDS: [(Kind, &str); 4] = [
    (Kind::Hw, "hw"),
    (Kind::Sw, "sw"),
    (Kind::Trace, "trace"),
    (Kind::Raw, "raw"),
];

fn kind_of(e: &Event) -> Kind {
    match e.attr.type_ {
        0 | 3 => Kind::Hw,
        1 | 5 => Kind::Sw,
        2 => Kind::Trace,
        _ => Kind::Raw,
    }
}

fn defaults(k: Kind) -> Fields {
    use Field::*;
    match k {
        Kind::Trace => Fields::of(&[Comm, Tid, Cpu, Time, Event, Trace]),
        // perf's defaults for raw events add the memory fields (dropped
        // when the samples lack them).
        Kind::Raw => Fields::of(&[
            Comm,
            Tid,
            Cpu,
            Time,
            Period,
            Event,
            Ip,
            Sym,
            Symoff,
            Dso,
            Addr,
            DataSrc,
            Weight,
            InsLat,
            PhysAddr,
            DataPageSize,
            CodePageSize,
        ]),
        _ => Fields::of(&[Comm, Tid, Cpu, Time, Period, Event, Ip, Sym, Symoff, Dso]),
    }
}

/// The sample_type bit a field needs, if any.
fn needs(f: Field) -> Option<(u64, &'static str)> {
    match f {
        Field::Tid | Field::Pid => Some((sample_type::TID, "TID")),
        Field::Time => Some((sample_type::TIME, "TIME")),
        Field::Cpu => Some((sample_type::CPU, "CPU")),
        Field::Ip | Field::Sym | Field::Symoff | Field::Dso => Some((sample_type::IP, "IP")),
        Field::Addr => Some((sample_type::ADDR, "ADDR")),
        Field::DataSrc => Some((sample_type::DATA_SRC, "DATA_SRC")),
        Field::Weight => Some((
            sample_type::WEIGHT | sample_type::WEIGHT_STRUCT,
            "WEIGHT or WEIGHT_STRUCT",
        )),
        Field::InsLat => Some((sample_type::WEIGHT_STRUCT, "WEIGHT_STRUCT")),
        Field::PhysAddr => Some((sample_type::PHYS_ADDR, "PHYS_ADDR")),
        Field::DataPageSize => Some((sample_type::DATA_PAGE_SIZE, "DATA_PAGE_SIZE")),
        Field::CodePageSize => Some((sample_type::CODE_PAGE_SIZE, "CODE_PAGE_SIZE")),
        Field::Brcntr => Some((sample_type::BRANCH_STACK, "BRANCH_STACK")),
        _ => None,
    }
}

/// A field name as written, or why not.
fn field(name: &str) -> Result<Field, String> {
    if let Some(&(f, _)) = ALL.iter().find(|(_, n)| *n == name) {
        return Ok(f);
    }
    let known: Vec<&str> = ALL.iter().map(|(_, n)| *n).collect();
    if PERF_ONLY.contains(&name) {
        return Err(format!(
            "perf's field '{name}' is not printed by pmx script (pmx prints: {})",
            known.join(",")
        ));
    }
    let close: Vec<&str> = known
        .iter()
        .copied()
        .chain(PERF_ONLY.iter().copied())
        .filter(|k| distance(k, name) <= 2)
        .collect();
    let hint = match close.first() {
        Some(c) => format!(" (did you mean '{c}'?)"),
        None => String::new(),
    };
    Err(format!(
        "unknown field '{name}'{hint}; fields: {}",
        known.join(",")
    ))
}

/// Levenshtein distance (for close matches of a misspelt field).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The fields of each event of a file: the defaults of its type, changed
/// by the `-F` specs in order. A field the user asked for that an event's
/// samples do not carry is an error, as in perf; a default one is dropped.
pub fn resolve(specs: &[String], events: &[Event]) -> Result<Vec<Fields>, String> {
    // Per kind: (fields, set by the user).
    let mut per: Vec<(Kind, Fields, Fields)> = KINDS
        .iter()
        .map(|&(k, _)| (k, defaults(k), Fields(0)))
        .collect();
    for spec in specs {
        let (kinds, list): (Vec<Kind>, &str) = match spec.split_once(':') {
            Some((t, rest)) => {
                let k = KINDS
                    .iter()
                    .find(|(_, n)| *n == t)
                    .map(|&(k, _)| k)
                    .ok_or_else(|| {
                        format!("unknown event type '{t}' in -F (types: hw, sw, trace, raw)")
                    })?;
                (vec![k], rest)
            }
            None => (KINDS.iter().map(|&(k, _)| k).collect(), spec.as_str()),
        };
        let toks: Vec<&str> = list
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect();
        let changes = toks.iter().any(|t| t.starts_with(['+', '-']));
        if changes && !toks.iter().all(|t| t.starts_with(['+', '-'])) {
            return Err(format!(
                "-F {spec}: adding or removing fields (+f, -f) cannot be mixed with a field list"
            ));
        }
        for (k, fields, asked) in per.iter_mut().filter(|p| kinds.contains(&p.0)) {
            if !changes {
                *fields = Fields(0);
            }
            for t in &toks {
                let (on, name) = match t.as_bytes()[0] {
                    b'+' => (true, &t[1..]),
                    b'-' => (false, &t[1..]),
                    _ => (true, *t),
                };
                let f = field(name)?;
                *fields = fields.with(f, on);
                *asked = asked.with(f, on);
            }
            let _ = k;
        }
    }
    // As perf: tracepoints show their call chains when they have them and
    // the user did not choose their fields.
    let trace_chains = events
        .iter()
        .any(|e| kind_of(e) == Kind::Trace && e.attr.sample_type & sample_type::CALLCHAIN != 0);
    if let Some(t) = per
        .iter_mut()
        .find(|p| p.0 == Kind::Trace && p.2 == Fields(0))
    {
        if trace_chains && specs.is_empty() {
            t.1 = Field::CHAIN_SITE.iter().fold(t.1, |s, &f| s.with(f, true));
        }
    }
    let out: Vec<Fields> = events
        .iter()
        .map(|e| {
            let (_, mut fields, asked) = *per.iter().find(|p| p.0 == kind_of(e)).expect("kind");
            for &(f, name) in &ALL {
                let Some((bit, what)) = needs(f).filter(|_| fields.has(f)) else {
                    continue;
                };
                if e.attr.sample_type & bit != 0 {
                    continue;
                }
                if asked.has(f) {
                    return Err(format!(
                        "samples of '{}' do not have the {what} attribute set: cannot print the '{name}' field",
                        e.name
                    ));
                }
                fields = fields.with(f, false);
            }
            Ok(fields)
        })
        .collect::<Result<_, _>>()?;
    let insn = |f: &Fields| f.has(Field::Brstackinsn) || f.has(Field::Brstackinsnlen);
    let any = (events.iter()).fold(0, |b, e| b | e.attr.branch_sample_type)
        & pmx_perfdata::format::branch_sample_type::ANY;
    if any == 0 && out.iter().any(insn) {
        // As perf: the blocks between branches need every taken branch.
        return Err(
            "brstackinsn needs every taken branch, but this file's branch stacks \
                    were recorded with a filter, or none (record them with -b or -j any)"
                .to_string(),
        );
    }
    Ok(out)
}
