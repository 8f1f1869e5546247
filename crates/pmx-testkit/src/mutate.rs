//! Mutants for the fault campaign: a small seeded PRNG and mutations of
//! perf.data files (bit flips, truncation, zeroed ranges, extreme values
//! in the header's and the records' size fields, duplicated and reordered
//! records) and of text files (CSV, JSON: lines dropped or doubled,
//! numbers made extreme, delimiters and quotes broken, bytes that are not
//! UTF-8).
//!
//! Every mutant comes from a seed and says what was done to it
//! ([`Mutant::what`]), so a failure prints `seed` and the case replays
//! exactly: `Rng::new(seed)` and the same mutation call give the same
//! bytes.

/// SplitMix64: tiny, fast, good enough to pick mutations, and the same
/// sequence everywhere for a seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A mutated file and what was done to it.
#[derive(Debug, Clone)]
pub struct Mutant {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// The mutations, in words (`flip bit 3 of byte 120; …`).
    pub what: String,
}

/// The values size and count fields are set to: zero, one, the largest
/// and around the sign bit of each width.
pub const EXTREME_U64: [u64; 8] = [
    0,
    1,
    7,
    u64::MAX,
    u64::MAX - 7,
    1 << 63,
    u32::MAX as u64,
    (u32::MAX as u64) + 1,
];

/// The same for 32- and 16-bit fields.
pub const EXTREME_U32: [u32; 6] = [0, 1, 7, u32::MAX, 1 << 31, u16::MAX as u32];

/// The records of a perf.data file (file or pipe mode): (offset, size)
/// of each, as its headers say, stopping at the first that does not fit.
pub fn records(data: &[u8]) -> Vec<(usize, usize)> {
    let u64_at = |o: usize| {
        data.get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    let (start, end) = match (u64_at(8), u64_at(40), u64_at(48)) {
        (Some(16), _, _) => (16usize, data.len()),
        (_, Some(off), Some(size)) => {
            let off = off as usize;
            (off, off.saturating_add(size as usize).min(data.len()))
        }
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    let mut at = start;
    while at.saturating_add(8) <= end {
        let size = u16::from_le_bytes([data[at + 6], data[at + 7]]) as usize;
        if size < 8 || at + size > end {
            break;
        }
        out.push((at, size));
        at += size;
    }
    out
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    if at.saturating_add(8) <= b.len() {
        b[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
}

/// A random bit of `b` flipped (the byte drawn first, then the bit).
pub(crate) fn flip_bit(rng: &mut Rng, b: &mut [u8], what: &mut Vec<String>) {
    let at = rng.below(b.len().max(1));
    let bit = rng.below(8);
    if at < b.len() {
        b[at] ^= 1 << bit;
    }
    what.push(format!("flip bit {bit} of byte {at}"));
}

/// `b` cut to a random length.
pub(crate) fn truncate(rng: &mut Rng, b: &mut Vec<u8>, what: &mut Vec<String>) {
    let to = rng.below(b.len().max(1));
    b.truncate(to);
    what.push(format!("truncate to {to} bytes"));
}

/// 1 to `max` bytes of `b` zeroed at a random place (the place drawn
/// first, then the length).
pub(crate) fn zero_run(rng: &mut Rng, b: &mut [u8], max: usize, what: &mut Vec<String>) {
    let at = rng.below(b.len().max(1));
    let n = 1 + rng.below(max);
    let end = (at + n).min(b.len());
    b[at.min(end)..end].fill(0);
    what.push(format!("zero {n} bytes at {at}"));
}

/// One mutation of a perf.data file, chosen by `rng`; appends its
/// description to `what`.
fn perfdata_once(rng: &mut Rng, b: &mut Vec<u8>, what: &mut Vec<String>) {
    let recs = records(b);
    let len = b.len().max(1);
    match rng.below(10) {
        0 => flip_bit(rng, b, what),
        1 => truncate(rng, b, what),
        2 => zero_run(rng, b, 256, what),
        3 => {
            // The header's size words: header size, attr size, and each
            // section's offset and size (attrs, data, event types).
            let field = *rng.pick(&[8usize, 16, 24, 32, 40, 48, 56, 64]);
            let v = *rng.pick(&EXTREME_U64);
            put_u64(b, field, v);
            what.push(format!("header word at {field} = {v:#x}"));
        }
        4 | 5 if !recs.is_empty() => {
            // A record's size (u16 at +6) or type (u32 at +0).
            let (at, _) = *rng.pick(&recs);
            if rng.below(2) == 0 {
                let v = *rng.pick(&EXTREME_U32) as u16;
                b[at + 6..at + 8].copy_from_slice(&v.to_le_bytes());
                what.push(format!("record at {at}: size = {v}"));
            } else {
                let v = *rng.pick(&EXTREME_U32);
                b[at..at + 4].copy_from_slice(&v.to_le_bytes());
                what.push(format!("record at {at}: type = {v}"));
            }
        }
        6 if !recs.is_empty() => {
            // A word inside a record's body (pids, addresses, lengths,
            // counts of callchain entries, string lengths).
            let (at, size) = *rng.pick(&recs);
            if size > 16 {
                let word = at + 8 + 8 * rng.below((size - 8) / 8);
                let v = *rng.pick(&EXTREME_U64);
                put_u64(b, word, v);
                what.push(format!("record at {at}: word at {word} = {v:#x}"));
            }
        }
        7 if !recs.is_empty() => {
            let (at, size) = *rng.pick(&recs);
            let copy = b[at..at + size].to_vec();
            let to = *rng.pick(&recs);
            let dest = to.0;
            b.splice(dest..dest, copy);
            what.push(format!(
                "record at {at} ({size} bytes) duplicated before {dest}"
            ));
        }
        8 if recs.len() >= 2 => {
            let i = rng.below(recs.len() - 1);
            let (a, asz) = recs[i];
            let (_, bsz) = recs[i + 1];
            let pair = b[a..a + asz + bsz].to_vec();
            b[a..a + bsz].copy_from_slice(&pair[asz..]);
            b[a + bsz..a + bsz + asz].copy_from_slice(&pair[..asz]);
            what.push(format!("records at {a} and {} swapped", a + asz));
        }
        _ => {
            // An attr's size word (first u32 of each attr in the
            // attrs section) or any aligned word of the file.
            let at = 8 * rng.below(len / 8 + 1);
            let v = *rng.pick(&EXTREME_U64);
            put_u64(b, at, v);
            what.push(format!("word at {at} = {v:#x}"));
        }
    }
}

/// A perf.data mutant of `original`: one to three mutations.
pub fn perfdata(original: &[u8], seed: u64) -> Mutant {
    let mut rng = Rng::new(seed);
    let mut b = original.to_vec();
    let mut what = Vec::new();
    for _ in 0..1 + rng.below(3) {
        perfdata_once(&mut rng, &mut b, &mut what);
    }
    Mutant {
        bytes: b,
        what: what.join("; "),
    }
}

const EXTREME_TEXT: [&str; 14] = [
    "",
    "0",
    "-1",
    "18446744073709551616",
    "99999999999999999999999999999",
    "1e309",
    "-1e309",
    "NaN",
    "inf",
    "-0",
    "0x10",
    "<not counted>",
    "\u{202e}\u{fffd}",
    "\"",
];

fn text_once(rng: &mut Rng, b: &mut Vec<u8>, what: &mut Vec<String>) {
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(
            b.iter()
                .enumerate()
                .filter(|(_, c)| **c == b'\n')
                .map(|(i, _)| i + 1),
        )
        .filter(|&i| i < b.len())
        .collect();
    let line = |rng: &mut Rng, b: &Vec<u8>| {
        let i = rng.below(line_starts.len());
        let s = line_starts.get(i).copied().unwrap_or(0);
        let e = line_starts.get(i + 1).copied().unwrap_or(b.len());
        (s, e)
    };
    let len = b.len().max(1);
    match rng.below(9) {
        0 => {
            let (s, e) = line(rng, b);
            b.drain(s..e);
            what.push(format!("line at byte {s} deleted"));
        }
        1 => {
            let (s, e) = line(rng, b);
            let copy = b[s..e].to_vec();
            b.splice(s..s, copy);
            what.push(format!("line at byte {s} doubled"));
        }
        2 => {
            // A number (a run of digits) made extreme.
            let starts: Vec<usize> = (0..b.len())
                .filter(|&i| b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_digit()))
                .collect();
            if starts.is_empty() {
                return;
            }
            let s = *rng.pick(&starts);
            let mut e = s;
            while e < b.len() && (b[e].is_ascii_digit() || b[e] == b'.') {
                e += 1;
            }
            let v = *rng.pick(&EXTREME_TEXT);
            b.splice(s..e, v.bytes());
            what.push(format!("number at byte {s} = {v:?}"));
        }
        3 => truncate(rng, b, what),
        4 => {
            // A structural character removed: , ; : " { } [ ] or a tab.
            let marks: Vec<usize> = (0..b.len())
                .filter(|&i| b",;:\"{}[]\t".contains(&b[i]))
                .collect();
            if marks.is_empty() {
                return;
            }
            let at = *rng.pick(&marks);
            let c = b.remove(at) as char;
            what.push(format!("{c:?} at byte {at} removed"));
        }
        5 => {
            let at = rng.below(len).min(b.len());
            const JUNK: [&[u8]; 7] = [
                b"\xff\xfe",
                b"\0",
                b"\",,,\"",
                b"}}]]",
                b"{\"a\":",
                b"\n\n\n",
                b"#",
            ];
            let junk = JUNK[rng.below(JUNK.len())];
            b.splice(at..at, junk.iter().copied());
            what.push(format!("{junk:?} inserted at byte {at}"));
        }
        6 => flip_bit(rng, b, what),
        7 => {
            // Two lines swapped.
            let (s1, e1) = line(rng, b);
            let (s2, e2) = line(rng, b);
            if e1 <= s2 {
                let first = b[s1..e1].to_vec();
                let second = b[s2..e2].to_vec();
                b.splice(s2..e2, first);
                b.splice(s1..e1, second);
                what.push(format!("lines at {s1} and {s2} swapped"));
            }
        }
        _ => {
            // A field (between delimiters) emptied.
            let (s, e) = line(rng, b);
            let fields: Vec<usize> = (s..e).filter(|&i| b",;:\t".contains(&b[i])).collect();
            if let Some(&at) = fields.get(rng.below(fields.len().max(1))) {
                let mut end = at + 1;
                while end < e && !b",;:\t\n".contains(&b[end]) {
                    end += 1;
                }
                b.drain(at + 1..end);
                what.push(format!("field after byte {at} emptied"));
            }
        }
    }
}

/// A text (CSV, JSON) mutant of `original`: one to three mutations.
pub fn text(original: &[u8], seed: u64) -> Mutant {
    let mut rng = Rng::new(seed);
    let mut b = original.to_vec();
    let mut what = Vec::new();
    for _ in 0..1 + rng.below(3) {
        text_once(&mut rng, &mut b, &mut what);
    }
    Mutant {
        bytes: b,
        what: what.join("; "),
    }
}

/// The sections of a little-endian ELF64 file: (name, offset, size, and
/// where its section header is), as the section headers say; empty when
/// the headers are not where they should be.
pub fn elf_sections(data: &[u8]) -> Vec<(String, usize, usize, usize)> {
    let word = |o: usize, n: usize| -> Option<u64> {
        let b = data.get(o..o.checked_add(n)?)?;
        Some(b.iter().rev().fold(0u64, |v, &x| v << 8 | x as u64))
    };
    if data.get(..6) != Some(&[0x7f, b'E', b'L', b'F', 2, 1][..]) {
        return Vec::new();
    }
    let (Some(shoff), Some(shentsize), Some(shnum), Some(shstrndx)) =
        (word(0x28, 8), word(0x3a, 2), word(0x3c, 2), word(0x3e, 2))
    else {
        return Vec::new();
    };
    let header = |i: u64| (shoff as usize).saturating_add((i * shentsize) as usize);
    let str_off = word(header(shstrndx).saturating_add(0x18), 8).unwrap_or(0) as usize;
    let mut out = Vec::new();
    for i in 0..shnum {
        let h = header(i);
        let (Some(name), Some(off), Some(size)) = (
            word(h, 4),
            word(h.saturating_add(0x18), 8),
            word(h.saturating_add(0x20), 8),
        ) else {
            break;
        };
        let start = str_off.saturating_add(name as usize).min(data.len());
        let end = data[start..]
            .iter()
            .position(|&c| c == 0)
            .map_or(data.len(), |e| start + e);
        let name = String::from_utf8_lossy(&data[start..end]).into_owned();
        out.push((name, off as usize, size as usize, h));
    }
    out
}

/// One mutation inside ELF section `(name, offset, size, header)`: bytes
/// of DWARF's LEB128 numbers and offsets made extreme, bits flipped,
/// ranges zeroed or copied from elsewhere in the section (references
/// that point back at themselves), or the section's size in its header
/// made smaller, zero or past the end of the file.
fn elf_once(
    rng: &mut Rng,
    b: &mut [u8],
    sec: &(String, usize, usize, usize),
    what: &mut Vec<String>,
) {
    let (name, off, size, header) = sec;
    let (off, size) = (*off, (*size).min(b.len().saturating_sub(*off)));
    if size == 0 {
        return;
    }
    let at = off + rng.below(size);
    match rng.below(7) {
        0 => {
            let bit = rng.below(8);
            b[at] ^= 1 << bit;
            what.push(format!("{name}: flip bit {bit} of byte {at:#x}"));
        }
        1 => {
            // A LEB128 byte ended, continued or emptied; an abbreviation
            // code, attribute or form number out of range.
            let v = *rng.pick(&[0u8, 1, 0x7f, 0x80, 0xff]);
            b[at] = v;
            what.push(format!("{name}: byte {at:#x} = {v:#x}"));
        }
        2 => {
            // A 4-byte word: unit length, abbreviation offset, a ref4.
            let v = *rng.pick(&EXTREME_U32);
            let end = (at + 4).min(off + size);
            b[at..end].copy_from_slice(&v.to_le_bytes()[..end - at]);
            what.push(format!("{name}: u32 at {at:#x} = {v:#x}"));
        }
        3 => {
            let n = 1 + rng.below(64);
            let end = (at + n).min(off + size);
            b[at..end].fill(0);
            what.push(format!("{name}: zero {n} bytes at {at:#x}"));
        }
        4 => {
            let from = off + rng.below(size);
            let n = (1 + rng.below(32))
                .min(off + size - from)
                .min(off + size - at);
            b.copy_within(from..from + n, at);
            what.push(format!("{name}: {n} bytes of {from:#x} copied to {at:#x}"));
        }
        5 => {
            // A 2-byte version, a 1-byte address size.
            let v = *rng.pick(&[0u8, 1, 2, 3, 4, 5, 6, 0xff]);
            b[at] = v;
            if at + 1 < off + size {
                b[at + 1] = 0;
            }
            what.push(format!("{name}: short at {at:#x} = {v}"));
        }
        _ => {
            let v = *rng.pick(&[
                0u64,
                1,
                size as u64 / 2,
                size as u64 - 1,
                u32::MAX as u64,
                u64::MAX,
            ]);
            put_u64(b, header.saturating_add(0x20), v);
            what.push(format!("{name}: size in its header = {v:#x}"));
        }
    }
}

/// An ELF mutant of `original` damaged inside the sections named
/// `sections` only (`.debug_info`, `.debug_abbrev`): one to three
/// mutations; no change when the file has none of them.
pub fn elf(original: &[u8], sections: &[&str], seed: u64) -> Mutant {
    let mut rng = Rng::new(seed);
    let mut b = original.to_vec();
    let secs: Vec<_> = (elf_sections(original).into_iter())
        .filter(|s| sections.contains(&s.0.as_str()) && s.1 < original.len())
        .collect();
    let mut what = Vec::new();
    if !secs.is_empty() {
        for _ in 0..1 + rng.below(3) {
            let sec = rng.pick(&secs).clone();
            elf_once(&mut rng, &mut b, &sec, &mut what);
        }
    }
    Mutant {
        bytes: b,
        what: what.join("; "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_mutant_and_sequence_known() {
        // SplitMix64's first output for seed 0 (its reference value).
        assert_eq!(Rng::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
        let src = b"a,b,c\n1,2,3\n4,5,6\n".to_vec();
        for seed in 0..50 {
            let (x, y) = (text(&src, seed), text(&src, seed));
            assert_eq!((x.bytes, x.what), (y.bytes, y.what));
        }
    }

    #[test]
    fn elf_mutants_change_only_their_sections() {
        let exe = std::fs::read("/proc/self/exe").unwrap();
        let secs = elf_sections(&exe);
        let text = secs.iter().find(|s| s.0 == ".text").expect(".text");
        let (start, end) = (text.1, text.1 + text.2);
        let shdr = secs.iter().map(|s| s.3).min().unwrap();
        for seed in 0..100 {
            let m = elf(&exe, &[".text"], seed);
            assert!(!m.what.is_empty() && m.bytes.len() == exe.len());
            let changed = (0..exe.len()).filter(|&i| m.bytes[i] != exe[i]);
            for i in changed {
                assert!(
                    (start..end).contains(&i) || i >= shdr,
                    "{}: byte {i:#x}",
                    m.what
                );
            }
        }
        assert!(elf(b"not an ELF file", &[".text"], 1).what.is_empty());
    }

    #[test]
    fn records_of_a_pipe_stream() {
        // Pipe header (magic, size 16) then two records of 8 and 16 bytes.
        let mut b = b"PERFILE2".to_vec();
        b.extend(16u64.to_le_bytes());
        b.extend([1, 0, 0, 0, 0, 0, 8, 0]);
        b.extend([2, 0, 0, 0, 0, 0, 16, 0]);
        b.extend([0; 8]);
        assert_eq!(records(&b), vec![(16, 8), (24, 16)]);
        // A file-mode header whose data section starts near the end of
        // the address space (a mutant's): no records, no overflow.
        let mut f = vec![0u8; 104];
        f[..8].copy_from_slice(b"PERFILE2");
        f[8..16].copy_from_slice(&104u64.to_le_bytes());
        f[40..48].copy_from_slice(&(u64::MAX - 3).to_le_bytes());
        f[48..56].copy_from_slice(&100u64.to_le_bytes());
        assert!(records(&f).is_empty());
        for seed in 0..200 {
            let m = perfdata(&b, seed);
            assert!(!m.what.is_empty() || m.bytes == b);
        }
    }
}
