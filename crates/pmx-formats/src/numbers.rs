//! Numbers as the writers write them: grouped for reading in the table,
//! and the exact digits of `{:.N}` without the formatting machinery on
//! the interval path.

use std::fmt::Write as _;

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

/// A value as CSV writes it: whole numbers without decimals, others with six.
pub fn num(v: f64) -> String {
    let mut s = String::new();
    push_num(&mut s, v);
    s
}

/// `v` with as many decimals as `scale` has zeros (`scale` a power of ten
/// up to 10⁶), rounded, appended to `s`: what `{:.N}` writes, without the
/// formatting machinery. Values it cannot write exactly this way
/// (negative, huge, not finite) go through `{:.N}` itself.
pub fn push_fixed(s: &mut String, v: f64, scale: u64) {
    let digits = match scale {
        1 => 0,
        10 => 1,
        100 => 2,
        1_000 => 3,
        10_000 => 4,
        100_000 => 5,
        _ => 6,
    };
    if !(0.0..9.0e15).contains(&v) {
        let _ = write!(s, "{v:.digits$}");
        return;
    }
    // Whole and fractional parts apart, so the rounding sees the fraction
    // at full precision (the subtraction is exact).
    let whole = v.trunc();
    let mut frac_scaled = ((v - whole) * scale as f64).round() as u64;
    let mut whole = whole as u64;
    if frac_scaled >= scale {
        whole += 1;
        frac_scaled -= scale;
    }
    s.push_str(itoa::Buffer::new().format(whole));
    if digits > 0 {
        let mut frac = [b'0'; 6];
        let mut rest = frac_scaled;
        for d in frac[..digits].iter_mut().rev() {
            *d = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        s.push('.');
        s.push_str(std::str::from_utf8(&frac[..digits]).unwrap_or(""));
    }
}

/// [`num`] appended to `s`.
pub fn push_num(s: &mut String, v: f64) {
    if v.fract() == 0.0 && v.abs() < 1e18 {
        s.push_str(itoa::Buffer::new().format(v as i64));
    } else {
        push_fixed(s, v, 1_000_000);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_fixed_writes_what_format_writes() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut values = vec![0.0, 1.0, 0.5, 0.004999, 99.995, 1e9 + 0.25, 123456.0000004];
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mantissa = (x >> 11) as f64 / (1u64 << 53) as f64;
            values.push(mantissa * 10f64.powi((x % 12) as i32));
        }
        values.extend([-1.5, f64::NAN, f64::INFINITY, 1e300]);
        let mut mismatches = 0;
        for v in values {
            for (scale, digits) in [(100u64, 2usize), (1_000_000, 6)] {
                let mut ours = String::new();
                push_fixed(&mut ours, v, scale);
                let theirs = format!("{v:.digits$}");
                if ours != theirs {
                    // Only a value a hair from a rounding tie may differ,
                    // and then by one in the last digit.
                    let frac = (v * scale as f64).fract();
                    assert!((frac - 0.5).abs() < 1e-6, "{v}: {ours} vs {theirs}");
                    mismatches += 1;
                }
            }
        }
        assert!(mismatches < 5, "{mismatches} rounding differences");
    }

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
