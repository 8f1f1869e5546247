//! The limits ARCHITECTURE.md sets on pmx's source tree, checked.
//!
//! A refactoring that makes a codebase easy to extend is undone one
//! convenient shortcut at a time. This crate turns the shape the project
//! agreed on into numbers a machine can check on every CI run:
//!
//! - **The CLI stays thin**: `crates/pmx-cli/src` holds at most
//!   [`Limits::cli_total`] lines, no file over [`Limits::cli_file`].
//! - **Functions fit on a screen or two**: no function in the crates of
//!   [`Limits::fn_crates`] over [`Limits::fn_lines`] lines, counted from the
//!   `fn` keyword to the closing brace (tests included).
//! - **Arrows point one way inside crates too**: no circular `use` between
//!   sibling modules of a crate, at any level of the module tree.
//! - **No crate is the hub**: no crate's `src/` holds more than
//!   [`Limits::crate_share`] percent of the lines of every crate's `src/`
//!   (integration tests under `tests/` are not counted).
//! - **The CLI reaches the lower crates through `pmx`**: no path in
//!   `crates/pmx-cli/src` starting with a crate of
//!   [`Limits::cli_forbidden`].
//!
//! - **One of each** ([`single`]): only the structs of
//!   [`Limits::attr_structs`] declare `perf_event_attr`'s fields, and only
//!   the files of [`Limits::sigaction_files`] call `sigaction`.
//! - **The environment is read at the edge** ([`mod@env`]): `std::env::var`
//!   and its siblings are called only at the sites of
//!   [`Limits::env_sites`] (the edges and the documented `from_env`
//!   constructors).
//!
//! Every breach is a [`Finding`] with a stable [`Finding::key`] and a size.
//! Breaches the project has not paid off yet are listed as *debts* in a
//! text file (`crates/pmx-archcheck/debts.txt`: one `SIZE KEY` per line); a
//! debt allows its finding up to the recorded size. Anything else fails, and
//! so does a debt that no longer occurs (the list stays true). The list
//! only ever shrinks: a new breach is fixed, not recorded.
//!
//! ## How modules and their edges are found
//!
//! Each crate's module tree is followed from its roots (`lib.rs`,
//! `main.rs`, any other file under `src/` that no `mod` declaration
//! reaches, such as a `[[bin]]`) through `mod name;` declarations and inline
//! `mod name { … }` blocks. Every path in a module — in `use` trees, in
//! types and expressions, and in macro arguments — that names
//! `crate::…`, `super::…`, `self::…` or a child module is resolved to a
//! module of the crate, through re-exports (`pub use a::X` makes
//! `crate::X` point into `a`). A reference from module `p::a…` to module
//! `p::b…` is an edge `a → b` among the children of `p`; a strongly
//! connected set of siblings is a cycle.

use proc_macro2::{Spacing, TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

pub mod env;
pub mod single;

/// The numbers the tree must hold.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Lines in `crates/pmx-cli/src`, all files together.
    pub cli_total: usize,
    /// Lines in any one file of `crates/pmx-cli/src`.
    pub cli_file: usize,
    /// Lines in any one function of [`Limits::fn_crates`].
    pub fn_lines: usize,
    /// The crates (directory names under `crates/`) whose functions are
    /// measured.
    pub fn_crates: Vec<String>,
    /// Crates the CLI must reach only through `pmx`'s re-exports.
    pub cli_forbidden: Vec<String>,
    /// The largest share of the workspace's source lines one crate may
    /// hold, in percent.
    pub crate_share: usize,
    /// The structs allowed to declare `perf_event_attr`'s fields, as
    /// `path Name` (path relative to the workspace).
    pub attr_structs: Vec<String>,
    /// How many of [`single::ATTR_FIELDS`] make a struct an attr.
    pub attr_fields: usize,
    /// The files allowed to call `sigaction` (the one signal facility).
    pub sigaction_files: Vec<String>,
    /// Where the environment may be read: `dir/` (every file under it),
    /// `file`, or `file Function` (see [`mod@env`]).
    pub env_sites: Vec<String>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            cli_total: 4100,
            cli_file: 300,
            fn_lines: 120,
            fn_crates: [
                "pmx",
                "pmx-count",
                "pmx-record",
                "pmx-analysis",
                "pmx-args",
                "pmx-profile",
                "pmx-precise",
                "pmx-symbols",
                "pmx-cli",
                "pmx-tui",
            ]
            .map(String::from)
            .to_vec(),
            cli_forbidden: ["pmx_events", "pmx_msr"].map(String::from).to_vec(),
            crate_share: 15,
            attr_structs: [
                // The kernel ABI: the syscall, perf.data and libpfm.
                "crates/pmx-perfdata/src/attr.rs PerfEventAttr",
                // The one builder form.
                "crates/pmx-perf/src/lib.rs Attr",
            ]
            .map(String::from)
            .to_vec(),
            attr_fields: 4,
            sigaction_files: vec!["crates/pmx-sys/src/signal.rs".to_string()],
            // Each one's reason is in the doc of `env`.
            env_sites: [
                "crates/pmx-cli/src/",
                "crates/pmx-capi/src/",
                "crates/pmx-py/src/",
                "crates/pmx-serve/src/launch.rs",
                "crates/pmx-testkit/src/",
                "crates/pmx-io/src/dirs.rs Dirs::from_env",
                "crates/pmx-io/src/job.rs JobContext::current",
                "crates/pmx-events/src/libpfm.rs PfmEnv::from_env",
                "crates/pmx/src/region.rs Config::from_env",
                "crates/pmx-shell/src/complete.rs answer_if_asked",
                "crates/pmx/src/events_dirs.rs from_env",
            ]
            .map(String::from)
            .to_vec(),
        }
    }
}

/// One breach of a limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// `crates/pmx-cli/src` is over [`Limits::cli_total`] lines.
    CliTotal {
        /// Its lines.
        lines: usize,
    },
    /// A file of `crates/pmx-cli/src` is over [`Limits::cli_file`] lines.
    CliFile {
        /// The file, relative to the workspace.
        path: String,
        /// Its lines.
        lines: usize,
    },
    /// A function is over [`Limits::fn_lines`] lines.
    LongFn {
        /// The file, relative to the workspace.
        path: String,
        /// `module::Type::name` within the file.
        name: String,
        /// Its first line.
        line: usize,
        /// Its length in lines.
        lines: usize,
    },
    /// Sibling modules of a crate use each other in a circle.
    Cycle {
        /// The crate's directory name.
        krate: String,
        /// The parent module (`crate` for the root).
        parent: String,
        /// The modules in the cycle, sorted.
        modules: Vec<String>,
        /// One edge per module that closes the circle, as `a -> b (file:line)`.
        evidence: Vec<String>,
    },
    /// A crate holds more than [`Limits::crate_share`] percent of the
    /// workspace's source lines.
    CrateShare {
        /// The crate's directory name.
        krate: String,
        /// Lines in its `src/`.
        lines: usize,
        /// Lines in every crate's `src/`.
        total: usize,
    },
    /// A CLI file names a crate it must reach through `pmx`.
    ForbiddenPath {
        /// The file, relative to the workspace.
        path: String,
        /// The crate named.
        krate: String,
        /// How many paths name it.
        uses: usize,
    },
    /// A struct other than [`Limits::attr_structs`] declares
    /// `perf_event_attr`'s fields.
    AttrStruct {
        /// The file, relative to the workspace.
        path: String,
        /// The struct's name.
        name: String,
        /// How many of [`single::ATTR_FIELDS`] it has.
        fields: usize,
    },
    /// A file other than [`Limits::sigaction_files`] calls `sigaction`.
    Sigaction {
        /// The file, relative to the workspace.
        path: String,
        /// How many calls.
        calls: usize,
    },
    /// A function outside [`Limits::env_sites`] reads the environment.
    EnvRead {
        /// The file, relative to the workspace.
        path: String,
        /// The function (`Type::name` for a method).
        function: String,
        /// How many reads.
        reads: usize,
    },
}

impl Finding {
    /// What identifies this finding across runs, without its size.
    pub fn key(&self) -> String {
        match self {
            Finding::CliTotal { .. } => "cli-total".to_string(),
            Finding::CliFile { path, .. } => format!("cli-file {path}"),
            Finding::LongFn { path, name, .. } => format!("fn {path} {name}"),
            Finding::Cycle {
                krate,
                parent,
                modules,
                ..
            } => format!("cycle {krate} {parent}::{{{}}}", modules.join(",")),
            Finding::ForbiddenPath { path, krate, .. } => format!("path {path} {krate}"),
            Finding::CrateShare { krate, .. } => format!("share {krate}"),
            Finding::AttrStruct { path, name, .. } => format!("attr {path} {name}"),
            Finding::Sigaction { path, .. } => format!("sigaction {path}"),
            Finding::EnvRead { path, function, .. } => format!("env {path} {function}"),
        }
    }

    /// How big the breach is: lines, modules in the cycle, or paths.
    pub fn size(&self) -> usize {
        match self {
            Finding::CliTotal { lines } | Finding::CliFile { lines, .. } => *lines,
            Finding::LongFn { lines, .. } => *lines,
            Finding::Cycle { modules, .. } => modules.len(),
            Finding::ForbiddenPath { uses, .. } => *uses,
            Finding::CrateShare { lines, .. } => *lines,
            Finding::AttrStruct { fields, .. } => *fields,
            Finding::Sigaction { calls, .. } => *calls,
            Finding::EnvRead { reads, .. } => *reads,
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::CliTotal { lines } => write!(f, "crates/pmx-cli/src has {lines} lines"),
            Finding::CliFile { path, lines } => write!(f, "{path} has {lines} lines"),
            Finding::LongFn {
                path,
                name,
                line,
                lines,
            } => write!(f, "{path}:{line} fn {name} is {lines} lines long"),
            Finding::Cycle {
                krate,
                parent,
                modules,
                evidence,
            } => write!(
                f,
                "{krate}: modules {{{}}} under {parent} use each other in a circle: {}",
                modules.join(", "),
                evidence.join("; ")
            ),
            Finding::CrateShare {
                krate,
                lines,
                total,
            } => write!(
                f,
                "crates/{krate}/src holds {lines} of the workspace's {total} source lines ({:.1}%)",
                100.0 * *lines as f64 / (*total).max(1) as f64
            ),
            Finding::ForbiddenPath { path, krate, uses } => {
                write!(
                    f,
                    "{path} names {krate} {uses} times (use pmx's re-exports)"
                )
            }
            Finding::AttrStruct { path, name, fields } => write!(
                f,
                "{path}: struct {name} declares {fields} of perf_event_attr's fields \
                 (use pmx_perfdata::PerfEventAttr or pmx_perf::Attr)"
            ),
            Finding::Sigaction { path, calls } => write!(
                f,
                "{path} calls sigaction {calls} times (use pmx_sys::signal)"
            ),
            Finding::EnvRead {
                path,
                function,
                reads,
            } => write!(
                f,
                "{path}: {function} reads the environment {reads} times (read it at the \
                 edge and pass it down, or in a documented from_env of Limits::env_sites)"
            ),
        }
    }
}

/// An error reading or parsing the tree.
#[derive(Debug)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// What [`check`] measured, besides the breaches.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    /// Lines in `crates/pmx-cli/src`.
    pub cli_total: usize,
    /// The CLI's files by lines, largest first.
    pub cli_files: Vec<(String, usize)>,
    /// Functions measured.
    pub functions: usize,
    /// Source lines (`src/`) per crate, largest first.
    pub crate_lines: Vec<(String, usize)>,
    /// Modules whose edges were followed, all crates together.
    pub modules: usize,
    /// Every breach, allowed or not.
    pub findings: Vec<Finding>,
}

/// Measures the workspace at `root` against `limits`.
pub fn check(root: &Path, limits: &Limits) -> Result<Figures, Error> {
    let mut figures = Figures::default();
    let crates_dir = root.join("crates");
    let mut crate_dirs: Vec<PathBuf> = read_dir(&crates_dir)?
        .into_iter()
        .filter(|p| p.join("Cargo.toml").is_file() && p.join("src").is_dir())
        .collect();
    crate_dirs.sort();
    for dir in &crate_dirs {
        let name = file_name(dir);
        let krate = load_crate(root, dir)?;
        figures.modules += krate.modules.len();
        figures.findings.extend(cycles(&name, &krate));
        figures
            .findings
            .extend(single::findings(root, dir, limits)?);
        figures.findings.extend(env::findings(root, dir, limits)?);
        if limits.fn_crates.contains(&name) {
            for f in &krate.functions {
                figures.functions += 1;
                if f.lines > limits.fn_lines {
                    figures.findings.push(Finding::LongFn {
                        path: f.path.clone(),
                        name: f.name.clone(),
                        line: f.line,
                        lines: f.lines,
                    });
                }
            }
        }
        if name == "pmx-cli" {
            cli_findings(root, dir, &krate, limits, &mut figures)?;
        }
        let mut lines = 0;
        for file in rs_files(&dir.join("src"))? {
            lines += read(&file)?.lines().count();
        }
        figures.crate_lines.push((name, lines));
    }
    share_findings(limits, &mut figures);
    Ok(figures)
}

/// The crates over their share of the workspace's lines.
fn share_findings(limits: &Limits, figures: &mut Figures) {
    (figures.crate_lines).sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let total: usize = figures.crate_lines.iter().map(|(_, l)| l).sum();
    for (krate, lines) in &figures.crate_lines {
        if lines * 100 > total * limits.crate_share {
            figures.findings.push(Finding::CrateShare {
                krate: krate.clone(),
                lines: *lines,
                total,
            });
        }
    }
}

fn cli_findings(
    root: &Path,
    dir: &Path,
    krate: &Crate,
    limits: &Limits,
    figures: &mut Figures,
) -> Result<(), Error> {
    for file in rs_files(&dir.join("src"))? {
        let text = read(&file)?;
        let lines = text.lines().count();
        let path = relative(root, &file);
        figures.cli_total += lines;
        if lines > limits.cli_file {
            figures.findings.push(Finding::CliFile {
                path: path.clone(),
                lines,
            });
        }
        figures.cli_files.push((path, lines));
    }
    figures
        .cli_files
        .sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if figures.cli_total > limits.cli_total {
        figures.findings.push(Finding::CliTotal {
            lines: figures.cli_total,
        });
    }
    let mut named: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (path, first) in &krate.external_paths {
        if limits.cli_forbidden.contains(first) {
            *named.entry((path.clone(), first.clone())).or_default() += 1;
        }
    }
    for ((path, krate), uses) in named {
        figures
            .findings
            .push(Finding::ForbiddenPath { path, krate, uses });
    }
    Ok(())
}

/// A debt: a breach allowed up to a size until it is paid off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Debt {
    /// The finding's [`Finding::key`].
    pub key: String,
    /// The largest size allowed.
    pub size: usize,
}

/// Reads a debts file: `SIZE KEY` per line, `#` comments and blank lines
/// ignored.
pub fn parse_debts(text: &str) -> Result<Vec<Debt>, Error> {
    let mut debts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (size, key) = line
            .split_once(char::is_whitespace)
            .ok_or_else(|| Error(format!("debts line {}: expected `SIZE KEY`", i + 1)))?;
        let size = size
            .parse()
            .map_err(|_| Error(format!("debts line {}: `{size}` is not a size", i + 1)))?;
        debts.push(Debt {
            key: key.trim().to_string(),
            size,
        });
    }
    Ok(debts)
}

/// Writes findings as a debts file that allows exactly them.
pub fn format_debts(findings: &[Finding]) -> String {
    let mut by_key: BTreeMap<String, usize> = BTreeMap::new();
    for f in findings {
        let e = by_key.entry(f.key()).or_default();
        *e = (*e).max(f.size());
    }
    by_key
        .into_iter()
        .map(|(k, s)| format!("{s} {k}\n"))
        .collect()
}

/// The verdict on findings against debts.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// Breaches no debt allows, or that grew past their debt.
    pub violations: Vec<String>,
    /// Breaches a debt still allows.
    pub allowed: Vec<Finding>,
    /// Debts with no breach left: remove them from the file.
    pub paid: Vec<Debt>,
}

impl Verdict {
    /// Nothing failed.
    pub fn passed(&self) -> bool {
        self.violations.is_empty() && self.paid.is_empty()
    }
}

/// Judges findings against the recorded debts.
pub fn judge(findings: &[Finding], debts: &[Debt]) -> Verdict {
    let mut verdict = Verdict::default();
    let allowed: HashMap<&str, usize> = debts.iter().map(|d| (d.key.as_str(), d.size)).collect();
    let mut seen = BTreeSet::new();
    for f in findings {
        let key = f.key();
        match allowed.get(key.as_str()) {
            Some(&size) if f.size() <= size => verdict.allowed.push(f.clone()),
            Some(&size) => verdict
                .violations
                .push(format!("{f} (grew past its recorded debt of {size})")),
            None => verdict.violations.push(f.to_string()),
        }
        seen.insert(key);
    }
    verdict.paid = debts
        .iter()
        .filter(|d| !seen.contains(&d.key))
        .cloned()
        .collect();
    verdict
}

// ---------------------------------------------------------------------------
// Reading a crate

/// A function's extent.
#[derive(Debug, Clone)]
struct Function {
    path: String,
    name: String,
    line: usize,
    lines: usize,
}

/// A reference from one module to another.
#[derive(Debug, Clone)]
struct Reference {
    from: Vec<String>,
    to: Vec<String>,
    at: String,
}

/// What was read of one crate.
#[derive(Debug, Default)]
struct Crate {
    /// Every module, file-level and inline.
    modules: BTreeSet<Vec<String>>,
    /// Raw references, resolved after all modules are known.
    references: Vec<Reference>,
    /// `use` bindings: module → (name → target path).
    bindings: HashMap<Vec<String>, HashMap<String, Vec<String>>>,
    functions: Vec<Function>,
    /// (file, first segment) of paths that start outside the crate.
    external_paths: Vec<(String, String)>,
}

fn load_crate(root: &Path, dir: &Path) -> Result<Crate, Error> {
    let src = dir.join("src");
    let files = rs_files(&src)?;
    let mut krate = Crate::default();
    let mut reached: BTreeSet<PathBuf> = BTreeSet::new();
    let mut queue: Vec<(Vec<String>, PathBuf)> = Vec::new();
    for root_name in ["lib.rs", "main.rs"] {
        let p = src.join(root_name);
        if p.is_file() {
            queue.push((vec![], p));
        }
    }
    // Roots first, then any file no declaration reached (a [[bin]]); each
    // extra root is its own crate, so its modules are kept apart by a
    // marker segment.
    let mut pending_roots: Vec<PathBuf> = files.clone();
    loop {
        while let Some((module, file)) = queue.pop() {
            if !reached.insert(file.clone()) {
                continue;
            }
            let text = read(&file)?;
            let ast = syn::parse_file(&text)
                .map_err(|e| Error(format!("{}: {e}", relative(root, &file))))?;
            let rel = relative(root, &file);
            let dir_of_children = children_dir(&file, module.is_empty());
            let mut reader = FileReader::new(&mut krate, module.clone(), rel);
            reader.visit_file(&ast);
            for (child, explicit) in reader.declared.drain(..) {
                let mut path = module.clone();
                path.push(child.clone());
                let target = match explicit {
                    Some(p) => file.parent().unwrap_or(Path::new(".")).join(p),
                    None => {
                        let a = dir_of_children.join(format!("{child}.rs"));
                        if a.is_file() {
                            a
                        } else {
                            dir_of_children.join(&child).join("mod.rs")
                        }
                    }
                };
                if target.is_file() {
                    queue.push((path, target));
                }
            }
        }
        pending_roots.retain(|f| !reached.contains(f));
        match pending_roots.first() {
            Some(f) => {
                let marker = format!("<bin {}>", file_name(f));
                queue.push((vec![marker], f.clone()));
            }
            None => break,
        }
    }
    Ok(krate)
}

fn children_dir(file: &Path, is_root: bool) -> PathBuf {
    let parent = file.parent().unwrap_or(Path::new(".")).to_path_buf();
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if is_root || stem == "mod" || stem == "lib" || stem == "main" {
        parent
    } else {
        parent.join(stem)
    }
}

/// Walks one file's syntax tree.
struct FileReader<'a> {
    krate: &'a mut Crate,
    /// The module being read, inline modules included.
    module: Vec<String>,
    /// `mod name;` declarations of the file's own module: (name, `#[path]`).
    declared: Vec<(String, Option<String>)>,
    /// The file's module depth (inline modules are deeper).
    file_depth: usize,
    path: String,
    /// `Type` of the impl being read, for function names.
    impl_type: Vec<String>,
    /// Nesting of inline modules and functions, for function names.
    scope: Vec<String>,
}

impl<'a> FileReader<'a> {
    fn new(krate: &'a mut Crate, module: Vec<String>, path: String) -> Self {
        krate.modules.insert(module.clone());
        let file_depth = module.len();
        FileReader {
            krate,
            module,
            declared: Vec::new(),
            file_depth,
            path,
            impl_type: Vec::new(),
            scope: Vec::new(),
        }
    }

    /// Records a path as written in this module.
    fn reference(&mut self, segments: &[String], line: usize) {
        let Some(first) = segments.first() else {
            return;
        };
        let mut base = match first.as_str() {
            "crate" => {
                self.push_reference(crate_base(&self.module), &segments[1..], line);
                return;
            }
            "self" => self.module.clone(),
            "super" => self.module.clone(),
            _ => {
                // A child module's name, or something from outside.
                self.krate
                    .external_paths
                    .push((self.path.clone(), first.clone()));
                self.push_reference(self.module.clone(), segments, line);
                return;
            }
        };
        let mut rest = segments;
        while let Some(s) = rest.first() {
            match s.as_str() {
                "super" => {
                    base.pop();
                }
                "self" => {}
                _ => break,
            }
            rest = &rest[1..];
        }
        self.push_reference(base, rest, line);
    }

    fn push_reference(&mut self, base: Vec<String>, rest: &[String], line: usize) {
        let mut to = base;
        to.extend(rest.iter().cloned());
        self.krate.references.push(Reference {
            from: self.module.clone(),
            to,
            at: format!("{}:{line}", self.path),
        });
    }

    fn function(&mut self, name: &syn::Ident, start: usize, end: usize) {
        let mut qualified: Vec<String> = self.scope.clone();
        if let Some(t) = self.impl_type.last() {
            qualified.push(t.clone());
        }
        qualified.push(name.to_string());
        self.krate.functions.push(Function {
            path: self.path.clone(),
            name: qualified.join("::"),
            line: start,
            lines: end + 1 - start,
        });
    }
}

/// The crate root of a module path: empty, or the `<bin …>` marker.
fn crate_base(module: &[String]) -> Vec<String> {
    match module.first() {
        Some(m) if m.starts_with("<bin") => vec![m.clone()],
        _ => vec![],
    }
}

impl<'ast> Visit<'ast> for FileReader<'_> {
    fn visit_item_mod(&mut self, i: &'ast syn::ItemMod) {
        match &i.content {
            None => {
                if self.module.len() == self.file_depth {
                    let explicit = i.attrs.iter().find_map(path_attr);
                    self.declared.push((i.ident.to_string(), explicit));
                }
            }
            Some(_) => {
                self.module.push(i.ident.to_string());
                self.krate.modules.insert(self.module.clone());
                self.scope.push(i.ident.to_string());
                syn::visit::visit_item_mod(self, i);
                self.scope.pop();
                self.module.pop();
            }
        }
    }

    fn visit_item_use(&mut self, i: &'ast syn::ItemUse) {
        let line = i.use_token.span.start().line;
        let mut flat = Vec::new();
        flatten_use(&i.tree, &mut Vec::new(), &mut flat);
        for (path, local) in flat {
            if i.leading_colon.is_some() {
                continue;
            }
            // Resolve the binding's target the way a reference is.
            let before = self.krate.references.len();
            self.reference(&path, line);
            if let (Some(local), Some(r)) = (local, self.krate.references.get(before)) {
                let to = r.to.clone();
                self.krate
                    .bindings
                    .entry(self.module.clone())
                    .or_default()
                    .insert(local, to);
            }
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() && p.segments.len() > 1 {
            let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            let line = p
                .segments
                .first()
                .map(|s| s.ident.span().start().line)
                .unwrap_or(0);
            self.reference(&segments, line);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        for (segments, line) in paths_in_tokens(m.tokens.clone()) {
            self.reference(&segments, line);
        }
        syn::visit::visit_macro(self, m);
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let name = match &*i.self_ty {
            syn::Type::Path(t) => t
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default(),
            _ => "impl".to_string(),
        };
        self.impl_type.push(name);
        syn::visit::visit_item_impl(self, i);
        self.impl_type.pop();
    }

    fn visit_item_fn(&mut self, i: &'ast syn::ItemFn) {
        let start = i.sig.fn_token.span.start().line;
        let end = i.block.brace_token.span.close().end().line;
        self.function(&i.sig.ident, start, end);
        let saved = std::mem::take(&mut self.impl_type);
        self.scope.push(i.sig.ident.to_string());
        syn::visit::visit_item_fn(self, i);
        self.scope.pop();
        self.impl_type = saved;
    }

    fn visit_impl_item_fn(&mut self, i: &'ast syn::ImplItemFn) {
        let start = i.sig.fn_token.span.start().line;
        let end = i.block.brace_token.span.close().end().line;
        self.function(&i.sig.ident, start, end);
        syn::visit::visit_impl_item_fn(self, i);
    }

    fn visit_trait_item_fn(&mut self, i: &'ast syn::TraitItemFn) {
        if let Some(block) = &i.default {
            let start = i.sig.fn_token.span.start().line;
            let end = block.brace_token.span.close().end().line;
            self.function(&i.sig.ident, start, end);
        }
        syn::visit::visit_trait_item_fn(self, i);
    }
}

fn path_attr(a: &syn::Attribute) -> Option<String> {
    if !a.path().is_ident("path") {
        return None;
    }
    match &a.meta {
        syn::Meta::NameValue(nv) => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    }
}

/// Every path a `use` tree imports, with the name it binds (none for a
/// glob).
fn flatten_use(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            let mut path = prefix.clone();
            if name != "self" {
                path.push(name.clone());
            }
            let local = if name == "self" {
                prefix.last().cloned()
            } else {
                Some(name)
            };
            out.push((path, local));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            out.push((path, Some(r.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), None)),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix, out);
            }
        }
    }
}

/// Paths `a::b::c` written inside a macro's tokens, with their lines.
fn paths_in_tokens(tokens: TokenStream) -> Vec<(Vec<String>, usize)> {
    let mut flat: Vec<TokenTree> = Vec::new();
    flatten_tokens(tokens, &mut flat);
    let mut out = Vec::new();
    let mut i = 0;
    while i < flat.len() {
        let TokenTree::Ident(first) = &flat[i] else {
            i += 1;
            continue;
        };
        let preceded_by_colons = i >= 2 && is_colons(&flat, i - 2);
        let mut segments = vec![first.to_string()];
        let line = first.span().start().line;
        let mut j = i + 1;
        while j + 2 < flat.len() + 1 && is_colons(&flat, j) {
            match flat.get(j + 2) {
                Some(TokenTree::Ident(next)) => {
                    segments.push(next.to_string());
                    j += 3;
                }
                _ => break,
            }
        }
        if segments.len() > 1 && !preceded_by_colons {
            out.push((segments, line));
        }
        i = j.max(i + 1);
    }
    out
}

fn is_colons(flat: &[TokenTree], at: usize) -> bool {
    matches!(
        (flat.get(at), flat.get(at + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':'
    )
}

fn flatten_tokens(tokens: TokenStream, out: &mut Vec<TokenTree>) {
    for t in tokens {
        match t {
            TokenTree::Group(g) => {
                // A group boundary ends any path: mark it with a `;`.
                out.push(TokenTree::Punct(proc_macro2::Punct::new(
                    ';',
                    Spacing::Alone,
                )));
                flatten_tokens(g.stream(), out);
                out.push(TokenTree::Punct(proc_macro2::Punct::new(
                    ';',
                    Spacing::Alone,
                )));
            }
            other => out.push(other),
        }
    }
}

// ---------------------------------------------------------------------------
// Cycles

/// Resolves `path` to the deepest module of the crate it lies in,
/// following `use` bindings (re-exports) a few hops.
fn resolve(krate: &Crate, path: &[String]) -> Option<Vec<String>> {
    let mut path = path.to_vec();
    for _ in 0..8 {
        let mut depth = 0;
        while depth < path.len() && krate.modules.contains(&path[..depth + 1]) {
            depth += 1;
        }
        let module = path[..depth].to_vec();
        let Some(next) = path.get(depth) else {
            return Some(module);
        };
        match krate.bindings.get(&module).and_then(|b| b.get(next)) {
            Some(target) if target.as_slice() != &path[..=depth] => {
                let mut p = target.clone();
                p.extend(path[depth + 1..].iter().cloned());
                path = p;
            }
            _ => return Some(module),
        }
    }
    None
}

fn cycles(name: &str, krate: &Crate) -> Vec<Finding> {
    // parent → (child → (child → evidence))
    type Edges = BTreeMap<String, BTreeMap<String, String>>;
    let mut graphs: BTreeMap<Vec<String>, Edges> = BTreeMap::new();
    for r in &krate.references {
        let Some(to) = resolve(krate, &r.to) else {
            continue;
        };
        let common = r.from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        if common < r.from.len() && common < to.len() {
            graphs
                .entry(to[..common].to_vec())
                .or_default()
                .entry(r.from[common].clone())
                .or_default()
                .entry(to[common].clone())
                .or_insert_with(|| r.at.clone());
        }
    }
    let mut out = Vec::new();
    for (parent, edges) in graphs {
        for scc in strongly_connected(&edges) {
            if scc.len() < 2 {
                continue;
            }
            let members: BTreeSet<&String> = scc.iter().collect();
            let mut evidence = Vec::new();
            for a in &scc {
                if let Some(targets) = edges.get(a) {
                    for (b, at) in targets {
                        if members.contains(b) {
                            evidence.push(format!("{a} -> {b} ({at})"));
                        }
                    }
                }
            }
            let parent = if parent.is_empty() {
                "crate".to_string()
            } else {
                format!("crate::{}", parent.join("::"))
            };
            out.push(Finding::Cycle {
                krate: name.to_string(),
                parent,
                modules: scc,
                evidence,
            });
        }
    }
    out
}

/// Tarjan's algorithm; each component sorted.
fn strongly_connected(edges: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeMap<String, String>>,
        index: HashMap<&'a str, usize>,
        low: HashMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(targets) = s.edges.get(v) {
            for w in targets.keys() {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            component.sort();
            s.out.push(component);
        }
    }
    let mut s = State {
        edges,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    let nodes: BTreeSet<&str> = edges
        .iter()
        .flat_map(|(a, t)| std::iter::once(a.as_str()).chain(t.keys().map(|k| k.as_str())))
        .collect();
    for n in nodes {
        if !s.index.contains_key(n) {
            visit(&mut s, n);
        }
    }
    s.out
}

// ---------------------------------------------------------------------------
// Files

fn read(p: &Path) -> Result<String, Error> {
    std::fs::read_to_string(p).map_err(|e| Error(format!("{}: {e}", p.display())))
}

fn read_dir(p: &Path) -> Result<Vec<PathBuf>, Error> {
    let entries = std::fs::read_dir(p).map_err(|e| Error(format!("{}: {e}", p.display())))?;
    Ok(entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
}

/// Every `.rs` file under `dir`, sorted.
fn rs_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for p in read_dir(&d)? {
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn relative(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}
