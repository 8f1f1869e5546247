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
            eprintln!("pmx: {}", chain(&err));
            FAILURE
        }
    }
}

/// The error and its causes, `a: b: c`, each said once: a cause whose
/// text is already in what was said (an error that shows its source in
/// its own message) is not repeated.
pub fn chain(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for e in err.chain() {
        let s = e.to_string();
        if out.contains(&s) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that shows its source in its own message.
    #[derive(Debug)]
    struct Outer(std::io::Error);

    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            self.0.fmt(f)
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_already_said_is_not_repeated() {
        let io = std::io::Error::other("disk full");
        let e = anyhow::Error::from(Outer(io)).context("writing out.data");
        assert_eq!(chain(&e), "writing out.data: disk full");
        let e = anyhow::anyhow!("low level").context("high level");
        assert_eq!(chain(&e), "high level: low level");
    }
}
