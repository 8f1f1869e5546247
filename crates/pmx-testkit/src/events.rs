//! Events for tests, encoded the way pmx encodes them.

use pmx_model::encoding::{encode_spec, Arch, EncodeOptions, Encoded};
use pmx_model::spec::parse_spec;

/// Encode a perf-style event spec (`cpu/event=0x2e,umask=0x41/u`,
/// `r01c2`, …) for `arch`, for counting; panics on a spec pmx rejects.
pub fn encode(spec: &str, arch: Arch) -> Encoded {
    encode_spec(
        &parse_spec(spec).unwrap(),
        EncodeOptions {
            arch,
            sampling: false,
        },
    )
    .unwrap()
}
