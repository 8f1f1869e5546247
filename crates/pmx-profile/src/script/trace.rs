//! A tracepoint sample's fields as perf script prints them (its `trace`
//! field): the event's `print fmt:` from the recording's own format files,
//! a C format string and its argument expressions (`REC->field`,
//! arithmetic, `?:`, casts, `__print_flags`, `__print_symbolic`,
//! `__get_str` …), compiled once per event and evaluated on each sample's
//! raw data with the rules of libtraceevent (which perf links): fields
//! read unsigned at their size, casts mask to the type's width, `%d` and
//! `%x` print the low 32 bits, `%ld`/`%lld` all 64.
//!
//! An event whose print format cannot be compiled is printed as
//! libtraceevent does then: `[FAILED TO PARSE]` and each field.

use pmx_perfdata::tracing::{EventFormat, FieldFormat, TracingData};
use rustc_hash::FxHashMap as HashMap;

/// Kernel symbol lookup for `%ps`/`%pS`: the name and the offset in it.
pub(crate) type KernelSym<'a> = dyn FnMut(u64) -> Option<(String, u64)> + 'a;

/// Every recorded event's compiled print format, by tracepoint id.
#[derive(Default)]
pub(crate) struct TracePrinter {
    events: HashMap<u64, Compiled>,
    printk: HashMap<u64, String>,
    long_size: u32,
}

struct Compiled {
    format: EventFormat,
    /// `None`: the print format could not be compiled.
    print: Option<(Vec<Piece>, Vec<Expr>)>,
}

/// A piece of the format string.
#[derive(Debug, Clone)]
enum Piece {
    Text(String),
    Conv(Spec),
}

/// One `%` conversion.
#[derive(Debug, Clone, Default)]
struct Spec {
    left: bool,
    zero: bool,
    alt: bool,
    plus: bool,
    space: bool,
    width: Option<usize>,
    /// `*`: the width is the next argument.
    star: bool,
    precision: Option<usize>,
    /// -2 hh, -1 h, 0 none, 1 l, 2 ll (z and t are l).
    len: i8,
    conv: char,
    /// `%pS`, `%ps` … the letter after `p`.
    ext: Option<char>,
}

#[derive(Debug, Clone)]
enum Expr {
    Num(u64),
    Str(String),
    Field(String),
    Unary(char, Box<Expr>),
    Bin(String, Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Cast(String, Box<Expr>),
    Flags(Box<Expr>, String, Vec<(Expr, String)>),
    Symbolic(Box<Expr>, Vec<(Expr, String)>),
    GetStr(String),
    /// `__print_hex(buf, len)`, `__print_hex_str`.
    Hex(bool, Box<Expr>, Box<Expr>),
    /// `__get_dynamic_array(f)`: the field's bytes.
    DynArray(String),
    /// `__get_dynamic_array_len(f)`.
    DynLen(String),
    /// `__print_array(array, count, elem_size)`.
    Array(Box<Expr>, Box<Expr>, Box<Expr>),
    /// Any other function: its value is its first argument's.
    Call(Vec<Expr>),
}

impl TracePrinter {
    /// Compile the print format of every event of `data`.
    pub(crate) fn new(data: &TracingData) -> TracePrinter {
        let events = (data.events.iter())
            .map(|e| {
                let print = compile(&e.print_fmt);
                (
                    e.id as u64,
                    Compiled {
                        format: e.clone(),
                        print,
                    },
                )
            })
            .collect();
        TracePrinter {
            events,
            printk: data.printk.iter().cloned().collect(),
            long_size: data.long_size.max(4) as u32,
        }
    }

    /// Print the fields of a sample of tracepoint `id` with raw data `raw`.
    pub(crate) fn print(&self, id: u64, raw: &[u8], ksym: &mut KernelSym, out: &mut Vec<u8>) {
        let Some(c) = self.events.get(&id) else {
            return;
        };
        let ev = Eval {
            f: &c.format,
            raw,
            printer: self,
        };
        match &c.print {
            Some((pieces, args)) => ev.format(pieces, args, ksym, out),
            None => ev.failed(out),
        }
    }
}

// ---- compiling -------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(u64),
    Str(String),
    Id(String),
    Op(String),
}

fn lex(s: &str) -> Option<Vec<Tok>> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' {
            let mut v = Vec::new();
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    i += 1;
                    v.push(match b[i] {
                        b'n' => b'\n',
                        b't' => b'\t',
                        b'r' => b'\r',
                        b'0' => 0,
                        x => x,
                    });
                } else {
                    v.push(b[i]);
                }
                i += 1;
            }
            i += 1;
            let s = String::from_utf8_lossy(&v).into_owned();
            // Adjacent literals are one string, as in C.
            if let Some(Tok::Str(prev)) = out.last_mut() {
                prev.push_str(&s);
            } else {
                out.push(Tok::Str(s));
            }
        } else if c == b'\'' {
            let ch = *b.get(i + 1)?;
            out.push(Tok::Num(ch as u64));
            i += 3;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            let t = s[start..i].trim_end_matches(['U', 'L', 'u', 'l']);
            let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                u64::from_str_radix(h, 16).ok()?
            } else if t.len() > 1 && t.starts_with('0') {
                u64::from_str_radix(&t[1..], 8).ok()?
            } else {
                t.parse().ok()?
            };
            out.push(Tok::Num(v));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Id(s[start..i].to_string()));
        } else {
            let two = s.get(i..i + 2).unwrap_or("");
            let op = if ["->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||"].contains(&two) {
                two.to_string()
            } else {
                (c as char).to_string()
            };
            i += op.len();
            out.push(Tok::Op(op));
        }
    }
    Some(out)
}

struct Parser {
    t: Vec<Tok>,
    i: usize,
}

fn compile(print_fmt: &str) -> Option<(Vec<Piece>, Vec<Expr>)> {
    let toks = lex(print_fmt)?;
    let mut p = Parser { t: toks, i: 0 };
    let Some(Tok::Str(fmt)) = p.next() else {
        return None;
    };
    let mut args = Vec::new();
    while p.eat(",") {
        args.push(p.expr(0)?);
    }
    if p.i != p.t.len() {
        return None;
    }
    Some((pieces(&fmt)?, args))
}

/// Binary operators by precedence (higher binds tighter).
fn prec(op: &str) -> Option<u8> {
    Some(match op {
        "||" => 1,
        "&&" => 2,
        "|" => 3,
        "^" => 4,
        "&" => 5,
        "==" | "!=" => 6,
        "<" | ">" | "<=" | ">=" => 7,
        "<<" | ">>" => 8,
        "+" | "-" => 9,
        "*" | "/" | "%" => 10,
        _ => return None,
    })
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.i)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.t.get(self.i).cloned();
        self.i += 1;
        t
    }
    fn eat(&mut self, op: &str) -> bool {
        if self.peek() == Some(&Tok::Op(op.to_string())) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn want(&mut self, op: &str) -> Option<()> {
        self.eat(op).then_some(())
    }

    /// `cond ? a : b` and binary operators of precedence ≥ `min`.
    fn expr(&mut self, min: u8) -> Option<Expr> {
        let mut left = self.unary()?;
        while let Some(Tok::Op(o)) = self.peek() {
            let op = o.clone();
            if op == "?" && min == 0 {
                self.i += 1;
                let a = self.expr(0)?;
                self.want(":")?;
                let b = self.expr(0)?;
                left = Expr::Cond(Box::new(left), Box::new(a), Box::new(b));
                continue;
            }
            let Some(p) = prec(&op).filter(|&p| p >= min.max(1)) else {
                break;
            };
            self.i += 1;
            let right = self.expr(p + 1)?;
            left = Expr::Bin(op, Box::new(left), Box::new(right));
        }
        Some(left)
    }

    /// Whether the tokens from here are `( type-name )` followed by an operand.
    fn cast_ahead(&self) -> Option<(String, usize)> {
        let mut j = self.i + 1;
        let mut words = Vec::new();
        while let Some(t) = self.t.get(j) {
            match t {
                Tok::Id(w) if w != "REC" => words.push(w.clone()),
                Tok::Op(o) if o == "*" && !words.is_empty() => words.push("*".into()),
                Tok::Op(o) if o == ")" => break,
                _ => return None,
            }
            j += 1;
        }
        if words.is_empty() {
            return None;
        }
        match self.t.get(j + 1) {
            Some(Tok::Op(o)) if !["(", "-", "!", "~"].contains(&o.as_str()) => None,
            None => None,
            _ => Some((words.join(" "), j + 1)),
        }
    }

    fn unary(&mut self) -> Option<Expr> {
        match self.peek()?.clone() {
            Tok::Op(o) if o == "(" => {
                if let Some((ty, after)) = self.cast_ahead() {
                    self.i = after;
                    let e = self.unary()?;
                    return Some(Expr::Cast(ty, Box::new(e)));
                }
                self.i += 1;
                let e = self.expr(0)?;
                self.want(")")?;
                self.postfix(e)
            }
            Tok::Op(o) if ["-", "!", "~"].contains(&o.as_str()) => {
                self.i += 1;
                let e = self.unary()?;
                Some(Expr::Unary(o.chars().next()?, Box::new(e)))
            }
            Tok::Num(n) => {
                self.i += 1;
                self.postfix(Expr::Num(n))
            }
            Tok::Str(s) => {
                self.i += 1;
                Some(Expr::Str(s))
            }
            Tok::Id(w) if w == "REC" => {
                self.i += 1;
                self.want("->")?;
                let Some(Tok::Id(f)) = self.next() else {
                    return None;
                };
                self.postfix(Expr::Field(f))
            }
            Tok::Id(w) if w == "sizeof" => {
                self.i += 1;
                self.want("(")?;
                let mut depth = 1;
                let mut words = Vec::new();
                while depth > 0 {
                    match self.next()? {
                        Tok::Op(o) if o == "(" => depth += 1,
                        Tok::Op(o) if o == ")" => depth -= 1,
                        Tok::Id(w) => words.push(w),
                        _ => {}
                    }
                }
                Some(Expr::Num(type_size(&words.join(" ")).unwrap_or(8) as u64))
            }
            Tok::Id(w) => {
                self.i += 1;
                if self.eat("(") {
                    return self.call(w);
                }
                // An enum name or macro the kernel left in: unknown, 0.
                Some(Expr::Num(0))
            }
            _ => None,
        }
    }

    /// `x[i]` (indexing is read as its base, as libtraceevent's numbers do).
    fn postfix(&mut self, e: Expr) -> Option<Expr> {
        if self.eat("[") {
            let _ = self.expr(0)?;
            self.want("]")?;
        }
        Some(e)
    }

    fn args(&mut self) -> Option<Vec<Expr>> {
        let mut v = Vec::new();
        if self.eat(")") {
            return Some(v);
        }
        loop {
            v.push(self.expr(0)?);
            if self.eat(")") {
                return Some(v);
            }
            self.want(",")?;
        }
    }

    /// `{ value, "name" }, …` up to the closing parenthesis.
    fn table(&mut self) -> Option<Vec<(Expr, String)>> {
        let mut v = Vec::new();
        while self.eat(",") {
            self.want("{")?;
            let e = self.expr(0)?;
            self.want(",")?;
            let Some(Tok::Str(s)) = self.next() else {
                return None;
            };
            self.want("}")?;
            v.push((e, s));
        }
        self.want(")")?;
        Some(v)
    }

    fn field_name(&mut self) -> Option<String> {
        let name = match self.next()? {
            Tok::Id(w) if w == "REC" => {
                self.want("->")?;
                match self.next()? {
                    Tok::Id(f) => f,
                    _ => return None,
                }
            }
            Tok::Id(f) => f,
            _ => return None,
        };
        self.want(")")?;
        Some(name)
    }

    fn call(&mut self, name: String) -> Option<Expr> {
        Some(match name.as_str() {
            "__print_flags" => {
                let e = self.expr(0)?;
                self.want(",")?;
                let Some(Tok::Str(delim)) = self.next() else {
                    return None;
                };
                Expr::Flags(Box::new(e), delim, self.table()?)
            }
            "__print_symbolic" => {
                let e = self.expr(0)?;
                Expr::Symbolic(Box::new(e), self.table()?)
            }
            "__get_str" | "__get_rel_str" => Expr::GetStr(self.field_name()?),
            "__get_dynamic_array" | "__get_rel_dynamic_array" => Expr::DynArray(self.field_name()?),
            "__get_dynamic_array_len" | "__get_rel_dynamic_array_len" => {
                Expr::DynLen(self.field_name()?)
            }
            "__print_hex" | "__print_hex_str" => {
                let mut a = self.args()?;
                if a.len() != 2 {
                    return None;
                }
                let len = a.pop()?;
                let buf = a.pop()?;
                Expr::Hex(name == "__print_hex_str", Box::new(buf), Box::new(len))
            }
            "__print_array" => {
                let mut a = self.args()?;
                if a.len() != 3 {
                    return None;
                }
                let size = a.pop()?;
                let count = a.pop()?;
                let arr = a.pop()?;
                Expr::Array(Box::new(arr), Box::new(count), Box::new(size))
            }
            _ => Expr::Call(self.args()?),
        })
    }
}

fn type_size(ty: &str) -> Option<usize> {
    let ty = ty
        .trim_start_matches("unsigned ")
        .trim_start_matches("signed ");
    if ty.ends_with('*') {
        return Some(8);
    }
    Some(match ty {
        "char" | "u8" | "s8" | "bool" => 1,
        "short" | "u16" | "s16" => 2,
        "int" | "u32" | "s32" | "unsigned" => 4,
        "long" | "long long" | "u64" | "s64" | "size_t" => 8,
        _ => return None,
    })
}

/// The format string's pieces.
fn pieces(fmt: &str) -> Option<Vec<Piece>> {
    let b: Vec<char> = fmt.chars().collect();
    let mut out = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != '%' {
            text.push(b[i]);
            i += 1;
            continue;
        }
        i += 1;
        if b.get(i) == Some(&'%') {
            text.push('%');
            i += 1;
            continue;
        }
        let mut s = Spec::default();
        while let Some(&c) = b.get(i) {
            match c {
                '-' => s.left = true,
                '0' => s.zero = true,
                '#' => s.alt = true,
                '+' => s.plus = true,
                ' ' => s.space = true,
                _ => break,
            }
            i += 1;
        }
        if b.get(i) == Some(&'*') {
            s.star = true;
            i += 1;
        }
        let num = |i: &mut usize| {
            let start = *i;
            while b.get(*i).is_some_and(|c| c.is_ascii_digit()) {
                *i += 1;
            }
            (*i > start).then(|| b[start..*i].iter().collect::<String>().parse().unwrap_or(0))
        };
        s.width = num(&mut i);
        if b.get(i) == Some(&'.') {
            i += 1;
            s.precision = Some(num(&mut i).unwrap_or(0));
        }
        while let Some(&c) = b.get(i) {
            match c {
                'h' => s.len -= 1,
                'l' | 'z' | 't' | 'L' | 'q' | 'j' => s.len += 1,
                _ => break,
            }
            i += 1;
        }
        s.conv = *b.get(i)?;
        i += 1;
        if s.conv == 'p' {
            if let Some(&c) = b.get(i).filter(|c| c.is_ascii_alphanumeric()) {
                s.ext = Some(c);
                i += 1;
                // %pI4, %pM …: the letters and digits of the extension.
                while b.get(i).is_some_and(|c| c.is_ascii_digit()) {
                    i += 1;
                }
            }
        }
        if !text.is_empty() {
            out.push(Piece::Text(std::mem::take(&mut text)));
        }
        out.push(Piece::Conv(s));
    }
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    Some(out)
}

// ---- evaluating ------------------------------------------------------

struct Eval<'a> {
    f: &'a EventFormat,
    raw: &'a [u8],
    printer: &'a TracePrinter,
}

impl Eval<'_> {
    fn field(&self, name: &str) -> Option<&FieldFormat> {
        self.f.field(name)
    }

    fn num(&self, e: &Expr) -> u64 {
        match e {
            Expr::Num(n) => *n,
            Expr::Str(_) => 0,
            Expr::Field(name) => (self.field(name))
                .and_then(|f| f.number(self.raw))
                .unwrap_or(0),
            Expr::Unary(op, e) => {
                let v = self.num(e);
                match op {
                    '-' => v.wrapping_neg(),
                    '!' => u64::from(v == 0),
                    _ => !v,
                }
            }
            Expr::Bin(op, l, r) => bin(op, self.num(l), self.num(r)),
            Expr::Cond(c, a, b) => {
                if self.num(c) != 0 {
                    self.num(a)
                } else {
                    self.num(b)
                }
            }
            Expr::Cast(ty, e) => cast(ty, self.num(e)),
            Expr::Flags(e, ..) | Expr::Symbolic(e, _) => self.num(e),
            Expr::DynLen(name) => (self.field(name))
                .and_then(|f| f.number(self.raw))
                .map_or(0, |v| v >> 16 & 0xffff),
            Expr::Call(a) => a.first().map_or(0, |e| self.num(e)),
            Expr::GetStr(_) | Expr::Hex(..) | Expr::DynArray(_) | Expr::Array(..) => 0,
        }
    }

    /// The bytes an array-like expression stands for.
    fn bytes(&self, e: &Expr) -> &[u8] {
        match e {
            Expr::Field(name) | Expr::DynArray(name) | Expr::GetStr(name) => (self.field(name))
                .and_then(|f| f.bytes(self.raw))
                .unwrap_or(&[]),
            Expr::Cast(_, e) => self.bytes(e),
            _ => &[],
        }
    }

    /// The string `%s` prints for `e`.
    fn string(&self, e: &Expr) -> String {
        match e {
            Expr::Str(s) => s.clone(),
            Expr::Cond(c, a, b) => {
                if self.num(c) != 0 {
                    self.string(a)
                } else {
                    self.string(b)
                }
            }
            Expr::Cast(_, e) => self.string(e),
            Expr::Field(name) => {
                let Some(f) = self.field(name) else {
                    return String::new();
                };
                if !f.array && f.data_loc.is_none() && f.size == self.printer.long_size {
                    // A pointer: to a constant string the kernel knows, or shown as hex.
                    let v = f.number(self.raw).unwrap_or(0);
                    return match self.printer.printk.get(&v) {
                        Some(s) => s.clone(),
                        None => format!("{v:x}"),
                    };
                }
                c_string(f.bytes(self.raw).unwrap_or(&[]))
            }
            Expr::GetStr(_) | Expr::DynArray(_) => c_string(self.bytes(e)),
            Expr::Flags(e, delim, table) => self.flags(self.num(e), delim, table),
            Expr::Symbolic(e, table) => {
                let v = self.num(e);
                match table.iter().find(|(k, _)| self.num(k) == v) {
                    Some((_, s)) => s.clone(),
                    None => format!("0x{v:x}"),
                }
            }
            Expr::Hex(as_str, buf, len) => {
                let b = self.bytes(buf);
                let n = (self.num(len) as usize).min(b.len());
                let sep = if *as_str { "" } else { " " };
                (b[..n].iter())
                    .map(|x| format!("{x:02x}"))
                    .collect::<Vec<_>>()
                    .join(sep)
            }
            Expr::Array(arr, count, size) => {
                let b = self.bytes(arr);
                let (count, size) = (self.num(count) as usize, self.num(size) as usize);
                if !matches!(size, 1 | 2 | 4 | 8) {
                    return String::new();
                }
                let items: Vec<String> = (b.chunks_exact(size).take(count))
                    .map(|c| {
                        let v = c.iter().rev().fold(0u64, |v, &x| v << 8 | x as u64);
                        format!("0x{v:x}")
                    })
                    .collect();
                format!("{{{}}}", items.join(","))
            }
            Expr::Call(a) => a.first().map_or(String::new(), |e| self.string(e)),
            _ => self.num(e).to_string(),
        }
    }

    fn flags(&self, mut v: u64, delim: &str, table: &[(Expr, String)]) -> String {
        let mut out = String::new();
        let mut printed = false;
        for (k, s) in table {
            let f = self.num(k);
            if v == 0 && f == 0 {
                out.push_str(s);
                break;
            }
            if f != 0 && v & f == f {
                if printed {
                    out.push_str(delim);
                }
                out.push_str(s);
                printed = true;
                v &= !f;
            }
        }
        if v != 0 {
            if printed {
                out.push_str(delim);
            }
            out.push_str(&format!("0x{v:x}"));
        }
        out
    }

    fn format(&self, pieces: &[Piece], args: &[Expr], ksym: &mut KernelSym, out: &mut Vec<u8>) {
        let mut args = args.iter();
        for p in pieces {
            match p {
                Piece::Text(t) => out.extend_from_slice(t.as_bytes()),
                Piece::Conv(s) => {
                    let mut s = s.clone();
                    if s.star {
                        s.width = args.next().map(|e| self.num(e) as usize);
                    }
                    let Some(arg) = args.next() else {
                        return;
                    };
                    let text = self.convert(&s, arg, ksym);
                    pad(out, &s, &text);
                }
            }
        }
    }

    /// One conversion's text before padding to the width.
    fn convert(&self, s: &Spec, arg: &Expr, ksym: &mut KernelSym) -> String {
        match s.conv {
            's' => {
                let mut t = self.string(arg);
                if let Some(p) = s.precision {
                    t = t.chars().take(p).collect();
                }
                t
            }
            'p' => {
                let v = self.num(arg);
                match s.ext {
                    Some(c @ ('s' | 'S' | 'f' | 'F' | 'B')) => match ksym(v) {
                        Some((name, off)) if matches!(c, 'S' | 'F' | 'B') => {
                            format!("{name}+0x{off:x}")
                        }
                        Some((name, _)) => name,
                        None => format!("0x{v:x}"),
                    },
                    _ if v == 0 => "(nil)".into(),
                    _ => format!("0x{v:x}"),
                }
            }
            'c' => ((self.num(arg) as u8) as char).to_string(),
            conv => int(s, conv, self.num(arg)),
        }
    }

    fn failed(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"[FAILED TO PARSE]");
        for f in self
            .f
            .fields
            .iter()
            .filter(|f| !f.name.starts_with("common_"))
        {
            let v = if f.array || f.data_loc.is_some() {
                c_string(f.bytes(self.raw).unwrap_or(&[]))
            } else {
                f.number(self.raw).unwrap_or(0).to_string()
            };
            out.extend_from_slice(format!(" {}={v}", f.name).as_bytes());
        }
    }
}

fn c_string(b: &[u8]) -> String {
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..n]).into_owned()
}

fn bin(op: &str, l: u64, r: u64) -> u64 {
    match op {
        "+" => l.wrapping_add(r),
        "-" => l.wrapping_sub(r),
        "*" => l.wrapping_mul(r),
        "/" => l.checked_div(r).unwrap_or(0),
        "%" => l.checked_rem(r).unwrap_or(0),
        "<<" => l.checked_shl(r as u32).unwrap_or(0),
        ">>" => l.checked_shr(r as u32).unwrap_or(0),
        "&" => l & r,
        "|" => l | r,
        "^" => l ^ r,
        "&&" => u64::from(l != 0 && r != 0),
        "||" => u64::from(l != 0 || r != 0),
        "==" => u64::from(l == r),
        "!=" => u64::from(l != r),
        "<" => u64::from(l < r),
        ">" => u64::from(l > r),
        "<=" => u64::from(l <= r),
        _ => u64::from(l >= r),
    }
}

/// A cast as libtraceevent evaluates it: masked to the type's width.
fn cast(ty: &str, v: u64) -> u64 {
    if ty.ends_with('*') || ty.starts_with("struct") {
        return v;
    }
    match ty
        .trim_start_matches("unsigned ")
        .trim_start_matches("signed ")
    {
        "char" | "u8" | "s8" | "bool" => v & 0xff,
        "short" | "u16" | "s16" => v & 0xffff,
        "int" | "u32" | "s32" | "unsigned" => v & 0xffff_ffff,
        _ => v,
    }
}

/// An integer conversion (`d i u x X o`) of `v` at the length the
/// modifiers give, as C's printf.
fn int(s: &Spec, conv: char, v: u64) -> String {
    let bits = match s.len {
        i8::MIN..=-2 => 8,
        -1 => 16,
        0 => 32,
        _ => 64,
    };
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let u = v & mask;
    let (neg, mag) = if matches!(conv, 'd' | 'i') {
        let shift = 64 - bits;
        let sv = ((u << shift) as i64) >> shift;
        (sv < 0, sv.unsigned_abs())
    } else {
        (false, u)
    };
    let mut digits = match conv {
        'x' => format!("{mag:x}"),
        'X' => format!("{mag:X}"),
        'o' => format!("{mag:o}"),
        _ => mag.to_string(),
    };
    if let Some(p) = s.precision {
        if p == 0 && mag == 0 {
            digits.clear();
        }
        while digits.len() < p {
            digits.insert(0, '0');
        }
    }
    let prefix = match conv {
        'x' if s.alt && mag != 0 => "0x",
        'X' if s.alt && mag != 0 => "0X",
        'o' if s.alt && !digits.starts_with('0') => "0",
        'd' | 'i' if neg => "-",
        'd' | 'i' if s.plus => "+",
        'd' | 'i' if s.space => " ",
        _ => "",
    };
    if s.zero && !s.left && s.precision.is_none() {
        let w = s.width.unwrap_or(0);
        while prefix.len() + digits.len() < w {
            digits.insert(0, '0');
        }
    }
    format!("{prefix}{digits}")
}

fn pad(out: &mut Vec<u8>, s: &Spec, text: &str) {
    let n = text.chars().count();
    let fill = s.width.unwrap_or(0).saturating_sub(n);
    if !s.left {
        out.resize(out.len() + fill, b' ');
    }
    out.extend_from_slice(text.as_bytes());
    if s.left {
        out.resize(out.len() + fill, b' ');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(f: &str) -> Spec {
        match &pieces(f).unwrap()[0] {
            Piece::Conv(s) => s.clone(),
            _ => panic!(),
        }
    }

    #[test]
    fn printf_integers_as_c() {
        assert_eq!(int(&spec("%03d"), 'd', 1), "001");
        assert_eq!(int(&spec("%d"), 'd', 0xffff_ffff), "-1");
        assert_eq!(int(&spec("%08lx"), 'x', 0xffffff9c), "ffffff9c");
        assert_eq!(int(&spec("%#x"), 'x', 255), "0xff");
        assert_eq!(int(&spec("%u"), 'u', u64::MAX), "4294967295");
    }

    #[test]
    fn compiles_the_sched_switch_format() {
        let f = r#""prev_state=%s%s x=%d", (REC->s & 3) ? __print_flags(REC->s & 3, "|", { 0x01, "S" }, { 0x02, "D" }) : "R", REC->s & 4 ? "+" : "", ((unsigned long)(REC->x))"#;
        let (p, a) = compile(f).expect("compiles");
        assert_eq!(p.len(), 5);
        assert_eq!(a.len(), 3);
    }
}
