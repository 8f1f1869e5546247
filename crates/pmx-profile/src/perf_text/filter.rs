//! perf report's filters (`--comms`, `--pid`, `--dsos`, `--symbols`,
//! `--symbol-filter`) over a report's rows. As perf's default
//! (`--percentage absolute`), the totals and every share stay those of
//! the whole file: rows that do not match are dropped. A filter on a key
//! that is not shown is met by reporting with that key too
//! ([`Filter::keys`]) and joining the rows it split afterwards
//! ([`Filter::apply`]). A shown key held to one value (`--comms sf`)
//! is noted in [`Report::one_value`]: perf names it above the table
//! (`# comm: sf`) and leaves its column out, unless that would leave no
//! column.

use crate::profile::{Row, SortKey};
use crate::report::Report;

/// Which rows to keep (an empty list keeps every row).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Command names.
    pub comms: Vec<String>,
    /// Process ids.
    pub pids: Vec<u32>,
    /// Shared objects (base name or full path).
    pub dsos: Vec<String>,
    /// Symbol names.
    pub symbols: Vec<String>,
    /// A part of the symbol name (`--symbol-filter`).
    pub symbol_part: Option<String>,
}

impl Filter {
    /// perf's comma-separated lists (`--comms`, `--pid`, `--dsos`,
    /// `--symbols`; absent or empty: no filter) and `--symbol-filter`.
    pub fn parse(lists: [Option<&str>; 4], symbol_part: Option<&str>) -> Result<Filter, String> {
        let words = |v: Option<&str>| -> Vec<String> {
            (v.unwrap_or("").split(',').map(str::trim))
                .filter(|w| !w.is_empty())
                .map(String::from)
                .collect()
        };
        let pids = (words(lists[1]).iter())
            .map(|w| {
                w.parse()
                    .map_err(|_| format!("--pid {w}: not a process id"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Filter {
            comms: words(lists[0]),
            pids,
            dsos: words(lists[2]),
            symbols: words(lists[3]),
            symbol_part: symbol_part.map(String::from),
        })
    }

    /// The row keys to report with, as `pmx report --sort` takes them:
    /// `shown`, then those the filter needs.
    pub fn sort(&self, shown: &[SortKey]) -> String {
        let name = |k: &SortKey| match k {
            SortKey::Comm => "comm",
            SortKey::Pid => "pid",
            SortKey::Dso => "dso",
            SortKey::Symbol => "symbol",
            SortKey::Cpu => "cpu",
            SortKey::Tid => "tid",
        };
        self.keys(shown)
            .iter()
            .map(name)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The row keys to report with: `shown`, then those the filter needs.
    pub fn keys(&self, shown: &[SortKey]) -> Vec<SortKey> {
        let mut k = shown.to_vec();
        let need = [
            (!self.comms.is_empty(), SortKey::Comm),
            (!self.pids.is_empty(), SortKey::Pid),
            (!self.dsos.is_empty(), SortKey::Dso),
            (
                !self.symbols.is_empty() || self.symbol_part.is_some(),
                SortKey::Symbol,
            ),
        ];
        for (needed, key) in need {
            if needed && !k.contains(&key) {
                k.push(key);
            }
        }
        k
    }

    fn keeps(&self, r: &Row) -> bool {
        let base = |d: &str| d.rsplit('/').next().unwrap_or(d).to_string();
        let in_list = |l: &[String], v: &Option<String>| {
            l.is_empty()
                || v.as_ref()
                    .is_some_and(|v| l.iter().any(|x| *x == *v || base(x) == *v))
        };
        in_list(&self.comms, &r.comm)
            && (self.pids.is_empty() || r.pid.is_some_and(|p| self.pids.contains(&p)))
            && in_list(&self.dsos, &r.dso)
            && in_list(&self.symbols, &r.symbol)
            && (self.symbol_part.as_ref())
                .is_none_or(|p| r.symbol.as_ref().is_some_and(|s| s.contains(p.as_str())))
    }

    /// Drop the rows that do not match, then join the rows that differ
    /// only in keys not `shown` (their samples and periods summed),
    /// heaviest first; `report.sort` becomes `shown`.
    pub fn apply(&self, report: &mut Report, shown: &[SortKey]) {
        let drop_keys: Vec<SortKey> = (report.sort.iter())
            .filter(|k| !shown.contains(k))
            .copied()
            .collect();
        for e in &mut report.profile.events {
            let mut out: Vec<Row> = Vec::new();
            for mut r in std::mem::take(&mut e.rows)
                .into_iter()
                .filter(|r| self.keeps(r))
            {
                for k in &drop_keys {
                    match k {
                        SortKey::Comm => r.comm = None,
                        SortKey::Pid => r.pid = None,
                        SortKey::Dso => r.dso = None,
                        SortKey::Symbol => r.symbol = None,
                        SortKey::Cpu => r.cpu = None,
                        SortKey::Tid => r.thread = None,
                    }
                }
                // Rows are joined only where a key was taken away: two
                // functions of one name in one binary stay two rows, as
                // in perf.
                if drop_keys.is_empty() {
                    out.push(r);
                    continue;
                }
                let same = |o: &Row| {
                    (o.comm == r.comm && o.pid == r.pid && o.dso == r.dso)
                        && (o.symbol == r.symbol && o.cpu == r.cpu && o.kernel == r.kernel)
                        && (o.thread == r.thread || !shown.contains(&SortKey::Tid))
                };
                match out.iter_mut().find(|o| same(o)) {
                    Some(o) => {
                        // Functions of one name in two binaries joined:
                        // the graph takes both's chains.
                        if o.binary != r.binary {
                            o.binary = None;
                        }
                        o.samples += r.samples;
                        o.period += r.period;
                        o.children_samples += r.children_samples;
                        o.children_period += r.children_period;
                    }
                    None => out.push(r),
                }
            }
            if !drop_keys.is_empty() {
                out.sort_by_key(|r| std::cmp::Reverse(r.period));
            }
            e.rows = out;
        }
        report.sort = shown.to_vec();
        // perf's rule: a shown key whose list has one value is that value.
        let one = |l: &[String]| (l.len() == 1).then(|| l[0].clone());
        report.one_value = (shown.iter())
            .filter_map(|&k| match k {
                SortKey::Comm => one(&self.comms).map(|v| (k, v)),
                SortKey::Dso => one(&self.dsos).map(|v| (k, v)),
                SortKey::Symbol => one(&self.symbols).map(|v| (k, v)),
                _ => None,
            })
            .collect();
    }
}
