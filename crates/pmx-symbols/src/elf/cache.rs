//! The cache of parsed binaries: every symbolizer given the same
//! [`BinaryCache`] (`pmx serve`'s successive profiles, `pmx top`, a
//! report; [`BinaryCache::shared`] is the one of those that bring none)
//! shares one [`ElfFile`] per binary, with what it has read so far — the symbol table with its PLT entries, the names
//! demangled, the DWARF line tables — so a second profile of the same
//! binaries reads nothing again.
//!
//! **Keys.** A path is first turned into its [`FileId`] (device, inode,
//! size, modification time to the nanosecond: one `stat`); a file seen
//! before under that id maps to its entry at once. A new file is opened
//! (its headers only) and keyed by its GNU build id and size (one entry
//! for the same binary under several paths; the size keeps a stripped
//! copy, which keeps the build id, apart), else by its `FileId`. A binary
//! rebuilt at the same path has another `FileId` (new inode or mtime) and
//! so is opened again: a stale entry is never answered.
//!
//! **Bound.** Entries are evicted least recently used first when the
//! bytes their tables hold ([`ElfFile::held_bytes`]: symbols, names and
//! the DWARF line and inline state parsed so far, an estimate kept
//! within 1.5× of the heap by `tests/line_memory.rs`) exceed
//! the capacity given when the cache is made ([`BinaryCache::new`];
//! [`DEFAULT_CAPACITY`], 64 MiB, for the shared one — pmx's commands read
//! `PMX_BINARY_CACHE_MB` at their edge) or there are more than
//! [`MAX_BINARIES`].
//! An evicted binary still in use by a symbolizer lives until that one
//! lets it go. The mapped files' pages are given back once their tables
//! are read, so what a binary costs is its tables, not its file.
//!
//! **Tables on disk.** A cache made with a directory for symbol tables
//! (pmx's `…/symbols`) has its binaries keep their big tables there
//! ([`ElfFile::open_with`]); one without keeps nothing on disk.

use super::ElfFile;
use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// Bytes of tables the cache keeps by default.
pub const DEFAULT_CAPACITY: usize = 64 << 20;
/// The variable pmx's commands read, at their edge, for the capacity in
/// MiB of the binary cache they make.
pub const CAPACITY_VAR: &str = "PMX_BINARY_CACHE_MB";

/// The capacity in bytes a [`CAPACITY_VAR`] value asks for (MiB), else
/// [`DEFAULT_CAPACITY`] (no value, or not a number).
pub fn capacity_from_mb(value: Option<&str>) -> usize {
    value
        .and_then(|v| v.trim().parse::<usize>().ok())
        .map_or(DEFAULT_CAPACITY, |mb| mb.saturating_mul(1 << 20))
}

/// Binaries the cache keeps at most.
pub const MAX_BINARIES: usize = 1024;
/// `FileId`s remembered at most (ids of files whose entry is gone are
/// forgotten with it).
const MAX_FILES: usize = 4 * MAX_BINARIES;

/// Which file a path names now: device, inode, size and modification
/// time (seconds and nanoseconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
}

impl FileId {
    /// The id of the regular file at `path` (errors name the path).
    pub fn of(path: &Path) -> Result<FileId, String> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if !m.is_file() {
            return Err(format!("{}: not a regular file", path.display()));
        }
        Ok(FileId {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Build(Vec<u8>, u64),
    File(FileId),
}

struct Entry {
    elf: Arc<ElfFile>,
    used: u64,
}

/// What the cache did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Binaries held now.
    pub binaries: usize,
    /// Bytes their tables hold (estimate).
    pub bytes: usize,
    /// Opens answered from the cache.
    pub hits: u64,
    /// Opens that read a file.
    pub misses: u64,
    /// Binaries evicted.
    pub evicted: u64,
}

struct Cache {
    entries: HashMap<Key, Entry>,
    files: HashMap<FileId, Key>,
    tick: u64,
    capacity: usize,
    stats: CacheStats,
}

/// Parsed binaries shared by the symbolizers given it, within a budget of
/// bytes of tables (see the module's page).
pub struct BinaryCache {
    cache: Mutex<Cache>,
    /// Where the binaries' symbol tables are kept on disk, if anywhere.
    tables: Option<PathBuf>,
}

impl std::fmt::Debug for BinaryCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BinaryCache")
            .field("capacity", &self.capacity())
            .field("tables", &self.tables)
            .finish()
    }
}

impl BinaryCache {
    /// A cache keeping at most `capacity` bytes of tables, its binaries'
    /// symbol tables kept on disk under `tables` when given.
    pub fn new(capacity: usize, tables: Option<PathBuf>) -> BinaryCache {
        BinaryCache {
            cache: Mutex::new(Cache {
                entries: HashMap::default(),
                files: HashMap::default(),
                tick: 0,
                capacity,
                stats: CacheStats::default(),
            }),
            tables,
        }
    }

    /// The cache of the symbolizers that bring none: made once,
    /// [`DEFAULT_CAPACITY`], no tables on disk.
    pub fn shared() -> Arc<BinaryCache> {
        static SHARED: OnceLock<Arc<BinaryCache>> = OnceLock::new();
        SHARED
            .get_or_init(|| Arc::new(BinaryCache::new(DEFAULT_CAPACITY, None)))
            .clone()
    }

    fn lock(&self) -> MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The binary at `path`, from the cache when this very file (same
    /// [`FileId`]) or the same build was opened before, else opened and
    /// cached. Returns it with the file's id (a caller can check later
    /// that the path still names that file).
    pub fn open(&self, path: &Path) -> Result<(Arc<ElfFile>, FileId), String> {
        let id = FileId::of(path)?;
        {
            let mut c = self.lock();
            if let Some(key) = c.files.get(&id).cloned() {
                if let Some(elf) = c.touch(&key) {
                    c.stats.hits += 1;
                    c.trim(&key);
                    return Ok((elf, id));
                }
            }
        }
        let elf = ElfFile::open_with(path, self.tables.clone())?;
        // The file may have changed between the stat and the open: the id
        // is taken again, and a file that moved is not cached.
        let key = match elf.build_id() {
            Some(b) if !b.is_empty() => Key::Build(b.to_vec(), id.size),
            _ => Key::File(id),
        };
        if FileId::of(path).ok() != Some(id) {
            return Ok((Arc::new(elf), id));
        }
        let mut c = self.lock();
        c.stats.misses += 1;
        let elf = match c.touch(&key) {
            Some(have) => have,
            None => {
                let elf = Arc::new(elf);
                let used = c.next_tick();
                c.entries.insert(
                    key.clone(),
                    Entry {
                        elf: elf.clone(),
                        used,
                    },
                );
                elf
            }
        };
        c.files.insert(id, key.clone());
        c.trim(&key);
        Ok((elf, id))
    }

    /// The cache's counts now.
    pub fn stats(&self) -> CacheStats {
        let mut c = self.lock();
        c.stats.binaries = c.entries.len();
        c.stats.bytes = c.entries.values().map(|e| e.elf.held_bytes()).sum();
        c.stats
    }

    /// Evict the least recently used binaries until the cache is within
    /// its capacity. A lookup grows a binary's tables (line rows,
    /// functions) after it was opened, and the bound is otherwise kept
    /// only when a binary is opened; a long-lived user (`pmx serve`) calls
    /// this when a profile is done.
    pub fn shrink_to_capacity(&self) {
        self.lock().evict(None);
    }

    /// The cache's capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.lock().capacity
    }
}

impl Cache {
    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    fn touch(&mut self, key: &Key) -> Option<Arc<ElfFile>> {
        let tick = self.next_tick();
        let e = self.entries.get_mut(key)?;
        e.used = tick;
        Some(e.elf.clone())
    }

    /// Evict (but never `keep`) until within the bounds.
    fn trim(&mut self, keep: &Key) {
        self.evict(Some(keep));
        if self.files.len() > MAX_FILES {
            let entries = &self.entries;
            self.files.retain(|_, k| entries.contains_key(k));
            if self.files.len() > MAX_FILES {
                self.files.clear();
            }
        }
    }

    fn evict(&mut self, keep: Option<&Key>) {
        let mut bytes: usize = self.entries.values().map(|e| e.elf.held_bytes()).sum();
        while bytes > self.capacity || self.entries.len() > MAX_BINARIES {
            let oldest = (self.entries.iter())
                .filter(|(k, _)| Some(*k) != keep)
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone());
            let Some(k) = oldest else { break };
            if let Some(e) = self.entries.remove(&k) {
                bytes = bytes.saturating_sub(e.elf.held_bytes());
                self.stats.evicted += 1;
            }
            self.files.retain(|_, v| *v != k);
        }
    }
}
