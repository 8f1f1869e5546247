//! The statistics of `pmx compare`, pure functions over samples: the mean
//! with its 95% confidence interval (Student's t), Welch's t-test (two
//! sides of unequal variance and size) with the interval of the
//! difference, the Mann–Whitney U rank test (exact distribution for small
//! samples without ties, the normal approximation with tie and continuity
//! correction otherwise), and the geometric mean of ratios.
//!
//! The distributions are computed here: Student's t CDF through the
//! regularized incomplete beta function (continued fraction, modified
//! Lentz), its quantile by bisection on the CDF, the normal tail through
//! the regularized upper incomplete gamma function, log-gamma by Lanczos.
//! The tests compare them with SciPy 1.10 (`scipy_reference.py` and its
//! output `scipy_reference.txt` beside this file).

/// The mean of one side and its 95% confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Estimate {
    /// Samples.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (0 for one sample).
    pub stddev: f64,
    /// Half the width of the 95% confidence interval of the mean (NaN
    /// with one sample: no interval).
    pub ci95: f64,
}

impl Estimate {
    /// The estimate of `x`; `None` when empty.
    pub fn of(x: &[f64]) -> Option<Estimate> {
        if x.is_empty() {
            return None;
        }
        let n = x.len();
        let mean = mean(x);
        let stddev = variance(x).sqrt();
        let ci95 = if n > 1 {
            t_quantile(0.975, (n - 1) as f64) * stddev / (n as f64).sqrt()
        } else {
            f64::NAN
        };
        Some(Estimate {
            n,
            mean,
            stddev,
            ci95,
        })
    }
}

/// Welch's t-test of `b` against `a`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Welch {
    /// t = (mean b − mean a) / standard error.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// mean b − mean a.
    pub diff: f64,
    /// The 95% confidence interval of the difference.
    pub ci95: (f64, f64),
}

/// Welch's t-test of `b` against `a` (two-sided); `None` unless each side
/// has at least two samples. When neither side varies, the difference is
/// certain: p = 0 when the means differ, 1 when they are equal.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (sa, sb) = (variance(a) / na, variance(b) / nb);
    let se2 = sa + sb;
    let diff = mean(b) - mean(a);
    if se2 == 0.0 {
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        return Some(Welch {
            t: if diff == 0.0 {
                0.0
            } else {
                diff.signum() * f64::INFINITY
            },
            df: na + nb - 2.0,
            p,
            diff,
            ci95: (diff, diff),
        });
    }
    let df = se2 * se2 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    let t = diff / se2.sqrt();
    let p = (2.0 * t_cdf(-t.abs(), df)).min(1.0);
    let half = t_quantile(0.975, df) * se2.sqrt();
    Some(Welch {
        t,
        df,
        p,
        diff,
        ci95: (diff - half, diff + half),
    })
}

/// The Mann–Whitney U test of `a` against `b`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RankTest {
    /// U of `a`: the pairs (x in a, y in b) with x > y, ties counting ½.
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// From the exact distribution (no ties, small samples), or the normal
    /// approximation.
    pub exact: bool,
}

/// Up to this many samples on each side (and no ties) the rank test's p
/// comes from the exact distribution of U.
pub const EXACT_UP_TO: usize = 20;

/// The two-sided Mann–Whitney U test; `None` when a side is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<RankTest> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (n1, n2) = (a.len(), b.len());
    let (ranks, ties) = ranks(a.iter().chain(b).copied().collect());
    let r1: f64 = ranks[..n1].iter().sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let big = u1.max((n1 * n2) as f64 - u1);
    let exact = ties.is_empty() && n1 <= EXACT_UP_TO && n2 <= EXACT_UP_TO;
    let p = if exact {
        2.0 * u_tail(n1, n2, big.round() as usize)
    } else {
        let n = (n1 + n2) as f64;
        let mu = (n1 * n2) as f64 / 2.0;
        let tie: f64 = ties.iter().map(|&t| t * t * t - t).sum();
        let var = (n1 * n2) as f64 / 12.0 * ((n + 1.0) - tie / (n * (n - 1.0)));
        if var <= 0.0 {
            1.0
        } else {
            2.0 * normal_sf((big - mu - 0.5) / var.sqrt())
        }
    };
    Some(RankTest {
        u: u1,
        p: p.clamp(0.0, 1.0),
        exact,
    })
}

/// The geometric mean of `ratios` (each > 0); `None` when empty.
pub fn geomean(ratios: &[f64]) -> Option<f64> {
    if ratios.is_empty() || ratios.iter().any(|&r| r <= 0.0 || !r.is_finite()) {
        return None;
    }
    Some((ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp())
}

/// The mean of `x` (not empty).
pub fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// The sample variance of `x` (n − 1; 0 for fewer than two samples).
pub fn variance(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return 0.0;
    }
    let m = mean(x);
    x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() - 1) as f64
}

/// Ranks (1-based, ties share their mean rank) of `v` in its own order,
/// and the size of each group of ties.
fn ranks(v: Vec<f64>) -> (Vec<f64>, Vec<f64>) {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&i, &j| v[i].total_cmp(&v[j]));
    let mut r = vec![0.0; v.len()];
    let mut ties = Vec::new();
    let mut i = 0;
    while i < order.len() {
        let mut j = i + 1;
        while j < order.len() && v[order[j]] == v[order[i]] {
            j += 1;
        }
        let rank = (i + 1 + j) as f64 / 2.0;
        for &k in &order[i..j] {
            r[k] = rank;
        }
        if j - i > 1 {
            ties.push((j - i) as f64);
        }
        i = j;
    }
    (r, ties)
}

/// P(U ≥ u) under the null hypothesis, without ties: the number of
/// arrangements with U = k counted by f(m, n, k) = f(m − 1, n, k − n) +
/// f(m, n − 1, k), over C(m + n, m).
fn u_tail(n1: usize, n2: usize, u: usize) -> f64 {
    let max = n1 * n2;
    // table[m][n][k], built up over m and n.
    let mut prev: Vec<Vec<f64>> = (0..=n2).map(|_| vec![1.0]).collect();
    for m in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = vec![vec![1.0]];
        for n in 1..=n2 {
            let mut f = vec![0.0; m * n + 1];
            for (k, slot) in f.iter_mut().enumerate() {
                let a = k
                    .checked_sub(n)
                    .and_then(|k| prev[n].get(k))
                    .copied()
                    .unwrap_or(0.0);
                let b = cur[n - 1].get(k).copied().unwrap_or(0.0);
                *slot = a + b;
            }
            cur.push(f);
        }
        prev = cur;
    }
    let f = &prev[n2];
    let total: f64 = f.iter().sum();
    f[u.min(max)..].iter().sum::<f64>() / total
}

/// Student's t CDF with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    if t.is_infinite() {
        return if t > 0.0 { 1.0 } else { 0.0 };
    }
    let tail = 0.5 * beta_reg(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The `p` quantile of Student's t with `df` degrees of freedom (0 < p < 1).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (-1.0, 1.0);
    while t_cdf(lo, df) > p {
        lo *= 2.0;
    }
    while t_cdf(hi, df) < p {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-14 * hi.abs().max(1.0) {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// The standard normal upper tail P(Z > z).
pub fn normal_sf(z: f64) -> f64 {
    // erfc(x) = Q(½, x²) for x ≥ 0.
    let x = z / std::f64::consts::SQRT_2;
    let q = gamma_q(0.5, x * x);
    if z >= 0.0 {
        0.5 * q
    } else {
        1.0 - 0.5 * q
    }
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, nine terms).
pub fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function I_x(a, b).
pub fn beta_reg(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The continued fraction converges fast for x < (a + 1) / (a + b + 2).
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function (modified
/// Lentz).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularized upper incomplete gamma function Q(a, x): the series
/// below a + 1, the continued fraction above.
fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let front = (-x + a * x.ln() - ln_gamma(a)).exp();
    if x < a + 1.0 {
        let (mut ap, mut del) = (a, 1.0 / a);
        let mut sum = del;
        for _ in 0..1000 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        1.0 - sum * front
    } else {
        const TINY: f64 = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / TINY;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..1000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            d = if d.abs() < TINY { TINY } else { d };
            c = b + an / c;
            c = if c.abs() < TINY { TINY } else { c };
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-16 {
                break;
            }
        }
        front * h
    }
}

#[cfg(test)]
mod tests {
    //! Every expected value is SciPy 1.10.1's, printed by
    //! `scipy_reference.py` into `scipy_reference.txt` and copied here.
    use super::*;

    fn close(got: f64, want: f64, rel: f64) {
        let tol = rel * want.abs().max(1e-300);
        assert!((got - want).abs() <= tol, "got {got}, want {want} (±{tol})");
    }

    const FIVE: ([f64; 5], [f64; 5]) =
        ([10.1, 9.8, 10.3, 10.0, 9.9], [10.9, 11.2, 10.7, 11.0, 11.4]);

    #[test]
    fn distributions_match_scipy() {
        close(t_cdf(0.5, 3.0), 0.674276017575925, 1e-12);
        close(t_cdf(2.0, 7.5), 0.958551502350917, 1e-12);
        close(t_cdf(-1.3, 12.0), 0.109008585541757, 1e-11);
        close(t_cdf(4.2, 2.0), 0.97385836652685, 1e-12);
        close(t_quantile(0.975, 1.0), 12.7062047364321, 1e-10);
        close(t_quantile(0.975, 4.0), 2.7764451051978, 1e-10);
        close(t_quantile(0.975, 9.0), 2.26215716274099, 1e-10);
        close(t_quantile(0.975, 30.0), 2.04227245630124, 1e-10);
        close(beta_reg(2.0, 3.0, 0.4), 0.5248, 1e-12);
        close(beta_reg(0.5, 5.0, 0.9), 0.999997429410301, 1e-12);
        close(beta_reg(10.0, 0.5, 0.95), 0.317151575465545, 1e-11);
        close(normal_sf(2.5), 0.00620966532577613, 1e-10);
        close(ln_gamma(0.5), std::f64::consts::PI.sqrt().ln(), 1e-13);
        close(ln_gamma(10.0), 362_880f64.ln(), 1e-13);
    }

    #[test]
    fn welch_matches_scipy() {
        let cases: [(&[f64], &[f64], [f64; 5]); 5] = [
            // t, df, p, ci low, ci high
            (
                &FIVE.0,
                &FIVE.1,
                [
                    6.87683859713,
                    7.22603762317,
                    0.000204418196707,
                    0.6714813956,
                    1.3685186044,
                ],
            ),
            (
                &[1.0, 2.0, 3.0, 4.0],
                &[1.5, 2.5, 3.5, 4.5, 5.5, 6.5],
                [
                    1.5,
                    7.94117647059,
                    0.172279077291,
                    -0.808980787705,
                    3.8089807877,
                ],
            ),
            (
                &[3.1, 2.7, 3.5],
                &[4.0, 4.4, 3.9],
                [
                    3.61157559257,
                    3.46885245902,
                    0.0286613042682,
                    0.182512363225,
                    1.81748763677,
                ],
            ),
            (
                &[1.0, 3.0, 5.0, 7.0, 9.0],
                &[2.0, 4.0, 6.0, 8.0, 10.5],
                [
                    0.536107196711,
                    7.98014430274,
                    0.606500519695,
                    -3.63357487401,
                    5.83357487401,
                ],
            ),
            (
                &[1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 4.0, 5.0, 6.0],
                &[3.0, 4.0, 4.0, 5.0, 5.0, 6.0, 6.0, 7.0, 7.0, 8.0],
                [
                    3.19771044854,
                    17.9430492387,
                    0.00500275412915,
                    0.754253007111,
                    3.64574699289,
                ],
            ),
        ];
        for (a, b, [t, df, p, lo, hi]) in cases {
            let w = welch(a, b).unwrap();
            close(w.t, t, 1e-10);
            close(w.df, df, 1e-10);
            close(w.p, p, 1e-9);
            close(w.ci95.0, lo, 1e-9);
            close(w.ci95.1, hi, 1e-9);
        }
        assert!(welch(&[1.0], &[1.0, 2.0]).is_none());
        // Exact counts that never vary: certain when they differ.
        assert_eq!(welch(&[5.0, 5.0], &[6.0, 6.0, 6.0]).unwrap().p, 0.0);
        assert_eq!(welch(&[5.0, 5.0], &[5.0, 5.0]).unwrap().p, 1.0);
    }

    #[test]
    fn confidence_intervals_of_the_mean_match_scipy() {
        for (x, mean, half) in [
            (&FIVE.0[..], 10.02, 0.23883883881),
            (&FIVE.1[..], 11.04, 0.335479138493),
            (&[3.1, 2.7, 3.5][..], 3.1, 0.993655084738),
            (&[4.0, 4.4, 3.9][..], 4.1, 0.657241060798),
            (&[1.0, 2.0, 3.0, 4.0][..], 2.5, 2.05426025676),
        ] {
            let e = Estimate::of(x).unwrap();
            close(e.mean, mean, 1e-12);
            close(e.ci95, half, 1e-9);
        }
        assert!(Estimate::of(&[7.0]).unwrap().ci95.is_nan());
        assert!(Estimate::of(&[]).is_none());
    }

    #[test]
    fn rank_test_for_three_and_five_matches_scipy() {
        // N = 3: every B above every A, the smallest two-sided p there is.
        let r = mann_whitney(&[3.1, 2.7, 3.5], &[4.0, 4.4, 3.9]).unwrap();
        assert_eq!((r.u, r.exact), (0.0, true));
        close(r.p, 0.1, 1e-12);
        // N = 5, separated and interleaved.
        let r = mann_whitney(&FIVE.0, &FIVE.1).unwrap();
        assert_eq!(r.u, 0.0);
        close(r.p, 0.00793650793651, 1e-11);
        let r = mann_whitney(&[1.0, 3.0, 5.0, 7.0, 9.0], &[2.0, 4.0, 6.0, 8.0, 10.5]).unwrap();
        assert_eq!(r.u, 10.0);
        close(r.p, 0.690476190476, 1e-11);
        // 4 against 6.
        let r = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[1.5, 2.5, 3.5, 4.5, 5.5, 6.5]).unwrap();
        assert_eq!(r.u, 6.0);
        close(r.p, 0.257142857143, 1e-11);
        // Ties: the normal approximation with tie correction.
        let a = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 4.0, 5.0, 6.0];
        let b = [3.0, 4.0, 4.0, 5.0, 5.0, 6.0, 6.0, 7.0, 7.0, 8.0];
        let r = mann_whitney(&a, &b).unwrap();
        assert_eq!((r.u, r.exact), (15.5, false));
        close(r.p, 0.00933202587108, 1e-9);
        // Identical samples: nothing to see.
        assert_eq!(mann_whitney(&[2.0, 2.0], &[2.0, 2.0]).unwrap().p, 1.0);
    }

    #[test]
    fn geomean_of_ratios() {
        close(geomean(&[2.0, 0.5]).unwrap(), 1.0, 1e-15);
        close(geomean(&[1.1, 1.21]).unwrap(), 1.1f64.powf(1.5), 1e-14);
        assert_eq!(geomean(&[]), None);
        assert_eq!(geomean(&[1.0, -2.0]), None);
    }
}
