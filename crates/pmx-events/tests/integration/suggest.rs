//! `Database::suggest` stops comparing a misspelt name with a known one as
//! soon as it cannot be among the closest: over the built-in tables of an
//! Intel and an AMD CPU, its answers to misspellings of their names (a
//! letter dropped, changed, added or swapped, a name cut short or run on,
//! short and long words) are those of a full comparison with every name.

use pmx_events::{name_key, Database, LoadOptions, Target};
use pmx_model::spec::closest;

/// The suggestions as made before the bounds: the three closest of
/// all the names, each key mapped back to the first name with it.
fn every_name(keys: &[(String, String)], typo: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for b in closest(&name_key(typo), keys.iter().map(|(k, _)| k.as_str()), 3) {
        let (_, n) = keys.iter().find(|(k, _)| *k == b).unwrap();
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    out
}

/// Misspellings of `name`: each edit once, near its middle, and the name
/// cut to a third and to a half (lengths at the bound's edge).
fn typos(name: &str) -> Vec<String> {
    let c: Vec<char> = name.chars().collect();
    let m = c.len() / 2;
    let s = |v: &[char]| v.iter().collect::<String>();
    let mut out = vec![
        s(&[&c[..m], &c[m + 1..]].concat()),
        s(&[&c[..m], &['x'][..], &c[m + 1..]].concat()),
        s(&[&c[..m], &['q'][..], &c[m..]].concat()),
        s(&c[..c.len() / 3]),
        s(&c[..m]),
        format!("{name}_extra"),
    ];
    if m + 1 < c.len() {
        let mut t = c.clone();
        t.swap(m, m + 1);
        out.push(s(&t));
    }
    out
}

fn same_as_every_name(cpu: &str) -> usize {
    let target = Target {
        cpu: cpu.parse().unwrap(),
        host: false,
    };
    let opts = LoadOptions {
        no_libpfm: true,
        sysfs_root: Some("/nonexistent-sysfs".into()),
        ..LoadOptions::default()
    };
    let db = Database::load(target, &opts);
    let names: Vec<String> = db.sources().iter().flat_map(|s| s.names()).collect();
    assert!(names.len() > 100, "{cpu}: {} names", names.len());
    let mut words: Vec<String> = ["x", "cy", "cycels", "instructons", "task-clok"]
        .map(String::from)
        .to_vec();
    words.push("a".repeat(90));
    // A spread of the table's lengths and prefixes (the full comparison
    // takes a debug build a tenth of a second per word).
    for n in names.iter().step_by(names.len() / 12) {
        words.extend(typos(n));
    }
    // Every name's key, made once (the names do not change between words).
    let keys: Vec<(String, String)> = names.iter().map(|n| (name_key(n), n.clone())).collect();
    let mut suggested = 0;
    for w in &words {
        let got = db.suggest(w);
        assert_eq!(got, every_name(&keys, w), "{cpu}: {w}");
        suggested += usize::from(!got.is_empty());
    }
    suggested
}

// One test per CPU, so that the harness runs the two full comparisons
// (the slow half, a tenth of a second per word in a debug build) on both
// cores. Most misspellings have suggestions: a comparison of empty lists
// would prove nothing.

#[test]
fn a_length_bound_keeps_every_suggestion_on_intel() {
    let n = same_as_every_name("GenuineIntel-6-55-4");
    assert!(n > 40, "{n} misspellings had suggestions");
}

#[test]
fn a_length_bound_keeps_every_suggestion_on_amd() {
    let n = same_as_every_name("AuthenticAMD-25-11-1");
    assert!(n > 40, "{n} misspellings had suggestions");
}
