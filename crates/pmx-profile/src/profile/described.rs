//! Groups the file describes (`GROUP_DESC`: perf's and pmx's `-e '{A,B}'`)
//! whose members sample each on its own, without the leader reading them
//! (no `:S`): as `perf report --group` shows them, one table per group
//! whose rows join the members' own rows by their keys, each member's
//! column its own period there. A group whose leader already has a
//! table from sample reads keeps that one.

use super::groups::Moments;
use super::types::{GroupRow, GroupTable, Profile};
use rustc_hash::FxHashMap as HashMap;

/// A row's keys, as its table names them.
type Key = (
    Option<String>,
    Option<u32>,
    Option<String>,
    Option<String>,
    bool,
    Option<u32>,
);

/// Give each described group's leader its table (members: the leader
/// and the events after it, as GROUP_DESC counts them).
pub(super) fn add_tables(p: &mut Profile) {
    for (_, leader, n) in p.features.group_desc.clone() {
        let (l, n) = (leader as usize, n as usize);
        let Some(end) = l.checked_add(n).filter(|&e| n > 1 && e <= p.events.len()) else {
            continue;
        };
        if (l..end).any(|m| p.events[m].group.is_some()) {
            continue;
        }
        p.events[l].group = Some(table(p, (l..end).collect()));
    }
}

/// The joined rows of `members`: per row, each member's period (in the
/// moments' sums, without per-sample products: these counts are sampled
/// periods, not reads), the samples of all members, the leader's
/// samples and period in the row itself.
fn table(p: &Profile, members: Vec<usize>) -> GroupTable {
    let n = members.len();
    let mut by: HashMap<Key, GroupRow> = HashMap::default();
    for (j, &m) in members.iter().enumerate() {
        for r in &p.events[m].rows {
            let key = (
                r.comm.clone(),
                r.pid,
                r.dso.clone(),
                r.symbol.clone(),
                r.kernel,
                r.cpu,
            );
            let g = by.entry(key).or_insert_with(|| {
                let mut row = r.clone();
                (row.samples, row.period) = (0, 0);
                (row.children_samples, row.children_period) = (0, 0);
                let moments = Moments {
                    samples: 0,
                    sums: vec![0; n],
                    products: vec![0.0; n * (n + 1) / 2],
                };
                GroupRow { row, moments }
            });
            g.moments.sums[j] = g.moments.sums[j].saturating_add(r.period);
            g.moments.samples += r.samples;
            if j == 0 {
                (g.row.samples, g.row.period) = (r.samples, r.period);
                g.row.children_samples = r.children_samples;
                g.row.children_period = r.children_period;
            }
        }
    }
    let mut rows: Vec<GroupRow> = by.into_values().collect();
    rows.sort_by(GroupRow::perf_order);
    GroupTable {
        members,
        rows,
        from_reads: false,
    }
}
