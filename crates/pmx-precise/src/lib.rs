//! pmx-precise: the reports of the PMU's precise records, the samples
//! that say more than "the program was here" — which branches ran and
//! which data an access touched — read from perf.data files as perf's
//! own reports read them.
//!
//! **Branch reports** ([`branch`]): `pmx report -b`, the branches of
//! the samples' branch stacks (Intel LBR, AMD BRS/LbrExtV2, Arm BRBE or
//! synthesized from a trace) counted by perf's branch keys (`dso_from`,
//! `symbol_to`, `mispredict`, `cycles` …), each end looked up in the
//! maps of its sample's moment through pmx-profile's
//! [`SampleSink`](pmx_profile::profile::sink::SampleSink); perf's
//! `--branch-stack` table or JSON. From the same branch stacks, the
//! optimizers' inputs: BOLT's fdata as `perf2bolt` writes it
//! ([`branch::bolt`]) and the range and branch counts `llvm-profgen`
//! reads ([`branch::autofdo`]); the basic blocks by their cycles
//! (`--total-cycles`, [`branch::blocks`]).
//!
//! **Memory accesses** ([`mem`]): `report --mem-mode`, `perf mem
//! report`: each sample's instruction and data address resolved in the
//! maps of its moment, grouped by the memory keys (`mem`, `snoop`, `tlb`,
//! `symbol_daddr` …), each row's cost its samples' weight, in perf's
//! layout. A `data_src` in words is pmx-profile's
//! [`data_src`](pmx_profile::data_src), shared with `pmx script`.
//!
//! **Cache-line contention** ([`c2c`]): the memory samples counted as
//! `perf c2c report --stats` counts them (HITMs, peers, shared lines),
//! and its cache-line tables (each shared line, its offsets and code).
//!
//! Its boundary: it reads files and builds reports; the replay of maps
//! and symbols is pmx-profile's and pmx-symbols', recording is
//! pmx-record's, and the command lines are pmx-args' and pmx-cli's. It
//! must never open a perf event, print to a terminal by itself or read
//! the environment.

pub mod branch;
pub mod c2c;
pub mod mem;
