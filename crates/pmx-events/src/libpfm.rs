//! libpfm4 loaded at run time (being written).

use crate::{EventDef, EventSource, SourceKind};
use pmx_model::cpu::CpuId;

/// libpfm4's tables for one CPU.
pub struct Libpfm {
    events: Vec<EventDef>,
}

impl Libpfm {
    /// Open libpfm4 and select the PMU for `cpu`.
    pub fn load(cpu: &CpuId) -> Result<Libpfm, String> {
        let _ = cpu;
        Ok(Libpfm { events: Vec::new() })
    }
}

impl EventSource for Libpfm {
    fn kind(&self) -> SourceKind {
        SourceKind::Libpfm
    }
    fn describe(&self) -> String {
        "libpfm4".to_string()
    }
    fn events(&self) -> Vec<EventDef> {
        self.events.clone()
    }
    fn find(&self, name: &str) -> Option<EventDef> {
        let k = crate::name_key(name);
        self.events.iter().find(|e| crate::name_key(&e.name) == k).cloned()
    }
}
