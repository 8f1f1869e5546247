//! The symbolizer's settings, read here at the edge: pmx's directories
//! from the environment (`XDG_CACHE_HOME`, `HOME`, `PERF_BUILDID_DIR`:
//! `pmx_io::dirs::Dirs`), the binary cache's capacity
//! (`PMX_BINARY_CACHE_MB`), the demangling style from the flags.

use pmx_symbols::elf::cache::{capacity_from_mb, CAPACITY_VAR};
use pmx_symbols::{Demangle, SymbolOptions};

/// The symbol options of a command that shows names in `demangle`.
pub fn options(demangle: Demangle) -> SymbolOptions {
    let capacity = capacity_from_mb(std::env::var(CAPACITY_VAR).ok().as_deref());
    SymbolOptions {
        demangle,
        ..SymbolOptions::new(pmx_io::dirs::Dirs::from_env(), capacity)
    }
}
