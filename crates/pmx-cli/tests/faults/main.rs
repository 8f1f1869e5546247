//! The fault campaign: pmx's readers and commands fed mutated perf.data
//! files and texts, signals at every stage, resource limits, unwritable
//! outputs, a `pmx serve` under broken clients and long profiles. A target
//! of its own so that it can be run alone and long: `bench/faults.sh` runs
//! it with `PMX_FAULTS_LONG=1` and a seed (`cargo test -p pmx-cli --test
//! faults`); `cargo test` runs a few cases of each.

mod faults_answers;
mod faults_limits;
mod faults_outputs;
mod faults_perfdata;
mod faults_precise;
mod faults_profiles;
mod faults_serve;
mod faults_signals;
mod faults_support;
mod faults_text;
mod faults_types;
mod faults_views;
#[path = "../serve_support/mod.rs"]
mod serve_support;
