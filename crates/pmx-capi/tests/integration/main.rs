//! pmx-capi's integration tests, one test binary: a module per suite.
//! `c_example`: the C and C++ examples built against the library and run;
//! `families`: each family of the C ABI (counters, recorder, msr, registers).

mod c_example;
mod families;
