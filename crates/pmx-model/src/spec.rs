//! The event-spec grammar users type, compatible with perf's and libpfm's.
//!
//! One spec names one event. The forms:
//!
//! ```text
//! cpu/event=0x2e,umask=0x41,cmask=1,inv,edge/u     PMU with terms, modifiers after '/'
//! cpu/event=0x2e,umask=0x41/:u                      (a ':' before the modifiers is allowed)
//! event=0x2e,umask=0x41:u                           terms for the default (core) PMU
//! r412e:k                                           raw perf config in hex
//! LONGEST_LAT_CACHE.MISS:u                          a symbolic name (resolved elsewhere)
//! LONGEST_LAT_CACHE:MISS:c=1:i=1:u                  libpfm style: umask and settings after ':'
//! mem:0x1000/8:w                                    hardware breakpoint
//! ```
//!
//! Modifiers (perf): `u` user, `k` kernel, `h` hypervisor (naming any of
//! these excludes the others), `G` guest only, `H` host only, `p`/`pp`/`ppp`
//! precise level, `P` maximal precision, `I` exclude idle, `D` pinned, `S`
//! sample read, `W` weak group. libpfm style settings after a `:`: `c=N`
//! counter mask, `i`/`i=1` invert, `e`/`e=1` edge, `t=1` any thread,
//! `u=0|1`, `k=0|1`, `h=0|1`, `ldlat=N`, `period=N`, `freq=N`.
//!
//! Every error carries the byte position of the offending character;
//! [`SpecError`]'s `Display` shows the spec with a caret under it.

use serde::Serialize;
use std::fmt;

/// A byte range in the spec text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub const fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }
}

/// A malformed spec: what is wrong and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// The whole spec as typed.
    pub input: String,
    /// Where the mistake is.
    pub span: Span,
    /// What is wrong.
    pub message: String,
    /// Close matches, best first (e.g. for a misspelt term).
    pub suggestions: Vec<String>,
}

impl SpecError {
    /// An error at `span` of `input`.
    pub fn new(input: &str, span: Span, message: impl Into<String>) -> SpecError {
        SpecError {
            input: input.to_string(),
            span,
            message: message.into(),
            suggestions: Vec::new(),
        }
    }

    /// Attach close matches.
    pub fn with_suggestions(mut self, suggestions: Vec<String>) -> SpecError {
        self.suggestions = suggestions;
        self
    }

    /// 1-based column of the mistake, counted in characters.
    pub fn column(&self) -> usize {
        let end = self.span.start.min(self.input.len());
        self.input
            .get(..end)
            .map(|s| s.chars().count())
            .unwrap_or(end)
            + 1
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "in event spec at column {}: {}",
            self.column(),
            self.message
        )?;
        if !self.suggestions.is_empty() {
            let list: Vec<String> = self.suggestions.iter().map(|s| format!("'{s}'")).collect();
            write!(f, " (did you mean {}?)", list.join(", "))?;
        }
        let printable: String = self
            .input
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        let col = self.column() - 1;
        let width = self
            .input
            .get(self.span.start.min(self.input.len())..self.span.end.min(self.input.len()))
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

impl std::error::Error for SpecError {}

/// The value of a term.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TermValue {
    /// A term written without `=` (`inv`, `edge`): means 1.
    Flag,
    /// A number (`0x2e`, `46`).
    Number(u64),
    /// Anything else (`name=foo`).
    Text(String),
}

/// One `key=value` term.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Term {
    /// The key as typed, lower-cased.
    pub key: String,
    /// The value.
    pub value: TermValue,
    /// Where the key is.
    pub key_span: Span,
    /// Where the whole term is.
    pub span: Span,
}

impl Term {
    /// The numeric value (a flag counts as 1); `None` for text.
    pub fn number(&self) -> Option<u64> {
        match &self.value {
            TermValue::Flag => Some(1),
            TermValue::Number(n) => Some(*n),
            TermValue::Text(_) => None,
        }
    }
}

/// Privilege and scheduling modifiers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Modifiers {
    /// `u` given (or `u=1`).
    pub user: bool,
    /// `k` given (or `k=1`).
    pub kernel: bool,
    /// `h` given (or `h=1`).
    pub hv: bool,
    /// Any of `u`, `k`, `h` (in either style) was given: only those count.
    pub privilege_given: bool,
    /// `G`: count only in guests.
    pub guest_only: bool,
    /// `H`: count only in the host.
    pub host_only: bool,
    /// `p` count (0–3); `P` gives 3.
    pub precise: u8,
    /// `P`: maximal precision the PMU offers.
    pub max_precise: bool,
    /// `I`: do not count when idle.
    pub exclude_idle: bool,
    /// `D`: pin to the PMU (no multiplexing).
    pub pinned: bool,
    /// `S`: read group on sample.
    pub sample_read: bool,
    /// `W`: weak group.
    pub weak_group: bool,
    /// `e`: exclusive (alone on the PMU while it counts; perf's `:e`).
    pub exclusive: bool,
    /// `b`: perf counts through BPF (`--bpf-counters`); the attr is the
    /// same, pmx counts with the attr.
    pub bpf: bool,
    /// perf's `exclude_guest` where no `G`/`H` decides it: `None` while no
    /// modifier was typed (perf's default, 1); after the event's own
    /// modifiers, set only by `u` or `p` (`get_event_modifier`).
    pub guest_excluded: Option<bool>,
}

impl Modifiers {
    /// `exclude_user` as perf sets it.
    pub fn exclude_user(&self) -> bool {
        self.privilege_given && !self.user
    }
    /// `exclude_kernel` as perf sets it.
    pub fn exclude_kernel(&self) -> bool {
        self.privilege_given && !self.kernel
    }
    /// `exclude_hv` as perf sets it.
    pub fn exclude_hv(&self) -> bool {
        self.privilege_given && !self.hv
    }
    /// `exclude_guest` as perf sets it on a host (`perf_guest` off):
    /// `H` alone sets it, `G` clears it; otherwise 1 unless the event's own
    /// modifiers name neither `u` nor `p` (`cycles:k` counts in guests).
    pub fn exclude_guest(&self) -> bool {
        if self.guest_only || self.host_only {
            return !self.guest_only;
        }
        self.guest_excluded.unwrap_or(true)
    }
    /// `exclude_host` as perf sets it: `G` without `H`.
    pub fn exclude_host(&self) -> bool {
        self.guest_only && !self.host_only
    }
}

/// What a spec names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "form", rename_all = "lowercase")]
pub enum Body {
    /// Terms only (`event=0x2e,umask=0x41`), inside `pmu/…/` or bare.
    Terms,
    /// A raw perf config (`r412e`).
    Raw {
        /// The config.
        config: u64,
        /// Where it is.
        span: Span,
    },
    /// A symbolic name; libpfm-style parts (`LONGEST_LAT_CACHE:MISS`) are
    /// kept in order. Inside `pmu/…/` the name is the first bare term
    /// (`cpu/cycles/`, `msr/tsc/`).
    Named {
        /// The name's parts.
        parts: Vec<String>,
        /// Where each part is.
        spans: Vec<Span>,
    },
    /// perf's numeric form `TYPE:CONFIG` (`1:1` is task-clock).
    Numeric {
        /// `attr.type`.
        type_: u32,
        /// `attr.config`.
        config: u64,
    },
    /// A hardware breakpoint `mem:ADDR[/LEN][:ACCESS]`.
    Breakpoint {
        /// Address.
        addr: u64,
        /// Length in bytes (default 4 for r/w, `sizeof(long)` for x).
        len: Option<u64>,
        /// `r`, `w`, `x` or combinations such as `rw`.
        access: String,
    },
}

/// One parsed event spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventSpec {
    /// The text as typed.
    pub text: String,
    /// The PMU named in `pmu/…/`, if any.
    pub pmu: Option<String>,
    /// What the spec names.
    pub body: Body,
    /// Terms from `pmu/…/`, the bare term form, and libpfm-style settings
    /// (`c=` → `cmask`, `i` → `inv`, `e` → `edge`, `t` → `any`), in order.
    pub terms: Vec<Term>,
    /// Modifiers.
    pub modifiers: Modifiers,
}

impl EventSpec {
    /// The name for display: the symbolic name joined with '.', else the
    /// text.
    pub fn display_name(&self) -> String {
        match &self.body {
            Body::Named { parts, .. } => parts.join("."),
            _ => self.text.clone(),
        }
    }

    /// The last term with this key.
    pub fn term(&self, key: &str) -> Option<&Term> {
        self.terms.iter().rev().find(|t| t.key == key)
    }
}

/// perf's terms that are settings of the event rather than fields of a
/// PMU's format (`config_term_names` in `tools/perf/util/parse-events.c`):
/// every event takes them, whatever its PMU.
pub const SETTING_TERMS: &[&str] = &[
    "name",
    "period",
    "freq",
    "branch_type",
    "time",
    "call-graph",
    "stack-size",
    "no-inherit",
    "inherit",
    "max-stack",
    "nr",
    "overwrite",
    "no-overwrite",
    "driver-config",
    "percore",
    "aux-output",
    "aux-sample-size",
    "metric-id",
];

/// The setting terms `perf stat` accepts (`config_term_avail`: the rest
/// are "not usable in 'perf stat'").
pub const COUNTING_SETTING_TERMS: &[&str] = &["name", "period", "percore", "metric-id"];

/// Terms that set a whole config word of any event.
pub const CONFIG_TERMS: &[&str] = &["config", "config1", "config2", "config3"];

/// Is `key` one of perf's setting terms ([`SETTING_TERMS`])?
pub fn is_setting_term(key: &str) -> bool {
    SETTING_TERMS.contains(&key)
}

/// The setting terms of one spec, checked: what they ask of the event
/// beyond its config words.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Settings {
    /// `name=`: the counter's name in every output.
    pub name: Option<String>,
    /// `metric-id=`: the name metrics refer to the event by.
    pub metric_id: Option<String>,
    /// `period=`: sample every N events.
    pub period: Option<u64>,
    /// `freq=`: sample N times a second.
    pub freq: Option<u64>,
    /// `call-graph=`: `fp`, `dwarf`, `lbr` or `no`.
    pub call_graph: Option<String>,
    /// `stack-size=`: user stack bytes per sample (with `dwarf`).
    pub stack_size: Option<u64>,
    /// `max-stack=`: deepest call chain.
    pub max_stack: Option<u64>,
    /// `inherit` (`Some(true)`) or `no-inherit` (`Some(false)`).
    pub inherit: Option<bool>,
    /// `aux-output`.
    pub aux_output: bool,
    /// `percore`: sum the counts of a core's hardware threads.
    pub percore: bool,
    /// The setting terms given, in order, with where each is.
    pub given: Vec<(String, Span)>,
}

impl Settings {
    /// The first setting term `perf stat` refuses ("not usable in 'perf
    /// stat'"), with where it is.
    pub fn not_for_counting(&self) -> Option<&(String, Span)> {
        self.given
            .iter()
            .find(|(k, _)| !COUNTING_SETTING_TERMS.contains(&k.as_str()))
    }
}

impl EventSpec {
    /// The value of a term as typed (`insn` of `name=insn`).
    pub fn term_text(&self, t: &Term) -> &str {
        let from = (t.key_span.end + 1).min(t.span.end);
        self.text.get(from..t.span.end).unwrap_or("")
    }

    /// The setting terms ([`SETTING_TERMS`]), checked: `name=` and
    /// `metric-id=` take a word, `call-graph=` one of `fp`, `dwarf`, `lbr`,
    /// `no`, the others a number or nothing.
    pub fn settings(&self) -> Result<Settings, SpecError> {
        let mut s = Settings::default();
        for t in self.terms.iter().filter(|t| is_setting_term(&t.key)) {
            let err = |msg: String| SpecError::new(&self.text, t.span, msg);
            let text = self.term_text(t).trim_matches(|c| c == '\'' || c == '"');
            let number = || match &t.value {
                TermValue::Number(n) => Ok(*n),
                _ => Err(err(format!("'{}=' takes a number", t.key))),
            };
            let flag = || match &t.value {
                TermValue::Flag => Ok(true),
                TermValue::Number(n) => Ok(*n != 0),
                TermValue::Text(_) => Err(err(format!("'{}' takes no value (or 0/1)", t.key))),
            };
            match t.key.as_str() {
                "name" | "metric-id" => {
                    if t.value == TermValue::Flag || text.is_empty() {
                        return Err(err(format!("'{}=' takes a name", t.key)));
                    }
                    let v = Some(text.to_string());
                    if t.key == "name" {
                        s.name = v;
                    } else {
                        s.metric_id = v;
                    }
                }
                "period" => s.period = Some(number()?),
                "freq" => s.freq = Some(number()?),
                "stack-size" => s.stack_size = Some(number()?),
                "max-stack" => s.max_stack = Some(number()?),
                "call-graph" => {
                    const MODES: [&str; 4] = ["fp", "dwarf", "lbr", "no"];
                    if !MODES.contains(&text) {
                        return Err(err(format!("call-graph={text}: give fp, dwarf, lbr or no"))
                            .with_suggestions(closest(text, MODES, 2)));
                    }
                    s.call_graph = Some(text.to_string());
                }
                "inherit" => s.inherit = Some(flag()?),
                "no-inherit" => s.inherit = Some(!flag()?),
                "aux-output" => s.aux_output = flag()?,
                "percore" => s.percore = flag()?,
                _ => {}
            }
            s.given.push((t.key.clone(), t.span));
        }
        if s.period.is_some() && s.freq.is_some() {
            let span = self.term("freq").map(|t| t.span).unwrap_or(Span::new(0, 1));
            return Err(SpecError::new(
                &self.text,
                span,
                "give period= or freq=, not both",
            ));
        }
        Ok(s)
    }
}

/// Parse one event spec.
pub fn parse_spec(input: &str) -> Result<EventSpec, SpecError> {
    Parser {
        input,
        bytes: input.as_bytes(),
        group: false,
    }
    .parse()
}

/// Apply a group's modifiers (the `u` of `{cycles,instructions}:u`) to
/// one member, adding to the member's own as perf does
/// (`parse_events__modifier_group`). Errors point into `mods`.
pub fn apply_group_modifiers(spec: &mut EventSpec, mods: &str) -> Result<(), SpecError> {
    if mods.is_empty() {
        return Err(SpecError::new(
            mods,
            Span::new(0, 1),
            "':' with no modifiers after it",
        ));
    }
    let p = Parser {
        input: mods,
        bytes: mods.as_bytes(),
        group: true,
    };
    let mut terms = std::mem::take(&mut spec.terms);
    let mut scratch = EventSpec {
        text: mods.to_string(),
        pmu: None,
        body: Body::Terms,
        terms: Vec::new(),
        modifiers: std::mem::take(&mut spec.modifiers),
    };
    let r = p.parse_colon_parts(&mut scratch, 0, false);
    spec.modifiers = scratch.modifiers;
    terms.extend(scratch.terms);
    spec.terms = terms;
    r
}

/// Levenshtein distance, for suggestions.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The edit distance between `w` (a word's characters) and `c` when it is
/// at most `limit`, given up as soon as every path exceeds it (for close
/// matches among thousands of names).
pub fn distance_within(w: &[char], c: &str, limit: usize) -> Option<usize> {
    let c: Vec<char> = c.chars().collect();
    if w.len().abs_diff(c.len()) > limit {
        return None;
    }
    let mut prev: Vec<usize> = (0..=c.len()).collect();
    let mut cur = vec![0; c.len() + 1];
    for i in 1..=w.len() {
        cur[0] = i;
        for j in 1..=c.len() {
            let cost = usize::from(w[i - 1] != c[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        if cur.iter().min().is_some_and(|&m| m > limit) {
            return None;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    Some(prev[c.len()]).filter(|&d| d <= limit)
}

/// Up to `n` candidates closest to `word` (case-insensitive), best first,
/// keeping only plausible ones.
pub fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    n: usize,
) -> Vec<String> {
    let w = word.to_ascii_lowercase();
    let mut scored: Vec<(usize, String)> = candidates
        .into_iter()
        .map(|c| (edit_distance(&w, &c.to_ascii_lowercase()), c.to_string()))
        .filter(|(d, c)| *d <= (c.len().max(w.len()) / 2).max(1))
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(n).map(|(_, c)| c).collect()
}

struct Parser<'a> {
    input: &'a str,
    bytes: &'a [u8],
    /// Parsing a group's modifiers (`{…}:u`): they add to each member's.
    group: bool,
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'@' | b'[' | b']' | b'+')
}

/// perf's `modifier_event` letters (`[ukhpPGHSDIWeb]`), and libpfm's `i`.
const MODIFIER_LETTERS: &str = "ukhGHpPIDSWebi";

/// libpfm-style settings accepted after ':' and the term each becomes.
const COLON_SETTINGS: &[(&str, &str)] = &[
    ("c", "cmask"),
    ("cmask", "cmask"),
    ("i", "inv"),
    ("inv", "inv"),
    ("e", "edge"),
    ("edge", "edge"),
    ("t", "any"),
    ("any", "any"),
    ("ldlat", "ldlat"),
    ("period", "period"),
    ("freq", "freq"),
    ("precise", "precise"),
    ("u", "u"),
    ("k", "k"),
    ("h", "h"),
];

impl<'a> Parser<'a> {
    fn err(&self, start: usize, end: usize, msg: impl Into<String>) -> SpecError {
        SpecError::new(self.input, Span::new(start, end.max(start + 1)), msg)
    }

    fn parse(&self) -> Result<EventSpec, SpecError> {
        let input = self.input;
        if input.trim().is_empty() {
            return Err(self.err(0, 1, "empty event spec"));
        }
        if let Some(i) = input.find(|c: char| !c.is_ascii() || c.is_ascii_control() || c == ' ') {
            let c = input[i..].chars().next().unwrap_or(' ');
            let what = if c == ' ' {
                "unexpected space".to_string()
            } else {
                format!("unexpected character {c:?}")
            };
            return Err(self.err(i, i + c.len_utf8(), what));
        }
        let mut spec = EventSpec {
            text: input.to_string(),
            pmu: None,
            body: Body::Terms,
            terms: Vec::new(),
            modifiers: Modifiers::default(),
        };

        // perf's numeric form: TYPE ':' CONFIG ['/' terms '/'] [':' modifiers]
        if self.bytes[0].is_ascii_digit() {
            return self.parse_numeric(spec);
        }

        // PMU form: NAME '/' terms '/' [':'] [modifiers]. perf reads a
        // generic event's or a raw config's name before '/' as that event
        // with terms (`cycles/name=c/u`, `r1234/name=raw/`), not a PMU.
        let lead = self.take_while(0, is_name_byte);
        if lead > 0 && self.bytes.get(lead) == Some(&b'/') {
            let head = &input[..lead];
            if let Some(config) = raw_config(head) {
                spec.body = Body::Raw {
                    config,
                    span: Span::new(0, lead),
                };
                let after = self.parse_slash_terms(&mut spec, lead, false)?;
                self.parse_modifiers_after_slash(&mut spec, after)?;
                return Ok(spec);
            }
            if crate::legacy::is_event_symbol(head) {
                spec.body = Body::Named {
                    parts: vec![head.to_string()],
                    spans: vec![Span::new(0, lead)],
                };
                let after = self.parse_slash_terms(&mut spec, lead, false)?;
                self.parse_modifiers_after_slash(&mut spec, after)?;
                return Ok(spec);
            }
            spec.pmu = Some(head.to_string());
            let after = self.parse_slash_terms(&mut spec, lead, true)?;
            self.parse_modifiers_after_slash(&mut spec, after)?;
            return Ok(spec);
        }

        // Breakpoint: mem:ADDR[/LEN][:ACCESS][:mods]
        if let Some(rest) = input.strip_prefix("mem:") {
            let _ = rest;
            return self.parse_breakpoint(spec);
        }

        // Bare terms: first token is KEY=...
        let first_end = self.take_while(0, |b| b != b':' && b != b',');
        if input[..first_end].contains('=') {
            let colon = input.find(':').unwrap_or(input.len());
            for (start, end) in split_spans(input, 0, colon, b',') {
                if start == end {
                    return Err(self.err(start, start + 1, "empty term"));
                }
                let term = self.parse_term(start, end)?;
                if term.value == TermValue::Flag && !is_known_flag_term(&term.key) {
                    return Err(self.err(
                        start,
                        end,
                        format!(
                            "'{}' is not a term; write key=value (e.g. event=0x2e)",
                            &input[start..end]
                        ),
                    ));
                }
                spec.terms.push(term);
            }
            if colon < input.len() {
                self.parse_colon_parts(&mut spec, colon + 1, false)?;
            }
            return Ok(spec);
        }

        // Raw: r<hex>
        let colon = input.find(':').unwrap_or(input.len());
        let head = &input[..colon];
        if head.len() > 1
            && head.starts_with('r')
            && head[1..].bytes().all(|b| b.is_ascii_hexdigit())
        {
            let digits = &head[1..];
            let config = u64::from_str_radix(digits, 16).map_err(|_| {
                self.err(
                    1,
                    colon,
                    format!("raw config r{digits} does not fit in 64 bits"),
                )
            })?;
            spec.body = Body::Raw {
                config,
                span: Span::new(0, colon),
            };
            if colon < input.len() {
                self.parse_colon_parts(&mut spec, colon + 1, false)?;
            }
            return Ok(spec);
        }
        if head.starts_with('r') && head.len() > 1 && head[1..].starts_with("0x") {
            return Err(self.err(
                1,
                3,
                "raw configs are written rNNN in hex without 0x (e.g. r412e)",
            ));
        }

        // Symbolic name with libpfm-style parts.
        let name_end = self.take_while(0, is_name_byte);
        if name_end == 0 {
            return Err(self.err(
                0,
                1,
                format!(
                    "expected an event name, a PMU or a term, found {:?}",
                    &input[..1]
                ),
            ));
        }
        if name_end < input.len() && self.bytes[name_end] != b':' {
            let c = self.bytes[name_end] as char;
            return Err(self.err(
                name_end,
                name_end + 1,
                format!("unexpected '{c}' in event name"),
            ));
        }
        spec.body = Body::Named {
            parts: vec![input[..name_end].to_string()],
            spans: vec![Span::new(0, name_end)],
        };
        if name_end < input.len() {
            self.parse_colon_parts(&mut spec, name_end + 1, true)?;
        }
        Ok(spec)
    }

    /// Terms from the '/' at `slash` to the closing '/'; returns the
    /// position after it. With `name_first`, a first bare word that is not
    /// a flag term is the event's name (`cpu/cycles/`, `msr/tsc/`).
    fn parse_slash_terms(
        &self,
        spec: &mut EventSpec,
        slash: usize,
        name_first: bool,
    ) -> Result<usize, SpecError> {
        let input = self.input;
        let terms_start = slash + 1;
        let close = find_unquoted(input, terms_start, b'/').ok_or_else(|| {
            self.err(
                input.len(),
                input.len() + 1,
                "missing closing '/' after the terms",
            )
        })?;
        let mut name: Option<(String, Span)> = None;
        if close > terms_start {
            for (start, end) in split_unquoted(input, terms_start, close, b',') {
                if start == end {
                    return Err(self.err(start, start + 1, "empty term"));
                }
                let term = self.parse_term(start, end)?;
                let first_word = name_first
                    && term.value == TermValue::Flag
                    && name.is_none()
                    && spec.terms.is_empty()
                    && !is_known_flag_term(&term.key);
                // `software/r1a/`: a raw config for that PMU.
                if let Some(config) = first_word.then(|| raw_config(&term.key)).flatten() {
                    spec.body = Body::Raw {
                        config,
                        span: Span::new(start, end),
                    };
                } else if first_word {
                    name = Some((input[start..end].to_string(), Span::new(start, end)));
                } else {
                    spec.terms.push(term);
                }
            }
        }
        if let Some((n, s)) = name {
            spec.body = Body::Named {
                parts: vec![n],
                spans: vec![s],
            };
        }
        Ok(close + 1)
    }

    /// `[':'] modifiers` after a closing '/'.
    fn parse_modifiers_after_slash(
        &self,
        spec: &mut EventSpec,
        mut rest: usize,
    ) -> Result<(), SpecError> {
        let input = self.input;
        if self.bytes.get(rest) == Some(&b':') {
            rest += 1;
            if rest == input.len() {
                return Err(self.err(rest - 1, rest, "':' with no modifiers after it"));
            }
        }
        if rest < input.len() {
            self.parse_colon_parts(spec, rest, false)?;
        }
        Ok(())
    }

    /// `TYPE:CONFIG[/terms/][:modifiers]` (`1:1`, `1:1:hp`, `4:0x412e:u`).
    fn parse_numeric(&self, mut spec: EventSpec) -> Result<EventSpec, SpecError> {
        let input = self.input;
        let t_end = self.take_while(0, |b| b != b':' && b != b'/');
        let type_ = self.parse_number(0, t_end)?;
        let type_ = u32::try_from(type_)
            .map_err(|_| self.err(0, t_end, format!("type {type_} does not fit in 32 bits")))?;
        if self.bytes.get(t_end) != Some(&b':') {
            return Err(self.err(
                t_end,
                t_end + 1,
                "a number starts perf's numeric form TYPE:CONFIG (e.g. 1:1 is task-clock)",
            ));
        }
        let c_start = t_end + 1;
        let c_end = self.take_while(c_start, |b| b != b':' && b != b'/');
        let config = self.parse_number(c_start, c_end)?;
        spec.body = Body::Numeric { type_, config };
        let mut rest = c_end;
        if self.bytes.get(rest) == Some(&b'/') {
            rest = self.parse_slash_terms(&mut spec, rest, false)?;
            self.parse_modifiers_after_slash(&mut spec, rest)?;
        } else if rest < input.len() {
            self.parse_colon_parts(&mut spec, rest + 1, false)?;
        }
        Ok(spec)
    }

    fn take_while(&self, from: usize, pred: impl Fn(u8) -> bool) -> usize {
        let mut i = from;
        while i < self.bytes.len() && pred(self.bytes[i]) {
            i += 1;
        }
        i
    }

    fn parse_number(&self, start: usize, end: usize) -> Result<u64, SpecError> {
        let s = &self.input[start..end];
        if s.is_empty() {
            return Err(self.err(start, start + 1, "missing number"));
        }
        let (digits, radix, off) =
            if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                (h, 16, 2)
            } else {
                (s, 10, 0)
            };
        if digits.is_empty() {
            return Err(self.err(start, end, "missing hex digits after 0x"));
        }
        if let Some(bad) = digits.bytes().position(|b| !(b as char).is_digit(radix)) {
            let at = start + off + bad;
            let kind = if radix == 16 {
                "hex"
            } else {
                "decimal (use 0x for hex)"
            };
            return Err(self.err(
                at,
                at + 1,
                format!("'{}' is not a {kind} digit", digits.as_bytes()[bad] as char),
            ));
        }
        u64::from_str_radix(digits, radix)
            .map_err(|_| self.err(start, end, format!("{s} does not fit in 64 bits")))
    }

    fn parse_term(&self, start: usize, end: usize) -> Result<Term, SpecError> {
        let text = &self.input[start..end];
        let (key_end, value) = match text.find('=') {
            Some(eq) => {
                let vstart = start + eq + 1;
                if vstart == end {
                    return Err(self.err(
                        vstart,
                        vstart + 1,
                        format!("missing value after '{}='", &text[..eq]),
                    ));
                }
                let vtext = &self.input[vstart..end];
                let v = if vtext.as_bytes()[0].is_ascii_digit() {
                    TermValue::Number(self.parse_number(vstart, end)?)
                } else {
                    let v = vtext.trim_matches(|c| c == '\'' || c == '"');
                    TermValue::Text(v.to_string())
                };
                (start + eq, v)
            }
            None => (end, TermValue::Flag),
        };
        if key_end == start {
            return Err(self.err(start, start + 1, "missing term name before '='"));
        }
        let key = &self.input[start..key_end];
        if let Some(bad) = key.bytes().position(|b| !is_name_byte(b)) {
            let at = start + bad;
            return Err(self.err(
                at,
                at + 1,
                format!("unexpected '{}' in term name", key.as_bytes()[bad] as char),
            ));
        }
        Ok(Term {
            key: key.to_ascii_lowercase(),
            value,
            key_span: Span::new(start, key_end),
            span: Span::new(start, end),
        })
    }

    /// Parse `part:part:…` from `from` to the end. With `names`, parts that
    /// are neither modifiers nor settings extend the symbolic name.
    fn parse_colon_parts(
        &self,
        spec: &mut EventSpec,
        from: usize,
        names: bool,
    ) -> Result<(), SpecError> {
        let mut seen_modifier = false;
        for (start, end) in split_spans(self.input, from, self.input.len(), b':') {
            if start == end {
                return Err(self.err(start.saturating_sub(1), start, "empty part between ':'"));
            }
            let part = &self.input[start..end];
            if let Some(eq) = part.find('=') {
                let key = &part[..eq];
                let Some((_, canonical)) = COLON_SETTINGS.iter().find(|(k, _)| *k == key) else {
                    let sugg = closest(key, COLON_SETTINGS.iter().map(|(k, _)| *k), 3);
                    return Err(self
                        .err(start, start + eq, format!("unknown setting '{key}'"))
                        .with_suggestions(sugg));
                };
                let mut term = self.parse_term(start, end)?;
                let Some(n) = term.number() else {
                    return Err(self.err(start + eq + 1, end, format!("'{key}=' takes a number")));
                };
                match *canonical {
                    "u" | "k" | "h" => {
                        if n > 1 {
                            return Err(self.err(
                                start + eq + 1,
                                end,
                                format!("'{key}=' takes 0 or 1"),
                            ));
                        }
                        self.start_modifiers(&mut spec.modifiers);
                        let m = &mut spec.modifiers;
                        m.privilege_given = true;
                        let on = n == 1;
                        if on && *canonical == "u" {
                            m.guest_excluded = Some(true);
                        }
                        match *canonical {
                            "u" => m.user = on,
                            "k" => m.kernel = on,
                            _ => m.hv = on,
                        }
                    }
                    "precise" => {
                        if n > 3 {
                            return Err(self.err(start + eq + 1, end, "precise takes 0 to 3"));
                        }
                        spec.modifiers.precise = n as u8;
                    }
                    _ => {
                        term.key = canonical.to_string();
                        spec.terms.push(term);
                    }
                }
                seen_modifier = true;
                continue;
            }
            let all_mods = part.chars().all(|c| MODIFIER_LETTERS.contains(c));
            if all_mods {
                self.apply_modifier_letters(spec, start, end)?;
                seen_modifier = true;
                continue;
            }
            if names {
                if seen_modifier {
                    return Err(self.err(
                        start,
                        end,
                        format!(
                            "'{part}' is not a modifier, and name parts must come before modifiers"
                        ),
                    ));
                }
                if let Some(bad) = part.bytes().position(|b| !is_name_byte(b)) {
                    let at = start + bad;
                    return Err(self.err(
                        at,
                        at + 1,
                        format!(
                            "unexpected '{}' in event name",
                            part.as_bytes()[bad] as char
                        ),
                    ));
                }
                if let Body::Named { parts, spans } = &mut spec.body {
                    parts.push(part.to_string());
                    spans.push(Span::new(start, end));
                }
                continue;
            }
            let bad = part
                .char_indices()
                .find(|(_, c)| !MODIFIER_LETTERS.contains(*c))
                .map(|(i, _)| start + i)
                .unwrap_or(start);
            return Err(self.err(bad, bad + 1, format!(
                "unknown modifier '{}' (modifiers: u k h G H p pp ppp P I D S W e b, settings: c=N i e=1 t=1)",
                &self.input[bad..bad + 1]
            )));
        }
        Ok(())
    }

    /// The event's own modifiers start perf's guest/host state afresh
    /// (`get_event_modifier` with no evsel); a group's add to it.
    fn start_modifiers(&self, m: &mut Modifiers) {
        if !self.group && m.guest_excluded.is_none() {
            m.guest_excluded = Some(false);
        }
    }

    fn apply_modifier_letters(
        &self,
        spec: &mut EventSpec,
        start: usize,
        end: usize,
    ) -> Result<(), SpecError> {
        self.start_modifiers(&mut spec.modifiers);
        for (i, c) in self.input[start..end].char_indices() {
            let at = start + i;
            let m = &mut spec.modifiers;
            match c {
                'u' => {
                    m.user = true;
                    m.privilege_given = true;
                    m.guest_excluded = Some(true);
                }
                'k' => {
                    m.kernel = true;
                    m.privilege_given = true;
                }
                'h' => {
                    m.hv = true;
                    m.privilege_given = true;
                }
                'G' => m.guest_only = true,
                'H' => m.host_only = true,
                'p' => {
                    if m.precise >= 3 {
                        return Err(self.err(at, at + 1, "at most three 'p' (ppp)"));
                    }
                    m.precise += 1;
                    m.guest_excluded = Some(true);
                }
                'P' => m.max_precise = true,
                'I' => m.exclude_idle = true,
                'D' => m.pinned = true,
                'S' => m.sample_read = true,
                'W' => m.weak_group = true,
                'e' => m.exclusive = true,
                'b' => m.bpf = true,
                'i' => {
                    spec.terms.push(Term {
                        key: "inv".to_string(),
                        value: TermValue::Flag,
                        key_span: Span::new(at, at + 1),
                        span: Span::new(at, at + 1),
                    });
                }
                _ => return Err(self.err(at, at + 1, format!("unknown modifier '{c}'"))),
            }
        }
        Ok(())
    }

    fn parse_breakpoint(&self, mut spec: EventSpec) -> Result<EventSpec, SpecError> {
        let input = self.input;
        let start = 4;
        let addr_end = self.take_while(start, |b| b != b'/' && b != b':');
        let addr = self.parse_number(start, addr_end)?;
        let mut pos = addr_end;
        let mut len = None;
        if self.bytes.get(pos) == Some(&b'/') {
            let len_end = self.take_while(pos + 1, |b| b != b':');
            let l = self.parse_number(pos + 1, len_end)?;
            if !matches!(l, 1 | 2 | 4 | 8) {
                return Err(self.err(
                    pos + 1,
                    len_end,
                    "breakpoint length must be 1, 2, 4 or 8 bytes",
                ));
            }
            len = Some(l);
            pos = len_end;
        }
        let mut access = "rw".to_string();
        if pos < input.len() {
            let a_start = pos + 1;
            let a_end = self.take_while(a_start, |b| b != b':');
            let a = &input[a_start..a_end];
            if !a.is_empty() && a.chars().all(|c| "rwx".contains(c)) {
                if a.contains('x') && a.len() > 1 {
                    return Err(self.err(
                        a_start,
                        a_end,
                        "an execute breakpoint ('x') cannot also be 'r' or 'w'",
                    ));
                }
                access = a.to_string();
                pos = a_end;
                if pos < input.len() {
                    self.parse_colon_parts(&mut spec, pos + 1, false)?;
                }
            } else {
                self.parse_colon_parts(&mut spec, a_start, false)?;
            }
        }
        spec.body = Body::Breakpoint { addr, len, access };
        Ok(spec)
    }
}

/// `input[from..to]` split on `sep` outside single or double quotes
/// (`name='a,b'` is one term).
fn split_unquoted(input: &str, from: usize, to: usize, sep: u8) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = from;
    let mut quote: Option<u8> = None;
    for (i, &b) in input.as_bytes()[from..to].iter().enumerate() {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'\'' || b == b'"' => quote = Some(b),
            None if b == sep => {
                out.push((start, from + i));
                start = from + i + 1;
            }
            None => {}
        }
    }
    out.push((start, to));
    out
}

/// The first `byte` at or after `from` outside quotes.
fn find_unquoted(input: &str, from: usize, byte: u8) -> Option<usize> {
    let mut quote: Option<u8> = None;
    for (i, &b) in input.as_bytes().iter().enumerate().skip(from) {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'\'' || b == b'"' => quote = Some(b),
            None if b == byte => return Some(i),
            None => {}
        }
    }
    None
}

/// `r<hex>` or `r0x<hex>` (perf's raw form) as its config.
fn raw_config(head: &str) -> Option<u64> {
    let digits = head.strip_prefix('r')?;
    let digits = digits.strip_prefix("0x").unwrap_or(digits);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

/// Terms that are meaningful without a value (`inv`, `edge`, …), as opposed
/// to an event name inside `pmu/…/`.
fn is_known_flag_term(key: &str) -> bool {
    matches!(
        key.to_ascii_lowercase().as_str(),
        "edge"
            | "inv"
            | "any"
            | "pc"
            | "in_tx"
            | "in_tx_cp"
            | "eq"
            | "e"
            | "i"
            | "t"
            | "no-inherit"
            | "inherit"
            | "percore"
            | "aux-output"
            | "overwrite"
            | "no-overwrite"
            | "config"
            | "config1"
            | "config2"
            | "config3"
    )
}

/// Split `input[from..to]` on `sep` into spans.
fn split_spans(input: &str, from: usize, to: usize, sep: u8) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = from;
    for (i, b) in input.as_bytes()[from..to].iter().enumerate() {
        if *b == sep {
            out.push((start, from + i));
            start = from + i + 1;
        }
    }
    out.push((start, to));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(spec: &EventSpec, key: &str) -> Option<u64> {
        spec.term(key).and_then(|t| t.number())
    }

    #[test]
    fn pmu_form_with_modifiers() {
        let s = parse_spec("cpu/event=0x2e,umask=0x41,cmask=1,inv,edge/u").unwrap();
        assert_eq!(s.pmu.as_deref(), Some("cpu"));
        assert_eq!(s.body, Body::Terms);
        assert_eq!(num(&s, "event"), Some(0x2e));
        assert_eq!(num(&s, "umask"), Some(0x41));
        assert_eq!(num(&s, "cmask"), Some(1));
        assert_eq!(num(&s, "inv"), Some(1));
        assert_eq!(num(&s, "edge"), Some(1));
        assert!(s.modifiers.user && !s.modifiers.kernel);
        assert!(s.modifiers.exclude_kernel() && s.modifiers.exclude_hv());
        assert!(!s.modifiers.exclude_user());
        let s2 = parse_spec("cpu/event=0x2e,umask=0x41/:k").unwrap();
        assert!(s2.modifiers.kernel && s2.modifiers.exclude_user());
    }

    #[test]
    fn bare_terms_and_raw() {
        let s = parse_spec("event=0x2e,umask=0x41:u").unwrap();
        assert_eq!(s.pmu, None);
        assert_eq!(num(&s, "umask"), Some(0x41));
        assert!(s.modifiers.user);
        let r = parse_spec("r412e:k").unwrap();
        assert_eq!(
            r.body,
            Body::Raw {
                config: 0x412e,
                span: Span::new(0, 5)
            }
        );
        assert!(r.modifiers.kernel && r.modifiers.exclude_user());
        let pp = parse_spec("r1c0:ppp").unwrap();
        assert_eq!(pp.modifiers.precise, 3);
        assert!(parse_spec("r1c0:pppp").is_err());
    }

    #[test]
    fn libpfm_style_settings() {
        let s = parse_spec("LONGEST_LAT_CACHE:MISS:c=1:i=1:u").unwrap();
        assert_eq!(
            s.body,
            Body::Named {
                parts: vec!["LONGEST_LAT_CACHE".into(), "MISS".into()],
                spans: vec![Span::new(0, 17), Span::new(18, 22)],
            }
        );
        assert_eq!(num(&s, "cmask"), Some(1));
        assert_eq!(num(&s, "inv"), Some(1));
        assert!(s.modifiers.user);
        let e = parse_spec("INST_RETIRED.ANY:e=1:i:k=1:u=0").unwrap();
        assert_eq!(num(&e, "edge"), Some(1));
        assert_eq!(num(&e, "inv"), Some(1));
        assert!(e.modifiers.kernel && !e.modifiers.user && e.modifiers.privilege_given);
        assert_eq!(e.display_name(), "INST_RETIRED.ANY");
    }

    #[test]
    fn names_inside_pmu_and_guest_host() {
        let s = parse_spec("msr/tsc/").unwrap();
        assert_eq!(s.pmu.as_deref(), Some("msr"));
        assert!(matches!(s.body, Body::Named { ref parts, .. } if parts == &["tsc"]));
        let g = parse_spec("cycles:G").unwrap();
        assert!(g.modifiers.guest_only);
        // perf: `GH` counts in both (exclude_guest = exclude_host = 0).
        let gh = parse_spec("cycles:GH").unwrap();
        assert!(!gh.modifiers.exclude_guest() && !gh.modifiers.exclude_host());
        let t = parse_spec("sched:sched_switch").unwrap();
        assert!(matches!(t.body, Body::Named { ref parts, .. } if parts.len() == 2));
    }

    #[test]
    fn breakpoints() {
        let b = parse_spec("mem:0x1000/8:w").unwrap();
        assert_eq!(
            b.body,
            Body::Breakpoint {
                addr: 0x1000,
                len: Some(8),
                access: "w".into()
            }
        );
        let b = parse_spec("mem:4096:x:u").unwrap();
        assert_eq!(
            b.body,
            Body::Breakpoint {
                addr: 4096,
                len: None,
                access: "x".into()
            }
        );
        assert!(b.modifiers.user);
        assert!(parse_spec("mem:0x1000/3:w").is_err());
    }

    #[test]
    fn errors_point_at_the_character() {
        let e = parse_spec("cpu/event=0x2g/").unwrap_err();
        assert_eq!(e.span.start, 13);
        assert_eq!(e.column(), 14);
        let e = parse_spec("cpu/event=0x2e").unwrap_err();
        assert!(e.message.contains("closing"));
        let e = parse_spec("r412e:q").unwrap_err();
        assert_eq!(e.span.start, 6);
        let e = parse_spec("event=0x2e,umask=:u").unwrap_err();
        assert_eq!(e.span.start, 17);
        let e = parse_spec("cycles:u:X").unwrap_err();
        assert_eq!(e.span.start, 9);
        let e = parse_spec("cycles:c=1:zz=3").unwrap_err();
        assert_eq!(e.span.start, 11);
        let e = parse_spec("event=99999999999999999999999").unwrap_err();
        assert_eq!(e.span.start, 6);
        let shown = parse_spec("cpu/event=0x2e,umask=0x4z/")
            .unwrap_err()
            .to_string();
        assert!(shown.contains("column 25"), "{shown}");
        assert!(
            shown.ends_with("\n  cpu/event=0x2e,umask=0x4z/\n                          ^"),
            "{shown}"
        );
    }

    #[test]
    fn perf_forms() {
        // tools/perf/tests/parse-events.c: test__checkevent_numeric ("1:1"),
        // test__checkevent_numeric_modifier ("1:1:hp": exclude_user,
        // exclude_kernel, !exclude_hv, precise_ip 1).
        let n = parse_spec("1:1:hp").unwrap();
        assert_eq!(
            n.body,
            Body::Numeric {
                type_: 1,
                config: 1
            }
        );
        let m = &n.modifiers;
        assert!(m.exclude_user() && m.exclude_kernel() && !m.exclude_hv());
        assert_eq!(m.precise, 1);
        assert!(m.exclude_guest());
        let e = parse_spec("cycles//u").unwrap();
        assert_eq!(e.pmu, None);
        assert!(matches!(e.body, Body::Named { ref parts, .. } if parts == &["cycles"]));
        assert!(e.modifiers.exclude_kernel());
        let p = parse_spec("cycles/period=100000,config2/").unwrap();
        assert_eq!(p.settings().unwrap().period, Some(100000));
        assert_eq!(p.term("config2").and_then(|t| t.number()), Some(1));
        let r = parse_spec("r1234/name=rawpmu/").unwrap();
        assert!(matches!(r.body, Body::Raw { config: 0x1234, .. }));
        assert_eq!(r.settings().unwrap().name.as_deref(), Some("rawpmu"));
        let c = parse_spec("L1-dcache-misses/name=cachepmu/").unwrap();
        assert_eq!(c.settings().unwrap().name.as_deref(), Some("cachepmu"));
        // perf's modifier letters: e exclusive, b bpf, D pinned, P max.
        let x = parse_spec("cycles:eDbP").unwrap().modifiers;
        assert!(x.exclusive && x.pinned && x.bpf && x.max_precise && x.precise == 0);
        // exclude_guest: perf's default 1; own modifiers without u/p: 0.
        assert!(parse_spec("cycles").unwrap().modifiers.exclude_guest());
        assert!(!parse_spec("cycles:k").unwrap().modifiers.exclude_guest());
        assert!(parse_spec("cycles:k:u").unwrap().modifiers.exclude_guest());
        assert!(parse_spec("cycles:H").unwrap().modifiers.exclude_guest());
        let g = parse_spec("cycles:G").unwrap().modifiers;
        assert!(!g.exclude_guest() && g.exclude_host());
        // Group modifiers add to the member's own.
        let mut k = parse_spec("cycles").unwrap();
        apply_group_modifiers(&mut k, "k").unwrap();
        assert!(k.modifiers.exclude_guest() && k.modifiers.exclude_user());
        let s = parse_spec("cpu-clock/call-graph=fp,max-stack=10,no-inherit/").unwrap();
        let s = s.settings().unwrap();
        assert_eq!(
            (s.call_graph.as_deref(), s.max_stack, s.inherit),
            (Some("fp"), Some(10), Some(false))
        );
        let bad = parse_spec("cycles/call-graph=fq/")
            .unwrap()
            .settings()
            .unwrap_err();
        assert_eq!(bad.suggestions, vec!["fp"]);
        let e = parse_spec("1:x").unwrap_err();
        assert_eq!(e.span.start, 2);
        assert!(parse_spec("1").is_err());
    }

    #[test]
    fn suggestions() {
        assert_eq!(
            closest("umsk", ["umask", "event", "cmask"], 3),
            vec!["umask", "cmask"]
        );
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
