//! `pmx stat --regions` with exact page-fault counts per region and
//! thread: a target of its own, as before the tests were gathered. Its
//! Rust child (this binary re-run) counts one page fault more in a
//! spawned thread's region while the `integration` target's other tests
//! load the machine in the same run (seen in CI, not alone); apart, the
//! counts are exact: `cargo test -p pmx-cli --test regions`.

mod regions;
