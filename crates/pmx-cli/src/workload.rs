//! `pmx-workload`: small programs with exactly known behaviour, used by
//! pmx's tests and benchmarks (not needed to use pmx). The commands are
//! [`pmx_perf::workload::program`] (`pmx-workload pages N`, `spin S`,
//! `exit CODE`, …); the program stays in this package so that the
//! command-line tests find it (`CARGO_BIN_EXE_pmx-workload`).

fn main() {
    let args: Vec<String> = std::env::args().collect();
    std::process::exit(pmx_perf::workload::program::run(&args));
}
