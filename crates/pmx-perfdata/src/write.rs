//! Writing perf.data in file mode, in the layout perf itself writes and
//! perf 6.1 reads without warnings:
//!
//! ```text
//! 0     file header (placeholder until finish)
//! 104   ids of attr 0, ids of attr 1, …      (u64 arrays)
//!       attrs section: per attr, the attr bytes + {offset,size} of its ids
//!       data section: the records, as given   (8-aligned start)
//!       feature index: one {offset,size} per feature bit, in bit order
//!       feature bodies
//! ```
//!
//! Pipe mode (`perf record -o -`), for outputs that cannot seek, is
//! [`PipeWriter`] (module `pipe`).
//!
//! A file with an event sampling branch records other than an LBR call
//! stack gets the empty BRANCH_STACK feature, as `perf record -b`/`-j`
//! set it (perf report and annotate then read it in branch mode).
//!
//! Attrs larger than perf 6.1 accepts (136-byte `PERF_ATTR_SIZE_VER8`)
//! are written as 128 bytes when the extra bytes are zero (the kernel
//! treats a zero tail the same), so older perf reads the file.

use crate::attr::FileAttr;
use crate::format::{
    align_up, attr_size, feature, misc, EventHeader, FileHeader, Section, FILE_HEADER_SIZE,
    NAME_ALIGN,
};
use std::io::{self, Seek, SeekFrom, Write};

pub mod compress;
mod pipe;
pub use compress::Compressor;
pub use pipe::PipeWriter;

/// One entry of the BUILD_ID feature: a binary and its build-id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildIdEntry {
    /// The machine's pid: -1 for the kernel/host.
    pub pid: i32,
    /// `PERF_RECORD_MISC_KERNEL` or `PERF_RECORD_MISC_USER`.
    pub misc: u16,
    /// The build-id bytes (up to 20).
    pub build_id: Vec<u8>,
    /// The binary's path (`[kernel.kallsyms]` for the kernel).
    pub filename: String,
}

/// The feature sections the writer can add. `None`/empty ones are left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    /// HOSTNAME.
    pub hostname: Option<String>,
    /// OSRELEASE (`uname -r`).
    pub osrelease: Option<String>,
    /// VERSION of the writing tool.
    pub version: Option<String>,
    /// ARCH (`uname -m`).
    pub arch: Option<String>,
    /// NRCPUS: (online, available).
    pub nrcpus: Option<(u32, u32)>,
    /// CPUDESC: the CPU model name.
    pub cpudesc: Option<String>,
    /// CPUID: `GenuineIntel,6,85,4` style.
    pub cpuid: Option<String>,
    /// TOTAL_MEM in KiB.
    pub total_mem_kib: Option<u64>,
    /// CMDLINE: argv of the recording command.
    pub cmdline: Option<Vec<String>>,
    /// BUILD_ID entries of the mapped binaries.
    pub build_ids: Vec<BuildIdEntry>,
    /// SAMPLE_TIME: first and last sample time.
    pub sample_time: Option<(u64, u64)>,
    /// GROUP_DESC: per group of several events, its name (perf writes
    /// `{anon_group}` for an unnamed one), its leader's index among the
    /// attrs and its number of members.
    pub group_desc: Vec<(String, u32, u32)>,
    /// TRACING_DATA: the tracepoints' formats ([`crate::tracing::build`]).
    pub tracing_data: Option<Vec<u8>>,
}

/// A perf.data writer: records stream into the data section; attrs are
/// laid out at creation, features and the real header at [`Writer::finish`].
pub struct Writer<W: Write + Seek> {
    out: W,
    attrs: Vec<FileAttr>,
    header: FileHeader,
    data_size: u64,
}

/// The attr bytes as written: the kernel's bytes, cut to 128 bytes when
/// the tail beyond is zero (perf 6.1 refuses attrs larger than it knows),
/// with the size field matching.
pub fn normalize_attr(attr: &[u8]) -> io::Result<Vec<u8>> {
    if attr.len() < attr_size::VER0 as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "perf_event_attr of {} bytes: at least 64 needed",
                attr.len()
            ),
        ));
    }
    let claimed = u32::from_le_bytes(attr[4..8].try_into().expect("4 bytes")) as usize;
    let mut n = if claimed == 0 {
        attr.len()
    } else {
        claimed.min(attr.len())
    };
    n = n.max(attr_size::VER0 as usize);
    let max = attr_size::VER7 as usize;
    if n > max && attr[max..n].iter().all(|&b| b == 0) {
        n = max;
    }
    let mut out = attr[..n].to_vec();
    out[4..8].copy_from_slice(&(n as u32).to_le_bytes());
    Ok(out)
}

impl<W: Write + Seek> Writer<W> {
    /// Start a file: write a placeholder header, the attrs and their ids;
    /// records follow with [`Writer::write_record`].
    pub fn create(mut out: W, attrs: Vec<FileAttr>) -> io::Result<Self> {
        let mut attrs = attrs;
        for a in &mut attrs {
            a.attr = normalize_attr(&a.attr)?;
        }
        let attr_len = attrs
            .iter()
            .map(|a| a.attr.len())
            .max()
            .unwrap_or(attr_size::VER7 as usize);
        out.seek(SeekFrom::Start(0))?;
        out.write_all(&[0u8; FILE_HEADER_SIZE as usize])?;
        let mut pos = FILE_HEADER_SIZE;
        let mut id_sections = Vec::with_capacity(attrs.len());
        for a in &attrs {
            let mut bytes = Vec::with_capacity(a.ids.len() * 8);
            for id in &a.ids {
                bytes.extend_from_slice(&id.to_le_bytes());
            }
            out.write_all(&bytes)?;
            id_sections.push(Section {
                offset: pos,
                size: bytes.len() as u64,
            });
            pos += bytes.len() as u64;
        }
        let attrs_start = pos;
        for (a, ids) in attrs.iter().zip(&id_sections) {
            let mut entry = a.attr.clone();
            entry.resize(attr_len, 0);
            entry.extend_from_slice(&ids.to_bytes());
            out.write_all(&entry)?;
            pos += entry.len() as u64;
        }
        let attrs_section = Section {
            offset: attrs_start,
            size: pos - attrs_start,
        };
        let data_start = align_up(pos as usize, 8) as u64;
        out.write_all(&vec![0u8; (data_start - pos) as usize])?;
        let header = FileHeader {
            size: FILE_HEADER_SIZE,
            attr_size: attr_len as u64 + 16,
            attrs: attrs_section,
            data: Section {
                offset: data_start,
                size: 0,
            },
            event_types: Section::default(),
            features: [0; 4],
        };
        Ok(Writer {
            out,
            attrs,
            header,
            data_size: 0,
        })
    }

    /// Append one complete record (its `perf_event_header` first, as the
    /// kernel wrote it). The size in the header must equal the slice length.
    pub fn write_record(&mut self, record: &[u8]) -> io::Result<()> {
        check_record(record)?;
        self.out.write_all(record)?;
        self.data_size += record.len() as u64;
        Ok(())
    }

    /// Append whole records laid end to end (a ring's bytes as read):
    /// each header's size must take the walk exactly to the slice's end.
    /// One write for all, where [`Writer::write_record`] makes one each.
    pub fn write_records(&mut self, records: &[u8]) -> io::Result<()> {
        let mut at = 0;
        while at < records.len() {
            let size = records
                .get(at..at + 8)
                .map_or(0, |h| EventHeader::parse(h).size as usize);
            if size < 8 || at + size > records.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "the record at byte {at} of {} says {size} bytes",
                        records.len()
                    ),
                ));
            }
            at += size;
        }
        self.out.write_all(records)?;
        self.data_size += records.len() as u64;
        Ok(())
    }

    /// Bytes of records written so far.
    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    /// Write the feature sections (EVENT_DESC from the attrs, and every
    /// feature set in `features`), then the real header; returns the output.
    pub fn finish(self, features: &Features) -> io::Result<W> {
        self.finish_with(features, &[])
    }

    /// [`Writer::finish`] with more feature sections, their bodies as
    /// given (`CPU_TOPOLOGY`, `NUMA_TOPOLOGY` from [`crate::topology`]).
    pub fn finish_with(mut self, features: &Features, raw: &[(u32, Vec<u8>)]) -> io::Result<W> {
        self.header.data.size = self.data_size;
        let attr_len = (self.header.attr_size - 16) as usize;
        let mut bodies = feature_bodies(&self.attrs, attr_len, features);
        bodies.extend(raw.iter().cloned());
        if branch_records(&self.attrs) && !bodies.iter().any(|(id, _)| *id == feature::BRANCH_STACK)
        {
            bodies.push((feature::BRANCH_STACK, Vec::new()));
        }
        bodies.sort_by_key(|(id, _)| *id);
        let index_start = self.header.data.offset + self.data_size;
        let mut pos = index_start + 16 * bodies.len() as u64;
        let mut index = Vec::with_capacity(bodies.len() * 16);
        for (f, body) in &bodies {
            self.header.set_feature(*f);
            index.extend_from_slice(
                &Section {
                    offset: pos,
                    size: body.len() as u64,
                }
                .to_bytes(),
            );
            pos += body.len() as u64;
        }
        self.out.seek(SeekFrom::Start(index_start))?;
        self.out.write_all(&index)?;
        for (_, body) in &bodies {
            self.out.write_all(body)?;
        }
        self.out.seek(SeekFrom::Start(0))?;
        self.out.write_all(&self.header.to_bytes())?;
        self.out.seek(SeekFrom::Start(pos))?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Whether perf record would set the (empty) BRANCH_STACK feature for
/// these events: one samples branch records (`PERF_SAMPLE_BRANCH_STACK`)
/// other than an LBR call stack (`-b`/`-j`, not `--call-graph lbr`).
/// perf report and annotate read such a file in branch mode.
fn branch_records(attrs: &[FileAttr]) -> bool {
    use crate::format::{branch_sample_type, sample_type};
    attrs.iter().any(|a| {
        let word = |at: usize| {
            (a.attr.get(at..at + 8)).map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8")))
        };
        word(24) & sample_type::BRANCH_STACK != 0 && word(72) & branch_sample_type::CALL_STACK == 0
    })
}

/// The feature bodies in bit order (the order perf expects the index in).
fn feature_bodies(attrs: &[FileAttr], attr_len: usize, f: &Features) -> Vec<(u32, Vec<u8>)> {
    let mut out: Vec<(u32, Vec<u8>)> = Vec::new();
    if !f.build_ids.is_empty() {
        let mut b = Vec::new();
        for e in &f.build_ids {
            b.extend_from_slice(&build_id_entry(e));
        }
        out.push((feature::BUILD_ID, b));
    }
    let strings = [
        (feature::HOSTNAME, &f.hostname),
        (feature::OSRELEASE, &f.osrelease),
        (feature::VERSION, &f.version),
        (feature::ARCH, &f.arch),
    ];
    for (id, s) in strings {
        if let Some(s) = s {
            out.push((id, perf_string(s)));
        }
    }
    if let Some((online, avail)) = f.nrcpus {
        let mut b = avail.to_le_bytes().to_vec();
        b.extend_from_slice(&online.to_le_bytes());
        out.push((feature::NRCPUS, b));
    }
    if let Some(s) = &f.cpudesc {
        out.push((feature::CPUDESC, perf_string(s)));
    }
    if let Some(s) = &f.cpuid {
        out.push((feature::CPUID, perf_string(s)));
    }
    if let Some(m) = f.total_mem_kib {
        out.push((feature::TOTAL_MEM, m.to_le_bytes().to_vec()));
    }
    if let Some(args) = &f.cmdline {
        let mut b = (args.len() as u32).to_le_bytes().to_vec();
        for a in args {
            b.extend_from_slice(&perf_string(a));
        }
        out.push((feature::CMDLINE, b));
    }
    if !attrs.is_empty() {
        out.push((feature::EVENT_DESC, event_desc(attrs, attr_len)));
    }
    if let Some((first, last)) = f.sample_time {
        let mut b = first.to_le_bytes().to_vec();
        b.extend_from_slice(&last.to_le_bytes());
        out.push((feature::SAMPLE_TIME, b));
    }
    if !f.group_desc.is_empty() {
        let mut b = (f.group_desc.len() as u32).to_le_bytes().to_vec();
        for (name, leader, n) in &f.group_desc {
            b.extend(perf_string(name));
            b.extend_from_slice(&leader.to_le_bytes());
            b.extend_from_slice(&n.to_le_bytes());
        }
        out.push((feature::GROUP_DESC, b));
    }
    if let Some(t) = &f.tracing_data {
        out.push((feature::TRACING_DATA, t.clone()));
    }
    out.sort_by_key(|(id, _)| *id);
    out
}

/// EVENT_DESC: u32 nr, u32 attr_size, then per event the attr, u32
/// nr_ids, the name as a perf string, the ids.
fn event_desc(attrs: &[FileAttr], attr_len: usize) -> Vec<u8> {
    let mut b = (attrs.len() as u32).to_le_bytes().to_vec();
    b.extend_from_slice(&(attr_len as u32).to_le_bytes());
    for a in attrs {
        let mut attr = a.attr.clone();
        attr.resize(attr_len, 0);
        b.extend_from_slice(&attr);
        b.extend_from_slice(&(a.ids.len() as u32).to_le_bytes());
        b.extend_from_slice(&perf_string(&a.name));
        for id in &a.ids {
            b.extend_from_slice(&id.to_le_bytes());
        }
    }
    b
}

/// A record must hold its header and be as long as the header says.
fn check_record(record: &[u8]) -> io::Result<()> {
    if record.len() < 8 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "record shorter than its 8-byte header",
        ));
    }
    let h = EventHeader::parse(record);
    if h.size as usize != record.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "record header says {} bytes, {} given",
                h.size,
                record.len()
            ),
        ));
    }
    Ok(())
}

/// A CPU_PMU_CAPS feature section, for [`Writer::finish_with`]: u32 nr,
/// then each capability's name and value as perf strings (perf record
/// writes the core PMU's `caps/` files; `branches` is the LBR's depth,
/// which `report --stitch-lbr` needs). Read back by
/// [`crate::branch::max_branches`].
pub fn cpu_pmu_caps(caps: &[(&str, &str)]) -> (u32, Vec<u8>) {
    let mut b = (caps.len() as u32).to_le_bytes().to_vec();
    for (name, value) in caps {
        b.extend(perf_string(name));
        b.extend(perf_string(value));
    }
    (feature::CPU_PMU_CAPS, b)
}

/// A perf header string: u32 length (the string's bytes plus a NUL,
/// rounded up to 64), then the string padded with NULs.
pub fn perf_string(s: &str) -> Vec<u8> {
    let len = align_up(s.len() + 1, NAME_ALIGN);
    let mut b = Vec::with_capacity(4 + len);
    b.extend_from_slice(&(len as u32).to_le_bytes());
    b.extend_from_slice(s.as_bytes());
    b.resize(4 + len, 0);
    b
}

/// One `build_id_event`: header (type 0, misc with BUILD_ID_SIZE, size),
/// pid, 20 id bytes, the id's size, 3 reserved bytes, the file name padded
/// to 64 bytes.
pub fn build_id_entry(e: &BuildIdEntry) -> Vec<u8> {
    let name_len = align_up(e.filename.len() + 1, NAME_ALIGN);
    let size = 8 + 4 + 24 + name_len;
    let mut b = Vec::with_capacity(size);
    let id_len = e.build_id.len().min(20);
    let h = EventHeader {
        kind: 0,
        misc: e.misc | misc::BUILD_ID_SIZE,
        size: size.min(u16::MAX as usize) as u16,
    };
    b.extend_from_slice(&h.to_bytes());
    b.extend_from_slice(&e.pid.to_le_bytes());
    let mut id = [0u8; 24];
    id[..id_len].copy_from_slice(&e.build_id[..id_len]);
    id[20] = id_len as u8;
    b.extend_from_slice(&id);
    b.extend_from_slice(e.filename.as_bytes());
    b.resize(size, 0);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_padded_to_64() {
        let s = perf_string("host");
        assert_eq!(s.len(), 4 + 64);
        assert_eq!(u32::from_le_bytes(s[..4].try_into().unwrap()), 64);
        assert_eq!(&s[4..9], b"host\0");
        assert_eq!(perf_string(&"x".repeat(64)).len(), 4 + 128);
    }

    #[test]
    fn attrs_are_cut_to_128_when_the_tail_is_zero() {
        let mut a = vec![0u8; 136];
        a[4..8].copy_from_slice(&136u32.to_le_bytes());
        let n = normalize_attr(&a).unwrap();
        assert_eq!(n.len(), 128);
        assert_eq!(u32::from_le_bytes(n[4..8].try_into().unwrap()), 128);
        a[130] = 1; // config3 set: keep it
        assert_eq!(normalize_attr(&a).unwrap().len(), 136);
        assert!(normalize_attr(&a[..40]).is_err());
    }

    #[test]
    fn build_id_entry_layout() {
        let e = BuildIdEntry {
            pid: -1,
            misc: misc::KERNEL,
            build_id: vec![0xab; 20],
            filename: "[kernel.kallsyms]".into(),
        };
        let b = build_id_entry(&e);
        assert_eq!(b.len(), 36 + 64);
        let h = EventHeader::parse(&b);
        assert_eq!(h.size as usize, b.len());
        assert_eq!(h.misc, misc::KERNEL | misc::BUILD_ID_SIZE);
        assert_eq!(i32::from_le_bytes(b[8..12].try_into().unwrap()), -1);
        assert_eq!(b[12 + 20], 20);
        assert_eq!(&b[36..53], b"[kernel.kallsyms]");
    }

    #[test]
    fn rejects_records_with_a_wrong_size() {
        let mut w = Writer::create(io::Cursor::new(Vec::new()), vec![]).unwrap();
        let rec = EventHeader {
            kind: 9,
            misc: 0,
            size: 16,
        }
        .to_bytes();
        assert!(w.write_record(&rec).is_err());
        assert!(w.write_record(&rec[..4]).is_err());
        assert_eq!(w.data_size(), 0);
    }

    #[test]
    fn records_end_to_end_are_written_at_once_when_they_tile() {
        let mut w = Writer::create(io::Cursor::new(Vec::new()), vec![]).unwrap();
        let mut two = EventHeader {
            kind: 9,
            misc: 0,
            size: 16,
        }
        .to_bytes()
        .to_vec();
        two.resize(16, 7);
        two.extend_from_slice(&two.clone());
        w.write_records(&two).unwrap();
        assert_eq!(w.data_size(), 32);
        // A size past the end, a zero size, a header cut short: refused.
        assert!(w.write_records(&two[..24]).is_err());
        assert!(w.write_records(&[0u8; 16]).is_err());
        assert!(w.write_records(&two[..20]).is_err());
        assert_eq!(w.data_size(), 32);
        w.write_records(&[]).unwrap();
    }
}
