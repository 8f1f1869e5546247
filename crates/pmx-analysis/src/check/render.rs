//! `pmx check`'s report: a table of rows (expected, measured, tolerance,
//! result) with each skipped row's reason under it ([`text`]), or the
//! report as JSON ([`json`], the schema in [`super`]'s docs and
//! docs/check.md). It lives beside the engine, as every new command's
//! renderer does (ARCHITECTURE.md, "Where to add …").

use super::{CheckReport, Status};
use std::fmt::Write as _;

/// A value as the table prints it: whole numbers whole, others with
/// four significant digits.
pub fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() >= 1e6 || v.abs() < 1e-3 {
        format!("{v:.4e}")
    } else {
        format!("{v:.4}")
    }
}

/// The table.
pub fn text(r: &CheckReport) -> String {
    let count = |s: Status| r.rows.iter().filter(|x| x.status == s).count();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pmx check ({:?} backend): {} passed, {} failed, {} could not run",
        r.backend,
        count(Status::Pass),
        count(Status::Fail),
        count(Status::Skipped)
    );
    let w = r.rows.iter().map(|x| x.id.len()).max().unwrap_or(0).max(4);
    let _ = writeln!(
        out,
        "{:w$}  {:>24}  {:>14}  {:>16}  RESULT",
        "ROW", "EXPECTED", "MEASURED", "TOLERANCE"
    );
    for x in &r.rows {
        let expected = match x.expected {
            Some(e) => format!("{} {}", number(e), x.unit),
            None => x.unit.clone(),
        };
        let measured = x.measured.map(number).unwrap_or_else(|| "-".into());
        let result = match x.status {
            Status::Pass => "pass",
            Status::Fail => "FAIL",
            Status::Skipped => "skipped",
        };
        let _ = writeln!(
            out,
            "{:w$}  {expected:>24}  {measured:>14}  {:>16}  {result}",
            x.id, x.tolerance
        );
        if x.status == Status::Fail {
            let _ = writeln!(
                out,
                "{:w$}  accepted {}–{}; {}",
                "",
                number(x.low),
                number(x.high),
                x.kernel
            );
        }
        if let Some(why) = x.reason.as_ref().filter(|_| x.status != Status::Pass) {
            let _ = writeln!(out, "{:w$}  {why}", "");
        }
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// The report as JSON.
pub fn json(r: &CheckReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
