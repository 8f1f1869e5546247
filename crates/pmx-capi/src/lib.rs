//! # pmx-capi — the pmx library through a C ABI
//!
//! (Being written: `include/pmx.h` and the functions behind it.)
