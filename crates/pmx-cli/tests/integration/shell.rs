//! `pmx completions` and `pmx man`, checked with the real shells and the
//! real `man`: the bash script sourced in bash registers pmx (`complete
//! -p`), and its completion function, called as bash calls it, offers
//! subcommands, and after `-e`/`-M` the names `pmx list --raw-dump`
//! prints for this CPU; fish's `complete -C` and zsh's completion function
//! do the same when fish and zsh are installed; every man page `pmx man
//! --dir` writes renders with `man -l`.

use crate::common::{pmx, stderr, stdout, PMX};
use std::path::Path;
use std::process::Command;

/// The bash candidates for the words of `line` (the last one being
/// completed), from `pmx completions bash` sourced in a bash without
/// rc files, this build's pmx first in PATH.
fn bash_complete(script: &Path, line: &[&str]) -> Vec<String> {
    let bin_dir = Path::new(PMX).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let words = line
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let prev = if line.len() > 1 {
        line[line.len() - 2]
    } else {
        ""
    };
    let program = format!(
        r#"source "$1" || exit 3
complete -p pmx >/dev/null || exit 4
COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE="${{COMP_WORDS[*]}}"; COMP_POINT=${{#COMP_LINE}}
_clap_complete_pmx pmx '{cur}' '{prev}'
printf '%s\n' "${{COMPREPLY[@]}}""#,
        cword = line.len() - 1,
        cur = line[line.len() - 1],
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program, "_"])
        .arg(script)
        .env("PATH", path)
        .env_remove("PMX_EVENTS_DIR")
        .output()
        .expect("run bash");
    assert!(out.status.success(), "bash: {out:?}");
    let mut c: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    c.retain(|l| !l.is_empty());
    c.sort();
    c
}

/// `pmx list --raw-dump [KIND]`'s names starting with `prefix` (without
/// case): what the completion must offer.
fn raw_dump(kind: &str, prefix: &str) -> Vec<String> {
    let out = pmx(&["list", "--raw-dump", kind]);
    assert!(out.status.success(), "{}", stderr(&out));
    let p = prefix.to_ascii_lowercase();
    stdout(&out)
        .split_whitespace()
        .filter(|n| n.to_ascii_lowercase().starts_with(&p))
        .map(str::to_string)
        .collect()
}

fn script(shell: &str, dir: &Path) -> std::path::PathBuf {
    let out = pmx(&["completions", shell]);
    assert!(out.status.success(), "{}", stderr(&out));
    let path = dir.join(format!("pmx.{shell}"));
    std::fs::write(&path, &out.stdout).unwrap();
    path
}

#[test]
fn bash_completes_commands_events_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let bash = script("bash", dir.path());
    assert!(bash_complete(&bash, &["pmx", "st"]).contains(&"stat".to_string()));
    // Event names: exactly the raw dump's (events, then pmu/alias/).
    let mut want = [raw_dump("events", "task-c"), raw_dump("pmu", "task-c")].concat();
    want.sort();
    want.dedup();
    assert!(want.contains(&"task-clock".to_string()), "{want:?}");
    assert_eq!(bash_complete(&bash, &["pmx", "stat", "-e", "task-c"]), want);
    assert_eq!(
        bash_complete(&bash, &["pmx", "record", "--event", "task-clock,page-f"]),
        ["task-clock,page-faults"]
    );
    // The kernel PMUs' aliases as perf's completion offers them.
    let pmu = raw_dump("pmu", "");
    if let Some(alias) = pmu.first() {
        let (stem, _) = alias.split_at(alias.find('/').unwrap() + 1);
        let offered = bash_complete(&bash, &["pmx", "stat", "-e", stem]);
        assert!(offered.contains(alias), "{stem}: {offered:?} lacks {alias}");
    } else {
        eprintln!("no sysfs event aliases on this machine: pmu/ names not checked");
    }
    // Metric names after -M, metric groups too.
    let metrics = raw_dump("metrics", "");
    let metric = metrics.first().expect("the built-in metrics");
    let offered = bash_complete(&bash, &["pmx", "stat", "-M", &metric[..2]]);
    assert!(offered.contains(metric), "{offered:?} lacks {metric}");
    let groups = raw_dump("metricgroups", "");
    if let Some(g) = groups.first() {
        let offered = bash_complete(&bash, &["pmx", "analyze", "x.csv", "-M", g]);
        assert!(offered.contains(g), "{offered:?} lacks {g}");
    }
    // A modifier ends the name: nothing to offer.
    assert!(bash_complete(&bash, &["pmx", "stat", "-e", "task-clock:u"]).is_empty());
}

#[test]
fn fish_completes_event_names() {
    if Command::new("fish").arg("--version").output().is_err() {
        eprintln!("fish is not installed (Debian: fish): fish completion not checked");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fish = script("fish", dir.path());
    let bin_dir = Path::new(PMX).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let out = Command::new("fish")
        .args([
            "--no-config",
            "-c",
            "source $argv[1]; complete -C 'pmx stat -e task-c'",
        ])
        .arg(&fish)
        .env("PATH", path)
        .env_remove("PMX_EVENTS_DIR")
        .output()
        .expect("run fish");
    let offered: Vec<String> = stdout(&out)
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect();
    assert!(offered.contains(&"task-clock".to_string()), "{out:?}");
}

#[test]
fn zsh_completes_event_names() {
    if Command::new("zsh").arg("--version").output().is_err() {
        eprintln!("zsh is not installed (Debian: zsh): zsh completion not checked");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let zsh = script("zsh", dir.path());
    let bin_dir = Path::new(PMX).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    // The script's function as compsys calls it, with compsys' `compdef`
    // and `_describe` (which would show the candidates) printing them.
    let program = r#"compdef() { :; }; _describe() { print -l -- "${(@P)3}"; }
source $1
words=(pmx stat -e task-c); CURRENT=4; _clap_dynamic_completer_pmx
words=(pmx rec); CURRENT=2; _clap_dynamic_completer_pmx"#;
    let out = Command::new("zsh")
        .args(["-f", "-c", program, "_"])
        .arg(&zsh)
        .env("PATH", path)
        .env_remove("PMX_EVENTS_DIR")
        .output()
        .expect("run zsh");
    let offered: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert!(offered.contains(&"task-clock"), "{out:?}");
    assert!(offered.iter().any(|l| l.starts_with("record:")), "{out:?}");
}

#[test]
fn every_shell_gets_a_script() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let s = std::fs::read_to_string(script(shell, dir.path())).unwrap();
        assert!(s.contains("PMX_COMPLETE"), "{shell}: {s}");
    }
    let out = pmx(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// `man -l PAGE`'s text (plain, 100 columns).
fn man(page: &Path) -> String {
    let out = Command::new("man")
        .arg("-l")
        .arg(page)
        .env("MANWIDTH", "100")
        .env("MAN_KEEP_FORMATTING", "0")
        .env("MANPAGER", "cat")
        .output()
        .expect("run man (Debian: man-db)");
    assert!(
        out.status.success(),
        "man -l {}: {}",
        page.display(),
        stderr(&out)
    );
    // Overstrike bold (c\bc) to plain text.
    let raw = stdout(&out);
    let mut text = String::new();
    for c in raw.chars() {
        if c == '\u{8}' {
            text.pop();
        } else {
            text.push(c);
        }
    }
    text
}

#[test]
fn man_pages_for_every_command_render() {
    if Command::new("man").arg("--version").output().is_err() {
        eprintln!("man is not installed (Debian: man-db): pages not rendered");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = pmx(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // A page per command `pmx --help` lists, and per nested command.
    let help = stdout(&pmx(&["--help"]));
    let commands: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .split("Options:")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(
        commands.contains(&"stat") && commands.contains(&"man"),
        "{commands:?}"
    );
    for c in commands {
        assert!(
            names.contains(&format!("pmx-{c}.1")),
            "no page for {c}: {names:?}"
        );
    }
    for want in ["pmx.1", "pmx-events-fetch.1", "pmx-msr-read.1"] {
        assert!(names.contains(&want.to_string()), "{names:?}");
    }
    for name in &names {
        let text = man(&dir.path().join(name));
        for section in ["NAME", "SYNOPSIS", "EXIT STATUS", "SEE ALSO"] {
            assert!(
                text.lines().any(|l| l == section),
                "{name}: no {section}\n{text}"
            );
        }
    }
    let stat = man(&dir.path().join("pmx-stat.1"));
    assert!(stat.lines().any(|l| l == "EXAMPLES"), "{stat}");
    assert!(
        stat.contains("pmx stat -e task-clock,page-faults -r 5 -- ./app"),
        "{stat}"
    );
    assert!(stat.contains("--event"), "{stat}");
    assert!(stat.contains("128+N"), "{stat}");
    // Every command with examples has its page.
    for (command, _) in pmx_shell::man::examples::EXAMPLES {
        let file = format!("{}.1", command.replace(' ', "-"));
        assert!(names.contains(&file), "examples of {command}, no {file}");
    }
    // One page on standard output: the same bytes as the file.
    let one = pmx(&["man", "events", "fetch"]);
    assert!(one.status.success(), "{}", stderr(&one));
    assert_eq!(
        one.stdout,
        std::fs::read(dir.path().join("pmx-events-fetch.1")).unwrap()
    );
    let none = pmx(&["man", "nosuch"]);
    assert_eq!(none.status.code(), Some(2), "{}", stderr(&none));
}

#[test]
fn version_names_the_commit() {
    let out = pmx(&["--version"]);
    let v = stdout(&out);
    assert!(
        v.starts_with(&format!("pmx {}", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    let inside_git = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success());
    match inside_git {
        // Built from this checkout: the commit it was at when built is
        // an ancestor of (or is) HEAD.
        Some(_) => {
            let commit = v
                .split('(')
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .unwrap_or("");
            assert_eq!(commit.len(), 12, "{v}");
            let known = Command::new("git")
                .args(["cat-file", "-e", &format!("{commit}^{{commit}}")])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .unwrap();
            assert!(known.success(), "{v}: not a commit of this repository");
        }
        None => eprintln!("not a git checkout: {v}"),
    }
}
