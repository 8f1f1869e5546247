//! The cache lines of a c2c report: each memory sample counted into its
//! data cache line (perf's `dcacheline` key: the sample's mode, then its
//! mapping, the process for anonymous memory, then the 64-byte line of
//! the address in its mapping) and, inside the line, into the entry of
//! its offset and coalescing keys (`-c`, default `iaddr`), with the CPUs,
//! physical pages and the weights' running means perf keeps per entry.

use super::C2cStats;
use std::cmp::Ordering;

/// What `-d` sorts and filters the lines on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Display {
    /// `tot`: local plus remote HITMs (perf's default on x86).
    #[default]
    Tot,
    /// `lcl`: local HITMs.
    Lcl,
    /// `rmt`: remote HITMs.
    Rmt,
    /// `peer`: local plus remote peer snoops.
    Peer,
}

impl Display {
    /// `-d`'s word.
    pub fn parse(s: &str) -> Option<Display> {
        Some(match s {
            "tot" => Display::Tot,
            "lcl" => Display::Lcl,
            "rmt" => Display::Rmt,
            "peer" => Display::Peer,
            _ => return None,
        })
    }

    /// perf's name of the sort (`Cachelines sort on`).
    pub fn name(self) -> &'static str {
        match self {
            Display::Tot => "Total HITMs",
            Display::Lcl => "Local HITMs",
            Display::Rmt => "Remote HITMs",
            Display::Peer => "Peer Snoop",
        }
    }

    /// The count this display sorts on.
    pub fn value(self, s: &C2cStats) -> u64 {
        match self {
            Display::Tot => s.tot_hitm,
            Display::Lcl => s.lcl_hitm,
            Display::Rmt => s.rmt_hitm,
            Display::Peer => s.tot_peer,
        }
    }
}

/// A coalescing key of `-c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coalesce {
    /// The process.
    Pid,
    /// The thread.
    Tid,
    /// The code address (adds the symbol, object and source columns).
    Iaddr,
    /// The code's object.
    Dso,
}

/// `-c`'s list (`pid,tid,iaddr,dso`), or the word perf refuses.
pub fn parse_coalesce(list: &str) -> Result<Vec<Coalesce>, String> {
    let mut out = Vec::new();
    for w in list.split(',') {
        out.push(match w {
            "pid" => Coalesce::Pid,
            "tid" => Coalesce::Tid,
            "iaddr" => Coalesce::Iaddr,
            "dso" => Coalesce::Dso,
            "offset" => continue,
            _ => return Err(w.to_string()),
        });
    }
    Ok(out)
}

/// `-c`'s keys as perf prints them in `Cacheline data grouping`.
pub fn coalesce_words(keys: &[Coalesce]) -> String {
    let w: Vec<&str> = (keys.iter())
        .map(|k| match k {
            Coalesce::Pid => "pid",
            Coalesce::Tid => "tid",
            Coalesce::Iaddr => "iaddr",
            Coalesce::Dso => "dso",
        })
        .collect();
    w.join(",")
}

/// perf's running mean (`update_stats`: Welford's update).
#[derive(Debug, Clone, Copy, Default)]
pub struct Mean {
    n: u64,
    mean: f64,
}

impl Mean {
    fn add(&mut self, v: u64) {
        self.n += 1;
        let delta = v as f64 - self.mean;
        self.mean += delta / self.n as f64;
    }

    /// The mean so far (0 with no values).
    pub fn get(&self) -> f64 {
        self.mean
    }
}

/// Physical pages and their NUMA nodes (perf's `PA cnt`, `Node`): perf
/// counts them only where the file's memory topology places a page on a
/// node, which pmx does not read yet, so `0` and `N/A` as perf prints
/// them for a file without one.
#[derive(Debug, Clone, Default)]
pub struct Phys {
    /// Changes of physical address from one sample to the next.
    pub count: u64,
}

/// An entry of a line: one offset and coalescing keys' values.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The first sample's data address (its offset in the line is the
    /// key's).
    pub addr: u64,
    /// The data address in its mapping (perf's `al_addr`; the printed
    /// offset).
    pub data_rel: u64,
    /// Code address, process, thread of the first sample.
    pub ip: u64,
    #[allow(missing_docs)]
    pub pid: u32,
    #[allow(missing_docs)]
    pub tid: u32,
    /// Object name of the code (`None`: no mapping).
    pub dso: Option<String>,
    /// `[.] name` or `[k] 0x…`.
    pub symbol: String,
    /// The thread's command (`-c tid`'s column).
    pub comm: String,
    /// Source line (`file:line`, perf's fallback `object[offset]`, `??:0`).
    pub srcline: String,
    /// The entry's counts.
    pub stats: C2cStats,
    /// The CPUs its samples ran on, sorted.
    pub cpus: Vec<u32>,
    /// Mean weights: remote HITM, local HITM, remote peer, local peer, other loads.
    pub means: [Mean; 5],
    /// Physical pages.
    pub phys: Phys,
}

/// A cache line.
#[derive(Debug, Clone)]
pub struct Line {
    /// The first sample's data address.
    pub addr: u64,
    /// The line's counts.
    pub stats: C2cStats,
    /// Physical pages.
    pub phys: Phys,
    /// Its entries, in perf's insertion-tree order.
    pub entries: Vec<Entry>,
    pub(crate) keys: Vec<EntryKey>,
}

/// A line's key, ordered as perf's tree orders `dcacheline`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct LineKey {
    /// perf's cpumode: kernel (1) before user (2).
    pub(crate) mode: u8,
    /// Mapped lines before unmapped ones.
    pub(crate) unmapped: bool,
    pub(crate) object: u32,
    pub(crate) pid: u32,
    pub(crate) line: u64,
}

/// An entry's key: the offset, then the coalescing keys' values in
/// perf's tree order (pid descending, tid ascending, code address
/// ascending, object names ascending with no object last).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EntryKey {
    pub(crate) offset: u64,
    pub(crate) parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    Pid(u32),
    Tid(u32),
    Iaddr(u64),
    Dso(Option<String>),
}

impl Part {
    fn order(&self, o: &Part) -> Ordering {
        match (self, o) {
            (Part::Pid(a), Part::Pid(b)) => b.cmp(a),
            (Part::Tid(a), Part::Tid(b)) => a.cmp(b),
            (Part::Iaddr(a), Part::Iaddr(b)) => a.cmp(b),
            (Part::Dso(a), Part::Dso(b)) => match (a, b) {
                (Some(a), Some(b)) => a.cmp(b),
                (a, b) => b.is_some().cmp(&a.is_some()),
            },
            _ => Ordering::Equal,
        }
    }
}

impl EntryKey {
    pub(crate) fn order(&self, o: &EntryKey) -> Ordering {
        self.offset.cmp(&o.offset).then_with(|| {
            (self.parts.iter().zip(&o.parts))
                .map(|(a, b)| a.order(b))
                .find(|c| c.is_ne())
                .unwrap_or(Ordering::Equal)
        })
    }
}

/// One sample as a line takes it.
pub(crate) struct Sampled<'a> {
    pub(crate) stats: &'a C2cStats,
    pub(crate) key: EntryKey,
    pub(crate) addr: u64,
    pub(crate) data_rel: u64,
    pub(crate) weight: u64,
    pub(crate) cpu: Option<u32>,
    /// The entry's columns, made only for a new entry.
    pub(crate) make: &'a mut dyn FnMut() -> Entry,
}

impl Line {
    pub(crate) fn new(addr: u64) -> Line {
        Line {
            addr,
            stats: C2cStats::default(),
            phys: Phys::default(),
            entries: Vec::new(),
            keys: Vec::new(),
        }
    }

    /// Count one sample into the line and its entry.
    pub(crate) fn add(&mut self, s: Sampled<'_>) {
        self.stats.merge(s.stats);
        let i = match self.keys.binary_search_by(|k| k.order(&s.key)) {
            Ok(i) => i,
            Err(i) => {
                let mut e = (s.make)();
                (e.addr, e.data_rel) = (s.addr, s.data_rel);
                self.entries.insert(i, e);
                self.keys.insert(i, s.key);
                i
            }
        };
        let e = &mut self.entries[i];
        e.stats.merge(s.stats);
        if let Some(c) = s.cpu {
            if let Err(at) = e.cpus.binary_search(&c) {
                e.cpus.insert(at, c);
            }
        }
        let st = s.stats;
        let which = if st.rmt_hitm > 0 {
            0
        } else if st.lcl_hitm > 0 {
            1
        } else if st.rmt_peer > 0 {
            2
        } else if st.lcl_peer > 0 {
            3
        } else if st.load > 0 {
            4
        } else {
            return;
        };
        e.means[which].add(s.weight);
    }
}

impl Entry {
    /// An entry of these columns (counts empty).
    pub(crate) fn new(ip: u64, pid: u32, tid: u32) -> Entry {
        Entry {
            addr: 0,
            data_rel: 0,
            ip,
            pid,
            tid,
            dso: None,
            symbol: String::new(),
            comm: String::new(),
            srcline: String::new(),
            stats: C2cStats::default(),
            cpus: Vec::new(),
            means: [Mean::default(); 5],
            phys: Phys::default(),
        }
    }
}
