//! Fetching Linux perf's x86 tables (`tools/perf/pmu-events/arch/x86/` of
//! the kernel source): the AMD Zen event and metric tables.
//!
//! perf's `mapfile.csv` names a *directory* per CPU pattern (`amdzen5`),
//! not files, so the fetch needs the directory's file list. The origin is
//! the base of perf's `x86/` directory; the list is asked of the same
//! server:
//!
//! - git.kernel.org's cgit (the default, [`PERF_BASE_URL`]): the `plain/`
//!   view of a directory is an HTML page with one link per entry
//!   (`<li><a href='…/plain/tools/…/x86/amdzen5/cache.json'>cache.json</a></li>`);
//! - a GitHub mirror given as `https://raw.githubusercontent.com/OWNER/REPO/REF/PATH/`:
//!   raw files from there, the list from the contents API
//!   (`https://api.github.com/repos/OWNER/REPO/contents/PATH/amdzen5?ref=REF`,
//!   a JSON array of `{"name", "type"}`) — [`listing_url`];
//! - any web server's directory index (nginx/Apache autoindex, `python3 -m
//!   http.server`): HTML links again;
//! - a local directory (or `file://`): its entries.
//!
//! The files land in `<events-dir>/x86/` (`mapfile.csv`, `amdzenN/*.json`),
//! perf's layout that [`crate::perf_json`] reads, beside Intel's tables if
//! both are fetched. A directory fetched again is replaced whole: files the
//! new list no longer has are removed after the new ones are in place.

use super::{relative_path, FetchError, Origin, Run, Selection};
use crate::perf_json::PerfMapfile;
use std::path::Path;

/// Where perf's x86 tables are fetched from by default: the `plain/` view
/// of Linus Torvalds' tree on git.kernel.org.
pub const PERF_BASE_URL: &str =
    "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/plain/tools/perf/pmu-events/arch/x86/";

/// The directory inside the events directory that receives perf's tables.
pub const DEST_PREFIX: &str = "x86/";

/// The largest directory listing accepted.
const MAX_LISTING_BYTES: u64 = 4 << 20;

/// The directories the mapfile `text` selects: for a CPU, the first `core`
/// row that matches (perf's rule, [`PerfMapfile::select`]); for
/// [`Selection::All`], every directory of a row for a CPU that is not
/// Intel's (pmx reads Intel CPUs' events from Intel's own tables). Each
/// with its pattern, `EventType` and `Version`.
pub(super) fn select_dirs(
    text: &str,
    location: &str,
    selection: &Selection,
) -> Result<Vec<(String, String, String, String)>, FetchError> {
    let map = PerfMapfile::parse(text, Path::new(location)).map_err(|e| {
        let message = match e {
            crate::LoadError::Format { message, .. } => message,
            other => other.to_string(),
        };
        FetchError::BadMapfile {
            location: location.to_string(),
            message,
        }
    })?;
    if map
        .rows()
        .iter()
        .any(|r| r.dir.contains('/') || r.dir.ends_with(".json"))
    {
        return Err(FetchError::BadMapfile {
            location: location.to_string(),
            message: "it names files, not directories: this is Intel's perfmon mapfile, not perf's"
                .to_string(),
        });
    }
    let rows: Vec<_> = match selection {
        Selection::Cpu(cpu) => map.select(cpu).into_iter().collect(),
        Selection::All => map
            .rows()
            .iter()
            .filter(|r| !r.family_model.starts_with("GenuineIntel"))
            .collect(),
    };
    let mut out: Vec<(String, String, String, String)> = Vec::new();
    for r in rows {
        let dir = relative_path(&r.dir).map_err(|message| FetchError::BadMapfile {
            location: location.to_string(),
            message,
        })?;
        if dir.contains('/') {
            return Err(FetchError::BadMapfile {
                location: location.to_string(),
                message: format!("{:?} is not a directory name", r.dir),
            });
        }
        if !out.iter().any(|(d, ..)| *d == dir) {
            out.push((
                dir,
                r.family_model.clone(),
                r.event_type.clone(),
                r.version.clone(),
            ));
        }
    }
    Ok(out)
}

/// The URL that lists directory `dir` of the tables at `base` (a base URL
/// ending in `/`): for a raw.githubusercontent.com base, GitHub's contents
/// API (raw.githubusercontent.com serves files only); otherwise the
/// directory's own URL with a final `/` (cgit's `plain/` view, a web
/// server's index).
pub fn listing_url(base: &str, dir: &str) -> String {
    const RAW: &str = "https://raw.githubusercontent.com/";
    if let Some(rest) = base.strip_prefix(RAW) {
        let parts: Vec<&str> = rest.trim_end_matches('/').splitn(4, '/').collect();
        if let [owner, repo, reference, path] = parts[..] {
            return format!(
                "https://api.github.com/repos/{owner}/{repo}/contents/{path}/{dir}?ref={reference}"
            );
        }
    }
    format!("{base}{dir}/")
}

/// The `.json` files a directory listing names: a JSON array of objects
/// with `name` and `type` (GitHub's contents API; only `"file"` entries),
/// or an HTML page whose links are the entries (cgit's `plain/` view,
/// autoindex pages). A link counts when it is a bare name or a path ending
/// in `/<dir>/<name>` (cgit's links are absolute), its query and fragment
/// ignored. Sorted, each once; names that are not plain file names are
/// skipped.
pub fn parse_listing(body: &str, dir: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let trimmed = body.trim_start();
    if trimmed.starts_with('[') {
        if let Ok(serde_json::Value::Array(items)) = serde_json::from_str(trimmed) {
            for item in items {
                let is_file = item
                    .get("type")
                    .and_then(|t| t.as_str())
                    .is_none_or(|t| t == "file");
                if let (true, Some(name)) = (is_file, item.get("name").and_then(|n| n.as_str())) {
                    names.push(name.to_string());
                }
            }
        }
    } else {
        // ASCII lowercasing keeps byte offsets, so positions found in
        // `lower` index `body`.
        let lower = body.to_ascii_lowercase();
        let mut from = 0;
        while let Some(at) = lower[from..].find("href=") {
            let start = from + at + "href=".len();
            from = start;
            let Some(quote) = body[start..]
                .chars()
                .next()
                .filter(|c| *c == '"' || *c == '\'')
            else {
                continue;
            };
            let Some(end) = body[start + 1..].find(quote) else {
                break;
            };
            let link = body[start + 1..start + 1 + end].replace("&amp;", "&");
            from = start + 1 + end;
            let path = link.split(['?', '#']).next().unwrap_or("");
            let (parent, name) = match path.rsplit_once('/') {
                Some((p, n)) => (Some(p), n),
                None => (None, path),
            };
            if parent.is_none_or(|p| p.rsplit('/').next() == Some(dir)) {
                names.push(name.to_string());
            }
        }
    }
    names.retain(|n| {
        n.to_ascii_lowercase().ends_with(".json") && !n.contains('/') && relative_path(n).is_ok()
    });
    names.sort();
    names.dedup();
    names
}

/// The `.json` files of directory `dir` at the origin.
pub(super) fn list_dir(run: &mut Run<'_>, dir: &str) -> Result<Vec<String>, FetchError> {
    let origin = run.opts.origin.clone();
    let (names, location) = match &origin {
        Origin::Dir(base) => {
            let path = base.join(dir);
            let entries = std::fs::read_dir(&path).map_err(|source| FetchError::Read {
                path: path.clone(),
                source,
            })?;
            let mut names: Vec<String> = entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| n.to_ascii_lowercase().ends_with(".json") && relative_path(n).is_ok())
                .collect();
            names.sort();
            (names, path.display().to_string())
        }
        Origin::Http(base) => {
            let url = listing_url(base, dir);
            let body = run.get_text(&url, MAX_LISTING_BYTES)?;
            (parse_listing(&body, dir), url)
        }
    };
    if names.is_empty() {
        return Err(FetchError::BadListing {
            location,
            message: format!("it names no .json file of {dir}/"),
        });
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_urls() {
        assert_eq!(
            listing_url(PERF_BASE_URL, "amdzen5"),
            format!("{PERF_BASE_URL}amdzen5/")
        );
        assert_eq!(
            listing_url(
                "https://raw.githubusercontent.com/torvalds/linux/master/tools/perf/pmu-events/arch/x86/",
                "amdzen4"
            ),
            "https://api.github.com/repos/torvalds/linux/contents/tools/perf/pmu-events/arch/x86/amdzen4?ref=master"
        );
        assert_eq!(
            listing_url("http://127.0.0.1:8080/x86/", "amdzen1"),
            "http://127.0.0.1:8080/x86/amdzen1/"
        );
    }

    /// cgit's `plain/` view of a directory (ui-plain.c: `print_dir`,
    /// `print_dir_entry`: absolute links, the entry's name as text), a
    /// Python http.server index, and GitHub's contents API.
    #[test]
    fn listings() {
        let cgit = "<html><head><title>/tools/perf/pmu-events/arch/x86/amdzen5/</title></head>\n\
            <body>\n<h2>/tools/perf/pmu-events/arch/x86/amdzen5/</h2>\n<ul>\n\
            <li><a href='/pub/scm/linux/kernel/git/torvalds/linux.git/plain/tools/perf/pmu-events/arch/x86/'>../</a></li>\n\
            <li><a href='/pub/scm/linux/kernel/git/torvalds/linux.git/plain/tools/perf/pmu-events/arch/x86/amdzen5/load-store.json'>load-store.json</a></li>\n\
            <li><a href='/pub/scm/linux/kernel/git/torvalds/linux.git/plain/tools/perf/pmu-events/arch/x86/amdzen5/branch-prediction.json?h=v6.12'>branch-prediction.json</a></li>\n\
            <li><a href='/pub/scm/linux/kernel/git/torvalds/linux.git/plain/tools/perf/pmu-events/arch/x86/amdzen4/cache.json'>elsewhere</a></li>\n\
            </ul>\n</body></html>\n";
        assert_eq!(
            parse_listing(cgit, "amdzen5"),
            ["branch-prediction.json", "load-store.json"]
        );
        let python = "<ul>\n<li><a href=\"cache.json\">cache.json</a></li>\n\
            <li><a href=\"README\">README</a></li>\n<li><a href=\"../x.json\">x</a></li>\n</ul>";
        assert_eq!(parse_listing(python, "amdzen1"), ["cache.json"]);
        let github = r#"[{"name":"pipeline.json","type":"file"},{"name":"sub","type":"dir"},
            {"name":"cache.json","type":"file"},{"name":"a b.json","type":"file"}]"#;
        assert_eq!(
            parse_listing(github, "amdzen4"),
            ["cache.json", "pipeline.json"]
        );
        assert!(parse_listing("<html>404</html>", "amdzen4").is_empty());
    }

    #[test]
    fn directories_chosen_like_the_loader() {
        let text = "Family-model,Version,Filename,EventType\n\
            GenuineIntel-6-55-[01234],v1.35,skylakex,core\n\
            AuthenticAMD-25-([245][[:xdigit:]]|[[:xdigit:]]),v1,amdzen3,core\n\
            AuthenticAMD-25-[[:xdigit:]]+,v1,amdzen4,core\n\
            AuthenticAMD-26-[[:xdigit:]]+,v1,amdzen5,core\n";
        let cpu = |k: &str| Selection::Cpu(k.parse().unwrap());
        let dirs = |s: &Selection| -> Vec<String> {
            select_dirs(text, "m", s)
                .unwrap()
                .into_iter()
                .map(|d| d.0)
                .collect()
        };
        assert_eq!(dirs(&cpu("AuthenticAMD-25-1-1")), ["amdzen3"]);
        assert_eq!(dirs(&cpu("AuthenticAMD-25-11-1")), ["amdzen4"]);
        assert_eq!(dirs(&cpu("AuthenticAMD-26-2")), ["amdzen5"]);
        assert!(dirs(&cpu("AuthenticAMD-24-1-1")).is_empty());
        assert_eq!(dirs(&Selection::All), ["amdzen3", "amdzen4", "amdzen5"]);
        let intel = "Family-model,Version,Filename,EventType\nGenuineIntel-6-55-[01234],V1,/SKX/events/a.json,core\n";
        let e = select_dirs(intel, "m", &Selection::All).unwrap_err();
        assert!(e.to_string().contains("Intel's perfmon mapfile"), "{e}");
    }
}
