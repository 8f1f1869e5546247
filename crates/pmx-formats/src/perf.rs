//! perf's forms written from a [`StatReport`](crate::StatReport).
