//! The [`SampleSink`] that turns a build's samples into an [`Export`]:
//! threads, mappings, locations (one per binary mapping, address and
//! frame), functions, stacks as a prefix tree, samples with their
//! weights (a sample-read group's members' deltas, as the replay's
//! [`SampleRef::reads`] give them), and the side-band markers.

use super::{Export, Function, Location, Mapping, Marker, Sample, StackNode, Thread};
use crate::profile::sink::{SampleRef, SampleSink, Side};
use pmx_symbols::symbolize::{FrameId, Symbolizer, KERNEL_DSO};
use rustc_hash::FxHashMap as HashMap;

const NONE: u32 = u32::MAX;

/// An export's threads and user mappings, each added once (shared by the
/// exports of other reports, e.g. pmx-precise's memory samples).
#[derive(Default)]
pub struct Tables {
    threads: HashMap<(u32, u32), u32>,
    mappings: HashMap<(u64, u64, u64, u32), u32>,
}

impl Tables {
    /// The index in `out.threads` of thread `tid` of `pid`, added on
    /// first sight, a sample counted; the latest name wins (a fork's
    /// child is named after its exec).
    pub fn thread(&mut self, out: &mut Export, pid: u32, tid: u32, comm: &str) -> u32 {
        let next = out.threads.len() as u32;
        let i = *self.threads.entry((pid, tid)).or_insert(next);
        if i == next {
            out.threads.push(Thread {
                pid,
                tid,
                comm: comm.to_string(),
                samples: 0,
                cgroup: None,
            });
        }
        let t = &mut out.threads[i as usize];
        t.samples += 1;
        if t.comm != comm {
            t.comm = comm.to_string();
        }
        i
    }

    /// The index in `out.mappings` of the mapping holding user address
    /// `addr` of `pid` (`None`: no mapping), added on first sight.
    pub fn user_mapping(
        &mut self,
        out: &mut Export,
        sym: &Symbolizer,
        pid: u32,
        addr: u64,
    ) -> Option<u32> {
        let (start, end, pgoff, dso) = sym.mapping(pid, addr)?;
        let next = out.mappings.len() as u32;
        let id = *self
            .mappings
            .entry((start, end, pgoff, dso))
            .or_insert(next);
        if id == next {
            let d = sym.dso(dso);
            out.mappings.push(Mapping {
                start,
                limit: end,
                offset: pgoff,
                path: d.path.clone(),
                build_id: d.expected_build_id.clone(),
                kernel: false,
            });
        }
        Some(id)
    }
}

/// Collects an [`Export`] from the samples of a build.
#[derive(Default)]
pub struct Collector {
    /// Find each user location's source line (DWARF), for pprof.
    lines: bool,
    out: Export,
    tables: Tables,
    /// (mapping or NONE, address, frame) → location.
    locations: HashMap<(u32, u64, FrameId), u32>,
    /// The frame of each location (provisional for kernel frames).
    location_frames: Vec<FrameId>,
    stacks: HashMap<(u32, u32), u32>,
    /// The kernel mapping, its address range grown as addresses come.
    kernel: Option<(u32, u64, u64)>,
}

impl Collector {
    /// A collector; `lines`: look up the source line of user locations.
    pub fn new(lines: bool) -> Collector {
        Collector {
            lines,
            ..Collector::default()
        }
    }

    /// What was collected (events and columns still to be named, see
    /// [`Export::describe`]).
    pub fn into_export(self) -> Export {
        self.out
    }

    /// The kernel mapping's id, its range grown to cover `addr`.
    fn kernel_mapping(&mut self, sym: &Symbolizer, addr: u64) -> u32 {
        let (id, lo, hi) = match self.kernel {
            Some(k) => k,
            None => {
                let id = self.out.mappings.len() as u32;
                let d = sym.dso(KERNEL_DSO);
                self.out.mappings.push(Mapping {
                    start: addr,
                    limit: addr.saturating_add(1),
                    offset: 0,
                    path: d.path.clone(),
                    build_id: d.expected_build_id.clone(),
                    kernel: true,
                });
                (id, addr, addr)
            }
        };
        let (lo, hi) = (lo.min(addr), hi.max(addr));
        self.kernel = Some((id, lo, hi));
        let m = &mut self.out.mappings[id as usize];
        m.start = lo;
        m.limit = hi.saturating_add(1);
        id
    }

    /// A sample-read group's members (the leader aside: its count is
    /// the sample's period) into [`Export::extra`], as (member index in
    /// the event's [`Export::members`], delta); zero deltas are left out.
    fn member_values(&mut self, s: &SampleRef<'_>) {
        if s.reads.len() <= 2 {
            // No read, or a single value (`cycles:S` alone): no members.
            return;
        }
        if self.out.members.len() <= s.event {
            self.out.members.resize(s.event + 1, Vec::new());
        }
        for m in s.members().filter(|m| m.event != s.event) {
            let list = &mut self.out.members[s.event];
            let at = match list.iter().position(|&e| e as usize == m.event) {
                Some(at) => at,
                None => {
                    list.push(m.event as u32);
                    list.len() - 1
                }
            };
            if m.delta > 0 {
                self.out.extra.push((at as u32, m.delta));
            }
        }
    }

    /// The location of frame `f` looked up at `addr` in process `pid`.
    fn location(&mut self, sym: &mut Symbolizer, pid: u32, addr: u64, f: FrameId) -> u32 {
        let kernel = sym.frame(f).kernel;
        let mapping = if kernel {
            self.kernel_mapping(sym, addr)
        } else {
            (self.tables)
                .user_mapping(&mut self.out, sym, pid, addr)
                .unwrap_or(NONE)
        };
        let next = self.out.locations.len() as u32;
        let id = *self.locations.entry((mapping, addr, f)).or_insert(next);
        if id == next {
            let line = (self.lines && !kernel)
                .then(|| sym.source_line(pid, addr))
                .flatten();
            self.out.locations.push(Location {
                address: addr,
                mapping: (mapping != NONE).then_some(mapping),
                function: NONE,
                line: line.as_ref().map(|l| l.1),
                file: line.map(|l| l.0),
            });
            self.location_frames.push(f);
        }
        id
    }
}

impl SampleSink for Collector {
    fn sample(&mut self, s: &SampleRef<'_>, sym: &mut Symbolizer) {
        let thread = (self.tables).thread(&mut self.out, s.pid, s.tid, s.comm);
        let mut parent = NONE;
        for (&f, &addr) in s.frames.iter().zip(s.addrs).rev() {
            let location = self.location(sym, s.pid, addr, f);
            let next = self.out.stacks.len() as u32;
            let node = *self.stacks.entry((parent, location)).or_insert(next);
            if node == next {
                self.out.stacks.push(StackNode {
                    parent: (parent != NONE).then_some(parent),
                    location,
                });
            }
            parent = node;
        }
        let start = self.out.extra.len() as u32;
        self.member_values(s);
        self.out.samples.push(Sample {
            time: s.time,
            thread,
            cpu: s.cpu,
            event: s.event as u32,
            stack: (parent != NONE).then_some(parent),
            period: s.period,
            extra: (start, self.out.extra.len() as u32 - start),
        });
    }

    fn side(&mut self, s: Side) {
        self.out.markers.push(Marker {
            time: s.time,
            event: s.event.map(|e| e as u32),
            kind: s.kind,
        });
    }

    fn finish(&mut self, sym: &mut Symbolizer, remap: &[FrameId]) {
        let mut functions: HashMap<FrameId, u32> = HashMap::default();
        for (loc, &f) in self.out.locations.iter_mut().zip(&self.location_frames) {
            let f = remap.get(f as usize).copied().unwrap_or(f);
            let next = self.out.functions.len() as u32;
            let id = *functions.entry(f).or_insert(next);
            if id == next {
                let frame = sym.frame(f);
                self.out.functions.push(Function {
                    name: frame.label(),
                    dso: sym.dso(frame.dso).short.clone(),
                    kernel: frame.kernel,
                    file: None,
                });
            }
            let func = &mut self.out.functions[id as usize];
            if func.file.is_none() {
                func.file = loc.file.clone();
            }
            loc.function = id;
        }
    }
}
