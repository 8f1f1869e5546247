// perf_diff.rs: a Rust program (collections, sorting, formatting) for
// SECONDS (argv[1]); built with rustc -O -g.
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

#[inline(never)]
fn round(x: &mut u64) -> usize {
    let mut words: BTreeMap<String, u64> = BTreeMap::new();
    let mut counts: HashMap<u64, u64> = HashMap::new();
    let mut v: Vec<u64> = Vec::with_capacity(2000);
    for _ in 0..2000 {
        let r = next(x) % 100_000;
        *words.entry(format!("w{}", r % 3000)).or_default() += r;
        *counts.entry(r % 997).or_default() += 1;
        v.push(r);
    }
    v.sort_unstable();
    let mut keys: Vec<&String> = words.keys().collect();
    keys.sort_by(|a, b| a.len().cmp(&b.len()).then(b.cmp(a)));
    keys.len() + counts.len() + v[v.len() / 2] as usize
}

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.8);
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let (mut x, mut total) = (88172645463325252u64, 0usize);
    while Instant::now() < end {
        total += round(&mut x);
    }
    println!("{total}");
}
