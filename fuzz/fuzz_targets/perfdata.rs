//! Fuzz the perf.data reader: any bytes (file or pipe mode, compressed
//! records included) either read or give an error; nothing panics, loops
//! forever, or allocates without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pmx_perfdata::read::Reader;

fuzz_target!(|data: &[u8]| {
    let Ok(mut r) = Reader::new(std::io::Cursor::new(data.to_vec())) else {
        return;
    };
    // Each record consumes at least its 8-byte header, so this bound is
    // never reached by a reader that makes progress.
    for _ in 0..(data.len() / 8 + 16) {
        match r.next_record() {
            Ok(Some(rec)) => {
                let _ = format!("{rec:?}");
            }
            Ok(None) | Err(_) => return,
        }
    }
    panic!("the reader returned more records than the input can hold");
});
