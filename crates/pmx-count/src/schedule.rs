//! Scheduling events onto the counters the CPU has.
//!
//! A core PMU has a few general-purpose counters (often 4 per hardware
//! thread with SMT on, 8 without; AMD Zen 6) and, on Intel, fixed counters
//! for instructions (0), core cycles (1), reference cycles (2) and topdown
//! slots (3). Some events may only use some counters (Intel's `Counter`
//! column: "0,1,2,3", "Fixed counter 1"). The NMI watchdog, when on, holds
//! one general-purpose counter for itself.
//!
//! [`fits`] decides whether a set of events can be on the PMU at once (a
//! small bipartite matching of events to counters). [`pack`] keeps the
//! user's `{…}` groups intact — and reports any that can never fit — and
//! packs the ungrouped hardware events into groups that fit, so each group
//! is measured over the same time window; software events never need a
//! counter. [`run_sets`] splits the groups into sets that each fit
//! entirely, for `--no-multiplex` (one run of the command per set).

use pmx_events::Counters;
use serde::Serialize;

/// The counters available to events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CounterBudget {
    /// General-purpose counters per hardware thread.
    pub gp: u32,
    /// Fixed counters that exist (indices).
    pub fixed: Vec<u8>,
    /// The NMI watchdog holds one general-purpose counter.
    pub watchdog: bool,
}

impl CounterBudget {
    /// The counters this CPU offers, from CPUID (general-purpose, fixed,
    /// and whether the NMI watchdog holds one); `None` when CPUID
    /// describes no PMU (then the kernel schedules alone).
    pub fn this_cpu() -> Option<CounterBudget> {
        let caps = pmx_sys::PmuCaps::decode(&pmx_sys::NativeCpuid)?;
        let c = caps.counters?;
        if c.general == 0 {
            return None;
        }
        let watchdog = std::fs::read_to_string("/proc/sys/kernel/nmi_watchdog")
            .map(|s| s.trim() != "0")
            .unwrap_or(false);
        Some(CounterBudget {
            gp: c.general,
            fixed: (0..c.fixed as u8).collect(),
            watchdog,
        })
    }
}

impl CounterBudget {
    /// General-purpose counters left for events.
    pub fn usable_gp(&self) -> u32 {
        self.gp.saturating_sub(u32::from(self.watchdog))
    }
}

/// What an event needs: nothing (software), or a core counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// Not a core-PMU event: needs no core counter.
    None,
    /// A core counter under these constraints.
    Counter(Counters),
}

/// Can these needs be on the PMU at the same time?
pub fn fits(needs: &[&Need], budget: &CounterBudget) -> bool {
    // Counters: fixed ones first (indices 0..F), then GP 0..G.
    let gp = budget.usable_gp() as usize;
    let slots: Vec<(bool, u8)> = budget
        .fixed
        .iter()
        .map(|&f| (true, f))
        .chain((0..gp as u8).map(|g| (false, g)))
        .collect();
    let allowed = |c: &Counters, (is_fixed, idx): (bool, u8)| -> bool {
        match c {
            Counters::AnyGp | Counters::Unknown => !is_fixed,
            Counters::Gp { list } => !is_fixed && list.contains(&idx),
            Counters::Fixed { index, gp } => {
                if is_fixed {
                    *index == idx
                } else {
                    gp.contains(&idx)
                }
            }
            Counters::NotCore => false,
        }
    };
    let events: Vec<&Counters> = needs
        .iter()
        .filter_map(|n| match n {
            Need::Counter(c) => Some(c),
            Need::None => None,
        })
        .collect();
    if events.len() > slots.len() {
        return false;
    }
    // Augmenting-path matching; sizes are tiny (≤ 16 counters).
    let mut owner: Vec<Option<usize>> = vec![None; slots.len()];
    fn assign(
        e: usize,
        events: &[&Counters],
        slots: &[(bool, u8)],
        owner: &mut Vec<Option<usize>>,
        seen: &mut Vec<bool>,
        allowed: &dyn Fn(&Counters, (bool, u8)) -> bool,
    ) -> bool {
        for s in 0..slots.len() {
            if seen[s] || !allowed(events[e], slots[s]) {
                continue;
            }
            seen[s] = true;
            let prev = owner[s];
            if prev.is_none() || assign(prev.unwrap_or(0), events, slots, owner, seen, allowed) {
                owner[s] = Some(e);
                return true;
            }
        }
        false
    }
    for e in 0..events.len() {
        let mut seen = vec![false; slots.len()];
        if !assign(e, &events, &slots, &mut owner, &mut seen, &allowed) {
            return false;
        }
    }
    true
}

/// The result of packing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packing {
    /// Groups as lists of event indices; `true` for the user's own groups.
    pub groups: Vec<(Vec<usize>, bool)>,
    /// Plain-words notes (groups that cannot fit, how events were packed).
    pub notes: Vec<String>,
}

/// Pack: user groups stay as they are; ungrouped counter events are packed
/// first-fit into groups that fit; events needing no counter stay alone.
/// `groups` are the input groups (event indices, explicit flag); `needs`
/// and `names` are indexed by event.
pub fn pack(
    groups: &[(Vec<usize>, bool)],
    needs: &[Need],
    names: &[String],
    budget: &CounterBudget,
) -> Packing {
    let mut out: Vec<(Vec<usize>, bool)> = Vec::new();
    let mut notes = Vec::new();
    let mut bins: Vec<Vec<usize>> = Vec::new();
    for (members, explicit) in groups {
        if *explicit || members.len() > 1 {
            let n: Vec<&Need> = members.iter().map(|&i| &needs[i]).collect();
            if !fits(&n, budget) {
                let list: Vec<&str> = members.iter().map(|&i| names[i].as_str()).collect();
                let counting = n.iter().filter(|x| matches!(x, Need::Counter(_))).count();
                notes.push(format!(
                    "group {{{}}} needs {counting} core counters at once but {} general-purpose{} and {} fixed are available: it can never be scheduled — split it",
                    list.join(","),
                    budget.usable_gp(),
                    if budget.watchdog { " (one is held by the NMI watchdog)" } else { "" },
                    budget.fixed.len()
                ));
            }
            out.push((members.clone(), *explicit));
            continue;
        }
        let e = members[0];
        if needs[e] == Need::None {
            out.push((vec![e], false));
            continue;
        }
        let placed = bins.iter_mut().any(|b| {
            let mut n: Vec<&Need> = b.iter().map(|&i| &needs[i]).collect();
            n.push(&needs[e]);
            if fits(&n, budget) {
                b.push(e);
                true
            } else {
                false
            }
        });
        if !placed {
            bins.push(vec![e]);
        }
    }
    if !bins.is_empty() {
        let total: usize = bins.iter().map(Vec::len).sum();
        if total > 1 {
            notes.push(format!(
                "{total} ungrouped hardware events packed into {} group{} that fit{}",
                bins.len(),
                if bins.len() == 1 { "" } else { "s" },
                if bins.len() > 1 {
                    "; groups take turns on the counters (multiplexing)"
                } else {
                    ""
                }
            ));
        }
        out.extend(bins.into_iter().map(|b| (b, false)));
    }
    Packing { groups: out, notes }
}

/// Split groups into sets that each fit on the PMU at once (for
/// `--no-multiplex`). Groups needing no counter go in the first set.
pub fn run_sets(
    groups: &[(Vec<usize>, bool)],
    needs: &[Need],
    budget: &CounterBudget,
) -> Vec<Vec<usize>> {
    let mut sets: Vec<Vec<usize>> = vec![Vec::new()];
    let mut members_of: Vec<Vec<usize>> = vec![Vec::new()];
    for (gi, (members, _)) in groups.iter().enumerate() {
        let counting = members.iter().any(|&i| needs[i] != Need::None);
        if !counting {
            sets[0].push(gi);
            continue;
        }
        let mut placed = false;
        for (s, set_members) in sets.iter_mut().zip(members_of.iter_mut()) {
            let mut n: Vec<&Need> = set_members.iter().map(|&i| &needs[i]).collect();
            n.extend(members.iter().map(|&i| &needs[i]));
            if fits(&n, budget) {
                s.push(gi);
                set_members.extend(members);
                placed = true;
                break;
            }
        }
        if !placed {
            sets.push(vec![gi]);
            members_of.push(members.clone());
        }
    }
    sets.retain(|s| !s.is_empty());
    sets
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skylake(watchdog: bool) -> CounterBudget {
        CounterBudget {
            gp: 4,
            fixed: vec![0, 1, 2],
            watchdog,
        }
    }

    fn any() -> Need {
        Need::Counter(Counters::AnyGp)
    }

    #[test]
    fn fixed_counters_do_not_use_general_purpose_ones() {
        let b = skylake(false);
        let inst = Need::Counter(Counters::Fixed {
            index: 0,
            gp: vec![0, 1, 2, 3],
        });
        let cyc = Need::Counter(Counters::Fixed {
            index: 1,
            gp: vec![0, 1, 2, 3],
        });
        let four = [any(), any(), any(), any()];
        let mut n: Vec<&Need> = four.iter().collect();
        n.push(&inst);
        n.push(&cyc);
        assert!(fits(&n, &b));
        let five = [any(), any(), any(), any(), any()];
        assert!(!fits(&five.iter().collect::<Vec<_>>(), &b));
        // The watchdog takes one.
        assert!(!fits(&four.iter().collect::<Vec<_>>(), &skylake(true)));
    }

    #[test]
    fn constraints_are_matched() {
        let b = skylake(false);
        let only2 = Need::Counter(Counters::Gp { list: vec![2] });
        let only23 = Need::Counter(Counters::Gp { list: vec![2, 3] });
        assert!(fits(&[&only2, &only23, &any(), &any()], &b));
        assert!(!fits(&[&only2, &only2.clone()], &b));
        let ref_only = Need::Counter(Counters::Fixed {
            index: 2,
            gp: vec![],
        });
        assert!(fits(&[&ref_only], &b));
        assert!(!fits(&[&ref_only, &ref_only.clone()], &b));
        assert!(fits(
            &[&Need::None, &Need::None],
            &CounterBudget {
                gp: 0,
                fixed: vec![],
                watchdog: false
            }
        ));
    }

    #[test]
    fn packing_and_run_sets() {
        let b = skylake(true); // 3 usable GP
        let needs = vec![
            any(),
            any(),
            any(),
            any(),
            any(),
            Need::None,
            any(),
            any(),
            any(),
            any(),
        ];
        let names: Vec<String> = (0..needs.len()).map(|i| format!("e{i}")).collect();
        let mut groups: Vec<(Vec<usize>, bool)> = (0..6).map(|i| (vec![i], false)).collect();
        groups.push((vec![6, 7, 8, 9], true)); // 4 in one group: never fits
        let p = pack(&groups, &needs, &names, &b);
        // User group kept, reported; 5 ungrouped → 2 bins; e5 alone.
        assert!(p.groups.contains(&(vec![6, 7, 8, 9], true)));
        assert!(p.groups.contains(&(vec![0, 1, 2], false)));
        assert!(p.groups.contains(&(vec![3, 4], false)));
        assert!(p.groups.contains(&(vec![5], false)));
        assert!(
            p.notes
                .iter()
                .any(|n| n.contains("{e6,e7,e8,e9}") && n.contains("NMI watchdog")),
            "{:?}",
            p.notes
        );
        let sets = run_sets(&p.groups, &needs, &b);
        // Software alone in set 0 with the first counter group; the rest one per set.
        assert_eq!(sets.len(), 3, "{sets:?}");
    }
}
