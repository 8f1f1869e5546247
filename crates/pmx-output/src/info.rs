//! `pmx info`'s report as text: one section per kind of fact (CPU, PMU as
//! CPUID describes it, kernel PMUs, topology, access), then the verdict.
//! `--json` is the report itself ([`json()`]).

use pmx::info::{
    fixed_counter_name, paranoid_meaning, AmdPerfmon, IntelArchPerfmon, KernelPmu, MachineReport,
    PmuCaps, AMD_EXT_CORE_COUNTERS,
};
use pmx_model::topology::format_cpu_list;
use std::fmt::Write as _;

/// The report as pretty JSON, ending in a newline.
pub fn json(report: &MachineReport) -> serde_json::Result<String> {
    let mut json = serde_json::to_string_pretty(report)?;
    json.push('\n');
    Ok(json)
}

const LABEL_WIDTH: usize = 21;

fn row(out: &mut String, label: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "  {label:<LABEL_WIDTH$}{value}");
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn opt_yes_no(b: Option<bool>) -> &'static str {
    b.map(yes_no).unwrap_or("unknown")
}

/// The whole text report: CPU, PMU as CPUID describes it, kernel PMUs,
/// topology, access, the verdict and the problems met.
pub fn text(report: &MachineReport) -> String {
    render(report, None)
}

/// [`text`] with the tables built into pmx ([`builtin_tables_text`]) as
/// a section before the verdict.
pub fn text_with_tables(
    report: &MachineReport,
    tables: &Result<Vec<pmx::info::BuiltinTables>, String>,
) -> String {
    render(report, Some(tables))
}

fn render(
    report: &MachineReport,
    tables: Option<&Result<Vec<pmx::info::BuiltinTables>, String>>,
) -> String {
    let mut out = String::new();
    render_cpu(&mut out, report.cpu.as_ref());
    out.push('\n');
    render_cpuid_pmu(&mut out, report.cpu.as_ref());
    out.push('\n');
    render_kernel_pmus(&mut out, &report.kernel_pmus);
    out.push('\n');
    render_topology(&mut out, report);
    out.push('\n');
    render_access(&mut out, report);
    out.push('\n');
    render_hidden(&mut out, report);
    if let Some(t) = tables {
        out.push_str(&builtin_tables_text(t));
        out.push('\n');
    }
    out.push_str("Verdict\n");
    let _ = writeln!(out, "  {}", report.verdict.summary);
    if !report.problems.is_empty() {
        out.push_str("\nProblems (these facts are reported as unknown)\n");
        for p in &report.problems {
            let _ = writeln!(out, "  {p}");
        }
    }
    out
}

/// On AMD Zen: what CPUID or the kernel hides of the PMU the
/// microarchitecture has, or that nothing is hidden.
fn render_hidden(out: &mut String, report: &MachineReport) {
    let Some(caps) = report
        .cpu
        .as_ref()
        .filter(|c| c.amd.is_some() && c.cpu.family >= 0x17)
    else {
        return;
    };
    out.push_str("Hidden PMU features\n");
    if report.hidden.is_empty() {
        let _ = writeln!(
            out,
            "  nothing: CPUID and the kernel's PMUs show every PMU feature a {} has",
            caps.microarch.as_ref().map_or("Zen", |m| m.name)
        );
    }
    for h in &report.hidden {
        let _ = writeln!(out, "  {}: {}", h.feature, h.why);
    }
    out.push('\n');
}

fn render_cpu(out: &mut String, caps: Option<&PmuCaps>) {
    out.push_str("CPU\n");
    let Some(caps) = caps else {
        row(out, "CPUID", "not available on this architecture");
        return;
    };
    row(
        out,
        "vendor",
        format!("{} ({})", caps.vendor.name(), caps.vendor.cpuid_str()),
    );
    row(
        out,
        "brand",
        caps.brand.as_deref().unwrap_or("(no brand string)"),
    );
    row(
        out,
        "family",
        format!("{} ({:#x})", caps.cpu.family, caps.cpu.family),
    );
    row(
        out,
        "model",
        format!("{} ({:#x})", caps.cpu.model, caps.cpu.model),
    );
    if let Some(s) = caps.cpu.stepping {
        row(out, "stepping", format!("{s} ({s:#x})"));
    }
    row(out, "--cpu key", &caps.key);
    row(
        out,
        "microarchitecture",
        match &caps.microarch {
            Some(a) => format!("{} ({})", a.name, a.code),
            None => "unknown to pmx".to_string(),
        },
    );
    if caps.hybrid {
        row(
            out,
            "hybrid",
            "yes: performance and efficiency cores have different PMUs",
        );
    }
    row(
        out,
        "hypervisor",
        match &caps.hypervisor {
            Some(h) if h.signature.is_empty() || h.signature == h.name => {
                format!("{} (CPUID hypervisor bit set)", h.name)
            }
            Some(h) => format!("{} (signature {:?})", h.name, h.signature),
            None => "none (CPUID hypervisor bit clear)".to_string(),
        },
    );
}

fn render_cpuid_pmu(out: &mut String, caps: Option<&PmuCaps>) {
    out.push_str("PMU as CPUID describes it\n");
    let Some(caps) = caps else {
        row(out, "CPUID", "not available");
        return;
    };
    match (&caps.counters, &caps.no_counters_reason) {
        (Some(c), _) => {
            let mut s = format!("{} general-purpose × {} bits", c.general, c.general_width);
            if c.fixed > 0 {
                let _ = write!(s, ", {} fixed × {} bits", c.fixed, c.fixed_width);
            }
            let _ = write!(s, " per CPU (from {})", c.source);
            row(out, "counters", s);
        }
        (None, Some(reason)) => row(out, "counters", format!("none: {reason}")),
        (None, None) => row(out, "counters", "none"),
    }
    if let Some(intel) = &caps.intel {
        render_intel(out, intel);
    }
    if let Some(amd) = &caps.amd {
        render_amd(out, amd);
    }
}

fn render_intel(out: &mut String, pm: &IntelArchPerfmon) {
    row(
        out,
        "version",
        format!("{} (CPUID 0xA EAX[7:0])", pm.version),
    );
    if pm.version == 0 {
        return;
    }
    row(
        out,
        "general-purpose",
        format!("{} × {} bits", pm.gp_counters, pm.gp_width),
    );
    let fixed = pm.fixed_counter_indices();
    let names: Vec<String> = fixed
        .iter()
        .map(|&i| format!("{i} {}", fixed_counter_name(i)))
        .collect();
    row(
        out,
        "fixed",
        if fixed.is_empty() {
            "none".to_string()
        } else {
            format!(
                "{} × {} bits: {}",
                fixed.len(),
                pm.fixed_width,
                names.join(", ")
            )
        },
    );
    let available = pm.available_events();
    row(
        out,
        "architectural events",
        format!(
            "{} of {} available (EBX {:#x}, vector length {})",
            available.len(),
            pm.events.len(),
            pm.events_unavailable,
            pm.events_length
        ),
    );
    for e in &pm.events {
        let (event, umask) = e.event.encoding();
        let _ = writeln!(
            out,
            "    {:<3} {:<29} {:#04x}/{:#04x}",
            if e.available { "yes" } else { "no" },
            e.event.name(),
            event,
            umask
        );
    }
    if pm.any_thread_deprecated {
        row(out, "AnyThread", "deprecated (CPUID 0xA EDX[15])");
    }
}

fn render_amd(out: &mut String, pm: &AmdPerfmon) {
    row(
        out,
        "PerfCtrExtCore",
        if pm.core_ext {
            format!("yes ({AMD_EXT_CORE_COUNTERS} core counters at 0xC0010200)")
        } else {
            "no (legacy PERF_CTL0-3 at 0xC0010000)".to_string()
        },
    );
    row(out, "PerfCtrExtDF/NB", yes_no(pm.nb_ext));
    row(out, "PerfCtrExtLLC", yes_no(pm.llc_ext));
    row(
        out,
        "IBS",
        match (pm.ibs, &pm.ibs_features) {
            (false, _) => "no".to_string(),
            (true, None) => "yes (no valid feature flags in CPUID 0x8000001B)".to_string(),
            (true, Some(f)) => format!(
                "yes (CPUID 0x8000001B EAX={:#x}): {}",
                f.eax,
                f.names().join(" ")
            ),
        },
    );
    row(
        out,
        "PerfMonV2",
        match &pm.ext_perfmon {
            None => "no (no CPUID leaf 0x80000022)".to_string(),
            Some(e) if !e.perfmon_v2 => "no (CPUID 0x80000022 EAX[0] clear)".to_string(),
            Some(e) => {
                let mut s = format!(
                    "yes: {} core, {} DF, {} UMC counters",
                    e.core_counters, e.nb_counters, e.umc_counters
                );
                if e.lbr_stack {
                    let _ = write!(s, ", LBR stack of {}", e.lbr_v2_stack_size);
                }
                s
            }
        },
    );
}

/// PMUs that differ only in a trailing number (`uncore_cha_0` …
/// `uncore_cha_7`) and are otherwise alike are shown once.
struct PmuGroup<'a> {
    label: String,
    types: Vec<u32>,
    first: &'a KernelPmu,
}

fn split_index(name: &str) -> Option<(&str, u32)> {
    let (prefix, digits) = name.rsplit_once('_')?;
    Some((prefix, digits.parse().ok()?))
}

fn group_pmus(pmus: &[KernelPmu]) -> Vec<PmuGroup<'_>> {
    let same_shape = |a: &KernelPmu, b: &KernelPmu| {
        a.format == b.format
            && a.events.len() == b.events.len()
            && a.cpumask == b.cpumask
            && a.caps == b.caps
    };
    let mut groups: Vec<(Option<&str>, Vec<u32>, Vec<&KernelPmu>)> = Vec::new();
    for pmu in pmus {
        let indexed = split_index(&pmu.name);
        let joined = indexed.and_then(|(prefix, n)| {
            groups
                .iter_mut()
                .find(|(p, _, members)| *p == Some(prefix) && same_shape(members[0], pmu))
                .map(|g| (g, n))
        });
        match joined {
            Some(((_, numbers, members), n)) => {
                numbers.push(n);
                members.push(pmu);
            }
            None => groups.push((
                indexed.map(|(p, _)| p),
                indexed.map(|(_, n)| vec![n]).unwrap_or_default(),
                vec![pmu],
            )),
        }
    }
    groups
        .into_iter()
        .map(|(prefix, numbers, members)| {
            let label = match prefix {
                Some(p) if members.len() > 1 => format!("{p}_{{{}}}", format_cpu_list(&numbers)),
                _ => members[0].name.clone(),
            };
            PmuGroup {
                label,
                types: members.iter().filter_map(|m| m.type_id).collect(),
                first: members[0],
            }
        })
        .collect()
}

fn wrap_words(out: &mut String, label: &str, words: &[String]) {
    let indent = 4 + 9;
    let mut line = format!("    {label:<9}");
    let mut first = true;
    for word in words {
        if !first && line.len() + 1 + word.len() > 100 {
            let _ = writeln!(out, "{line}");
            line = " ".repeat(indent);
            first = true;
        }
        if !first {
            line.push(' ');
        }
        line.push_str(word);
        first = false;
    }
    let _ = writeln!(out, "{line}");
}

fn render_kernel_pmus(out: &mut String, pmus: &[KernelPmu]) {
    let _ = writeln!(
        out,
        "Kernel PMUs ({} in /sys/bus/event_source/devices)",
        pmus.len()
    );
    if pmus.is_empty() {
        row(
            out,
            "(none)",
            "the kernel registered no PMU, or sysfs is not mounted",
        );
        return;
    }
    let groups = group_pmus(pmus);
    let width = groups.iter().map(|g| g.label.len()).max().unwrap_or(0);
    for group in groups {
        let pmu = group.first;
        let types = match group.types.as_slice() {
            [] => "type unknown".to_string(),
            [one] => format!("type {one}"),
            many => format!("types {}", format_cpu_list(many)),
        };
        let aliases = match pmu.events.len() {
            0 => String::new(),
            1 => ", 1 event alias".to_string(),
            n => format!(", {n} event aliases"),
        };
        let role = if pmu.is_core() { ", core PMU" } else { "" };
        let _ = writeln!(out, "  {:<width$}  {types}{aliases}{role}", group.label);
        if !pmu.format.is_empty() {
            // In register order (word, then lowest bit), as a layout reads.
            let mut format: Vec<_> = pmu.format.iter().collect();
            format.sort_by_key(|f| {
                f.placement
                    .as_ref()
                    .map(|p| (p.word, p.ranges.iter().map(|r| r.0).min().unwrap_or(0)))
            });
            let fields: Vec<String> = format
                .iter()
                .map(|f| match &f.placement {
                    Some(p) => format!("{}={p}", f.name),
                    None => format!("{}=?{:?}", f.name, f.raw),
                })
                .collect();
            wrap_words(out, "format", &fields);
        }
        if let Some(mask) = &pmu.cpumask {
            let _ = writeln!(out, "    {:<9}{}", "cpumask", format_cpu_list(mask));
        }
        if !pmu.caps.is_empty() {
            let caps: Vec<String> = pmu.caps.iter().map(|(k, v)| format!("{k}={v}")).collect();
            wrap_words(out, "caps", &caps);
        }
    }
}

fn render_topology(out: &mut String, report: &MachineReport) {
    let t = &report.topology;
    out.push_str("Topology\n");
    row(
        out,
        "CPUs",
        format!(
            "{} online of {} ({})",
            t.online_count, t.cpu_count, t.online
        ),
    );
    row(out, "cores", t.core_count);
    row(out, "packages", t.package_count);
    let packages = t.topology.packages();
    if packages.len() > 1 {
        for p in packages {
            row(
                out,
                &format!("  package {p}"),
                format!("CPUs {}", format_cpu_list(&t.topology.cpus_in_package(p))),
            );
        }
    }
    let smt = match t.threads_per_core {
        None => "unknown".to_string(),
        Some(1) => "off (1 thread per core)".to_string(),
        Some(n) => {
            let example = t
                .topology
                .online_cpus()
                .first()
                .and_then(|&c| t.topology.siblings_of(c).map(|s| (c, s)));
            match example {
                Some((c, s)) => format!(
                    "on ({n} threads per core; CPU {c} shares its core with {})",
                    format_cpu_list(&s.into_iter().filter(|&x| x != c).collect::<Vec<_>>())
                ),
                None => format!("on ({n} threads per core)"),
            }
        }
    };
    row(out, "SMT", smt);
}

/// Who runs pmx and what perf lets them count.
fn render_access(out: &mut String, report: &MachineReport) {
    let a = &report.access;
    out.push_str("Access\n");
    row(
        out,
        "user",
        match a.euid {
            Some(0) => "root (euid 0)".to_string(),
            Some(uid) => format!("euid {uid}"),
            None => "unknown".to_string(),
        },
    );
    row(
        out,
        "perf_event_paranoid",
        match a.perf_event_paranoid {
            Some(level) => format!("{level}: {}", paranoid_meaning(level)),
            None => "unknown (no /proc/sys/kernel/perf_event_paranoid)".to_string(),
        },
    );
    row(out, "CAP_PERFMON", opt_yes_no(a.cap_perfmon));
    row(out, "CAP_SYS_ADMIN", opt_yes_no(a.cap_sys_admin));
    row(out, "CAP_SYS_RAWIO", opt_yes_no(a.cap_sys_rawio));
    row(
        out,
        "perf scope",
        if !a.may_open_events() {
            "perf_event_open forbidden".to_string()
        } else {
            let mut s = String::from("per task, user space");
            if a.may_count_kernel() {
                s += " and kernel";
            }
            if a.may_count_system_wide() {
                s += "; CPU-wide";
            }
            s
        },
    );
    render_devices(out, report);
}

/// The msr device, rdpmc, the NMI watchdog and lockdown.
fn render_devices(out: &mut String, report: &MachineReport) {
    let a = &report.access;
    row(
        out,
        "msr device",
        if a.msr_devices.is_empty() {
            "absent (no /dev/cpu/N/msr: load the msr driver with modprobe msr)".to_string()
        } else {
            let mut s = format!(
                "present on CPUs {} (/dev/cpu/N/msr)",
                format_cpu_list(&a.msr_devices)
            );
            if !a.may_use_msr_device() {
                s += "; opening it needs CAP_SYS_RAWIO";
            }
            s
        },
    );
    row(
        out,
        "rdpmc",
        match &a.rdpmc {
            Some(r) => format!("{} ({}, {}/rdpmc)", r.value, r.meaning(), r.pmu),
            None => "unknown (no core PMU rdpmc file)".to_string(),
        },
    );
    row(
        out,
        "NMI watchdog",
        match a.nmi_watchdog {
            Some(true) if report.verdict.hardware_counters => {
                "on: holds one counter on every CPU (sysctl kernel.nmi_watchdog=0 frees it)"
            }
            Some(true) => "on (holds no counter here: there is no hardware PMU)",
            Some(false) => "off",
            None => "unknown",
        },
    );
    if let Some(mode) = &a.lockdown {
        row(
            out,
            "lockdown",
            if a.msr_writes_locked_down() {
                format!("{mode} (the kernel refuses MSR writes)")
            } else {
                mode.clone()
            },
        );
    }
}

/// The tables built into pmx (a section of `pmx info`): each set's
/// source, commit and license, then its platforms with their versions.
pub fn builtin_tables_text(tables: &Result<Vec<pmx::info::BuiltinTables>, String>) -> String {
    let mut out = String::from("Built-in event tables\n");
    match tables {
        Err(e) => {
            let _ = writeln!(out, "  not readable: {e}");
        }
        Ok(sets) => {
            for t in sets {
                let _ = writeln!(
                    out,
                    "  {} at commit {} ({}, {})",
                    t.name, t.commit, t.source, t.license
                );
                let words: Vec<String> = t
                    .platforms
                    .iter()
                    .map(|(p, v)| format!("{p} {v}"))
                    .collect();
                wrap_words(&mut out, "tables", &words);
            }
        }
    }
    out
}
