//! Kernel symbols from `/proc/kallsyms` (text symbols of the kernel and
//! its modules), the running kernel's build-id from `/sys/kernel/notes`,
//! and the running kernel's vDSO image (read from this process's memory).

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

/// One kernel text symbol, borrowed from its [`Kallsyms`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSymbol<'a> {
    /// Address.
    pub start: u64,
    /// Name (a copy only when it spans two pages of an index file).
    pub name: Cow<'a, str>,
    /// `None` for the kernel image, else the module's name.
    pub module: Option<&'a str>,
}

/// The kernel's text symbols sorted by address, in one compact block of
/// bytes — addresses `[u64; n]`, name ends `[u32; n]`, module numbers
/// `[u16; n]` (0: the kernel image, k: module k), then the names — which is
/// also the body of [`crate::kcache`]'s file: read back, the file is
/// looked up in place (only the pages a lookup touches are read into
/// memory).
#[derive(Debug, Clone, Default)]
pub struct Kallsyms {
    pub(crate) blob: Blob,
    /// Where the addresses start in `blob` (the rest follow).
    pub(crate) base: usize,
    pub(crate) n: usize,
    pub(crate) modules: Vec<String>,
}

/// The bytes of a [`Kallsyms`]: made here, or [`crate::kcache`]'s file
/// (checked whole before it is used) read a page at a time, as lookups
/// need them.
#[derive(Clone)]
pub(crate) enum Blob {
    Owned(Vec<u8>),
    File(Arc<Pages>),
}

impl Default for Blob {
    fn default() -> Blob {
        Blob::Owned(Vec::new())
    }
}

impl std::fmt::Debug for Blob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Blob::Owned(v) => write!(f, "Blob(owned, {} bytes)", v.len()),
            Blob::File(p) => write!(f, "Blob(file, {} bytes)", p.len),
        }
    }
}

impl Blob {
    /// The bytes `[from, to)`: borrowed when they lie in one page, else
    /// copied; `None` outside the blob (or where the file could not be read).
    fn range(&self, from: usize, to: usize) -> Option<Cow<'_, [u8]>> {
        if from > to {
            return None;
        }
        let p = match self {
            Blob::Owned(v) => return v.get(from..to).map(Cow::Borrowed),
            Blob::File(p) if to <= p.len => p,
            Blob::File(_) => return None,
        };
        if from == to {
            return Some(Cow::Borrowed(&[]));
        }
        let (first, last) = (from / PAGE, (to - 1) / PAGE);
        if first == last {
            let at = first * PAGE;
            return p.page(first).get(from - at..to - at).map(Cow::Borrowed);
        }
        let mut out = Vec::with_capacity(to - from);
        for q in first..=last {
            let at = q * PAGE;
            let (a, b) = (from.max(at) - at, to.min(at + PAGE) - at);
            out.extend_from_slice(p.page(q).get(a..b)?);
        }
        Some(Cow::Owned(out))
    }

    /// `N` bytes at `at`.
    fn array<const N: usize>(&self, at: usize) -> Option<[u8; N]> {
        self.range(at, at + N)?.as_ref().try_into().ok()
    }
}

/// The page size of [`Pages`].
const PAGE: usize = 4096;

/// A file read a page at a time, each page once, on first use (no map:
/// the kernel maps a whole large folio of the page cache at the first
/// touch of a mapping — 2 MiB on ext4 with Linux 6.18 —, where a lookup
/// needs a few pages).
pub(crate) struct Pages {
    file: std::fs::File,
    len: usize,
    pages: Box<[OnceLock<Box<[u8]>>]>,
}

impl Pages {
    /// `len` bytes of `file`, none read yet.
    pub(crate) fn new(file: std::fs::File, len: usize) -> Pages {
        Pages {
            file,
            len,
            pages: (0..len.div_ceil(PAGE)).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Page `p` (empty when it cannot be read).
    fn page(&self, p: usize) -> &[u8] {
        use std::os::unix::fs::FileExt;
        let Some(slot) = self.pages.get(p) else {
            return &[];
        };
        slot.get_or_init(|| {
            let from = p * PAGE;
            let mut b = vec![0u8; PAGE.min(self.len - from)];
            match self.file.read_exact_at(&mut b, from as u64) {
                Ok(()) => b.into_boxed_slice(),
                Err(_) => Box::default(),
            }
        })
    }

    /// How many pages were read.
    #[cfg(test)]
    pub(crate) fn read(&self) -> usize {
        self.pages.iter().filter(|p| p.get().is_some()).count()
    }
}

impl PartialEq for Kallsyms {
    fn eq(&self, o: &Kallsyms) -> bool {
        self.n == o.n
            && self.modules == o.modules
            && (0..self.n).all(|i| self.symbol(i) == o.symbol(i))
    }
}

impl Eq for Kallsyms {}

impl Kallsyms {
    /// A table from its columns (addresses sorted; name ends into `names`).
    pub(crate) fn from_parts(
        starts: &[u64],
        name_ends: &[u32],
        module: &[u16],
        names: &str,
        modules: Vec<String>,
    ) -> Kallsyms {
        let n = starts.len();
        let mut blob = Vec::with_capacity(n * 14 + names.len());
        starts
            .iter()
            .for_each(|v| blob.extend_from_slice(&v.to_le_bytes()));
        name_ends
            .iter()
            .for_each(|v| blob.extend_from_slice(&v.to_le_bytes()));
        module
            .iter()
            .for_each(|v| blob.extend_from_slice(&v.to_le_bytes()));
        blob.extend_from_slice(names.as_bytes());
        Kallsyms {
            blob: Blob::Owned(blob),
            base: 0,
            n,
            modules,
        }
    }

    /// The block: addresses, name ends, module numbers, names.
    pub(crate) fn body(&self) -> Cow<'_, [u8]> {
        let names_len = if self.n == 0 {
            0
        } else {
            self.name_end(self.n - 1)
        };
        let end = self.base + self.n * 14 + names_len;
        self.blob.range(self.base, end).unwrap_or_default()
    }

    // The accessors below never index out of the block: the lengths were
    // checked when the table was made or its file read, and a file changed
    // since by someone else gives wrong values, not a panic.

    pub(crate) fn start(&self, i: usize) -> u64 {
        let b = self.blob.array(self.base + 8 * i);
        b.map_or(0, u64::from_le_bytes)
    }

    pub(crate) fn name_end(&self, i: usize) -> usize {
        let b = self.blob.array(self.base + 8 * self.n + 4 * i);
        b.map_or(0, u32::from_le_bytes) as usize
    }

    pub(crate) fn module_number(&self, i: usize) -> u16 {
        let b = self.blob.array(self.base + 12 * self.n + 2 * i);
        b.map_or(0, u16::from_le_bytes)
    }

    /// Parse kallsyms text (`addr type name [module]` lines). Addresses
    /// that are all zero (no permission to see them) give an empty table.
    pub fn parse(text: &str) -> Kallsyms {
        // Read as bytes: a line is ASCII fields split by blanks (a
        // module's after a tab), and `str::split_whitespace` spent
        // ~1,500 instructions a line on Unicode (190 M for 122,000 lines).
        let mut rows: Vec<(u64, &str, u16)> = Vec::with_capacity(text.len() / 48);
        let mut modules: Vec<String> = Vec::new();
        let mut last_module: Option<(&str, u16)> = None;
        for line in text.split('\n') {
            let b = line.as_bytes();
            // Most lines are `%016lx %c name`: a symbol of data (`d`, `b`,
            // `r` …) is passed over on its kind's byte alone.
            if b.len() > 19 && b[16] == b' ' && b[18] == b' ' && !b"tTwW".contains(&b[17]) {
                continue;
            }
            let mut it = Fields { line, at: 0 };
            let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if !matches!(kind.as_bytes(), b"t" | b"T" | b"w" | b"W") {
                continue;
            }
            let Some(start) = hex(addr) else {
                continue;
            };
            if start == 0 {
                continue;
            }
            let module = match it.next().map(|m| m.trim_matches(|c| c == '[' || c == ']')) {
                None => 0,
                Some(m) => match last_module {
                    Some((n, k)) if n == m => k,
                    _ => {
                        let k = match modules.iter().position(|x| x == m) {
                            Some(i) => i as u16 + 1,
                            None => {
                                modules.push(m.to_string());
                                modules.len() as u16
                            }
                        };
                        last_module = Some((m, k));
                        k
                    }
                },
            };
            rows.push((start, name, module));
        }
        rows.sort_by_key(|r| r.0);
        let mut names = String::new();
        let mut ends = Vec::with_capacity(rows.len());
        for r in &rows {
            names.push_str(r.1);
            ends.push(names.len() as u32);
        }
        let starts: Vec<u64> = rows.iter().map(|r| r.0).collect();
        let module: Vec<u16> = rows.iter().map(|r| r.2).collect();
        Kallsyms::from_parts(&starts, &ends, &module, &names, modules)
    }

    /// This machine's `/proc/kallsyms` (empty when unreadable).
    pub fn load() -> Kallsyms {
        std::fs::read_to_string("/proc/kallsyms")
            .map(|t| Kallsyms::parse(&t))
            .unwrap_or_default()
    }

    /// Whether there are any symbols.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.n
    }

    /// The symbol that covers `addr` (index). Kernel symbols have no
    /// sizes: as in perf, one ends where the next begins, except where
    /// the kernel's own symbols give way to a module's (or the reverse)
    /// and after the last symbol: there it ends at the page boundary past
    /// the next 4 KiB. So an address in the gap between the kernel's text
    /// and the modules (a BPF program, an ftrace trampoline) is no
    /// symbol's, not the last kernel symbol's (`_einittext+0x3c81001c`).
    pub fn lookup(&self, addr: u64) -> Option<usize> {
        let i = self.at_or_before(addr)?;
        let start = self.start(i);
        let roundup = |x: u64| x.saturating_add(4095) & !4095;
        let end = if i + 1 == self.n {
            roundup(start).saturating_add(4096)
        } else if (self.module_number(i) == 0) != (self.module_number(i + 1) == 0) {
            roundup(start.saturating_add(4096))
        } else {
            u64::MAX
        };
        (addr < end).then_some(i)
    }

    /// The symbol at or before `addr` (index).
    fn at_or_before(&self, addr: u64) -> Option<usize> {
        // The first index whose start is past `addr`.
        let (mut lo, mut hi) = (0, self.n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.start(mid) <= addr {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.checked_sub(1)
    }

    /// The symbol at an index from [`Kallsyms::lookup`].
    pub fn symbol(&self, i: usize) -> KernelSymbol<'_> {
        let from = if i == 0 { 0 } else { self.name_end(i - 1) };
        let names = self.base + 14 * self.n;
        // UTF-8 (ASCII in an index file): checked when the table was made
        // or its file read.
        let name = match self.blob.range(names + from, names + self.name_end(i)) {
            Some(Cow::Borrowed(b)) => Cow::Borrowed(std::str::from_utf8(b).unwrap_or("?")),
            Some(Cow::Owned(v)) => Cow::Owned(String::from_utf8(v).unwrap_or_else(|_| "?".into())),
            None => Cow::Borrowed("?"),
        };
        let module = match self.module_number(i) {
            0 => None,
            m => self.modules.get(m as usize - 1).map(String::as_str),
        };
        KernelSymbol {
            start: self.start(i),
            name,
            module,
        }
    }
}

/// The running kernel's GNU build-id from `/sys/kernel/notes`.
pub fn running_kernel_build_id() -> Option<Vec<u8>> {
    let notes = std::fs::read("/sys/kernel/notes").ok()?;
    note_build_id(&notes)
}

/// The ELF image of the vDSO the running kernel maps into every process,
/// read once from this process: the `[vdso]` line of `/proc/self/maps`
/// gives its address range, `/proc/self/mem` its bytes. Samples of a
/// process recorded on this kernel that fall in `[vdso]` are resolved
/// against it (the kernel maps the same image into every 64-bit process).
pub fn running_vdso() -> Result<&'static [u8], String> {
    static VDSO: std::sync::OnceLock<Result<Vec<u8>, String>> = std::sync::OnceLock::new();
    VDSO.get_or_init(read_vdso)
        .as_ref()
        .map(|v| v.as_slice())
        .map_err(Clone::clone)
}

fn read_vdso() -> Result<Vec<u8>, String> {
    use std::io::{Read, Seek, SeekFrom};
    let maps =
        std::fs::read_to_string("/proc/self/maps").map_err(|e| format!("/proc/self/maps: {e}"))?;
    let line = maps
        .lines()
        .find(|l| l.split_whitespace().nth(5) == Some("[vdso]"))
        .ok_or("this process has no [vdso] mapping")?;
    let range = line.split_whitespace().next().unwrap_or("");
    let (a, b) = range.split_once('-').ok_or("bad /proc/self/maps line")?;
    let parse = |x: &str| u64::from_str_radix(x, 16).map_err(|e| format!("/proc/self/maps: {e}"));
    let (start, end) = (parse(a)?, parse(b)?);
    if end <= start || end - start > 1 << 24 {
        return Err(format!("implausible [vdso] range {range}"));
    }
    let mut mem =
        std::fs::File::open("/proc/self/mem").map_err(|e| format!("/proc/self/mem: {e}"))?;
    mem.seek(SeekFrom::Start(start))
        .map_err(|e| format!("/proc/self/mem: {e}"))?;
    let mut image = vec![0u8; (end - start) as usize];
    mem.read_exact(&mut image)
        .map_err(|e| format!("reading the vDSO from /proc/self/mem: {e}"))?;
    Ok(image)
}

/// The build-id in an ELF note section's bytes (type 3, name "GNU").
pub fn note_build_id(mut b: &[u8]) -> Option<Vec<u8>> {
    let align = |n: usize| (n + 3) & !3;
    while b.len() >= 12 {
        let namesz = u32::from_le_bytes(b[0..4].try_into().ok()?) as usize;
        let descsz = u32::from_le_bytes(b[4..8].try_into().ok()?) as usize;
        let kind = u32::from_le_bytes(b[8..12].try_into().ok()?);
        let name_end = 12usize.checked_add(align(namesz))?;
        let desc_end = name_end.checked_add(align(descsz))?;
        if desc_end > b.len() {
            return None;
        }
        if kind == 3 && &b[12..12 + namesz.min(4)] == b"GNU\0"[..namesz.min(4)].as_ref() {
            return Some(b[name_end..name_end + descsz].to_vec());
        }
        b = &b[desc_end..];
    }
    None
}

/// The blank-separated fields of a kallsyms line (ASCII blanks: space,
/// tab, and the other ASCII whitespace `split_whitespace` splits at).
struct Fields<'a> {
    line: &'a str,
    at: usize,
}

impl<'a> Iterator for Fields<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let b = self.line.as_bytes();
        let blank = |c: u8| matches!(c, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c');
        let mut i = self.at;
        while i < b.len() && blank(b[i]) {
            i += 1;
        }
        let start = i;
        while i < b.len() && !blank(b[i]) {
            i += 1;
        }
        self.at = i;
        // Both ends are at ASCII bytes (or the line's ends): char boundaries.
        (start < i).then(|| &self.line[start..i])
    }
}

/// A kallsyms address: 1 to 16 hex digits.
fn hex(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    s.bytes().try_fold(0u64, |v, c| {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        Some(v << 4 | u64::from(d))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The old reading (`split_whitespace`, `from_str_radix`), kept here
    /// as the oracle of the byte parser.
    fn plain(text: &str) -> Vec<(u64, String, Option<String>)> {
        let mut v = Vec::new();
        for line in text.lines() {
            let mut it = line.split_whitespace();
            let (Some(a), Some(k), Some(n)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            let Ok(start) = u64::from_str_radix(a, 16) else {
                continue;
            };
            if matches!(k, "t" | "T" | "w" | "W") && start != 0 && !a.starts_with('+') {
                let m = it
                    .next()
                    .map(|m| m.trim_matches(|c| c == '[' || c == ']').to_string());
                v.push((start, n.to_string(), m));
            }
        }
        v.sort_by_key(|r| r.0);
        v
    }

    fn read_back(k: &Kallsyms) -> Vec<(u64, String, Option<String>)> {
        (0..k.len())
            .map(|i| k.symbol(i))
            .map(|s| (s.start, s.name.to_string(), s.module.map(String::from)))
            .collect()
    }

    #[test]
    fn bytes_parse_as_the_plain_reading_did() {
        let odd = "ffffffff81000000 T  two_blanks\n\nffffffff81000010\tt\ttabbed\t[mod_a]\n\
                   ffffffff81000020 T trailing  \r\nFFFFFFFF81000030 W upper\n\
                   1ffffffff81000040 T too_long\nffffffff8100004g T not_hex\n\
                   ffffffff81000050 TT two_chars\nffffffff81000060 t\n\
                   ffffffff81000070 t in_b [mod_b]\nffffffff81000080 t in_a\t[mod_a]\n\
                   0000000000000000 T zero\nffffffff81000090 t last";
        assert_eq!(read_back(&Kallsyms::parse(odd)), plain(odd));
        assert_eq!(read_back(&Kallsyms::parse(odd)).len(), 7);
        // This machine's table, when it shows addresses.
        if let Ok(text) = std::fs::read_to_string("/proc/kallsyms") {
            let want = plain(&text);
            assert_eq!(read_back(&Kallsyms::parse(&text)), want, "/proc/kallsyms");
        }
    }

    #[test]
    fn parses_and_looks_up() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\nffffffff81000100 t do_one\nffffffff81000200 D data_sym\n\
             ffffffffc0000000 t mod_fn\t[kvm]\n0000000000000000 T hidden\n",
        );
        assert_eq!(
            k.symbol(k.lookup(0xffffffff81000150).unwrap()).name,
            "do_one"
        );
        let m = k.symbol(k.lookup(0xffffffffc0000010).unwrap());
        assert_eq!(
            (&*m.name, m.module, m.start),
            ("mod_fn", Some("kvm"), 0xffffffffc0000000)
        );
        assert!(k.lookup(0x1000).is_none());
        assert_eq!(k.len(), 3);
        assert_eq!(k.symbol(0).module, None);
        assert!(k.lookup(0xffffffffd0000000).is_none());
    }

    #[test]
    fn symbols_end_as_in_perf() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\nffffffff81200000 T far_apart\n\
             ffffffff837f68d0 T _einittext\nffffffffc0211000 t ftrace_trampoline\t[__builtin__ftrace]\n\
             ffffffffc0300010 t last_fn\t[kvm]\n",
        );
        let name = |a: u64| k.lookup(a).map(|i| k.symbol(i).name.to_string());
        // Between two kernel symbols: the first, however far.
        assert_eq!(name(0xffffffff811fffff).as_deref(), Some("_stext"));
        // The last kernel symbol before the modules: up to the page
        // boundary past its next 4 KiB, not across the gap.
        assert_eq!(name(0xffffffff837f78cf).as_deref(), Some("_einittext"));
        assert_eq!(name(0xffffffff837f8000), None);
        assert_eq!(name(0xffffffffc00068ec), None);
        // A module symbol followed by another module's: up to it.
        assert_eq!(
            name(0xffffffffc0300000).as_deref(),
            Some("ftrace_trampoline")
        );
        // The last symbol: to the end of the page after its own.
        assert_eq!(name(0xffffffffc0301fff).as_deref(), Some("last_fn"));
        assert_eq!(name(0xffffffffc0302000), None);
    }

    #[test]
    fn finds_the_gnu_note() {
        let mut n = Vec::new();
        n.extend_from_slice(&4u32.to_le_bytes());
        n.extend_from_slice(&4u32.to_le_bytes());
        n.extend_from_slice(&1u32.to_le_bytes());
        n.extend_from_slice(b"Xen\0abcd");
        n.extend_from_slice(&4u32.to_le_bytes());
        n.extend_from_slice(&20u32.to_le_bytes());
        n.extend_from_slice(&3u32.to_le_bytes());
        n.extend_from_slice(b"GNU\0");
        n.extend_from_slice(&[7u8; 20]);
        assert_eq!(note_build_id(&n), Some(vec![7u8; 20]));
        assert_eq!(note_build_id(&n[..30]), None);
    }

    #[test]
    fn this_machine_when_readable() {
        let k = Kallsyms::load();
        if k.is_empty() {
            eprintln!("skipped: /proc/kallsyms has no addresses here");
            return;
        }
        assert!((0..k.len()).any(|i| k.symbol(i).name == "schedule"));
    }
}
