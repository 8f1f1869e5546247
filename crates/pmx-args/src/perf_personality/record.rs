//! perf record's command line: the options of perf 6.1's `record -h` that
//! pmx record does not take, each with the reason, so a perf user gets the
//! option's name and why instead of "unexpected argument".

/// perf record's options pmx record does not take, and why.
pub const REFUSED: &[(&str, &str)] = &[
    ("--kcore", "pmx reads kernel symbols from /proc/kallsyms (cached by kernel build id) and copies no /proc/kcore"),
    ("-D", "pmx record starts counting when the command starts; use --duration to stop"),
    ("--delay", "pmx record starts counting when the command starts; use --duration to stop"),
    ("-G", "pmx records no cgroup events"),
    ("--cgroup", "pmx records no cgroup events"),
    ("--all-cgroups", "pmx records no cgroup events"),
    ("-I", "pmx records no interrupt registers"),
    ("--intr-regs", "pmx records no interrupt registers"),
    ("--user-regs", "pmx records user registers only for --call-graph dwarf"),
    ("-k", "pmx's samples carry the perf clock's time"),
    ("--clockid", "pmx's samples carry the perf clock's time"),
    ("-n", "pmx record always samples"),
    ("--no-samples", "pmx record always samples"),
    ("-P", "pmx's samples always carry the period"),
    ("--period", "pmx's samples always carry the period"),
    ("-r", "pmx does not change its scheduling priority"),
    ("--realtime", "pmx does not change its scheduling priority"),
    ("-S", "pmx has no overwritable snapshot ring"),
    ("--snapshot", "pmx has no overwritable snapshot ring"),
    ("--overwrite", "pmx has no overwritable snapshot ring"),
    ("-s", "pmx record writes no per-thread READ records"),
    ("--stat", "pmx record writes no per-thread READ records"),
    ("-T", "pmx's samples always carry the time"),
    ("--timestamp", "pmx's samples always carry the time"),
    ("-u", "pmx samples a command, processes, threads or CPUs, not a user's tasks"),
    ("--uid", "pmx samples a command, processes, threads or CPUs, not a user's tasks"),
    ("--transaction", "TSX transaction flags are a hardware PMU's"),
    ("--affinity", "pmx reads each CPU's ring from one thread"),
    ("--aio", "pmx writes the file from one thread without POSIX AIO"),
    ("--all-kernel", "give each event :k in -e"),
    ("--all-user", "give each event :u in -e"),
    ("--aux-sample", "pmx records no AUX area (Intel PT, CoreSight)"),
    ("--buildid-mmap", "pmx writes build ids in the BUILD_ID feature, not in MMAP2 records"),
    ("--clang-opt", "pmx loads no BPF programs"),
    ("--clang-path", "pmx loads no BPF programs"),
    ("--no-bpf-event", "pmx records no BPF events"),
    ("--control", "pmx has no control fifo; use --duration or Ctrl-C"),
    ("--debuginfod", "pmx fetches nothing from debuginfod"),
    ("--dry-run", "pmx has no dry run"),
    ("--exclude-perf", "pmx does not filter its own samples"),
    ("--filter", "pmx passes no tracepoint filters"),
    ("--group", "write {a,b} groups in -e"),
    ("--kernel-callchains", "pmx records the call chains --call-graph asks for"),
    ("--user-callchains", "pmx records the call chains --call-graph asks for"),
    ("--max-size", "pmx record does not stop at a size; use --switch-output=SIZE"),
    ("--mmap-flush", "pmx drains every ring each round"),
    ("--no-buffering", "pmx drains the rings every round"),
    ("--num-thread-synthesize", "pmx synthesizes the existing tasks from one thread"),
    ("--per-thread", "pmx maps one ring per CPU for a command"),
    ("--proc-map-timeout", "pmx reads /proc maps without a timeout"),
    ("--running-time", "pmx record writes no running/enabled times"),
    ("--sample-cpu", "pmx's samples always carry the CPU"),
    ("--sample-identifier", "pmx's samples always carry PERF_SAMPLE_IDENTIFIER when there are several events"),
    ("--strict-freq", "pmx says when the kernel lowered the frequency"),
    ("--switch-max-files", "pmx keeps every --switch-output file"),
    ("--switch-output-event", "pmx switches on a size, a time or SIGUSR2"),
    ("--synth", "pmx always synthesizes the existing tasks and maps"),
    ("--tail-synthesize", "pmx synthesizes the existing tasks at the start"),
    ("--timestamp-boundary", "pmx writes the first and last sample time always"),
    ("--timestamp-filename", "pmx names --switch-output files perf.data.N"),
    ("--vmlinux", "pmx reads kernel symbols from /proc/kallsyms"),
    ("-v", "pmx record always says what it opened and why an event failed to open"),
    ("--verbose", "pmx record always says what it opened and why an event failed to open"),
];

/// The message for a perf record option pmx does not take, naming it and
/// why; `None` for any other name.
pub fn refused_option(name: &str) -> Option<String> {
    let (opt, why) = REFUSED.iter().find(|(o, _)| *o == name)?;
    Some(format!(
        "perf record option {opt} is not supported by pmx record: {why}"
    ))
}
