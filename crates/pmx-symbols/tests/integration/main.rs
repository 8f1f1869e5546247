//! pmx-symbols' integration tests, one test binary (a module per
//! subject): broken ELF files written by the tests (`crafted_elf`), perf
//! 6.1's data symbols of libc (`perf_data`), PLT
//! entries against objdump's (`plt`). The sweep of every ELF file of the
//! machine (`elf_sweep.rs`, long) and the heap measure of
//! `line_memory.rs` (a counting global allocator) are targets of their
//! own. Tests run as threads of one process: none may change
//! process-wide state (the environment, the current directory, signal
//! handlers).

mod crafted_elf;
mod perf_data;
mod plt;
