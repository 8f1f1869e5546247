//! One binary's unwind tables exercised as `pmx report` uses them, for
//! the tests that sweep every binary of a machine and crafted broken
//! files: the tables are loaded (with the separate debug file's
//! `.debug_frame` when the binary has no CFI), the load bias asked for
//! odd mappings, and a fake stack unwound with framehop from each
//! address given. Whatever the file holds, the answer is an error or a
//! count, never a panic or an endless walk.

use super::tables::{Bytes, Tables};
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{Module, Unwinder as _};
use std::path::Path;

/// Where the probed binary's ELF address 0 is mapped.
const BASE: u64 = 0x5555_0000_0000;

/// The deepest walk tried from one address.
const MAX_FRAMES: usize = 64;

/// What probing a binary's unwind tables found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TablesProbe {
    /// The binary (or its separate debug file) has CFI.
    pub cfi: bool,
    /// It has `.eh_frame_hdr` (framehop's binary-search table).
    pub eh_frame_hdr: bool,
    /// Walks done (one per address).
    pub walks: u64,
    /// Frames found over all walks.
    pub frames: u64,
}

/// Probe the tables of the ELF file at `path` (see the module page);
/// `addresses` are the binary's own (ELF virtual) addresses, any value.
pub fn probe_file(path: &Path, addresses: &[u64]) -> Result<TablesProbe, String> {
    Ok(probe(&Tables::open(path, None)?, addresses))
}

/// [`probe_file`] of an ELF image in memory; `name` is for errors.
pub fn probe_bytes(bytes: Vec<u8>, name: &str, addresses: &[u64]) -> Result<TablesProbe, String> {
    Ok(probe(&Tables::from_bytes(bytes, name)?, addresses))
}

fn probe(t: &Tables, addresses: &[u64]) -> TablesProbe {
    for pgoff in [0, 0x1000, u64::MAX, u64::MAX - 0xfff] {
        let _ = t.bias(BASE, pgoff);
        let _ = t.bias(u64::MAX, pgoff);
    }
    let mut unwinder: UnwinderX86_64<Bytes> = UnwinderX86_64::new();
    unwinder.add_module(Module::new(
        "probe".to_string(),
        BASE..BASE + (1 << 40),
        BASE,
        t.sections.clone(),
    ));
    let mut cache = CacheX86_64::new();
    let mut out = TablesProbe {
        cfi: t.has_cfi(),
        eh_frame_hdr: t.sections.eh_frame_hdr.is_some(),
        ..TablesProbe::default()
    };
    // A stack of plausible words: return addresses into the binary (one
    // past each probed address) between pointers into the stack itself.
    const SP: u64 = 0x7ffd_0000_0000;
    let words: Vec<u64> = (0..512u64)
        .map(|i| match (i % 2, addresses.len()) {
            (_, 0) | (1, _) => SP + 16 * (i + 1),
            _ => BASE.wrapping_add(addresses[(i / 2) as usize % addresses.len()].wrapping_add(1)),
        })
        .collect();
    let mut read = |addr: u64| -> Result<u64, ()> {
        let i = addr.checked_sub(SP).ok_or(())? / 8;
        words
            .get(usize::try_from(i).map_err(|_| ())?)
            .copied()
            .ok_or(())
    };
    for &a in addresses {
        let ip = BASE.wrapping_add(a);
        let regs = UnwindRegsX86_64::new(ip, SP, SP + 64);
        let mut it = unwinder.iter_frames(ip, regs, &mut cache, &mut read);
        out.walks += 1;
        for _ in 0..MAX_FRAMES {
            match it.next() {
                Ok(Some(_)) => out.frames += 1,
                _ => break,
            }
        }
    }
    out
}
