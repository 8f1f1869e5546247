//! Field tables for `pmx msr`: the renderers are
//! [`pmx_output::registers`]'s, shared with `encode`, `decode`, `explain`.

pub use pmx_output::registers::{field_json as json, field_table as table};
