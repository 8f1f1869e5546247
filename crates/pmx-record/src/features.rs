//! The feature sections of the file: host, OS, CPU, memory, the command
//! line, the time span of the samples and the build ids of every mapped
//! binary and of the kernel.

use super::buildid;
use super::tally::Mapped;
use super::tally::Tally;
use pmx_perf::record_misc;
use pmx_perfdata::write::{BuildIdEntry, Features};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// `uname(2)`: nodename, release, machine.
pub(super) fn uname() -> Option<(String, String, String)> {
    // SAFETY: utsname is plain bytes; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a local struct.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let s = |f: &[libc::c_char]| {
        let b: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&b).into_owned()
    };
    Some((s(&u.nodename), s(&u.release), s(&u.machine)))
}

/// `field : value` of the first processor in `/proc/cpuinfo`.
pub(super) fn cpuinfo_field(cpuinfo: &str, field: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == field).then(|| v.trim().to_string())
    })
}

/// perf's `cpuid` string for x86: `vendor,family,model,stepping` in
/// decimal (`GenuineIntel,6,85,4`).
pub(super) fn perf_cpuid() -> Option<String> {
    let id = pmx_sys::caps::cpu_id(&pmx_sys::NativeCpuid)?;
    Some(format!(
        "{},{},{},{}",
        id.vendor.cpuid_str(),
        id.family,
        id.model,
        id.stepping.unwrap_or(0)
    ))
}

/// The feature sections for the file: `cmdline` is the command line to
/// store; notes about missing build ids are added to `notes`.
pub(super) fn features(cmdline: &[String], tally: &Tally, notes: &mut Vec<String>) -> Features {
    let (host, release, machine) = uname().unwrap_or_default();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let present = std::fs::read_to_string("/sys/devices/system/cpu/present")
        .ok()
        .and_then(|s| pmx_model::topology::parse_cpu_list(s.trim()).ok())
        .map(|v| v.iter().max().map_or(0, |m| m + 1));
    let online = pmx_count::stat::online_cpus().len() as u32;
    let mem = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    });
    Features {
        hostname: Some(host),
        osrelease: Some(release),
        version: Some(format!("pmx {}", env!("CARGO_PKG_VERSION"))),
        arch: Some(machine),
        nrcpus: Some((online, present.unwrap_or(online))),
        cpudesc: cpuinfo_field(&cpuinfo, "model name"),
        cpuid: perf_cpuid(),
        total_mem_kib: mem,
        cmdline: Some(cmdline.to_vec()),
        build_ids: build_ids(&tally.mapped, &tally.places, notes),
        sample_time: tally.first_time.zip(tally.last_time),
        group_desc: Vec::new(),
        tracing_data: None,
    }
}

/// The build ids of the mapped files (name → cpumode), and of the
/// kernel; a note when some files no longer exist. A file is read at its
/// path, unless the path leads elsewhere now (deleted, or another inode
/// than its MMAP2 record's: rebuilt during the recording): then the
/// mapped file itself, through `/proc/PID/map_files/` (read at once for
/// a file already deleted when mapped, else now while the process
/// lives), never the replacement's.
pub(super) fn build_ids(
    mapped: &BTreeMap<String, u16>,
    places: &HashMap<String, Mapped>,
    notes: &mut Vec<String>,
) -> Vec<BuildIdEntry> {
    let mut build_ids = Vec::new();
    let mut unreadable = 0usize;
    let mut replaced = 0usize;
    for (name, &mode) in mapped {
        if name.starts_with("[kernel.kallsyms]") {
            if let Some(id) = buildid::of_running_kernel() {
                build_ids.push(BuildIdEntry {
                    pid: -1,
                    misc: record_misc::KERNEL,
                    build_id: id,
                    filename: "[kernel.kallsyms]".to_string(),
                });
            }
            continue;
        }
        if !name.starts_with('/') || name.starts_with("//") {
            continue; // [vdso], //anon, [heap]: nothing on disk
        }
        let id = match places.get(name) {
            Some(p) if p.build_id.is_some() => p.build_id.clone(),
            Some(p) if !name.ends_with(" (deleted)") && moved(name, p) => {
                let id = buildid::of_mapped_file(p.pid, p.addr, p.ino);
                if id.is_none() {
                    replaced += 1;
                    continue;
                }
                id
            }
            _ => buildid::of_elf_file_cached(Path::new(name)),
        };
        match id {
            Some(id) if id.len() <= buildid::MAX_BUILD_ID => build_ids.push(BuildIdEntry {
                pid: -1,
                misc: if mode == record_misc::KERNEL {
                    record_misc::KERNEL
                } else {
                    record_misc::USER
                },
                build_id: id,
                filename: name.clone(),
            }),
            Some(_) => {}
            None => {
                if !Path::new(name).exists() {
                    unreadable += 1;
                }
            }
        }
    }
    if replaced > 0 {
        notes.push(format!(
            "{replaced} mapped file(s) were deleted or replaced at their path during the \
             recording (rebuilt or upgraded) and no process maps them now, so their build ids \
             are missing"
        ));
    }
    if unreadable > 0 {
        notes.push(format!(
            "{unreadable} mapped file(s) no longer exist, so their build ids are missing"
        ));
    }
    build_ids
}

/// Whether the file at `name` is not the one mapped: gone since, or
/// another inode.
fn moved(name: &str, place: &Mapped) -> bool {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(name) {
        Ok(m) => m.ino() != place.ino,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}
