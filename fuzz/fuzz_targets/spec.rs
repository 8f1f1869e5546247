//! Fuzz the event-spec grammar and the encoder: any input either parses or
//! gives an error whose span lies inside the input; nothing panics; a
//! successful encoding's register and config agree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pmx_model::encoding::{encode_spec, Arch, EncodeOptions};
use pmx_model::spec::parse_spec;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse_spec(text) {
        Ok(spec) => {
            for arch in [Arch::Intel, Arch::Amd] {
                match encode_spec(&spec, EncodeOptions { arch, sampling: false }) {
                    Ok(e) => {
                        let layout = arch.core_layout();
                        if e.register_kind == layout.kind {
                            assert_eq!(e.register & layout.perf_passed_mask(), e.attr.config);
                            assert_eq!(e.register & layout.reserved_mask(), 0);
                        }
                    }
                    Err(err) => {
                        assert!(err.span.start <= text.len());
                        let _ = err.to_string();
                    }
                }
            }
        }
        Err(err) => {
            assert!(err.span.start <= text.len(), "span {:?} outside {text:?}", err.span);
            let _ = err.to_string();
        }
    }
});
