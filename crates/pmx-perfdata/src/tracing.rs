//! The `TRACING_DATA` feature (file mode) and `HEADER_TRACING_DATA`
//! payload (pipe mode): the tracefs files a reader needs to decode the
//! raw data of tracepoint samples, as they were on the recording machine.
//!
//! Layout (all numbers in the recording machine's byte order, which the
//! header says; sizes are u32 or u64 as noted):
//!
//! 1. the magic `\x17\x08\x44tracing`, a version string and a NUL
//!    (`0.6`), one byte "big endian", one byte `sizeof(long)`, u32 page size;
//! 2. `header_page\0`, u64 size, the contents of `events/header_page`;
//! 3. `header_event\0`, u64 size, the contents of `events/header_event`;
//! 4. u32 count of ftrace formats, each u64 size + its `format` file;
//! 5. u32 count of systems, each: the system's name and a NUL, u32 count
//!    of its events, each u64 size + its `format` file;
//! 6. u32 size + `/proc/kallsyms` (may be empty), u32 size + the
//!    `printk_formats` file (may be empty);
//! 7. from version 0.6: u64 size + `saved_cmdlines` (may be empty).
//!
//! A `format` file names the event, its numeric `ID` (the attr's
//! `config`), its fields (`field:TYPE NAME; offset:N; size:N; signed:N;`)
//! and its `print fmt:` (a C format string and its arguments), which the
//! script renderer evaluates. [`parse`] reads all of this without
//! panicking on damaged bytes; [`build`] writes it.

use crate::Error;

/// The magic at the start of tracing data.
pub const MAGIC: &[u8; 10] = b"\x17\x08\x44tracing";

/// Tracing data as recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TracingData {
    /// The version string (`0.5`, `0.6`).
    pub version: String,
    /// The recording machine was big endian.
    pub big_endian: bool,
    /// `sizeof(long)` there.
    pub long_size: u8,
    /// Its page size.
    pub page_size: u32,
    /// Every event format (ftrace's and the systems').
    pub events: Vec<EventFormat>,
    /// `printk_formats`: address → format string (what a pointer field
    /// that points at a constant string prints).
    pub printk: Vec<(u64, String)>,
}

impl TracingData {
    /// The format of the event whose `ID` is `id` (an attr's `config`).
    pub fn event(&self, id: u64) -> Option<&EventFormat> {
        self.events.iter().find(|e| e.id as u64 == id)
    }
}

/// One event's `format` file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFormat {
    /// Its system (`sched`).
    pub system: String,
    /// Its name (`sched_switch`).
    pub name: String,
    /// Its `ID`.
    pub id: u32,
    /// Its fields, the common ones first.
    pub fields: Vec<FieldFormat>,
    /// The text after `print fmt: `.
    pub print_fmt: String,
}

impl EventFormat {
    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&FieldFormat> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// One `field:` line of a format file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldFormat {
    /// The C type as written, without the name (`char`, `const char *`,
    /// `__data_loc char[]`).
    pub type_: String,
    /// The field's name.
    pub name: String,
    /// Byte offset in the raw data.
    pub offset: u32,
    /// Byte size.
    pub size: u32,
    /// Signed.
    pub signed: bool,
    /// An array (`char prev_comm[16]`).
    pub array: bool,
    /// `__data_loc` (u32: offset in the low half, length in the high half)
    /// or `__rel_loc` (the offset counts from the end of the field).
    pub data_loc: Option<DataLoc>,
}

/// How a dynamic field finds its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataLoc {
    /// From the start of the raw data.
    Absolute,
    /// From the end of the field.
    Relative,
}

impl FieldFormat {
    /// The field's value as an unsigned number (little-endian data; at
    /// most 8 bytes; `None` when the data is too short).
    pub fn number(&self, raw: &[u8]) -> Option<u64> {
        let (at, n) = (self.offset as usize, self.size.min(8) as usize);
        let b = raw.get(at..at.checked_add(n)?)?;
        Some(b.iter().rev().fold(0u64, |v, &x| v << 8 | x as u64))
    }

    /// The bytes of the field: its slot, or for a dynamic field the bytes
    /// its location points at.
    pub fn bytes<'a>(&self, raw: &'a [u8]) -> Option<&'a [u8]> {
        let at = self.offset as usize;
        match self.data_loc {
            None => {
                let end = if self.size == 0 {
                    raw.len()
                } else {
                    at.checked_add(self.size as usize)?
                };
                raw.get(at..end)
            }
            Some(kind) => {
                let v = self.number(raw)?;
                let (off, len) = ((v & 0xffff) as usize, (v >> 16 & 0xffff) as usize);
                let base = match kind {
                    DataLoc::Absolute => 0,
                    DataLoc::Relative => at + self.size as usize,
                };
                raw.get(base + off..base + off + len)
            }
        }
    }
}

fn err(at: usize, what: &str) -> Error {
    Error::format(at as u64, format!("tracing data: {what}"))
}

struct Cur<'a> {
    b: &'a [u8],
    at: usize,
    big: bool,
}

impl<'a> Cur<'a> {
    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], Error> {
        let left = (self.b.len() - self.at) as u64;
        if n > left {
            return Err(err(
                self.at,
                &format!("{what} runs past the end ({n} bytes, {left} left)"),
            ));
        }
        let s = &self.b[self.at..self.at + n as usize];
        self.at += n as usize;
        Ok(s)
    }
    fn num(&mut self, n: u64, what: &str) -> Result<u64, Error> {
        let b = self.take(n, what)?;
        let le = b.iter().rev().fold(0u64, |v, &x| v << 8 | x as u64);
        let be = b.iter().fold(0u64, |v, &x| v << 8 | x as u64);
        Ok(if self.big { be } else { le })
    }
    fn cstr(&mut self, what: &str) -> Result<&'a [u8], Error> {
        let rest = &self.b[self.at..];
        let n = rest
            .iter()
            .position(|&c| c == 0)
            .ok_or_else(|| err(self.at, &format!("{what} has no terminating NUL")))?;
        self.at += n + 1;
        Ok(&rest[..n])
    }
    fn expect(&mut self, s: &[u8], what: &str) -> Result<(), Error> {
        if self.take(s.len() as u64, what)? != s {
            return Err(err(self.at - s.len(), &format!("expected {what}")));
        }
        Ok(())
    }
}

/// Parse tracing data (the bytes of the feature section or pipe payload).
pub fn parse(b: &[u8]) -> Result<TracingData, Error> {
    let mut c = Cur {
        b,
        at: 0,
        big: false,
    };
    if c.take(10, "magic")? != MAGIC {
        return Err(err(0, "no tracing-data magic (damaged TRACING_DATA)"));
    }
    let version = String::from_utf8_lossy(c.cstr("version")?).into_owned();
    let big = c.take(1, "endianness")?[0] != 0;
    c.big = big;
    let long_size = c.take(1, "long size")?[0];
    let page_size = c.num(4, "page size")? as u32;
    c.expect(b"header_page\0", "header_page")?;
    let n = c.num(8, "header_page size")?;
    c.take(n, "header_page")?;
    c.expect(b"header_event\0", "header_event")?;
    let n = c.num(8, "header_event size")?;
    c.take(n, "header_event")?;
    let mut events = Vec::new();
    let nftrace = c.num(4, "ftrace count")?;
    for _ in 0..nftrace {
        let n = c.num(8, "ftrace format size")?;
        let text = c.take(n, "ftrace format")?;
        events.push(parse_format("ftrace", text, c.at)?);
    }
    let nsys = c.num(4, "system count")?;
    for _ in 0..nsys {
        let sys = String::from_utf8_lossy(c.cstr("system name")?).into_owned();
        let nev = c.num(4, "event count")?;
        for _ in 0..nev {
            let n = c.num(8, "format size")?;
            let text = c.take(n, "format")?;
            events.push(parse_format(&sys, text, c.at)?);
        }
    }
    let mut printk = Vec::new();
    // kallsyms, then printk formats; a file cut after the formats still
    // decodes its samples.
    if let Ok(n) = c.num(4, "kallsyms size") {
        c.take(n, "kallsyms")?;
        let n = c.num(4, "printk size")?;
        let text = c.take(n, "printk formats")?;
        printk = parse_printk(text);
    }
    Ok(TracingData {
        version,
        big_endian: big,
        long_size,
        page_size,
        events,
        printk,
    })
}

/// `0xADDR : "format"` lines.
fn parse_printk(text: &[u8]) -> Vec<(u64, String)> {
    let text = String::from_utf8_lossy(text);
    text.lines()
        .filter_map(|l| {
            let (a, s) = l.split_once(" : ")?;
            let a = u64::from_str_radix(a.trim().trim_start_matches("0x"), 16).ok()?;
            let s = s.trim().strip_prefix('"')?.strip_suffix('"')?;
            Some((a, s.replace("\\n", "\n")))
        })
        .collect()
}

/// Parse one `format` file of `system`.
pub fn parse_format(system: &str, text: &[u8], at: usize) -> Result<EventFormat, Error> {
    let text = String::from_utf8_lossy(text);
    let mut e = EventFormat {
        system: system.to_string(),
        ..Default::default()
    };
    let mut id = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(n) = t.strip_prefix("name:") {
            e.name = n.trim().to_string();
        } else if let Some(n) = t.strip_prefix("ID:") {
            id = n.trim().parse().ok();
        } else if let Some(f) = t.strip_prefix("field:") {
            e.fields.push(parse_field(f).ok_or_else(|| {
                err(
                    at,
                    &format!("event {system}:{}: bad field line '{t}'", e.name),
                )
            })?);
        } else if let Some(p) = t.strip_prefix("print fmt:") {
            e.print_fmt = p.trim().to_string();
        }
    }
    e.id = id.ok_or_else(|| err(at, &format!("event {system}:{} has no ID", e.name)))?;
    Ok(e)
}

/// `TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;`
fn parse_field(f: &str) -> Option<FieldFormat> {
    let mut parts = f.split(';').map(str::trim);
    let decl = parts.next()?;
    let mut field = FieldFormat::default();
    for p in parts {
        let (k, v) = match p.split_once(':') {
            Some(kv) => kv,
            None => continue,
        };
        let v: u32 = v.trim().parse().ok()?;
        match k.trim() {
            "offset" => field.offset = v,
            "size" => field.size = v,
            "signed" => field.signed = v != 0,
            _ => {}
        }
    }
    let (ty, mut name) = decl
        .rsplit_once([' ', '*'])
        .map(|(t, n)| (t, n.to_string()))?;
    // rsplit on '*' drops it from the type: put it back.
    let mut ty = decl[..ty.len() + 1].trim().to_string();
    if let Some(i) = name.find('[') {
        field.array = true;
        ty.push_str(&name[i..]);
        name.truncate(i);
    }
    if let Some(rest) = ty.strip_prefix("__data_loc ") {
        field.data_loc = Some(DataLoc::Absolute);
        ty = rest.to_string();
    } else if let Some(rest) = ty.strip_prefix("__rel_loc ") {
        field.data_loc = Some(DataLoc::Relative);
        ty = rest.to_string();
    }
    field.type_ = ty;
    field.name = name;
    Some(field)
}

/// The tracefs files [`build`] writes: the header files and, per system,
/// the `format` files of its recorded events.
#[derive(Debug, Clone, Default)]
pub struct TracingFiles {
    /// `events/header_page`.
    pub header_page: Vec<u8>,
    /// `events/header_event`.
    pub header_event: Vec<u8>,
    /// `events/ftrace/*/format` of recorded ftrace events.
    pub ftrace: Vec<Vec<u8>>,
    /// (system, its recorded events' `format` files).
    pub systems: Vec<(String, Vec<Vec<u8>>)>,
    /// `printk_formats` (may be empty).
    pub printk: Vec<u8>,
    /// `saved_cmdlines` (may be empty).
    pub cmdlines: Vec<u8>,
}

/// Tracing data (version 0.6, this machine's byte order and long size,
/// no kallsyms: perf reads kernel symbols from its own sources).
pub fn build(files: &TracingFiles, page_size: u32) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(MAGIC);
    v.extend_from_slice(b"0.6\0");
    v.push(u8::from(cfg!(target_endian = "big")));
    v.push(std::mem::size_of::<std::ffi::c_long>() as u8);
    v.extend_from_slice(&page_size.to_ne_bytes());
    v.extend_from_slice(b"header_page\0");
    v.extend_from_slice(&(files.header_page.len() as u64).to_ne_bytes());
    v.extend_from_slice(&files.header_page);
    v.extend_from_slice(b"header_event\0");
    v.extend_from_slice(&(files.header_event.len() as u64).to_ne_bytes());
    v.extend_from_slice(&files.header_event);
    v.extend_from_slice(&(files.ftrace.len() as u32).to_ne_bytes());
    for f in &files.ftrace {
        v.extend_from_slice(&(f.len() as u64).to_ne_bytes());
        v.extend_from_slice(f);
    }
    v.extend_from_slice(&(files.systems.len() as u32).to_ne_bytes());
    for (sys, formats) in &files.systems {
        v.extend_from_slice(sys.as_bytes());
        v.push(0);
        v.extend_from_slice(&(formats.len() as u32).to_ne_bytes());
        for f in formats {
            v.extend_from_slice(&(f.len() as u64).to_ne_bytes());
            v.extend_from_slice(f);
        }
    }
    v.extend_from_slice(&0u32.to_ne_bytes()); // no kallsyms
    v.extend_from_slice(&(files.printk.len() as u32).to_ne_bytes());
    v.extend_from_slice(&files.printk);
    v.extend_from_slice(&(files.cmdlines.len() as u64).to_ne_bytes());
    v.extend_from_slice(&files.cmdlines);
    v
}

/// The tracing data of a recording: the pipe payload kept by the reader,
/// or the file's TRACING_DATA section read from `path`; `Ok(None)` when
/// the recording has none.
pub fn read_file(
    path: &std::path::Path,
    features: &crate::read::FileFeatures,
) -> Result<Option<TracingData>, Error> {
    use std::io::{Read, Seek, SeekFrom};
    if let Some(b) = &features.tracing_bytes {
        return parse(b).map(Some);
    }
    let Some((offset, size)) = features.tracing_section else {
        return Ok(None);
    };
    if size > 1 << 30 {
        return Err(Error::format(offset, "tracing data: implausible size"));
    }
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(offset))?;
    let mut b = Vec::new();
    f.take(size).read_to_end(&mut b)?;
    if (b.len() as u64) < size {
        return Err(Error::format(
            offset,
            "tracing data runs past the end of the file: truncated file?",
        ));
    }
    parse(&b).map(Some).map_err(|e| match e {
        Error::Format { offset: o, message } => Error::Format {
            offset: offset + o,
            message,
        },
        e => e,
    })
}
