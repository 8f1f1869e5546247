//! Built-in facts: the kernel's generic events and Intel's architectural
//! events.
//!
//! [`KernelEvents`] holds what `perf_event_open(2)` defines by number — the
//! generic hardware events (`PERF_TYPE_HARDWARE`), the cache events
//! (`PERF_TYPE_HW_CACHE`, config = cache | op << 8 | result << 16) and the
//! software events (`PERF_TYPE_SOFTWARE`). Generic names hide what is
//! counted, so each hardware definition also notes what the kernel maps it
//! to on the target's vendor (from the kernel's x86 event maps; sysfs
//! aliases, where the machine has them, are shown by `explain` too).
//!
//! [`Architectural`] holds Intel's architectural events (SDM vol. 3B,
//! "Pre-defined Architectural Performance Events", CPUID leaf 0xA) and the
//! fixed counters, named as libpfm's `ix86arch` PMU names them.

use crate::{perf_type, Counters, EventDef, EventSource, Precise, SourceKind, Target};
use pmx_model::cpu::Vendor;

/// Generic hardware events: (names, config, what it means).
const HARDWARE: &[(&[&str], u64, &str)] = &[
    (
        &["cycles", "cpu-cycles"],
        0,
        "CPU cycles (unhalted core cycles)",
    ),
    (&["instructions"], 1, "instructions retired"),
    (
        &["cache-references"],
        2,
        "cache accesses (usually last-level cache references)",
    ),
    (
        &["cache-misses"],
        3,
        "cache misses (usually last-level cache misses)",
    ),
    (
        &["branches", "branch-instructions"],
        4,
        "retired branch instructions",
    ),
    (&["branch-misses"], 5, "mispredicted branch instructions"),
    (&["bus-cycles"], 6, "bus cycles"),
    (
        &["stalled-cycles-frontend", "idle-cycles-frontend"],
        7,
        "cycles the frontend delivered no uops",
    ),
    (
        &["stalled-cycles-backend", "idle-cycles-backend"],
        8,
        "cycles the backend accepted no uops",
    ),
    (
        &["ref-cycles"],
        9,
        "reference cycles (constant rate, not affected by frequency scaling)",
    ),
];

/// Software events: (names, config, what it means).
const SOFTWARE: &[(&[&str], u64, &str)] = &[
    (
        &["cpu-clock"],
        0,
        "wall-clock time on the CPU, from a high-resolution timer (ns)",
    ),
    (&["task-clock"], 1, "time the task ran on a CPU (ns)"),
    (&["page-faults", "faults"], 2, "page faults"),
    (&["context-switches", "cs"], 3, "context switches"),
    (
        &["cpu-migrations", "migrations"],
        4,
        "migrations of the task to another CPU",
    ),
    (&["minor-faults"], 5, "page faults served without I/O"),
    (&["major-faults"], 6, "page faults that needed I/O"),
    (
        &["alignment-faults"],
        7,
        "alignment faults the kernel fixed up",
    ),
    (&["emulation-faults"], 8, "instructions the kernel emulated"),
    (&["dummy"], 9, "counts nothing; carries side-band records"),
    (&["bpf-output"], 10, "output of BPF programs"),
    (&["cgroup-switches"], 11, "switches between cgroups"),
];

/// Cache ids of `PERF_TYPE_HW_CACHE`, for descriptions (every spelling
/// perf accepts: [`pmx_model::legacy`]).
const CACHES: &[(&str, u64, &str)] = &[
    ("L1-dcache", 0, "level-1 data cache"),
    ("L1-icache", 1, "level-1 instruction cache"),
    ("LLC", 2, "last-level cache"),
    ("dTLB", 3, "data TLB"),
    ("iTLB", 4, "instruction TLB"),
    ("branch", 5, "branch prediction unit"),
    ("node", 6, "local memory node"),
];

/// What the kernel's x86 drivers map the generic hardware events to:
/// (config, Intel raw config, AMD Zen raw config). `None`: not supported on
/// that vendor. Sources: Intel SDM architectural events; the Linux kernel's
/// x86 event maps for AMD Zen (family 17h and later).
const KERNEL_MAP: &[(u64, Option<u64>, Option<u64>)] = &[
    (0, Some(0x003c), Some(0x0076)),
    (1, Some(0x00c0), Some(0x00c0)),
    (2, Some(0x4f2e), Some(0xff60)),
    (3, Some(0x412e), Some(0x0964)),
    (4, Some(0x00c4), Some(0x00c2)),
    (5, Some(0x00c5), Some(0x00c3)),
    (6, Some(0x013c), None),
    (7, None, Some(0x00a9)),
    (8, None, None),
    (9, Some(0x0300), None),
];

/// The kernel's generic hardware, cache and software events. The
/// definitions are made when asked for (`find` builds one, `events` all):
/// `pmx stat -e task-clock` resolves its one name without building the
/// other hundred.
pub struct KernelEvents {
    vendor: Vendor,
}

impl KernelEvents {
    /// The generic events, annotated for `target`'s vendor.
    pub fn new(target: &Target) -> KernelEvents {
        KernelEvents {
            vendor: target.cpu.vendor.clone(),
        }
    }

    fn hardware(&self, name: &str, config: u64, what: &str) -> EventDef {
        let mut d = EventDef::new(name, "cpu", SourceKind::Kernel, "PERF_TYPE_HARDWARE");
        d.perf_type = Some(perf_type::HARDWARE);
        d.config = config;
        d.description = what.to_string();
        d.counters = Counters::Unknown;
        d.precise = Precise::Unknown;
        if let Some(n) = kernel_mapping(&self.vendor, config) {
            d.notes.push(n);
        }
        d
    }

    fn cache(name: &str, config: u64) -> EventDef {
        let (id, op, result) = (config & 0xff, (config >> 8) & 0xff, config >> 16);
        let cache_what = CACHES
            .iter()
            .find(|(_, i, _)| *i == id)
            .map(|(_, _, w)| *w)
            .unwrap_or("cache");
        let mut d = EventDef::new(name, "cpu", SourceKind::Kernel, "PERF_TYPE_HW_CACHE");
        d.perf_type = Some(perf_type::HW_CACHE);
        d.config = config;
        let op_word = match op {
            0 => "loads",
            1 => "stores",
            _ => "prefetches",
        };
        d.description = if result == 0 {
            format!("{op_word} that access the {cache_what}")
        } else {
            format!("{op_word} that miss the {cache_what}")
        };
        d.notes.push(
            "the kernel maps cache events per CPU model; not every combination exists on every CPU"
                .to_string(),
        );
        d
    }

    fn software(name: &str, config: u64, what: &str) -> EventDef {
        let mut d = EventDef::new(name, "software", SourceKind::Kernel, "PERF_TYPE_SOFTWARE");
        d.perf_type = Some(perf_type::SOFTWARE);
        d.config = config;
        d.description = what.to_string();
        d.counters = Counters::NotCore;
        d.precise = Precise::No;
        d
    }
}

fn kernel_mapping(vendor: &Vendor, config: u64) -> Option<String> {
    let (_, intel, amd) = KERNEL_MAP.iter().find(|(c, _, _)| *c == config)?;
    let (who, raw) = match vendor {
        Vendor::Intel => ("Intel", intel),
        Vendor::Amd | Vendor::Hygon => ("AMD Zen 2 and later", amd),
        Vendor::Other(_) => return None,
    };
    Some(match raw {
        Some(r) => format!(
            "on {who} the kernel counts this as raw event {r:#x} (event {:#x}, umask {:#x})",
            r & 0xff,
            (r >> 8) & 0xff
        ),
        None => format!("the kernel has no mapping for this on {who}: it opens with ENOENT"),
    })
}

impl EventSource for KernelEvents {
    fn kind(&self) -> SourceKind {
        SourceKind::Kernel
    }
    fn describe(&self) -> String {
        "the kernel's generic and software events (perf_event_open ABI)".to_string()
    }
    fn events(&self) -> Vec<EventDef> {
        let mut events = Vec::new();
        for (names, config, what) in HARDWARE {
            for name in *names {
                events.push(self.hardware(name, *config, what));
            }
        }
        for (name, config) in pmx_model::legacy::cache_names() {
            events.push(Self::cache(&name, config));
        }
        for (names, config, what) in SOFTWARE {
            for name in *names {
                events.push(Self::software(name, *config, what));
            }
        }
        events
    }
    fn find(&self, name: &str) -> Option<EventDef> {
        // Generic names are matched exactly as perf does, but without case;
        // a cache event in any of perf's spellings (`L1-dcache-load-miss`)
        // is the canonical one with its config.
        let n = name.trim();
        let named = |table: &'static [(&[&str], u64, &str)]| {
            table.iter().find_map(|(names, config, what)| {
                let name = names.iter().find(|x| x.eq_ignore_ascii_case(n))?;
                Some((*name, *config, *what))
            })
        };
        if let Some((name, config, what)) = named(HARDWARE) {
            return Some(self.hardware(name, config, what));
        }
        if let Some((name, config, what)) = named(SOFTWARE) {
            return Some(Self::software(name, config, what));
        }
        let config = pmx_model::legacy::cache_config(n)?;
        let (name, config) = pmx_model::legacy::cache_names()
            .into_iter()
            .find(|(_, c)| *c == config)?;
        Some(Self::cache(&name, config))
    }
    fn names(&self) -> Vec<String> {
        // The order of `events`: hardware, cache, software.
        let hw = HARDWARE
            .iter()
            .flat_map(|(n, _, _)| *n)
            .map(|n| n.to_string());
        let cache = pmx_model::legacy::cache_names().into_iter().map(|(n, _)| n);
        let sw = SOFTWARE
            .iter()
            .flat_map(|(n, _, _)| *n)
            .map(|n| n.to_string());
        hw.chain(cache).chain(sw).collect()
    }
}

/// One Intel architectural event.
struct ArchEvent {
    /// libpfm's `ix86arch` name.
    name: &'static str,
    /// The SDM / perfmon name.
    sdm: &'static str,
    event: u64,
    umask: u64,
    /// CPUID.0AH:EBX bit that says it is unavailable.
    bit: u8,
    /// The fixed counter that also counts it.
    fixed: Option<u8>,
}

const fn ae(
    name: &'static str,
    sdm: &'static str,
    event: u64,
    umask: u64,
    bit: u8,
    fixed: Option<u8>,
) -> ArchEvent {
    ArchEvent {
        name,
        sdm,
        event,
        umask,
        bit,
        fixed,
    }
}

/// Intel's architectural events (SDM vol. 3B, table of pre-defined
/// architectural performance events).
const ARCH_EVENTS: &[ArchEvent] = &[
    ae(
        "UNHALTED_CORE_CYCLES",
        "CPU_CLK_UNHALTED.THREAD_P",
        0x3c,
        0x00,
        0,
        Some(1),
    ),
    ae(
        "INSTRUCTION_RETIRED",
        "INST_RETIRED.ANY_P",
        0xc0,
        0x00,
        1,
        Some(0),
    ),
    ae(
        "UNHALTED_REFERENCE_CYCLES",
        "CPU_CLK_UNHALTED.REF_P",
        0x3c,
        0x01,
        2,
        Some(2),
    ),
    ae(
        "LLC_REFERENCES",
        "LONGEST_LAT_CACHE.REFERENCE",
        0x2e,
        0x4f,
        3,
        None,
    ),
    ae("LLC_MISSES", "LONGEST_LAT_CACHE.MISS", 0x2e, 0x41, 4, None),
    ae(
        "BRANCH_INSTRUCTIONS_RETIRED",
        "BR_INST_RETIRED.ALL_BRANCHES",
        0xc4,
        0x00,
        5,
        None,
    ),
    ae(
        "MISPREDICTED_BRANCH_RETIRED",
        "BR_MISP_RETIRED.ALL_BRANCHES",
        0xc5,
        0x00,
        6,
        None,
    ),
    ae("TOPDOWN_SLOTS", "TOPDOWN.SLOTS_P", 0xa4, 0x01, 7, Some(3)),
];

/// Fixed-counter events as perf encodes them (event 0x00, umask = counter
/// index + 1).
const FIXED: &[(&str, u8, &str)] = &[
    (
        "INST_RETIRED.ANY",
        0,
        "instructions retired (fixed counter 0)",
    ),
    (
        "CPU_CLK_UNHALTED.THREAD",
        1,
        "unhalted core cycles (fixed counter 1)",
    ),
    (
        "CPU_CLK_UNHALTED.REF_TSC",
        2,
        "unhalted reference cycles at the TSC rate (fixed counter 2)",
    ),
    (
        "TOPDOWN.SLOTS",
        3,
        "issue slots, pipeline width × core cycles (fixed counter 3)",
    ),
];

/// Intel's architectural events and fixed counters.
pub struct Architectural {
    events: Vec<EventDef>,
}

impl Architectural {
    /// The architectural events. Availability comes from CPUID leaf 0xA
    /// on the host; for another CPU every event is listed, with a note.
    pub fn new(target: &Target) -> Architectural {
        Architectural::with_unavailable(target, 0)
    }

    /// The architectural events, minus those CPUID.0AH:EBX marks
    /// unavailable (bit set = not available).
    pub fn with_unavailable(target: &Target, ebx_unavailable: u32) -> Architectural {
        let _ = target;
        let mut events = Vec::new();
        for ArchEvent {
            name,
            sdm,
            event,
            umask,
            bit,
            fixed,
        } in ARCH_EVENTS
        {
            if ebx_unavailable & (1 << bit) != 0 {
                continue;
            }
            let mut d = EventDef::new(
                name,
                "cpu",
                SourceKind::Architectural,
                "Intel SDM architectural events",
            );
            d.perf_type = Some(perf_type::RAW);
            d.config = event | umask << 8;
            d.description = format!("architectural event {event:#x}/{umask:#x} ({sdm})");
            d.counters = Counters::AnyGp;
            d.precise = Precise::No;
            if let Some(f) = fixed {
                d.notes.push(format!("also counted by fixed counter {f}"));
            }
            events.push(d);
        }
        for (name, idx, what) in FIXED {
            let mut d = EventDef::new(
                name,
                "cpu",
                SourceKind::Architectural,
                "Intel SDM fixed counters",
            );
            d.perf_type = Some(perf_type::RAW);
            d.config = (*idx as u64 + 1) << 8;
            d.description = what.to_string();
            d.counters = Counters::Fixed {
                index: *idx,
                gp: Vec::new(),
            };
            d.precise = Precise::No;
            events.push(d);
        }
        Architectural { events }
    }
}

impl EventSource for Architectural {
    fn kind(&self) -> SourceKind {
        SourceKind::Architectural
    }
    fn describe(&self) -> String {
        "Intel architectural events and fixed counters (SDM)".to_string()
    }
    fn events(&self) -> Vec<EventDef> {
        self.events.clone()
    }
    fn find(&self, name: &str) -> Option<EventDef> {
        let k = crate::name_key(name);
        self.events
            .iter()
            .find(|e| crate::name_key(&e.name) == k)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmx_model::cpu::CpuId;

    fn target(key: &str) -> Target {
        Target {
            cpu: key.parse::<CpuId>().unwrap(),
            host: false,
        }
    }

    #[test]
    fn generic_events() {
        let k = KernelEvents::new(&target("GenuineIntel-6-55-4"));
        let c = k.find("CYCLES").unwrap();
        assert_eq!((c.perf_type, c.config), (Some(0), 0));
        assert!(c.notes[0].contains("0x3c"));
        let l = k.find("L1-dcache-load-misses").unwrap();
        assert_eq!((l.perf_type, l.config), (Some(3), 0x10000));
        let l = k.find("LLC-prefetches").unwrap();
        assert_eq!(l.config, 0x202);
        let t = k.find("task-clock").unwrap();
        assert_eq!(
            (t.perf_type, t.config, t.pmu.as_str()),
            (Some(1), 1, "software")
        );
        // perf's valid cache/op pairs (evsel__hw_cache_stat): 16, × access/miss.
        assert_eq!(
            k.events().iter().filter(|e| e.perf_type == Some(3)).count(),
            32
        );
        assert_eq!(k.find("L1-dcache-load-miss").unwrap().config, 0x10000);
        assert_eq!(k.find("l1d-misses").unwrap().config, 0x10000);
        assert!(k.find("L1-icache-stores").is_none());
        let a = KernelEvents::new(&target("AuthenticAMD-25-11-1"));
        assert!(a.find("cycles").unwrap().notes[0].contains("0x76"));
    }

    #[test]
    fn architectural_events_honour_cpuid() {
        let t = target("GenuineIntel-6-55-4");
        let a = Architectural::new(&t);
        assert_eq!(a.find("LLC_MISSES").unwrap().config, 0x412e);
        assert_eq!(a.find("inst_retired:any").unwrap().config, 0x100);
        let without_slots = Architectural::with_unavailable(&t, 1 << 7);
        assert!(without_slots.find("TOPDOWN_SLOTS").is_none());
    }
}
