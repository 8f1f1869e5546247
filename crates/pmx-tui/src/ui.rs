//! The terminal UI (placeholder until the next commit): the `--stdio`
//! table until then.

use crate::top::{Session, TopError, TopOptions, TopOutcome};

/// Run the terminal UI.
pub fn run(session: &mut Session, opts: &TopOptions) -> Result<TopOutcome, TopError> {
    crate::stdio::run(session, opts, &mut std::io::stdout().lock())
}
