//! The EXAMPLES of each man page: command lines from the manual
//! (docs/), each with what it does.

/// `(command line, what it does)` pairs of `command` (`pmx stat`); none
/// for a command without examples.
pub fn of(command: &str) -> &'static [(&'static str, &'static str)] {
    EXAMPLES
        .iter()
        .find(|(c, _)| *c == command)
        .map_or(&[], |(_, e)| e)
}

/// Every command with examples, and its examples.
pub const EXAMPLES: &[(&str, &[(&str, &str)])] = &[
    (
        "pmx",
        &[
            ("pmx stat -- sleep 1", "Count perf's default events for sleep 1."),
            ("pmx info", "What this machine can count, and why not."),
            ("pmx list cache", "The events whose names contain \"cache\"."),
            ("pmx record -g -- ./app && pmx report", "Sample ./app with call chains, then its hotspots."),
            ("pmx completions bash > /etc/bash_completion.d/pmx", "Complete subcommands, flags, event and metric names in bash."),
        ],
    ),
    (
        "pmx stat",
        &[
            ("pmx stat -e task-clock,page-faults -r 5 -- ./app", "Count two events over five runs: mean, standard deviation, spread."),
            ("pmx stat -a -A -e msr/tsc/,context-switches --duration 1", "Every CPU for one second, one row per CPU."),
            ("pmx stat -e '{cycles,instructions}:u' -x, -- ./app", "A group counted in user mode, as CSV."),
            ("pmx stat -M IPC,TopdownL1 -- ./app", "Derived metrics beside the counts; a metric whose input was not counted says which and why."),
            ("pmx stat -I 100 -e task-clock --plot out.svg -- ./app", "A row every 100 ms, and a chart of them."),
            ("pmx stat --compare -r 10 -- ./a ::: ./b", "Run A and B interleaved, ten times each, and compare them."),
        ],
    ),
    (
        "pmx tma",
        &[("pmx tma -l 2 -- ./app", "The top-down tree to level 2, with the bottleneck flagged.")],
    ),
    (
        "pmx analyze",
        &[("pmx analyze perf.csv -M IPC --tma", "Metrics and the top-down tree from counts perf stat -x, wrote earlier.")],
    ),
    (
        "pmx compare",
        &[
            ("pmx compare A.json B.json", "Is B different from A beyond noise? Per event and metric, with p-values."),
            ("pmx compare --tma A.json B.json", "Both top-down trees side by side."),
        ],
    ),
    (
        "pmx plot",
        &[("pmx plot intervals.csv -o out.png --per-event", "One line per event of a pmx stat -I file, as PNG.")],
    ),
    (
        "pmx record",
        &[
            ("pmx record -F 5000 -e cpu-clock -g -- ./app", "Sample ./app 5000 times a second with frame-pointer call chains into perf.data."),
            ("pmx record --call-graph dwarf -e cpu-clock -- ./app", "Call chains unwound from a copy of the stack (no frame pointers needed)."),
            ("pmx record -c 100000 -e '{task-clock,page-faults}:uS' -- ./app", "Sample the leader, read every member at each sample."),
        ],
    ),
    (
        "pmx report",
        &[
            ("pmx report -i app.data --sort dso,symbol --percent-limit 0.5", "Hotspots per binary and function."),
            ("pmx report --flamegraph app.svg --event cpu-clock", "A flame graph of the call chains."),
            ("pmx report --firefox app.json.gz --pprof app.pb.gz", "Exports for the Firefox Profiler and pprof."),
            ("pmx report --diff before.data after.data", "What changed between two recordings."),
        ],
    ),
    (
        "pmx script",
        &[
            ("pmx script -F comm,tid,time,sym", "One line per sample with perf's -F fields."),
            ("pmx script --json | jq -r .sym", "One JSON object per sample."),
        ],
    ),
    (
        "pmx annotate",
        &[("pmx annotate hot --metrics IPC", "hot's instructions with their samples and, for a {cycles,instructions}:S file, IPC per instruction.")],
    ),
    (
        "pmx serve",
        &[
            ("pmx serve", "Serve /metrics on 127.0.0.1:9464: perf's default events, per CPU."),
            ("pmx serve --listen 0.0.0.0:9464 -e page-faults,context-switches -M IPC --per-core", "Chosen events and metrics, per core."),
            ("pmx serve --config /etc/pmx/serve.conf", "Settings from a file (the package installs a commented one)."),
        ],
    ),
    (
        "pmx merge",
        &[("pmx merge --by host --json out-*.json", "One report from per-rank files, per host.")],
    ),
    (
        "pmx msr read",
        &[("pmx msr read IA32_PERFEVTSEL0 -a --decode", "A PMU register on every CPU, its fields decoded.")],
    ),
    (
        "pmx msr plan",
        &[("pmx msr plan -e LONGEST_LAT_CACHE.MISS -c 0", "Every write the msr backend would make, in order; no side effects.")],
    ),
    (
        "pmx encode",
        &[
            ("pmx encode --arch intel 'cpu/event=0x2e,umask=0x41/u'", "Register 0x41412e, config 0x412e."),
            ("pmx encode --arch amd 'cpu/event=0x4e1,umask=0xf7/'", "Config 0x40000f7e1 (event bits 8-11 in bits 32-35)."),
        ],
    ),
    (
        "pmx decode",
        &[
            ("pmx decode --arch intel 0x53412e", "Every field of an event-select value."),
            ("pmx decode --register fixed-ctrl 0x333", "The fixed counters' control register."),
        ],
    ),
    (
        "pmx list",
        &[("pmx list --raw-dump pmu", "The kernel PMUs' aliases, names only, as perf list --raw-dump.")],
    ),
    (
        "pmx explain",
        &[("pmx explain --cpu GenuineIntel-6-55-4 LONGEST_LAT_CACHE.MISS:u", "How an event resolves for a Skylake-SP: source, encoding, counters.")],
    ),
    (
        "pmx events fetch",
        &[("pmx events fetch", "This CPU's event tables into ~/.cache/pmx/events.")],
    ),
    (
        "pmx completions",
        &[
            ("pmx completions bash > ~/.local/share/bash-completion/completions/pmx", "bash, for one user."),
            ("pmx completions fish > ~/.config/fish/completions/pmx.fish", "fish, for one user."),
        ],
    ),
    (
        "pmx man",
        &[("pmx man --dir ~/.local/share/man/man1", "Write these pages where man finds them.")],
    ),
];
