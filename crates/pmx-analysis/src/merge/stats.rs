//! The statistics of one event or metric over the members, and the
//! outlier rule.

/// Statistics of one event or metric over the members.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Members with a value.
    pub n: usize,
    /// Their sum.
    pub sum: f64,
    /// The smallest value and its member's index.
    pub min: (f64, usize),
    /// The largest value and its member's index.
    pub max: (f64, usize),
    /// The mean.
    pub mean: f64,
    /// The median.
    pub median: f64,
    /// (member index, value, deviation from the median in %).
    pub outliers: Vec<(usize, f64, f64)>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Robust z-score threshold (Iglewicz and Hoaglin).
const Z_LIMIT: f64 = 3.5;
/// Smallest relative deviation from the median that can be an outlier.
const MIN_DEVIATION: f64 = 0.10;

/// Statistics of one event or metric over the members; `counts` says the
/// values are plain event counts (no unit), which adds the counting-noise
/// floor to the outlier rule.
pub fn stats(values: &[(usize, f64)], counts: bool) -> Option<Stats> {
    let (&first, _) = values.split_first()?;
    let n = values.len();
    let sum: f64 = values.iter().map(|(_, v)| v).sum();
    let mut min = (first.1, first.0);
    let mut max = (first.1, first.0);
    for &(i, v) in values {
        if v < min.0 {
            min = (v, i);
        }
        if v > max.0 {
            max = (v, i);
        }
    }
    let mut vs: Vec<f64> = values.iter().map(|(_, v)| *v).collect();
    let med = median(&mut vs);
    let mut dev: Vec<f64> = values.iter().map(|(_, v)| (v - med).abs()).collect();
    let mad = median(&mut dev);
    let mut outliers = Vec::new();
    if n >= 3 {
        for &(i, v) in values {
            let d = (v - med).abs();
            let rel = if med != 0.0 {
                d / med.abs()
            } else if d > 0.0 {
                f64::INFINITY
            } else {
                0.0
            };
            let z_ok = mad == 0.0 || d / (1.4826 * mad) > Z_LIMIT;
            let above_noise = !counts || d > 3.0 * (med.abs() + 1.0).sqrt();
            if d > 0.0 && z_ok && rel > MIN_DEVIATION && above_noise {
                let pct = if med != 0.0 {
                    (v - med) / med.abs() * 100.0
                } else {
                    f64::INFINITY
                };
                outliers.push((i, v, pct));
            }
        }
    }
    Some(Stats {
        n,
        sum,
        min,
        max,
        mean: sum / n as f64,
        median: med,
        outliers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robust_outliers() {
        let s = stats(&[(0, 1100.0), (1, 1105.0), (2, 10100.0), (3, 1098.0)], true).unwrap();
        assert_eq!(s.sum, 13403.0);
        assert_eq!(s.max, (10100.0, 2));
        assert_eq!(s.min, (1098.0, 3));
        assert_eq!(s.outliers.len(), 1);
        assert_eq!(s.outliers[0].0, 2);
        // A tight cluster: small differences are not outliers.
        let s = stats(&[(0, 100.0), (1, 100.0), (2, 103.0), (3, 100.0)], true).unwrap();
        assert!(s.outliers.is_empty());
        // Two members: nobody can stand out.
        let s = stats(&[(0, 1.0), (1, 100.0)], true).unwrap();
        assert!(s.outliers.is_empty());
        assert_eq!(s.median, 50.5);
        // Counting noise: 1 among zeros is not an outlier, 30 is; a value
        // with a unit (msec) has no such floor.
        let zeros = |x: f64| [(0, 0.0), (1, 0.0), (2, x), (3, 0.0)];
        assert!(stats(&zeros(1.0), true).unwrap().outliers.is_empty());
        assert_eq!(stats(&zeros(30.0), true).unwrap().outliers.len(), 1);
        assert_eq!(stats(&zeros(1.0), false).unwrap().outliers.len(), 1);
    }
}
