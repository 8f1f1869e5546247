//! A memory report's exports (`report --mem-mode` with `--pprof`,
//! `--flamegraph`, `--folded`): pprof's profile of the memory samples,
//! its sample types `samples` and `weight` (each sample's cost as the
//! table counts it: its weight, 1 for weight 0; `cycles` when a sample
//! has a weight), each sample labelled with its `event`, memory level
//! (`mem_level`, perf script's words for `data_src`'s level), data object
//! (`data_object`, as pmx's own `symbol_daddr` names it) and data mapping
//! (`data_map`), its stack the sampled instruction's function; and the
//! flame graph of data objects: data mapping, data object, then the
//! function that accessed it, each as wide as its weight (the folded
//! stacks, `mapping;object;function weight`, with `--folded`).

use super::replay::{MemSample, Resolver};
use pmx_perfdata::mem::DataSrc;
use pmx_profile::export::collect::Tables;
use pmx_profile::export::{Column, Export, ExportEvent, Function, Location, Sample, StackNode};
use pmx_symbols::symbolize::{FrameId, UNKNOWN_DSO};
use rustc_hash::FxHashMap as HashMap;
use std::path::PathBuf;

/// Which exports of the memory samples to make.
#[derive(Debug, Clone, Default)]
pub struct MemExports {
    /// The folded stacks of data objects on the output, in place of the table.
    pub folded: bool,
    /// The flame graph of data objects (SVG) into this file.
    pub flamegraph: Option<PathBuf>,
    /// pprof's profile (gzip-compressed `profile.proto`) into this file.
    pub pprof: Option<PathBuf>,
}

impl MemExports {
    /// The exports of `--folded`, `--flamegraph FILE`, `--pprof FILE`.
    pub fn new(folded: bool, flamegraph: &Option<PathBuf>, pprof: &Option<PathBuf>) -> Self {
        MemExports {
            folded,
            flamegraph: flamegraph.clone(),
            pprof: pprof.clone(),
        }
    }

    /// Whether any export is asked for.
    pub fn any(&self) -> bool {
        self.folded || self.flamegraph.is_some() || self.pprof.is_some()
    }
}

/// What the exports are made of, collected sample by sample.
#[derive(Default)]
pub(crate) struct Collected {
    pub(crate) export: Export,
    tables: Tables,
    /// A frame's location (and stack node: one frame each).
    locations: HashMap<FrameId, u32>,
    functions: HashMap<FrameId, u32>,
    /// (event, data source, data object) → label set.
    labels: HashMap<(usize, u64, u32), u32>,
    /// (data mapping, data object, function) → weight.
    folded: HashMap<(Option<u32>, u32, FrameId), u64>,
    weighed: bool,
}

impl Collected {
    /// Count memory sample `s` (its data object named as pmx names it).
    pub(crate) fn add(&mut self, s: &MemSample, r: &mut Resolver, event: &str) {
        let object = match s.dobj {
            u32::MAX => r.object_id(s),
            id => id,
        };
        let cost = s.weight.max(1);
        self.weighed |= s.weight > 0;
        *self.folded.entry((s.object, object, s.frame)).or_default() += cost;
        let comm = &r.comms[s.comm as usize];
        let thread = (self.tables).thread(&mut self.export, s.pid, s.tid, comm);
        let location = self.location(s, r);
        let next = self.export.label_sets.len() as u32;
        let labels = *self
            .labels
            .entry((s.event, s.data_src, object))
            .or_insert(next);
        if labels == next {
            let level = pmx_profile::data_src::lvl_text(&DataSrc::from_raw(s.data_src));
            let set = [
                ("event", event.to_string()),
                ("mem_level", level),
                ("data_object", r.data_names[object as usize].clone()),
                ("data_map", data_map(s, r)),
            ];
            (self.export.label_sets).push(set.map(|(k, v)| (k.to_string(), v)).to_vec());
        }
        self.export.sample_labels.push(labels);
        self.export.samples.push(Sample {
            time: 0,
            thread,
            cpu: s.cpu,
            event: s.event as u32,
            stack: Some(location),
            period: cost,
            extra: (0, 0),
        });
    }

    /// The location (and one-frame stack) of `s`'s instruction: its
    /// function, in its mapping; the first address seen of the function.
    fn location(&mut self, s: &MemSample, r: &Resolver) -> u32 {
        if let Some(&l) = self.locations.get(&s.frame) {
            return l;
        }
        let f = r.sym.frame(s.frame);
        let next = self.export.functions.len() as u32;
        let function = *self.functions.entry(s.frame).or_insert(next);
        if function == next {
            let dso = match f.dso {
                UNKNOWN_DSO => "[unknown]".to_string(),
                d => r.sym.dso(d).short.clone(),
            };
            self.export.functions.push(Function {
                name: f.label(),
                dso,
                kernel: f.kernel,
                file: None,
            });
        }
        let mapping = match s.kernel {
            true => None,
            false => (self.tables).user_mapping(&mut self.export, &r.sym, s.pid, s.ip),
        };
        let l = self.export.locations.len() as u32;
        self.export.locations.push(Location {
            address: s.ip,
            mapping,
            function,
            line: None,
            file: None,
        });
        self.export.stacks.push(StackNode {
            parent: None,
            location: l,
        });
        self.locations.insert(s.frame, l);
        l
    }

    /// The export, its events and columns named.
    pub(crate) fn finish(&mut self, events: &[String], product: &str) {
        let x = &mut self.export;
        x.events = (events.iter())
            .map(|name| ExportEvent {
                name: name.clone(),
                kept: true,
                clock: false,
                off_cpu: false,
                members: Vec::new(),
                column: 0,
            })
            .collect();
        let unit = if self.weighed { "cycles" } else { "count" };
        x.named_columns = Some(vec![
            Column {
                name: "samples".into(),
                unit: "count".into(),
            },
            Column {
                name: "weight".into(),
                unit: unit.into(),
            },
        ]);
        x.product = product.to_string();
    }

    /// The folded stacks of data objects, sorted.
    pub(crate) fn stacks(&self, r: &Resolver) -> Vec<(Vec<String>, u64, u64)> {
        let mut out: Vec<(Vec<String>, u64, u64)> = (self.folded.iter())
            .map(|(&(map, object, frame), &w)| {
                let map = map.map_or("[unknown]", |m| r.objects[m as usize].as_str());
                let frames = vec![
                    map.to_string(),
                    r.data_names[object as usize].clone(),
                    r.sym.frame(frame).label(),
                ];
                (frames, w, w)
            })
            .collect();
        out.sort();
        out
    }
}

/// The name of a sample's data mapping (perf's Data Object).
fn data_map(s: &MemSample, r: &Resolver) -> String {
    s.object
        .map_or_else(|| "[unknown]".into(), |o| r.objects[o as usize].clone())
}
