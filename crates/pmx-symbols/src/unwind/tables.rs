//! One binary's unwind tables: the `.eh_frame` / `.eh_frame_hdr` (else
//! `.debug_frame`, from the file or its separate debug file) sections and
//! the load segments that turn a mapping into the binary's load bias.
//! Loaded once per binary and shared (cheaply cloned) by every process
//! that maps it.

use framehop::ExplicitModuleSectionInfo;
use object::{Object, ObjectSection, ObjectSegment};
use std::ops::{Deref, Range};
use std::path::Path;
use std::sync::Arc;

/// Where a section's bytes live.
enum Backing {
    /// A mapped file.
    Map(memmap2::Mmap),
    /// Decompressed (or copied) bytes.
    Owned(Vec<u8>),
    /// The running vDSO image, read once per process.
    Static(&'static [u8]),
}

impl Backing {
    fn bytes(&self) -> &[u8] {
        match self {
            Backing::Map(m) => m,
            Backing::Owned(v) => v,
            Backing::Static(s) => s,
        }
    }
}

/// A section's bytes: a range of a shared backing (cloning is cheap).
#[derive(Clone)]
pub(crate) struct Bytes {
    backing: Arc<Backing>,
    range: Range<usize>,
}

impl Default for Bytes {
    fn default() -> Bytes {
        Bytes {
            backing: Arc::new(Backing::Owned(Vec::new())),
            range: 0..0,
        }
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.backing.bytes()[self.range.clone()]
    }
}

/// The unwind sections of one binary and its load segments.
pub(crate) struct Tables {
    /// The sections as framehop takes them (SVMAs: the ELF's own addresses).
    pub(crate) sections: ExplicitModuleSectionInfo<Bytes>,
    /// Load segments: (file offset, file size, virtual address).
    segments: Vec<(u64, u64, u64)>,
}

impl Tables {
    /// The binary at `path`; `Err` names the file and the problem. A
    /// recorded build-id that differs from the file's is an error (its
    /// tables would unwind with the wrong rules).
    pub(crate) fn open(path: &Path, want_build_id: Option<&[u8]>) -> Result<Tables, String> {
        Tables::open_in(path, want_build_id, Some(DEBUG_DIR))
    }

    /// [`Tables::open`], taking `.debug_frame` from the separate debug
    /// file under `debug_dir` (by build-id) when the binary has no CFI of
    /// its own; `None` for a file that is itself a separate debug file
    /// (it has the same build-id: it must not look for itself again).
    fn open_in(
        path: &Path,
        want_build_id: Option<&[u8]>,
        debug_dir: Option<&str>,
    ) -> Result<Tables, String> {
        let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if !meta.is_file() {
            return Err(format!("{}: not a regular file", path.display()));
        }
        let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        // SAFETY: read-only mapping; object and gimli check every bound, so a
        // file changed under us gives wrong frames, never unsafety.
        let map =
            unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("{}: {e}", path.display()))?;
        Tables::from_backing(
            Arc::new(Backing::Map(map)),
            &path.display().to_string(),
            want_build_id,
            debug_dir,
        )
    }

    /// An ELF image in memory for the whole run (the vDSO).
    pub(crate) fn from_static(
        image: &'static [u8],
        name: &str,
        want_build_id: Option<&[u8]>,
    ) -> Result<Tables, String> {
        Tables::from_backing(
            Arc::new(Backing::Static(image)),
            name,
            want_build_id,
            Some(DEBUG_DIR),
        )
    }

    /// An ELF image handed over whole (a probe's crafted file).
    pub(crate) fn from_bytes(bytes: Vec<u8>, name: &str) -> Result<Tables, String> {
        Tables::from_backing(Arc::new(Backing::Owned(bytes)), name, None, Some(DEBUG_DIR))
    }

    fn from_backing(
        backing: Arc<Backing>,
        name: &str,
        want_build_id: Option<&[u8]>,
        debug_dir: Option<&str>,
    ) -> Result<Tables, String> {
        let data = backing.bytes();
        let obj = object::File::parse(data).map_err(|e| format!("{name}: not an ELF file: {e}"))?;
        let build_id = obj.build_id().ok().flatten();
        if let (Some(want), Some(have)) = (want_build_id, build_id) {
            if want != have {
                return Err(format!(
                    "{name}: the file on disk differs from the one recorded (build-id): \
                     its frames are not unwound"
                ));
            }
        }
        let segments = obj
            .segments()
            .filter_map(|s| {
                let (off, size) = s.file_range();
                (size > 0).then_some((off, size, s.address()))
            })
            .collect();
        let section = |name: &str| -> Option<(Range<u64>, Bytes)> {
            let s = obj.section_by_name(name)?;
            file_section(&backing, &s).map(|b| (svma(&s), b))
        };
        let mut sections = ExplicitModuleSectionInfo {
            base_svma: 0,
            ..Default::default()
        };
        sections.text_svma = section(".text").map(|(r, _)| r);
        sections.got_svma = section(".got").map(|(r, _)| r);
        if let Some((r, b)) = section(".eh_frame") {
            sections.eh_frame_svma = Some(r);
            sections.eh_frame = Some(b);
            if let Some((r, b)) = section(".eh_frame_hdr") {
                sections.eh_frame_hdr_svma = Some(r);
                sections.eh_frame_hdr = Some(b);
            }
        } else if let Some((_, b)) = section(".debug_frame") {
            sections.debug_frame = Some(b);
        } else if let Some(b) = build_id
            .zip(debug_dir)
            .and_then(|(id, dir)| debug_frame_of_debug_file(dir, id))
        {
            sections.debug_frame = Some(b);
        }
        Ok(Tables { sections, segments })
    }

    /// Whether there is any CFI (else framehop walks frame pointers).
    pub(crate) fn has_cfi(&self) -> bool {
        self.sections.eh_frame.is_some() || self.sections.debug_frame.is_some()
    }

    /// The load bias of a mapping at `start` of file offset `pgoff`: the
    /// process address minus the ELF address (0 for a non-PIE executable).
    pub(crate) fn bias(&self, start: u64, pgoff: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(off, size, _)| pgoff >= *off && pgoff - off < *size)
            .or_else(|| self.segments.iter().find(|(off, _, _)| *off == 0))
            .map(|(off, _, vaddr)| start.wrapping_sub((pgoff - off).wrapping_add(*vaddr)))
    }
}

/// A section's address range; empty when its size overflows.
fn svma(s: &object::Section<'_, '_>) -> Range<u64> {
    let start = s.address();
    start..start.checked_add(s.size()).unwrap_or(start)
}

/// A section's bytes in the file (decompressed when compressed), or
/// `None` when it has none: `SHT_NOBITS` (a separate debug file keeps
/// only the headers of the loaded sections), empty, or a file range that
/// does not lie inside the file. Ranges come from the section header,
/// checked against the backing's length, never from pointer arithmetic.
fn file_section(backing: &Arc<Backing>, s: &object::Section<'_, '_>) -> Option<Bytes> {
    let (off, size) = s.file_range()?;
    let start = usize::try_from(off).ok()?;
    let end = start.checked_add(usize::try_from(size).ok()?)?;
    if start == end || end > backing.bytes().len() {
        return None;
    }
    let bytes = match s.compressed_file_range().ok()?.format {
        object::CompressionFormat::None => Bytes {
            backing: backing.clone(),
            range: start..end,
        },
        _ => {
            let d = s.uncompressed_data().ok()?.into_owned();
            let len = d.len();
            Bytes {
                backing: Arc::new(Backing::Owned(d)),
                range: 0..len,
            }
        }
    };
    (!bytes.is_empty()).then_some(bytes)
}

/// Where the distribution keeps separate debug files by build-id.
const DEBUG_DIR: &str = "/usr/lib/debug/.build-id";

/// `.debug_frame` of the distribution's separate debug file
/// (`DIR/xx/yyyy.debug`, `DIR` being `/usr/lib/debug/.build-id`), for
/// binaries that keep their CFI only there.
fn debug_frame_of_debug_file(dir: &str, build_id: &[u8]) -> Option<Bytes> {
    if build_id.len() < 2 {
        return None;
    }
    let hex: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
    let path = Path::new(dir)
        .join(&hex[..2])
        .join(format!("{}.debug", &hex[2..]));
    let t = Tables::open_in(&path, Some(build_id), None).ok()?;
    t.sections.debug_frame.or(t.sections.eh_frame)
}

#[cfg(test)]
mod tests;
