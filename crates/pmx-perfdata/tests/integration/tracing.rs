//! The TRACING_DATA feature: what `build` writes `parse` reads back (the
//! format files' events, ids, fields and print formats); this machine's
//! real format files; damaged or cut bytes are errors, never panics.

use pmx_perfdata::tracing::{self, DataLoc, TracingFiles};

const SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
\tfield:__data_loc char[] name;\toffset:40;\tsize:4;\tsigned:0;\n\
\tfield:const char * filename;\toffset:48;\tsize:8;\tsigned:0;\n\n\
print fmt: \"prev_comm=%s prev_state=%d\", REC->prev_comm, REC->prev_state\n";

fn files() -> TracingFiles {
    TracingFiles {
        header_page: b"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n".to_vec(),
        header_event: b"# compressed entry header\n".to_vec(),
        systems: vec![("sched".into(), vec![SWITCH.as_bytes().to_vec()])],
        printk: b"0xffffffff81000000 : \"hello\\n\"\n".to_vec(),
        ..TracingFiles::default()
    }
}

#[test]
fn what_is_built_is_read_back() {
    let b = tracing::build(&files(), 4096);
    let t = tracing::parse(&b).expect("parses");
    assert_eq!((t.version.as_str(), t.page_size), ("0.6", 4096));
    let e = t.event(372).expect("sched_switch by its id");
    assert_eq!(
        (e.system.as_str(), e.name.as_str()),
        ("sched", "sched_switch")
    );
    let comm = e.field("prev_comm").unwrap();
    assert_eq!((comm.offset, comm.size, comm.array), (8, 16, true));
    assert_eq!(comm.type_, "char[16]");
    let state = e.field("prev_state").unwrap();
    assert!(state.signed && !state.array && state.type_ == "long");
    let name = e.field("name").unwrap();
    assert_eq!(name.data_loc, Some(DataLoc::Absolute));
    assert_eq!(e.field("filename").unwrap().type_, "const char *");
    assert!(e.print_fmt.starts_with("\"prev_comm=%s"));
    assert_eq!(
        t.printk,
        vec![(0xffff_ffff_8100_0000, "hello\n".to_string())]
    );
    // A field's value and a dynamic field's bytes.
    let mut raw = vec![0u8; 64];
    raw[32..40].copy_from_slice(&2u64.to_le_bytes());
    raw[40..44].copy_from_slice(&(56u32 | 3 << 16).to_le_bytes());
    raw[56..59].copy_from_slice(b"ab\0");
    assert_eq!(state.number(&raw), Some(2));
    assert_eq!(name.bytes(&raw), Some(&b"ab\0"[..]));
    assert_eq!(state.number(&raw[..35]), None);
}

#[test]
fn this_machines_format_files_parse() {
    let dir = std::path::Path::new("/sys/kernel/tracing/events/sched/sched_switch/format");
    let Ok(text) = std::fs::read(dir) else {
        pmx_testkit::skip("no tracefs here");
        return;
    };
    let e = tracing::parse_format("sched", &text, 0).expect("parses");
    assert_eq!(e.name, "sched_switch");
    assert!(e.field("prev_state").is_some() && e.field("next_pid").is_some());
    assert!(e.print_fmt.contains("REC->prev_state"));
}

#[test]
fn damaged_and_cut_data_are_errors() {
    let b = tracing::build(&files(), 4096);
    // Cut anywhere before the formats end: an error (after them come
    // kallsyms, printk formats and saved command lines, not needed to
    // decode samples).
    let formats_end = b.len() - 8 - files().printk.len() - 4 - 4;
    for n in 0..formats_end {
        assert!(tracing::parse(&b[..n]).is_err(), "cut at {n}");
    }
    let mut bad = b.clone();
    bad[0] ^= 0xff;
    assert!(tracing::parse(&bad)
        .unwrap_err()
        .to_string()
        .contains("magic"));
    // Any byte changed: an answer or an error, never a panic.
    for i in 0..b.len() {
        for v in [0u8, 0x7f, 0xff] {
            let mut m = b.clone();
            m[i] = v;
            let _ = tracing::parse(&m);
        }
    }
}
