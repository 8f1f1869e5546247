//! The mmap'd side of a perf event: the metadata page and the ring buffer.
//! (Being written.)
