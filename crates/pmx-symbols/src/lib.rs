//! # pmx-symbols — what a binary says about an address
//!
//! One job: turn addresses into names. Everything pmx knows about
//! binaries lives here, apart from the profiles that use it (as samply
//! keeps its symbol crates apart from its profile code).
//!
//! The model:
//!
//! - [`elf`]: one binary ([`elf::ElfFile`], `Send + Sync`): its function
//!   symbols (`.symtab`, else `.dynsym`, the PLT's `NAME@plt` entries),
//!   its data objects with their sizes in a table of their own
//!   ([`elf::data`], read only when a data address is asked for), the
//!   load segments that turn a file offset into a virtual address,
//!   its build id, DWARF lines and inline frames read on demand, the
//!   separate debug file; [`elf::cache::BinaryCache`] shares parsed
//!   binaries between symbolizers within a byte budget.
//! - [`demangle`]: Rust and C++ names in perf 6.1's short form, full
//!   signatures, or as they are ([`Demangle`]).
//! - [`kernel`]: `/proc/kallsyms` as a table ([`kernel::Kallsyms`]), the
//!   running kernel's build id and vDSO image; [`kcache`]: its index on
//!   disk, keyed by kernel build id, boot and modules.
//! - [`symbolize`]: a recording's processes and maps (from its MMAP
//!   records) over those binaries: a sample's address → a frame (binary,
//!   symbol or address), a data address → its object
//!   ([`symbolize::DataObject`]: a binary's symbol, the heap, a stack,
//!   anonymous memory), JIT maps, the vDSO; [`map_files`]: the mapped
//!   file of a live process (`/proc/PID/map_files`).
//! - [`unwind`]: `--call-graph dwarf` stacks unwound with framehop over
//!   each binary's CFI.
//! - [`buildid_cache`]: perf's `~/.debug` layout (add, list, remove,
//!   lookup).
//!
//! Settings are values, never process-wide: the demangling style, the
//! directories (pmx's cache, perf's build-id cache) and the binary cache
//! come in a [`SymbolOptions`] given to the symbolizer; the binary cache's
//! capacity is given when it is made. No environment variable is read
//! here: the caller reads it at the edge (`pmx_io::dirs::Dirs::from_env`).
//!
//! Whatever a binary holds (sections outside the file, `NOBITS` sections
//! of a separate debug file, symbols or segments whose end overflows, a
//! truncated file), the symbol and unwind code answers with an error or
//! nothing, never a panic: `tests/elf_sweep.rs` opens every ELF file under
//! `/usr/bin` and `/usr/lib` of the machine it runs on,
//! `tests/integration/crafted_elf.rs` broken ones.
//!
//! What it must never do: aggregate samples, render, print, or know of
//! reports; it depends on no pmx crate but `pmx-perfdata` (the records
//! it reads maps from) and `pmx-io` (the directories).

pub mod buildid_cache;
pub mod demangle;
pub mod elf;
pub mod kcache;
pub mod kernel;
pub mod map_files;
pub mod symbolize;
pub mod unwind;

pub use demangle::Demangle;
pub use elf::cache::BinaryCache;
pub use symbolize::Symbolizer;

use pmx_io::dirs::Dirs;
use std::sync::Arc;

/// How a symbolizer shows names and where it reads binaries: made once by
/// the caller (the CLI from its flags and [`Dirs::from_env`]) and passed
/// down; two symbolizers of one process may differ in every field.
#[derive(Debug, Clone)]
pub struct SymbolOptions {
    /// How symbol names are demangled (perf's short form by default).
    pub demangle: Demangle,
    /// pmx's cache directory (the kernel symbols' index) and perf's
    /// build-id cache (a binary's copy when the one on disk is gone or
    /// another build). [`Dirs::default`] keeps nothing on disk and looks
    /// in no build-id cache.
    pub dirs: Dirs,
    /// The parsed binaries, shared with every symbolizer given the same
    /// cache (by default [`BinaryCache::shared`]).
    pub binaries: Arc<BinaryCache>,
}

impl Default for SymbolOptions {
    fn default() -> SymbolOptions {
        SymbolOptions {
            demangle: Demangle::default(),
            dirs: Dirs::default(),
            binaries: BinaryCache::shared(),
        }
    }
}

impl SymbolOptions {
    /// Options reading and keeping files in `dirs`, with a binary cache
    /// of its own: at most `capacity` bytes of tables, big binaries'
    /// symbol tables kept under the cache directory's `symbols`.
    pub fn new(dirs: Dirs, capacity: usize) -> SymbolOptions {
        let binaries = BinaryCache::new(capacity, dirs.cache_sub("symbols"));
        SymbolOptions {
            demangle: Demangle::default(),
            dirs,
            binaries: Arc::new(binaries),
        }
    }
}

/// FNV-1a of `bytes`: a file's stamp.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}
