//! pmx-profile's integration tests, one test binary (a module per
//! subject): profiles built from perf.data files written by the tests or
//! recorded live, reports, annotation, exports, `pmx script`'s maps.
//! Tests run as threads of one process: none may change process-wide
//! state (the environment, the current directory, signal handlers).

mod annotate;
mod bounded;
mod export_sink;
mod interned;
mod jit_vdso;
mod jobs;
mod live;
mod perf_chains;
mod script_maps;
mod synthetic;
