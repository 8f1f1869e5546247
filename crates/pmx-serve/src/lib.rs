//! # pmx-serve — counters for Prometheus
//!
//! (Being written: the daemon that counts system-wide and serves
//! `/metrics` in the OpenMetrics text format.)
