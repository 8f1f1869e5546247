//! Why an msr command did nothing, or stopped.

use pmx_msr::MsrError;

/// Why an msr command did nothing (or stopped).
#[derive(Debug, thiserror::Error)]
pub enum MsrCommandError {
    /// Bad input: a register name, a field, a CPU list, a value, an event.
    #[error("{0}")]
    Usage(String),
    /// A write the allow-list refuses (without `--unsafe`).
    #[error("refusing to write: {0} (--unsafe writes anyway)")]
    Refused(String),
    /// The device could not be opened or read.
    #[error(transparent)]
    Msr(Box<MsrError>),
    /// A write failed on one domain.
    #[error("{domain}: writing {register}")]
    Write {
        /// The domain.
        domain: String,
        /// The register's label.
        register: String,
        /// Why.
        #[source]
        source: Box<MsrError>,
    },
}

impl From<MsrError> for MsrCommandError {
    fn from(e: MsrError) -> MsrCommandError {
        MsrCommandError::Msr(Box::new(e))
    }
}
