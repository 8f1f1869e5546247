//! pmx-msr's integration tests, one test binary: `cache_libpfm` (the cache
//! events' encodings against libpfm4's), and over the fixture machine of
//! `common`: `session` (sessions save and restore every register) and
//! `signals` (SIGINT/SIGTERM while counting, in a child process of this binary
//! re-run with `--exact`).

mod cache_libpfm;
mod common;
mod session;
mod signals;
