//! Intel perfmon JSON tables (being written).

use crate::{EventDef, EventSource, LoadError, SourceKind};
use pmx_model::cpu::CpuId;
use std::path::Path;

/// Intel's event tables for one CPU.
pub struct IntelJson {
    events: Vec<EventDef>,
}

impl IntelJson {
    /// Load the tables `mapfile.csv` in `dir` names for `cpu`.
    pub fn load(dir: &Path, cpu: &CpuId) -> Result<IntelJson, LoadError> {
        let _ = (dir, cpu);
        Ok(IntelJson { events: Vec::new() })
    }
}

impl EventSource for IntelJson {
    fn kind(&self) -> SourceKind {
        SourceKind::IntelJson
    }
    fn describe(&self) -> String {
        "Intel perfmon JSON".to_string()
    }
    fn events(&self) -> Vec<EventDef> {
        self.events.clone()
    }
    fn find(&self, name: &str) -> Option<EventDef> {
        let k = crate::name_key(name);
        self.events.iter().find(|e| crate::name_key(&e.name) == k).cloned()
    }
}
