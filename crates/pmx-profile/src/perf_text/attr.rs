//! An attr's fields as perf prints them (`perf evlist -v`, the header's
//! `# event :` lines): only the fields that are not zero, flags by name.

use pmx_perfdata::PerfEventAttr;

/// `sample_type` bits by name, in bit order.
const SAMPLE_TYPE: &[&str] = &[
    "IP",
    "TID",
    "TIME",
    "ADDR",
    "READ",
    "CALLCHAIN",
    "ID",
    "CPU",
    "PERIOD",
    "STREAM_ID",
    "RAW",
    "BRANCH_STACK",
    "REGS_USER",
    "STACK_USER",
    "WEIGHT",
    "DATA_SRC",
    "IDENTIFIER",
    "TRANSACTION",
    "REGS_INTR",
    "PHYS_ADDR",
    "AUX",
    "CGROUP",
    "DATA_PAGE_SIZE",
    "CODE_PAGE_SIZE",
    "WEIGHT_STRUCT",
];

/// `read_format` bits by name.
const READ_FORMAT: &[&str] = &[
    "TOTAL_TIME_ENABLED",
    "TOTAL_TIME_RUNNING",
    "ID",
    "GROUP",
    "LOST",
];

/// The attr's flag bits by name, in bit order (`precise_ip`, two bits at
/// 15, apart).
const FLAGS: &[(u32, &str)] = &[
    (0, "disabled"),
    (1, "inherit"),
    (2, "pinned"),
    (3, "exclusive"),
    (4, "exclude_user"),
    (5, "exclude_kernel"),
    (6, "exclude_hv"),
    (7, "exclude_idle"),
    (8, "mmap"),
    (9, "comm"),
    (10, "freq"),
    (11, "inherit_stat"),
    (12, "enable_on_exec"),
    (13, "task"),
    (14, "watermark"),
    (17, "mmap_data"),
    (18, "sample_id_all"),
    (19, "exclude_host"),
    (20, "exclude_guest"),
    (21, "exclude_callchain_kernel"),
    (22, "exclude_callchain_user"),
    (23, "mmap2"),
    (24, "comm_exec"),
    (25, "use_clockid"),
    (26, "context_switch"),
    (27, "write_backward"),
    (28, "namespaces"),
    (29, "ksymbol"),
    (30, "bpf_event"),
    (31, "aux_output"),
    (32, "cgroup"),
    (33, "text_poke"),
    (34, "build_id"),
    (35, "inherit_thread"),
    (36, "remove_on_exec"),
    (37, "sigtrap"),
];

fn names(bits: u64, table: &[&str]) -> String {
    let mut v: Vec<String> = (table.iter().enumerate())
        .filter(|(i, _)| bits & (1 << i) != 0)
        .map(|(_, n)| n.to_string())
        .collect();
    let unknown = bits & !((1u64 << table.len()) - 1);
    if unknown != 0 {
        v.push(format!("{unknown:#x}"));
    }
    v.join("|")
}

/// The attr's non-zero fields as `name{sep}value` (`sep` is `: ` for
/// evlist, ` = ` in the header), in perf's order.
pub fn attr(a: &PerfEventAttr, sep: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut put = |k: &str, val: String| v.push(format!("{k}{sep}{val}"));
    put("type", a.type_.to_string());
    put("size", a.size.to_string());
    if a.config != 0 {
        put("config", format!("{:#x}", a.config));
    }
    if a.sample_period != 0 {
        put(
            "{ sample_period, sample_freq }",
            a.sample_period.to_string(),
        );
    }
    if a.sample_type != 0 {
        put("sample_type", names(a.sample_type, SAMPLE_TYPE));
    }
    if a.read_format != 0 {
        put("read_format", names(a.read_format, READ_FORMAT));
    }
    for &(bit, name) in FLAGS {
        if bit == 17 && (a.flags >> 15) & 3 != 0 {
            put("precise_ip", ((a.flags >> 15) & 3).to_string());
        }
        if a.flags & (1 << bit) != 0 {
            put(name, "1".into());
        }
    }
    let rest: [(&str, u64); 10] = [
        ("wakeup_events", a.wakeup_events as u64),
        ("bp_type", a.bp_type as u64),
        ("config1", a.config1),
        ("config2", a.config2),
        ("branch_sample_type", a.branch_sample_type),
        ("sample_regs_user", a.sample_regs_user),
        ("sample_stack_user", a.sample_stack_user as u64),
        ("sample_regs_intr", a.sample_regs_intr),
        ("aux_watermark", a.aux_watermark as u64),
        ("sample_max_stack", a.sample_max_stack as u64),
    ];
    for (k, val) in rest {
        if val != 0 {
            let hex = matches!(
                k,
                "config1" | "config2" | "sample_regs_user" | "sample_regs_intr"
            );
            put(
                k,
                if hex {
                    format!("{val:#x}")
                } else {
                    val.to_string()
                },
            );
        }
    }
    v
}
