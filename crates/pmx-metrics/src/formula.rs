//! The formula language: text → [`Formula`] (an expression tree with byte
//! spans), and back to text.
//!
//! ## Grammar
//!
//! From the loosest binding to the tightest:
//!
//! ```text
//! expr    := or [ 'if' or 'else' expr ]          X if COND else Y (right-assoc.)
//! or      := and { ('or' | '|' | '||') and }
//! and     := not { ('and' | '&' | '&&') not }
//! not     := ('not' | '!') not | cmp
//! cmp     := sum { ('<' | '>' | '<=' | '>=' | '==' | '!=') sum }
//! sum     := product { ('+' | '-') product }
//! product := unary { ('*' | '/' | '%') unary }
//! unary   := ('-' | '+') unary | postfix
//! postfix := primary { '[' INTEGER ']' }           per-instance value: a[0]
//! primary := NUMBER | NAME | NAME '(' args ')' | 'if' '(' c ',' x ',' y ')'
//!          | '(' expr ')'
//! ```
//!
//! Numbers: `42`, `0.5`, `1e9`, `.25`, `0x1F`. Functions: `min(a, b, …)`,
//! `max(a, b, …)`, `d_ratio(a, b)` (0 when `b` is 0, as perf defines it),
//! `if(c, x, y)`, `source_count(EVENT)`, `has_event(EVENT)`,
//! `strcmp_cpuid_str(PATTERN)`.
//!
//! ## Names
//!
//! A name is an event, another metric or a constant; which one is decided
//! when a [`crate::Library`] binds the formula, not here. Names are made of
//! letters, digits and `_ . : @ # ?`, and `\` escapes any character (perf
//! writes `topdown\-fe\-bound` and `cpu@EVENT\,cmask\=1@`). So all of these
//! are one name: `INST_RETIRED.ANY`, `LONGEST_LAT_CACHE:MISS:u`,
//! `DATA_CACHE_REFILLS:L2_SHARED:L2_EXCLUSIVE`, `cpu@INST_RETIRED.ANY@`,
//! `r412e`, `#smt_on`, `duration_time`. A name written right before `(%)`
//! takes it in: Intel's threshold formulas name metrics by their legacy names,
//! such as `metric_TMA_..Fetch_Latency(%)`.
//!
//! What depends on the [`Dialect`]:
//! - [`Dialect::Pmx`] (what users type and pmx's own library): a `-` between
//!   two letters or digits continues a name (`branch-misses`,
//!   `topdown-fe-bound`), so subtraction between two names needs spaces
//!   (`a - b`); `c=1`-style settings after a `:` belong to the name
//!   (`ICACHE_16B.IFDATA_STALL:c=1:e=1`); and perf's PMU form
//!   `cpu/event=0x3c,umask=0x0/u` is one name for the core and kernel PMUs
//!   (`cpu`, `cpu_core`, `cpu_atom`, `msr`, `uncore_*`, …).
//! - [`Dialect::Perf`] (`MetricExpr` of perf's JSON) and [`Dialect::Intel`]
//!   (`Formula` of Intel's tables): `-` is always an operator, as in perf.
//!
//! `if`, `else`, `and`, `or` and `not` are keywords.
//!
//! Every error carries the byte span of the offending text; the `Display` of
//! [`FormulaError`] shows the formula with a caret under it.

use pmx_model::spec::Span;
use std::fmt;

/// Which source's conventions a formula follows (see the module page).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Dialect {
    /// What users type and pmx's built-in library: hyphenated kernel event
    /// names, `pmu/terms/` forms and libpfm settings are names.
    #[default]
    Pmx,
    /// perf's `MetricExpr`/`MetricThreshold`: `-` is always an operator,
    /// special characters in names are escaped with `\`.
    Perf,
    /// Intel's metric tables: single-letter aliases bound by the table,
    /// `&`/`|` for and/or.
    Intel,
}

/// The deepest expression tree [`Formula::parse`] accepts: evaluation walks
/// the tree recursively, so the bound keeps any input from exhausting the
/// stack. Intel's deepest formulas are far below it.
pub const MAX_DEPTH: u32 = 400;

/// The deepest nesting of parentheses, calls and prefix operators
/// [`Formula::parse`] accepts (the parser recurses on them). Intel's tables
/// nest 17 deep at most.
pub const MAX_NESTING: u32 = 64;

/// A formula that did not parse: what is wrong and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormulaError {
    /// The whole formula as given.
    pub input: String,
    /// Where the mistake is (byte offsets).
    pub span: Span,
    /// What is wrong.
    pub message: String,
}

impl FormulaError {
    fn new(input: &str, span: Span, message: impl Into<String>) -> FormulaError {
        FormulaError {
            input: input.to_string(),
            span,
            message: message.into(),
        }
    }

    /// 1-based column of the mistake, counted in characters.
    pub fn column(&self) -> usize {
        let end = self.span.start.min(self.input.len());
        let end = (0..=end)
            .rev()
            .find(|&i| self.input.is_char_boundary(i))
            .unwrap_or(0);
        self.input[..end].chars().count() + 1
    }
}

impl fmt::Display for FormulaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "in formula at column {}: {}",
            self.column(),
            self.message
        )?;
        let printable: String = self
            .input
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let col = self.column() - 1;
        let start = self.span.start.min(self.input.len());
        let end = self.span.end.clamp(start, self.input.len());
        let width = self
            .input
            .get(start..end)
            .map(|s| s.chars().count())
            .unwrap_or(1)
            .max(1);
        write!(
            f,
            "\n  {printable}\n  {}{}",
            " ".repeat(col),
            "^".repeat(width)
        )
    }
}

impl std::error::Error for FormulaError {}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%` (remainder)
    Rem,
    /// `<`
    Lt,
    /// `>`
    Gt,
    /// `<=`
    Le,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `and`, `&`, `&&`
    And,
    /// `or`, `|`, `||`
    Or,
}

impl BinOp {
    fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Lt => "<",
            BinOp::Gt => ">",
            BinOp::Le => "<=",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::And => "and",
            BinOp::Or => "or",
        }
    }

    /// Binding strength: higher binds tighter.
    fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 2,
            BinOp::And => 3,
            BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge | BinOp::Eq | BinOp::Ne => 5,
            BinOp::Add | BinOp::Sub => 6,
            BinOp::Mul | BinOp::Div | BinOp::Rem => 7,
        }
    }
}

/// Built-in functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Func {
    /// `min(a, b, …)`
    Min,
    /// `max(a, b, …)`
    Max,
    /// `d_ratio(a, b)`: `a / b`, or 0 when `b` is 0.
    DRatio,
    /// `if(c, x, y)`: the function form of `x if c else y`.
    If,
    /// `source_count(EVENT)`: how many PMU instances were summed into the
    /// event's count (perf).
    SourceCount,
    /// `has_event(EVENT)`: 1 when the event exists on the CPU, else 0.
    HasEvent,
    /// `strcmp_cpuid_str(PATTERN)`: 1 when the CPU key matches the pattern.
    StrcmpCpuidStr,
}

impl Func {
    /// The function's name in formulas.
    pub fn name(self) -> &'static str {
        match self {
            Func::Min => "min",
            Func::Max => "max",
            Func::DRatio => "d_ratio",
            Func::If => "if",
            Func::SourceCount => "source_count",
            Func::HasEvent => "has_event",
            Func::StrcmpCpuidStr => "strcmp_cpuid_str",
        }
    }

    fn from_name(name: &str) -> Option<Func> {
        Some(match name {
            "min" => Func::Min,
            "max" => Func::Max,
            "d_ratio" => Func::DRatio,
            "source_count" => Func::SourceCount,
            "has_event" => Func::HasEvent,
            "strcmp_cpuid_str" => Func::StrcmpCpuidStr,
            _ => return None,
        })
    }
}

/// Named machine facts a formula may use (`#smt_on`, Intel's
/// `HYPERTHREADING_ON`, …). Values come from [`crate::Machine`], except the
/// durations, which come from [`crate::Inputs`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Constant {
    /// `#smt_on`, `HYPERTHREADING_ON`: 1 when SMT is enabled.
    SmtOn,
    /// `THREADS_PER_CORE`.
    ThreadsPerCore,
    /// `#num_cpus`; Intel's `system.sockets[0].cpus.count * system.socket_count`.
    NumCpus,
    /// `#num_cpus_online`.
    NumCpusOnline,
    /// `#num_cores`.
    NumCores,
    /// `#num_packages`, `SOCKET_COUNT`.
    NumPackages,
    /// `#num_dies`.
    NumDies,
    /// `#slots`: the pipeline width (issue slots per cycle).
    Slots,
    /// `#system_tsc_freq`, `SYSTEM_TSC_FREQ`: TSC frequency in Hz.
    TscFrequency,
    /// `#base_frequency`: nominal core frequency in Hz.
    BaseFrequency,
    /// `#core_wide`: 1 when counts cover every SMT sibling of a core
    /// (system-wide counting), so core-wide events may be combined.
    CoreWide,
    /// `CHAS_PER_SOCKET`.
    ChasPerSocket,
    /// `CORES_PER_SOCKET`.
    CoresPerSocket,
    /// `DURATIONTIMEINMILLISECONDS`: the measurement's duration in ms.
    DurationMs,
    /// `DURATIONTIMEINSECONDS`: the measurement's duration in seconds.
    DurationS,
    /// `#NA`: Intel's "not available" marker.
    NotAvailable,
    /// Any other `#name` (looked up in [`crate::Machine::extra`]).
    Other(String),
}

impl Constant {
    /// The constant for a perf-style `#name` (case-insensitive).
    pub fn from_hash_name(name: &str) -> Constant {
        let bare = name.trim_start_matches('#');
        match bare.to_ascii_lowercase().as_str() {
            "smt_on" => Constant::SmtOn,
            "num_cpus" => Constant::NumCpus,
            "num_cpus_online" => Constant::NumCpusOnline,
            "num_cores" => Constant::NumCores,
            "num_packages" => Constant::NumPackages,
            "num_dies" => Constant::NumDies,
            "slots" => Constant::Slots,
            "system_tsc_freq" => Constant::TscFrequency,
            "base_frequency" => Constant::BaseFrequency,
            "core_wide" => Constant::CoreWide,
            "threads_per_core" => Constant::ThreadsPerCore,
            "na" => Constant::NotAvailable,
            _ => Constant::Other(bare.to_string()),
        }
    }

    /// The constant Intel's tables mean by a `Constants` entry's `Name` (or a
    /// bare upper-case name in a formula); `None` when the name is not one.
    pub fn from_intel_name(name: &str) -> Option<Constant> {
        let squeezed: String = name.chars().filter(|c| !c.is_whitespace()).collect();
        Some(match squeezed.to_ascii_uppercase().as_str() {
            "HYPERTHREADING_ON" => Constant::SmtOn,
            "THREADS_PER_CORE" => Constant::ThreadsPerCore,
            "SOCKET_COUNT" => Constant::NumPackages,
            "SYSTEM_TSC_FREQ" => Constant::TscFrequency,
            "CHAS_PER_SOCKET" => Constant::ChasPerSocket,
            "CORES_PER_SOCKET" => Constant::CoresPerSocket,
            "DURATIONTIMEINMILLISECONDS" => Constant::DurationMs,
            "DURATIONTIMEINSECONDS" => Constant::DurationS,
            "SYSTEM.SOCKETS[0].CPUS.COUNT*SYSTEM.SOCKET_COUNT" => Constant::NumCpus,
            "#NA" => Constant::NotAvailable,
            _ => return None,
        })
    }

    /// How the constant is written in pmx formulas (`#smt_on`).
    pub fn name(&self) -> String {
        match self {
            Constant::SmtOn => "#smt_on".into(),
            Constant::ThreadsPerCore => "#threads_per_core".into(),
            Constant::NumCpus => "#num_cpus".into(),
            Constant::NumCpusOnline => "#num_cpus_online".into(),
            Constant::NumCores => "#num_cores".into(),
            Constant::NumPackages => "#num_packages".into(),
            Constant::NumDies => "#num_dies".into(),
            Constant::Slots => "#slots".into(),
            Constant::TscFrequency => "#system_tsc_freq".into(),
            Constant::BaseFrequency => "#base_frequency".into(),
            Constant::CoreWide => "#core_wide".into(),
            Constant::ChasPerSocket => "#chas_per_socket".into(),
            Constant::CoresPerSocket => "#cores_per_socket".into(),
            Constant::DurationMs => "#duration_ms".into(),
            Constant::DurationS => "#duration_s".into(),
            Constant::NotAvailable => "#NA".into(),
            Constant::Other(n) => format!("#{n}"),
        }
    }
}

impl serde::Serialize for Constant {
    /// As its name in formulas (`#smt_on`).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl serde::Serialize for Special {
    /// As its name in formulas (`duration_time`).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// What a name is expected to be, when its source says (Intel's tables list
/// events and metrics separately); [`RefHint::Any`] is decided by the
/// library: a metric when one has the name, else an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RefHint {
    /// A metric if one has the name, else an event.
    #[default]
    Any,
    /// Certainly an event.
    Event,
    /// Certainly a metric.
    Metric,
    /// Not a name but a literal argument (the pattern of
    /// `strcmp_cpuid_str()`): never bound.
    Pattern,
}

/// What a name was bound to by the library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Target {
    /// Not bound yet.
    #[default]
    Unbound,
    /// The library's event with this index.
    Event(u32),
    /// The library's metric with this index.
    Metric(u32),
    /// `duration_time` and its kin.
    Special(Special),
    /// A name that must be a metric but is not one.
    UnknownMetric,
}

/// perf's tool events, measured by the tool rather than a counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Special {
    /// `duration_time`: wall-clock seconds of the measurement.
    DurationTime,
    /// `user_time`: user CPU seconds of the command.
    UserTime,
    /// `system_time`: system CPU seconds of the command.
    SystemTime,
}

impl Special {
    /// The special for a name, when it is one (`duration_time`, also
    /// `tool@duration_time@`).
    pub fn from_name(name: &str) -> Option<Special> {
        let n = name.trim().to_ascii_lowercase();
        let n = n
            .strip_prefix("tool@")
            .or_else(|| n.strip_prefix("tool/"))
            .map(|s| s.trim_end_matches(['@', '/']))
            .unwrap_or(&n);
        match n {
            "duration_time" => Some(Special::DurationTime),
            "user_time" => Some(Special::UserTime),
            "system_time" => Some(Special::SystemTime),
            _ => None,
        }
    }

    /// The name in formulas.
    pub fn name(self) -> &'static str {
        match self {
            Special::DurationTime => "duration_time",
            Special::UserTime => "user_time",
            Special::SystemTime => "system_time",
        }
    }
}

/// A name in a formula: an event, a metric or a tool value.
#[derive(Debug, Clone, PartialEq)]
pub struct Ref {
    /// The name, unescaped (`cpu@X@` stays as written, `topdown\-fe\-bound`
    /// becomes `topdown-fe-bound`).
    pub name: String,
    /// What the source says the name is.
    pub hint: RefHint,
    pub(crate) target: Target,
}

impl Ref {
    /// A reference to `name`.
    pub fn new(name: impl Into<String>, hint: RefHint) -> Ref {
        Ref {
            name: name.into(),
            hint,
            target: Target::Unbound,
        }
    }
}

/// One node of a formula.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    /// What the node computes.
    pub kind: ExprKind,
    /// Where it is in the formula's text.
    pub span: Span,
    depth: u32,
}

/// The kinds of nodes.
#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    /// A number.
    Number(f64),
    /// An event, metric or tool value.
    Ref(Ref),
    /// A machine fact.
    Constant(Constant),
    /// `-x`
    Neg(Box<Expr>),
    /// `not x`
    Not(Box<Expr>),
    /// `x op y`
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `then if cond else otherwise`
    Cond {
        /// The condition.
        cond: Box<Expr>,
        /// Taken when the condition is not 0.
        then: Box<Expr>,
        /// Taken when the condition is 0.
        otherwise: Box<Expr>,
    },
    /// `f(args)`
    Call(Func, Vec<Expr>),
    /// `x[n]`: instance `n` of the event `x`.
    Index(Box<Expr>, u32),
}

impl Expr {
    /// A node; its depth is computed from the children.
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        let depth = 1 + match &kind {
            ExprKind::Number(_) | ExprKind::Ref(_) | ExprKind::Constant(_) => 0,
            ExprKind::Neg(x) | ExprKind::Not(x) | ExprKind::Index(x, _) => x.depth,
            ExprKind::Binary(_, a, b) => a.depth.max(b.depth),
            ExprKind::Cond {
                cond,
                then,
                otherwise,
            } => cond.depth.max(then.depth).max(otherwise.depth),
            ExprKind::Call(_, args) => args.iter().map(|a| a.depth).max().unwrap_or(0),
        };
        Expr { kind, span, depth }
    }

    /// The height of the tree under this node (a leaf is 1).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Call `f` on every node, parents before children.
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Expr)) {
        f(self);
        match &self.kind {
            ExprKind::Number(_) | ExprKind::Ref(_) | ExprKind::Constant(_) => {}
            ExprKind::Neg(x) | ExprKind::Not(x) | ExprKind::Index(x, _) => x.walk(f),
            ExprKind::Binary(_, a, b) => {
                a.walk(f);
                b.walk(f);
            }
            ExprKind::Cond {
                cond,
                then,
                otherwise,
            } => {
                then.walk(f);
                cond.walk(f);
                otherwise.walk(f);
            }
            ExprKind::Call(_, args) => args.iter().for_each(|a| a.walk(f)),
        }
    }

    /// Call `f` on every node, children may be rewritten.
    pub(crate) fn walk_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        f(self);
        match &mut self.kind {
            ExprKind::Number(_) | ExprKind::Ref(_) | ExprKind::Constant(_) => {}
            ExprKind::Neg(x) | ExprKind::Not(x) | ExprKind::Index(x, _) => x.walk_mut(f),
            ExprKind::Binary(_, a, b) => {
                a.walk_mut(f);
                b.walk_mut(f);
            }
            ExprKind::Cond {
                cond,
                then,
                otherwise,
            } => {
                then.walk_mut(f);
                cond.walk_mut(f);
                otherwise.walk_mut(f);
            }
            ExprKind::Call(_, args) => args.iter_mut().for_each(|a| a.walk_mut(f)),
        }
    }

    fn precedence(&self) -> u8 {
        match &self.kind {
            ExprKind::Cond { .. } => 1,
            ExprKind::Binary(op, ..) => op.precedence(),
            ExprKind::Not(_) => 4,
            ExprKind::Neg(_) => 8,
            _ => 9,
        }
    }
}

/// Write a name so that the pmx dialect reads it back as the same name:
/// as it is when it lexes as one name, else with `\` escapes.
fn write_name(f: &mut fmt::Formatter<'_>, name: &str) -> fmt::Result {
    let plain = matches!(
        lex(name, Dialect::Pmx).as_deref(),
        Ok([Token { tok: Tok::Name(n), .. }, Token { tok: Tok::End, .. }]) if n == name
    );
    if plain {
        return f.write_str(name);
    }
    for (i, c) in name.char_indices() {
        let safe = (c.is_ascii_alphabetic() && i > 0)
            || (c.is_ascii_alphabetic() && !matches!(name, "if" | "else" | "and" | "or" | "not"))
            || matches!(c, '_' | '#')
            || (i > 0 && (c.is_ascii_digit() || matches!(c, '.' | ':' | '@' | '?')));
        if safe {
            write!(f, "{c}")?;
        } else {
            write!(f, "\\{c}")?;
        }
    }
    Ok(())
}

impl fmt::Display for Expr {
    /// Pmx-dialect text that parses back to the same tree (parentheses only
    /// where precedence needs them).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let child = |f: &mut fmt::Formatter<'_>, e: &Expr, min: u8| -> fmt::Result {
            if e.precedence() < min {
                write!(f, "({e})")
            } else {
                write!(f, "{e}")
            }
        };
        match &self.kind {
            ExprKind::Number(n) => {
                if n.fract() == 0.0 && n.abs() < 1e15 {
                    write!(f, "{}", *n as i64)
                } else {
                    write!(f, "{n}")
                }
            }
            ExprKind::Ref(r) => write_name(f, &r.name),
            ExprKind::Constant(c) => write_name(f, &c.name()),
            ExprKind::Neg(x) => {
                write!(f, "-")?;
                child(f, x, 8)
            }
            ExprKind::Not(x) => {
                write!(f, "not ")?;
                child(f, x, 4)
            }
            ExprKind::Binary(op, a, b) => {
                let p = op.precedence();
                child(f, a, p)?;
                write!(f, " {} ", op.symbol())?;
                // Left-associative: a right operand of equal precedence
                // needs parentheses.
                child(f, b, p + 1)
            }
            ExprKind::Cond {
                cond,
                then,
                otherwise,
            } => {
                child(f, then, 2)?;
                write!(f, " if ")?;
                child(f, cond, 2)?;
                write!(f, " else ")?;
                child(f, otherwise, 1)
            }
            ExprKind::Call(func, args) => {
                write!(f, "{}(", func.name())?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{a}")?;
                }
                write!(f, ")")
            }
            ExprKind::Index(x, n) => {
                child(f, x, 9)?;
                write!(f, "[{n}]")
            }
        }
    }
}

/// A parsed formula: its text and its expression tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Formula {
    text: String,
    dialect: Dialect,
    root: Expr,
}

impl Formula {
    /// Parse `text` in `dialect`.
    pub fn parse(text: &str, dialect: Dialect) -> Result<Formula, FormulaError> {
        let tokens = lex(text, dialect)?;
        let mut p = Parser {
            input: text,
            tokens,
            pos: 0,
            nesting: 0,
        };
        let root = p.expr()?;
        let t = p.peek();
        if t.tok != Tok::End {
            let msg = match t.tok {
                Tok::RParen => "unbalanced ')'".to_string(),
                Tok::Name(_) | Tok::Num(_) => {
                    format!("expected an operator before {}", t.tok.describe())
                }
                _ => format!("unexpected {}", t.tok.describe()),
            };
            return Err(FormulaError::new(text, t.span, msg));
        }
        Ok(Formula {
            text: text.to_string(),
            dialect,
            root,
        })
    }

    /// A formula from a tree built in code (the text is the tree printed).
    pub fn from_expr(root: Expr) -> Formula {
        Formula {
            text: root.to_string(),
            dialect: Dialect::Pmx,
            root,
        }
    }

    /// The text it was parsed from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The dialect it was parsed in.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The expression tree.
    pub fn root(&self) -> &Expr {
        &self.root
    }

    pub(crate) fn root_mut(&mut self) -> &mut Expr {
        &mut self.root
    }

    /// Every name the formula refers to, in order of appearance (then-branch
    /// before condition before else-branch), duplicates included.
    pub fn references(&self) -> Vec<&Ref> {
        let mut out = Vec::new();
        self.root.walk(&mut |e| {
            if let ExprKind::Ref(r) = &e.kind {
                out.push(r);
            }
        });
        out
    }

    /// The text of the node at `span` (for messages).
    pub fn snippet(&self, span: Span) -> &str {
        self.text
            .get(span.start.min(self.text.len())..span.end.min(self.text.len()))
            .unwrap_or("")
    }
}

impl fmt::Display for Formula {
    /// The tree in pmx's dialect (for Intel's formulas: with the table's
    /// aliases replaced by the names they stand for).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.root)
    }
}

// ---------------------------------------------------------------------------
// Lexer

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Name(String),
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Op(BinOp),
    Not,
    If,
    Else,
    End,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Num(n) => format!("number {n}"),
            Tok::Name(n) => format!("name '{n}'"),
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::LBracket => "'['".into(),
            Tok::RBracket => "']'".into(),
            Tok::Comma => "','".into(),
            Tok::Op(op) => format!("'{}'", op.symbol()),
            Tok::Not => "'not'".into(),
            Tok::If => "'if'".into(),
            Tok::Else => "'else'".into(),
            Tok::End => "end of formula".into(),
        }
    }
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    span: Span,
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || matches!(c, b'_' | b'#' | b'\\')
}

fn is_name_continue(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'@' | b'#' | b'?')
}

/// PMUs whose `pmu/…/` form the pmx dialect reads as one name.
fn is_pmu_form_name(name: &str) -> bool {
    matches!(
        name,
        "cpu"
            | "cpu_core"
            | "cpu_atom"
            | "cpu_lowpower"
            | "msr"
            | "power"
            | "software"
            | "tracepoint"
            | "breakpoint"
            | "tool"
    ) || ["uncore_", "cstate_", "amd_", "ibs_", "intel_"]
        .iter()
        .any(|p| name.starts_with(p))
}

fn lex(input: &str, dialect: Dialect) -> Result<Vec<Token>, FormulaError> {
    let b = input.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |start: usize, end: usize, msg: String| {
        FormulaError::new(input, Span::new(start, end.max(start + 1)), msg)
    };
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if !c.is_ascii() {
            let ch = input[i..].chars().next().unwrap_or('?');
            return Err(err(
                i,
                i + ch.len_utf8(),
                format!("unexpected character {ch:?}"),
            ));
        }
        let start = i;
        // Numbers (a digit run followed by letters is a name: 4K_Aliasing).
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            let (value, end) = lex_number(input, i).map_err(|(s, e, m)| err(s, e, m))?;
            let glued = b
                .get(end)
                .is_some_and(|&n| n.is_ascii_alphabetic() || n == b'_');
            if !glued {
                out.push(Token {
                    tok: Tok::Num(value),
                    span: Span::new(start, end),
                });
                i = end;
                continue;
            }
        }
        if is_name_start(c) || c.is_ascii_digit() {
            let (name, end) = lex_name(input, i, dialect).map_err(|(s, e, m)| err(s, e, m))?;
            let escaped = input[start..end].contains('\\');
            let tok = match name.as_str() {
                "if" if !escaped => Tok::If,
                "else" if !escaped => Tok::Else,
                "and" if !escaped => Tok::Op(BinOp::And),
                "or" if !escaped => Tok::Op(BinOp::Or),
                "not" if !escaped => Tok::Not,
                _ => Tok::Name(name),
            };
            out.push(Token {
                tok,
                span: Span::new(start, end),
            });
            i = end;
            continue;
        }
        // The second character of a two-character operator; Intel writes
        // `> =` with a space in between.
        let after = (i + 1..b.len())
            .find(|&k| !b[k].is_ascii_whitespace())
            .unwrap_or(b.len());
        let two = |n: u8| b.get(after) == Some(&n) && (after == i + 1 || matches!(n, b'='));
        let len2 = after + 1 - i;
        let (tok, len) = match c {
            b'(' => (Tok::LParen, 1),
            b')' => (Tok::RParen, 1),
            b'[' => (Tok::LBracket, 1),
            b']' => (Tok::RBracket, 1),
            b',' => (Tok::Comma, 1),
            b'+' => (Tok::Op(BinOp::Add), 1),
            b'-' => (Tok::Op(BinOp::Sub), 1),
            b'*' => (Tok::Op(BinOp::Mul), 1),
            b'/' => (Tok::Op(BinOp::Div), 1),
            b'%' => (Tok::Op(BinOp::Rem), 1),
            b'<' if two(b'=') => (Tok::Op(BinOp::Le), len2),
            b'<' => (Tok::Op(BinOp::Lt), 1),
            b'>' if two(b'=') => (Tok::Op(BinOp::Ge), len2),
            b'>' => (Tok::Op(BinOp::Gt), 1),
            b'=' if two(b'=') => (Tok::Op(BinOp::Eq), len2),
            b'=' => {
                return Err(err(
                    i,
                    i + 1,
                    "'=' is not an operator: compare with '=='".into(),
                ))
            }
            b'!' if two(b'=') => (Tok::Op(BinOp::Ne), len2),
            b'!' => (Tok::Not, 1),
            b'&' if two(b'&') => (Tok::Op(BinOp::And), len2),
            b'&' => (Tok::Op(BinOp::And), 1),
            b'|' if two(b'|') => (Tok::Op(BinOp::Or), len2),
            b'|' => (Tok::Op(BinOp::Or), 1),
            _ => {
                return Err(err(
                    i,
                    i + 1,
                    format!("unexpected character '{}'", c as char),
                ))
            }
        };
        out.push(Token {
            tok,
            span: Span::new(i, i + len),
        });
        i += len;
    }
    out.push(Token {
        tok: Tok::End,
        span: Span::new(input.len(), input.len() + 1),
    });
    Ok(out)
}

type LexError = (usize, usize, String);

fn lex_number(input: &str, start: usize) -> Result<(f64, usize), LexError> {
    let b = input.as_bytes();
    let mut i = start;
    if b[i] == b'0' && matches!(b.get(i + 1), Some(b'x' | b'X')) {
        i += 2;
        let digits = i;
        while i < b.len() && b[i].is_ascii_hexdigit() {
            i += 1;
        }
        if i == digits {
            return Err((start, i, "'0x' needs hex digits".into()));
        }
        let v = u64::from_str_radix(&input[digits..i], 16)
            .map_err(|_| (start, i, "hex number too large for 64 bits".to_string()))?;
        return Ok((v as f64, i));
    }
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i < b.len() && matches!(b[i], b'e' | b'E') {
        let mut j = i + 1;
        if j < b.len() && matches!(b[j], b'+' | b'-') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    let text = &input[start..i];
    let v: f64 = text
        .parse()
        .map_err(|_| (start, i, format!("bad number '{text}'")))?;
    if !v.is_finite() {
        return Err((start, i, format!("number '{text}' is out of range")));
    }
    Ok((v, i))
}

fn lex_name(input: &str, start: usize, dialect: Dialect) -> Result<(String, usize), LexError> {
    let b = input.as_bytes();
    let mut name = String::new();
    let mut i = start;
    while i < b.len() {
        let c = b[i];
        if c == b'\\' {
            let Some(next) = input[i + 1..].chars().next() else {
                return Err((i, i + 1, "'\\' at the end escapes nothing".into()));
            };
            name.push(next);
            i += 1 + next.len_utf8();
            continue;
        }
        if is_name_continue(c) {
            name.push(c as char);
            i += 1;
            continue;
        }
        if dialect == Dialect::Pmx && i > start {
            let prev = b[i - 1];
            let next = b.get(i + 1).copied().unwrap_or(0);
            // branch-misses, topdown-fe-bound, L1-dcache-loads
            if c == b'-' && prev.is_ascii_alphanumeric() && next.is_ascii_alphabetic() {
                name.push('-');
                i += 1;
                continue;
            }
            // libpfm settings: LONGEST_LAT_CACHE.MISS:c=1
            if c == b'='
                && prev.is_ascii_alphanumeric()
                && next.is_ascii_alphanumeric()
                && name.contains(':')
            {
                name.push('=');
                i += 1;
                continue;
            }
            // cpu/event=0x3c,umask=0/u
            if c == b'/' && is_pmu_form_name(&name) {
                let body_start = i + 1;
                let Some(close) = input[body_start..]
                    .find(|ch: char| ch == '/' || ch.is_whitespace())
                    .map(|k| k + body_start)
                    .filter(|&k| b[k] == b'/')
                else {
                    return Err((
                        start,
                        input.len(),
                        format!("'{name}/' starts a PMU event but has no closing '/'"),
                    ));
                };
                if close == body_start {
                    return Err((i, close + 1, "empty PMU event '//'".into()));
                }
                name.push_str(&input[i..=close]);
                i = close + 1;
                // Modifiers right after the closing slash: cpu/…/u, cpu/…/:u
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b':') {
                    name.push(b[i] as char);
                    i += 1;
                }
                break;
            }
        }
        break;
    }
    if input[i..].starts_with("(%)") {
        name.push_str("(%)");
        i += 3;
    }
    Ok((name, i))
}

// ---------------------------------------------------------------------------
// Parser

struct Parser<'a> {
    input: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    nesting: u32,
}

impl Parser<'_> {
    fn peek(&self) -> &Token {
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn err(&self, span: Span, msg: impl Into<String>) -> FormulaError {
        FormulaError::new(self.input, span, msg)
    }

    fn node(&self, kind: ExprKind, span: Span) -> Result<Expr, FormulaError> {
        let e = Expr::new(kind, span);
        if e.depth > MAX_DEPTH {
            return Err(self.err(
                span,
                format!("formula nested too deeply (more than {MAX_DEPTH} levels)"),
            ));
        }
        Ok(e)
    }

    fn enter(&mut self, span: Span) -> Result<(), FormulaError> {
        self.nesting += 1;
        if self.nesting > MAX_NESTING {
            return Err(self.err(
                span,
                format!("formula nested too deeply (more than {MAX_NESTING} levels)"),
            ));
        }
        Ok(())
    }

    fn expect(&mut self, want: Tok, what: &str) -> Result<Token, FormulaError> {
        let t = self.peek().clone();
        if t.tok == want {
            Ok(self.next())
        } else {
            Err(self.err(
                t.span,
                format!("expected {what}, found {}", t.tok.describe()),
            ))
        }
    }

    /// expr := or [ 'if' or 'else' expr ]
    fn expr(&mut self) -> Result<Expr, FormulaError> {
        let span = self.peek().span;
        self.enter(span)?;
        let then = self.or_expr()?;
        let out = if self.peek().tok == Tok::If {
            self.next();
            let cond = self.or_expr()?;
            let else_tok = self.peek().clone();
            if else_tok.tok != Tok::Else {
                return Err(self.err(
                    else_tok.span,
                    format!(
                        "expected 'else' after 'X if COND', found {}",
                        else_tok.tok.describe()
                    ),
                ));
            }
            self.next();
            let otherwise = self.expr()?;
            let span = Span::new(then.span.start, otherwise.span.end);
            self.node(
                ExprKind::Cond {
                    cond: Box::new(cond),
                    then: Box::new(then),
                    otherwise: Box::new(otherwise),
                },
                span,
            )?
        } else {
            then
        };
        self.nesting -= 1;
        Ok(out)
    }

    /// A left-associative chain of the operators `ops` over `operand`.
    fn chain(
        &mut self,
        ops: &[BinOp],
        operand: fn(&mut Self) -> Result<Expr, FormulaError>,
    ) -> Result<Expr, FormulaError> {
        let mut left = operand(self)?;
        while let Tok::Op(op) = self.peek().tok {
            if !ops.contains(&op) {
                break;
            }
            self.next();
            let right = operand(self)?;
            let span = Span::new(left.span.start, right.span.end);
            left = self.node(ExprKind::Binary(op, Box::new(left), Box::new(right)), span)?;
        }
        Ok(left)
    }

    fn or_expr(&mut self) -> Result<Expr, FormulaError> {
        self.chain(&[BinOp::Or], Self::and_expr)
    }

    fn and_expr(&mut self) -> Result<Expr, FormulaError> {
        self.chain(&[BinOp::And], Self::not_expr)
    }

    fn not_expr(&mut self) -> Result<Expr, FormulaError> {
        if self.peek().tok == Tok::Not {
            let t = self.next();
            self.enter(t.span)?;
            let x = self.not_expr()?;
            self.nesting -= 1;
            let span = Span::new(t.span.start, x.span.end);
            return self.node(ExprKind::Not(Box::new(x)), span);
        }
        self.cmp()
    }

    fn cmp(&mut self) -> Result<Expr, FormulaError> {
        self.chain(
            &[
                BinOp::Lt,
                BinOp::Gt,
                BinOp::Le,
                BinOp::Ge,
                BinOp::Eq,
                BinOp::Ne,
            ],
            Self::sum,
        )
    }

    fn sum(&mut self) -> Result<Expr, FormulaError> {
        self.chain(&[BinOp::Add, BinOp::Sub], Self::product)
    }

    fn product(&mut self) -> Result<Expr, FormulaError> {
        self.chain(&[BinOp::Mul, BinOp::Div, BinOp::Rem], Self::unary)
    }

    fn unary(&mut self) -> Result<Expr, FormulaError> {
        let t = self.peek().clone();
        match t.tok {
            Tok::Op(BinOp::Sub) | Tok::Op(BinOp::Add) => {
                self.next();
                self.enter(t.span)?;
                let x = self.unary()?;
                self.nesting -= 1;
                if t.tok == Tok::Op(BinOp::Add) {
                    return Ok(x);
                }
                let span = Span::new(t.span.start, x.span.end);
                // Fold the sign into a number.
                if let ExprKind::Number(n) = x.kind {
                    return self.node(ExprKind::Number(-n), span);
                }
                self.node(ExprKind::Neg(Box::new(x)), span)
            }
            _ => self.postfix(),
        }
    }

    fn postfix(&mut self) -> Result<Expr, FormulaError> {
        let mut x = self.primary()?;
        while self.peek().tok == Tok::LBracket {
            let open = self.next();
            if !matches!(x.kind, ExprKind::Ref(_)) {
                return Err(self.err(open.span, "only an event can be indexed ('x[0]')"));
            }
            let t = self.next();
            let n = match t.tok {
                Tok::Num(n) if n >= 0.0 && n.fract() == 0.0 && n <= u32::MAX as f64 => n as u32,
                _ => {
                    return Err(self.err(
                        t.span,
                        format!("expected an instance number, found {}", t.tok.describe()),
                    ))
                }
            };
            let close = self.expect(Tok::RBracket, "']'")?;
            let span = Span::new(x.span.start, close.span.end);
            x = self.node(ExprKind::Index(Box::new(x), n), span)?;
        }
        Ok(x)
    }

    fn primary(&mut self) -> Result<Expr, FormulaError> {
        let t = self.next();
        match t.tok {
            Tok::Num(n) => self.node(ExprKind::Number(n), t.span),
            Tok::LParen => {
                let inner = self.expr()?;
                let close = self.peek().clone();
                if close.tok != Tok::RParen {
                    return Err(self.err(
                        close.span,
                        format!(
                            "expected ')' to close the '(' at column {}, found {}",
                            self.input[..t.span.start].chars().count() + 1,
                            close.tok.describe()
                        ),
                    ));
                }
                self.next();
                // Keep the inner node; its span grows to the parentheses.
                let mut e = inner;
                e.span = Span::new(t.span.start, close.span.end);
                Ok(e)
            }
            Tok::If if self.peek().tok == Tok::LParen => self.call(Func::If, t.span),
            Tok::Name(name) => {
                if self.peek().tok == Tok::LParen {
                    return match Func::from_name(&name) {
                        Some(f) => self.call(f, t.span),
                        None => Err(self.err(
                            t.span,
                            format!(
                                "unknown function '{name}' (functions: min, max, d_ratio, if, source_count, has_event, strcmp_cpuid_str)"
                            ),
                        )),
                    };
                }
                if let Some(bare) = name.strip_prefix('#') {
                    // One `#`, then a name: `##` or `##x` would print as
                    // another formula (`#`, `#x`).
                    if bare.is_empty() || bare.starts_with('#') {
                        return Err(self.err(t.span, "'#' needs a constant name (#smt_on)"));
                    }
                    return self.node(ExprKind::Constant(Constant::from_hash_name(&name)), t.span);
                }
                self.node(ExprKind::Ref(Ref::new(name, RefHint::Any)), t.span)
            }
            Tok::End => Err(self.err(t.span, "formula ends where a value is expected")),
            other => Err(self.err(
                t.span,
                format!("expected a value, found {}", other.describe()),
            )),
        }
    }

    fn call(&mut self, func: Func, name_span: Span) -> Result<Expr, FormulaError> {
        self.expect(Tok::LParen, "'('")?;
        self.enter(name_span)?;
        let mut args = Vec::new();
        if self.peek().tok != Tok::RParen {
            loop {
                args.push(self.expr()?);
                if self.peek().tok == Tok::Comma {
                    self.next();
                    continue;
                }
                break;
            }
        }
        let close = self.peek().clone();
        if close.tok != Tok::RParen {
            return Err(self.err(
                close.span,
                format!(
                    "expected ',' or ')' in the arguments of {}(), found {}",
                    func.name(),
                    close.tok.describe()
                ),
            ));
        }
        self.next();
        self.nesting -= 1;
        let span = Span::new(name_span.start, close.span.end);
        let arity_ok = match func {
            Func::Min | Func::Max => !args.is_empty(),
            Func::DRatio => args.len() == 2,
            Func::If => args.len() == 3,
            Func::SourceCount | Func::HasEvent | Func::StrcmpCpuidStr => args.len() == 1,
        };
        if !arity_ok {
            let want = match func {
                Func::Min | Func::Max => "at least one argument",
                Func::DRatio => "two arguments",
                Func::If => "three arguments (condition, then, else)",
                _ => "one argument",
            };
            return Err(self.err(
                span,
                format!("{}() takes {want}, not {}", func.name(), args.len()),
            ));
        }
        if matches!(
            func,
            Func::SourceCount | Func::HasEvent | Func::StrcmpCpuidStr
        ) && !matches!(args[0].kind, ExprKind::Ref(_))
        {
            return Err(self.err(args[0].span, format!("{}() takes a name", func.name())));
        }
        self.node(ExprKind::Call(func, args), span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Formula {
        Formula::parse(s, Dialect::Pmx).unwrap_or_else(|e| panic!("{e}"))
    }

    fn show(s: &str) -> String {
        p(s).to_string()
    }

    #[test]
    fn precedence() {
        assert_eq!(show("a + b * c"), "a + b * c");
        assert_eq!(show("(a + b) * c"), "(a + b) * c");
        assert_eq!(show("a - (b - c)"), "a - (b - c)");
        assert_eq!(show("a - b - c"), "a - b - c");
        assert_eq!(show("a / b / c"), "a / b / c");
        assert_eq!(show("a / (b * c)"), "a / (b * c)");
        assert_eq!(show("-a * b"), "-a * b");
        assert_eq!(show("-(a * b)"), "-(a * b)");
        assert_eq!(show("a > 1 & b > 2 | c < 3"), "a > 1 and b > 2 or c < 3");
        assert_eq!(
            show("a > 1 & (b > 2 | c < 3)"),
            "a > 1 and (b > 2 or c < 3)"
        );
        assert_eq!(show("not a > 1 and b"), "not a > 1 and b");
        // 'if' binds loosest: (1 - a / b) if c else 0
        let f = p("1 - a / ( b / 2 ) if smt_on else 0");
        let ExprKind::Cond { then, cond, .. } = &f.root().kind else {
            panic!("{f:?}")
        };
        assert_eq!(then.to_string(), "1 - a / (b / 2)");
        assert_eq!(cond.to_string(), "smt_on");
        // Right-associative chains.
        assert_eq!(
            show("a if x else b if y else c"),
            "a if x else b if y else c"
        );
        assert_eq!(show("(a if x else b) + 1"), "(a if x else b) + 1");
        assert_eq!(show("2 * -3"), "2 * -3");
        assert_eq!(show("a == b != c"), "a == b != c");
        assert_eq!(show("a <= b"), "a <= b");
        // Intel writes `> =` with a space.
        assert_eq!(show("x if ( b > = 0 ) else y"), "x if b >= 0 else y");
        assert_eq!(show("a = = b"), "a == b");
    }

    #[test]
    fn a_hash_constant_has_one_hash_and_a_name() {
        // Found by tests/integration/no_panics.rs: `##` parsed as a nameless constant
        // that printed as `#`, which does not parse.
        for d in [Dialect::Pmx, Dialect::Perf, Dialect::Intel] {
            for text in ["#", "##", "##smt_on", "1 + ##"] {
                let e = Formula::parse(text, d).unwrap_err();
                assert!(
                    e.to_string().contains("needs a constant name"),
                    "{text:?}: {e}"
                );
            }
            let f = Formula::parse("#smt_on + #num_cpus", d).unwrap();
            assert_eq!(f.to_string(), "#smt_on + #num_cpus");
        }
    }

    #[test]
    fn names_numbers_and_calls() {
        let f = p("INST_RETIRED.ANY / cpu@CPU_CLK_UNHALTED.THREAD@ + LONGEST_LAT_CACHE:MISS:u");
        let names: Vec<&str> = f.references().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "INST_RETIRED.ANY",
                "cpu@CPU_CLK_UNHALTED.THREAD@",
                "LONGEST_LAT_CACHE:MISS:u"
            ]
        );
        let f = Formula::parse(
            r"topdown\-fe\-bound / (cha@UNC_CHA_TOR_INSERTS.IA_MISS\,config1\=0x40433@ + 1e9)",
            Dialect::Perf,
        )
        .unwrap();
        let names: Vec<&str> = f.references().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "topdown-fe-bound",
                "cha@UNC_CHA_TOR_INSERTS.IA_MISS,config1=0x40433@"
            ]
        );
        assert_eq!(
            show("topdown-fe-bound / slots - branch-misses"),
            "topdown-fe-bound / slots - branch-misses"
        );
        // Perf dialect: '-' is an operator.
        let f = Formula::parse("a-b", Dialect::Perf).unwrap();
        assert!(matches!(f.root().kind, ExprKind::Binary(BinOp::Sub, ..)));
        assert_eq!(show("0x10 + .5 + 1e3 + 2.5E-1"), "16 + 0.5 + 1000 + 0.25");
        assert_eq!(
            show("d_ratio(a, b) + min(a, b, c) + max(a, 0) + if(c, 1, 2)"),
            "d_ratio(a, b) + min(a, b, c) + max(a, 0) + if(c, 1, 2)"
        );
        assert_eq!(show("#smt_on + #NUM_CPUS"), "#smt_on + #num_cpus");
        assert_eq!(show("a[0] / b"), "a[0] / b");
        assert_eq!(
            show("cpu/event=0x3c,umask=0x0/u / r412e"),
            "cpu/event=0x3c,umask=0x0/u / r412e"
        );
        assert_eq!(
            show("ICACHE_16B.IFDATA_STALL:c=1:e=1 * 2"),
            "ICACHE_16B.IFDATA_STALL:c=1:e=1 * 2"
        );
        let f = p("metric_TMA_..Fetch_Latency(%) > 10 & metric_TMA_Frontend_Bound(%) >0.20");
        let names: Vec<&str> = f.references().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "metric_TMA_..Fetch_Latency(%)",
                "metric_TMA_Frontend_Bound(%)"
            ]
        );
        // A digit run glued to letters is a name (Intel's 4K_Aliasing).
        assert_eq!(show("4K_Aliasing + 1"), "4K_Aliasing + 1");
        assert_eq!(
            show("#NA if 0 > 2 else 1000 * a / b"),
            "#NA if 0 > 2 else 1000 * a / b"
        );
    }

    #[test]
    fn printing_round_trips() {
        for s in [
            "a - (b - c) * -d / (e % f)",
            "x if a > 1 and not b or c else (y if d else z)",
            "max(1 - (a + b), 0) * 100",
            r"topdown-fe-bound / (topdown-fe-bound + topdown-bad-spec) - 0.5",
            "source_count(UNC_CHA_CLOCKTICKS) * #num_packages",
            "(a if b else c) if d else e",
        ] {
            let once = p(s).to_string();
            let twice = p(&once).to_string();
            assert_eq!(once, twice, "{s}");
            assert_eq!(p(&once).root().clone().to_string(), once);
        }
    }

    fn err(s: &str) -> FormulaError {
        Formula::parse(s, Dialect::Pmx).unwrap_err()
    }

    #[test]
    fn errors_point_at_the_character() {
        let e = err("a + * b");
        assert_eq!(e.span.start, 4, "{e}");
        assert!(e.message.contains("expected a value"), "{e}");
        let e = err("(a + b");
        assert_eq!(e.span.start, 6);
        assert!(e.message.contains("')'"), "{e}");
        let e = err("a + b)");
        assert_eq!(e.span.start, 5);
        assert!(e.message.contains("unbalanced"), "{e}");
        let e = err("a if b");
        assert_eq!(e.span.start, 6);
        assert!(e.message.contains("else"), "{e}");
        let e = err("foo(a)");
        assert_eq!((e.span.start, e.span.end), (0, 3));
        assert!(e.message.contains("unknown function"), "{e}");
        let e = err("d_ratio(a)");
        assert!(e.message.contains("two arguments"), "{e}");
        let e = err("a $ b");
        assert_eq!(e.span.start, 2);
        let e = err("a = b");
        assert!(e.message.contains("=="), "{e}");
        let e = err("a b");
        assert_eq!(e.span.start, 2);
        assert!(e.message.contains("operator"), "{e}");
        let e = err("");
        assert_eq!(e.span.start, 0);
        let e = err("cpu/event=0x3c");
        assert!(e.message.contains("closing"), "{e}");
        let e = err("x é");
        assert_eq!(e.column(), 3);
        let e = err("(1 + 2)[0]");
        assert!(e.message.contains("indexed"), "{e}");
        let e = err("0x");
        assert!(e.message.contains("hex"), "{e}");
        let shown = err("a + (b * ) / c").to_string();
        assert!(shown.starts_with("in formula at column 10:"), "{shown}");
        assert!(
            shown.ends_with("\n  a + (b * ) / c\n           ^"),
            "{shown}"
        );
    }

    #[test]
    fn depth_is_bounded() {
        let deep = format!("{}a{}", "(".repeat(5000), ")".repeat(5000));
        assert!(err(&deep).message.contains("deeply"));
        let long = vec!["a"; 5000].join(" + ");
        assert!(err(&long).message.contains("deeply"));
        let minus = format!("{}a", "-".repeat(5000));
        assert!(err(&minus).message.contains("deeply"));
        let ok = vec!["a"; 300].join(" + ");
        assert!(Formula::parse(&ok, Dialect::Pmx).is_ok());
    }
}
