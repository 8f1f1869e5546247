//! `-o` paths with the job patterns expanded (`%h %p %r %j %%`, see
//! [`pmx::job`]).

use crate::exit::UsageError;
use pmx::job::JobContext;
use std::path::PathBuf;

/// Expand an `-o` path with this process's context.
pub fn expand_path(pattern: &std::path::Path) -> anyhow::Result<PathBuf> {
    let text = pattern
        .to_str()
        .ok_or_else(|| UsageError(format!("-o {}: not valid UTF-8", pattern.display())))?;
    if !text.contains('%') {
        return Ok(pattern.to_path_buf());
    }
    Ok(PathBuf::from(
        JobContext::current()
            .and_then(|c| c.expand(text))
            .map_err(|e| UsageError(e.0))?,
    ))
}
