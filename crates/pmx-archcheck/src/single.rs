//! "One of each": concepts the project declares in exactly one place.
//!
//! - **`perf_event_attr`**: a struct whose named fields include at least
//!   [`Limits::attr_fields`] of [`ATTR_FIELDS`] (the attr's distinctive
//!   field names) is a declaration of the attr; only the structs of
//!   [`Limits::attr_structs`] may be one (the kernel ABI struct and the one
//!   builder form). Any other is a [`Finding::AttrStruct`].
//! - **Signal dispositions**: `sigaction` (the C function, through `libc`)
//!   is called only in the files of [`Limits::sigaction_files`] (the one
//!   signal facility); anywhere else it is a [`Finding::Sigaction`].
//!
//! Both read each crate's `src` tree, test modules included.

use crate::{read, relative, rs_files, Error, Finding, Limits};
use std::path::Path;
use syn::visit::Visit;

/// Field names that only `struct perf_event_attr` and its copies carry.
/// `config*` and `exclude_*` are left out: an event's encoding has them
/// without being an attr.
pub const ATTR_FIELDS: &[&str] = &[
    "sample_period",
    "sample_freq",
    "sample_type",
    "read_format",
    "wakeup_events",
    "wakeup_watermark",
    "bp_type",
    "bp_addr",
    "bp_len",
    "branch_sample_type",
    "sample_regs_user",
    "sample_stack_user",
    "sample_regs_intr",
    "aux_watermark",
    "sample_max_stack",
    "aux_sample_size",
    "sig_data",
];

/// The structs of `text` (the file at `path`, relative to the workspace)
/// that declare the attr, as (`path Name`, how many of [`ATTR_FIELDS`]).
pub fn attr_structs(
    path: &str,
    text: &str,
    min_fields: usize,
) -> Result<Vec<(String, usize)>, Error> {
    struct V<'a> {
        path: &'a str,
        min: usize,
        out: Vec<(String, usize)>,
    }
    impl<'ast> Visit<'ast> for V<'_> {
        fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
            let n = s
                .fields
                .iter()
                .filter_map(|f| f.ident.as_ref())
                .filter(|i| ATTR_FIELDS.contains(&i.to_string().as_str()))
                .count();
            if n >= self.min {
                self.out.push((format!("{} {}", self.path, s.ident), n));
            }
            syn::visit::visit_item_struct(self, s);
        }
    }
    let ast = syn::parse_file(text).map_err(|e| Error(format!("{path}: {e}")))?;
    let mut v = V {
        path,
        min: min_fields,
        out: Vec::new(),
    };
    v.visit_file(&ast);
    Ok(v.out)
}

/// How many calls of `sigaction` (a path ending in `sigaction` followed by
/// `(`, e.g. `libc::sigaction(`) `text` holds, outside comments.
pub fn sigaction_calls(text: &str) -> usize {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .map(|l| l.matches(concat!("::sig", "action(")).count())
        .sum()
}

/// The findings of both rules for the crate in `dir`.
pub(crate) fn findings(root: &Path, dir: &Path, limits: &Limits) -> Result<Vec<Finding>, Error> {
    let mut out = Vec::new();
    for file in rs_files(&dir.join("src"))? {
        let text = read(&file)?;
        let path = relative(root, &file);
        for (key, fields) in attr_structs(&path, &text, limits.attr_fields)? {
            if !limits.attr_structs.contains(&key) {
                let (path, name) = key.split_once(' ').unwrap_or((&key, ""));
                out.push(Finding::AttrStruct {
                    path: path.to_string(),
                    name: name.to_string(),
                    fields,
                });
            }
        }
        let calls = sigaction_calls(&text);
        if calls > 0 && !limits.sigaction_files.contains(&path) {
            out.push(Finding::Sigaction { path, calls });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_attr_struct_is_found() {
        let text = "
            struct Encoding { config: u64, config1: u64, sample_period: u64 }
            mod inner {
                pub struct MyAttr {
                    pub type_: u32,
                    pub sample_period: u64,
                    pub sample_type: u64,
                    pub read_format: u64,
                    pub wakeup_events: u32,
                }
            }
        ";
        let found = attr_structs("crates/x/src/lib.rs", text, 4).unwrap();
        assert_eq!(found, vec![("crates/x/src/lib.rs MyAttr".to_string(), 4)]);
        assert!(attr_structs("f", text, 5).unwrap().is_empty());
    }

    #[test]
    fn sigaction_calls_are_counted_outside_comments() {
        // Built at run time, so this file itself holds no call.
        let f = "sigaction";
        let text = format!(
            "unsafe {{ libc::{f}(s, &a, null_mut()) }};\n\
             // libc::{f}(s, &a, old)\n\
             let x: libc::{f} = zeroed();\n"
        );
        assert_eq!(sigaction_calls(&text), 1);
    }

    #[test]
    fn the_workspace_keeps_one_of_each() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let limits = Limits::default();
        let mut all = Vec::new();
        for dir in crate::read_dir(&root.join("crates")).unwrap() {
            if dir.join("src").is_dir() {
                all.extend(findings(&root, &dir, &limits).unwrap());
            }
        }
        let shown: Vec<String> = all.iter().map(|f| f.to_string()).collect();
        assert!(all.is_empty(), "{shown:#?}");
    }
}
