//! pprof's `profile.proto` (github.com/google/pprof, `proto/profile.proto`),
//! encoded by hand: a few messages of varints and length-delimited
//! fields.
//!
//! - `sample_type`: the [`Export::columns`] (per event `E_samples` in
//!   `count` and `E` in `nanoseconds` for cpu-clock/task-clock, else
//!   `count`; then group members); `default_sample_type` and
//!   `period_type`: the first event's period column;
//! - one `Sample` per distinct (stack, thread, label set), weights summed,
//!   labels `pid`, `tid` (numbers), `comm` and, when known, `cgroup`,
//!   and the export's own labels of the sample (a memory sample's);
//! - `Mapping`: each binary mapping sampled (start, limit, file offset,
//!   path, build id in hex), `has_functions` (pmx symbolized them) and
//!   `has_filenames`/`has_line_numbers` when DWARF lines were found;
//! - `Location`: address, mapping, one `Line` (function, source line);
//! - `Function`: name (demangled, shown by pprof as it is), source file;
//! - `time_nanos`/`duration_nanos` when the recording's wall-clock time
//!   is known, a comment naming pmx.

use super::Export;
use pmx_symbols::symbolize::hex;
use rustc_hash::FxHashMap as HashMap;

/// A protobuf message being written.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    /// A varint field (omitted at 0, proto3's default).
    fn uint(&mut self, field: u32, v: u64) {
        if v != 0 {
            self.varint(u64::from(field) << 3);
            self.varint(v);
        }
    }

    fn int(&mut self, field: u32, v: i64) {
        self.uint(field, v as u64);
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.varint((u64::from(field) << 3) | 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn msg(&mut self, field: u32, m: Msg) {
        self.bytes(field, &m.0);
    }

    /// A packed repeated varint field.
    fn packed(&mut self, field: u32, vs: impl Iterator<Item = u64>) {
        let mut m = Msg::default();
        for v in vs {
            m.varint(v);
        }
        if !m.0.is_empty() {
            self.msg(field, m);
        }
    }
}

/// The string table: index 0 is the empty string.
struct Strings {
    list: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings {
            list: Vec::new(),
            index: HashMap::default(),
        };
        s.id("");
        s
    }

    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as i64;
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

fn value_type(strings: &mut Strings, name: &str, unit: &str) -> Msg {
    let mut m = Msg::default();
    m.int(1, strings.id(name));
    m.int(2, strings.id(unit));
    m
}

/// The profile, encoded (not compressed).
pub fn encode(x: &Export) -> Vec<u8> {
    let mut p = Msg::default();
    let mut st = Strings::new();
    let columns = x.columns();
    for c in &columns {
        p.msg(1, value_type(&mut st, &c.name, &c.unit));
    }
    samples(x, columns.len(), &mut p, &mut st);
    let ids = mapping_ids(x);
    mappings(x, &ids, &mut p, &mut st);
    for (i, l) in x.locations.iter().enumerate() {
        let mut m = Msg::default();
        m.uint(1, i as u64 + 1);
        m.uint(2, l.mapping.map_or(0, |m| ids[m as usize]));
        m.uint(3, l.address);
        let mut line = Msg::default();
        line.uint(1, u64::from(l.function) + 1);
        line.int(2, l.line.map_or(0, i64::from));
        m.msg(4, line);
        p.msg(4, m);
    }
    for (i, f) in x.functions.iter().enumerate() {
        let mut m = Msg::default();
        m.uint(1, i as u64 + 1);
        // No system_name: pprof would take an equal one for a name still
        // to demangle, and drop template and parameter lists from it.
        m.int(2, st.id(&f.name));
        m.int(4, st.id(f.file.as_deref().unwrap_or("")));
        p.msg(5, m);
    }
    let comment = st.id(&format!("pmx report: {}", x.product));
    if let Some(offset) = x.epoch_offset {
        p.int(9, (offset + i128::from(x.span.0)) as i64);
    }
    p.int(10, (x.span.1 - x.span.0) as i64);
    if let Some(first) = x.events.iter().find(|e| e.kept) {
        let c = &columns[first.column + 1];
        p.msg(11, value_type(&mut st, &c.name, &c.unit));
        p.int(14, st.id(&c.name));
    }
    p.packed(13, std::iter::once(comment as u64));
    for s in &st.list {
        p.bytes(6, s.as_bytes());
    }
    p.0
}

/// One `Sample` per distinct (stack, thread), weights summed.
fn samples(x: &Export, ncols: usize, p: &mut Msg, st: &mut Strings) {
    // (stack, thread, label set) → row of weights.
    type Key = (Option<u32>, u32, u32);
    let mut agg: HashMap<Key, usize> = HashMap::default();
    let mut rows: Vec<(Key, Vec<i64>)> = Vec::new();
    for (n, s) in x.samples.iter().enumerate() {
        let labels = x.sample_labels.get(n).copied().unwrap_or(u32::MAX);
        let key = (s.stack, s.thread, labels);
        let i = *agg.entry(key).or_insert_with(|| {
            rows.push((key, vec![0; ncols]));
            rows.len() - 1
        });
        x.add_weights(s, &mut rows[i].1);
    }
    let (k_pid, k_tid, k_comm) = (st.id("pid"), st.id("tid"), st.id("comm"));
    // Only named when a thread has one: files without cgroups stay as they were.
    let k_cgroup = match x.threads.iter().any(|t| t.cgroup.is_some()) {
        true => st.id("cgroup"),
        false => 0,
    };
    for ((stack, thread, labels), values) in rows {
        let t = &x.threads[thread as usize];
        let mut m = Msg::default();
        m.packed(1, x.stack_locations(stack).map(|l| u64::from(l) + 1));
        m.packed(2, values.iter().map(|&v| v as u64));
        for (key, num) in [(k_pid, t.pid), (k_tid, t.tid)] {
            let mut l = Msg::default();
            l.int(1, key);
            l.int(3, i64::from(num));
            m.msg(3, l);
        }
        for (key, text) in [(k_comm, Some(&t.comm)), (k_cgroup, t.cgroup.as_ref())] {
            if let Some(text) = text {
                let mut l = Msg::default();
                l.int(1, key);
                l.int(2, st.id(text));
                m.msg(3, l);
            }
        }
        for (key, text) in x.label_sets.get(labels as usize).into_iter().flatten() {
            let mut l = Msg::default();
            l.int(1, st.id(key));
            l.int(2, st.id(text));
            m.msg(3, l);
        }
        p.msg(2, m);
    }
}

/// The id of each mapping: 1 for the user mapping with the most samples
/// (pprof takes the first mapping for the main binary), and so on.
fn mapping_ids(x: &Export) -> Vec<u64> {
    let mut leaf = vec![0u64; x.mappings.len()];
    for s in &x.samples {
        let l = x.stack_locations(s.stack).next();
        if let Some(m) = l.and_then(|l| x.locations[l as usize].mapping) {
            leaf[m as usize] += 1;
        }
    }
    let mut order: Vec<usize> = (0..x.mappings.len()).collect();
    order.sort_by_key(|&m| (x.mappings[m].kernel, std::cmp::Reverse(leaf[m]), m));
    let mut ids = vec![0; x.mappings.len()];
    for (rank, m) in order.into_iter().enumerate() {
        ids[m] = rank as u64 + 1;
    }
    ids
}

fn mappings(x: &Export, ids: &[u64], p: &mut Msg, st: &mut Strings) {
    let mut lines = vec![false; x.mappings.len()];
    for l in &x.locations {
        if let (Some(m), Some(_)) = (l.mapping, l.line) {
            lines[m as usize] = true;
        }
    }
    let mut order: Vec<usize> = (0..x.mappings.len()).collect();
    order.sort_by_key(|&m| ids[m]);
    for i in order {
        let mp = &x.mappings[i];
        let mut m = Msg::default();
        m.uint(1, ids[i]);
        m.uint(2, mp.start);
        m.uint(3, mp.limit);
        m.uint(4, mp.offset);
        m.int(5, st.id(&mp.path));
        m.int(
            6,
            st.id(&mp.build_id.as_deref().map(hex).unwrap_or_default()),
        );
        m.uint(7, 1);
        m.uint(8, u64::from(lines[i]));
        m.uint(9, u64::from(lines[i]));
        p.msg(3, m);
    }
}
