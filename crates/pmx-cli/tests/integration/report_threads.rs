//! `pmx report -T`: the READ records (each inherited counter's total for
//! a thread at its exit, which `perf record -s` asks the kernel for)
//! summed per thread and event, in `perf report -T`'s layout. A file
//! recorded here by Debian's perf with `-s` on a threaded C program and
//! files built by hand with pmx-perfdata's Writer (single values, and a
//! group read crediting each member by its id) give perf's table.

use crate::common::pmx;
use pmx_perfdata::format::{read_format as rf, record_type, sample_type as st};
use pmx_testkit::perfdata::{self as pd, SAMPLE_ID_ALL};
use pmx_testkit::{cc, perf, skip, text};
use std::path::Path;

const THREADS: &str = r#"
#include <pthread.h>
#include <sys/mman.h>
static void *work(void *arg) {
    long n = (long)arg;
    char *p = mmap(0, n * 4096L, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (long i = 0; i < n; i++) p[i * 4096L] = 1;
    for (volatile long k = 0; k < 20000000L; k++);
    return 0;
}
int main(void) {
    pthread_t t[2];
    pthread_create(&t[0], 0, work, (void *)100L);
    pthread_create(&t[1], 0, work, (void *)300L);
    pthread_join(t[0], 0);
    pthread_join(t[1], 0);
    return work((void *)50L) != 0;
}
"#;

/// The `# PID  TID …` table at the end of a report, as lines.
fn table(out: &str) -> Vec<String> {
    let lines: Vec<&str> = out.lines().collect();
    let Some(at) = lines
        .iter()
        .rposition(|l| l.starts_with('#') && l.contains(" PID  ") && l.contains("TID"))
    else {
        return Vec::new();
    };
    let rows = lines[at + 1..].iter().take_while(|l| l.starts_with("  "));
    std::iter::once(lines[at])
        .chain(rows.copied())
        .map(str::to_string)
        .collect()
}

fn pmx_table(file: &Path) -> Vec<String> {
    let o = pmx(&["report", "-q", "-T", "-i", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    table(&text(&o.stdout))
}

#[test]
fn per_thread_totals_of_a_file_perf_recorded_with_stat() {
    if !perf::require("recording READ records with perf record -s") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = match cc::compile(dir.path(), "threads", THREADS, &["-O1", "-pthread"]) {
        Ok(b) => b,
        Err(e) => return skip(e),
    };
    let data = dir.path().join("s.data");
    let o = std::process::Command::new("perf")
        .args(["record", "-q", "-s", "-o", data.to_str().unwrap()])
        .args(["-e", "cpu-clock,page-faults", "--"])
        .arg(&bin)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let theirs = table(&text(
        &perf::on_file(&["report", "-T", "--stdio"], &data).stdout,
    ));
    assert!(theirs.len() >= 2, "perf printed no thread: {theirs:?}");
    assert_eq!(pmx_table(&data), theirs);
    // The header says the records are there.
    let plain = text(&pmx(&["report", "-q", "-i", data.to_str().unwrap()]).stdout);
    assert!(plain.contains(" READ records: "), "{plain}");
}

/// A file of two events (`cpu-clock` id 1 with `read_format`, and
/// `page-faults` id 2), one sample each, and READ records of (pid, tid,
/// the trailer's id, the values' words).
fn file(path: &Path, read_format: u64, reads: &[(u32, u32, u64, &[u64])]) {
    let sample_type = st::IP | st::TID | st::TIME | st::ID | st::PERIOD;
    let attr = |config: u64| {
        let mut a = pd::attr(128, 1000, sample_type, SAMPLE_ID_ALL | (1 << 1) | (1 << 12));
        a[8..16].copy_from_slice(&config.to_le_bytes());
        a[32..40].copy_from_slice(&read_format.to_le_bytes());
        a
    };
    let attrs = vec![
        pmx_perfdata::FileAttr {
            attr: attr(0),
            ids: vec![1],
            name: "cpu-clock".into(),
        },
        pmx_perfdata::FileAttr {
            attr: attr(2),
            ids: vec![2],
            name: "page-faults".into(),
        },
    ];
    let f = std::fs::File::create(path).unwrap();
    let mut w = pmx_perfdata::Writer::create(std::io::BufWriter::new(f), attrs).unwrap();
    let words = |w: &[u64]| w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let mut body = pd::comm(101, "app");
    body.extend([pd::pid_tid(101), words(&[5, 1])].concat());
    w.write_record(&pd::record(record_type::COMM, 0, &body))
        .unwrap();
    for (i, id) in [1u64, 2].into_iter().enumerate() {
        // ip, pid/tid, time, id, period.
        let mut b = words(&[0x1000]);
        b.extend(pd::pid_tid(101));
        b.extend(words(&[10 + i as u64, id, 1000]));
        w.write_record(&pd::record(record_type::SAMPLE, 2, &b))
            .unwrap();
    }
    for (k, &(pid, tid, id, values)) in reads.iter().enumerate() {
        let mut b = [pid.to_le_bytes(), tid.to_le_bytes()].concat();
        b.extend(words(values));
        // Trailer: pid/tid, time, id.
        b.extend([pid.to_le_bytes(), tid.to_le_bytes()].concat());
        b.extend(words(&[100 + k as u64, id]));
        w.write_record(&pd::record(record_type::READ, 0, &b))
            .unwrap();
    }
    w.finish(&Default::default()).unwrap();
}

#[test]
fn per_thread_totals_of_hand_built_reads() {
    let dir = tempfile::tempdir().unwrap();
    // Single values (value, enabled, running, id), as perf record -s gets
    // them; thread 102's cpu-clock comes in two records (summed).
    let single = dir.path().join("single.data");
    let f = rf::TOTAL_TIME_ENABLED | rf::TOTAL_TIME_RUNNING | rf::ID;
    file(
        &single,
        f,
        &[
            (101, 102, 1, &[1000, 9, 9, 1]),
            (101, 102, 2, &[7, 9, 9, 2]),
            (101, 101, 1, &[500, 9, 9, 1]),
            (101, 101, 2, &[3, 9, 9, 2]),
            (101, 102, 1, &[20, 9, 9, 1]),
        ],
    );
    let want = [
        "# PID  TID  cpu-clock  page-faults",
        "  101  102       1020            7",
        "  101  101        500            3",
    ];
    assert_eq!(pmx_table(&single), want);
    if perf::available() {
        let theirs = perf::on_file(&["report", "-T", "--stdio"], &single);
        assert_eq!(
            table(&text(&theirs.stdout)),
            want,
            "{}",
            text(&theirs.stderr)
        );
    }
    // A group read (nr, then value and id per member): each value is its
    // member's, by id. perf reads only a single value's layout here.
    let group = dir.path().join("group.data");
    file(
        &group,
        rf::GROUP | rf::ID,
        &[
            (7, 8, 1, &[2, 4000, 1, 60, 2]),
            (7, 8, 1, &[2, 1000, 1, 5, 2]),
        ],
    );
    let o = pmx(&["report", "-q", "--json", "-i", group.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let head = v["events"][0]["name"].clone();
    assert_eq!(head, "cpu-clock");
    let plain = text(&pmx(&["report", "-q", "-i", group.to_str().unwrap()]).stdout);
    assert!(plain.contains("# 2 READ records: "), "{plain}");
    assert_eq!(
        v["threads"],
        serde_json::json!([{"pid": 7, "tid": 8, "counts": {"cpu-clock": 5000, "page-faults": 65}}])
    );
    // No READ records: -T says so.
    let o = pmx(&["report", "-q", "-T", "-i", group.to_str().unwrap()]);
    assert!(table(&text(&o.stdout)).len() == 2, "{}", text(&o.stdout));
    let none = dir.path().join("none.data");
    file(&none, f, &[]);
    let o = pmx(&["report", "-q", "-T", "-i", none.to_str().unwrap()]);
    assert!(
        text(&o.stdout).contains("has no READ records"),
        "{}",
        text(&o.stdout)
    );
}
