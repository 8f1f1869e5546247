//! Fuzz `pmx serve`'s request parser: any bytes give a request or an HTTP
//! error with a 4xx/5xx status; nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pmx_serve::http::parse_head;

fuzz_target!(|data: &[u8]| {
    match parse_head(data) {
        Ok(req) => {
            let _ = format!("{req:?}");
        }
        Err(e) => {
            if let Some((status, reason)) = e.status() {
                assert!((400..600).contains(&status), "{status} {reason}");
            }
        }
    }
});
