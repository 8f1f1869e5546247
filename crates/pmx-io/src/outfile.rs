//! [`OutFile`]: one output file, written by the crate's rules (see the
//! crate's page): a temporary file renamed into place at
//! [`OutFile::commit`] for a regular file, the thing itself for a FIFO or
//! a device, standard output for `-`. Dropping an uncommitted `OutFile`
//! removes its temporary file, so a failed run leaves the old file as it
//! was.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, IsTerminal, Seek, SeekFrom, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How to open an output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Keep a non-empty regular file that is replaced as `PATH.old`
    /// (perf record's rule; an older `PATH.old` is overwritten).
    pub backup_old: bool,
    /// Append to a regular file in place instead of replacing it (`stat
    /// --append`); a missing file is created.
    pub append: bool,
}

/// Where the bytes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `-`: standard output.
    Stdout,
    /// The path itself, opened for writing: a FIFO, a device,
    /// `/dev/stdout`, `/proc/self/fd/N`, or a file appended to.
    InPlace,
    /// A temporary file in the target's directory, renamed onto it by
    /// [`OutFile::commit`].
    Replace,
}

/// An output file being written; [`Write`] and [`Seek`] (seeking fails
/// on standard output and on pipes: see [`OutFile::seekable`]).
#[derive(Debug)]
pub struct OutFile {
    file: File,
    /// The path as the user gave it (what errors show).
    shown: PathBuf,
    mode: Mode,
    /// The file a temporary one replaces (symbolic links followed).
    target: PathBuf,
    /// The temporary file, until committed or dropped.
    temp: Option<PathBuf>,
    /// Where the old file goes at commit.
    backup: Option<PathBuf>,
    seekable: bool,
    written: u64,
    /// Truncate the file (written in place) before the first byte.
    truncate: bool,
}

/// Distinct temporary names within this process.
static SERIAL: AtomicU64 = AtomicU64::new(0);

/// Symbolic links followed at most (the kernel's limit).
const MAX_LINKS: usize = 40;

/// `err` with `path: ` in front (its kind kept).
fn at(path: &Path, err: io::Error) -> io::Error {
    io::Error::new(err.kind(), format!("{}: {err}", shown(path)))
}

/// The path as messages show it: `standard output` for `-`.
fn shown(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "standard output".to_string()
    } else {
        path.display().to_string()
    }
}

/// A path the kernel resolves by itself (`/proc/self/fd/N` points at an
/// open file, not at a name): never followed, never replaced.
fn is_magic(p: &Path) -> bool {
    p.starts_with("/proc") || p.starts_with("/dev/fd")
}

/// `path` with its symbolic links followed to the last one's target
/// (which may not exist yet); whether it ended at a magic path.
fn resolve(path: &Path) -> io::Result<(PathBuf, bool)> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        if is_magic(&p) {
            return Ok((p, true));
        }
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let t = fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if t.is_relative() => dir.join(t),
                    _ => t,
                };
            }
            _ => return Ok((p, false)),
        }
    }
    Err(io::Error::from_raw_os_error(libc::ELOOP))
}

/// The directory a temporary file for `target` goes in.
fn dir_of(target: &Path) -> &Path {
    match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

impl OutFile {
    /// Open `path` for writing by the crate's rules. Errors name `path`.
    pub fn create(path: &Path, opts: Options) -> io::Result<OutFile> {
        if path.as_os_str() == "-" {
            return OutFile::stdout();
        }
        let (target, magic) = resolve(path).map_err(|e| at(path, e))?;
        let meta = match fs::metadata(&target) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(at(path, e)),
        };
        if meta.as_ref().is_some_and(Metadata::is_dir) {
            return Err(at(path, io::Error::from_raw_os_error(libc::EISDIR)));
        }
        let regular = meta.as_ref().is_none_or(Metadata::is_file);
        if magic || opts.append || !regular {
            // Append to a regular file; a device or FIFO is never
            // truncated (it has nothing to lose, and O_TRUNC on some
            // devices means something else).
            let file = OpenOptions::new()
                .write(true)
                .append(regular)
                .create(opts.append && !magic)
                .open(&target)
                .map_err(|e| at(path, e))?;
            return Ok(OutFile::new(file, path, Mode::InPlace, target));
        }
        let (file, temp) = match temp_beside(&target, path) {
            Ok(ft) => ft,
            // A file we may write in a directory we may not: written in
            // place rather than refused, truncated only when the first
            // bytes come (a run that fails before leaves it whole).
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied && meta.is_some() => {
                let file = OpenOptions::new().write(true).open(&target);
                let mut out = OutFile::new(file.map_err(|_| e)?, path, Mode::InPlace, target);
                out.truncate = true;
                return Ok(out);
            }
            Err(e) => return Err(e),
        };
        if let Some(m) = &meta {
            // The new file keeps the old one's permissions and owner
            // (chown works for root only: best effort).
            let _ = file.set_permissions(fs::Permissions::from_mode(m.mode() & 0o7777));
            let _ = std::os::unix::fs::fchown(&file, Some(m.uid()), Some(m.gid()));
        }
        let backup = (opts.backup_old && meta.is_some_and(|m| m.len() > 0)).then(|| {
            let mut b = target.clone().into_os_string();
            b.push(".old");
            PathBuf::from(b)
        });
        let mut out = OutFile::new(file, path, Mode::Replace, target);
        out.temp = Some(temp);
        out.backup = backup;
        Ok(out)
    }

    /// Standard output (`-`), through a duplicate of descriptor 1 (what
    /// Rust's `stdout` buffered so far is flushed first).
    pub fn stdout() -> io::Result<OutFile> {
        let _ = io::stdout().flush();
        let fd = io::stdout().as_fd().try_clone_to_owned();
        let file = File::from(fd.map_err(|e| at(Path::new("-"), e))?);
        let mut out = OutFile::new(file, Path::new("-"), Mode::Stdout, PathBuf::from("-"));
        out.seekable = false;
        Ok(out)
    }

    fn new(mut file: File, shown: &Path, mode: Mode, target: PathBuf) -> OutFile {
        let seekable = file.stream_position().is_ok();
        OutFile {
            file,
            shown: shown.to_path_buf(),
            mode,
            target,
            temp: None,
            backup: None,
            seekable,
            written: 0,
            truncate: false,
        }
    }

    /// The path as given (`-` for standard output).
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// Where the bytes go.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Whether [`Seek`] works: false for standard output (even when it
    /// is a file: `-` means a stream), a FIFO, a socket, a terminal.
    pub fn seekable(&self) -> bool {
        self.seekable
    }

    /// Whether the output is a terminal.
    pub fn is_terminal(&self) -> bool {
        self.file.is_terminal()
    }

    /// Where the file replaced at [`OutFile::commit`] will be kept.
    pub fn backup(&self) -> Option<&Path> {
        self.backup.as_deref()
    }

    /// The output's size: the file's length for a file, else the bytes
    /// written.
    pub fn size(&self) -> u64 {
        match self.file.metadata() {
            Ok(m) if m.is_file() && self.mode != Mode::Stdout => m.len(),
            _ => self.written,
        }
    }

    /// Finish: flush, and for a temporary file, keep the old file as
    /// `.old` if asked, then rename the new one onto the path.
    pub fn commit(mut self) -> io::Result<()> {
        self.truncate_now()?;
        self.file.flush().map_err(|e| at(&self.shown, e))?;
        let Some(temp) = self.temp.clone() else {
            return Ok(());
        };
        if let Some(b) = &self.backup {
            match fs::rename(&self.target, b) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    let why = format!("cannot keep the previous file as {}: {e}", b.display());
                    return Err(at(&self.shown, io::Error::new(e.kind(), why)));
                }
            }
        }
        if let Err(e) = fs::rename(&temp, &self.target) {
            if let Some(b) = &self.backup {
                let _ = fs::rename(b, &self.target);
            }
            return Err(at(&self.shown, e));
        }
        self.temp = None;
        Ok(())
    }
}

impl OutFile {
    /// The truncation put off until the first bytes.
    fn truncate_now(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.truncate) {
            self.file.set_len(0).map_err(|e| at(&self.shown, e))?;
        }
        Ok(())
    }
}

/// A new temporary file in `target`'s directory (`.NAME.pmx-PID-N.tmp`).
fn temp_beside(target: &Path, shown: &Path) -> io::Result<(File, PathBuf)> {
    let dir = dir_of(target);
    let name = target
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    loop {
        let n = SERIAL.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.pmx-{}-{n}.tmp", std::process::id()));
        let open = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .open(&temp);
        match open {
            Ok(f) => return Ok((f, temp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1 << 20 => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound && !dir.is_dir() => {
                let why = format!("the directory {} does not exist", dir.display());
                return Err(at(shown, io::Error::new(e.kind(), why)));
            }
            Err(e) => return Err(at(shown, e)),
        }
    }
}

impl Write for OutFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.truncate_now()?;
        match self.file.write(buf) {
            Ok(n) => {
                self.written += n as u64;
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            Err(e) => Err(at(&self.shown, e)),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush().map_err(|e| at(&self.shown, e))
    }
}

impl Seek for OutFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        if !self.seekable {
            let e = io::Error::from_raw_os_error(libc::ESPIPE);
            return Err(at(&self.shown, e));
        }
        self.file.seek(pos).map_err(|e| at(&self.shown, e))
    }
}

impl Drop for OutFile {
    fn drop(&mut self) {
        if let Some(t) = self.temp.take() {
            let _ = fs::remove_file(t);
        }
    }
}

/// `std::fs::write` by the rules: `bytes` to `path` (`-`: standard
/// output), in place only once complete.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut out = OutFile::create(path, Options::default())?;
    out.write_all(bytes)?;
    out.commit()
}

#[cfg(test)]
mod tests;
