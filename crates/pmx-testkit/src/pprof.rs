//! Reading what `go tool pprof -top` prints: its table's rows and its
//! "Total samples" figure, as the tests that check pmx's pprof profiles
//! with the real client compare them.

/// One row of `go tool pprof -top`: `flat flat% sum% cum cum% NAME…`.
#[derive(Debug, Clone, PartialEq)]
pub struct TopRow {
    /// The function (or file:line with `-lines`), as pprof prints it.
    pub name: String,
    /// Its flat share, in percent.
    pub flat_pct: f64,
    /// Its cumulative share, in percent.
    pub cum_pct: f64,
}

/// The rows of a `-top` table (the lines after its `flat  flat%` header;
/// lines that are not rows are skipped).
pub fn top_rows(out: &str) -> Vec<TopRow> {
    let pct = |f: &str| f.strip_suffix('%')?.parse::<f64>().ok();
    out.lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some(TopRow {
                flat_pct: pct(f.get(1)?)?,
                cum_pct: pct(f.get(4)?)?,
                name: f.get(5..).filter(|n| !n.is_empty())?.join(" "),
            })
        })
        .collect()
}

/// The profile's total as pprof prints it (`N UNIT`): the figure of its
/// `Total samples = N UNIT` line, which pprof prints only for a profile
/// with a duration; else the total of its `Showing nodes accounting for
/// …, P% of N UNIT total` line (a recording whose samples carry no time
/// span, such as one `perf inject` synthesized); empty when neither is
/// there.
pub fn total_samples(out: &str) -> String {
    let total = out.lines().find_map(|l| l.split("Total samples = ").nth(1));
    if let Some(t) = total {
        return t.split(" (").next().unwrap_or(t).trim().to_string();
    }
    out.lines()
        .filter(|l| l.starts_with("Showing nodes accounting for "))
        .find_map(|l| l.rsplit_once("% of ")?.1.strip_suffix(" total"))
        .map(|t| t.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape `go tool pprof -top` (Go 1.19, Debian's golang-go) prints.
    const TOP: &str = "File: pmx\nType: cpu-clock\nShowing nodes accounting for 2.96s, 100% of 2.96s total\n      flat  flat%   sum%        cum   cum%\n     2.90s 97.97% 97.97%      2.90s 97.97%  spin_here\n     0.06s  2.03%   100%      2.96s   100%  main\n         0     0%   100%      2.96s   100%  __libc_start_call_main\n";

    #[test]
    fn rows_and_total_as_pprof_prints_them() {
        let rows = top_rows(TOP);
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows[0],
            TopRow {
                name: "spin_here".into(),
                flat_pct: 97.97,
                cum_pct: 97.97
            }
        );
        assert_eq!((rows[2].flat_pct, rows[2].cum_pct), (0.0, 100.0));
        assert_eq!(top_rows("no table here\n"), Vec::new());
        let with_total = "Total samples = 3.07s (102.33%)\n";
        assert_eq!(total_samples(with_total), "3.07s");
        assert_eq!(total_samples(TOP), "2.96s");
        assert_eq!(total_samples("File: x\nType: y\n"), "");
    }
}
