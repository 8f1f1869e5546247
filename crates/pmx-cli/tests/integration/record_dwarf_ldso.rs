//! `--call-graph dwarf` through the dynamic loader (issue 29): a C
//! program that spends its time in `dlopen`/`dlsym`/`dlclose`, so its
//! samples land in `ld-linux-x86-64.so.2` (whose separate debug file,
//! from libc6-dbg, keeps `.text` and `.eh_frame` as `NOBITS`), recorded
//! by pmx and reported every way that reads symbols, lines, inline
//! frames and unwind tables: no panic, ld.so's functions named, and their
//! callers unwound up to `main`.
//!
//! Needs a C compiler; skips with a message without one.

use crate::common::{pmx, stderr, stdout};

const DL_C: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? strtol(argv[1], 0, 10) : 1000;
    const char *names[] = {"cos", "sin", "tan", "exp", "log", "pow", "sqrt", "not_in_libm"};
    unsigned long found = 0;
    for (long i = 0; i < n; i++) {
        void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
        if (!h) return 1;
        for (int j = 0; j < 2000; j++) found += dlsym(h, names[j % 8]) != 0;
        dlclose(h);
    }
    printf("%lu\n", found);
    return 0;
}
"#;

/// `pmx ARGS…`, which must succeed: its standard output.
fn ok(args: &[&str]) -> String {
    let o = pmx(args);
    assert_eq!(o.status.code(), Some(0), "pmx {args:?}: {}", stderr(&o));
    stdout(&o)
}

#[test]
fn dwarf_stacks_through_ld_so_report_without_panic() {
    if !pmx_testkit::cc::require() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = match pmx_testkit::cc::compile(dir.path(), "dl", DL_C, &["-O2", "-g", "-ldl"]) {
        Ok(p) => p,
        Err(why) => {
            pmx_testkit::skip(why);
            return;
        }
    };
    let data = dir.path().join("dl.data");
    let file = data.to_str().unwrap();
    ok(&[
        "record",
        "--call-graph",
        "dwarf",
        "-e",
        "cpu-clock",
        "-F",
        "2000",
        "-o",
        file,
        "--",
        prog.to_str().unwrap(),
        "1000",
    ]);
    let flat = ok(&["report", "-q", "-i", file, "--sort", "dso,symbol"]);
    assert!(
        flat.lines()
            .any(|l| l.contains("ld-linux-x86-64.so.2") && l.contains("do_lookup_x")),
        "samples in ld.so's do_lookup_x:\n{flat}"
    );
    let children = ok(&["report", "-q", "-i", file, "--children", "--inline"]);
    assert!(
        children.lines().any(|l| l.ends_with(" main")),
        "main unwound as a caller:\n{children}"
    );
    ok(&["report", "-q", "-i", file, "--folded"]);
    ok(&["script", "-i", file]);
    let annotate = ok(&["annotate", "-i", file, "do_lookup_x"]);
    assert!(annotate.contains("ld-linux-x86-64.so.2"), "{annotate}");
}
