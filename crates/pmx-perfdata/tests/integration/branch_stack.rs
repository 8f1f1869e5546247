//! Branch stacks (`PERF_SAMPLE_BRANCH_STACK`), side by side with the
//! installed perf: files written here with every entry flag, with and
//! without `hw_idx`, and the shared recordings of perf 3.8, 4.14 and 5.15
//! (`hw_idx`), each read by this crate's reader and by `perf script -F
//! ip,brstack`; both must see the same entries. A damaged count is a
//! clear error.

use pmx_perfdata::branch::{self, BranchEntry, BranchFlags};
use pmx_perfdata::format::{branch_sample_type as bst, record_type, sample_type as st};
use pmx_perfdata::{FileAttr, Reader, Record};
use pmx_testkit::perfdata::{self, record as rec};
use std::io::Cursor;
use std::path::Path;

const ST: u64 = st::IP | st::TID | st::TIME | st::PERIOD | st::BRANCH_STACK;

/// perf 6.1's names of the `type` field (`branch_type_name`; it has none
/// for 15, `EXTEND_ABI`, and prints C's `(null)`).
const TYPES: [&str; 16] = [
    "",
    "COND",
    "UNCOND",
    "IND",
    "CALL",
    "IND_CALL",
    "RET",
    "SYSCALL",
    "SYSRET",
    "COND_CALL",
    "COND_RET",
    "ERET",
    "IRQ",
    "SERROR",
    "NO_TX",
    "(null)",
];

/// One entry as perf script prints it: from/to/M|P|-/X|-/A|-/cycles/type
/// (without the `/` that ends it when the type is unknown).
fn perf_form(e: &BranchEntry) -> String {
    let f = e.flags;
    let pred = match (f.predicted(), f.mispred()) {
        (true, _) => 'P',
        (false, true) => 'M',
        _ => '-',
    };
    format!(
        "{:#x}/{:#x}/{pred}/{}/{}/{}/{}",
        e.from,
        e.to,
        if f.in_tx() { 'X' } else { '-' },
        if f.abort() { 'A' } else { '-' },
        f.cycles(),
        TYPES[f.kind() as usize & 15],
    )
    .trim_end_matches('/')
    .to_string()
}

/// Every entry of every sample, as the reader decodes them.
fn read_entries(bytes: Vec<u8>) -> (Vec<String>, Vec<Option<u64>>) {
    let mut r = Reader::new(Cursor::new(bytes)).unwrap();
    let (mut out, mut idx) = (Vec::new(), Vec::new());
    while let Some(rec) = r.next_record().unwrap() {
        if let Record::Sample(s) = rec {
            if !s.branches.is_empty() {
                idx.push(s.branches.hw_idx);
            }
            out.extend(s.branches.iter().map(|e| perf_form(&e)));
        }
    }
    (out, idx)
}

/// Every entry `perf script -F ip,brstack` prints for `file`.
fn perf_entries(file: &Path) -> Option<Vec<String>> {
    let o = pmx_testkit::perf::on_file(&["script", "-F", "ip,brstack"], file);
    assert!(o.status.success(), "{}", pmx_testkit::text(&o.stderr));
    let text = pmx_testkit::text(&o.stdout);
    let out: Vec<String> = (text.split_whitespace())
        .filter(|t| t.starts_with("0x") && t.matches('/').count() >= 6)
        .map(|t| t.trim_end_matches('/').to_string())
        .collect();
    Some(out)
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Entries with every flag combination perf 6.1 decodes and prints.
fn entries(seed: u64) -> Vec<BranchEntry> {
    (0..16u64)
        .map(|i| {
            let k = i + seed;
            BranchEntry {
                from: 0x40_1000 + 16 * k,
                to: 0x40_2000 + 8 * k,
                flags: BranchFlags::new(
                    k & 1 != 0,
                    k & 2 != 0,
                    k & 4 != 0,
                    k & 8 != 0,
                    (k * 977 % 65536) as u16,
                    (k % 16) as u8,
                    (k % 4) as u8,
                    (k % 16) as u8,
                    (k % 8) as u8,
                ),
            }
        })
        .collect()
}

/// A file of one cpu-cycles-like event with `branch_sample_type` and
/// three samples of 16, 0 and 5 entries.
fn file(branch_type: u64) -> Vec<u8> {
    let mut a = perfdata::attr(128, 4000, ST, 1 << 18);
    a[72..80].copy_from_slice(&branch_type.to_le_bytes());
    let attrs = vec![FileAttr {
        attr: a,
        ids: vec![],
        name: "cycles".into(),
    }];
    let mut w = pmx_perfdata::Writer::create(Cursor::new(Vec::new()), attrs).unwrap();
    for (i, n) in [16, 0, 5].into_iter().enumerate() {
        let mut body = Vec::new();
        for v in [0x40_1000 + i as u64, 7 | (7 << 32), 1000 + i as u64, 4000] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        let e = &entries(i as u64 * 3)[..n];
        branch::encode(&mut body, branch_type, Some(i as u64 + 2), e, &[]);
        w.write_record(&rec(record_type::SAMPLE, 2, &body)).unwrap();
    }
    w.finish(&Default::default()).unwrap().into_inner()
}

#[test]
fn written_flags_read_back_and_by_perf() {
    let dir = tempfile::tempdir().unwrap();
    for branch_type in [
        bst::ANY | bst::USER,
        bst::ANY | bst::HW_INDEX | bst::TYPE_SAVE,
    ] {
        let bytes = file(branch_type);
        let (ours, idx) = read_entries(bytes.clone());
        assert_eq!(ours.len(), 21);
        let want_idx = if branch_type & bst::HW_INDEX != 0 {
            vec![Some(2), Some(4)]
        } else {
            vec![None, None]
        };
        assert_eq!(idx, want_idx);
        // The flags come back as written.
        let first: Vec<String> = entries(0).iter().map(perf_form).collect();
        assert_eq!(ours[..16], first[..]);
        if !pmx_testkit::perf::require("perf's reading") {
            continue;
        }
        let path = dir.path().join(format!("b{branch_type:x}.data"));
        std::fs::write(&path, &bytes).unwrap();
        let theirs = perf_entries(&path).unwrap();
        assert_eq!(
            sorted(ours),
            sorted(theirs),
            "branch_sample_type {branch_type:#x}"
        );
    }
}

#[test]
fn perfs_recordings_read_as_perf_reads_them() {
    let Some(dir) = pmx_testkit::shared::shared_data("perfdata") else {
        return pmx_testkit::skip("the shared perf.data files are absent");
    };
    for (name, entries, hw) in [
        ("perf_data_converter__perf.data.branch-4.14", 416, false),
        (
            "perf_data_converter__perf.data.callgraph_and_branch-3.8",
            29696,
            false,
        ),
        (
            "perf_data_converter__perf.data.branch_stack_hw_index",
            116,
            true,
        ),
    ] {
        let path = dir.join(name);
        let (ours, idx) = read_entries(std::fs::read(&path).unwrap());
        assert_eq!(ours.len(), entries, "{name}");
        assert_eq!(idx.iter().all(Option::is_some), hw, "{name}");
        if !pmx_testkit::perf::require("perf's reading") {
            continue;
        }
        let theirs = perf_entries(&path).unwrap();
        assert_eq!(sorted(ours), sorted(theirs), "{name}");
    }
}

#[test]
fn a_count_past_the_record_is_an_error_naming_it() {
    // The first sample's count says 16 entries; make it 17.
    let mut bytes = file(bst::ANY);
    let mut nr = 16u64.to_le_bytes().to_vec();
    nr.extend_from_slice(&entries(0)[0].from.to_le_bytes());
    let at = bytes.windows(16).position(|w| w == nr).unwrap();
    bytes[at..at + 8].copy_from_slice(&17u64.to_le_bytes());
    let mut r = Reader::new(Cursor::new(bytes)).unwrap();
    let err = loop {
        match r.next_record() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("the damaged sample was read"),
            Err(e) => break e.to_string(),
        }
    };
    assert!(err.contains("branch stack of 17 entries"), "{err}");
}

/// The writer sets the (empty) BRANCH_STACK feature as `perf record -b`
/// and `-j` do, and not for an LBR call stack (`--call-graph lbr`, which
/// perf record does not mark either); perf's header says so.
#[test]
fn the_branch_stack_feature_is_set_as_perf_record_sets_it() {
    use pmx_perfdata::format::feature;
    let dir = tempfile::tempdir().unwrap();
    for (branch_type, marked) in [
        (bst::ANY | bst::USER, true),
        (bst::ANY_CALL | bst::HW_INDEX, true),
        (bst::USER | bst::CALL_STACK, false),
    ] {
        let bytes = file(branch_type);
        let r = Reader::new(Cursor::new(bytes.clone())).unwrap();
        let present = r.features().present.contains(&feature::BRANCH_STACK);
        assert_eq!(present, marked, "branch_sample_type {branch_type:#x}");
        if !pmx_testkit::perf::require("perf's header") {
            continue;
        }
        let path = dir.path().join(format!("f{branch_type:x}.data"));
        std::fs::write(&path, &bytes).unwrap();
        let o = pmx_testkit::perf::on_file(&["report", "--header-only"], &path);
        let header = pmx_testkit::text(&o.stdout);
        assert!(o.status.success(), "{}", pmx_testkit::text(&o.stderr));
        assert_eq!(
            header.contains("# contains samples with branch stack"),
            marked,
            "branch_sample_type {branch_type:#x}: {header}"
        );
        // perf reads the entries as before.
        assert_eq!(perf_entries(&path).unwrap().len(), 21, "{branch_type:#x}");
    }
}
