//! pmx against perf on real programs: each program is recorded twice
//! (`pmx record -g -F 4000` and `perf record -e cpu-clock -g -F 4000`),
//! and each of the two files is read by both tools three ways:
//!
//! - **self** (`perf report --no-children --sort dso,sym` against `pmx
//!   report --sort dso,symbol`): every row at ≥ 0.5% on either side is on
//!   the other with the same binary and symbol, shares within 0.15 points;
//! - **children** (`--children`): the top 20 rows of each side are on the
//!   other, inclusive shares within 0.5 points;
//! - **script** (`perf script` against `pmx script`): identical lines,
//!   except where a rule of [`NORMALISE`] (each a difference the README
//!   lists, with its reason) says why not.
//!
//! The two tools read the same file, so the shares agree exactly but for
//! naming and rounding: nothing here is statistical. The programs (sources
//! in `tests/programs/`) come from Debian packages or are built here:
//! Python 3, gcc's `cc1`, a C++ program built by g++, `xz`, `sqlite3`,
//! `node --perf-basic-prof`, a Rust program and a Go program. A missing
//! one (or perf) skips that program with a `SKIP:` line. Each test prints
//! its figures (`cargo test -p pmx-cli --test perf_diff -- --nocapture`,
//! docs/PERF_DIFF.md) and, on failure, a table of the rows that differ.

mod common;
use common::PMX;
use pmx_testkit::{perf, text};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// How long each program runs (seconds, for those that take a duration).
const SECONDS: &str = "0.8";
/// Self rows at or above this share (either side) are compared.
const SELF_FLOOR: f64 = 0.5;
/// Largest difference of a self share, in percentage points.
const SELF_TOLERANCE: f64 = 0.15;
/// Rows of the children view compared: the top N of each side.
const CHILDREN_TOP: usize = 20;
/// Largest difference of a children share, in percentage points.
const CHILDREN_TOLERANCE: f64 = 0.5;

/// A difference in `pmx script` lines that the README lists as deliberate:
/// its name (as the README says it) and whether a (pmx, perf) line pair
/// differs only by it.
type Rule = (&'static str, fn(&str, &str) -> bool);

/// The deliberate differences of `pmx script` from `perf script`.
const NORMALISE: &[Rule] = &[
    (
        "a function's address as a C++ template argument is written otherwise than libiberty writes it",
        function_address_arguments,
    ),
    (
    "pmx names PLT entries perf 6.1 does not or names otherwise (an IFUNC slot, `.plt.got`, `.plt.sec`, PLT0)",
        plt_perf_cannot_name,
    ),
];

/// The same line once every template argument that is a function's
/// address (`&f`, `&(f(int))`, `&(int f<…>(…))`: libiberty's forms, which
/// cpp_demangle's short form does not always follow) is cut to `&`.
fn function_address_arguments(x: &str, y: &str) -> bool {
    fn cut(s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        let mut chars = s.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            out.push(c);
            let opens = c == '<' || (c == ' ' && s[..i].ends_with(','));
            if opens && s[i + 1..].starts_with('&') {
                out.push('&');
                chars.next();
                // Skip to the argument's end: `,` or `>` at depth 0.
                let mut depth = 0i32;
                while let Some(&(_, d)) = chars.peek() {
                    match d {
                        '<' | '(' => depth += 1,
                        '>' | ')' if depth > 0 => depth -= 1,
                        ',' | '>' if depth == 0 => break,
                        _ => {}
                    }
                    chars.next();
                }
            }
        }
        out
    }
    x.contains('&') && x != y && cut(x) == cut(y)
}

/// The same frame (address and binary), where pmx names a PLT entry
/// (`NAME@plt`, PLT0 `.plt`) that perf 6.1 prints as `@plt` (an
/// `IRELATIVE` slot), `[unknown]` (a table it does not read) or after
/// another function (its rule pairs entries with `.rela.plt` in order,
/// which libc's `IRELATIVE` slots break: `_dl_allocate_tls@plt` where the
/// entry jumps through memchr's slot). pmx's names are objdump's
/// (`pmx-symbols/tests/integration/plt.rs`).
fn plt_perf_cannot_name(x: &str, y: &str) -> bool {
    let ((sx, dx), (sy, dy)) = (frame_parts(x), frame_parts(y));
    let address = |l: &str| l.trim_start().split_once(' ').map(|(a, _)| a.to_string());
    dx == dy
        && !dx.is_empty()
        && address(x) == address(y)
        && (sx.ends_with("@plt") || sx == ".plt")
        && (sy.ends_with("@plt") || sy == "[unknown]")
}

/// The directory of the programs' sources.
fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs")
}

/// `name` on `$PATH` (or the path itself when it has a slash).
fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Path::new(name).is_file().then(|| name.into());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Run a build step: its output, or a panic with its messages.
fn build(cmd: &mut Command) {
    let o = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "{cmd:?} failed: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// A program of the suite: the tools it needs (skipped without them), how
/// to make its command line in a directory, and a binary whose name
/// contains `lands_in` that must hold at least a fifth of the self time
/// (so the samples are where the program says they are).
struct Program<'a> {
    name: &'static str,
    needs: &'a [&'a str],
    prepare: fn(&Path) -> Vec<String>,
    lands_in: &'static str,
    /// Some samples must be in JIT code named by a perf map.
    jit: bool,
}

fn s(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| p.to_string()).collect()
}

fn path(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// Debian's interpreter when there is one, else the first on `$PATH`.
fn python3() -> &'static str {
    if Path::new("/usr/bin/python3").is_file() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

fn python(_: &Path) -> Vec<String> {
    let script = programs().join("json_dumps.py");
    vec![python3().into(), path(&script), SECONDS.into()]
}

/// A C file that keeps cc1 busy for about a second at -O2: functions with
/// loops, switches, structs and calls for the optimiser to work on.
fn generated_c(n: usize) -> String {
    let mut c = String::from("#include <stddef.h>\n");
    for i in 0..n {
        let prev = i.saturating_sub(1);
        let _ = write!(
            c,
            "struct s{i} {{ int a; long b; double c[4]; }};\n\
             static long helper{i}(const struct s{i} *p, long n) {{\n\
             \tlong acc = {i};\n\
             \tfor (long k = 0; k < n; k++) {{\n\
             \t\tswitch ((k + p->a) % 5) {{\n\
             \t\tcase 0: acc += p->b * k; break;\n\
             \t\tcase 1: acc ^= (long)(p->c[k & 3] * {i}.5); break;\n\
             \t\tcase 2: acc -= k << 2; break;\n\
             \t\tcase 3: acc = acc * 31 + {i}; break;\n\
             \t\tdefault: acc += (acc >> 3) ^ k;\n\
             \t\t}}\n\
             \t}}\n\
             \treturn acc;\n\
             }}\n\
             long func{i}(long n) {{\n\
             \tstruct s{i} v = {{ .a = {i}, .b = n, .c = {{ 1.0, 2.0, 3.0, {i}.0 }} }};\n\
             \tlong r = 0;\n\
             \tfor (int j = 0; j < 4; j++) r += helper{i}(&v, n + j);\n\
             \treturn r + (n > {i} ? func{prev}(n - 1) : 0);\n\
             }}\n"
        );
    }
    c
}

fn cc1(dir: &Path) -> Vec<String> {
    let src = dir.join("generated.c");
    std::fs::write(&src, generated_c(50)).unwrap();
    let obj = dir.join("generated.o");
    s(&["gcc", "-O2", "-c", &path(&src), "-o", &path(&obj)])
}

fn cxx(dir: &Path) -> Vec<String> {
    let bin = dir.join("templates");
    build(
        Command::new("g++")
            .args(["-O2", "-g", "-o"])
            .arg(&bin)
            .arg(programs().join("templates.cpp")),
    );
    vec![path(&bin), SECONDS.into()]
}

/// Text with the repetition of real data: words from a small vocabulary
/// with numbers, from a fixed pseudo-random sequence (`len` bytes).
fn generated_text(len: usize) -> Vec<u8> {
    const WORDS: [&str; 8] = [
        "alpha", "beta", "gamma", "delta", "sample", "report", "kernel", "cache",
    ];
    let mut x: u64 = 1;
    let mut out = Vec::with_capacity(len + 16);
    while out.len() < len {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let _ = write!(
            Bytes(&mut out),
            "{}{} ",
            WORDS[(x >> 60) as usize & 7],
            (x >> 33) % 1000
        );
    }
    out
}

/// `fmt::Write` into a byte vector.
struct Bytes<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Bytes<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

fn xz(dir: &Path) -> Vec<String> {
    let data = dir.join("data.txt");
    std::fs::write(&data, generated_text(800_000)).unwrap();
    s(&["xz", "-6", "-T1", "-c", "-k", &path(&data)])
}

fn sqlite(_: &Path) -> Vec<String> {
    let sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1500000) \
               SELECT sum(x * x % 7), count(*) FROM c;";
    s(&["sqlite3", ":memory:", sql])
}

fn node(_: &Path) -> Vec<String> {
    let script = programs().join("jit.js");
    s(&["node", "--perf-basic-prof", &path(&script), SECONDS])
}

fn rust(dir: &Path) -> Vec<String> {
    let bin = dir.join("rswork");
    build(
        Command::new("rustc")
            .args(["-O", "-g", "-o"])
            .arg(&bin)
            .arg(programs().join("work.rs")),
    );
    vec![path(&bin), SECONDS.into()]
}

fn go(dir: &Path) -> Vec<String> {
    let bin = dir.join("gowork");
    build(
        Command::new("go")
            .args(["build", "-o"])
            .arg(&bin)
            .arg(programs().join("work.go"))
            .env("GOTOOLCHAIN", "local")
            .env("GOFLAGS", "")
            .current_dir(dir),
    );
    vec![path(&bin), SECONDS.into()]
}

/// One side's reading of a file: rows by (binary, symbol) → share.
type Rows = BTreeMap<(String, String), f64>;

/// `pmx report --sort dso,symbol [--children] --json` of `file`: the
/// cpu-clock rows, self or children shares.
fn pmx_rows(file: &Path, children: bool) -> Rows {
    let mut args = vec!["report", "-q", "--sort", "dso,symbol", "--json", "-i"];
    args.push(file.to_str().unwrap());
    if children {
        args.push("--children");
    }
    let o = run(Command::new(PMX).args(&args));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("pmx report --json");
    let mut rows = Vec::new();
    for e in v["events"].as_array().unwrap() {
        for r in e["rows"].as_array().unwrap() {
            let key = (
                r["dso"].as_str().unwrap_or("?").to_string(),
                r["symbol"].as_str().unwrap_or("?").to_string(),
            );
            let share = r[if children { "children" } else { "overhead" }]
                .as_f64()
                .unwrap();
            rows.push((key, share));
        }
    }
    numbered(rows)
}

/// Rows by key; rows with the same binary and symbol (two functions of
/// one name: C++ overloads shown without parameters, local symbols of two
/// files) get `#2`, `#3`… after the name, largest share first, on both
/// sides alike.
fn numbered(mut rows: Vec<((String, String), f64)>) -> Rows {
    rows.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    let mut out = Rows::new();
    let mut n = 0;
    for (i, (key, share)) in rows.iter().enumerate() {
        n = if i > 0 && rows[i - 1].0 == *key {
            n + 1
        } else {
            1
        };
        let key = match n {
            1 => key.clone(),
            n => (key.0.clone(), format!("{} #{n}", key.1)),
        };
        out.insert(key, *share);
    }
    out
}

/// `perf report --stdio -q -g none -t TAB --sort dso,sym` of `file`,
/// `--children` or `--no-children`: its rows, the `[.]`/`[k]` level taken
/// off the symbol.
fn perf_rows(file: &Path, children: bool) -> Rows {
    let view = if children {
        "--children"
    } else {
        "--no-children"
    };
    let args = [
        "report", view, "--sort", "dso,sym", "--stdio", "-q", "-g", "none", "-t", "\t",
    ];
    let o = perf::on_file(&args, file);
    assert!(o.status.success(), "perf {args:?}: {}", text(&o.stderr));
    let mut rows = Vec::new();
    for line in text(&o.stdout).lines() {
        let f: Vec<&str> = line.split('\t').map(str::trim).collect();
        if f.len() < 3 {
            continue;
        }
        let Ok(share) = f[0].trim_end_matches('%').parse::<f64>() else {
            continue;
        };
        let sym = f[f.len() - 1];
        let sym = match sym.as_bytes() {
            [b'[', _, b']', b' ', ..] => &sym[4..],
            _ => sym,
        };
        let dso = f[f.len() - 2].to_string();
        rows.push(((dso, sym.to_string()), share));
    }
    numbered(rows)
}

/// A command's output; panics when it cannot start or fails.
fn run(cmd: &mut Command) -> Output {
    let o = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(o.status.success(), "{cmd:?}: {}", text(&o.stderr));
    o
}

/// One comparison's outcome: what was compared, what agreed, and a table
/// of what did not.
#[derive(Default)]
struct Outcome {
    compared: usize,
    agreeing: usize,
    table: String,
}

/// A share, or `-` where the row is absent.
fn share(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.2}"))
}

/// Why a pmx name and a perf name for the same thing differ, as far as
/// the names tell (the catalogue the failure tables are grouped by).
fn cause(ours: &str, theirs: &str) -> &'static str {
    // Without the `#N` of same-named rows.
    let plain = |s: &str| match s.rsplit_once(" #") {
        Some((name, n)) if n.bytes().all(|b| b.is_ascii_digit()) => name.to_string(),
        _ => s.to_string(),
    };
    let (ours, theirs) = (&plain(ours)[..], &plain(theirs)[..]);
    let hexish = |s: &str| {
        let h = s.strip_prefix("0x").unwrap_or(s);
        !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit())
    };
    let unversioned = |s: &str| s.split('@').next().unwrap_or(s).to_string();
    if theirs.ends_with("@plt") || ours == "_init" {
        "PLT entry (perf: NAME@plt; pmx: _init, [unknown] or an address)"
    } else if ours.starts_with("perf-") && ours.ends_with(".map") || theirs.starts_with("[JIT]") {
        "JIT map binary (perf: [JIT] tid N; pmx: perf-N.map)"
    } else if hexish(ours) && hexish(theirs) {
        "unresolved address printed differently"
    } else if ours.contains('@') && unversioned(ours) == unversioned(theirs) {
        "symbol version (@ / @@) chosen differently"
    } else if ours.starts_with("_Z") && !theirs.starts_with("_Z") {
        "C++ name perf demangles and pmx leaves mangled"
    } else if ours.starts_with("{virtual") || ours.contains(" thunk(") {
        "C++ thunk demangled in another style"
    } else if ours.len() > theirs.len() && (ours.contains('(') || ours.contains("[clone")) {
        "C++ demangling (pmx: parameter lists, return types, clone suffixes)"
    } else if ours == "[kernel.kallsyms]" && theirs == "[unknown]" {
        "kernel address outside the kernel's map (perf: [unknown] binary)"
    } else {
        "other"
    }
}

/// A row one side has and the other lacks or shares differently.
struct Miss<'a> {
    key: &'a (String, String),
    ours: Option<f64>,
    theirs: Option<f64>,
}

/// The rows of `keys` on both sides: within `tolerance` points, else in
/// the table. A row only pmx has and one only perf has with the same
/// share (and binary or symbol) are shown as a pair, with the cause their
/// names suggest.
fn compare_rows<'a>(
    keys: impl IntoIterator<Item = &'a (String, String)>,
    ours: &Rows,
    theirs: &Rows,
    tolerance: f64,
) -> Outcome {
    let mut out = Outcome::default();
    let mut keys: Vec<&(String, String)> = keys.into_iter().collect();
    keys.sort();
    keys.dedup();
    // Largest first, as a report reads.
    let top = |k: &(String, String)| -> f64 {
        let a = ours.get(k).copied().unwrap_or(0.0);
        a.max(theirs.get(k).copied().unwrap_or(0.0))
    };
    keys.sort_by(|a, b| top(b).total_cmp(&top(a)));
    let mut missed: Vec<Miss<'_>> = Vec::new();
    for key in keys {
        out.compared += 1;
        let (a, b) = (ours.get(key).copied(), theirs.get(key).copied());
        match (a, b) {
            (Some(x), Some(y)) if (x - y).abs() <= tolerance + 1e-9 => out.agreeing += 1,
            _ => missed.push(Miss {
                key,
                ours: a,
                theirs: b,
            }),
        }
    }
    // Pair pmx-only rows with perf-only rows of the same share (and
    // binary or symbol), a pair whose names suggest a cause first.
    let mut lines: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut used = vec![false; missed.len()];
    let names = |p: &Miss<'_>, q: &Miss<'_>| {
        let (o, t) = if p.ours.is_some() { (p, q) } else { (q, p) };
        match cause(&o.key.1, &t.key.1) {
            "other" => cause(&o.key.0, &t.key.0),
            c => c,
        }
    };
    for i in 0..missed.len() {
        if used[i] {
            continue;
        }
        let m = &missed[i];
        let alone = m.ours.is_none() != m.theirs.is_none();
        let value = |p: &Miss<'_>| p.ours.or(p.theirs).unwrap_or(0.0);
        let mut candidates: Vec<usize> = (0..missed.len())
            .filter(|&j| {
                let n = &missed[j];
                alone
                    && !used[j]
                    && n.ours.is_some() == m.theirs.is_some()
                    && n.theirs.is_some() == m.ours.is_some()
                    && (n.key.0 == m.key.0 || n.key.1 == m.key.1)
                    && (value(n) - value(m)).abs() < 0.011
            })
            .collect();
        candidates.sort_by_key(|&j| names(m, &missed[j]) == "other");
        let partner = candidates.first().copied();
        used[i] = true;
        let row = |who: &str, k: &(String, String), v: Option<f64>, w: Option<f64>| {
            format!(
                "      {who:<4} {:<28} {:<60} {:>7} {:>7}",
                clip(&k.0, 28),
                clip(&k.1, 60),
                share(v),
                share(w)
            )
        };
        match partner {
            Some(j) => {
                used[j] = true;
                let n = &missed[j];
                let (o, t) = if m.ours.is_some() { (m, n) } else { (n, m) };
                let text = format!(
                    "{}\n{}",
                    row("pmx", o.key, o.ours, None),
                    row("perf", t.key, None, t.theirs)
                );
                lines.entry(names(m, n)).or_default().push(text);
            }
            None => {
                // A partner below the floor (not compared) may still say why.
                let (other, own) = if m.ours.is_some() {
                    (theirs, ours)
                } else {
                    (ours, theirs)
                };
                let below = (m.ours.is_none() != m.theirs.is_none())
                    .then(|| {
                        other.iter().find(|(k, v)| {
                            !own.contains_key(*k)
                                && (k.0 == m.key.0 || k.1 == m.key.1)
                                && (**v - value(m)).abs() < 0.011
                        })
                    })
                    .flatten();
                let why = match (m.ours, m.theirs, below) {
                    (Some(_), Some(_), _) => "share differs",
                    (None, _, Some((k, _))) => cause(&k.1, &m.key.1),
                    (_, None, Some((k, _))) => cause(&m.key.1, &k.1),
                    (None, _, None) => cause("", &m.key.1),
                    _ => cause(&m.key.1, ""),
                };
                let who = if m.ours.is_some() { "pmx" } else { "perf" };
                let mut text = row(who, m.key, m.ours, m.theirs);
                if let Some((k, v)) = below {
                    let (a, b) = if m.ours.is_some() {
                        ("perf", (None, Some(*v)))
                    } else {
                        ("pmx", (Some(*v), None))
                    };
                    text = format!("{text}\n{}", row(a, k, b.0, b.1));
                }
                lines.entry(why).or_default().push(text);
            }
        }
    }
    for (why, rows) in lines {
        let _ = writeln!(out.table, "    {why}:");
        for r in rows {
            let _ = writeln!(out.table, "{r}");
        }
    }
    out
}

/// At most `n` characters of `s` (with `…` when cut).
fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

fn self_view(file: &Path) -> Outcome {
    let (ours, theirs) = (pmx_rows(file, false), perf_rows(file, false));
    let keys = ours
        .iter()
        .chain(&theirs)
        .filter(|(_, &v)| v >= SELF_FLOOR)
        .map(|(k, _)| k);
    compare_rows(keys, &ours, &theirs, SELF_TOLERANCE)
}

/// The keys of the `n` largest shares.
fn top(rows: &Rows, n: usize) -> Vec<&(String, String)> {
    let mut v: Vec<(&(String, String), f64)> = rows.iter().map(|(k, &s)| (k, s)).collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    v.into_iter().take(n).map(|(k, _)| k).collect()
}

/// A row of the children view that the README lists as shown differently
/// on purpose: an address no symbol covers. pmx keeps one row for it (at
/// its address in the binary, as in the self view); perf makes two, the
/// leaf samples at the binary's address and the call chain entries at the
/// process's address (so it counts those samples twice). In no mapping at
/// all (`[unknown]`, a garbage frame of a frame-pointer chain such as
/// `0x8000000000000006`) perf can print two rows of the same address,
/// numbered `#2` here, whose shares add up to pmx's one row.
fn unresolved((_, symbol): &(String, String)) -> bool {
    let symbol = match symbol.rsplit_once(" #") {
        Some((name, n)) if n.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => symbol,
    };
    let hex = symbol.strip_prefix("0x").unwrap_or(symbol);
    !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

fn children_view(file: &Path) -> Outcome {
    let named = |mut rows: Rows| {
        rows.retain(|k, _| !unresolved(k));
        rows
    };
    let (ours, theirs) = (named(pmx_rows(file, true)), named(perf_rows(file, true)));
    let keys = top(&ours, CHILDREN_TOP)
        .into_iter()
        .chain(top(&theirs, CHILDREN_TOP));
    compare_rows(keys, &ours, &theirs, CHILDREN_TOLERANCE)
}

/// The part of two lines that differs (common prefix and suffix removed,
/// on character boundaries).
fn differing<'a>(a: &'a str, b: &'a str) -> (&'a str, &'a str) {
    let pre = a
        .char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i);
    let (a2, b2) = (&a[pre..], &b[pre..]);
    let suf = a2
        .chars()
        .rev()
        .zip(b2.chars().rev())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum::<usize>();
    (&a2[..a2.len() - suf], &b2[..b2.len() - suf])
}

/// `perf script` output split into samples: a line that does not start
/// with a tab and the call chain lines under it (empty lines dropped).
fn samples(out: &str) -> Vec<Vec<&str>> {
    let mut v: Vec<Vec<&str>> = Vec::new();
    for line in out.lines().filter(|l| !l.is_empty()) {
        match v.last_mut() {
            Some(s) if line.starts_with('\t') => s.push(line),
            _ => v.push(vec![line]),
        }
    }
    v
}

/// The symbol and binary of a `perf script` call chain line
/// (`\tADDR SYM+0xOFF (DSO)`), or the whole line and nothing.
fn frame_parts(line: &str) -> (&str, &str) {
    let rest = line.trim_start().split_once(' ').map_or(line, |(_, r)| r);
    match rest.rsplit_once(" (") {
        Some((symoff, dso)) => (
            symoff.rsplit_once("+0x").map_or(symoff, |(s, _)| s),
            dso.trim_end_matches(')'),
        ),
        None => (line, ""),
    }
}

/// Differing script lines grouped by cause, then by what differs in
/// them: a count and the first example of each kind.
#[derive(Default)]
struct Kinds(BTreeMap<&'static str, KindsOf>);

/// The kinds of one cause: (pmx part, perf part) → (count, example).
type KindsOf = BTreeMap<(String, String), (usize, String)>;

impl Kinds {
    fn add(&mut self, why: &'static str, (dx, dy): (&str, &str), x: &str, y: &str) {
        let g = self
            .0
            .entry(why)
            .or_default()
            .entry((dx.to_string(), dy.to_string()))
            .or_insert_with(|| {
                (
                    0,
                    format!("pmx:  {}\n        perf: {}", clip(x, 220), clip(y, 220)),
                )
            });
        g.0 += 1;
    }

    /// A line pair that differs: its cause from the frames' names.
    fn line(&mut self, x: &str, y: &str) {
        let ((sx, dx), (sy, dy)) = (frame_parts(x), frame_parts(y));
        let why = match cause(sx, sy) {
            "other" if dx != dy => cause(dx, dy),
            "unresolved address printed differently" if dx != dy => cause(dx, dy),
            c => c,
        };
        self.add(why, differing(x, y), x, y);
    }

    fn table(self, out: &mut String) {
        for (why, kinds) in self.0 {
            let total: usize = kinds.values().map(|k| k.0).sum();
            let _ = writeln!(out, "    {why}: {total} lines, {} kinds", kinds.len());
            let mut kinds: Vec<_> = kinds.into_iter().collect();
            kinds.sort_by_key(|g| std::cmp::Reverse(g.1 .0));
            for ((dx, dy), (n, example)) in kinds.iter().take(4) {
                let _ = writeln!(
                    out,
                    "      {n:>6}× pmx `{}` perf `{}`\n        {example}",
                    clip(dx, 70),
                    clip(dy, 70)
                );
            }
        }
    }
}

/// Two samples' lines: equal ones agree, others go to `kinds`, except
/// those whose symbols are the same mangled name on both sides
/// (`same_symbol(line)`): the demangler's spelling, not attribution, which
/// go to `spelled`; a chain one side has longer is a kind of its own.
fn compare_sample(
    (a, b): (&[&str], &[&str]),
    same_symbol: &dyn Fn(usize) -> bool,
    out: &mut Outcome,
    kinds: &mut Kinds,
    spelled: &mut Kinds,
) {
    out.compared += a.len().max(b.len());
    for (j, (x, y)) in a.iter().zip(b).enumerate() {
        if x == y || NORMALISE.iter().any(|(_, same)| same(x, y)) {
            out.agreeing += 1;
        } else if same_symbol(j) {
            spelled.add(SPELLED, differing(x, y), x, y);
        } else {
            kinds.line(x, y);
        }
    }
    if a.len() != b.len() {
        let n = a.len().min(b.len());
        let what = format!("chain of {} frames", a.len() - 1);
        let theirs = format!("chain of {} frames", b.len() - 1);
        let first = |v: &[&str]| v.get(n).copied().unwrap_or("(end)").to_string();
        kinds.add("call chain length", (&what, &theirs), &first(a), &first(b));
    }
}

/// The kind of a line whose C++ name only the demanglers spell apart.
const SPELLED: &str = "C++ name spelled otherwise than libiberty (the same mangled symbol on both sides), over the bound of 1 line in 25";

/// `pmx script` against `perf script`, line by line. A line whose symbol
/// is the same mangled name on both sides (`pmx script --demangle none`,
/// `perf script --no-demangle`) and only spelled otherwise once
/// demangled is the same attribution: such lines agree up to 1 in 25 (the
/// bound `node_and_cc1_names_are_libibertys` holds pmx's demangler to
/// against libiberty on node, 3.6% of its names today, documented in
/// docs/report.md); beyond it they are a failure of their own kind.
fn script_view(file: &Path) -> Outcome {
    let pmx_script = |demangle: &str| {
        let o = run(Command::new(PMX)
            .args(["script", "--demangle", demangle, "-i"])
            .arg(file));
        text(&o.stdout)
    };
    let perf_script = |args: &[&str]| {
        let o = perf::on_file(args, file);
        assert!(o.status.success(), "perf script: {}", text(&o.stderr));
        text(&o.stdout)
    };
    let (ours, theirs) = (pmx_script("short"), perf_script(&["script"]));
    let (ours_m, theirs_m) = (
        pmx_script("none"),
        perf_script(&["script", "--no-demangle"]),
    );
    let (a, b) = (samples(&ours), samples(&theirs));
    let (am, bm) = (samples(&ours_m), samples(&theirs_m));
    let mut out = Outcome::default();
    let (mut kinds, mut spelled) = (Kinds::default(), Kinds::default());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let same_symbol = |j: usize| {
            let (mx, my) = (
                am.get(i).and_then(|s| s.get(j)),
                bm.get(i).and_then(|s| s.get(j)),
            );
            matches!((mx, my), (Some(mx), Some(my)) if mx == my && mx.contains("_Z"))
        };
        compare_sample((x, y), &same_symbol, &mut out, &mut kinds, &mut spelled);
    }
    let n: usize = spelled
        .0
        .values()
        .flat_map(|k| k.values())
        .map(|k| k.0)
        .sum();
    if n * 25 <= out.compared {
        out.agreeing += n;
    } else {
        kinds.0.extend(spelled.0);
    }
    if a.len() != b.len() {
        let _ = writeln!(
            out.table,
            "    sample counts differ: pmx {}, perf {}",
            a.len(),
            b.len()
        );
    }
    kinds.table(&mut out.table);
    out
}

/// Record `argv` into `out` with pmx or with perf (`false` after a
/// `SKIP` line when perf cannot sample here).
fn record(with_pmx: bool, out: &Path, argv: &[String], dir: &Path) -> bool {
    let mut cmd = if with_pmx {
        let mut c = Command::new(PMX);
        c.args(["record", "-g", "-F", "4000", "-o"]);
        c
    } else {
        let mut c = Command::new("perf");
        c.args(["record", "-q", "-e", "cpu-clock", "-g", "-F", "4000", "-o"]);
        c
    };
    let o = cmd
        .arg(out)
        .arg("--")
        .args(argv)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .expect("start the recorder");
    if !o.status.success() && !with_pmx {
        pmx_testkit::skip(format_args!("perf record failed: {}", text(&o.stderr)));
        return false;
    }
    assert!(o.status.success(), "pmx record: {}", text(&o.stderr));
    true
}

/// The pids of a file's samples (for the JIT maps they leave in /tmp).
fn pids(file: &Path) -> Vec<u32> {
    let o = run(Command::new(PMX)
        .args(["report", "-q", "--json", "--sort", "pid", "-i"])
        .arg(file));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut p: Vec<u32> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["rows"].as_array().unwrap().clone())
        .filter_map(|r| r["pid"].as_u64().map(|x| x as u32))
        .collect();
    p.sort_unstable();
    p.dedup();
    p
}

/// Removes the `/tmp/perf-PID.map` files of the recorded processes.
struct JitMaps(Vec<u32>);

impl Drop for JitMaps {
    fn drop(&mut self) {
        if std::env::var_os("PMX_PERF_DIFF_KEEP").is_some() {
            return;
        }
        for pid in &self.0 {
            let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
        }
    }
}

/// With `$PMX_PERF_DIFF_KEEP` set to a directory, copy the recordings
/// there (`PROGRAM.pmx.data`, `PROGRAM.perf.data`) to look at them after
/// the test; the programs built and the JIT maps of /tmp are then kept
/// too, so the files still name their functions (`bench/programs.sh`).
fn keep(program: &str, files: &[(&str, PathBuf)]) {
    let Some(dir) = std::env::var_os("PMX_PERF_DIFF_KEEP") else {
        return;
    };
    let program = program.replace(' ', "_");
    for (name, f) in files {
        let to = Path::new(&dir).join(format!("{program}.{name}"));
        std::fs::copy(f, &to).unwrap_or_else(|e| panic!("copy to {}: {e}", to.display()));
    }
}

/// The share of self time in binaries whose name contains `part`.
fn landed(file: &Path, part: &str) -> f64 {
    pmx_rows(file, false)
        .iter()
        .filter(|((dso, _), _)| dso.contains(part))
        .map(|(_, v)| v)
        .sum()
}

fn check(p: &Program<'_>) {
    if !perf::require(p.name) {
        return;
    }
    if let Some(tool) = p.needs.iter().find(|t| which(t).is_none()) {
        pmx_testkit::skip(format_args!("{}: `{tool}` is not installed", p.name));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // Kept with the recordings (see `keep`), else removed at the end.
    let kept = std::env::var_os("PMX_PERF_DIFF_KEEP")
        .and_then(|_| tempfile::TempDir::with_prefix("pmx-perf-diff-").ok())
        .map(|d| d.keep());
    let dir = kept.as_deref().unwrap_or(tmp.path());
    let argv = (p.prepare)(dir);
    let files = [
        ("pmx.data", dir.join("pmx.data")),
        ("perf.data", dir.join("perf.data")),
    ];
    let started = std::time::Instant::now();
    for (i, (_, f)) in files.iter().enumerate() {
        if !record(i == 0, f, &argv, dir) {
            return;
        }
    }
    let _maps = JitMaps(files.iter().flat_map(|(_, f)| pids(f)).collect());
    keep(p.name, &files);
    let mut figures = String::new();
    let mut failures = String::new();
    for (name, f) in &files {
        let jit = landed(f, "perf-") + landed(f, "[JIT]");
        if p.jit && jit == 0.0 {
            let _ = writeln!(failures, "{} {name}: no sample in JIT code", p.name);
        }
        let share = landed(f, p.lands_in);
        if share < 20.0 {
            let _ = writeln!(
                failures,
                "{} {name}: only {share:.1}% of the self time is in `{}`",
                p.name, p.lands_in
            );
        }
        for (view, outcome) in [
            ("self", self_view(f)),
            ("children", children_view(f)),
            ("script", script_view(f)),
        ] {
            let _ = writeln!(
                figures,
                "| {} | {name} | {view} | {} | {} |",
                p.name, outcome.compared, outcome.agreeing
            );
            if outcome.agreeing < outcome.compared || !outcome.table.is_empty() {
                let head = match view {
                    "script" => "differing lines (kinds, most frequent first)".to_string(),
                    _ => format!(
                        "{:<28} {:<60} {:>7} {:>7}",
                        "binary", "symbol", "pmx", "perf"
                    ),
                };
                let _ = write!(
                    failures,
                    "{} {name} {view}: {} of {} agree\n    {head}\n{}",
                    p.name, outcome.agreeing, outcome.compared, outcome.table
                );
            }
        }
    }
    println!(
        "{}: {:.1} s\n| program | file | comparison | compared | agreeing |\n{figures}",
        p.name,
        started.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "pmx and perf differ:\n{failures}");
}

#[test]
fn python_json_dumps() {
    check(&Program {
        name: "python3",
        needs: &[python3()],
        prepare: python,
        lands_in: "python3",
        jit: false,
    });
}

#[test]
fn gcc_cc1() {
    check(&Program {
        name: "cc1",
        needs: &["gcc"],
        prepare: cc1,
        lands_in: "cc1",
        jit: false,
    });
}

#[test]
fn cxx_templates() {
    check(&Program {
        name: "g++ templates",
        needs: &["g++"],
        prepare: cxx,
        lands_in: "templates",
        jit: false,
    });
}

#[test]
fn xz_compress() {
    check(&Program {
        name: "xz",
        needs: &["xz"],
        prepare: xz,
        lands_in: "liblzma",
        jit: false,
    });
}

#[test]
fn sqlite3_recursive_cte() {
    check(&Program {
        name: "sqlite3",
        needs: &["sqlite3"],
        prepare: sqlite,
        lands_in: "sqlite3",
        jit: false,
    });
}

#[test]
fn node_jit() {
    check(&Program {
        name: "node",
        needs: &["node"],
        prepare: node,
        lands_in: "node",
        jit: true,
    });
}

#[test]
fn rust_program() {
    check(&Program {
        name: "rustc",
        needs: &["rustc"],
        prepare: rust,
        lands_in: "rswork",
        jit: false,
    });
}

#[test]
fn go_program() {
    check(&Program {
        name: "go",
        needs: &["go"],
        prepare: go,
        lands_in: "gowork",
        jit: false,
    });
}

/// Each normalising rule accepts its own difference and nothing else.
#[test]
fn normalising_rules_accept_only_their_difference() {
    let ours = "\t  4f99a0 hash_table<h>::traverse<_IO_FILE*, &dump_val>+0x0 (/usr/lib/gcc/x86_64-linux-gnu/12/cc1)";
    let theirs = "\t  4f99a0 hash_table<h>::traverse<_IO_FILE*, &(dump_val(val**, _IO_FILE*))>+0x0 (/usr/lib/gcc/x86_64-linux-gnu/12/cc1)";
    assert!(function_address_arguments(ours, theirs));
    let other = "\t  4f99a0 hash_table<h>::traverse<_IO_FILE*, &dump_val>+0x0 (/usr/bin/other)";
    assert!(!function_address_arguments(ours, other));
    let renamed = "\t  4f99a0 hash_set<h>::traverse<_IO_FILE*, &(dump_val(val**))>+0x0 (/usr/lib/gcc/x86_64-linux-gnu/12/cc1)";
    assert!(!function_address_arguments(ours, renamed));
    let plt = "\t           260a0 memchr@plt+0x0 (/usr/lib/x86_64-linux-gnu/libc.so.6)";
    for perf in ["@plt+0x0", "[unknown]", "_dl_allocate_tls@plt+0x0"] {
        let theirs = format!("\t           260a0 {perf} (/usr/lib/x86_64-linux-gnu/libc.so.6)");
        assert!(plt_perf_cannot_name(plt, &theirs), "{perf}");
    }
    let elsewhere = "\t           260b0 @plt+0x0 (/usr/lib/x86_64-linux-gnu/libc.so.6)";
    assert!(!plt_perf_cannot_name(plt, elsewhere));
    let not_plt = "\t           260a0 memchr+0x0 (/usr/lib/x86_64-linux-gnu/libc.so.6)";
    assert!(!plt_perf_cannot_name(
        not_plt,
        "\t           260a0 [unknown] (/usr/lib/x86_64-linux-gnu/libc.so.6)"
    ));
}
