//! "The environment is read at the edge": where `std::env::var`,
//! `var_os`, `vars` and `vars_os` may be called.
//!
//! A library function that reads a variable of the process environment
//! has an input its signature does not show. pmx reads its variables at
//! the edge (the CLI, the C and Python entry points, serve's launch) and
//! passes the values down as options; where a variable is the interface
//! of a library entry point itself, it is read in one clearly named
//! `from_env`-style constructor at that entry point, documented as such.
//!
//! Every call of those four functions in a crate's `src/` — a path
//! ending in `env::var`, `env::var_os`, `env::vars` or `env::vars_os`, in
//! code, in macro arguments, or imported by `use` — is a read *site*: the
//! file and the innermost function around it (`Type::name` for a method).
//! A site not matched by an entry of [`Limits::env_sites`] is a
//! [`Finding::EnvRead`]. An entry is a directory (`…/src/`, every file
//! under it), a file, or `file Function` (that function only).
//!
//! The sites allowed ([`Limits::env_sites`]'s default) and why:
//!
//! - `crates/pmx-cli/src/`, `crates/pmx-capi/src/`, `crates/pmx-py/src/`:
//!   the edges (the command line, the C entry points, the Python module).
//! - `crates/pmx-serve/src/launch.rs`: serve's launch, its edge.
//! - `crates/pmx-testkit/src/`: test support (where the shared fixtures
//!   are, which cargo builds them), never part of pmx's behaviour.
//! - `crates/pmx-io/src/dirs.rs Dirs::from_env`: pmx's directories (the
//!   XDG and home variables), for the edges to call.
//! - `crates/pmx-io/src/job.rs JobContext::current`: the MPI/Slurm rank
//!   and job variables, the `from_env` of the edge
//!   (`JobContext::from_env` takes a lookup).
//! - `crates/pmx-events/src/libpfm.rs PfmEnv::from_env`: libpfm's own
//!   variables (`LIBPFM_FORCE_PMU`, `LIBPFM_ENCODE_INACTIVE`) and
//!   `PMX_LIBPFM`, the interface of libpfm and of its loading.
//! - `crates/pmx/src/region.rs Config::from_env`: `PMX_EVENTS`,
//!   `PMX_METRICS`, `PMX_REGIONS_OUT`, the region API's interface (an
//!   instrumented program is configured by its environment).
//! - `crates/pmx-shell/src/complete.rs answer_if_asked`: the shell's
//!   completion request, a variable the shell sets for the completer.
//! - `crates/pmx/src/events_dirs.rs from_env`: `PMX_EVENTS_DIR`, the
//!   default of the embedding API's entry points that find event tables
//!   (`Counters`, `region`, `measure`, completion, `events fetch`); the
//!   CLI and the C and Python entry points call it too, and the engines
//!   below (`pmx-events`, `pmx-count`, `pmx-analysis`) take the value as
//!   an option (`EventsDirDefault`).

use crate::{read, relative, rs_files, Error, Finding, Limits};
use proc_macro2::{TokenStream, TokenTree};
use std::path::Path;
use syn::visit::Visit;

/// The functions of `std::env` that read the environment.
pub const READS: &[&str] = &["var", "var_os", "vars", "vars_os"];

/// The read sites of `text` (the file at `path`): (innermost function, or
/// `(top level)`, and how many reads in it), in the order first seen.
pub fn env_reads(path: &str, text: &str) -> Result<Vec<(String, usize)>, Error> {
    let ast = syn::parse_file(text).map_err(|e| Error(format!("{path}: {e}")))?;
    let mut v = Reads::default();
    v.visit_file(&ast);
    Ok(v.sites)
}

/// Whether `entries` (of [`Limits::env_sites`]) allow a read in function
/// `name` of the file `path`.
pub fn allowed(entries: &[String], path: &str, name: &str) -> bool {
    entries.iter().any(|e| match e.split_once(' ') {
        Some((file, function)) => file == path && function == name,
        None if e.ends_with('/') => path.starts_with(e.as_str()),
        None => e == path,
    })
}

#[derive(Default)]
struct Reads {
    /// The enclosing impl's type, when in one.
    types: Vec<String>,
    /// The enclosing functions, innermost last.
    fns: Vec<String>,
    sites: Vec<(String, usize)>,
}

impl Reads {
    fn found(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        let site = self.fns.last().cloned().unwrap_or("(top level)".into());
        match self.sites.iter_mut().find(|(s, _)| *s == site) {
            Some((_, count)) => *count += n,
            None => self.sites.push((site, n)),
        }
    }

    fn in_fn(&mut self, name: String, f: impl FnOnce(&mut Reads)) {
        self.fns.push(name);
        f(self);
        self.fns.pop();
    }
}

fn is_read(a: &str, b: &str) -> bool {
    a == "env" && READS.contains(&b)
}

/// Reads named in a macro's tokens: `env` `::` `var…`, at any depth.
fn token_reads(tokens: TokenStream) -> usize {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut n = 0;
    for (i, t) in tokens.iter().enumerate() {
        match t {
            TokenTree::Group(g) => n += token_reads(g.stream()),
            TokenTree::Ident(a) if a == "env" => {
                let colons = tokens[i + 1..]
                    .iter()
                    .take(2)
                    .filter(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ':'))
                    .count();
                if let (2, Some(TokenTree::Ident(b))) = (colons, tokens.get(i + 3)) {
                    n += usize::from(READS.contains(&b.to_string().as_str()));
                }
            }
            _ => {}
        }
    }
    n
}

/// Reads imported by a `use` tree below `env`.
fn use_reads(tree: &syn::UseTree, under_env: bool) -> usize {
    match tree {
        syn::UseTree::Path(p) => use_reads(&p.tree, p.ident == "env"),
        syn::UseTree::Name(n) => {
            usize::from(under_env && READS.contains(&n.ident.to_string().as_str()))
        }
        syn::UseTree::Rename(r) => {
            usize::from(under_env && READS.contains(&r.ident.to_string().as_str()))
        }
        syn::UseTree::Group(g) => g.items.iter().map(|t| use_reads(t, under_env)).sum(),
        syn::UseTree::Glob(_) => 0,
    }
}

impl<'ast> Visit<'ast> for Reads {
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let name = match &*i.self_ty {
            syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        self.types.push(name.unwrap_or_default());
        syn::visit::visit_item_impl(self, i);
        self.types.pop();
    }

    fn visit_item_fn(&mut self, i: &'ast syn::ItemFn) {
        self.in_fn(i.sig.ident.to_string(), |v| syn::visit::visit_item_fn(v, i));
    }

    fn visit_impl_item_fn(&mut self, i: &'ast syn::ImplItemFn) {
        let ty = self.types.last().cloned().unwrap_or_default();
        let name = format!("{ty}::{}", i.sig.ident);
        self.in_fn(name, |v| syn::visit::visit_impl_item_fn(v, i));
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        let n = segs.windows(2).filter(|w| is_read(&w[0], &w[1])).count();
        self.found(n);
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.found(token_reads(m.tokens.clone()));
        syn::visit::visit_macro(self, m);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.found(use_reads(&u.tree, false));
    }
}

/// The findings of the rule for the crate in `dir`.
pub(crate) fn findings(root: &Path, dir: &Path, limits: &Limits) -> Result<Vec<Finding>, Error> {
    let mut out = Vec::new();
    for file in rs_files(&dir.join("src"))? {
        let text = read(&file)?;
        let path = relative(root, &file);
        for (function, reads) in env_reads(&path, &text)? {
            if !allowed(&limits.env_sites, &path, &function) {
                out.push(Finding::EnvRead {
                    path: path.clone(),
                    function,
                    reads,
                });
            }
        }
    }
    Ok(out)
}
