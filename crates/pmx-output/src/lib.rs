//! # pmx-output — renderers
//!
//! Results come in as values from the `pmx` crate and leave as bytes: one
//! module per format. [`stat`] renders a counting report as the readable
//! table (numbers grouped for reading, the running share and the status
//! spelled out), as CSV with documented columns (raw numbers), or as JSON,
//! totals and interval rows alike. [`plot`] reads interval files (pmx's CSV
//! and JSON lines, perf's `-I -x,` CSV) and draws them as SVG or PNG line
//! charts with a built-in stroke font.
//!
//! The other commands' reports render here too, each in its own module:
//! [`tma`] (the top-down tree, shared with `pmx analyze --tma`), [`info`]
//! (what this machine is), [`catalog`] (`pmx list`, `pmx explain`),
//! [`registers`] (field tables, `pmx encode`, `pmx decode`) and [`fetch`]
//! (`pmx events fetch`'s progress and summary).

pub mod catalog;
pub mod fetch;
pub mod info;
pub mod msr;
pub mod plot;
pub mod progress;
pub mod registers;
pub mod stat;
pub mod tma;

/// Group the digits of an integer with ',' (`1234567` → `1,234,567`).
pub fn group_digits(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A value for reading: grouped integer when whole, else two decimals
/// (grouped integer part).
pub fn readable(v: f64) -> String {
    readable_as(v, false)
}

/// A measurement with a unit (msec, J, W …) for reading: always two
/// decimals, so a column of them lines up even when one is whole.
pub fn readable_measure(v: f64) -> String {
    readable_as(v, true)
}

fn readable_as(v: f64, decimals: bool) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let neg = v < 0.0;
    let a = v.abs();
    let s = if a.fract() == 0.0 && a < 1e18 && !decimals {
        group_digits(a as u64)
    } else {
        let whole = a.trunc();
        let frac = format!("{:.2}", a - whole);
        let (carry, frac) = if frac.starts_with('1') {
            (1.0, "00".to_string())
        } else {
            (0.0, frac[2..].to_string())
        };
        format!("{}.{}", group_digits((whole + carry) as u64), frac)
    };
    if neg {
        format!("-{s}")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouping() {
        assert_eq!(readable(200.0), "200");
        assert_eq!(readable_measure(200.0), "200.00");
        assert_eq!(readable_measure(1234.5), "1,234.50");
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1000), "1,000");
        assert_eq!(group_digits(1234567), "1,234,567");
        assert_eq!(readable(1234.5), "1,234.50");
        assert_eq!(readable(12.0), "12");
        assert_eq!(readable(0.999), "1.00");
    }
}
