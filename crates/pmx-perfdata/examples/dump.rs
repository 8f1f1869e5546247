//! Print every record of a perf.data file, one line each (like
//! `perf report -D`, shorter): `cargo run --example dump -- FILE`.

use pmx_perfdata::{Reader, Record};

fn main() {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: dump FILE");
        std::process::exit(2);
    };
    let mut r = match Reader::open(std::path::Path::new(&path)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{}: {e}", path.to_string_lossy());
            std::process::exit(1);
        }
    };
    loop {
        let rec = match r.next_record() {
            Ok(Some(rec)) => rec,
            Ok(None) => break,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        };
        match rec {
            Record::Sample(s) => println!(
                "SAMPLE event={} id={} misc={} pid={} tid={} cpu={} time={} ip={:#x} period={} chain={}",
                s.event,
                s.id,
                s.misc,
                s.pid,
                s.tid,
                s.cpu,
                s.time,
                s.ip,
                s.period,
                s.callchain().count()
            ),
            Record::Mmap(m) => println!(
                "MMAP pid={} start={:#x} len={:#x} pgoff={:#x} {}",
                m.pid as i32,
                m.start,
                m.len,
                m.pgoff,
                String::from_utf8_lossy(m.filename)
            ),
            Record::Comm(c) => println!("COMM pid={} tid={} {}", c.pid, c.tid, String::from_utf8_lossy(c.comm)),
            other => println!("{other:?}"),
        }
    }
    for (i, e) in r.events().iter().enumerate() {
        eprintln!(
            "event {i}: {} ids={:?}",
            e.name,
            &e.ids[..e.ids.len().min(8)]
        );
    }
    eprintln!("{:?}", r.stats());
}
