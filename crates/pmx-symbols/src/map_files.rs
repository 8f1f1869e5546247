//! `/proc/PID/map_files`: a live process's mapped files, read through
//! the kernel's links (`START-END` in hex, one per file mapping; root
//! only) even when the file was deleted or replaced at its path since it
//! was mapped. `pmx record` reads build ids through them, the symbolizer
//! a binary's symbols.

use std::path::PathBuf;

/// The `/proc/PID/map_files/START-END` link of process `pid`'s mapping
/// that covers `addr`; `None` for pid 0 or -1, a process gone, or no
/// mapping there (or no right to list them).
pub fn covering(pid: u32, addr: u64) -> Option<PathBuf> {
    if pid == 0 || pid == u32::MAX {
        return None;
    }
    let dir = std::fs::read_dir(format!("/proc/{pid}/map_files")).ok()?;
    dir.flatten().map(|e| e.path()).find(|link| {
        let range = link.file_name().and_then(|n| n.to_str()).and_then(|n| {
            let (a, b) = n.split_once('-')?;
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        });
        range.is_some_and(|(a, b)| a <= addr && addr < b)
    })
}
