//! perf's `script`, `annotate`, `inject`, `evlist` and `buildid-list`
//! command lines: the options of perf 6.1's `-h` of each that pmx does not
//! take, each with the reason (never "unexpected argument").

/// perf script's options pmx script does not take, and why.
pub const SCRIPT: &[(&str, &str)] = &[
    ("-a", "pmx script reads the file's samples; the CPUs were chosen at record time"),
    ("--all-cpus", "pmx script reads the file's samples; the CPUs were chosen at record time"),
    ("-c", "pmx script prints every sample; filter with pmx report (--comms, --pid, --tid, --dsos, --symbols)"),
    ("--comms", "pmx script prints every sample; filter with pmx report (--comms, --pid, --tid, --dsos, --symbols)"),
    ("--pid", "pmx script prints every sample; filter with pmx report (--comms, --pid, --tid, --dsos, --symbols)"),
    ("--tid", "pmx script prints every sample; filter with pmx report (--comms, --pid, --tid, --dsos, --symbols)"),
    ("-C", "pmx script prints every sample; filter with pmx report (--comms, --pid, --tid, --dsos, --symbols)"),
    ("--cpu", "pmx script prints every sample; filter with pmx report (--comms, --pid, --tid, --dsos, --symbols)"),
    ("--dsos", "pmx script prints every sample; filter with pmx report (--comms, --pid, --tid, --dsos, --symbols)"),
    ("-S", "pmx script prints every sample; filter with pmx report (--comms, --pid, --tid, --dsos, --symbols)"),
    ("--symbols", "pmx script prints every sample; filter with pmx report (--comms, --pid, --tid, --dsos, --symbols)"),
    ("-d", "pmx script has no debug mode"),
    ("--debug-mode", "pmx script has no debug mode"),
    ("-D", "pmx script prints samples, not the raw records"),
    ("--dump-raw-trace", "pmx script prints samples, not the raw records"),
    ("--dump-unsorted-raw-trace", "pmx script prints samples, not the raw records"),
    ("-f", "pmx reads any file it can open"),
    ("--force", "pmx reads any file it can open"),
    ("-I", "use perf report --header (pmx report)"),
    ("--show-info", "use perf report --header (pmx report)"),
    ("--header", "use perf report --header (pmx report)"),
    ("--header-only", "use perf report --header (pmx report)"),
    ("-k", "pmx reads kernel symbols from /proc/kallsyms"),
    ("--vmlinux", "pmx reads kernel symbols from /proc/kallsyms"),
    ("--kallsyms", "pmx reads kernel symbols from /proc/kallsyms"),
    ("--ignore-vmlinux", "pmx reads kernel symbols from /proc/kallsyms"),
    ("--show-kernel-path", "pmx reads kernel symbols from /proc/kallsyms"),
    ("-L", "pmx script prints no latency fields"),
    ("--Latency", "pmx script prints no latency fields"),
    ("-l", "pmx runs no perl or python scripts"),
    ("--list", "pmx runs no perl or python scripts"),
    ("-s", "pmx runs no perl or python scripts"),
    ("--script", "pmx runs no perl or python scripts"),
    ("-g", "pmx runs no perl or python scripts"),
    ("--gen-script", "pmx runs no perl or python scripts"),
    ("-v", "pmx script prints its warnings always"),
    ("--verbose", "pmx script prints its warnings always"),
    ("--addr-range", "pmx decodes no instruction traces (Intel PT, CoreSight)"),
    ("--call-ret-trace", "pmx decodes no instruction traces (Intel PT, CoreSight)"),
    ("--call-trace", "pmx decodes no instruction traces (Intel PT, CoreSight)"),
    ("--insn-trace", "pmx decodes no instruction traces (Intel PT, CoreSight)"),
    ("--itrace", "pmx decodes no instruction traces (Intel PT, CoreSight)"),
    ("--xed", "pmx decodes no instruction traces (Intel PT, CoreSight)"),
    ("--graph-function", "pmx decodes no instruction traces (Intel PT, CoreSight)"),
    ("--stop-bt", "pmx decodes no instruction traces (Intel PT, CoreSight)"),
    ("--max-blocks", "pmx decodes no instruction traces (Intel PT, CoreSight)"),
    ("--deltatime", "pmx script prints the sample time as perf's default"),
    ("--reltime", "pmx script prints the sample time as perf's default"),
    ("--ns", "pmx script prints the sample time as perf's default"),
    ("--demangle-kernel", "kernel symbols are not mangled"),
    ("--dlarg", "pmx loads no dlfilter libraries"),
    ("--dlfilter", "pmx loads no dlfilter libraries"),
    ("--list-dlfilters", "pmx loads no dlfilter libraries"),
    ("--full-source-path", "pmx script prints no source lines"),
    ("--guest-code", "pmx reads no guest machines"),
    ("--guestkallsyms", "pmx reads no guest machines"),
    ("--guestmodules", "pmx reads no guest machines"),
    ("--guestmount", "pmx reads no guest machines"),
    ("--guestvmlinux", "pmx reads no guest machines"),
    ("--inline", "use pmx report --inline"),
    ("--max-stack", "pmx script prints each call chain whole (-G hides it)"),
    ("--per-event-dump", "pmx script writes one stream"),
    ("--show-bpf-events", "pmx script prints the samples only; the side-band records are in perf report --tasks and --stats"),
    ("--show-cgroup-events", "pmx script prints the samples only; the side-band records are in perf report --tasks and --stats"),
    ("--show-lost-events", "pmx script prints the samples only; the side-band records are in perf report --tasks and --stats"),
    ("--show-mmap-events", "pmx script prints the samples only; the side-band records are in perf report --tasks and --stats"),
    ("--show-on-off-events", "pmx script prints the samples only; the side-band records are in perf report --tasks and --stats"),
    ("--show-round-events", "pmx script prints the samples only; the side-band records are in perf report --tasks and --stats"),
    ("--show-task-events", "pmx script prints the samples only; the side-band records are in perf report --tasks and --stats"),
    ("--show-text-poke-events", "pmx script prints the samples only; the side-band records are in perf report --tasks and --stats"),
    ("--switch-off", "pmx script reads the whole file"),
    ("--switch-on", "pmx script reads the whole file"),
    ("--time", "pmx script reads the whole file"),
    ("--symfs", "use pmx report --symfs"),
];

/// perf annotate's options pmx annotate does not take, and why.
pub const ANNOTATE: &[(&str, &str)] = &[
    ("-C", "pmx annotate has no CPU filter"),
    ("--cpu", "pmx annotate has no CPU filter"),
    ("--dsos", "give the binary with -d/--dso"),
    ("-D", "use perf script (pmx script)"),
    ("--dump-raw-trace", "use perf script (pmx script)"),
    (
        "-f",
        "pmx reads any file it can open and says which binary is missing",
    ),
    (
        "--force",
        "pmx reads any file it can open and says which binary is missing",
    ),
    (
        "--skip-missing",
        "pmx reads any file it can open and says which binary is missing",
    ),
    ("-k", "pmx reads kernel symbols from /proc/kallsyms"),
    ("--vmlinux", "pmx reads kernel symbols from /proc/kallsyms"),
    (
        "--ignore-vmlinux",
        "pmx reads kernel symbols from /proc/kallsyms",
    ),
    ("-m", "pmx reads kernel symbols from /proc/kallsyms"),
    ("--modules", "pmx reads kernel symbols from /proc/kallsyms"),
    (
        "-l",
        "pmx annotate prints each instruction's source line as DWARF has it",
    ),
    (
        "--print-line",
        "pmx annotate prints each instruction's source line as DWARF has it",
    ),
    (
        "-P",
        "pmx annotate prints each instruction's source line as DWARF has it",
    ),
    (
        "--full-paths",
        "pmx annotate prints each instruction's source line as DWARF has it",
    ),
    (
        "--source",
        "pmx annotate prints each instruction's source line as DWARF has it",
    ),
    (
        "--prefix",
        "pmx annotate prints each instruction's source line as DWARF has it",
    ),
    (
        "--prefix-strip",
        "pmx annotate prints each instruction's source line as DWARF has it",
    ),
    ("--disassembler-style", "use -M intel|att"),
    (
        "--asm-raw",
        "pmx disassembles with its own decoder (iced-x86), without raw bytes",
    ),
    (
        "--objdump",
        "pmx disassembles with its own decoder (iced-x86), without raw bytes",
    ),
    (
        "-n",
        "pmx annotate shows each instruction's share of the function's samples",
    ),
    (
        "--show-nr-samples",
        "pmx annotate shows each instruction's share of the function's samples",
    ),
    (
        "--show-total-period",
        "pmx annotate shows each instruction's share of the function's samples",
    ),
    (
        "--percent-type",
        "pmx annotate shows each instruction's share of the function's samples",
    ),
    ("-q", "pmx annotate prints its warnings always"),
    ("--quiet", "pmx annotate prints its warnings always"),
    ("-v", "pmx annotate prints its warnings always"),
    ("--verbose", "pmx annotate prints its warnings always"),
    ("--demangle", "pmx annotate prints perf's short names"),
    (
        "--demangle-kernel",
        "pmx annotate prints perf's short names",
    ),
    (
        "--group",
        "pmx annotate shows a sample-read group with --metrics",
    ),
    ("--itrace", "pmx decodes no instruction traces"),
    (
        "--percent-limit",
        "pmx annotate prints every sampled function",
    ),
    ("--stdio-color", "pmx annotate writes no colour"),
    ("--tui", "pmx annotate has one text layout (--stdio)"),
];

/// perf inject's options pmx inject does not take, and why.
pub const INJECT: &[(&str, &str)] = &[
    ("-f", "pmx reads any file it can open"),
    ("--force", "pmx reads any file it can open"),
    (
        "-j",
        "pmx reads JIT symbols from /tmp/perf-PID.map at report time",
    ),
    (
        "--jit",
        "pmx reads JIT symbols from /tmp/perf-PID.map at report time",
    ),
    ("-k", "pmx reads kernel symbols from /proc/kallsyms"),
    ("--vmlinux", "pmx reads kernel symbols from /proc/kallsyms"),
    ("--kallsyms", "pmx reads kernel symbols from /proc/kallsyms"),
    (
        "--ignore-vmlinux",
        "pmx reads kernel symbols from /proc/kallsyms",
    ),
    ("-s", "pmx records no scheduler tracepoint data"),
    ("--sched-stat", "pmx records no scheduler tracepoint data"),
    (
        "--buildid-all",
        "use -b: pmx adds the build ids of every binary the MMAP records name",
    ),
    ("--guest-data", "pmx reads no guest machines"),
    ("--guestmount", "pmx reads no guest machines"),
    ("--itrace", "pmx decodes no instruction traces"),
    ("--strip", "pmx decodes no instruction traces"),
    ("--vm-time-correlation", "pmx decodes no instruction traces"),
    (
        "--known-build-ids",
        "pmx reads the build ids from the binaries",
    ),
];

/// perf evlist's options pmx evlist does not take, and why.
pub const EVLIST: &[(&str, &str)] = &[
    ("-f", "pmx reads any file it can open"),
    ("--force", "pmx reads any file it can open"),
    ("-F", "use -v: the attr's sample_freq field"),
    ("--freq", "use -v: the attr's sample_freq field"),
    ("-g", "use -v: the attrs' group fields"),
    ("--group", "use -v: the attrs' group fields"),
    ("--trace-fields", "pmx reads no tracepoint formats"),
];

/// perf buildid-list's options pmx buildid-list does not take, and why.
pub const BUILDID_LIST: &[(&str, &str)] = &[
    ("-f", "pmx reads any file it can open"),
    ("--force", "pmx reads any file it can open"),
    (
        "-H",
        "pmx lists the file's BUILD_ID feature, not the binaries with samples",
    ),
    (
        "--with-hits",
        "pmx lists the file's BUILD_ID feature, not the binaries with samples",
    ),
    (
        "-k",
        "pmx reads the kernel's build id from /sys/kernel/notes, not the file",
    ),
    (
        "--kernel",
        "pmx reads the kernel's build id from /sys/kernel/notes, not the file",
    ),
    (
        "-m",
        "pmx reads the kernel's build id from /sys/kernel/notes, not the file",
    ),
    (
        "--kernel-maps",
        "pmx reads the kernel's build id from /sys/kernel/notes, not the file",
    ),
];

/// The message for an option of perf `command` (`script`, `annotate`,
/// `inject`, `evlist`, `buildid-list`) pmx does not take; `None` for any
/// other.
pub fn refused_option(command: &str, name: &str) -> Option<String> {
    let list = match command {
        "script" => SCRIPT,
        "annotate" => ANNOTATE,
        "inject" => INJECT,
        "evlist" => EVLIST,
        "buildid-list" => BUILDID_LIST,
        _ => return None,
    };
    let (opt, why) = list.iter().find(|(o, _)| *o == name)?;
    Some(format!(
        "perf {command} option {opt} is not supported by pmx {command}: {why}"
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn refusals_name_the_option() {
        let m = super::refused_option("script", "--itrace").unwrap();
        assert!(m.contains("--itrace") && m.contains("instruction traces"));
        assert!(super::refused_option("script", "-F").is_none());
        assert!(super::refused_option("stat", "--itrace").is_none());
    }
}
