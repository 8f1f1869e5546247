//! Which function to annotate: the places of the profile grouped by
//! (function, binary), matched against the name asked for; the close
//! names and the hottest functions for the error when none matches.

use crate::profile::AddressSamples;
use rustc_hash::FxHashMap as HashMap;

/// A function with samples: where it is and how many samples it has in
/// the events selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The function's name.
    pub symbol: String,
    /// The binary's base name.
    pub dso: String,
    /// The binary's path as recorded.
    pub dso_path: String,
    /// Kernel code.
    pub kernel: bool,
    /// The build-id recorded for the binary.
    pub build_id: Option<Vec<u8>>,
    /// Samples in the events selected.
    pub samples: u64,
}

/// The functions of `places` with samples in the `selected` events,
/// heaviest first.
pub fn candidates(places: &[AddressSamples], selected: &[usize]) -> Vec<Candidate> {
    let mut by: HashMap<(&str, &str, bool), Candidate> = HashMap::default();
    for p in places {
        let n: u64 = selected
            .iter()
            .filter_map(|&e| p.weights.get(e))
            .map(|w| w.samples)
            .sum();
        if n == 0 {
            continue;
        }
        by.entry((&p.symbol, &p.dso_path, p.kernel))
            .or_insert_with(|| Candidate {
                symbol: p.symbol.clone(),
                dso: p.dso.clone(),
                dso_path: p.dso_path.clone(),
                kernel: p.kernel,
                build_id: p.build_id.clone(),
                samples: 0,
            })
            .samples += n;
    }
    let mut v: Vec<Candidate> = by.into_values().collect();
    v.sort_by(|a, b| {
        b.samples
            .cmp(&a.samples)
            .then_with(|| (&a.symbol, &a.dso_path).cmp(&(&b.symbol, &b.dso_path)))
    });
    v
}

/// Whether `c` is the function `name` (exactly, or a C++ name without
/// its parameters) in binary `dso` (base name or path) when given.
pub fn is_match(c: &Candidate, name: &str, dso: Option<&str>) -> bool {
    let named = c.symbol == name || c.symbol.split('(').next() == Some(name);
    named && dso.is_none_or(|d| c.dso == d || c.dso_path == d)
}

/// Whether `c`'s last path component (`f` of `ns::f(int)`) is `name`:
/// the match when no full name matches.
pub fn is_short_match(c: &Candidate, name: &str, dso: Option<&str>) -> bool {
    let full = c.symbol.split('(').next().unwrap_or(&c.symbol);
    let last = full.rsplit("::").next().unwrap_or(full);
    last == name && dso.is_none_or(|d| c.dso == d || c.dso_path == d)
}

/// Names of `cands` close to `name` (containing it, or a few edits away),
/// at most five.
pub fn close_names(cands: &[Candidate], name: &str) -> Vec<String> {
    let lower = name.to_ascii_lowercase();
    let mut scored: Vec<(usize, &str)> = cands
        .iter()
        .filter_map(|c| {
            let l = c.symbol.to_ascii_lowercase();
            if l.contains(&lower) || (!l.is_empty() && lower.contains(&l)) {
                return Some((0, c.symbol.as_str()));
            }
            let full = l.split('(').next().unwrap_or(&l);
            let last = full.rsplit("::").next().unwrap_or(full);
            let d = edit_distance(&lower, &l).min(edit_distance(&lower, last));
            (d <= (name.len() / 3).max(2)).then_some((d, c.symbol.as_str()))
        })
        .collect();
    scored.sort_by_key(|&(d, _)| d);
    let mut out: Vec<String> = Vec::new();
    for (_, s) in scored {
        if !out.iter().any(|o| o == s) && out.len() < 5 {
            out.push(s.to_string());
        }
    }
    out
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Weight;

    fn place(symbol: &str, dso: &str, addr: u64, samples: u64) -> AddressSamples {
        AddressSamples {
            symbol: symbol.into(),
            kernel: false,
            dso_path: format!("/bin/{dso}"),
            dso: dso.into(),
            build_id: None,
            mapped_file: None,
            addr,
            weights: vec![Weight {
                samples,
                period: samples * 10,
            }],
            groups: Vec::new(),
        }
    }

    #[test]
    fn grouped_matched_and_suggested() {
        let places = [
            place("hot", "a", 0x10, 5),
            place("hot", "a", 0x14, 7),
            place("hot", "b", 0x10, 1),
            place("ns::cold(int)", "a", 0x40, 2),
        ];
        let c = candidates(&places, &[0]);
        assert_eq!(c.len(), 3);
        assert_eq!(
            (c[0].symbol.as_str(), c[0].dso.as_str(), c[0].samples),
            ("hot", "a", 12)
        );
        assert_eq!(c.iter().filter(|c| is_match(c, "hot", None)).count(), 2);
        assert_eq!(
            c.iter()
                .filter(|c| is_match(c, "hot", Some("/bin/b")))
                .count(),
            1
        );
        assert!(is_match(&c[1], "ns::cold", None));
        assert!(is_short_match(&c[1], "cold", None) && !is_match(&c[1], "cold", None));
        assert_eq!(close_names(&c, "hto"), ["hot"]);
        assert_eq!(close_names(&c, "cold"), ["ns::cold(int)"]);
        assert_eq!(close_names(&c, "clod"), ["ns::cold(int)"]);
        assert!(close_names(&c, "zzzzzzzz").is_empty());
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
