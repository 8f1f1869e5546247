//! Data types and fields (perf 6.8's `--sort type,typeoff`; perf 6.1 has
//! no such key): a program built here with `gcc -g` writes one field of
//! each element of a global struct array (`pts[i].z`) and, through a
//! pointer parameter, one field of structs in a heap block (`p->y`);
//! recorded with `-d -e page-faults -c 1` (each first touch of a page is
//! a sample at the written byte), `pmx report --sort typeoff` names the
//! struct and the two fields, at the offsets DWARF gives them (read with
//! `readelf --debug-dump=info`); no sample is given another field of the
//! struct.

use crate::common::{stderr, PMX};
use crate::memory::pmx_out;
use pmx_testkit::cc;
use std::path::Path;
use std::process::Command;

const SRC: &str = "#include <stdlib.h>\n\
    struct point { long x; int y; int z; char tag[16]; };\n\
    struct point pts[16384];\n\
    __attribute__((noipa)) void touch(struct point *p) { p->y = 7; }\n\
    int main(void) {\n\
      for (int i = 0; i < 16384; i++) pts[i].z = i;\n\
      struct point *h = malloc(16384 * sizeof *h);\n\
      for (int i = 0; i < 16384; i += 128) touch(&h[i]);\n\
      return pts[5].z == 5 && h[0].y == 7 ? 0 : 1;\n\
    }\n";

/// The offset DWARF gives member `name` (readelf's dump of `bin`).
fn member_offset(bin: &Path, name: &str) -> Option<u64> {
    let o = Command::new("readelf")
        .arg("--debug-dump=info")
        .arg(bin)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&o.stdout);
    let mut in_member = false;
    let mut named = false;
    for l in text.lines() {
        if l.contains("Abbrev Number") {
            (in_member, named) = (l.contains("DW_TAG_member"), false);
        } else if in_member && l.contains("DW_AT_name") {
            named = l.rsplit(':').next().map(str::trim) == Some(name);
        } else if in_member && named && l.contains("DW_AT_data_member_location") {
            return l.rsplit(':').next()?.trim().parse().ok();
        }
    }
    None
}

/// The `typeoff` rows' (share, text).
fn rows(report: &str) -> Vec<(f64, String)> {
    (report.lines())
        .filter(|l| !l.starts_with('#') && l.contains('%'))
        .filter_map(|l| {
            let (pct, rest) = l.trim().split_once('%')?;
            Some((pct.trim().parse().ok()?, rest.trim().to_string()))
        })
        .collect()
}

#[test]
fn typeoff_names_the_written_fields_at_dwarfs_offsets() {
    if Command::new("readelf").arg("--version").output().is_err() {
        return pmx_testkit::skip("no readelf");
    }
    let dir = tempfile::tempdir().unwrap();
    let Ok(bin) = cc::compile(dir.path(), "points", SRC, &["-O1", "-g"]) else {
        return pmx_testkit::skip("no C compiler");
    };
    let (y, z) = (member_offset(&bin, "y"), member_offset(&bin, "z"));
    let (Some(y), Some(z)) = (y, z) else {
        panic!("readelf gives no offsets of y and z");
    };
    let file = dir.path().join("pmx.data");
    let o = Command::new(PMX)
        .args(["record", "-q", "-d", "-e", "page-faults", "-c", "1", "-o"])
        .arg(&file)
        .arg("--")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(o.status.success(), "pmx record: {}", stderr(&o));
    let report = pmx_out(&["report", "--stdio", "--sort", "typeoff"], &file);
    let rows = rows(&report);
    let share = |text: &str| rows.iter().find(|r| r.1 == text).map(|r| r.0);
    // The array: 512 KiB, 128 pages; the heap block's 128 pages.
    let global = share(&format!("struct point +{z} (z)"));
    let heap = share(&format!("struct point +{y} (y)"));
    let total: f64 = rows.iter().map(|r| r.0).sum();
    assert!(total > 99.0, "{report}");
    for (what, got) in [("the array's z", global), ("the heap's y", heap)] {
        let got = got.unwrap_or_else(|| panic!("no row for {what}\n{report}"));
        // 128 faults each of some 300 in all (the loader's and libc's).
        assert!(got >= 10.0, "{what}: {got}%\n{report}");
    }
    let others = rows
        .iter()
        .filter(|r| r.1.starts_with("struct point"))
        .count();
    assert_eq!(others, 2, "another field of struct point\n{report}");
    // The rest is what DWARF does not describe (no debug info of libc).
    assert!(rows.iter().any(|r| r.1 == "(unknown)"), "{report}");
    let t = pmx_out(&["report", "--stdio", "--sort", "type"], &file);
    assert!(
        t.lines()
            .any(|l| l.ends_with("  struct point") || l.trim_end().ends_with(" struct point")),
        "{t}"
    );
}
