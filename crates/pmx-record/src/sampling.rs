//! What the sampling flags of `pmx record` and `pmx top` mean once
//! checked (`pmx-args`' `record_flags` checks them): the events, the
//! rate, the call-chain mode and the ring size a session samples with.

use super::callgraph::CallGraph;
use super::options::{RecordError, RecordEvent};
use pmx_perf::SampleRate;

/// What the sampling flags mean.
#[derive(Debug, Clone)]
pub struct Sampling {
    /// The events to sample (the default event when `-e` named none).
    pub events: Vec<RecordEvent>,
    /// What was chosen for the user (a lowered `-F`, the default event's
    /// fallback), to be said before sampling.
    pub notes: Vec<String>,
    /// The period or frequency.
    pub rate: SampleRate,
    /// The call-chain mode.
    pub call_graph: CallGraph,
    /// The ring's data pages per CPU, a power of two; `None` when `-m`
    /// was not given.
    pub mmap_pages: Option<usize>,
}

/// `-m N`: a power of two of pages, or a message that says so.
pub fn check_mmap_pages(pages: usize) -> Result<usize, RecordError> {
    if pages.is_power_of_two() {
        return Ok(pages);
    }
    Err(RecordError::Invalid(format!(
        "-m {pages}: the ring size must be a power of two of pages (1, 2, 4 … 128 …)"
    )))
}
