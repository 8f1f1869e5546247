//! `report --branch-history --json`, serialized as it is made: each
//! object's keys in sorted order (as a `serde_json::Value` object prints
//! them, which is what this output was first written through), a row's
//! chains merged one row at a time and written a chain at a time. A
//! file of 43,000 chains no longer builds its whole document (1.3 GB
//! of values for 100 MB of text) before the first byte.

use super::{HistoryEvent, HistoryReport, Note, Row};
use pmx_profile::report::pct;
use rustc_hash::FxHashMap as HashMap;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// The document: `{"events": [...], "file": ...}`.
pub(super) struct Doc<'a>(pub(super) &'a HistoryReport);

impl Serialize for Doc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("events", &Events(self.0))?;
        m.serialize_entry("file", &self.0.report.file)?;
        m.end()
    }
}

struct Events<'a>(&'a HistoryReport);

impl Serialize for Events<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut q = s.serialize_seq(Some(self.0.events.len()))?;
        for e in &self.0.events {
            q.serialize_element(&Event(self.0, e))?;
        }
        q.end()
    }
}

/// An event: its totals and its rows.
struct Event<'a>(&'a HistoryReport, &'a HistoryEvent);

impl Serialize for Event<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (r, e) = (self.0, self.1);
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("children", &r.children)?;
        m.serialize_entry("event", &e.name)?;
        m.serialize_entry("period", &e.period)?;
        m.serialize_entry("rows", &Rows(r, e))?;
        m.serialize_entry("samples", &e.samples)?;
        m.end()
    }
}

struct Rows<'a>(&'a HistoryReport, &'a HistoryEvent);

impl Serialize for Rows<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut q = s.serialize_seq(Some(self.1.rows.len()))?;
        for row in &self.1.rows {
            q.serialize_element(&RowJson(self.0, self.1, row))?;
        }
        q.end()
    }
}

/// A row: its keys, shares and merged chains.
struct RowJson<'a>(&'a HistoryReport, &'a HistoryEvent, &'a Row);

impl Serialize for RowJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (e, r) = (self.1, self.2);
        let chains = Chains {
            texts: &self.0.texts,
            merged: merged(e, r),
        };
        let mut m = s.serialize_map(Some(9))?;
        m.serialize_entry("chains", &chains)?;
        m.serialize_entry("children", &r.children)?;
        m.serialize_entry("children_percent", &pct(r.children, e.period))?;
        m.serialize_entry("dso", &r.dso)?;
        m.serialize_entry("level", &(r.level as char).to_string())?;
        m.serialize_entry("self", &r.period)?;
        m.serialize_entry("self_percent", &pct(r.period, e.period))?;
        m.serialize_entry("srcline", &r.srcline)?;
        m.serialize_entry("symbol", &r.symbol)?;
        m.end()
    }
}

/// A row's chains merged where their frames are the same, in first-seen
/// order: (frames, period summed, each frame's note over the samples).
fn merged<'e>(e: &'e HistoryEvent, r: &Row) -> Vec<(&'e [u32], u64, Vec<Note>)> {
    let mut at: HashMap<&[u32], usize> = HashMap::default();
    let mut out: Vec<(&[u32], u64, Vec<Note>)> = Vec::new();
    for &(i, k) in &r.chains {
        let (p, c, n) = &e.chains[i as usize];
        let (c, n) = (&c[k as usize..], &n[k as usize..]);
        match at.get(c) {
            Some(&j) => {
                let m = &mut out[j];
                m.1 = m.1.saturating_add(*p);
                m.2.iter_mut().zip(n).for_each(|(a, b)| a.add(b));
            }
            None => {
                at.insert(c, out.len());
                out.push((c, *p, n.iter().map(Note::first).collect()));
            }
        }
    }
    out
}

struct Chains<'a> {
    texts: &'a [String],
    merged: Vec<(&'a [u32], u64, Vec<Note>)>,
}

impl Serialize for Chains<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut q = s.serialize_seq(Some(self.merged.len()))?;
        for (frames, period, notes) in &self.merged {
            q.serialize_element(&Chain(self.texts, frames, *period, notes))?;
        }
        q.end()
    }
}

/// A chain: `{"frames": [{"frame": …, "note": …}, …], "period": …}`.
struct Chain<'a>(&'a [String], &'a [u32], u64, &'a [Note]);

impl Serialize for Chain<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("frames", &Frames(self.0, self.1, self.3))?;
        m.serialize_entry("period", &self.2)?;
        m.end()
    }
}

struct Frames<'a>(&'a [String], &'a [u32], &'a [Note]);

impl Serialize for Frames<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut q = s.serialize_seq(Some(self.1.len()))?;
        for (&f, n) in self.1.iter().zip(self.2) {
            let note = n.text();
            let note = note.trim().trim_start_matches('(').trim_end_matches(')');
            q.serialize_element(&FrameJson(&self.0[f as usize], note))?;
        }
        q.end()
    }
}

/// A frame: `{"frame": text, "note": what the branches said there}`.
struct FrameJson<'a>(&'a str, &'a str);

impl Serialize for FrameJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("frame", self.0)?;
        m.serialize_entry("note", self.1)?;
        m.end()
    }
}
