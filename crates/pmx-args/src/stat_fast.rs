//! `pmx stat`'s common command lines read without clap: `-e`, `-x`,
//! `-o`, `-a`, `-j`, `-r` and a command after `--`
//! (`pmx stat -e task-clock -x, -- true`). Building clap's parser for
//! stat's ~65 flags and parsing with it is 0.6 M instructions, 40% of
//! pmx's user-space start-up, so [`common`] recognizes the few flags
//! most lines use and declines everything else: any other flag, a
//! value clap would refuse or read differently (empty, starting with
//! `-`, not UTF-8, not a number), a flag given twice where clap refuses
//! it, no command. A declined line goes to clap, which keeps help,
//! errors and every other flag; an accepted line means what clap would
//! make of it, value for value.

use std::ffi::OsString;
use std::path::PathBuf;

/// The flags of a common `pmx stat` line, as clap would have set them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommonStat {
    /// `-e`/`--event`, in order (each value whole: clap does not split
    /// at commas either).
    pub events: Vec<String>,
    /// `-x`/`--field-separator`.
    pub separator: Option<String>,
    /// `-o`/`--output`.
    pub output: Option<PathBuf>,
    /// `-a`/`--all-cpus`.
    pub all_cpus: bool,
    /// `-j`/`--json`/`--json-output`.
    pub json: bool,
    /// `-r`/`--repeat` (1 without it, clap's default).
    pub repeat: u32,
    /// The words after `--`.
    pub command: Vec<String>,
}

/// `words` (`stat` and its arguments, the program name left out) as a
/// common line, or `None` for clap to read.
pub fn common(words: &[OsString]) -> Option<CommonStat> {
    let (first, rest) = words.split_first()?;
    if first != "stat" {
        return None;
    }
    let mut out = CommonStat {
        repeat: 1,
        ..CommonStat::default()
    };
    let mut repeat = None;
    let mut words = rest.iter();
    while let Some(word) = words.next() {
        let word = word.to_str()?;
        if word == "--" {
            out.command = (words.map(|w| w.to_str().map(String::from))).collect::<Option<_>>()?;
            break;
        }
        // `--flag=VALUE`, and a short flag's value in the same word
        // (`-x,`, `-etask-clock`; `-aj` is two flags, left to clap).
        let (flag, inline) = match word.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ if word.len() > 2 && !word.starts_with("--") && word.is_char_boundary(2) => {
                (&word[..2], Some(&word[2..]))
            }
            _ => (word, None),
        };
        let flag = match flag {
            "-a" | "--all-cpus" if inline.is_none() => {
                (!out.all_cpus).then_some(())?;
                out.all_cpus = true;
                continue;
            }
            "-j" | "--json" | "--json-output" if inline.is_none() => {
                (!out.json).then_some(())?;
                out.json = true;
                continue;
            }
            "-e" | "--event" => Flag::Event,
            "-x" | "--field-separator" => Flag::Separator,
            "-o" | "--output" => Flag::Output,
            "-r" | "--repeat" => Flag::Repeat,
            _ => return None,
        };
        let value = match inline {
            Some(v) => v,
            None => words.next()?.to_str()?,
        };
        // clap reads `-x=,` as `,`; a value that looks like a flag is
        // an error there, or another reading.
        if value.is_empty() || value.starts_with(['-', '=']) {
            return None;
        }
        match flag {
            Flag::Event => out.events.push(value.to_string()),
            Flag::Separator if out.separator.is_none() => out.separator = Some(value.into()),
            Flag::Output if out.output.is_none() => out.output = Some(value.into()),
            Flag::Repeat if repeat.is_none() && value.bytes().all(|b| b.is_ascii_digit()) => {
                repeat = Some(value.parse().ok()?)
            }
            _ => return None,
        }
    }
    // clap's rules for these flags: -x and -j conflict. A command is
    // needed for the line to be common (none means system-wide); one that
    // may be perf's `stat record`/`report` (`stat_file_args`) or starts
    // with a second `--` is left to clap.
    let file_word =
        (out.command.first()).is_some_and(|c| c == "--" || (c.len() > 2 && c.starts_with("re")));
    if (out.separator.is_some() && out.json) || out.command.is_empty() || file_word {
        return None;
    }
    out.repeat = repeat.unwrap_or(1);
    Some(out)
}

/// The flags that take a value.
enum Flag {
    Event,
    Separator,
    Output,
    Repeat,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<OsString> {
        line.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn reads_the_common_flags() {
        let c = common(&words("stat -e task-clock -x , -- true")).expect("common");
        assert_eq!(
            Some(&c),
            common(&words("stat -etask-clock -x, -- true")).as_ref()
        );
        assert_eq!(c.events, ["task-clock"]);
        assert_eq!(c.separator.as_deref(), Some(","));
        assert_eq!(c.command, ["true"]);
        assert_eq!(c.repeat, 1);
        let c = common(&words(
            "stat --event=a,b -e {c,d} -a -o out.txt --repeat 3 -- ls -l -- x",
        ))
        .expect("common");
        assert_eq!(c.events, ["a,b", "{c,d}"]);
        assert!(c.all_cpus && !c.json);
        assert_eq!(c.output, Some(PathBuf::from("out.txt")));
        assert_eq!(c.repeat, 3);
        assert_eq!(c.command, ["ls", "-l", "--", "x"]);
    }

    #[test]
    fn leaves_everything_else_to_clap() {
        for line in [
            "stat -e task-clock true",
            "stat -e task-clock --",
            "stat -e task-clock -I 100 -- true",
            "stat -e task-clock -h",
            "stat -e -x -- true",
            "stat -e  -- true",
            "stat -x , -x ; -- true",
            "stat -o a -o b -- true",
            "stat -a -a -- true",
            "stat -x , -j -- true",
            "stat -r x -- true",
            "stat -r +3 -- true",
            "stat -r 99999999999 -- true",
            "stat -e=task-clock -- true",
            "stat -x=, -- true",
            "stat -aj -- true",
            "stat -e x -- -- true",
            "stat -o - -- true",
            "stat --all-cpus=yes -- true",
            "stat -e task-clock -- record true",
            "stat -e task-clock -- report",
            "record -e task-clock -- true",
            "stat",
        ] {
            assert_eq!(common(&words(line)), None, "{line}");
        }
        use std::os::unix::ffi::OsStringExt;
        let mut w = words("stat -e task-clock -- true");
        w.push(OsString::from_vec(vec![0xff]));
        assert_eq!(common(&w), None);
    }
}
