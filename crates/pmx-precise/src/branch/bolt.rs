//! BOLT's profile: the fdata text `perf2bolt -p perf.data -o FILE
//! BINARY` writes, made from the file itself, without perf.
//!
//! **Branch mode** (a file recorded with `-b`/`-j`): every branch stack
//! is read as perf2bolt reads it — entries with a kernel end dropped
//! (its `-ignore-interrupt-lbr`), each address taken in the binary's
//! mapping of the sample's process, else "elsewhere" — and gives two
//! kinds of counts: the **branches** themselves (source and target as
//! `function offset`, or `[unknown]` outside the binary's functions;
//! taken and mispredicted counts), and the **fall-throughs** of the
//! straight-line run between two consecutive entries (from one branch's
//! target to the next one's source, inside one function): the run
//! crosses basic blocks, and each block it leaves adds one edge from the
//! block's last instruction to the next block, as BOLT's aggregator adds
//! them (a run that leaves a block with no way to the next is dropped).
//! The blocks are decoded with iced-x86 as BOLT splits them (`binary`).
//!
//! **Sample mode** (perf2bolt's `-nl`, a file without branch stacks):
//! `no_lbr EVENTS`, then one `1 function offset count` record per
//! sampled address of the binary's functions.
//!
//! Records are written per function; perf2bolt writes its functions in
//! the order of a hash table, pmx by address (BOLT reads them in any
//! order).

pub(super) mod binary;

use binary::Binary;
use pmx_profile::profile::sink::{SampleRef, SampleSink, Side};
use pmx_profile::report::{report_with, ReportOptions};
use pmx_symbols::symbolize::{FrameId, Symbolizer};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::BranchError;

/// The first kernel address (perf2bolt's `KernelBaseAddr`).
const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// What to write.
#[derive(Debug, Clone, Default)]
pub struct BoltOptions {
    /// The binary to optimize; `None`: the binary with the most
    /// branch ends (samples with `no_lbr`) in the file.
    pub binary: Option<PathBuf>,
    /// Sample mode (perf2bolt's `-nl`): the samples' addresses, not their branches.
    pub no_lbr: bool,
}

/// What was written.
#[derive(Debug, Clone)]
pub struct BoltProfile {
    /// The fdata text.
    pub text: String,
    /// The binary it profiles.
    pub binary: PathBuf,
    /// Its records.
    pub records: usize,
}

/// An address in a mapped binary: (binary, file offset); `None`: elsewhere.
type Loc = Option<(u32, u64)>;

/// The counts as the replay gives them, per binary and file offset.
#[derive(Default)]
struct Raw {
    /// (from, to) → (taken, mispredicted).
    branches: HashMap<(Loc, Loc), (u64, u64)>,
    /// (binary, run start, run end, the source of the branch that
    /// started the run) → runs.
    runs: HashMap<(u32, u64, u64, Loc), u64>,
    /// Sampled addresses.
    samples: HashMap<(u32, u64), u64>,
    /// Names of the events sampled, by index.
    events: std::collections::BTreeSet<usize>,
    /// Branch ends (samples) per binary: the default binary's choice.
    weight: HashMap<u32, u64>,
    /// Each binary's path and build id, by id.
    dsos: Vec<(String, Option<Vec<u8>>)>,
    no_lbr: bool,
}

fn locate(sym: &Symbolizer, pid: u32, addr: u64) -> Loc {
    let (start, _, pgoff, dso) = sym.mapping(pid, addr)?;
    Some((dso, (addr - start).wrapping_add(pgoff)))
}

impl SampleSink for Raw {
    fn sample(&mut self, s: &SampleRef<'_>, sym: &mut Symbolizer) {
        if self.no_lbr {
            if let Some(loc) = s.addrs.first().and_then(|&ip| locate(sym, s.pid, ip)) {
                *self.samples.entry(loc).or_default() += 1;
                *self.weight.entry(loc.0).or_default() += 1;
            }
            self.events.insert(s.event);
            return;
        }
        let user = |e: &&[u64]| e[0] < KERNEL_START && e[1] < KERNEL_START;
        let mut newer: Option<Loc> = None;
        for e in s.branches.chunks_exact(3).filter(user) {
            let (from, to) = (locate(sym, s.pid, e[0]), locate(sym, s.pid, e[1]));
            if let (Some(Some((dso, a))), Some((d2, b))) = (newer, to) {
                if dso == d2 {
                    *self.runs.entry((dso, b, a, from)).or_default() += 1;
                }
            }
            newer = Some(from);
            let c = self.branches.entry((from, to)).or_default();
            c.0 += 1;
            c.1 += u64::from(e[2] & 1 != 0);
            for (dso, _) in [from, to].into_iter().flatten() {
                *self.weight.entry(dso).or_default() += 1;
            }
        }
    }

    fn side(&mut self, _: Side) {}

    /// Branch mode reads the branch stacks alone (sample mode reads
    /// each sample's address, which the replay gives only to a sink
    /// that is not alone); nothing prints the ordinary profile.
    fn alone(&self) -> bool {
        !self.no_lbr
    }

    fn finish(&mut self, sym: &mut Symbolizer, _: &[FrameId]) {
        let n = self.weight.keys().max().map_or(0, |&d| d as usize + 1);
        self.dsos = (0..n)
            .map(|d| {
                let dso = sym.dso(d as u32);
                (dso.path.clone(), dso.expected_build_id.clone())
            })
            .collect();
    }
}

/// A location as fdata writes it.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct At {
    function: Option<usize>,
    offset: u64,
}

/// One function's records: (from, to) → (mispredicted, count), in the
/// order made.
#[derive(Default)]
struct Records {
    index: HashMap<(At, At), usize>,
    list: Vec<((At, At), u64, u64)>,
}

impl Records {
    fn bump(&mut self, from: At, to: At, count: u64, mispred: u64) {
        let key = (from, to);
        let i = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                self.index.insert(key.clone(), self.list.len());
                self.list.push((key, 0, 0));
                self.list.len() - 1
            }
        };
        self.list[i].1 += mispred;
        self.list[i].2 += count;
    }
}

/// Read `opts.input` and make the fdata of `bolt.binary`.
pub fn fdata(
    opts: &ReportOptions,
    bolt: &BoltOptions,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<BoltProfile, BranchError> {
    let mut raw = Raw {
        no_lbr: bolt.no_lbr,
        ..Raw::default()
    };
    let report = report_with(opts, progress, Some(&mut raw as &mut dyn SampleSink))?;
    if !bolt.no_lbr && raw.branches.is_empty() {
        let names: Vec<&str> = (report.profile.events.iter().map(|e| e.name.as_str())).collect();
        return Err(BranchError::NoBranches(
            report.file.clone(),
            names.join(", "),
        ));
    }
    let (dso, path, mut binary) = target(&raw, bolt.binary.as_deref(), &report.file)?;
    let mut text = String::new();
    let records = if bolt.no_lbr {
        let names: Vec<String> = (raw.events.iter())
            .filter_map(|&i| report.profile.events.get(i).map(|e| format!("{}:", e.name)))
            .collect();
        samples(&raw, dso, &binary, &names.join(" "), &mut text)
    } else {
        branches(&raw, dso, &mut binary, &mut text)
    };
    Ok(BoltProfile {
        text,
        binary: path,
        records,
    })
}

/// The binary most branch ends of `opts.input` fall in (a first reading).
pub(super) fn main_binary(
    opts: &ReportOptions,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<PathBuf, BranchError> {
    let mut raw = Raw::default();
    let report = report_with(opts, progress, Some(&mut raw as &mut dyn SampleSink))?;
    target(&raw, None, &report.file).map(|t| t.1)
}

/// The binary to profile: its id among the file's, its path, its functions.
fn target(
    raw: &Raw,
    asked: Option<&Path>,
    file: &str,
) -> Result<(u32, PathBuf, Binary), BranchError> {
    let fail = |m: String| BranchError::Bolt(m);
    if let Some(path) = asked {
        let binary = Binary::open(path).map_err(fail)?;
        let base = path.file_name().map(|n| n.to_string_lossy().to_string());
        let found = raw
            .dsos
            .iter()
            .enumerate()
            .find(|(_, (p, id))| match (id, &binary.build_id) {
                (Some(a), Some(b)) => a == b,
                _ => {
                    Path::new(p)
                        .file_name()
                        .map(|n| n.to_string_lossy().to_string())
                        == base
                }
            });
        let Some((dso, _)) = found else {
            return Err(fail(format!(
                "{}: {file} has no samples in it (no mapping of its build id or name)",
                path.display()
            )));
        };
        return Ok((dso as u32, path.to_path_buf(), binary));
    }
    let best = (raw.weight.iter())
        .filter(|(&d, _)| {
            raw.dsos
                .get(d as usize)
                .is_some_and(|p| p.0.starts_with('/'))
        })
        .max_by_key(|(&d, &n)| (n, std::cmp::Reverse(d)));
    let Some((&dso, _)) = best else {
        return Err(fail(format!("{file}: no sample is in a binary on disk")));
    };
    let path = PathBuf::from(&raw.dsos[dso as usize].0);
    let binary =
        Binary::open(&path).map_err(|e| fail(format!("{e} (name a copy of it with --binary)")))?;
    Ok((dso, path, binary))
}

fn write_at(out: &mut String, binary: &Binary, at: &At) {
    let _ = match at.function {
        Some(f) => write!(out, "1 {} {:x} ", binary.functions[f].name, at.offset),
        None => write!(out, "0 [unknown] {:x} ", at.offset),
    };
}

/// Sample mode's text.
fn samples(raw: &Raw, dso: u32, binary: &Binary, events: &str, out: &mut String) -> usize {
    let mut per: BTreeMap<(usize, u64), u64> = BTreeMap::new();
    for (&(d, off), &n) in &raw.samples {
        let Some(addr) = (d == dso).then(|| binary.address(off)).flatten() else {
            continue;
        };
        if let Some(f) = binary.containing(addr) {
            *per.entry((f, addr - binary.functions[f].start))
                .or_default() += n;
        }
    }
    let _ = writeln!(out, "no_lbr {events}");
    for ((f, off), n) in &per {
        let _ = writeln!(out, "1 {} {off:x} {n}", binary.functions[*f].name);
    }
    per.len()
}

/// Branch mode's text.
fn branches(raw: &Raw, dso: u32, binary: &mut Binary, out: &mut String) -> usize {
    let addr = |binary: &Binary, loc: Loc| -> Option<u64> {
        let (d, off) = loc?;
        (d == dso).then(|| binary.address(off)).flatten()
    };
    // perf2bolt's aggregation: runs by (start, end) with the runs whose
    // branch came from the same function apart; branches by their
    // ends, an end in no function being 0.
    let mut runs: BTreeMap<(u64, u64), (u64, u64)> = BTreeMap::new();
    for (&(d, start, end, from), &n) in &raw.runs {
        let (Some(a), Some(b)) = (addr(binary, Some((d, start))), addr(binary, Some((d, end))))
        else {
            continue;
        };
        let Some(f) = binary.containing(a).filter(|&f| binary.contains(f, b)) else {
            continue;
        };
        let c = runs.entry((a, b)).or_default();
        match addr(binary, from).is_some_and(|x| binary.contains(f, x)) {
            true => c.0 += n,
            false => c.1 += n,
        }
    }
    let mut taken: BTreeMap<(u64, u64), (u64, u64)> = BTreeMap::new();
    for (&(from, to), &(n, m)) in &raw.branches {
        let end = |loc| {
            addr(binary, loc)
                .filter(|&a| binary.containing(a).is_some())
                .unwrap_or(0)
        };
        let (from, to) = (end(from), end(to));
        if from != 0 || to != 0 {
            let c = taken.entry((from, to)).or_default();
            (c.0, c.1) = (c.0 + n, c.1 + m);
        }
    }
    let mut data: BTreeMap<usize, Records> = BTreeMap::new();
    let mut entries: BTreeMap<usize, Records> = BTreeMap::new();
    for (&(a, b), &(intern, extern_)) in &runs {
        for (count, from_inside) in [(intern, true), (extern_, false)] {
            if count > 0 {
                fall_throughs(binary, a, b, from_inside, count, &mut data);
            }
        }
    }
    for (&(from, to), &(n, m)) in &taken {
        let (ff, tf) = (binary.containing(from), binary.containing(to));
        let at = |f: Option<usize>, a: u64| At {
            function: f,
            offset: f.map_or(a, |f| a - binary.functions[f].start),
        };
        let (src, dst) = (at(ff, from), at(tf, to));
        if let Some(f) = ff {
            data.entry(f)
                .or_default()
                .bump(src.clone(), dst.clone(), n, m);
        } else if let Some(t) = tf {
            entries.entry(t).or_default().bump(src, dst, n, m);
        }
    }
    let mut records = 0;
    for (f, recs) in data.iter().chain(entries.iter()) {
        let _ = f;
        for ((from, to), m, n) in &recs.list {
            write_at(out, binary, from);
            write_at(out, binary, to);
            let _ = writeln!(out, "{m} {n}");
            records += 1;
        }
    }
    records
}

/// The fall-through edges of the run `[a, b]` inside one function, as
/// BOLT adds them (`from_inside`: the branch that started the run came
/// from the same function).
fn fall_throughs(
    binary: &mut Binary,
    a: u64,
    b: u64,
    from_inside: bool,
    count: u64,
    data: &mut BTreeMap<usize, Records>,
) {
    let Some(f) = binary.containing(a) else {
        return;
    };
    if binary.containing(b) != Some(f) {
        return;
    }
    let start = binary.functions[f].start;
    let size = binary.functions[f].size;
    let (from, to) = (a - start, b - start);
    if from > to {
        return;
    }
    let Some(blocks) = binary.blocks(f) else {
        return;
    };
    let find = |off: u64| {
        let i = blocks.partition_point(|b| b.start <= off).checked_sub(1)?;
        let end = blocks.get(i + 1).map_or(size, |n| n.start);
        (off < end).then_some(i)
    };
    let (Some(mut i), Some(j)) = (find(from), find(to)) else {
        return;
    };
    if from == blocks[i].start
        && !from_inside
        && i > 0
        && blocks[i - 1].to_next
        && blocks[i - 1].call
    {
        i -= 1;
    }
    let mut edges = Vec::new();
    while i < j {
        if !blocks[i].to_next {
            return;
        }
        edges.push((blocks[i].last, blocks[i + 1].start));
        i += 1;
    }
    let recs = data.entry(f).or_default();
    for (x, y) in edges {
        let at = |offset| At {
            function: Some(f),
            offset,
        };
        recs.bump(at(x), at(y), count, 0);
    }
}
