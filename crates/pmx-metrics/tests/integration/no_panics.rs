//! The parser and the evaluator never panic, whatever the text; what parses
//! prints back to text that parses to the same tree.

use pmx_metrics::formula::{Dialect, Formula};
use pmx_metrics::{Inputs, Library, Machine, Reading};
use proptest::prelude::*;

const TOKENS: &[&str] = &[
    "a",
    "b",
    "INST_RETIRED.ANY",
    "cycles",
    "topdown-fe-bound",
    r"topdown\-be\-bound",
    "cpu@X@",
    "cpu/event=0x3c/u",
    "#smt_on",
    "#NA",
    "#x",
    "duration_time",
    "1",
    "0",
    "2.5",
    "1e9",
    "0x10",
    ".5",
    "(",
    ")",
    "[0]",
    "[",
    "]",
    ",",
    "+",
    "-",
    "*",
    "/",
    "%",
    "<",
    ">",
    "<=",
    "> =",
    "==",
    "!=",
    "!",
    "&",
    "|",
    "&&",
    "||",
    "and",
    "or",
    "not",
    "if",
    "else",
    "min(",
    "max(",
    "d_ratio(",
    "if(",
    "source_count(",
    "has_event(",
    "strcmp_cpuid_str(",
    "x:c=1",
    "4K_Aliasing",
    "metric_TMA_..X(%)",
    "\\",
    "=",
    "é",
    " ",
];

static PARSED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn check(text: &str) {
    for d in [Dialect::Pmx, Dialect::Perf, Dialect::Intel] {
        let Ok(f) = Formula::parse(text, d) else {
            continue;
        };
        PARSED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let printed = f.to_string();
        let again = Formula::parse(&printed, Dialect::Pmx)
            .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}: {e}"));
        assert_eq!(again.to_string(), printed, "{text:?}");
        // Evaluate it as a metric over a few inputs; it must not panic.
        let mut lib = Library::new();
        if lib.define("m", &printed).is_ok() {
            let _ = lib.define("a", "m + 1");
            let mut inputs = Inputs::new();
            inputs
                .insert("b", Reading::count(5, 10, 3))
                .insert("cycles", Reading::count(0, 0, 0))
                .insert("INST_RETIRED.ANY", Reading::exact(f64::MAX));
            inputs.duration = Some(0.0);
            let machine = Machine {
                smt_on: Some(true),
                ..Machine::default()
            };
            let mut ev = lib.evaluator(&inputs, &machine);
            for (id, _) in lib.iter() {
                let _ = ev.metric(id);
                let _ = ev.threshold(id);
            }
            let ids: Vec<_> = lib.iter().map(|(id, _)| id).collect();
            let _ = lib.requirements(&ids, true, Some(&machine));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn token_soup(tokens in proptest::collection::vec(proptest::sample::select(TOKENS), 0..24),
                  glue in proptest::collection::vec(any::<bool>(), 24)) {
        let mut s = String::new();
        for (t, g) in tokens.iter().zip(&glue) {
            s.push_str(t);
            if *g {
                s.push(' ');
            }
        }
        check(&s);
    }

    #[test]
    fn any_text(s in "\\PC{0,40}") {
        check(&s);
    }
}

#[test]
fn soups_often_parse() {
    // A fixed pseudo-random soup: enough of it must parse for the property
    // tests above to exercise the evaluator.
    let mut x: u64 = 0x2545F4914F6CDD1D;
    let mut parsed = 0;
    for _ in 0..2_000 {
        let mut s = String::new();
        for _ in 0..(x % 7) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let t = TOKENS[(x % 20) as usize]; // names, numbers, '(' and ')'
            s.push_str(t);
            s.push_str([" + ", " * ", " if ", " else ", " "][(x >> 20) as usize % 5]);
        }
        s.push('1');
        let before = PARSED.load(std::sync::atomic::Ordering::Relaxed);
        check(&s);
        if PARSED.load(std::sync::atomic::Ordering::Relaxed) > before {
            parsed += 1;
        }
    }
    assert!(parsed > 300, "only {parsed} of 2000 parsed");
}

#[test]
fn pathological_inputs() {
    for s in [
        "(".repeat(10_000),
        ")".repeat(10_000),
        "-".repeat(10_000) + "a",
        "not ".repeat(10_000) + "a",
        vec!["a"; 20_000].join("+"),
        vec!["a"; 20_000].join(" if b else "),
        "min(".repeat(1_000),
        "a[0]".repeat(100),
        "\\".to_string(),
        "99999999999999999999999999999999999999 * 1e308 * 1e308".to_string(),
        "0x".to_string() + &"f".repeat(40),
        "1e999".to_string(),
    ] {
        check(&s);
    }
}
