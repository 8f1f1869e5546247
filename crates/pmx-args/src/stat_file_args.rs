//! perf's `record` and `report` words of `perf stat` and what may follow
//! them, as perf 6.1 parses them (`perf-stat(1)`, "STAT RECORD" and "STAT
//! REPORT"): the word in full or cut to at least three letters (`rec`,
//! `repo`); after `record`, any of stat's options again (perf parses its
//! whole option table a second time), `-o` naming the data file wherever
//! it stands; after `report`, only `-i FILE` and the aggregation flags
//! `-A`, `--per-core`, `--per-die`, `--per-socket`, `--per-node`.

use crate::stat_flags::FlagError;
use pmx_count::stat::Aggregation;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// `perf stat report`'s options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportOptions {
    /// `-i FILE` (`-`: standard input; default: standard input when it is
    /// a pipe, else `perf.data`, as perf).
    pub input: PathBuf,
    /// `-A`/`--per-core`/`--per-die`/`--per-socket`/`--per-node`: fold
    /// the file's counts so instead of as it was recorded; the last one
    /// given wins, as in perf.
    pub aggregation: Option<Aggregation>,
}

/// `word` is perf's subcommand `full` (three letters at least).
fn is_word(word: &str, full: &str) -> bool {
    word.len() > 2 && full.starts_with(word)
}

/// `pmx stat [A] record [B] CMD…` as the words `[A] [B] CMD…`, for
/// stat's options to be parsed again with those after `record` (perf
/// takes them on both sides); `None` when the command (`command`, the
/// tail of `words` after stat's options) does not start with `record`.
/// `words` starts with `stat`.
pub fn record_words<S: AsRef<OsStr>>(words: &[S], command: &[String]) -> Option<Vec<OsString>> {
    let first = command.first()?;
    if !is_word(first, "record") || command.len() > words.len() {
        return None;
    }
    let cut = words.len() - command.len();
    let tail_matches = (words[cut..].iter())
        .zip(command)
        .all(|(w, c)| w.as_ref() == OsStr::new(c));
    if !tail_matches {
        return None;
    }
    let mut head = &words[..cut];
    // `perf stat -- record …`: the `--` ended stat's options before the
    // word; the options after it still count.
    if head.last().is_some_and(|w| w.as_ref() == "--") {
        head = &head[..cut - 1];
    }
    let mut out: Vec<OsString> = head.iter().map(|w| w.as_ref().to_os_string()).collect();
    out.extend(command[1..].iter().map(OsString::from));
    Some(out)
}

/// `-r` with `record`: perf refuses any repeat count but 1 (`-r 0`
/// included).
pub fn check_record(repeat: u32) -> Result<(), FlagError> {
    match repeat {
        1 => Ok(()),
        _ => Err(FlagError(format!(
            "stat record: -r {repeat}: -r cannot be used with record (perf refuses it too)"
        ))),
    }
}

/// The aggregation a `report` flag names.
fn aggregation_flag(flag: &str) -> Option<Aggregation> {
    Some(match flag {
        "-A" | "--no-aggr" => Aggregation::PerCpu,
        "--per-core" => Aggregation::PerCore,
        "--per-die" => Aggregation::PerDie,
        "--per-socket" => Aggregation::PerSocket,
        "--per-node" => Aggregation::PerNode,
        _ => return None,
    })
}

/// Standard input is a pipe (perf's `report` reads it then without
/// `-i`).
fn stdin_is_pipe() -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata("/proc/self/fd/0").is_ok_and(|m| m.file_type().is_fifo())
}

/// Take perf's `report` subcommand and its options off the front of
/// `command`; `None` when it does not start with `report`. An option
/// perf's `report` does not take is an error naming it. `before`: the
/// aggregation of stat's flags before `report`, which pmx honours when
/// none follows it (perf ignores them).
pub fn split(
    command: &mut Vec<String>,
    before: Aggregation,
) -> Result<Option<ReportOptions>, FlagError> {
    if !command.first().is_some_and(|w| is_word(w, "report")) {
        return Ok(None);
    }
    let words: Vec<String> = command.drain(..).skip(1).collect();
    let mut input: Option<PathBuf> = None;
    let mut aggregation = None;
    let mut it = words.into_iter();
    while let Some(a) = it.next() {
        if let Some(how) = aggregation_flag(&a) {
            aggregation = Some(how);
        } else if a == "-i" || a == "--input" {
            let v = it
                .next()
                .ok_or_else(|| FlagError(format!("stat report: {a}: give a file name")))?;
            input = Some(v.into());
        } else if let Some(v) = a.strip_prefix("--input=") {
            input = Some(v.into());
        } else if let Some(v) = a.strip_prefix("-i").filter(|v| !v.is_empty()) {
            input = Some(v.into());
        } else if a.starts_with('-') && a != "-" {
            return Err(FlagError(format!(
                "stat report: unknown option '{a}' (perf stat report takes -i FILE, -A, --per-core, --per-die, --per-socket, --per-node)"
            )));
        } else {
            return Err(FlagError(format!(
                "stat report: unexpected '{a}' (perf stat report takes -i FILE and the aggregation flags)"
            )));
        }
    }
    let input =
        input
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| match stdin_is_pipe() {
                true => "-".into(),
                false => "perf.data".into(),
            });
    let before = Some(before).filter(|a| *a != Aggregation::Total);
    Ok(Some(ReportOptions {
        input,
        aggregation: aggregation.or(before),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn record_options_on_both_sides_are_parsed_together() {
        let line = words(&[
            "stat", "-e", "a", "record", "-o", "f", "-a", "--", "ls", "-l",
        ]);
        let command = words(&["record", "-o", "f", "-a", "--", "ls", "-l"]);
        let got = record_words(&line, &command).unwrap();
        let want: Vec<OsString> = ["stat", "-e", "a", "-o", "f", "-a", "--", "ls", "-l"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(got, want);
        // Cut to three letters, and after `--`.
        let line = words(&["stat", "--", "rec", "true"]);
        let got = record_words(&line, &words(&["rec", "true"])).unwrap();
        assert_eq!(got, vec![OsString::from("stat"), "true".into()]);
        // Not perf's word: a command named `re`, or `report`.
        assert_eq!(record_words(&words(&["stat", "re"]), &words(&["re"])), None);
        let line = words(&["stat", "report"]);
        assert_eq!(record_words(&line, &words(&["report"])), None);
        assert!(check_record(1).is_ok());
        assert!(check_record(0).unwrap_err().0.contains("-r 0"));
        assert!(check_record(3).unwrap_err().0.contains("perf refuses"));
    }

    #[test]
    fn report_takes_perfs_options_only() {
        let mut c = words(&["report", "-i", "f.data", "--per-core"]);
        let got = split(&mut c, Aggregation::Total).unwrap().unwrap();
        assert_eq!(got.input, PathBuf::from("f.data"));
        assert_eq!(got.aggregation, Some(Aggregation::PerCore));
        assert!(c.is_empty());
        let mut c = words(&["repo", "--input=g", "-A", "--per-socket"]);
        let got = split(&mut c, Aggregation::Total).unwrap().unwrap();
        assert_eq!(
            (got.input, got.aggregation),
            ("g".into(), Some(Aggregation::PerSocket))
        );
        let mut c = words(&["report", "-ih.data", "--per-node", "--per-die"]);
        let got = split(&mut c, Aggregation::Total).unwrap().unwrap();
        assert_eq!(
            (got.input, got.aggregation),
            ("h.data".into(), Some(Aggregation::PerDie))
        );
        let mut c = words(&["report"]);
        let got = split(&mut c, Aggregation::PerSocket).unwrap().unwrap();
        assert_eq!(got.aggregation, Some(Aggregation::PerSocket));
        let mut c = words(&["report", "-A"]);
        let got = split(&mut c, Aggregation::PerSocket).unwrap().unwrap();
        assert_eq!(got.aggregation, Some(Aggregation::PerCpu));
        let mut c = words(&["ls", "report"]);
        assert_eq!(split(&mut c, Aggregation::Total), Ok(None));
        assert_eq!(c, words(&["ls", "report"]));
        let mut c = words(&["report", "--per-thread"]);
        let e = split(&mut c, Aggregation::Total).unwrap_err().0;
        assert!(e.contains("unknown option '--per-thread'"), "{e}");
        let mut c = words(&["report", "-x,"]);
        assert!(split(&mut c, Aggregation::Total)
            .unwrap_err()
            .0
            .contains("'-x,'"));
        let mut c = words(&["report", "-i"]);
        assert!(split(&mut c, Aggregation::Total)
            .unwrap_err()
            .0
            .contains("give a file name"));
        let mut c = words(&["report", "true"]);
        assert!(split(&mut c, Aggregation::Total)
            .unwrap_err()
            .0
            .contains("unexpected 'true'"));
    }
}
