//! # pmx-serve — counters for Prometheus, profiles for pprof
//!
//! `pmx serve` counts events system-wide, all the time, and exposes them at
//! `/metrics` in the OpenMetrics text format (or Prometheus' text format
//! for clients that do not ask for OpenMetrics).
//!
//! ## The model
//!
//! - [`collect::Collector`] opens the plan's groups once on every online
//!   CPU (`pid -1`, one group per plan group per CPU) and never reprograms
//!   them. A scrape only *reads* them (one `read(2)` per group per CPU), so
//!   scrapes at any rate cost a few syscalls each and change nothing.
//! - **Counters are raw and monotonic.** `pmx_events_total` is the raw
//!   count since the daemon started, never scaled: a multiplexed count
//!   scaled by enabled/running can go *down* between two reads, which a
//!   Prometheus counter must not. The enabled and running times are
//!   exported as counters beside it (`pmx_event_enabled_seconds_total`,
//!   `pmx_event_running_seconds_total`), so the scaled rate is exact in
//!   PromQL: `rate(events) * rate(enabled) / rate(running)`, and
//!   `pmx_event_running_ratio` says how much of the window the event really
//!   ran (below 0.7 a scaled value is an estimate; dashboards can hide it).
//! - **Gauges cover a window per scraper.** Derived metrics (`-M`, and
//!   user formulas from the configuration) and the running ratio are
//!   computed over the change since *the same client's* previous scrape
//!   (clients are told apart by address; the first scrape's window starts
//!   when the daemon did). Two Prometheus servers scraping the same daemon
//!   therefore each get values over their own scrape interval, and a
//!   `curl` from elsewhere does not shorten them. `pmx_window_seconds` says
//!   how long the window was.
//! - **Hotplug.** The online-CPU list is checked every second. A CPU that
//!   comes online gets its counters; one that goes offline has them closed
//!   and its per-CPU series disappear (Prometheus marks them stale), which
//!   is what a Prometheus user expects of a thing that no longer exists.
//!   What an offline CPU counted is kept: per-core and per-socket totals
//!   never go down, and when the CPU comes back its series continue from
//!   where they stopped instead of restarting from zero.
//! - **HTTP** ([`http`]): a small strict HTTP/1.1 parser with a request
//!   head limit (8 KiB, 64 headers), a deadline for the head (10 s) and
//!   for idle keep-alive connections (30 s); only `GET`/`HEAD` of
//!   `/metrics` and `/`, and `GET` of `/debug/pprof/profile`;
//!   400/403/404/405/408/429/431/505 for the rest. Nothing a
//!   client sends can write a register or reopen a counter.
//! - **Connections** ([`event_loop`], [`conn`], [`pool`]): one thread
//!   polls the listener and every connection waiting on its client
//!   (non-blocking sockets, a buffer and a deadline each, counted from
//!   accept); complete requests go to a few worker threads that scrape
//!   and render, and the loop writes their answers. At the connection
//!   limit the connection that has waited on its client the longest is
//!   closed to make room, so idle or slow clients can never lock a
//!   scraper out, and nobody is answered 503.
//! - **Profiles** ([`profile`]): `GET /debug/pprof/profile?seconds=N`
//!   (default 30; `hz`, default 100; filters `pid`, `comm`, `cgroup`)
//!   samples every CPU for N seconds with `pmx record`'s engine
//!   (`pmx_record::stream`, into memory) and answers the gzip-compressed
//!   pprof that `pmx report --pprof` writes (`pmx_profile::export`: the
//!   same symbolizer, functions, files, lines, build ids, kernel frames),
//!   labelled `pid`, `tid`, `comm`, `cgroup`. A profile runs on a thread
//!   of its own, never on a worker, so `/metrics` keeps answering; at
//!   most `profile-sessions` run at once (the next request gets 429 with
//!   `Retry-After`); a client that hangs up stops its session. Served on
//!   loopback by default; on another address only with `--profiles`.
//! - **Stop**: SIGTERM or SIGINT writes to a self-pipe the event loop
//!   polls; open connections are closed, counters closed, exit 0.
//!
//! [`launch`] turns the settings (flags over the file) into a started
//! daemon. [`render`] writes the families; [`config`] reads `--config FILE`;
//! derived metrics are `pmx_count::metrics::MetricSet`, evaluated per domain.

#![warn(missing_docs)]

pub mod collect;
pub mod config;
pub mod conn;
pub mod event_loop;
pub mod http;
pub mod launch;
pub mod pool;
pub mod profile;
pub mod render;
pub mod server;

pub use collect::{Collector, Snapshot};
pub use config::{FileConfig, Per};
pub use launch::{start, ServeError, ServeFlags, Settings, Started};
pub use pmx_count::metrics::MetricSet;
pub use render::Format;
pub use server::{Daemon, Options, Stop, StopTrigger};
