//! pmx-kernels' integration tests: each kernel does what it says, checked
//! against the kernel's own accounting (getrusage) or by inspection.

mod kernels;
