//! The data caches' sizes, from the kernel's description of CPU 0
//! (`/sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}`).

use std::path::Path;

/// Sizes in bytes of CPU 0's data caches; `None` where sysfs says nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheInfo {
    /// The level-1 data cache.
    pub l1d: Option<u64>,
    /// The level-2 cache (data or unified).
    pub l2: Option<u64>,
    /// The last level (the highest level listed, data or unified).
    pub llc: Option<u64>,
}

impl CacheInfo {
    /// Read under `root` (`/` on a live system).
    pub fn read(root: &Path) -> CacheInfo {
        let dir = root.join("sys/devices/system/cpu/cpu0/cache");
        let mut info = CacheInfo::default();
        let mut top = 0;
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return info;
        };
        for e in entries.flatten() {
            let p = e.path();
            let read = |f: &str| std::fs::read_to_string(p.join(f)).unwrap_or_default();
            let (level, kind) = (read("level"), read("type"));
            let Ok(level) = level.trim().parse::<u32>() else {
                continue;
            };
            let Some(size) = parse_size(read("size").trim()) else {
                continue;
            };
            if kind.trim() == "Instruction" {
                continue;
            }
            match level {
                1 => info.l1d = Some(size),
                2 => info.l2 = Some(size),
                _ => {}
            }
            if level >= top {
                top = level;
                info.llc = Some(size);
            }
        }
        info
    }
}

/// `32K`, `1024K`, `32M`, `512` as bytes.
pub fn parse_size(s: &str) -> Option<u64> {
    let (num, mult) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1024),
        b'M' | b'm' => (&s[..s.len() - 1], 1024 * 1024),
        b'G' | b'g' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}
