//! Man pages: one roff page per command, from the clap tree.
//!
//! [`pages`] walks `pmx` and every visible subcommand (`pmx events fetch`
//! is `pmx-events-fetch.1`). Each page has clap_mangen's sections, then
//! EXAMPLES (from [`examples`], where the command has some), EXIT STATUS
//! (the codes every command shares and what the command adds) and SEE
//! ALSO. The text is what `--help` prints, so `man pmx-stat` and
//! `pmx stat --help` cannot disagree.

pub mod examples;

use clap::Command;
use clap_mangen::roff::{bold, roman, Inline, Roff};
use clap_mangen::Man;
use std::io;
use std::path::{Path, PathBuf};

/// One rendered page.
#[derive(Debug, Clone)]
pub struct Page {
    /// The file name: `pmx.1`, `pmx-stat.1`, …
    pub file_name: String,
    /// The command's words: `pmx stat`.
    pub command: String,
    /// The page in roff.
    pub roff: String,
}

/// The pages of `cmd` and of every visible subcommand, `cmd` first.
pub fn pages(cmd: Command) -> Vec<Page> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, &mut Vec::new(), &mut out);
    out
}

/// Write `pages` into `dir` (created if missing); returns the files.
pub fn write_dir(dir: &Path, pages: &[Page]) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| at(dir, e))?;
    let mut written = Vec::new();
    for page in pages {
        let path = dir.join(&page.file_name);
        std::fs::write(&path, &page.roff).map_err(|e| at(&path, e))?;
        written.push(path);
    }
    Ok(written)
}

fn at(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn walk(cmd: &Command, words: &mut Vec<String>, out: &mut Vec<Page>) {
    words.push(cmd.get_name().to_string());
    out.push(page(cmd, words));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        walk(sub, words, out);
    }
    words.pop();
}

fn page(cmd: &Command, words: &[String]) -> Page {
    let command = words.join(" ");
    let version = cmd.get_version().unwrap_or_default();
    let man = Man::new(cmd.clone())
        .title(words.join("-"))
        .source(format!("pmx {version}"))
        .manual("pmx manual");
    let file_name = man.get_filename();
    let mut buf = Vec::new();
    // Rendering into a Vec cannot fail.
    let _ = man.render(&mut buf);
    let mut roff = String::from_utf8_lossy(&buf).into_owned();
    // Our sections without a second copy of the preamble clap_mangen's
    // page starts with (it defines the apostrophe both use).
    let ours = sections(&command).render();
    let preamble = Roff::new().render();
    roff.push_str(ours.strip_prefix(preamble.as_str()).unwrap_or(&ours));
    Page {
        file_name,
        command,
        roff,
    }
}

/// EXAMPLES, EXIT STATUS and SEE ALSO of `command` (`pmx stat`).
fn sections(command: &str) -> Roff {
    let mut r = Roff::new();
    let shown = examples::of(command);
    if !shown.is_empty() {
        r.control("SH", ["EXAMPLES"]);
        for (line, what) in shown {
            r.control("TP", []);
            r.text([bold(*line)]);
            r.text([roman(*what)]);
        }
    }
    r.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in exit_status(command) {
        r.control("TP", []);
        r.text([bold(code)]);
        r.text([roman(meaning)]);
    }
    r.control("SH", ["SEE ALSO"]);
    let mut also: Vec<Inline> = Vec::new();
    if command != "pmx" {
        also.push(bold("pmx"));
        also.push(roman("(1), "));
    }
    also.extend([
        bold("perf"),
        roman("(1), "),
        bold("perf_event_open"),
        roman("(2)"),
    ]);
    r.text(also);
    r.control("PP", []);
    r.text([roman(
        "The manual, with a page per topic, is docs/README.md in pmx's source.",
    )]);
    r
}

/// The exit codes of `command`: those every command shares, then the
/// command's own.
fn exit_status(command: &str) -> Vec<(&'static str, &'static str)> {
    let mut codes = vec![
        ("0", "Success."),
        (
            "1",
            "The operation failed: I/O, the kernel refused, a file could not be read.",
        ),
        ("2", "Bad input: a malformed event spec, value or flag."),
    ];
    let runs_a_command = matches!(command, "pmx" | "pmx stat" | "pmx record" | "pmx tma");
    if runs_a_command {
        codes.extend([
            (
                "N",
                "pmx stat/record -- CMD: the command's own exit status.",
            ),
            (
                "128+N",
                "The command was killed by signal N (Ctrl-C: 130, after everything \
                 measured is written); pmx stat -r N stopped by signal N before its last run.",
            ),
            ("127", "The command could not be run."),
        ]);
    }
    match command {
        "pmx serve" | "pmx" => codes.push((
            "serve",
            "pmx serve exits 0 after SIGTERM or SIGINT, 1 when it cannot count or listen.",
        )),
        "pmx compare" => codes.push((
            "compare",
            "0 whatever the changes are (read \"significant\" in --json); 2 for a file it cannot read.",
        )),
        _ => {}
    }
    if matches!(command, "pmx" | "pmx stat") {
        codes.push((
            "stat --compare",
            "0 after the comparison, 1 when a command exited non-zero or was killed \
             in some run (the report is still written), 127 when a command cannot be run.",
        ));
    }
    codes
}
