//! The `-e` list: events and `{…}` groups, as perf users write them.
//!
//! `-e cycles,instructions` names two events; `-e '{cycles,instructions}:u'`
//! one group whose members all get `:u`; commas inside `pmu/…/` separate
//! terms, not events; a bare term list (`event=0x2e,umask=0x41:u`) stays
//! one event. Several `-e` flags add up.

use pmx_model::spec::{apply_group_modifiers, parse_spec, EventSpec, Span, SpecError};

/// One `-e` entry: a single event or a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventGroup {
    /// The members, leader first.
    pub members: Vec<EventSpec>,
    /// Written with `{…}`: scheduled all-or-nothing.
    pub explicit: bool,
    /// An input of a `-M` metric that this machine's event database
    /// cannot resolve: planned as not supported for this reason, never
    /// opened (perf prints such inputs `<not supported>`).
    pub unsupported: Option<String>,
}

/// Split an `-e` argument into groups.
pub fn parse_event_list(input: &str) -> Result<Vec<EventGroup>, SpecError> {
    let mut groups = Vec::new();
    let bytes = input.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b',' {
            return Err(SpecError::new(
                input,
                Span::new(i, i + 1),
                "empty event between ','",
            ));
        }
        // perf's named group `name{…}`: the name is perf's label for the
        // group; pmx names each member.
        let named = input[i..]
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        if named > 0 && bytes.get(i + named) == Some(&b'{') {
            i += named;
        }
        if bytes[i] == b'{' {
            let close = match input[i..].find('}') {
                Some(c) => i + c,
                None => {
                    return Err(SpecError::new(
                        input,
                        Span::new(i, i + 1),
                        "'{' without a closing '}'",
                    ))
                }
            };
            // Group modifiers: after '}' up to the next top-level ','.
            let mut end = close + 1;
            let mut mods = "";
            if bytes.get(end) == Some(&b':') {
                let m_end = input[end..]
                    .find(',')
                    .map(|c| end + c)
                    .unwrap_or(input.len());
                mods = &input[end + 1..m_end];
                if mods.is_empty() {
                    return Err(SpecError::new(
                        input,
                        Span::new(end, end + 1),
                        "':' with no modifiers after it",
                    ));
                }
                end = m_end;
            } else if end < bytes.len() && bytes[end] != b',' {
                return Err(SpecError::new(
                    input,
                    Span::new(end, end + 1),
                    "expected ',' or ':' after '}'",
                ));
            }
            let inner = &input[i + 1..close];
            if inner.trim().is_empty() {
                return Err(SpecError::new(
                    input,
                    Span::new(i, close + 1),
                    "empty group",
                ));
            }
            let mut members = Vec::new();
            let mods_at = close + 2;
            for (s, e) in split_top(inner) {
                let text = &inner[s..e];
                let mut spec =
                    parse_spec(text).map_err(|e| shift(e, input, i + 1 + s, text.len()))?;
                if !mods.is_empty() {
                    // perf adds the group's modifiers to each member's own
                    // (`{cycles:k,instructions}:u`); the name shows both.
                    apply_group_modifiers(&mut spec, mods)
                        .map_err(|e| shift(e, input, mods_at, mods.len()))?;
                    spec.text = if text.contains(':') || text.ends_with('/') {
                        format!("{text}{}{mods}", if text.ends_with('/') { "" } else { ":" })
                    } else {
                        format!("{text}:{mods}")
                    };
                }
                members.push(spec);
            }
            groups.push(EventGroup {
                members,
                explicit: true,
                unsupported: None,
            });
            i = end + 1;
            continue;
        }
        let (s, e) = split_top(&input[i..])
            .first()
            .copied()
            .unwrap_or((0, input.len() - i));
        let text = &input[i + s..i + e];
        if text.is_empty() {
            return Err(SpecError::new(input, Span::new(i, i + 1), "empty event"));
        }
        let spec = parse_spec(text).map_err(|err| shift(err, input, i + s, text.len()))?;
        groups.push(EventGroup {
            members: vec![spec],
            explicit: false,
            unsupported: None,
        });
        i += e + 1;
    }
    if groups.is_empty() {
        return Err(SpecError::new(input, Span::new(0, 1), "no events"));
    }
    Ok(groups)
}

/// Re-point an error inside one item at its place in the whole list.
fn shift(mut e: SpecError, whole: &str, offset: usize, item_len: usize) -> SpecError {
    let end = (offset + item_len).max(offset + 1);
    e.span.start = (e.span.start + offset)
        .min(end.saturating_sub(1))
        .min(whole.len());
    e.span.end = (e.span.end + offset).min(whole.len().max(e.span.start + 1));
    e.input = whole.to_string();
    e
}

/// Split on top-level commas: not inside `pmu/…/`, and keeping a bare term
/// list (`event=1,umask=2`) together.
fn split_top(s: &str) -> Vec<(usize, usize)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut slashes = 0usize;
    let mut i = 0;
    while i <= b.len() {
        let at_end = i == b.len();
        // `pmu/…/` hides commas; the `/LEN` of a breakpoint does not.
        if !at_end && b[i] == b'/' && !s[start..].starts_with("mem:") {
            slashes += 1;
        }
        if at_end || (b[i] == b',' && slashes.is_multiple_of(2)) {
            let item = &s[start..i];
            // A bare term list continues when the next item is `key=…`
            // and this one is terms without modifiers yet.
            let next = if at_end { "" } else { &s[i + 1..] };
            let continues = !at_end
                && is_bare_terms(item)
                && !item.contains(':')
                && next.split([',', ':']).next().is_some_and(is_term);
            if !continues {
                out.push((start, i));
                start = i + 1;
            }
        }
        i += 1;
    }
    out
}

fn is_term(t: &str) -> bool {
    match t.split_once('=') {
        Some((k, _)) => !k.is_empty() && k.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'),
        None => false,
    }
}

fn is_bare_terms(item: &str) -> bool {
    !item.contains('/') && item.split(',').next().is_some_and(is_term)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(g: &[EventGroup]) -> Vec<Vec<String>> {
        g.iter()
            .map(|g| g.members.iter().map(|m| m.text.clone()).collect())
            .collect()
    }

    #[test]
    fn lists_groups_and_terms() {
        let g = parse_event_list("cycles,instructions").unwrap();
        assert_eq!(texts(&g), vec![vec!["cycles"], vec!["instructions"]]);
        let g = parse_event_list("cpu/event=0x2e,umask=0x41/u,r412e").unwrap();
        assert_eq!(
            texts(&g),
            vec![vec!["cpu/event=0x2e,umask=0x41/u"], vec!["r412e"]]
        );
        let g = parse_event_list("{cycles,instructions}:u,task-clock").unwrap();
        assert_eq!(
            texts(&g),
            vec![vec!["cycles:u", "instructions:u"], vec!["task-clock"]]
        );
        assert!(g[0].explicit && !g[1].explicit);
        let g = parse_event_list("event=0x2e,umask=0x41:u,cycles").unwrap();
        assert_eq!(
            texts(&g),
            vec![vec!["event=0x2e,umask=0x41:u"], vec!["cycles"]]
        );
        let g = parse_event_list("mem:0x10/8:w,mem:0x18/8:w,cycles").unwrap();
        assert_eq!(
            texts(&g),
            vec![vec!["mem:0x10/8:w"], vec!["mem:0x18/8:w"], vec!["cycles"]]
        );
        let g = parse_event_list("group1{cycles,1:3}:G,instructions:u").unwrap();
        assert_eq!(
            texts(&g),
            vec![vec!["cycles:G", "1:3:G"], vec!["instructions:u"]]
        );
        let g = parse_event_list("{msr/tsc/,task-clock}:k").unwrap();
        assert_eq!(texts(&g), vec![vec!["msr/tsc/k", "task-clock:k"]]);
    }

    #[test]
    fn errors_point_into_the_list() {
        let e = parse_event_list("cycles,,x").unwrap_err();
        assert_eq!(e.span.start, 7);
        let e = parse_event_list("cycles,{a,b").unwrap_err();
        assert_eq!(e.span.start, 7);
        let e = parse_event_list("{a,b}:,c").unwrap_err();
        assert_eq!(e.span.start, 5);
        let e = parse_event_list("{cycles,instructions}:uq").unwrap_err();
        assert_eq!(e.span.start, 23);
        let e = parse_event_list("cycles,cpu/event=0x2g/").unwrap_err();
        assert_eq!(e.span.start, 20);
        assert_eq!(e.input, "cycles,cpu/event=0x2g/");
    }
}
