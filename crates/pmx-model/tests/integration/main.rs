//! pmx-model's integration tests, one test binary: `libpfm_dumps` (libpfm's
//! encodings checked against the model) and `roundtrip`.

mod libpfm_dumps;
mod roundtrip;
