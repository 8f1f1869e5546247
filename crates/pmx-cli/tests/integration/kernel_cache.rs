//! The kernel-symbol index of `pmx report` end to end, in a cache
//! directory of the test's own (`XDG_CACHE_HOME`): a file without kernel
//! samples never reads the kernel's symbols (no index is written); a file
//! with them writes the index on the first report, and the next reports
//! (from the index, or after a corrupt or cut index was thrown
//! away and rebuilt) print the same kernel rows as the first.

use pmx_testkit::{cc, perf, text};
use std::path::Path;
use std::process::Command;

const PMX: &str = env!("CARGO_BIN_EXE_pmx");

fn report(file: &Path, cache: &Path) -> String {
    let o = Command::new(PMX)
        .args(["report", "-q", "--sort", "dso,symbol", "-i"])
        .arg(file)
        .env("XDG_CACHE_HOME", cache)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    text(&o.stdout)
}

#[test]
fn kernel_symbols_only_when_needed_then_from_the_index() {
    if !perf::require("") {
        return;
    }
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    if !kallsyms.lines().any(|l| !l.starts_with("0000000000000000")) {
        pmx_testkit::skip("/proc/kallsyms shows no addresses to this user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Page faults and exits give kernel samples; the loop user ones.
    let src = "#include <stdlib.h>\n#include <string.h>\n\
        int main(void) { long s = 0; for (int k = 0; k < 40; k++) { char *p = malloc(1 << 22); memset(p, k, 1 << 22); s += p[k]; free(p); }\n\
        for (long i = 0; i < 30000000; i++) s += i ^ (s >> 3); return (int)(s & 1); }\n";
    let Ok(bin) = cc::compile(dir.path(), "faults", src, &["-O1"]) else {
        pmx_testkit::skip("no C compiler");
        return;
    };
    let (user, both) = (dir.path().join("user.data"), dir.path().join("both.data"));
    for (out, ev) in [(&user, "cpu-clock:u"), (&both, "cpu-clock")] {
        let o = Command::new("perf")
            .args(["record", "-q", "-e", ev, "-F", "5000", "-o"])
            .arg(out)
            .arg(&bin)
            .output()
            .unwrap();
        if !o.status.success() {
            pmx_testkit::skip(format_args!("perf record: {}", text(&o.stderr)));
            return;
        }
    }
    let cache = dir.path().join("cache");
    let index = cache.join("pmx").join("kallsyms.idx");
    let rows = report(&user, &cache);
    assert!(!rows.contains("[k]"), "{rows}");
    assert!(
        !index.exists(),
        "kernel symbols were read for a file without kernel samples"
    );
    let first = report(&both, &cache);
    let kernel_rows = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.contains("[k]"))
            .map(str::to_string)
            .collect()
    };
    let k = kernel_rows(&first);
    if k.is_empty() {
        pmx_testkit::skip("no kernel samples in this recording");
        return;
    }
    assert!(index.exists(), "no index written");
    assert!(
        k.iter().any(|l| !l.contains(" 0xffff")),
        "kernel addresses unresolved:\n{first}"
    );
    let written = std::fs::metadata(&index).unwrap().modified().unwrap();
    assert_eq!(report(&both, &cache), first);
    assert_eq!(
        std::fs::metadata(&index).unwrap().modified().unwrap(),
        written,
        "index rewritten"
    );
    // A corrupt index: ignored, rebuilt, same rows.
    let mut bytes = std::fs::read(&index).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&index, &bytes).unwrap();
    assert_eq!(report(&both, &cache), first);
    let good = std::fs::read(&index).unwrap();
    assert_ne!(good, bytes, "corrupt index kept");
    // A cut index, and one with its last byte (the checksum) changed.
    // (Rebuilt, not necessarily byte for byte: BPF programs come and go
    // in /proc/kallsyms.)
    let cut = &good[..good.len() / 3];
    std::fs::write(&index, cut).unwrap();
    assert_eq!(report(&both, &cache), first);
    assert_ne!(std::fs::read(&index).unwrap(), cut, "cut index kept");
    let mut bytes = good.clone();
    *bytes.last_mut().unwrap() ^= 1;
    std::fs::write(&index, &bytes).unwrap();
    assert_eq!(report(&both, &cache), first);
    assert_ne!(std::fs::read(&index).unwrap(), bytes, "bad checksum kept");
}
