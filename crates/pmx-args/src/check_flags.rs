//! The words of `pmx check` and `pmx roofline`: the backend's name,
//! check's test hook (`ROW=N`: run ROW's kernel N units larger than its
//! expectation says), roofline's chart name.

use pmx_analysis::check::Backend;

/// `--backend perf|msr`.
pub fn backend(s: &str) -> Result<Backend, String> {
    match s {
        "perf" => Ok(Backend::Perf),
        "msr" => Ok(Backend::Msr),
        _ => Err(format!("--backend {s}: give perf or msr")),
    }
}

/// `ROW=N`, N a whole number (negative allowed).
pub fn skew(s: &str) -> Result<(String, i64), String> {
    let bad = || format!("'{s}': give ROW=N, N a whole number");
    let (row, n) = s.split_once('=').ok_or_else(bad)?;
    let n = n.trim().parse().map_err(|_| bad())?;
    match row.trim() {
        "" => Err(bad()),
        r => Ok((r.to_string(), n)),
    }
}

/// `roofline -o FILE`: the chart is SVG, so the name ends in `.svg`.
pub fn chart_path(p: &std::path::Path) -> Result<(), String> {
    match p.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("svg") || e.eq_ignore_ascii_case("png") => Ok(()),
        _ => Err(format!(
            "-o {}: the roofline chart is SVG or PNG; name a .svg or .png file",
            p.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words() {
        assert_eq!(backend("msr"), Ok(Backend::Msr));
        assert!(backend("x").unwrap_err().contains("perf or msr"));
        assert_eq!(skew("page-faults=1"), Ok(("page-faults".into(), 1)));
        assert_eq!(skew("a=-2"), Ok(("a".into(), -2)));
        assert!(skew("=1").is_err() && skew("a").is_err() && skew("a=x").is_err());
        assert!(chart_path(std::path::Path::new("r.SVG")).is_ok());
        assert!(chart_path(std::path::Path::new("r.png")).is_ok());
        assert!(chart_path(std::path::Path::new("r.jpg")).is_err());
    }
}
