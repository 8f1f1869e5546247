//! `perf inject` as a library call: a perf.data file or stream (file or
//! pipe mode, zstd-compressed or not) copied record by record into a new
//! one, written uncompressed (`-i … -o …` decompresses), in file mode to
//! a regular file and in pipe mode to standard output, a pipe or a
//! device; with [`InjectOptions::build_ids`] (`-b`) the build ids of the
//! binaries its MMAP records name are added (read from the files on disk;
//! a pipe gets them as `HEADER_BUILD_ID` records at its end, as perf).

use pmx_perfdata::format::misc;
use pmx_perfdata::read::FileFeatures;
use pmx_perfdata::{BuildIdEntry, Features, FileAttr, PipeWriter, Reader, Record, Writer};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// What to inject from where to where.
#[derive(Debug, Clone)]
pub struct InjectOptions {
    /// The input (`-` is standard input).
    pub input: PathBuf,
    /// The output (`-` is standard output).
    pub output: PathBuf,
    /// Add the build ids of the mapped binaries (`-b`).
    pub build_ids: bool,
}

/// What was written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InjectSummary {
    /// Records copied.
    pub records: u64,
    /// Build ids in the output.
    pub build_ids: usize,
}

impl std::fmt::Display for InjectSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} records, {} build ids", self.records, self.build_ids)
    }
}

/// Why injecting failed.
#[derive(Debug, thiserror::Error)]
pub enum InjectError {
    /// The input could not be read.
    #[error("{0}: {1}")]
    Read(String, pmx_perfdata::Error),
    /// The output could not be written.
    #[error("{0}: {1}")]
    Write(String, io::Error),
}

/// The writer's features from the reader's.
fn features(f: &FileFeatures) -> Features {
    Features {
        hostname: f.hostname.clone(),
        osrelease: f.osrelease.clone(),
        version: f.version.clone(),
        arch: f.arch.clone(),
        nrcpus: f.nrcpus,
        cpudesc: f.cpudesc.clone(),
        cpuid: f.cpuid.clone(),
        total_mem_kib: f.total_mem_kib,
        cmdline: f.cmdline.clone(),
        build_ids: f.build_ids.clone(),
        sample_time: f.sample_time,
        group_desc: f.group_desc.clone(),
        tracing_data: None,
    }
}

enum Out {
    File(Writer<std::fs::File>),
    Pipe(PipeWriter<Box<dyn Write>>),
}

fn open_out(path: &Path, attrs: Vec<FileAttr>, f: &Features) -> io::Result<Out> {
    if path.as_os_str() == "-" {
        let w: Box<dyn Write> = Box::new(io::BufWriter::new(io::stdout()));
        return Ok(Out::Pipe(PipeWriter::create(w, attrs, f)?));
    }
    let special = (std::fs::metadata(path).ok())
        .is_some_and(|m| m.file_type().is_fifo() || m.file_type().is_char_device());
    if special {
        let file = std::fs::OpenOptions::new().write(true).open(path)?;
        let w: Box<dyn Write> = Box::new(io::BufWriter::new(file));
        return Ok(Out::Pipe(PipeWriter::create(w, attrs, f)?));
    }
    Ok(Out::File(Writer::create(
        std::fs::File::create(path)?,
        attrs,
    )?))
}

/// Copy `opts.input` into `opts.output` (see the module's page).
pub fn inject(opts: &InjectOptions) -> Result<InjectSummary, InjectError> {
    let shown = |p: &Path| p.display().to_string();
    let rerr = |e| InjectError::Read(shown(&opts.input), e);
    let werr = |e| InjectError::Write(shown(&opts.output), e);
    let input: &Path = if opts.input.as_os_str() == "-" {
        Path::new("/dev/stdin")
    } else {
        &opts.input
    };
    let mut reader = Reader::open(input).map_err(rerr)?;
    let mut out: Option<Out> = None;
    let mut mapped: BTreeMap<String, u16> = BTreeMap::new();
    let mut summary = InjectSummary::default();
    while let Some((rec, bytes)) = reader.next_record_bytes().map_err(rerr)? {
        if let Record::Mmap(m) = rec {
            let name = String::from_utf8_lossy(m.filename).into_owned();
            mapped.entry(name).or_insert(m.misc & misc::CPUMODE_MASK);
        }
        let bytes = bytes.to_vec();
        if out.is_none() {
            let attrs = attrs(&reader);
            let f = features(reader.features());
            out = Some(open_out(&opts.output, attrs, &f).map_err(werr)?);
        }
        match out.as_mut().expect("opened") {
            Out::File(w) => w.write_record(&bytes),
            Out::Pipe(w) => w.write_record(&bytes),
        }
        .map_err(werr)?;
        summary.records += 1;
    }
    let mut f = features(reader.features());
    if opts.build_ids {
        add_build_ids(&mut f.build_ids, &mapped);
    }
    summary.build_ids = f.build_ids.len();
    let out = match out {
        Some(o) => o,
        None => open_out(&opts.output, attrs(&reader), &f).map_err(werr)?,
    };
    let raw: Vec<(u32, Vec<u8>)> = (reader.features().raw.iter())
        .map(|(k, v)| (*k, v.clone()))
        .collect();
    match out {
        Out::File(w) => w.finish_with(&f, &raw).map(drop),
        Out::Pipe(w) => w.finish(&f).and_then(|mut w| w.flush()),
    }
    .map_err(werr)?;
    Ok(summary)
}

fn attrs(r: &Reader) -> Vec<FileAttr> {
    (r.events().iter())
        .map(|e| FileAttr {
            attr: e.raw.clone(),
            ids: e.ids.clone(),
            name: e.name.clone(),
        })
        .collect()
}

/// The build ids of the mapped user binaries on disk (and the running
/// kernel's for `[kernel.kallsyms]`) not yet in `ids`.
fn add_build_ids(ids: &mut Vec<BuildIdEntry>, mapped: &BTreeMap<String, u16>) {
    for (name, &mode) in mapped {
        let (id, filename, m) = if name.starts_with("[kernel.kallsyms]") {
            let id = pmx_symbols::kernel::running_kernel_build_id();
            (id, "[kernel.kallsyms]".to_string(), misc::KERNEL)
        } else if name.starts_with('/') {
            let id = pmx_symbols::buildid_cache::build_id_of(Path::new(name));
            (
                id,
                name.clone(),
                if mode == misc::KERNEL {
                    misc::KERNEL
                } else {
                    misc::USER
                },
            )
        } else {
            continue;
        };
        if ids.iter().any(|e| e.filename == filename) {
            continue;
        }
        if let Some(build_id) = id.filter(|i| i.len() <= 20) {
            ids.push(BuildIdEntry {
                pid: -1,
                misc: m,
                build_id,
                filename,
            });
        }
    }
}
