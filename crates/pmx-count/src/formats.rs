//! The plan as `pmx-formats`' writers see it: the names, units and groups
//! its rows point into.

use crate::stat::StatPlan;
use pmx_formats::EventTable;

impl EventTable for StatPlan {
    fn len(&self) -> usize {
        self.events.len()
    }
    fn name(&self, i: usize) -> &str {
        &self.events[i].name
    }
    fn unit(&self, i: usize) -> Option<&str> {
        self.events[i].unit.as_deref()
    }
    fn group(&self, i: usize) -> usize {
        self.events[i].group
    }
}
