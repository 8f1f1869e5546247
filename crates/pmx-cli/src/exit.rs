//! The one place that maps outcomes to exit codes.

use std::io::ErrorKind;

/// Success.
pub const OK: i32 = 0;
/// The operation failed.
pub const FAILURE: i32 = 1;
/// Bad input: malformed spec, value or flag.
pub const USAGE: i32 = 2;

/// An error caused by what the user typed; exits with [`USAGE`].
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Print the error (if any) and return the exit code for it. A broken pipe
/// (`pmx list | head`) exits quietly with success.
pub fn from_result(result: anyhow::Result<i32>) -> i32 {
    match result {
        Ok(code) => code,
        Err(err) => {
            if let Some(io) = err.downcast_ref::<std::io::Error>() {
                if io.kind() == ErrorKind::BrokenPipe {
                    return OK;
                }
            }
            if err.downcast_ref::<UsageError>().is_some() {
                eprintln!("pmx: {err}");
                return USAGE;
            }
            eprintln!("pmx: {}", pmx::console::error_chain(err.as_ref()));
            FAILURE
        }
    }
}
