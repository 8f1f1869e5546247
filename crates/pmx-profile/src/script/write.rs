//! The lines of `pmx script`: perf script's text layout (perf 6.1's
//! columns: `%16s` command, `%5d` ids, `[%03d]` CPU, `%12s:` time,
//! `%10u` period, the event name padded to the longest, `%16x` address)
//! or one JSON object per sample. Numbers are formatted by hand, every
//! frame's name is formatted once and every text site (address, symbol,
//! offset, binary) once per set of fields, and lines are gathered in one
//! 256 KiB buffer, so a million samples take well under a second.

use super::fields::{Field, Fields};
use super::mem::MemFields;
use pmx_perfdata::read::{Event, Sample};
use pmx_symbols::symbolize::{FrameId, FrameName, Symbolizer};
use rustc_hash::FxHashMap as HashMap;
use std::io::Write;

/// How much output is gathered before it is written.
const BUF: usize = 1 << 18;
use std::ops::Range;

/// A sample waiting for its round.
pub(crate) struct SampleRec {
    pub(crate) event: usize,
    pub(crate) misc: u16,
    pub(crate) ip: u64,
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) cpu: u32,
    pub(crate) time: u64,
    pub(crate) period: u64,
    /// Its data address, data source, weights, page sizes.
    pub(crate) mem: MemFields,
    /// Its call chain in the replay's arena, then its `branches`
    /// (from, to, flags) triples when they are printed.
    pub(crate) chain: Range<usize>,
    pub(crate) branches: u32,
    /// Whether each branch's counter word follows the triples (`brcntr`).
    pub(crate) counters: bool,
    /// A tracepoint's raw data, when its fields are printed.
    pub(crate) raw: Option<Box<[u8]>>,
}

impl SampleRec {
    pub(crate) fn new(s: &Sample<'_>, chain: Range<usize>, branches: u32) -> SampleRec {
        SampleRec {
            event: s.event,
            misc: s.misc,
            ip: s.ip,
            pid: s.pid,
            tid: s.tid,
            cpu: s.cpu,
            time: s.time,
            period: s.period,
            mem: MemFields::of(s),
            chain,
            branches,
            counters: false,
            raw: None,
        }
    }

    /// What is left of a sample moved into a parallel batch (a record
    /// of no event, never written).
    pub(crate) fn taken() -> SampleRec {
        SampleRec {
            event: usize::MAX,
            misc: 0,
            ip: 0,
            pid: 0,
            tid: 0,
            cpu: 0,
            time: 0,
            period: 0,
            mem: MemFields::default(),
            chain: 0..0,
            branches: 0,
            counters: false,
            raw: None,
        }
    }

    /// The call chain alone (without the branch triples after it).
    pub(crate) fn chain_only(&self) -> Range<usize> {
        let per = if self.counters { 4 } else { 3 };
        self.chain.start..self.chain.end - per * self.branches as usize
    }

    /// The branch triples (without the counter words after them).
    pub(crate) fn branch_range(&self) -> Range<usize> {
        let start = self.chain_only().end;
        start..start + 3 * self.branches as usize
    }
}

/// An address resolved: shown as `shown` (perf's map-relative address in
/// call chains), the process address `addr`, its frame, and the address
/// in the frame's symbol space (for `+0xOFF`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Site {
    pub(crate) shown: u64,
    pub(crate) addr: u64,
    pub(crate) frame: FrameId,
    pub(crate) space: u64,
}

/// A sample's call chain, branch ends (brstacksym), branch triples and
/// its further branch fields' text (brstackoff, brcntr, brstackinsn).
pub(crate) type BranchParts<'a> = (&'a [Site], &'a [(FrameId, u64)], &'a [u64], &'a [u8]);

/// What a text line shows at its `ip` field: the leaf's site, the call
/// chain's sites, or the chain's lines already formatted.
enum Ip<'a> {
    Leaf(Site),
    Chain(&'a [Site]),
    Lines(&'a [u8]),
}

/// The output: the lines' formatting ([`Lines`], reached through
/// `Deref`), gathered in a buffer and given to `out` 256 KiB at a time.
pub(crate) struct Writer<'w> {
    out: &'w mut dyn Write,
    /// Text lines are written here, and `out` given 256 KiB at a time.
    buf: Vec<u8>,
    /// Samples written.
    pub(crate) samples: u64,
    lines: Lines,
}

/// How lines are formatted: per event its name, fields and whether
/// chains are printed, and the texts already formatted. A job of a
/// parallel `script` has one of its own ([`Lines::worker`]).
pub(crate) struct Lines {
    events: Vec<(String, Fields, bool)>,
    name_width: usize,
    json: bool,
    line: Vec<u8>,
    /// Per frame: its name as printed (text) or as a JSON value.
    names: Vec<Option<Box<[u8]>>>,
    /// Per binary: its name as printed (text) or as a JSON string.
    dsos: Vec<Option<Box<[u8]>>>,
    /// Text sites already formatted: (start, length) in `site_bytes`.
    site_texts: HashMap<(Fields, FrameId, u64, u64), (u32, u32)>,
    site_bytes: Vec<u8>,
    /// The longest `data_src` text so far (perf pads to its running maximum).
    data_src_width: usize,
    /// Per event: its tracepoint id when its fields are printed.
    trace_ids: Vec<Option<u64>>,
    /// The print formats of the recording's tracepoints.
    pub(crate) traces: Option<super::trace::TracePrinter>,
}

impl std::ops::Deref for Writer<'_> {
    type Target = Lines;
    fn deref(&self) -> &Lines {
        &self.lines
    }
}

impl std::ops::DerefMut for Writer<'_> {
    fn deref_mut(&mut self) -> &mut Lines {
        &mut self.lines
    }
}

impl<'w> Writer<'w> {
    pub(crate) fn new(
        out: &'w mut dyn Write,
        events: &[Event],
        fields: Vec<Fields>,
        chains: Vec<bool>,
        json: bool,
    ) -> Writer<'w> {
        let mut lines = Lines::empty(json);
        lines.set_events(events, fields, chains);
        Writer {
            out,
            buf: Vec::with_capacity(BUF + (1 << 12)),
            samples: 0,
            lines,
        }
    }

    pub(crate) fn finish(&mut self) -> std::io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()
    }

    /// Write `bytes` (lines a job formatted) after the lines so far.
    pub(crate) fn write_lines(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.buf.extend_from_slice(bytes);
        self.give_out()
    }

    /// Write `bytes`, `n` samples' lines a job formatted, after the
    /// lines so far: given to `out` as they are, not copied.
    pub(crate) fn write_samples(&mut self, bytes: &[u8], n: u64) -> std::io::Result<()> {
        self.samples += n;
        if !self.buf.is_empty() {
            let r = self.out.write_all(&self.buf);
            self.buf.clear();
            r?;
        }
        self.out.write_all(bytes)
    }

    /// Give the buffer to `out` when it is full.
    fn give_out(&mut self) -> std::io::Result<()> {
        if self.buf.len() < BUF {
            return Ok(());
        }
        let r = self.out.write_all(&self.buf);
        self.buf.clear();
        r
    }

    /// Write one sample: its leaf and (when printed) its call chain.
    pub(crate) fn sample(
        &mut self,
        s: &SampleRec,
        comm: &str,
        leaf: Site,
        parts: BranchParts<'_>,
        sym: &Symbolizer,
    ) -> std::io::Result<()> {
        let mut buf = std::mem::take(&mut self.buf);
        let written = self.lines.sample(&mut buf, s, comm, leaf, parts, sym);
        self.buf = buf;
        self.samples += u64::from(written);
        self.give_out()
    }

    /// Write one text sample whose call chain's lines are `lines` (made
    /// by [`Lines::chain_lines`]; [`Lines::chain_lines_kept`] events).
    pub(crate) fn sample_with_lines(
        &mut self,
        s: &SampleRec,
        comm: &str,
        lines: &[u8],
        sym: &Symbolizer,
    ) -> std::io::Result<()> {
        let Some(&(_, f, _)) = self.lines.events.get(s.event) else {
            return Ok(());
        };
        let mut buf = std::mem::take(&mut self.buf);
        self.lines
            .text_line(&mut buf, s, comm, f, Ip::Lines(lines), sym);
        self.buf = buf;
        self.samples += 1;
        self.give_out()
    }

    /// A side-band record (`--show-switch-events` …): the start of a line
    /// as for `s`'s event, then `text` (which ends the line).
    pub(crate) fn side_band(
        &mut self,
        s: &SampleRec,
        comm: &str,
        text: &str,
    ) -> std::io::Result<()> {
        let Some((_, f, with_chain)) = self.lines.events.get(s.event) else {
            return Ok(());
        };
        if self.lines.json {
            return Ok(());
        }
        let (f, with_chain) = (*f, *with_chain);
        let mut buf = std::mem::take(&mut self.buf);
        self.lines.start(&mut buf, s, comm, f, !with_chain);
        buf.extend_from_slice(text.as_bytes());
        self.buf = buf;
        self.give_out()
    }
}

impl Lines {
    fn empty(json: bool) -> Lines {
        Lines {
            events: Vec::new(),
            name_width: 0,
            json,
            line: Vec::with_capacity(512),
            names: Vec::new(),
            dsos: Vec::new(),
            site_texts: HashMap::default(),
            site_bytes: Vec::new(),
            data_src_width: 0,
            trace_ids: Vec::new(),
            traces: None,
        }
    }

    /// Lines for a job of a parallel `script`: the same events and
    /// fields, texts of its own (no tracepoint formats: samples whose
    /// lines need them, or a running width, are written in order by
    /// the writer itself: [`Lines::parallel`]).
    pub(crate) fn worker(&self) -> Lines {
        let mut w = Lines::empty(self.json);
        (w.events, w.name_width) = (self.events.clone(), self.name_width);
        w.trace_ids = vec![None; self.trace_ids.len()];
        w
    }

    /// Whether `event`'s lines can be formatted by any job: they depend
    /// on the sample alone (no tracepoint fields, branch fields or
    /// `data_src`'s running width).
    pub(crate) fn parallel(&self, event: usize) -> bool {
        let f = self.fields(event);
        !self.wants_raw(event) && !self.branches(event) && !f.has(Field::DataSrc)
    }

    /// The events, their fields and whether their chains are printed (a
    /// pipe's events come as the stream goes).
    pub(crate) fn set_events(&mut self, events: &[Event], fields: Vec<Fields>, chains: Vec<bool>) {
        self.name_width = events.iter().map(|e| e.name.len()).max().unwrap_or(0);
        self.trace_ids = (events.iter().zip(&fields))
            .map(|(e, f)| (e.attr.type_ == 2 && f.has(Field::Trace)).then_some(e.attr.config))
            .collect();
        self.events = (events.iter().zip(fields).zip(chains))
            .map(|((e, f), c)| (e.name.clone(), f, c && f.has(Field::Ip)))
            .collect();
    }

    /// How many events the writer knows.
    pub(crate) fn event_count(&self) -> usize {
        self.events.len()
    }

    /// Whether the raw data of `event`'s samples is printed.
    pub(crate) fn wants_raw(&self, event: usize) -> bool {
        self.trace_ids.get(event).is_some_and(Option::is_some)
    }

    /// Whether the call chains of `event` are printed.
    pub(crate) fn chain(&self, event: usize) -> bool {
        self.events.get(event).is_some_and(|e| e.2)
    }

    /// Whether the branch stacks of `event` are printed.
    pub(crate) fn branches(&self, event: usize) -> bool {
        let f = self.events.get(event).map(|e| e.1).unwrap_or_default();
        [
            Field::Brstack,
            Field::Brstacksym,
            Field::Brstackoff,
            Field::Brstackinsn,
            Field::Brstackinsnlen,
            Field::Brcntr,
        ]
        .iter()
        .any(|&b| f.has(b))
    }

    /// Whether the branches' counter words of `event` are printed.
    pub(crate) fn counters(&self, event: usize) -> bool {
        (self.events.get(event)).is_some_and(|e| e.1.has(Field::Brcntr))
    }

    /// The fields of `event` (none for an unknown one).
    pub(crate) fn fields(&self, event: usize) -> Fields {
        self.events.get(event).map_or(Fields::default(), |e| e.1)
    }

    /// Whether the lines are JSON.
    pub(crate) fn json(&self) -> bool {
        self.json
    }

    /// Whether the branches' ends are printed by function.
    pub(crate) fn branch_sites(&self, event: usize) -> bool {
        (self.events.get(event)).is_some_and(|e| e.1.has(Field::Brstacksym))
    }

    /// Format one sample into `buf`: its leaf and (when printed) its
    /// call chain; false for a sample of an event not known.
    pub(crate) fn sample(
        &mut self,
        buf: &mut Vec<u8>,
        s: &SampleRec,
        comm: &str,
        leaf: Site,
        (chain, br_ends, br, extra): BranchParts<'_>,
        sym: &Symbolizer,
    ) -> bool {
        let Some((name, f, with_chain)) = self.events.get(s.event) else {
            return false;
        };
        let (f, with_chain) = (*f, *with_chain);
        if self.json {
            // The JSON writer looks back at the start of its line.
            let mut line = std::mem::take(&mut self.line);
            line.clear();
            self.json_line(
                &mut line,
                s,
                comm,
                name.clone(),
                f,
                leaf,
                with_chain.then_some(chain),
                sym,
            );
            if f.has(Field::Brstack) && line.ends_with(b"}\n") {
                line.truncate(line.len() - 2);
                super::branches::json(&mut line, br);
                line.extend_from_slice(b"}\n");
            }
            buf.extend_from_slice(&line);
            self.line = line;
        } else {
            let ip = if with_chain {
                Ip::Chain(chain)
            } else {
                Ip::Leaf(leaf)
            };
            self.text_line(buf, s, comm, f, ip, sym);
            if !br.is_empty() && buf.last() == Some(&b'\n') {
                buf.pop();
                super::branches::text(buf, f, br, br_ends, sym);
                buf.extend_from_slice(extra);
                buf.push(b'\n');
            }
        }
        true
    }

    #[allow(clippy::too_many_arguments)]
    fn text_line(
        &mut self,
        b: &mut Vec<u8>,
        s: &SampleRec,
        comm: &str,
        f: Fields,
        ip: Ip<'_>,
        sym: &Symbolizer,
    ) {
        let mut width = self.data_src_width;
        self.head(b, s, comm, f, matches!(ip, Ip::Leaf(_)), &mut width);
        self.data_src_width = width;
        if f.has(Field::Ip) {
            match ip {
                Ip::Chain(chain) => {
                    b.push(b'\n');
                    self.chain_lines(b, f, chain, sym);
                }
                Ip::Lines(lines) => {
                    b.push(b'\n');
                    b.extend_from_slice(lines);
                }
                Ip::Leaf(leaf) => {
                    b.push(b' ');
                    self.site_text(b, f, leaf, sym);
                }
            }
        }
        super::mem::text_after_ip(b, &s.mem, f);
        b.push(b'\n');
    }

    /// A text line up to its `ip` field: [`Lines::start`], period,
    /// event, tracepoint fields, the memory fields before the address.
    fn head(
        &self,
        b: &mut Vec<u8>,
        s: &SampleRec,
        comm: &str,
        f: Fields,
        pad_comm: bool,
        width: &mut usize,
    ) {
        self.start(b, s, comm, f, pad_comm);
        if f.has(Field::Period) {
            dec_right(b, s.period, 10);
            b.push(b' ');
        }
        if f.has(Field::Event) {
            let name = &self.events[s.event].0;
            pad(b, self.name_width, name.len());
            b.extend_from_slice(name.as_bytes());
            b.extend_from_slice(b": ");
        }
        if let (Some(Some(id)), Some(raw), Some(t)) =
            (self.trace_ids.get(s.event), &s.raw, &self.traces)
        {
            t.print(*id, raw, &mut |_| None, b);
        }
        super::mem::text_before_ip(b, &s.mem, f, width);
    }

    /// A [`Lines::chain_lines_kept`] event's text line whose chain's
    /// lines are `lines`, as [`Writer::sample_with_lines`] writes it
    /// (for a job: nothing of `self` changes); false for a sample of
    /// an event not known.
    pub(crate) fn line_with_text(
        &self,
        b: &mut Vec<u8>,
        s: &SampleRec,
        comm: &str,
        lines: &[u8],
    ) -> bool {
        let Some(&(_, f, _)) = self.events.get(s.event) else {
            return false;
        };
        // No `data_src` on these lines: the running width is not used.
        let mut width = self.data_src_width;
        self.head(b, s, comm, f, false, &mut width);
        if f.has(Field::Ip) {
            b.push(b'\n');
            b.extend_from_slice(lines);
        }
        super::mem::text_after_ip(b, &s.mem, f);
        b.push(b'\n');
        true
    }

    /// A call chain's lines under a sample's line: `\t`, the site, a
    /// newline, per frame.
    pub(crate) fn chain_lines(
        &mut self,
        b: &mut Vec<u8>,
        f: Fields,
        chain: &[Site],
        sym: &Symbolizer,
    ) {
        for site in chain {
            b.push(b'\t');
            self.site_text(b, f, *site, sym);
            b.push(b'\n');
        }
    }

    /// Whether `event`'s samples are text lines with their chain under
    /// them and nothing else that needs the sample's sites: their chain's
    /// lines can be kept and copied (`super::stacks`).
    pub(crate) fn chain_lines_kept(&self, event: usize) -> bool {
        !self.json && self.chain(event) && self.parallel(event)
    }

    /// perf's start of a line: command, ids, CPU, time (as the fields ask).
    fn start(&self, b: &mut Vec<u8>, s: &SampleRec, comm: &str, f: Fields, pad_comm: bool) {
        if f.has(Field::Comm) {
            if pad_comm {
                pad(b, 16, comm.len());
            }
            b.extend_from_slice(comm.as_bytes());
            b.push(b' ');
        }
        match (f.has(Field::Pid), f.has(Field::Tid)) {
            (true, true) => {
                id_right(b, s.pid, 5);
                b.push(b'/');
                let at = b.len();
                id_right(b, s.tid, 0);
                let n = b.len() - at;
                pad(b, 5, n);
                b.push(b' ');
            }
            (true, false) | (false, true) => {
                id_right(b, if f.has(Field::Pid) { s.pid } else { s.tid }, 5);
                b.push(b' ');
            }
            _ => {}
        }
        if f.has(Field::Cpu) {
            b.push(b'[');
            dec_right_zero(b, s.cpu as u64, 3);
            b.extend_from_slice(b"] ");
        }
        if f.has(Field::Time) {
            let (secs, usecs) = (s.time / 1_000_000_000, s.time % 1_000_000_000 / 1000);
            let mut buf = itoa::Buffer::new();
            let secs = buf.format(secs).as_bytes();
            pad(b, 12, secs.len() + 7);
            b.extend_from_slice(secs);
            b.push(b'.');
            dec_right_zero(b, usecs, 6);
            b.extend_from_slice(b": ");
        }
    }

    /// `%16x sym+0xOFF (dso)`, as the fields ask: formatted once per
    /// (fields, site) and copied from [`Writer::site_texts`] after that
    /// (the same few sites recur in most profiles).
    fn site_text(&mut self, b: &mut Vec<u8>, f: Fields, site: Site, sym: &Symbolizer) {
        let key = (f, site.frame, site.shown, site.space);
        if let Some(&(at, len)) = self.site_texts.get(&key) {
            b.extend_from_slice(&self.site_bytes[at as usize..(at + len) as usize]);
            return;
        }
        let from = b.len();
        self.format_site(b, f, site, sym);
        if self.site_bytes.len() >= 1 << 22 {
            // Bounded: nothing grows with the file.
            self.site_bytes.clear();
            self.site_texts.clear();
        }
        let at = self.site_bytes.len() as u32;
        self.site_bytes.extend_from_slice(&b[from..]);
        self.site_texts.insert(key, (at, (b.len() - from) as u32));
    }

    fn format_site(&mut self, b: &mut Vec<u8>, f: Fields, site: Site, sym: &Symbolizer) {
        let (digits, n) = hex_digits(site.shown);
        pad(b, 16, n);
        b.extend_from_slice(&digits[16 - n..]);
        if f.has(Field::Sym) {
            b.push(b' ');
            b.extend_from_slice(self.name(site.frame, sym));
            if f.has(Field::Symoff) {
                if let Some(start) = sym.frame_start(site.frame).filter(|&a| site.space >= a) {
                    b.extend_from_slice(b"+0x");
                    hex(b, site.space - start);
                }
            }
        }
        if f.has(Field::Dso) {
            b.extend_from_slice(b" (");
            b.extend_from_slice(self.dso(site.frame, sym));
            b.push(b')');
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn json_line(
        &mut self,
        b: &mut Vec<u8>,
        s: &SampleRec,
        comm: &str,
        event: String,
        f: Fields,
        leaf: Site,
        chain: Option<&[Site]>,
        sym: &Symbolizer,
    ) {
        b.push(b'{');
        let key = |b: &mut Vec<u8>, k: &str| {
            if b.len() > 1 {
                b.push(b',');
            }
            b.push(b'"');
            b.extend_from_slice(k.as_bytes());
            b.extend_from_slice(b"\":");
        };
        let nums = [
            (Field::Pid, "pid", s.pid as u64),
            (Field::Tid, "tid", s.tid as u64),
            (Field::Cpu, "cpu", s.cpu as u64),
            (Field::Time, "time_ns", s.time),
            (Field::Period, "period", s.period),
        ];
        if f.has(Field::Comm) {
            key(b, "comm");
            json_str(b, comm);
        }
        for (field, k, v) in nums {
            if f.has(field) {
                key(b, k);
                dec(b, v);
            }
        }
        if f.has(Field::Event) {
            key(b, "event");
            json_str(b, &event);
        }
        let mark = b.len();
        super::mem::json(b, &s.mem, f);
        if mark == 1 && b.len() > 1 {
            b.remove(1); // the members' leading comma
        }
        if f.has(Field::Ip) {
            let mark = b.len();
            self.site_json(b, f, leaf, sym);
            if mark == 1 {
                b.remove(1);
            }
            if let Some(chain) = chain {
                key(b, "callchain");
                b.push(b'[');
                for (i, site) in chain.iter().enumerate() {
                    b.extend_from_slice(if i == 0 { b"{" } else { b",{" });
                    let mark = b.len();
                    self.site_json(b, f, *site, sym);
                    // The site's members start with a comma: drop it.
                    if b.get(mark) == Some(&b',') {
                        b.remove(mark);
                    }
                    b.push(b'}');
                }
                b.push(b']');
            }
        }
        b.extend_from_slice(b"}\n");
    }

    /// `,"ip":"0x…","sym":…,"symoff":N,"dso":…` as the fields ask.
    fn site_json(&mut self, b: &mut Vec<u8>, f: Fields, site: Site, sym: &Symbolizer) {
        b.extend_from_slice(b",\"ip\":\"0x");
        hex(b, site.addr);
        b.push(b'"');
        if f.has(Field::Sym) {
            b.extend_from_slice(b",\"sym\":");
            b.extend_from_slice(self.name(site.frame, sym));
            if f.has(Field::Symoff) {
                if let Some(start) = sym.frame_start(site.frame).filter(|&a| site.space >= a) {
                    b.extend_from_slice(b",\"symoff\":");
                    dec(b, site.space - start);
                }
            }
        }
        if f.has(Field::Dso) {
            b.extend_from_slice(b",\"dso\":");
            b.extend_from_slice(self.dso(site.frame, sym));
        }
    }

    /// The frame's symbol as printed: its name, `[unknown]` (JSON: null).
    fn name(&mut self, id: FrameId, sym: &Symbolizer) -> &[u8] {
        let i = id as usize;
        if self.names.len() <= i {
            self.names.resize(i + 1, None);
        }
        let json = self.json;
        self.names[i].get_or_insert_with(|| {
            let mut v = Vec::new();
            match (&sym.frame(id).name, json) {
                (FrameName::Symbol(s), false) => v.extend_from_slice(s.as_bytes()),
                (FrameName::Symbol(s), true) => json_str(&mut v, s),
                (FrameName::Address(_), false) => v.extend_from_slice(b"[unknown]"),
                (FrameName::Address(_), true) => v.extend_from_slice(b"null"),
            }
            v.into_boxed_slice()
        })
    }

    /// The frame's binary as printed: its path as recorded (perf's DSO name).
    fn dso(&mut self, id: FrameId, sym: &Symbolizer) -> &[u8] {
        let d = sym.frame(id).dso;
        let i = d as usize;
        if self.dsos.len() <= i {
            self.dsos.resize(i + 1, None);
        }
        let json = self.json;
        self.dsos[i].get_or_insert_with(|| {
            let path = &sym.dso(d).path;
            let mut v = Vec::new();
            if json {
                json_str(&mut v, path);
            } else {
                v.extend_from_slice(path.as_bytes());
            }
            v.into_boxed_slice()
        })
    }
}

fn pad(b: &mut Vec<u8>, width: usize, len: usize) {
    b.resize(b.len() + width.saturating_sub(len), b' ');
}

/// `v` in decimal; returns the number of digits.
fn dec(b: &mut Vec<u8>, v: u64) -> usize {
    let mut buf = itoa::Buffer::new();
    let s = buf.format(v);
    b.extend_from_slice(s.as_bytes());
    s.len()
}

/// `v` in decimal, right-aligned in `width` columns.
fn dec_right(b: &mut Vec<u8>, v: u64, width: usize) {
    let mut buf = itoa::Buffer::new();
    let s = buf.format(v).as_bytes();
    pad(b, width, s.len());
    b.extend_from_slice(s);
}

/// A pid or tid right-aligned in `width` columns, as perf's `%d` (-1 for
/// a task the kernel no longer knew).
fn id_right(b: &mut Vec<u8>, v: u32, width: usize) {
    if v == u32::MAX {
        pad(b, width, 2);
        b.extend_from_slice(b"-1");
    } else {
        dec_right(b, v as u64, width);
    }
}

/// `v` in decimal, zero-padded to `width` digits.
fn dec_right_zero(b: &mut Vec<u8>, v: u64, width: usize) {
    let mut buf = itoa::Buffer::new();
    let s = buf.format(v).as_bytes();
    b.resize(b.len() + width.saturating_sub(s.len()), b'0');
    b.extend_from_slice(s);
}

/// Two lowercase hex digits for every byte value.
const HEX_PAIRS: [[u8; 2]; 256] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut t = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = [HEX[i >> 4], HEX[i & 0xf]];
        i += 1;
    }
    t
};

/// `v` in lowercase hex, right-aligned in 16 bytes, and how many of
/// them are digits (no prefix, no leading zeros).
fn hex_digits(v: u64) -> ([u8; 16], usize) {
    let mut out = [0u8; 16];
    for (pair, byte) in out.chunks_exact_mut(2).zip(v.to_be_bytes()) {
        pair.copy_from_slice(&HEX_PAIRS[byte as usize]);
    }
    let n = v.checked_ilog2().map_or(1, |d| d as usize / 4 + 1);
    (out, n)
}

/// `v` in lowercase hex, no prefix.
fn hex(b: &mut Vec<u8>, v: u64) {
    let (digits, n) = hex_digits(v);
    b.extend_from_slice(&digits[16 - n..]);
}

/// A JSON string.
fn json_str(b: &mut Vec<u8>, s: &str) {
    b.push(b'"');
    for &c in s.as_bytes() {
        match c {
            b'"' => b.extend_from_slice(b"\\\""),
            b'\\' => b.extend_from_slice(b"\\\\"),
            b'\n' => b.extend_from_slice(b"\\n"),
            b'\t' => b.extend_from_slice(b"\\t"),
            0..=0x1f | 0x7f => {
                b.extend_from_slice(b"\\u00");
                hex_pair(b, c);
            }
            _ => b.push(c),
        }
    }
    b.push(b'"');
}

fn hex_pair(b: &mut Vec<u8>, c: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    b.push(HEX[(c >> 4) as usize]);
    b.push(HEX[(c & 0xf) as usize]);
}
