//! `pmx roofline`'s report: the ceilings and the command's point as
//! text ([`text`]), JSON ([`json`]: `{ threads, ceilings: [ { name,
//! kind, one_core, all_cores, how } ], point: { available, reason,
//! flops, bytes, seconds, intensity, flop_rate }, exit_code }`, rates in
//! bytes/s and FLOP/s) and the chart ([`svg`], through `pmx-plot`;
//! [`write_svg`] writes it).

use super::RooflineReport;
use pmx_plot::roofline::{Roof, Roofline};
use std::fmt::Write as _;

/// A rate with an SI prefix: `12.3 G`.
fn si(v: f64) -> String {
    let (d, p) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(d, _)| v >= *d)
        .unwrap_or((1.0, ""));
    format!("{:.1} {p}", v / d)
}

fn unit(kind: &str) -> &'static str {
    match kind {
        "memory" => "B/s",
        _ => "FLOP/s",
    }
}

/// The ceilings and the point as a table.
pub fn text(r: &RooflineReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Ceilings (best of {} runs; all cores = {} threads):",
        super::TRIES,
        r.threads
    );
    let _ = writeln!(s, "  {:8} {:>16} {:>16}  how", "", "one core", "all cores");
    for c in &r.ceilings {
        let u = unit(c.kind);
        let _ = writeln!(
            s,
            "  {:8} {:>16} {:>16}  {}",
            c.name,
            format!("{}{u}", si(c.one_core)),
            format!("{}{u}", si(c.all_cores)),
            c.how
        );
    }
    if let Some(f) = &r.fma_check {
        let _ = writeln!(
            s,
            "FMA check ({}): one core {:.2}× of {:.2} GHz × {} FLOPs/cycle ({}), {} {:.0}%; all cores {:.2}× of {}FLOP/s",
            f.width,
            f.one_core_ratio,
            f.hz / 1e9,
            f.flops_per_cycle,
            f.basis,
            if f.within { "within" } else { "OUTSIDE" },
            super::FMA_TOLERANCE * 100.0,
            f.ratio,
            si(f.expected)
        );
    }
    let p = &r.point;
    let _ = writeln!(s, "Command: {:.3} s", p.seconds);
    match (p.intensity, p.flop_rate) {
        (Some(i), Some(f)) => {
            let _ = writeln!(
                s,
                "  operational intensity {i:.3} FLOP/byte, {}FLOP/s",
                si(f)
            );
        }
        _ => {
            let _ = writeln!(
                s,
                "  point unavailable: {}",
                p.reason.as_deref().unwrap_or("not measured")
            );
        }
    }
    s
}

/// The report as JSON.
pub fn json(r: &RooflineReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// The chart (all-core ceilings); `None` when a kind of ceiling is
/// missing.
pub fn svg(r: &RooflineReport) -> Option<String> {
    let roofs = |kind: &str| -> Vec<Roof> {
        r.ceilings
            .iter()
            .filter(|c| c.kind == kind)
            .map(|c| Roof {
                label: format!("{} {}{}", c.name, si(c.all_cores), unit(kind)),
                value: c.all_cores,
            })
            .collect()
    };
    let p = &r.point;
    let chart = Roofline {
        title: format!("Roofline ({} threads)", r.threads),
        memory: roofs("memory"),
        compute: roofs("compute"),
        point: p
            .intensity
            .zip(p.flop_rate)
            .map(|(i, f)| (i, f, format!("command: {i:.2} FLOP/B, {}FLOP/s", si(f)))),
        note: p.reason.as_ref().map(|w| format!("point unavailable: {w}")),
    };
    pmx_plot::roofline::svg(&chart)
}

/// Write the chart to `path`; what to tell the user.
pub fn write_svg(r: &RooflineReport, path: &std::path::Path) -> Result<String, String> {
    let svg = svg(r).ok_or("no memory or no compute ceiling could be measured")?;
    std::fs::write(path, svg).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(format!("pmx roofline: chart written to {}", path.display()))
}
