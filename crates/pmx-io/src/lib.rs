//! How pmx writes a file the user named (`-o`, `--plot`, `--flamegraph`,
//! per-rank `%h/%p/%r` files, `record`'s perf.data, the region API's
//! JSON): one helper, [`outfile::OutFile`], for every writer, so that
//! nothing the user had is lost and nothing that is not a file is
//! clobbered.
//!
//! The rules, by what the path is when the file is opened:
//!
//! | path | written | on success | on failure or interruption |
//! |---|---|---|---|
//! | `-` | standard output | flushed | what was written stays written |
//! | a regular file, or nothing yet | a temporary file in the same directory | renamed onto the path (permissions and owner of the old file kept) | the temporary file is removed: the old file is intact |
//! | a FIFO, a character or block device, `/dev/stdout`, `/proc/self/fd/N`, `/dev/fd/N` | in place | flushed | what was written stays written |
//! | a symbolic link | through to its target, by the rules above for the target | the link itself is never replaced | |
//! | a directory | — | an error (`EISDIR`) with the path | |
//!
//! One exception: an existing file that may be written in a directory
//! that may not (no temporary file can be made beside it) is written
//! in place rather than refused, truncated when the first bytes come (a
//! run that fails before writing leaves it whole; one that fails after,
//! does not).
//!
//! With [`outfile::Options::backup_old`] (perf record's rule), a
//! non-empty regular file is kept as `PATH.old` when the new one is put
//! in place; an empty file, a device, a FIFO are never moved. Every error
//! (open, write, rename) names the path the user gave and keeps the
//! kernel's reason (`ENOSPC`, `EACCES`, `EROFS` …) as its kind.
//!
//! This crate depends on no other pmx crate, so every writer can use it
//! (`pmx-perfdata`'s users, `pmx`, `pmx-output`, `pmx-plot`, the CLI).
//!
//! [`dirs`] is the other half of pmx's footprint on disk: the one rule
//! for its cache and configuration directories and perf's build-id
//! cache, read from the environment once at the edge.

pub mod dirs;
pub mod job;
pub mod outfile;

pub use outfile::{write, Options, OutFile};
