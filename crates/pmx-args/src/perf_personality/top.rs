//! perf top's command line as pmx top's: every option of perf 6.1's
//! `top -h` is taken (the same flag, a renamed one, or accepted because
//! pmx already does what it asks) or refused by name with the reason.
//! perf's parser takes `-p 42`, `-p42`, `--pid 42`, `--pid=42` and
//! bundled short flags (`-ag`); so does this.

use std::ffi::OsString;

/// What becomes of one perf top option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// pmx top's flag of this name, with the value if the option has one.
    As(&'static str),
    /// Accepted, nothing to pass: pmx top already does this.
    Accept,
    /// `--call-graph`: the recording mode only (pmx top shows children
    /// beside self; perf's print options have no counterpart).
    CallGraph,
    /// Refused, with the reason.
    Refuse(&'static str),
}

use Action::*;

/// perf top 6.1's options: short name, long name, takes a value, action.
const OPTIONS: &[(Option<char>, &str, bool, Action)] = &[
    (Some('a'), "all-cpus", false, As("-a")),
    (Some('b'), "branch-any", false, Refuse("taken-branch sampling needs a hardware PMU's LBR, which pmx does not program")),
    (Some('c'), "count", true, As("-c")),
    (Some('C'), "cpu", true, As("-C")),
    (Some('d'), "delay", true, As("-d")),
    (Some('D'), "dump-symtab", false, Refuse("pmx prints no symbol table; `pmx report` names each sample's symbol")),
    (Some('E'), "entries", true, As("-E")),
    (Some('e'), "event", true, As("-e")),
    (Some('f'), "count-filter", true, Refuse("pmx top filters rows by name (`/` in the terminal UI), not by count")),
    (Some('F'), "freq", true, As("-F")),
    (Some('g'), "", false, As("-g")),
    (Some('G'), "cgroup", true, Refuse("pmx top samples no cgroup events")),
    (Some('i'), "no-inherit", false, Refuse("pmx top follows every thread of a -p process, new ones too; give -t for single threads")),
    (Some('j'), "branch-filter", true, Refuse("taken-branch sampling needs a hardware PMU's LBR, which pmx does not program")),
    (Some('K'), "hide_kernel_symbols", false, Refuse("to leave the kernel out, sample user space only: -e EVENT:u")),
    (Some('k'), "vmlinux", true, Refuse("pmx reads kernel symbols from /proc/kallsyms")),
    (Some('M'), "disassembler-style", true, Refuse("pmx top's annotate view prints AT&T syntax; `pmx annotate --syntax intel` prints Intel's")),
    (Some('m'), "mmap-pages", true, As("-m")),
    (Some('n'), "show-nr-samples", false, Accept),
    (Some('p'), "pid", true, As("-p")),
    (Some('r'), "realtime", true, Refuse("pmx does not change its scheduling priority")),
    (Some('s'), "sort", true, Refuse("pmx top sorts by samples; `s` in the terminal UI cycles the sort key (samples, command, binary, symbol)")),
    (Some('t'), "tid", true, As("-t")),
    (Some('U'), "hide_user_symbols", false, Refuse("to leave user space out, sample the kernel only: -e EVENT:k")),
    (Some('u'), "uid", true, Refuse("pmx top samples CPUs, processes or threads, not a user's tasks")),
    (Some('v'), "verbose", false, Accept),
    (Some('w'), "column-widths", true, Refuse("pmx top sizes its columns to the terminal")),
    (Some('z'), "zero", false, As("-z")),
    (None, "all-cgroups", false, Refuse("pmx top samples no cgroup events")),
    (None, "asm-raw", false, Refuse("pmx top's annotate view shows no instruction bytes")),
    (None, "call-graph", true, CallGraph),
    (None, "children", false, Accept),
    (None, "no-children", false, Accept),
    (None, "comms", true, Refuse("pmx top filters rows by name: `/` in the terminal UI")),
    (None, "demangle-kernel", false, Refuse("pmx shows kernel symbols as /proc/kallsyms names them")),
    (None, "dsos", true, Refuse("pmx top filters rows by name: `/` in the terminal UI")),
    (None, "fields", true, Refuse("pmx top's columns are share, samples, command, binary and symbol")),
    (None, "force", false, Accept),
    (None, "group", false, Refuse("write {a,b} groups in -e")),
    (None, "group-sort-idx", true, Refuse("pmx top sorts a group's rows by its leader's samples")),
    (None, "hierarchy", false, Refuse("pmx top shows flat rows")),
    (None, "ignore-callees", true, Refuse("pmx top shows no call-graph tree")),
    (None, "ignore-vmlinux", false, Accept),
    (None, "kallsyms", true, Refuse("pmx reads kernel symbols from this machine's /proc/kallsyms")),
    (None, "max-stack", true, Refuse("pmx top keeps the call chains the kernel gives")),
    (None, "namespaces", false, Refuse("pmx top records no namespace events")),
    (None, "no-bpf-event", false, Accept),
    (None, "num-thread-synthesize", true, Refuse("pmx synthesizes the existing tasks from one thread")),
    (None, "objdump", true, Refuse("pmx disassembles with its own decoder (iced-x86), not objdump")),
    (None, "overwrite", false, Refuse("pmx has no overwritable ring")),
    (None, "percent-limit", true, Refuse("pmx top shows the -E first rows; `/` filters them by name")),
    (None, "percentage", true, Refuse("pmx top's shares are of every sample shown")),
    (None, "prefix", true, Refuse("pmx top's annotate view reads source files where the debug info names them")),
    (None, "prefix-strip", true, Refuse("pmx top's annotate view reads source files where the debug info names them")),
    (None, "proc-map-timeout", true, Refuse("pmx reads /proc maps without a timeout")),
    (None, "raw-trace", false, Refuse("pmx top shows no tracepoint fields")),
    (None, "show-on-off-events", false, Refuse("pmx top has no --switch-on/--switch-off")),
    (None, "show-total-period", false, Refuse("pmx top shows samples, not periods")),
    (None, "source", false, Accept),
    (None, "stdio", false, As("--stdio")),
    (None, "stitch-lbr", false, Refuse("LBR call stacks need a hardware PMU's LBR, which pmx does not program")),
    (None, "switch-off", true, Refuse("pmx top considers every sample")),
    (None, "switch-on", true, Refuse("pmx top considers every sample")),
    (None, "sym-annotate", true, Refuse("press Enter on a row in pmx top's terminal UI, or `pmx annotate SYMBOL` on a recording")),
    (None, "symbols", true, Refuse("pmx top filters rows by name: `/` in the terminal UI")),
    (None, "tui", false, Accept),
    (Some('h'), "help", false, As("--help")),
];

/// A perf top option pmx refuses, or one perf top does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

fn find_long(name: &str) -> Option<&'static (Option<char>, &'static str, bool, Action)> {
    OPTIONS.iter().find(|o| !o.1.is_empty() && o.1 == name)
}

fn find_short(c: char) -> Option<&'static (Option<char>, &'static str, bool, Action)> {
    OPTIONS.iter().find(|o| o.0 == Some(c))
}

/// The name perf's usage gives an option: `-p/--pid`, `-g`, `--stdio`.
fn named(o: &(Option<char>, &str, bool, Action)) -> String {
    match (o.0, o.1) {
        (Some(c), "") => format!("-{c}"),
        (Some(c), l) => format!("-{c}/--{l}"),
        (None, l) => format!("--{l}"),
    }
}

/// `perf top ARGS` (the words after `top`) as `pmx top`'s words.
pub fn command_line(args: &[OsString]) -> Result<Vec<OsString>, Refused> {
    let mut out: Vec<OsString> = vec!["top".into()];
    let mut words = args.iter();
    while let Some(w) = words.next() {
        let Some(s) = w.to_str() else {
            return Err(Refused(format!(
                "perf top takes no argument {}",
                w.to_string_lossy()
            )));
        };
        let mut value_of =
            |o: &(Option<char>, &str, bool, Action), inline: Option<&str>| match inline {
                Some(v) => Ok(OsString::from(v)),
                None => words
                    .next()
                    .cloned()
                    .ok_or_else(|| Refused(format!("perf top option {} needs a value", named(o)))),
            };
        if let Some(long) = s.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let Some(o) = find_long(name) else {
                return Err(Refused(format!("perf top has no option --{name}")));
            };
            let value = if o.2 {
                Some(value_of(o, inline)?)
            } else {
                None
            };
            apply(o, value, &mut out)?;
        } else if let Some(shorts) = s.strip_prefix('-').filter(|r| !r.is_empty()) {
            for (i, c) in shorts.char_indices() {
                let Some(o) = find_short(c) else {
                    return Err(Refused(format!("perf top has no option -{c}")));
                };
                if o.2 {
                    let rest = &shorts[i + c.len_utf8()..];
                    let value = value_of(o, (!rest.is_empty()).then_some(rest))?;
                    apply(o, Some(value), &mut out)?;
                    break;
                }
                apply(o, None, &mut out)?;
            }
        } else {
            return Err(Refused(format!(
                "perf top takes no command or argument ({s}): give -p PID or -t TID to watch tasks"
            )));
        }
    }
    Ok(out)
}

/// Add what option `o` (with `value`) becomes to `out`.
fn apply(
    o: &(Option<char>, &str, bool, Action),
    value: Option<OsString>,
    out: &mut Vec<OsString>,
) -> Result<(), Refused> {
    match o.3 {
        As(flag) => {
            out.push(flag.into());
            out.extend(value);
        }
        Accept => {}
        CallGraph => {
            let v = value.unwrap_or_default();
            let v = v.to_string_lossy();
            let mut parts = v.split(',');
            let mode = parts.next().unwrap_or("");
            let mode = match (mode, parts.next()) {
                ("dwarf", Some(size)) if size.parse::<u64>().is_ok() => format!("dwarf,{size}"),
                ("fp" | "dwarf" | "lbr", _) => mode.to_string(),
                _ => {
                    return Err(Refused(format!(
                        "perf top --call-graph {v}: the recording mode comes first (fp, dwarf[,SIZE] or lbr)"
                    )))
                }
            };
            out.extend(["--call-graph".into(), mode.into()]);
        }
        Refuse(why) => {
            return Err(Refused(format!(
                "perf top option {} is not supported by pmx top: {why}",
                named(o)
            )))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(words: &str) -> Result<String, String> {
        let args: Vec<OsString> = words.split_whitespace().map(OsString::from).collect();
        command_line(&args)
            .map(|v| {
                (v.iter().map(|w| w.to_string_lossy().into_owned()))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .map_err(|e| e.0)
    }

    #[test]
    fn perf_top_words_become_pmx_top_words() {
        assert_eq!(line(""), Ok("top".into()));
        assert_eq!(
            line("-ag -p42 --delay=3 -E 5 --stdio -n --tui -F max"),
            Ok("top -a -g -p 42 -d 3 -E 5 --stdio -F max".into())
        );
        assert_eq!(
            line("--cpu 0-1 -e cpu-clock"),
            Ok("top -C 0-1 -e cpu-clock".into())
        );
        assert_eq!(
            line("--call-graph dwarf,4096,graph,0.5,caller"),
            Ok("top --call-graph dwarf,4096".into())
        );
        assert_eq!(
            line("--call-graph=fp,graph"),
            Ok("top --call-graph fp".into())
        );
        assert_eq!(line("-m 64 -z"), Ok("top -m 64 -z".into()));
    }

    #[test]
    fn refusals_name_the_option_and_why() {
        let e = line("-K").unwrap_err();
        assert!(
            e.contains("-K/--hide_kernel_symbols") && e.contains(":u"),
            "{e}"
        );
        let e = line("--sort dso").unwrap_err();
        assert!(
            e.starts_with("perf top option -s/--sort is not supported"),
            "{e}"
        );
        assert_eq!(
            line("--bogus").unwrap_err(),
            "perf top has no option --bogus"
        );
        assert_eq!(line("-ax").unwrap_err(), "perf top has no option -x");
        assert!(line("-p").unwrap_err().contains("needs a value"));
        assert!(line("sleep 1").unwrap_err().contains("no command"));
        assert!(line("--call-graph graph")
            .unwrap_err()
            .contains("fp, dwarf"));
    }

    #[test]
    fn every_option_of_perf_top_h_is_listed() {
        // perf 6.1's `perf top -h`, long names (and `-g`).
        let perf = "all-cpus branch-any count cpu delay dump-symtab entries event \
            count-filter freq cgroup no-inherit branch-filter hide_kernel_symbols vmlinux \
            disassembler-style mmap-pages show-nr-samples pid realtime sort tid \
            hide_user_symbols uid verbose column-widths zero all-cgroups asm-raw call-graph \
            children comms demangle-kernel dsos fields force group group-sort-idx hierarchy \
            ignore-callees ignore-vmlinux kallsyms max-stack namespaces no-bpf-event \
            num-thread-synthesize objdump overwrite percent-limit percentage prefix \
            prefix-strip proc-map-timeout raw-trace show-on-off-events show-total-period \
            source stdio stitch-lbr switch-off switch-on sym-annotate symbols tui";
        for name in perf.split_whitespace() {
            assert!(find_long(name).is_some(), "--{name}");
        }
        assert!(find_short('g').is_some());
    }
}
