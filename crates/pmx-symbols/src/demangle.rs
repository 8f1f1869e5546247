//! Symbol names as pmx shows them: Rust (legacy and v0) and C++
//! (Itanium) manglings demangled in a [`Demangle`] style — perf 6.1's
//! short form (libiberty's rules, checked against libiberty itself in the
//! tests), full signatures, or the names as they are. The style is a
//! value the caller passes ([`crate::SymbolOptions::demangle`]), never a
//! setting of the process: two styles can be used side by side.

/// A symbol name demangled as perf 6.1 prints it by default
/// ([`Demangle::Short`]); [`demangle_as`] takes the style.
pub fn demangle(name: &str) -> String {
    demangle_as(name, Demangle::Short)
}

impl std::str::FromStr for Demangle {
    type Err = String;
    fn from_str(s: &str) -> Result<Demangle, String> {
        match s {
            "short" => Ok(Demangle::Short),
            "full" => Ok(Demangle::Full),
            "none" => Ok(Demangle::None),
            _ => Err(format!("'{s}': the styles are short (perf's), full, none")),
        }
    }
}

/// How symbol names are demangled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Demangle {
    /// As perf 6.1 prints them (libiberty without `DMGL_PARAMS`): C++
    /// names without parameter list, return type, cv-qualifiers of the
    /// method or `[clone …]` suffix (`std::vector<int>::push_back`); Rust
    /// names without their hash.
    #[default]
    Short = 0,
    /// Full C++ signatures (`void std::vector<int>::push_back(int const&)`),
    /// as `perf report -v` prints them.
    Full = 1,
    /// The names as the symbol table has them (perf's `--no-demangle`).
    None = 2,
}

/// A symbol name demangled (Rust legacy and v0, C++ Itanium) in `style`;
/// other names unchanged. A `NAME@plt` is `NAME` demangled with its
/// suffix kept.
pub fn demangle_as(name: &str, style: Demangle) -> String {
    if style == Demangle::None {
        return name.to_string();
    }
    if let Some(base) = name.strip_suffix("@plt") {
        return demangle_as(base, style) + "@plt";
    }
    if is_rust(name) {
        if let Ok(d) = rustc_demangle::try_demangle(name) {
            return format!("{d:#}");
        }
    }
    if let Some((what, inner)) = thunk(name) {
        let inner = demangle_as(&format!("_Z{inner}"), Demangle::Full);
        return format!("{what} to {inner}");
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            let options = cpp_demangle::DemangleOptions::default();
            let options = match style {
                Demangle::Short => options.no_params().no_return_type(),
                _ => options,
            };
            // libiberty leaves the parameters of a special name's inner
            // function (a thunk, a transaction clone) in place.
            let special = ["_ZTh", "_ZTv", "_ZTc", "_ZGTt", "_ZGTn"]
                .iter()
                .any(|p| name.starts_with(p));
            if let Ok(s) = sym.demangle(&options) {
                return match style {
                    Demangle::Short if special => demangle_as(name, Demangle::Full),
                    Demangle::Short => function_type_spaces(short_form(libiberty_forms(s))),
                    _ => libiberty_forms(s),
                };
            }
        }
    }
    if style == Demangle::Short {
        if let Some(n) = name_only(name) {
            return n;
        }
    }
    name.to_string()
}

/// The standard substitutions that have a short name: (full expansion,
/// short name, class name, short class name).
const STD_NAMES: [(&str, &str, &str, &str); 4] = [
    (
        "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
        "std::string",
        "basic_string",
        "string",
    ),
    (
        "std::basic_istream<char, std::char_traits<char> >",
        "std::istream",
        "basic_istream",
        "istream",
    ),
    (
        "std::basic_ostream<char, std::char_traits<char> >",
        "std::ostream",
        "basic_ostream",
        "ostream",
    ),
    (
        "std::basic_iostream<char, std::char_traits<char> >",
        "std::iostream",
        "basic_iostream",
        "iostream",
    ),
];

/// libiberty's rule for the standard substitutions (`Ss`, `Si`, `So`,
/// `Sd`): the short name (`std::string`), except before a constructor or
/// destructor, which needs the class's own name
/// (`std::basic_string<char, …>::basic_string`). cpp_demangle spells
/// some of them out elsewhere and shortens constructors.
fn std_names(mut s: String) -> String {
    if !s.contains("std::") {
        return s;
    }
    if s.contains("std::nullptr_t") {
        s = s.replace("std::nullptr_t", "decltype(nullptr)");
    }
    for (full, short, class, short_class) in STD_NAMES {
        if s.contains(full) {
            s = s.replace(full, short);
        }
        for (tilde, named) in [
            ("", short_class),
            ("~", short_class),
            ("", class),
            ("~", class),
        ] {
            let shortened = format!("{short}::{tilde}{named}");
            let mut from = 0;
            while let Some(i) = s[from..].find(&shortened).map(|i| i + from) {
                let end = i + shortened.len();
                let boundary = s[end..]
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
                if boundary {
                    let spelled = format!("{full}::{tilde}{class}");
                    s.replace_range(i..end, &spelled);
                    from = i + spelled.len();
                } else {
                    from = end;
                }
            }
        }
    }
    s
}

/// A Rust symbol: v0 (`_R…`), or legacy (`_ZN…17h<16 hex digits>E`,
/// with its hash: without one it is a C++ nested name, which reads the
/// same way but is C++'s to print — `_GLOBAL__N_1` is `(anonymous
/// namespace)` there).
fn is_rust(name: &str) -> bool {
    if name.starts_with("_R") {
        return true;
    }
    // The hash is the last component (a `.llvm.…` suffix may follow).
    name.starts_with("_ZN")
        && name.rfind("17h").is_some_and(|i| {
            let hash = name.as_bytes().get(i + 3..i + 19);
            hash.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
                && name.as_bytes().get(i + 19) == Some(&b'E')
        })
}

/// The short name of a C++ function whose whole mangling cpp_demangle
/// cannot read (a return type with a dependent expression, as in GCC's
/// `wi::add<…>` or `operator*<1u, unsigned short, int>`): its name and
/// template arguments alone, which is all the short form shows. The
/// shortest prefix ending in `E` (the nested name's, or the template
/// arguments') that reads as a function is it.
fn name_only(name: &str) -> Option<String> {
    if !name.starts_with("_Z") || name.len() > 4096 {
        return None;
    }
    let options = cpp_demangle::DemangleOptions::default()
        .no_params()
        .no_return_type();
    for (i, _) in name.match_indices('E') {
        let candidate = format!("{}vv", &name[..=i]);
        if let Ok(sym) = cpp_demangle::Symbol::new(candidate.as_str()) {
            if let Ok(s) = sym.demangle(&options) {
                return Some(function_type_spaces(short_form(libiberty_forms(s))));
            }
        }
    }
    None
}

/// libiberty's spelling where cpp_demangle's differs: the standard
/// substitutions ([`std_names`]), integer literals as `1u`, `0ul`, `2l`
/// (cpp_demangle: `(unsigned int)1`), an empty template parameter pack
/// left out (cpp_demangle: `f<int, >`).
fn libiberty_forms(s: String) -> String {
    let mut s = std_names(s);
    if s.contains("_GLOBAL__N_1") {
        s = s.replace("_GLOBAL__N_1", "(anonymous namespace)");
    }
    if s.contains(", >") {
        s = s.replace(", >", ">");
    }
    if !s.contains(")") {
        return s;
    }
    for (ty, suffix) in [
        ("(unsigned long long)", "ull"),
        ("(long long)", "ll"),
        ("(unsigned long)", "ul"),
        ("(unsigned int)", "u"),
        ("(long)", "l"),
    ] {
        while let Some(i) = s.find(ty) {
            let rest = &s[i + ty.len()..];
            let digits = rest
                .char_indices()
                .take_while(|&(j, c)| c.is_ascii_digit() || (j == 0 && c == '-'))
                .count();
            if digits == 0 || (digits == 1 && rest.starts_with('-')) {
                break;
            }
            let number = rest[..digits].to_string();
            s.replace_range(i..i + ty.len() + digits, &format!("{number}{suffix}"));
        }
    }
    s
}

/// A thunk's kind and the encoding of its target (`_ZThn16_N…` →
/// ("non-virtual thunk", "N…")), whose full signature libiberty prints
/// in either form (cpp_demangle spells thunks as `{virtual override
/// thunk(…)}`).
fn thunk(name: &str) -> Option<(&'static str, &str)> {
    fn number(s: &str) -> Option<&str> {
        let s = s.strip_prefix('n').unwrap_or(s);
        let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        (digits > 0).then(|| &s[digits..])
    }
    fn call_offset(s: &str) -> Option<&str> {
        match s.as_bytes().first()? {
            b'h' => number(&s[1..])?.strip_prefix('_'),
            b'v' => number(number(&s[1..])?.strip_prefix('_')?)?.strip_prefix('_'),
            _ => None,
        }
    }
    let rest = name.strip_prefix("_ZT")?;
    let (what, inner) = match rest.as_bytes().first()? {
        b'h' => ("non-virtual thunk", call_offset(rest)?),
        b'v' => ("virtual thunk", call_offset(rest)?),
        b'c' => (
            "covariant return thunk",
            call_offset(call_offset(&rest[1..])?)?,
        ),
        _ => return None,
    };
    (!inner.is_empty()).then_some((what, inner))
}

/// libiberty writes a function type inside a template argument with a
/// space before its parameters (`std::function<int (char const*)>`),
/// cpp_demangle without (`int(char const*)`). In the short form a `(`
/// after a type name is such a type's, but for the words that take
/// parentheses themselves (`decltype(…)`, a lambda's `{lambda(…)#1}`,
/// `operator()`) and an enclosing function's parameters (`f(int)::…`).
fn function_type_spaces(s: String) -> String {
    if !s.contains('(') {
        return s;
    }
    const WORDS: [&str; 6] = [
        "lambda", "decltype", "sizeof", "alignof", "typeid", "noexcept",
    ];
    let mut out = String::with_capacity(s.len() + 8);
    let mut skip_to = 0;
    for (i, c) in s.char_indices() {
        if i < skip_to {
            continue;
        }
        if c == '(' && i > 0 {
            let before = &s[..i];
            let last = before.chars().next_back().unwrap_or(' ');
            let typed = last.is_alphanumeric() || matches!(last, '_' | '>' | '*' | '&');
            let word = WORDS.iter().any(|w| before.ends_with(w)) || before.ends_with("operator");
            let operator_call = before.ends_with("operator()");
            // An enclosing function's parameters (`f(int)::{lambda()#1}`)
            // are followed by `::`; a function type's by `>` or `,`.
            let mut depth = 0usize;
            let close = s[i..].char_indices().find_map(|(j, d)| {
                match d {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + j);
                        }
                    }
                    _ => {}
                }
                None
            });
            let enclosing = close.is_none_or(|e| {
                let after = &s[e + 1..];
                after.starts_with("::")
                    || after.starts_with(" const")
                    || after.starts_with(" volatile")
            });
            // A function's address as a template argument
            // (`call<&Console::ProfileEnd>`): libiberty's short form
            // drops its parameters too.
            let token = before
                .rfind(['<', ','])
                .map_or(before, |t| before[t + 1..].trim_start());
            if let (true, Some(e)) = (typed && token.starts_with('&'), close) {
                skip_to = e + 1;
                continue;
            }
            if typed && !word && !operator_call && !enclosing {
                out.push(' ');
            }
        }
        out.push(c);
    }
    out
}

/// What libiberty leaves out without `DMGL_PARAMS` that cpp_demangle's
/// `no_params` keeps: the qualifiers of a method (`operator() const`).
fn short_form(mut s: String) -> String {
    loop {
        let before = s.len();
        for q in [" const", " volatile", " &&", " &"] {
            if let Some(t) = s.strip_suffix(q) {
                s.truncate(t.len());
            }
        }
        if s.len() == before {
            return s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::{Object, ObjectSymbol, SymbolKind};
    use std::path::Path;

    #[test]
    fn demangles_rust_and_cpp() {
        assert_eq!(
            demangle("_ZN4core3fmt5write17h0123456789abcdefE"),
            "core::fmt::write"
        );
        assert_eq!(demangle("_ZN3foo3barEv"), "foo::bar");
        assert_eq!(demangle_as("_ZN3foo3barEv", Demangle::Full), "foo::bar()");
        assert_eq!(
            demangle_as("_ZN3foo3barEv", Demangle::None),
            "_ZN3foo3barEv"
        );
        assert_eq!(demangle("_ZNK3Foo3getEv"), "Foo::get");
        assert_eq!(demangle("_ZN3foo3barEi.cold"), "foo::bar");
        assert_eq!(demangle("_ZdlPvm@plt"), "operator delete@plt");
        assert_eq!(demangle("main"), "main");
        // libiberty's literals and empty packs.
        assert_eq!(
            demangle("_ZN8poly_intILj1EiE3fooEv"),
            "poly_int<1u, int>::foo"
        );
        assert_eq!(demangle("_ZN4node11SPrintFImplIiJEEENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEPKcOT_DpOT0_"), "node::SPrintFImpl<int>");
        // A return type cpp_demangle cannot read: the name alone, as
        // libiberty's short form has it.
        assert_eq!(
            demangle(
                "_ZN2wi3addI16generic_wide_intI16wide_int_storageES3_EENS_13binary_traitsIT_T0_\
                 XsrNS_10int_traitsIS5_EE14precision_typeEXsrNS7_IS6_EE14precision_typeEE11\
                 result_typeERKS5_RKS6_6signopPNS_13overflow_typeE"
            ),
            "wi::add<generic_wide_int<wide_int_storage>, generic_wide_int<wide_int_storage> >"
        );
        assert_eq!(
            demangle(
                "_ZmlILj1EtiE8poly_intIXT_EN11poly_resultIT0_N10if_nonpolyIT1_S4_Xsr15poly_int_\
                 traitsIS4_E7is_polyEE4typeEXsr22poly_coeff_pair_traitsIS2_S8_E11result_kindEE4\
                 typeEERK12poly_int_podIXT_ES2_ERKS4_"
            ),
            "operator*<1u, unsigned short, int>"
        );
    }

    /// The short form is what libiberty's `cplus_demangle(name, 0)` — the
    /// call perf 6.1 makes — prints, for every C++ symbol of libstdc++;
    /// the full form what `cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI)`
    /// (`perf report -v`) prints.
    #[test]
    fn names_are_libibertys() {
        let Some(lib) = [
            "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
            "/usr/lib64/libstdc++.so.6",
        ]
        .into_iter()
        .find(|p| Path::new(p).exists()) else {
            eprintln!("skipped: no libstdc++.so.6 here");
            return;
        };
        let map = std::fs::read(lib).unwrap();
        let obj = object::File::parse(&*map).unwrap();
        let mut names: Vec<String> = obj
            .dynamic_symbols()
            .filter_map(|s| s.name().ok().map(str::to_string))
            // Code only: no typeinfo, vtables, VTTs or guard variables.
            .filter(|n| {
                n.starts_with("_Z")
                    && !["_ZTI", "_ZTS", "_ZTV", "_ZTT", "_ZGV"]
                        .iter()
                        .any(|p| n.starts_with(p))
            })
            .collect();
        names.sort();
        names.dedup();
        assert!(names.len() > 1000, "{} names", names.len());
        for (style, flags) in [(Demangle::Short, "0"), (Demangle::Full, "3")] {
            let Some(theirs) = libiberty(&names, flags) else {
                return;
            };
            let differ = differing(&names, &theirs, style);
            // The full form is shown only on request; cpp_demangle drops
            // a repeated template parameter in a few signatures there.
            let allowed = if style == Demangle::Short {
                0
            } else {
                names.len() / 50
            };
            eprintln!(
                "{style:?}: {} of {} names differ from libiberty's",
                differ.len(),
                names.len()
            );
            assert!(
                differ.len() <= allowed,
                "{style:?}: {} of {} names differ:\n{}",
                differ.len(),
                names.len(),
                differ[..differ.len().min(400)].join("\n")
            );
        }
    }

    /// Node.js's C++ (V8, ICU, libuv: templates, lambdas, anonymous
    /// namespaces, function-pointer template arguments) in the short form,
    /// against libiberty. 993 of 27,764 differ today (3.6%): a function's
    /// address as a template argument (libiberty: `&(int f<…>(…))`) and a
    /// lambda in a local name inside template arguments, where cpp_demangle
    /// reads the mangling its own way; the bound keeps that from growing.
    /// gcc's cc1: 372 of 27,141 (1.4%), all a plain function's address as
    /// a template argument, which libiberty prints with its parameters
    /// (`traverse<void*, &(reset_indirect_string(indirect_string_node**,
    /// void*))>`) and cpp_demangle's short form without.
    #[test]
    fn node_and_cc1_names_are_libibertys() {
        big_program_names("/usr/bin/node", 25);
        big_program_names("/usr/lib/gcc/x86_64-linux-gnu/12/cc1", 50);
    }

    /// The C++ names of `path` (its first 30,000 code symbols) against
    /// libiberty: at most one in `one_in` may differ (0: none).
    fn big_program_names(path: &str, one_in: usize) {
        let Ok(map) = std::fs::read(path) else {
            eprintln!("skipped: no {path}");
            return;
        };
        let obj = object::File::parse(&*map).unwrap();
        let mut names: Vec<String> = obj
            .symbols()
            .chain(obj.dynamic_symbols())
            .filter_map(|s| s.name().ok().map(str::to_string))
            .filter(|n| n.starts_with("_Z"))
            .take(30_000)
            .collect();
        names.sort();
        names.dedup();
        let Some(theirs) = libiberty(&names, "0") else {
            return;
        };
        let differ = differing(&names, &theirs, Demangle::Short);
        eprintln!(
            "{path}: {} of {} names differ from libiberty's",
            differ.len(),
            names.len()
        );
        assert!(
            differ.len() <= names.len().checked_div(one_in).unwrap_or(0),
            "{}",
            differ[..differ.len().min(20)].join("\n")
        );
    }

    /// Rust names as perf 6.1 prints them (libiberty drops the hash too):
    /// every function of this test binary.
    #[test]
    fn rust_names_are_libibertys() {
        let exe = std::env::current_exe().unwrap();
        let map = std::fs::read(&exe).unwrap();
        let obj = object::File::parse(&*map).unwrap();
        let mut names: Vec<String> = obj
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text)
            .filter_map(|s| s.name().ok().map(str::to_string))
            .filter(|n| n.starts_with("_ZN") || n.starts_with("_R"))
            .collect();
        names.sort();
        names.dedup();
        assert!(names.len() > 1000, "{} names", names.len());
        let Some(theirs) = libiberty(&names, "0") else {
            return;
        };
        let differ = differing(&names, &theirs, Demangle::Short);
        assert!(
            differ.is_empty(),
            "{} of {}:\n{}",
            differ.len(),
            names.len(),
            differ[..differ.len().min(20)].join("\n")
        );
    }

    /// The names pmx demangles in `style` otherwise than libiberty did
    /// (`theirs`, a line each), with both forms.
    fn differing(names: &[String], theirs: &str, style: Demangle) -> Vec<String> {
        names
            .iter()
            .zip(theirs.lines())
            .filter(|(n, t)| demangle_as(n, style) != *t)
            .map(|(n, t)| {
                format!(
                    "{n}\n  pmx:       {}\n  libiberty: {t}",
                    demangle_as(n, style)
                )
            })
            .collect()
    }

    /// The names demangled by libiberty with these flags, one a line (a
    /// small program built against libiberty-dev; `None`, said, when it
    /// cannot be built here).
    fn libiberty(names: &[String], flags: &str) -> Option<String> {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let dir = std::env::temp_dir().join(format!("pmx-libiberty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let (src, exe) = (dir.join("dm.c"), dir.join("dm"));
        std::fs::write(
            &src,
            "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\
             #include <libiberty/demangle.h>\n\
             int main(int c, char **v) { int f = atoi(v[1]); char l[1 << 16];\n\
             while (fgets(l, sizeof l, stdin)) { l[strcspn(l, \"\\n\")] = 0;\n\
             char *d = cplus_demangle(l, f); puts(d ? d : l); free(d); } }\n",
        )
        .ok()?;
        let built = Command::new("cc")
            .arg("-o")
            .arg(&exe)
            .arg(&src)
            .arg("-liberty")
            .output();
        if !built.is_ok_and(|o| o.status.success()) {
            eprintln!("skipped: cannot build against libiberty (apt-get install libiberty-dev)");
            return None;
        }
        let mut child = Command::new(&exe)
            .arg(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ok()?;
        let mut stdin = child.stdin.take()?;
        let input = names.join("\n") + "\n";
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let out = child.wait_with_output().ok()?;
        writer.join().ok()?.ok()?;
        let _ = std::fs::remove_dir_all(&dir);
        Some(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}
