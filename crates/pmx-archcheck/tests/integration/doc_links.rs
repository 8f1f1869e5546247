//! Every relative link of the documentation resolves: README.md,
//! ARCHITECTURE.md, docs/*.md and deploy/README.md link to files that
//! exist, and every `#anchor` (in the same page or another) names a
//! heading of that page, slugged as GitHub slugs headings.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The pages checked: the README, ARCHITECTURE.md and every Markdown file
/// under docs/ and deploy/.
fn pages() -> Vec<PathBuf> {
    let r = root();
    let mut pages = vec![r.join("README.md"), r.join("ARCHITECTURE.md")];
    for dir in ["docs", "deploy"] {
        let mut more: Vec<PathBuf> = std::fs::read_dir(r.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        more.sort();
        pages.extend(more);
    }
    pages
}

/// The page's lines outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push(line);
        }
    }
    out
}

/// GitHub's anchor of a heading: lower case, everything but letters,
/// digits, `-`, `_` and spaces dropped, spaces made `-`.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page: one per ATX heading, repeats numbered `-1`,
/// `-2`, … as GitHub numbers them.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    for line in prose(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim());
        let mut s = base.clone();
        let mut n = 0;
        while seen.contains(&s) {
            n += 1;
            s = format!("{base}-{n}");
        }
        seen.insert(s);
    }
    seen
}

/// The targets of the page's inline links `[text](target)` in prose
/// (inline code spans left out).
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        let mut rest = strip_code(line);
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            let target = match after.strip_prefix('<') {
                Some(quoted) => quoted.split('>').next().unwrap_or(""),
                None => after[..end].split_whitespace().next().unwrap_or(""),
            };
            out.push(target.to_string());
            rest = after[end..].to_string();
        }
    }
    out
}

fn strip_code(line: &str) -> String {
    line.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 0)
        .map(|(_, s)| s)
        .collect::<Vec<_>>()
        .join("")
}

/// What is wrong with `target` written in `page`, if anything.
fn broken(page: &Path, target: &str) -> Option<String> {
    if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        page.to_path_buf()
    } else {
        page.parent().unwrap().join(path)
    };
    if !file.exists() {
        return Some(format!("{target}: no file {}", file.display()));
    }
    let anchor = anchor.filter(|a| !a.is_empty())?;
    if file.extension().is_none_or(|e| e != "md") {
        return None;
    }
    let text = std::fs::read_to_string(&file).unwrap();
    (!anchors(&text).contains(anchor)).then(|| format!("{target}: no heading #{anchor}"))
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for target in links(&text) {
            checked += 1;
            if let Some(why) = broken(&page, &target) {
                bad.push(format!("{}: {why}", page.display()));
            }
        }
    }
    assert!(
        checked > 10,
        "only {checked} links found: the parser is broken"
    );
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(slug("Is B faster than A?"), "is-b-faster-than-a");
    assert_eq!(
        slug("Where: counters per function (`{…}:S`, `report --group`, `-M`)"),
        "where-counters-per-function-s-report---group--m"
    );
    let a = anchors("# A\n## A\n```\n# not a heading\n```\n#nope\n");
    assert_eq!(a, HashSet::from(["a".to_string(), "a-1".to_string()]));
    assert_eq!(
        links("see [x](a.md#b) and `[y](z)` and [w](<c d.md>)"),
        ["a.md#b", "c d.md"]
    );
}
