//! `c2c report`'s words as perf 6.1's option parser takes them: `-i`,
//! `-d`, `-c` with their value attached (`-dlcl`, `--display=lcl`) or
//! next, the switches `--stats`, `--stdio`, `--full-symbols`,
//! `--no-source`, `--show-all`, `-f`; perf's others (`-k`, `-N`, `-g`,
//! `--stitch-lbr`) are named as not taken.

use std::ffi::OsString;
use std::path::PathBuf;

/// What a `c2c report` command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct C2cReportWords {
    /// `-i`: the file (`perf.data`).
    pub input: PathBuf,
    /// `--stats`: the counts alone.
    pub stats: bool,
    /// `-d`'s word (`tot`).
    pub display: String,
    /// `-c`'s list (`iaddr`).
    pub coalesce: String,
    /// `--full-symbols`.
    pub full_symbols: bool,
    /// `--no-source`.
    pub no_source: bool,
    /// `--show-all`.
    pub show_all: bool,
}

/// Read `c2c report`'s words, or say which one is wrong.
pub fn report(args: &[OsString]) -> Result<C2cReportWords, String> {
    let mut w = C2cReportWords {
        input: "perf.data".into(),
        stats: false,
        display: "tot".into(),
        coalesce: "iaddr".into(),
        full_symbols: false,
        no_source: false,
        show_all: false,
    };
    let mut it = args.iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(a) = it.next() {
        let (name, attached) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ if a.len() > 2 && !a.starts_with("--") && a.starts_with('-') => {
                (a[..2].to_string(), Some(a[2..].to_string()))
            }
            _ => (a.clone(), None),
        };
        let mut value = |flag: &str| {
            (attached.clone().or_else(|| it.next()))
                .ok_or(format!("c2c report: {flag} needs a value"))
        };
        match name.as_str() {
            "-i" | "--input" => w.input = value("-i")?.into(),
            "-d" | "--display" => w.display = value("-d")?,
            "-c" | "--coalesce" => w.coalesce = value("-c")?,
            "--stats" => w.stats = true,
            "--full-symbols" => w.full_symbols = true,
            "--no-source" => w.no_source = true,
            "--show-all" => w.show_all = true,
            "--stdio" | "-f" | "--force" => {}
            "-k" | "--vmlinux" | "-N" | "--node-info" | "-g" | "--call-graph" | "--stitch-lbr"
            | "--double-cl" => return Err(format!("c2c report: pmx does not take {name} yet")),
            _ => return Err(format!("c2c report: unknown option '{a}'")),
        }
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Result<C2cReportWords, String> {
        report(&s.split_whitespace().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn c2c_report_command_lines() {
        let w = words("--stdio -dlcl --coalesce=pid,iaddr -i x.data --full-symbols").unwrap();
        assert_eq!(w.display, "lcl");
        assert_eq!(w.coalesce, "pid,iaddr");
        assert_eq!(w.input, PathBuf::from("x.data"));
        assert!(w.full_symbols && !w.stats);
        assert_eq!(words("-d rmt --stats").unwrap().display, "rmt");
        assert!(words("-N").unwrap_err().contains("-N"));
        assert!(words("--bogus").unwrap_err().contains("--bogus"));
        assert!(words("-d").unwrap_err().contains("needs a value"));
    }
}
