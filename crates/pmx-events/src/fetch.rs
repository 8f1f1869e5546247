//! Downloading Intel's perfmon tables (being written).
