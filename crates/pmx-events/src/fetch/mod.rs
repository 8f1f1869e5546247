//! Downloading event tables: Intel's perfmon tables, and Linux perf's x86
//! tables (the AMD Zen events and metrics, [`perf`]).
//!
//! Intel publishes its event tables in the `intel/perfmon` repository: a
//! `mapfile.csv` at the top names, for each CPU key pattern
//! (`GenuineIntel-6-55-[01234]`), the JSON files that describe it
//! (`/SKX/events/skylakex_core.json`, the uncore files, the metrics). [`fetch`]
//! downloads `mapfile.csv` and the files one CPU needs (or every file, with
//! [`Selection::All`]) into an events directory laid out like the repository,
//! which is what [`crate::intel_json`] reads. The rows are chosen by
//! [`Mapfile::select`], the loader's own rule, so what is fetched is what
//! is loaded (plus the `metrics` files, kept for later use); a key without
//! a stepping takes the rows of every stepping.
//!
//! ## Atomic update
//!
//! Nothing is written under a final name until every file has arrived whole:
//!
//! 1. each file is streamed into a temporary file in the directory it will
//!    end up in (`.skylakex_core.json.pmx-tmp-<pid>-<n>`), its length checked
//!    against `Content-Length`, then flushed and `fsync`ed;
//! 2. any failure (an HTTP error, a dropped connection, a short body, a full
//!    disk, an interrupt seen through [`FetchOptions::cancel`]) removes every
//!    temporary file and leaves the directory as it was, previous copies
//!    included;
//! 3. only when all files are staged are they renamed over their final names
//!    (`rename(2)` replaces atomically), `mapfile.csv` last, and the
//!    directories `fsync`ed.
//!
//! A process killed outright can leave temporary files behind, never a
//! partial file under a final name; the next fetch removes temporary files
//! whose process is gone.
//!
//! Linux perf's tables ([`Tables::Perf`]) go through the same machinery:
//! `mapfile.csv` first, then the files of the directory it names for the
//! CPU, listed by the origin ([`perf`]), staged and committed the same way
//! under `x86/` in the events directory.

pub mod perf;

pub use perf::{listing_url, parse_listing, PERF_BASE_URL};

use crate::intel_json::{MapRow, Mapfile};
use crate::LoadError;
use pmx_model::cpu::{CpuId, Vendor};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Where Intel's tables are fetched from by default.
pub const DEFAULT_BASE_URL: &str = "https://raw.githubusercontent.com/intel/perfmon/main/";

/// The index file at the top of the repository.
pub const MAPFILE: &str = "mapfile.csv";

/// The largest file accepted (Intel's largest tables are a few MiB).
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// The marker in temporary file names.
const TMP_MARK: &str = ".pmx-tmp-";

pub use crate::relative_path;

/// Where the tables come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// An HTTP(S) base URL, ending in `/`; file paths are appended to it.
    Http(String),
    /// A local copy of the repository (a directory with `mapfile.csv`).
    Dir(PathBuf),
}

impl Origin {
    /// Parse `--from`: an `http://` or `https://` base URL (a missing final
    /// `/` is added), a `file://` URL, or a local directory.
    pub fn parse(s: &str) -> Result<Origin, String> {
        let t = s.trim();
        let lower = t.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            let rest = &t[t.find("://").map_or(0, |i| i + 3)..];
            if rest.is_empty() || rest.starts_with('/') {
                return Err(format!("{t:?}: no host in the URL"));
            }
            let mut base = t.to_string();
            if !base.ends_with('/') {
                base.push('/');
            }
            return Ok(Origin::Http(base));
        }
        let path = match t.strip_prefix("file://") {
            Some(p) => PathBuf::from(p),
            None if t.contains("://") => {
                return Err(format!("{t:?}: only http://, https:// and file:// URLs (or a local directory) are supported"))
            }
            None => PathBuf::from(t),
        };
        if path.is_dir() {
            Ok(Origin::Dir(path))
        } else {
            Err(format!(
                "{t:?} is neither an http(s):// URL nor a directory (give the base of Intel's perfmon repository, e.g. {DEFAULT_BASE_URL})"
            ))
        }
    }

    /// Where a repository file is, for messages and downloads.
    pub fn locate(&self, rel: &str) -> String {
        match self {
            Origin::Http(base) => format!("{base}{rel}"),
            Origin::Dir(dir) => dir.join(rel).display().to_string(),
        }
    }

    /// The origin as given, for messages.
    pub fn describe(&self) -> String {
        match self {
            Origin::Http(base) => base.clone(),
            Origin::Dir(dir) => dir.display().to_string(),
        }
    }

    /// Is this an HTTP origin on the loopback interface (which no proxy
    /// should be asked for)?
    fn is_loopback(&self) -> bool {
        let Origin::Http(base) = self else {
            return false;
        };
        let rest = &base[base.find("://").map_or(0, |i| i + 3)..];
        let authority = rest.split('/').next().unwrap_or("");
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = if host.starts_with('[') {
            host.split(']').next().unwrap_or("").trim_start_matches('[')
        } else {
            host.split(':').next().unwrap_or("")
        };
        host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

/// Which tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tables {
    /// Intel's perfmon repository (`mapfile.csv` naming JSON files).
    Intel,
    /// Linux perf's `tools/perf/pmu-events/arch/x86/` (`mapfile.csv`
    /// naming one directory per microarchitecture): AMD's CPUs.
    Perf,
}

impl Tables {
    /// The tables pmx reads for a CPU of `vendor`: Intel's for Intel, perf's
    /// for the others (AMD, Hygon).
    pub fn for_vendor(vendor: &Vendor) -> Tables {
        if *vendor == Vendor::Intel {
            Tables::Intel
        } else {
            Tables::Perf
        }
    }

    /// Where they are fetched from by default.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Tables::Intel => DEFAULT_BASE_URL,
            Tables::Perf => PERF_BASE_URL,
        }
    }

    /// Their name in messages.
    pub fn describe(self) -> &'static str {
        match self {
            Tables::Intel => "Intel's perfmon tables",
            Tables::Perf => "Linux perf's x86 event tables",
        }
    }

    /// The flag value (`intel`, `perf`).
    pub fn cli_name(self) -> &'static str {
        match self {
            Tables::Intel => "intel",
            Tables::Perf => "perf",
        }
    }
}

/// Which files to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// The files of the rows whose pattern selects this CPU (as
    /// [`Mapfile::select`] decides); for a key without a stepping, the rows
    /// of every stepping.
    Cpu(CpuId),
    /// Every file the mapfile lists (perf's tables: every directory of a
    /// CPU that is not Intel's).
    All,
}

/// What [`fetch`] does.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// Which tables.
    pub tables: Tables,
    /// Where from: for [`Tables::Perf`], the base of perf's `x86/`
    /// directory.
    pub origin: Origin,
    /// The events directory to fill (created when missing).
    pub dest: PathBuf,
    /// Which files.
    pub selection: Selection,
    /// Set (from a signal handler, say) to stop: the fetch then fails with
    /// [`FetchError::Interrupted`] and writes nothing.
    pub cancel: Option<&'static AtomicBool>,
}

/// Told how downloads progress; every method has an empty default.
pub trait Progress {
    /// A file starts: `index` counts from 1 of `count` files (`count` is
    /// `None` while `mapfile.csv` downloads, before the list is known);
    /// `size` is the announced length when there is one.
    fn start(
        &mut self,
        rel: &str,
        location: &str,
        index: usize,
        count: Option<usize>,
        size: Option<u64>,
    ) {
        let _ = (rel, location, index, count, size);
    }
    /// `done` bytes of the current file have arrived.
    fn advance(&mut self, done: u64) {
        let _ = done;
    }
    /// The current file is complete and staged.
    fn finish(&mut self, rel: &str, bytes: u64) {
        let _ = (rel, bytes);
    }
    /// Everything is staged; the files are being moved into place.
    fn committing(&mut self) {}
    /// The fetch failed; whatever is drawn should be cleared.
    fn failed(&mut self) {}
}

/// A [`Progress`] that shows nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl Progress for NoProgress {}

/// One file written by [`fetch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedFile {
    /// The path relative to the events directory
    /// (`SKX/events/skylakex_core.json`, `x86/amdzen5/cache.json`).
    pub rel: String,
    /// The path written.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// What it holds: the mapfile's `EventType` (`core`, `metrics`, …), or
    /// `index` for `mapfile.csv`; several types are joined with `, `.
    pub kind: String,
    /// The mapfile's `Version` for it (empty for `mapfile.csv`).
    pub version: String,
}

/// What [`fetch`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchReport {
    /// Which tables.
    pub tables: Tables,
    /// Where the files went.
    pub dest: PathBuf,
    /// Where they came from.
    pub origin: Origin,
    /// The mapfile patterns that selected the files (empty for
    /// [`Selection::All`]).
    pub patterns: Vec<String>,
    /// The files, `mapfile.csv` first.
    pub files: Vec<FetchedFile>,
    /// Files removed from a fetched directory because the new list no
    /// longer has them (perf's tables), relative to the events directory.
    pub removed: Vec<String>,
}

impl FetchReport {
    /// The total size of the files.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }
}

/// Why a fetch failed. In every case no file under its final name has
/// changed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// Intel's tables asked for a CPU that is not Intel's.
    #[error(
        "{cpu} is {vendor_name} CPU: Intel's perfmon tables only cover Intel CPUs \
         (AMD's events come from Linux perf's tables: drop --tables intel, perf's are the default for AMD CPUs)",
        vendor_name = vendor_article(&cpu.vendor)
    )]
    NotIntel {
        /// The CPU asked for.
        cpu: CpuId,
    },
    /// perf's tables asked for an Intel CPU.
    #[error(
        "{cpu} is an Intel CPU: pmx reads Intel CPUs' events from Intel's perfmon tables, \
         not perf's copy (drop --tables perf: Intel's are the default for Intel CPUs)"
    )]
    IntelCpu {
        /// The CPU asked for.
        cpu: CpuId,
    },
    /// A directory listing (perf's tables) names no table.
    #[error("{location}: not a usable directory listing: {message} (is --from the base of perf's x86 tables, like {PERF_BASE_URL}?)")]
    BadListing {
        /// The URL or path.
        location: String,
        /// What is wrong.
        message: String,
    },
    /// The server answered with an error status.
    #[error("GET {url}: HTTP {status}{}: {hint}", reason.as_deref().map(|r| format!(" {r}")).unwrap_or_default())]
    Http {
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The status's reason phrase, when known.
        reason: Option<String>,
        /// What to do about it.
        hint: String,
    },
    /// The request or the body failed on the network.
    #[error("GET {url}: network error: {message} (check the connection, or HTTPS_PROXY if you need a proxy; then run the command again)")]
    Network {
        /// The URL.
        url: String,
        /// What happened.
        message: String,
    },
    /// The body ended before its announced length.
    #[error("GET {url}: the connection closed after {got} of {expected} bytes; nothing was replaced — run the command again")]
    Truncated {
        /// The URL.
        url: String,
        /// The announced length (`Content-Length`).
        expected: u64,
        /// What arrived.
        got: u64,
    },
    /// A file is larger than [`MAX_FILE_BYTES`].
    #[error(
        "{location}: larger than {limit} bytes; refusing it (is --from the perfmon repository?)"
    )]
    TooLarge {
        /// The URL or path.
        location: String,
        /// The limit.
        limit: u64,
    },
    /// `mapfile.csv` is not what it should be.
    #[error("{location}: not a usable perfmon mapfile.csv: {message} (is --from the base of Intel's perfmon repository, like {DEFAULT_BASE_URL}?)")]
    BadMapfile {
        /// The URL or path.
        location: String,
        /// What is wrong.
        message: String,
    },
    /// No mapfile row covers the CPU.
    #[error(
        "{cpu}: {location} lists no tables for this CPU (Intel has not published them, or the key is mistyped); \
         check the key, or use --all to fetch every table; nothing was written"
    )]
    NoMatch {
        /// The CPU.
        cpu: CpuId,
        /// The mapfile's URL or path.
        location: String,
    },
    /// Reading a local origin file failed.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What happened.
        source: io::Error,
    },
    /// Writing into the events directory failed.
    #[error("{action} {path}: {source} (is the directory writable, with space left? another can be chosen with --events-dir)")]
    Write {
        /// What was being done (`creating`, `writing`, `renaming to`, …).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// What happened.
        source: io::Error,
    },
    /// [`FetchOptions::cancel`] was set.
    #[error("interrupted; nothing was replaced")]
    Interrupted,
}

fn vendor_article(v: &Vendor) -> String {
    match v {
        Vendor::Amd => "an AMD".to_string(),
        Vendor::Hygon => "a Hygon".to_string(),
        other => format!("a {} (not Intel)", other.name()),
    }
}

/// The advice for an HTTP status.
fn status_hint(status: u16) -> String {
    match status {
        404 | 410 => format!(
            "no such file there; check --from (the default is {DEFAULT_BASE_URL}) — \
             or the mapfile names a file the repository no longer has"
        ),
        401 | 403 => {
            "the server refused access; check --from, or wait if this is a rate limit".to_string()
        }
        429 => "rate-limited by the server; wait a while and run the command again".to_string(),
        500..=599 => "the server failed; run the command again later".to_string(),
        _ => "unexpected answer; check --from".to_string(),
    }
}

/// A file being written under a temporary name; removed on drop unless
/// renamed into place.
struct Staged {
    tmp: PathBuf,
    dest: PathBuf,
    committed: bool,
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Directories this fetch created; removed (when still empty) on failure.
#[derive(Default)]
struct CreatedDirs {
    /// Directories created, parents first.
    dirs: Vec<PathBuf>,
    /// Directories already made ready (created or swept).
    ready: Vec<PathBuf>,
    /// Set on success: keep the directories.
    keep: bool,
}

impl Drop for CreatedDirs {
    fn drop(&mut self) {
        if !self.keep {
            for d in self.dirs.iter().rev() {
                let _ = fs::remove_dir(d);
            }
        }
    }
}

impl CreatedDirs {
    /// `create_dir_all`, remembering which directories were new; an
    /// existing directory is swept of stale temporary files once.
    fn ensure(&mut self, dir: &Path) -> Result<(), FetchError> {
        if self.ready.iter().any(|d| d == dir) {
            return Ok(());
        }
        let mut missing = Vec::new();
        let mut d = Some(dir);
        while let Some(p) = d {
            if p.as_os_str().is_empty() || p.is_dir() {
                break;
            }
            missing.push(p.to_path_buf());
            d = p.parent();
        }
        fs::create_dir_all(dir).map_err(|source| FetchError::Write {
            action: "creating directory",
            path: dir.to_path_buf(),
            source,
        })?;
        if missing.is_empty() {
            sweep_stale_temps(dir);
        }
        missing.reverse();
        self.dirs.extend(missing);
        self.ready.push(dir.to_path_buf());
        Ok(())
    }
}

/// Remove temporary files left in `dir` by fetches whose process is gone
/// (killed before they could clean up). Only on systems with `/proc`.
fn sweep_stale_temps(dir: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some((_, tail)) = name.split_once(TMP_MARK) else {
            continue;
        };
        if !name.starts_with('.') {
            continue;
        }
        let Some(pid) = tail.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_file(e.path());
        }
    }
}

static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// The fetch in progress.
struct Run<'a> {
    opts: &'a FetchOptions,
    /// Prepended to every path in the events directory (`x86/` for perf's
    /// tables; origin paths stay relative to the origin).
    prefix: &'static str,
    agent: Option<ureq::Agent>,
    progress: &'a mut dyn Progress,
    dirs: CreatedDirs,
}

impl Run<'_> {
    fn cancelled(&self) -> bool {
        self.opts.cancel.is_some_and(|c| c.load(Ordering::SeqCst))
    }

    fn check_cancel(&self) -> Result<(), FetchError> {
        if self.cancelled() {
            Err(FetchError::Interrupted)
        } else {
            Ok(())
        }
    }

    /// Download or copy `rel` into a staged temporary file beside its final
    /// place.
    fn stage(
        &mut self,
        rel: &str,
        index: usize,
        count: Option<usize>,
    ) -> Result<(Staged, u64), FetchError> {
        self.check_cancel()?;
        let dest = self.opts.dest.join(format!("{}{rel}", self.prefix));
        let parent = dest.parent().unwrap_or(&self.opts.dest).to_path_buf();
        self.dirs.ensure(&parent)?;
        let base = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let seq = TMP_SEQ.fetch_add(1, Ordering::Relaxed);
        let tmp = parent.join(format!(".{base}{TMP_MARK}{}-{seq}", std::process::id()));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|source| FetchError::Write {
                action: "creating",
                path: tmp.clone(),
                source,
            })?;
        let staged = Staged {
            tmp,
            dest,
            committed: false,
        };
        let location = self.opts.origin.locate(rel);
        let (mut body, size): (Box<dyn Read>, Option<u64>) = self.open(rel, &location)?;
        if size.is_some_and(|s| s > MAX_FILE_BYTES) {
            return Err(FetchError::TooLarge {
                location,
                limit: MAX_FILE_BYTES,
            });
        }
        self.progress.start(rel, &location, index, count, size);
        let mut out = io::BufWriter::with_capacity(1 << 16, file);
        let mut buf = vec![0u8; 1 << 16];
        let mut got: u64 = 0;
        loop {
            self.check_cancel()?;
            let n = match body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted && !self.cancelled() => continue,
                Err(e) => {
                    self.check_cancel()?;
                    return Err(self.read_error(&location, e, size, got));
                }
            };
            got += n as u64;
            if got > MAX_FILE_BYTES {
                return Err(FetchError::TooLarge {
                    location,
                    limit: MAX_FILE_BYTES,
                });
            }
            out.write_all(&buf[..n])
                .map_err(|source| FetchError::Write {
                    action: "writing",
                    path: staged.tmp.clone(),
                    source,
                })?;
            self.progress.advance(got);
        }
        if let Some(expected) = size {
            if got != expected {
                return Err(FetchError::Truncated {
                    url: location,
                    expected,
                    got,
                });
            }
        }
        let file = out.into_inner().map_err(|e| FetchError::Write {
            action: "writing",
            path: staged.tmp.clone(),
            source: e.into_error(),
        })?;
        file.sync_all().map_err(|source| FetchError::Write {
            action: "syncing",
            path: staged.tmp.clone(),
            source,
        })?;
        self.progress.finish(rel, got);
        Ok((staged, got))
    }

    /// The body at `url` (an HTTP origin's listing) as text, at most
    /// `limit` bytes.
    fn get_text(&mut self, url: &str, limit: u64) -> Result<String, FetchError> {
        self.check_cancel()?;
        let (body, _) = self.open("", url)?;
        let mut bytes = Vec::new();
        body.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| FetchError::Network {
                url: url.to_string(),
                message: e.to_string(),
            })?;
        if bytes.len() as u64 > limit {
            return Err(FetchError::TooLarge {
                location: url.to_string(),
                limit,
            });
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The body of `rel` and its announced length.
    fn open(
        &mut self,
        rel: &str,
        location: &str,
    ) -> Result<(Box<dyn Read>, Option<u64>), FetchError> {
        match &self.opts.origin {
            Origin::Dir(dir) => {
                let path = dir.join(rel);
                let f = File::open(&path).map_err(|source| FetchError::Read {
                    path: path.clone(),
                    source,
                })?;
                let len = f
                    .metadata()
                    .map_err(|source| FetchError::Read {
                        path: path.clone(),
                        source,
                    })?
                    .len();
                Ok((Box::new(f), Some(len)))
            }
            Origin::Http(_) => {
                let loopback = self.opts.origin.is_loopback();
                let agent = self.agent.get_or_insert_with(|| make_agent(loopback));
                let resp = match agent.get(location).call() {
                    Ok(r) => r,
                    Err(e) => {
                        self.check_cancel()?;
                        return Err(FetchError::Network {
                            url: location.to_string(),
                            message: describe_ureq(&e),
                        });
                    }
                };
                let status = resp.status();
                if status.as_u16() != 200 {
                    return Err(FetchError::Http {
                        url: location.to_string(),
                        status: status.as_u16(),
                        reason: status.canonical_reason().map(str::to_string),
                        hint: status_hint(status.as_u16()),
                    });
                }
                let identity = resp
                    .headers()
                    .get("content-encoding")
                    .and_then(|v| v.to_str().ok())
                    .is_none_or(|v| v.trim().eq_ignore_ascii_case("identity"));
                let size = if identity {
                    resp.body().content_length()
                } else {
                    None
                };
                let (_, body) = resp.into_parts();
                Ok((Box::new(body.into_reader()), size))
            }
        }
    }

    fn read_error(&self, location: &str, e: io::Error, size: Option<u64>, got: u64) -> FetchError {
        match (&self.opts.origin, size) {
            (Origin::Dir(dir), _) => FetchError::Read {
                path: dir.join(location),
                source: e,
            },
            (Origin::Http(_), Some(expected)) if e.kind() == io::ErrorKind::UnexpectedEof => {
                FetchError::Truncated {
                    url: location.to_string(),
                    expected,
                    got,
                }
            }
            (Origin::Http(_), _) => FetchError::Network {
                url: location.to_string(),
                message: format!("{e} (after {got} bytes of the body)"),
            },
        }
    }
}

fn make_agent(loopback: bool) -> ureq::Agent {
    let mut cfg = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_recv_response(Some(Duration::from_secs(60)))
        .timeout_per_read(Some(Duration::from_secs(60)))
        .user_agent(format!("pmx/{}", env!("CARGO_PKG_VERSION")));
    if loopback {
        cfg = cfg.proxy(None);
    }
    cfg.build().into()
}

/// A ureq error in words, with its causes.
fn describe_ureq(e: &ureq::Error) -> String {
    let mut msg = match e {
        ureq::Error::HostNotFound => "host not found (DNS lookup failed)".to_string(),
        ureq::Error::ConnectionFailed => "could not connect".to_string(),
        ureq::Error::Timeout(t) => format!("timed out ({t})"),
        other => other.to_string(),
    };
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        let s_text = s.to_string();
        if !msg.contains(&s_text) {
            msg.push_str(": ");
            msg.push_str(&s_text);
        }
        src = s.source();
    }
    msg
}

/// Fetch `mapfile.csv` and the selected tables into `opts.dest`, atomically
/// (see the module documentation): on error nothing under a final name has
/// changed and no temporary file is left.
pub fn fetch(opts: &FetchOptions, progress: &mut dyn Progress) -> Result<FetchReport, FetchError> {
    if let Selection::Cpu(cpu) = &opts.selection {
        match opts.tables {
            Tables::Intel if cpu.vendor != Vendor::Intel => {
                return Err(FetchError::NotIntel { cpu: cpu.clone() });
            }
            Tables::Perf if cpu.vendor == Vendor::Intel => {
                return Err(FetchError::IntelCpu { cpu: cpu.clone() });
            }
            _ => {}
        }
    }
    let mut run = Run {
        opts,
        prefix: match opts.tables {
            Tables::Intel => "",
            Tables::Perf => perf::DEST_PREFIX,
        },
        agent: None,
        progress,
        dirs: CreatedDirs::default(),
    };
    let result = fetch_inner(&mut run);
    if result.is_err() {
        run.progress.failed();
    } else {
        run.dirs.keep = true;
    }
    result
}

/// (path relative to the origin, kinds, version), in mapfile order, each
/// file once.
type FileList = Vec<(String, Vec<String>, String)>;

/// Intel's mapfile: the files of the rows chosen for the selection, and the
/// patterns of those rows (for one CPU).
fn intel_files(
    opts: &FetchOptions,
    text: &str,
    map_location: &str,
) -> Result<(Vec<String>, FileList), FetchError> {
    let mapfile = Mapfile::parse(text, Path::new(map_location)).map_err(|e| {
        let message = match e {
            LoadError::Format { message, .. } => message,
            other => other.to_string(),
        };
        FetchError::BadMapfile {
            location: map_location.to_string(),
            message,
        }
    })?;
    let chosen: Vec<&MapRow> = match &opts.selection {
        Selection::All => mapfile.rows().iter().collect(),
        Selection::Cpu(cpu) => {
            let mut chosen = mapfile.select(cpu);
            if cpu.stepping.is_none() {
                // No stepping given: take the rows of every stepping, so
                // whichever part it is, its tables are there.
                let candidates = mapfile.stepping_candidates(cpu);
                for row in mapfile.rows() {
                    if candidates.contains(&row.family_model) && !chosen.contains(&row) {
                        chosen.push(row);
                    }
                }
            }
            chosen
        }
    };
    if chosen.is_empty() {
        return Err(no_match(opts, map_location));
    }
    let mut patterns: Vec<String> = Vec::new();
    let mut files: FileList = Vec::new();
    for row in &chosen {
        let rel = relative_path(&row.filename).map_err(|message| FetchError::BadMapfile {
            location: map_location.to_string(),
            message,
        })?;
        if rel.eq_ignore_ascii_case(MAPFILE) {
            continue;
        }
        if matches!(opts.selection, Selection::Cpu(_)) && !patterns.contains(&row.family_model) {
            patterns.push(row.family_model.clone());
        }
        match files.iter_mut().find(|(r, _, _)| *r == rel) {
            Some((_, kinds, _)) => {
                if !row.event_type.is_empty() && !kinds.contains(&row.event_type) {
                    kinds.push(row.event_type.clone());
                }
            }
            None => {
                let kinds = if row.event_type.is_empty() {
                    Vec::new()
                } else {
                    vec![row.event_type.clone()]
                };
                files.push((rel, kinds, row.version.clone()));
            }
        }
    }
    Ok((patterns, files))
}

/// No row for the selection.
fn no_match(opts: &FetchOptions, map_location: &str) -> FetchError {
    match &opts.selection {
        Selection::Cpu(cpu) => FetchError::NoMatch {
            cpu: cpu.clone(),
            location: map_location.to_string(),
        },
        Selection::All => FetchError::BadMapfile {
            location: map_location.to_string(),
            message: "it lists no files".into(),
        },
    }
}

/// perf's mapfile: every `.json` file of the directories chosen for the
/// selection, as the origin lists them; the directories' names.
fn perf_files(
    run: &mut Run<'_>,
    text: &str,
    map_location: &str,
) -> Result<(Vec<String>, FileList, Vec<String>), FetchError> {
    let dirs = perf::select_dirs(text, map_location, &run.opts.selection)?;
    if dirs.is_empty() {
        return Err(no_match(run.opts, map_location));
    }
    let mut patterns = Vec::new();
    let mut files: FileList = Vec::new();
    for (dir, pattern, kind, version) in &dirs {
        if matches!(run.opts.selection, Selection::Cpu(_)) {
            patterns.push(pattern.clone());
        }
        for name in perf::list_dir(run, dir)? {
            let kinds = if kind.is_empty() {
                Vec::new()
            } else {
                vec![kind.clone()]
            };
            files.push((format!("{dir}/{name}"), kinds, version.clone()));
        }
    }
    Ok((patterns, files, dirs.into_iter().map(|d| d.0).collect()))
}

fn fetch_inner(run: &mut Run<'_>) -> Result<FetchReport, FetchError> {
    let opts = run.opts;
    run.dirs.ensure(&opts.dest)?;
    let (map_staged, map_bytes) = run.stage(MAPFILE, 1, None)?;
    let map_location = opts.origin.locate(MAPFILE);
    let text = fs::read(&map_staged.tmp).map_err(|source| FetchError::Write {
        action: "reading back",
        path: map_staged.tmp.clone(),
        source,
    })?;
    let text = String::from_utf8(text).map_err(|_| FetchError::BadMapfile {
        location: map_location.clone(),
        message: "it is not UTF-8 text".to_string(),
    })?;
    let (patterns, files, perf_dirs) = match opts.tables {
        Tables::Intel => {
            let (p, f) = intel_files(opts, &text, &map_location)?;
            (p, f, Vec::new())
        }
        Tables::Perf => perf_files(run, &text, &map_location)?,
    };
    let count = files.len() + 1;
    let mut staged: Vec<(Staged, FetchedFile)> = Vec::with_capacity(count);
    for (i, (rel, kinds, version)) in files.iter().enumerate() {
        let (s, bytes) = run.stage(rel, i + 2, Some(count))?;
        let info = FetchedFile {
            rel: format!("{}{rel}", run.prefix),
            path: s.dest.clone(),
            bytes,
            kind: kinds.join(", "),
            version: version.clone(),
        };
        staged.push((s, info));
    }
    run.check_cancel()?;
    run.progress.committing();
    // Commit: the tables first, the index last, so a reader never sees a new
    // mapfile.csv naming a file that is not there yet.
    let map_info = FetchedFile {
        rel: format!("{}{MAPFILE}", run.prefix),
        path: map_staged.dest.clone(),
        bytes: map_bytes,
        kind: "index".to_string(),
        version: String::new(),
    };
    staged.push((map_staged, map_info));
    let mut synced: Vec<PathBuf> = Vec::new();
    for (s, _) in staged.iter_mut() {
        fs::rename(&s.tmp, &s.dest).map_err(|source| FetchError::Write {
            action: "renaming into place",
            path: s.dest.clone(),
            source,
        })?;
        s.committed = true;
        if let Some(p) = s.dest.parent() {
            if !synced.iter().any(|d| d == p) {
                synced.push(p.to_path_buf());
            }
        }
    }
    // Make the renames and new directories durable; failures here cannot
    // undo anything, so they are ignored.
    for d in run
        .dirs
        .dirs
        .iter()
        .filter_map(|d| d.parent())
        .chain(synced.iter().map(PathBuf::as_path))
    {
        if let Ok(f) = File::open(d) {
            let _ = f.sync_all();
        }
    }
    let mut out: Vec<FetchedFile> = Vec::with_capacity(count);
    let map = staged.pop().map(|(_, f)| f);
    out.extend(map);
    out.extend(staged.into_iter().map(|(_, f)| f));
    let removed = remove_stale(&opts.dest, run.prefix, &perf_dirs, &out);
    Ok(FetchReport {
        tables: opts.tables,
        dest: opts.dest.clone(),
        origin: opts.origin.clone(),
        patterns,
        files: out,
        removed,
    })
}

/// Remove the `.json` files of the fetched directories (perf's tables,
/// under `dest/prefix`) that the new list does not have, so that a table
/// perf renamed or dropped is not read beside its replacement. Best effort:
/// a file that cannot be removed stays.
fn remove_stale(
    dest: &Path,
    prefix: &str,
    dirs: &[String],
    fetched: &[FetchedFile],
) -> Vec<String> {
    let mut removed = Vec::new();
    for dir in dirs {
        let rel_dir = format!("{prefix}{dir}");
        let Ok(entries) = fs::read_dir(dest.join(&rel_dir)) else {
            continue;
        };
        let mut stale: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| n.to_ascii_lowercase().ends_with(".json") && !n.starts_with('.'))
            .map(|n| format!("{rel_dir}/{n}"))
            .filter(|rel| !fetched.iter().any(|f| f.rel == *rel))
            .collect();
        stale.sort();
        for rel in stale {
            if fs::remove_file(dest.join(&rel)).is_ok() {
                removed.push(rel);
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> CpuId {
        s.parse().unwrap()
    }

    #[test]
    fn relative_paths_stay_inside() {
        assert_eq!(
            relative_path("/SKX/events/skylakex_core.json").unwrap(),
            "SKX/events/skylakex_core.json"
        );
        for bad in [
            "",
            "/",
            "/../etc/passwd",
            "/SKX//x.json",
            "/SKX/./x.json",
            "/a b.json",
            "/a\\b.json",
        ] {
            assert!(relative_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn origins() {
        assert_eq!(
            Origin::parse("http://127.0.0.1:8/x").unwrap(),
            Origin::Http("http://127.0.0.1:8/x/".into())
        );
        assert!(Origin::parse("http://127.0.0.1:8/").unwrap().is_loopback());
        assert!(Origin::parse("http://[::1]:8/").unwrap().is_loopback());
        assert!(!Origin::parse(DEFAULT_BASE_URL).unwrap().is_loopback());
        assert!(Origin::parse("ftp://x/").is_err());
        assert!(Origin::parse("http://").is_err());
        assert!(Origin::parse("/nonexistent/dir/for/pmx").is_err());
        assert_eq!(
            Origin::parse("file:///").unwrap(),
            Origin::Dir(PathBuf::from("/"))
        );
    }

    #[test]
    fn not_intel_is_refused_before_anything() {
        let opts = FetchOptions {
            tables: Tables::Intel,
            origin: Origin::Http("http://127.0.0.1:1/".into()),
            dest: PathBuf::from("/nonexistent/pmx-test"),
            selection: Selection::Cpu(key("AuthenticAMD-25-11-1")),
            cancel: None,
        };
        let e = fetch(&opts, &mut NoProgress).unwrap_err();
        assert!(matches!(e, FetchError::NotIntel { .. }));
        assert!(e.to_string().contains("only cover Intel CPUs"), "{e}");
    }

    #[test]
    fn local_origin_fetches_and_failure_leaves_nothing() {
        let base = std::env::temp_dir().join(format!("pmx-fetch-unit-{}", std::process::id()));
        let src = base.join("src");
        let dst = base.join("dst");
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(src.join("SKX/events")).unwrap();
        fs::write(
            src.join(MAPFILE),
            "Family-model,Version,Filename,EventType\n\
             GenuineIntel-6-55-[01234],V1,/SKX/events/a.json,core\n\
             GenuineIntel-6-55-[01234],V1,/SKX/events/b.json,uncore\n\
             GenuineIntel-6-55-[56789ABCDEF],V1,/CLX/events/d.json,core\n\
             GenuineIntel-6-8F,V1,/SPR/events/c.json,core\n",
        )
        .unwrap();
        fs::write(src.join("SKX/events/a.json"), "[1]").unwrap();
        let opts = FetchOptions {
            tables: Tables::Intel,
            origin: Origin::Dir(src.clone()),
            dest: dst.clone(),
            selection: Selection::Cpu(key("GenuineIntel-6-55-4")),
            cancel: None,
        };
        // b.json is missing: the fetch fails and leaves nothing.
        assert!(matches!(
            fetch(&opts, &mut NoProgress),
            Err(FetchError::Read { .. })
        ));
        assert!(!dst.exists(), "{dst:?} was left behind");
        fs::write(src.join("SKX/events/b.json"), "[22]").unwrap();
        let report = fetch(&opts, &mut NoProgress).unwrap();
        let rels: Vec<&str> = report.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(
            rels,
            ["mapfile.csv", "SKX/events/a.json", "SKX/events/b.json"]
        );
        assert_eq!(
            fs::read_to_string(dst.join("SKX/events/b.json")).unwrap(),
            "[22]"
        );
        assert_eq!(report.patterns, ["GenuineIntel-6-55-[01234]"]);
        // No stepping: the rows of every stepping.
        fs::create_dir_all(src.join("CLX/events")).unwrap();
        fs::write(src.join("CLX/events/d.json"), "[4]").unwrap();
        let any_step = FetchOptions {
            selection: Selection::Cpu(key("GenuineIntel-6-55")),
            ..opts.clone()
        };
        let report = fetch(&any_step, &mut NoProgress).unwrap();
        let rels: Vec<&str> = report.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(
            rels,
            [
                "mapfile.csv",
                "SKX/events/a.json",
                "SKX/events/b.json",
                "CLX/events/d.json"
            ]
        );
        // A CPU the mapfile does not know.
        let opts2 = FetchOptions {
            selection: Selection::Cpu(key("GenuineIntel-6-1-1")),
            ..opts.clone()
        };
        assert!(matches!(
            fetch(&opts2, &mut NoProgress),
            Err(FetchError::NoMatch { .. })
        ));
        // Interrupted: nothing replaced.
        static STOP: AtomicBool = AtomicBool::new(true);
        fs::write(src.join("SKX/events/b.json"), "[333]").unwrap();
        let opts3 = FetchOptions {
            cancel: Some(&STOP),
            ..opts.clone()
        };
        assert!(matches!(
            fetch(&opts3, &mut NoProgress),
            Err(FetchError::Interrupted)
        ));
        assert_eq!(
            fs::read_to_string(dst.join("SKX/events/b.json")).unwrap(),
            "[22]"
        );
        let leftovers: Vec<_> = fs::read_dir(dst.join("SKX/events"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(TMP_MARK))
            .collect();
        assert!(leftovers.is_empty());
        let _ = fs::remove_dir_all(&base);
    }

    #[test]
    fn perf_tables_from_a_local_copy_replace_the_directory_whole() {
        let base = std::env::temp_dir().join(format!("pmx-fetch-perf-{}", std::process::id()));
        let (src, dst) = (base.join("x86"), base.join("dst"));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(src.join("amdzen5")).unwrap();
        fs::create_dir_all(src.join("amdzen4")).unwrap();
        fs::write(
            src.join(MAPFILE),
            "Family-model,Version,Filename,EventType\n\
             AuthenticAMD-25-[[:xdigit:]]+,v1,amdzen4,core\n\
             AuthenticAMD-26-[[:xdigit:]]+,v1,amdzen5,core\n",
        )
        .unwrap();
        fs::write(src.join("amdzen5/cache.json"), "[5]").unwrap();
        fs::write(src.join("amdzen5/pipeline.json"), "[55]").unwrap();
        fs::write(src.join("amdzen5/README"), "not a table").unwrap();
        fs::write(src.join("amdzen4/cache.json"), "[4]").unwrap();
        // A table an older fetch left that perf no longer has.
        fs::create_dir_all(dst.join("x86/amdzen5")).unwrap();
        fs::write(dst.join("x86/amdzen5/old.json"), "[0]").unwrap();
        let opts = FetchOptions {
            tables: Tables::Perf,
            origin: Origin::Dir(src.clone()),
            dest: dst.clone(),
            selection: Selection::Cpu(key("AuthenticAMD-26-2-1")),
            cancel: None,
        };
        let report = fetch(&opts, &mut NoProgress).unwrap();
        let rels: Vec<&str> = report.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(
            rels,
            [
                "x86/mapfile.csv",
                "x86/amdzen5/cache.json",
                "x86/amdzen5/pipeline.json"
            ]
        );
        assert_eq!(report.patterns, ["AuthenticAMD-26-[[:xdigit:]]+"]);
        assert_eq!(report.removed, ["x86/amdzen5/old.json"]);
        assert!(!dst.join("x86/amdzen5/old.json").exists());
        assert!(!dst.join("x86/amdzen4").exists());
        assert_eq!(
            fs::read_to_string(dst.join("x86/amdzen5/pipeline.json")).unwrap(),
            "[55]"
        );
        // Intel CPUs are refused for perf's tables, AMD ones for Intel's.
        let intel = FetchOptions {
            selection: Selection::Cpu(key("GenuineIntel-6-55-4")),
            ..opts.clone()
        };
        assert!(matches!(
            fetch(&intel, &mut NoProgress),
            Err(FetchError::IntelCpu { .. })
        ));
        // A directory with no table: a clear error, nothing changed.
        fs::remove_file(src.join("amdzen5/cache.json")).unwrap();
        fs::remove_file(src.join("amdzen5/pipeline.json")).unwrap();
        let e = fetch(&opts, &mut NoProgress).unwrap_err();
        assert!(matches!(e, FetchError::BadListing { .. }), "{e}");
        assert_eq!(
            fs::read_to_string(dst.join("x86/amdzen5/cache.json")).unwrap(),
            "[5]"
        );
        let _ = fs::remove_dir_all(&base);
    }
}
