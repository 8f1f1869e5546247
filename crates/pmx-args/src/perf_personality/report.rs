//! perf report's command line as pmx report's options: perf's sort keys
//! and `-F` fields as pmx's row keys and columns ([`fields`]), perf's
//! `-g`/`--call-graph` syntax ([`CallGraphDisplay::parse`]) and the perf
//! report options pmx does not take ([`refused_option`]); the filter lists
//! are `pmx_profile::perf_text::Filter::parse`.

/// The columns and row keys of perf report's `-F`/`--fields` (or
/// `-s`/`--sort`), in pmx's names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fields {
    /// pmx's row keys, comma-separated (`comm,dso,symbol`).
    pub sort: String,
    /// An Overhead column (`overhead`; perf's default).
    pub overhead: bool,
    /// A Children column (`overhead_children`); `None`: no `-F` (perf
    /// shows it whenever the file has call chains).
    pub children: Option<bool>,
    /// A Samples column (`sample`, or `-n`).
    pub samples: bool,
    /// A Period column (`period`).
    pub period: bool,
}

/// perf's key for a pmx row key, or the reason pmx has no such key.
fn key(k: &str) -> Result<Option<&'static str>, String> {
    Ok(Some(match k {
        "comm" => "comm",
        // perf's `pid` key is the thread (`Pid:Command`), as `tid`.
        "pid" | "tid" => "tid",
        "dso" => "dso",
        "sym" | "symbol" => "symbol",
        "cpu" => "cpu",
        "overhead" | "overhead_children" | "sample" | "period" => return Ok(None),
        "srcline" => return Err("srcline: use --lines (each row's source file:line)".into()),
        other => {
            return Err(format!(
                "{other}: not a key pmx report has (comm, pid, tid, dso, sym, cpu; columns overhead, sample, period)"
            ))
        }
    }))
}

/// perf report's `-F` (fields: columns and keys) and `-s` (keys) as
/// pmx's; `-n` adds the Samples column. Neither given: perf's default
/// (overhead; comm, dso, sym).
pub fn fields(f: Option<&str>, s: Option<&str>, nr_samples: bool) -> Result<Fields, String> {
    let mut out = Fields {
        samples: nr_samples,
        ..Fields::default()
    };
    let mut keys: Vec<&str> = Vec::new();
    let words = |v: Option<&str>| {
        (v.unwrap_or("").split(',').map(str::trim))
            .filter(|w| !w.is_empty())
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let (fw, sw) = (words(f), words(s));
    for w in fw.iter().chain(&sw) {
        match w.as_str() {
            "overhead" => out.overhead = true,
            "overhead_children" => out.children = Some(true),
            "sample" => out.samples = true,
            "period" => out.period = true,
            _ => {}
        }
        if let Some(k) = key(w)? {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    if fw.is_empty() {
        out.overhead = true;
    } else {
        out.children = out.children.or(Some(false));
    }
    if keys.is_empty() {
        keys = vec!["comm", "dso", "symbol"];
    }
    out.sort = keys.join(",");
    Ok(out)
}

/// perf report's `--tid LIST`: comma-separated thread ids.
pub fn tids(list: &str) -> Result<Vec<u32>, String> {
    (list.split(',').map(str::trim).filter(|w| !w.is_empty()))
        .map(|w| (w.parse()).map_err(|_| format!("--tid {w}: not a thread id")))
        .collect()
}

/// How perf report prints call chains (`-g`/`--call-graph`).
#[derive(Debug, Clone, PartialEq)]
pub struct CallGraphDisplay {
    /// `graph`, `flat`, `fractal`, `folded` or `none`.
    pub mode: String,
    /// Chains below this percent are hidden (perf's default 0.5).
    pub threshold: f64,
    /// At most this many chains per entry (0: all).
    pub print_limit: u32,
    /// Callers first (`caller`) or callees first (`callee`); `None`:
    /// not given (perf: callers first with `--children`).
    pub caller: Option<bool>,
    /// Chains by function (`function`, perf's default) or by address.
    pub by_address: bool,
}

impl Default for CallGraphDisplay {
    fn default() -> Self {
        CallGraphDisplay {
            mode: "graph".into(),
            threshold: 0.5,
            print_limit: 0,
            caller: None,
            by_address: false,
        }
    }
}

impl CallGraphDisplay {
    /// perf's `print_type,threshold[,print_limit],order,sort_key[,branch][,value]`,
    /// any part in any place as perf reads it; `inverted` is `-G`.
    pub fn parse(spec: &str, inverted: bool) -> Result<CallGraphDisplay, String> {
        let mut d = CallGraphDisplay {
            caller: inverted.then_some(true),
            ..CallGraphDisplay::default()
        };
        let mut numbers = 0;
        for w in spec.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match w {
                "graph" | "flat" | "fractal" | "folded" | "none" => d.mode = w.into(),
                "caller" => d.caller = Some(true),
                "callee" => d.caller = Some(false),
                "function" => d.by_address = false,
                "address" => d.by_address = true,
                "percent" | "period" | "count" | "branch" | "nobranch" => {}
                n => {
                    let v: f64 = n.parse().map_err(|_| {
                        format!("-g {spec}: '{n}' is none of graph, flat, fractal, folded, none, caller, callee, function, address, a threshold or a limit")
                    })?;
                    match numbers {
                        0 if (0.0..=100.0).contains(&v) => d.threshold = v,
                        1 if v >= 0.0 && v.fract() == 0.0 => d.print_limit = v as u32,
                        _ => {
                            return Err(format!(
                                "-g {spec}: '{n}' is not a threshold (0-100) or a print limit"
                            ))
                        }
                    }
                    numbers += 1;
                }
            }
        }
        Ok(d)
    }
}

/// perf report's options pmx report does not take, and why.
pub const REFUSED: &[(&str, &str)] = &[
    ("-D", "use `perf script` (pmx script) for the records"),
    (
        "--dump-raw-trace",
        "use `perf script` (pmx script) for the records",
    ),
    ("-p", "pmx has no parent filter"),
    ("--parent", "pmx has no parent filter"),
    ("-x", "pmx has no parent filter"),
    ("--exclude-other", "pmx has no parent filter"),
    ("-w", "pmx sizes its columns to their contents"),
    ("--column-widths", "pmx sizes its columns to their contents"),
    ("--hierarchy", "pmx report has no hierarchy view"),
    ("--itrace", "pmx decodes no instruction traces"),
    ("--time", "pmx report reads the whole file"),
    ("--switch-on", "pmx report reads the whole file"),
    ("--switch-off", "pmx report reads the whole file"),
    (
        "--percentage",
        "pmx's shares are of the event's total (perf's absolute)",
    ),
    ("--ignore-callees", "pmx has no callee filter"),
    ("-k", "pmx reads kernel symbols from /proc/kallsyms"),
    ("--vmlinux", "pmx reads kernel symbols from /proc/kallsyms"),
    ("--kallsyms", "pmx reads kernel symbols from /proc/kallsyms"),
    ("--gtk", "pmx has no GTK interface"),
    ("--mmaps", "pmx report lists no memory maps; use pmx script"),
    ("--socket-filter", "pmx has no socket filter"),
    (
        "-C",
        "pmx report has no CPU filter; -s cpu shows each CPU's rows",
    ),
    (
        "--cpu",
        "pmx report has no CPU filter; -s cpu shows each CPU's rows",
    ),
    ("-f", "pmx reads any file it can open"),
    ("--force", "pmx reads any file it can open"),
    ("-I", "--header prints every feature pmx reads"),
    ("--show-info", "--header prints every feature pmx reads"),
    (
        "-m",
        "pmx resolves kernel module symbols from /proc/kallsyms",
    ),
    (
        "--modules",
        "pmx resolves kernel module symbols from /proc/kallsyms",
    ),
    (
        "-U",
        "pmx shows unresolved addresses and says which binaries cost them",
    ),
    (
        "--hide-unresolved",
        "pmx shows unresolved addresses and says which binaries cost them",
    ),
    ("--asm-raw", "use pmx annotate"),
    ("--source", "use pmx annotate"),
    (
        "--objdump",
        "pmx disassembles with its own decoder (pmx annotate)",
    ),
    ("--demangle-kernel", "kernel symbols are not mangled"),
    ("--disable-order", "pmx orders the records by time"),
    (
        "--full-source-path",
        "--lines shows the source path as DWARF has it",
    ),
    (
        "--group-sort-idx",
        "pmx sorts a group's table by its leader",
    ),
    ("--ignore-vmlinux", "pmx reads no vmlinux"),
    ("--ns", "pmx report prints no times"),
    (
        "--percent-type",
        "pmx's shares are of the event's total period",
    ),
    ("--prefix", "use pmx annotate"),
    ("--prefix-strip", "use pmx annotate"),
    ("--pretty", "pmx has one layout per output"),
    ("--raw-trace", "pmx reads no tracepoint data"),
    ("--samples", "pmx keeps no samples per row; use pmx script"),
    (
        "--show-cpu-utilization",
        "pmx report prints no CPU utilization",
    ),
    ("--show-on-off-events", "pmx report reads the whole file"),
    (
        "--show-ref-call-graph",
        "pmx records no reference call graphs (-e with call-graph terms)",
    ),
    ("--show-total-period", "-F period shows each row's period"),
    ("--skip-empty", "pmx report shows every event with samples"),
    ("--stdio-color", "pmx report writes no colour"),
    ("--time-quantum", "pmx report reads the whole file"),
    ("--disassembler-style", "use pmx annotate -M intel|att"),
];

/// The message for a perf report option pmx does not take, naming it and
/// why; `None` for any other name.
pub fn refused_option(name: &str) -> Option<String> {
    let (opt, why) = REFUSED.iter().find(|(o, _)| *o == name)?;
    Some(format!(
        "perf report option {opt} is not supported by pmx report: {why}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_fields_and_keys_as_pmx_keys() {
        let f = fields(Some("comm,dso,sym"), None, false).unwrap();
        assert_eq!(f.sort, "comm,dso,symbol");
        assert!(!f.overhead && !f.samples);
        let f = fields(Some("overhead,sym"), None, true).unwrap();
        assert_eq!(
            (f.sort.as_str(), f.overhead, f.samples),
            ("symbol", true, true)
        );
        let f = fields(Some("overhead_children,sym"), None, false).unwrap();
        assert_eq!((f.overhead, f.children), (false, Some(true)));
        assert_eq!(
            fields(Some("sym"), None, false).unwrap().children,
            Some(false)
        );
        assert_eq!(fields(None, Some("sym"), false).unwrap().children, None);
        let f = fields(None, Some("pid,sym"), false).unwrap();
        assert_eq!((f.sort.as_str(), f.overhead), ("tid,symbol", true));
        assert_eq!(fields(None, None, false).unwrap().sort, "comm,dso,symbol");
        assert!(fields(None, Some("weight"), false)
            .unwrap_err()
            .starts_with("weight:"));
    }

    #[test]
    fn perf_call_graph_syntax() {
        let d = CallGraphDisplay::parse("graph,0.5,caller", false).unwrap();
        assert_eq!(
            (d.mode.as_str(), d.threshold, d.caller),
            ("graph", 0.5, Some(true))
        );
        let d = CallGraphDisplay::parse("flat,1,10,callee,address", true).unwrap();
        assert_eq!(
            (d.threshold, d.print_limit, d.caller, d.by_address),
            (1.0, 10, Some(false), true)
        );
        assert_eq!(
            CallGraphDisplay::parse("folded", false).unwrap().caller,
            None
        );
        assert_eq!(
            CallGraphDisplay::parse("folded", true).unwrap().caller,
            Some(true)
        );
        assert_eq!(CallGraphDisplay::parse("none", false).unwrap().mode, "none");
        assert!(CallGraphDisplay::parse("grph", false).is_err());
        assert!(CallGraphDisplay::parse("graph,150", false).is_err());
    }

    #[test]
    fn refusals() {
        assert!(refused_option("--hierarchy")
            .unwrap()
            .contains("--hierarchy"));
        assert!(refused_option("--stdio").is_none());
    }
}
