//! The DWARF answers file pmx keeps per binary (pmx-symbols'
//! `elf/answers.rs`: `$XDG_CACHE_HOME/pmx/symbols/BUILDID.dwarf`, the
//! source lines and inline chains looked up, kept across runs), read
//! here on its own, for the fault campaign (`faults_answers.rs`):
//! [`parse`] splits a file into its header and entries, [`mutate`] makes
//! a seeded mutant of one, and [`well_formed`] says whether a file is
//! one pmx may answer from (every length, the order, the checksum right).
//!
//! The layout, as the reader's page gives it (little-endian): the magic
//! `PMXDWA\0\x01`, rules u32, stamp u64, build-id length u32 and the id;
//! the entry count u32, the entries' bytes u32 and their FNV-1a checksum
//! u64; then the entries by (address, kind): address u64, kind u8 (0: a
//! line; 1 to [`LAST_KIND`]: an inline chain, one per demangling style);
//! a line is a flag u8 (1: known) and, when known, the line u32 and the
//! file; a chain its length u32 and its names. A string is its length
//! u32 and UTF-8 bytes.
//!
//! A mutant's checksum is usually recomputed (and its lengths often), so
//! that what is behind the checksum is reached: with the checksum as it
//! was, the reader would refuse nearly every mutant at once.

use crate::mutate::{flip_bit, truncate, zero_run, Mutant, Rng, EXTREME_U32, EXTREME_U64};

/// The file's first bytes.
pub const MAGIC: &[u8; 8] = b"PMXDWA\0\x01";
/// The last kind of entry (an inline chain without demangling).
pub const LAST_KIND: u8 = 3;
/// The most bytes of entries a file may hold (the reader's `MAX_BYTES`).
pub const MAX_BYTES: usize = 4 << 20;

/// FNV-1a, 64 bits (the published parameters).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// What a field of an entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Address,
    Kind,
    Flag,
    Line,
    /// A chain's length.
    Count,
    /// A string's length.
    Length,
    /// A string's bytes.
    Text,
}

/// A field of an entry: its offset, width and role.
type Field = (usize, usize, Role);

/// The entry at the start of `b`: its length and its fields; `None`
/// when it is not whole or not well formed.
fn entry(b: &[u8]) -> Option<(usize, Vec<Field>)> {
    let mut fields = vec![(0, 8, Role::Address), (8, 1, Role::Kind)];
    u64_at(b, 0)?;
    let (mut at, strings) = match *b.get(8)? {
        0 => {
            fields.push((9, 1, Role::Flag));
            match *b.get(9)? {
                0 => (10, 0),
                1 => {
                    u32_at(b, 10)?;
                    fields.push((10, 4, Role::Line));
                    (14, 1)
                }
                _ => return None,
            }
        }
        1..=LAST_KIND => {
            fields.push((9, 4, Role::Count));
            (13, u32_at(b, 9)? as usize)
        }
        _ => return None,
    };
    // Each string takes 4 bytes at least: a count past the bytes ends
    // the loop at the first string that is not there.
    for _ in 0..strings {
        let len = u32_at(b, at)? as usize;
        fields.push((at, 4, Role::Length));
        let end = (at + 4).checked_add(len)?;
        std::str::from_utf8(b.get(at + 4..end)?).ok()?;
        if len > 0 {
            fields.push((at + 4, len, Role::Text));
        }
        at = end;
    }
    Some((at, fields))
}

/// A file split into its parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parts {
    /// The magic, rules, stamp and build id (up to the entry count).
    pub head: Vec<u8>,
    /// The entry count as written.
    pub count: u32,
    /// The entries' bytes as written.
    pub body_len: u32,
    /// The checksum as written.
    pub sum: u64,
    /// The entries, each its bytes, as they follow one another.
    pub entries: Vec<Vec<u8>>,
}

/// A file's parts; `None` when its header is cut or damaged or an entry
/// is not whole or not well formed (the lengths and checksum written are
/// returned as they are, not checked: [`well_formed`]).
pub fn parse(b: &[u8]) -> Option<Parts> {
    if b.get(..8)? != MAGIC {
        return None;
    }
    let head_len = 24usize.checked_add(u32_at(b, 20)? as usize)?;
    let head = b.get(..head_len)?.to_vec();
    let (count, body_len) = (u32_at(b, head_len)?, u32_at(b, head_len + 4)?);
    let sum = u64_at(b, head_len + 8)?;
    let body = b.get(head_len + 16..)?;
    let mut entries = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let (len, _) = entry(&body[at..])?;
        entries.push(body[at..at + len].to_vec());
        at += len;
    }
    Some(Parts {
        head,
        count,
        body_len,
        sum,
        entries,
    })
}

/// Whether `b` is a file pmx may answer from for the binary and build
/// whose header is `head` ([`Parts::head`] of its intact file): the same
/// header, every entry whole, the count, length and checksum right, each
/// (address, kind) once and in order, and no more than [`MAX_BYTES`].
pub fn well_formed(b: &[u8], head: &[u8]) -> bool {
    let Some(p) = parse(b) else {
        return false;
    };
    let body = &b[p.head.len() + 16..];
    let key = |e: &Vec<u8>| (u64::from_le_bytes(e[..8].try_into().unwrap()), e[8]);
    p.head == head
        && p.count as usize == p.entries.len()
        && p.body_len as usize == body.len()
        && body.len() <= MAX_BYTES
        && p.sum == fnv1a(body)
        && p.entries.windows(2).all(|w| key(&w[0]) < key(&w[1]))
}

/// Strings put in place of a name or file: empty, long, not ASCII, a
/// line end, a name the file holds elsewhere.
const NAMES: [&str; 5] = ["", "x", "ñame (inlined)", "a\nb", "main"];

/// One change to the entries (`late` collects the changes made to the
/// whole file once written: [`late_once`]).
fn entries_once(rng: &mut Rng, es: &mut Vec<Vec<u8>>, late: &mut usize, what: &mut Vec<String>) {
    let op = rng.below(14);
    if es.is_empty() || op >= 9 {
        *late += 1;
        return;
    }
    let i = rng.below(es.len());
    match op {
        6 => {
            let copy = es[i].clone();
            es.insert(i, copy);
            what.push(format!("entry {i} doubled"));
            return;
        }
        7 if es.len() >= 2 => {
            let j = (i + 1) % es.len();
            es.swap(i, j);
            what.push(format!("entries {i} and {j} swapped"));
            return;
        }
        8 => {
            es.remove(i);
            what.push(format!("entry {i} removed"));
            return;
        }
        _ => {}
    }
    let fields = entry(&es[i]).map(|(_, f)| f).unwrap_or_default();
    let field = |rng: &mut Rng, role: &[Role]| {
        let of: Vec<_> = fields.iter().filter(|f| role.contains(&f.2)).collect();
        (!of.is_empty()).then(|| *of[rng.below(of.len())])
    };
    let e = &mut es[i];
    match op {
        0 => {
            let v = *rng.pick(&[0u8, 1, 2, 3, 4, 0x7f, 0xff]);
            e[8] = v;
            what.push(format!("entry {i}: kind = {v}"));
        }
        1 => {
            let v = *rng.pick(&EXTREME_U64);
            e[..8].copy_from_slice(&v.to_le_bytes());
            what.push(format!("entry {i}: address = {v:#x}"));
        }
        2 => {
            let Some((at, _, role)) = field(rng, &[Role::Count, Role::Length]) else {
                *late += 1;
                return;
            };
            let was = u32_at(e, at).unwrap_or(0);
            let extreme = *rng.pick(&EXTREME_U32);
            let v = *rng.pick(&[was.wrapping_add(1), was.saturating_sub(1), extreme]);
            e[at..at + 4].copy_from_slice(&v.to_le_bytes());
            what.push(format!("entry {i}: {role:?} at {at} = {v:#x}"));
        }
        3 => {
            let Some((at, len, _)) = field(rng, &[Role::Text]) else {
                *late += 1;
                return;
            };
            let at = at + rng.below(len);
            let v = *rng.pick(&[0xffu8, 0xc3, 0x80, b'X', b'\n', 0]);
            e[at] = v;
            what.push(format!("entry {i}: text byte {at} = {v:#x}"));
        }
        4 => {
            let Some((at, width, role)) = field(rng, &[Role::Line, Role::Flag]) else {
                *late += 1;
                return;
            };
            let v = *rng.pick(&EXTREME_U32);
            e[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
            what.push(format!("entry {i}: {role:?} = {v:#x}"));
        }
        5 => {
            // A string replaced whole, its length with it: still well formed.
            let Some((at, _, _)) = field(rng, &[Role::Length]) else {
                *late += 1;
                return;
            };
            let len = u32_at(e, at).unwrap_or(0) as usize;
            let s = *rng.pick(&NAMES);
            let s = if rng.below(4) == 0 {
                s.repeat(300)
            } else {
                s.to_string()
            };
            e.splice(
                at..(at + 4 + len).min(e.len()),
                (s.len() as u32).to_le_bytes().into_iter().chain(s.bytes()),
            );
            what.push(format!(
                "entry {i}: string at {at} = {:?}",
                s.chars().take(20).collect::<String>()
            ));
        }
        _ => {
            let to = rng.below(e.len());
            e.truncate(to);
            what.push(format!("entry {i} cut to {to} bytes"));
        }
    }
}

/// One change to the written file `b` whose header is `head_len` bytes:
/// a bit flipped, the file cut, bytes zeroed, a header word made
/// extreme, bytes appended.
fn late_once(rng: &mut Rng, b: &mut Vec<u8>, head_len: usize, what: &mut Vec<String>) {
    match rng.below(5) {
        0 => flip_bit(rng, b, what),
        1 => truncate(rng, b, what),
        2 => zero_run(rng, b, 32, what),
        3 => {
            // Rules, stamp, id length, count, entries' bytes.
            let (at, width) =
                *rng.pick(&[(8, 4), (12, 8), (20, 4), (head_len, 4), (head_len + 4, 4)]);
            let v = *rng.pick(&EXTREME_U64);
            if at + width <= b.len() {
                b[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
            }
            what.push(format!("header word at {at} = {v:#x}"));
        }
        _ => {
            let n = 1 + rng.below(16);
            b.extend(std::iter::repeat_n(0xa5, n));
            what.push(format!("{n} bytes appended"));
        }
    }
}

/// A mutant of the answers file `original`: one to three changes to its
/// entries or its bytes; then, mostly, the entry count and length
/// (two times in three) and the checksum (three in four) written anew
/// for what the file then holds. A file that [`parse`] cannot read is
/// returned as it is (with an empty [`Mutant::what`]).
pub fn mutate(original: &[u8], seed: u64) -> Mutant {
    let mut rng = Rng::new(seed);
    let Some(p) = parse(original) else {
        return Mutant {
            bytes: original.to_vec(),
            what: String::new(),
        };
    };
    let mut es = p.entries.clone();
    let (mut late, mut what) = (0, Vec::new());
    for _ in 0..1 + rng.below(3) {
        entries_once(&mut rng, &mut es, &mut late, &mut what);
    }
    let body = es.concat();
    let lengths = rng.below(3) != 0;
    let (count, body_len) = if lengths {
        (es.len() as u32, body.len() as u32)
    } else {
        (p.count, p.body_len)
    };
    let mut b = p.head.clone();
    b.extend(count.to_le_bytes());
    b.extend(body_len.to_le_bytes());
    b.extend(p.sum.to_le_bytes());
    b.extend(&body);
    for _ in 0..late {
        late_once(&mut rng, &mut b, p.head.len(), &mut what);
    }
    what.push(format!(
        "lengths {}",
        if lengths {
            "recomputed"
        } else {
            "as they were"
        }
    ));
    let sum_at = p.head.len() + 8;
    if rng.below(4) != 0 && b.len() >= sum_at + 8 {
        let sum = fnv1a(&b[sum_at + 8..]);
        b[sum_at..sum_at + 8].copy_from_slice(&sum.to_le_bytes());
        what.push("checksum recomputed".into());
    } else {
        what.push("checksum as it was".into());
    }
    Mutant {
        bytes: b,
        what: what.join("; "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file as pmx writes one: a line, an unknown line, a chain.
    fn sample() -> Vec<u8> {
        let id = [0xcdu8, 0x82, 0xfd, 0x65];
        let mut body = Vec::new();
        body.extend(0x1000u64.to_le_bytes());
        body.extend([0, 1]);
        body.extend(5u32.to_le_bytes());
        body.extend(3u32.to_le_bytes());
        body.extend(b"a.c");
        body.extend(0x1000u64.to_le_bytes());
        body.push(1);
        body.extend(2u32.to_le_bytes());
        for n in ["step", "hot"] {
            body.extend((n.len() as u32).to_le_bytes());
            body.extend(n.as_bytes());
        }
        body.extend(0x1004u64.to_le_bytes());
        body.extend([0, 0]);
        let mut b = MAGIC.to_vec();
        b.extend(1u32.to_le_bytes());
        b.extend(0x1234u64.to_le_bytes());
        b.extend((id.len() as u32).to_le_bytes());
        b.extend(id);
        b.extend(3u32.to_le_bytes());
        b.extend((body.len() as u32).to_le_bytes());
        b.extend(fnv1a(&body).to_le_bytes());
        b.extend(body);
        b
    }

    #[test]
    fn a_written_file_is_read_back_and_its_mutants_replay() {
        let b = sample();
        let p = parse(&b).expect("parsed");
        assert_eq!((p.count, p.entries.len()), (3, 3));
        assert!(well_formed(&b, &p.head));
        // Another build's header, a byte of the body changed: not so.
        let mut other = p.head.clone();
        other[12] ^= 1;
        assert!(!well_formed(&b, &other));
        let mut flipped = b.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(!well_formed(&flipped, &p.head));
        let (mut forged, mut refused, mut summed) = (0, 0, 0);
        for seed in 0..400 {
            let (m, again) = (mutate(&b, seed), mutate(&b, seed));
            assert_eq!((&m.bytes, &m.what), (&again.bytes, &again.what));
            assert!(!m.what.is_empty());
            summed += usize::from(m.what.contains("checksum recomputed"));
            if well_formed(&m.bytes, &p.head) {
                forged += 1;
            } else {
                refused += 1;
            }
        }
        // Both kinds are made, and most checksums are right.
        assert!(
            forged > 20 && refused > 100,
            "{forged} well formed, {refused} not"
        );
        assert!(summed > 250, "{summed} checksums recomputed of 400");
    }
}
