//! Where CPUID values come from: the CPU itself, or a recorded dump.
//!
//! Everything that decodes CPUID takes a [`CpuidSource`], so the same code
//! runs on the machine ([`NativeCpuid`]) and on fixtures ([`RecordedCpuid`]).
//!
//! The recorded format is plain text, one line per leaf and subleaf, all
//! numbers in hex (a `0x` prefix is allowed), `#` starting a comment:
//!
//! ```text
//! # leaf    subleaf  eax      ebx      ecx      edx
//! 00000000  0        00000016 756e6547 6c65746e 49656e69
//! 0000000a  0        07300404 00000000 00000000 00000603
//! ```
//!
//! A leaf and subleaf that were not recorded read as all zeros, which is what
//! AMD CPUs return for leaves they do not implement.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Something that answers CPUID queries.
pub trait CpuidSource {
    /// Execute CPUID with `eax = leaf`, `ecx = subleaf`; returns
    /// `[eax, ebx, ecx, edx]`.
    fn cpuid(&self, leaf: u32, subleaf: u32) -> [u32; 4];

    /// Whether this source has CPUID at all (false on non-x86 machines).
    fn available(&self) -> bool {
        true
    }
}

impl<T: CpuidSource + ?Sized> CpuidSource for &T {
    fn cpuid(&self, leaf: u32, subleaf: u32) -> [u32; 4] {
        (**self).cpuid(leaf, subleaf)
    }
    fn available(&self) -> bool {
        (**self).available()
    }
}

impl<T: CpuidSource + ?Sized> CpuidSource for Box<T> {
    fn cpuid(&self, leaf: u32, subleaf: u32) -> [u32; 4] {
        (**self).cpuid(leaf, subleaf)
    }
    fn available(&self) -> bool {
        (**self).available()
    }
}

/// The CPUID instruction of the CPU this thread runs on.
///
/// On hybrid CPUs some leaves (0x1A, and on some parts 0xA) differ between
/// core types; the answer is that of whichever CPU the thread is on. On
/// machines that are not x86 it reports no CPUID and every leaf as zeros.
#[derive(Debug, Clone, Copy, Default)]
pub struct NativeCpuid;

impl CpuidSource for NativeCpuid {
    #[cfg(target_arch = "x86_64")]
    fn cpuid(&self, leaf: u32, subleaf: u32) -> [u32; 4] {
        // `__cpuid_count` became a safe function in newer Rust; the block
        // keeps older compilers (the workspace's rust-version) happy.
        #[allow(unused_unsafe)]
        // SAFETY: CPUID exists on every x86_64 CPU and has no side effects.
        let r = unsafe { core::arch::x86_64::__cpuid_count(leaf, subleaf) };
        [r.eax, r.ebx, r.ecx, r.edx]
    }

    #[cfg(target_arch = "x86")]
    fn cpuid(&self, leaf: u32, subleaf: u32) -> [u32; 4] {
        #[allow(unused_unsafe)]
        // SAFETY: every x86 CPU Linux still supports implements CPUID.
        let r = unsafe { core::arch::x86::__cpuid_count(leaf, subleaf) };
        [r.eax, r.ebx, r.ecx, r.edx]
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
    fn cpuid(&self, _leaf: u32, _subleaf: u32) -> [u32; 4] {
        [0; 4]
    }

    fn available(&self) -> bool {
        cfg!(any(target_arch = "x86_64", target_arch = "x86"))
    }
}

/// CPUID answers recorded earlier (from a fixture file or [`Self::capture`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordedCpuid {
    leaves: BTreeMap<(u32, u32), [u32; 4]>,
}

/// A recorded CPUID dump that does not parse.
#[derive(Debug, thiserror::Error)]
pub enum CpuidFileError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// A line is malformed.
    #[error("{origin}:{line}: {problem} (expected `leaf subleaf eax ebx ecx edx` in hex)")]
    Syntax {
        /// The file name, or `<text>`.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong with the line.
        problem: String,
    },
}

impl RecordedCpuid {
    /// An empty recording (every leaf reads as zeros).
    pub fn new() -> RecordedCpuid {
        RecordedCpuid::default()
    }

    /// Record (or replace) the answer for one leaf and subleaf.
    pub fn insert(&mut self, leaf: u32, subleaf: u32, regs: [u32; 4]) {
        self.leaves.insert((leaf, subleaf), regs);
    }

    /// How many leaf/subleaf pairs are recorded.
    pub fn len(&self) -> usize {
        self.leaves.len()
    }

    /// True when nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }

    /// Parse the text format described in the module documentation.
    pub fn parse(text: &str) -> Result<RecordedCpuid, CpuidFileError> {
        Self::parse_named(text, "<text>")
    }

    /// Read and parse a recorded dump from a file.
    pub fn from_file(path: &Path) -> Result<RecordedCpuid, CpuidFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| CpuidFileError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse_named(&text, &path.display().to_string())
    }

    fn parse_named(text: &str, origin: &str) -> Result<RecordedCpuid, CpuidFileError> {
        let mut recorded = RecordedCpuid::new();
        let mut first_seen: BTreeMap<(u32, u32), usize> = BTreeMap::new();
        for (index, raw_line) in text.lines().enumerate() {
            let line_no = index + 1;
            let syntax = |problem: String| CpuidFileError::Syntax {
                origin: origin.to_string(),
                line: line_no,
                problem,
            };
            let line = raw_line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() != 6 {
                return Err(syntax(format!("{} fields, 6 expected", fields.len())));
            }
            let mut numbers = [0u32; 6];
            for (slot, field) in numbers.iter_mut().zip(&fields) {
                *slot = parse_hex(field)
                    .ok_or_else(|| syntax(format!("{field:?} is not a 32-bit hex number")))?;
            }
            let key = (numbers[0], numbers[1]);
            if let Some(first) = first_seen.insert(key, line_no) {
                return Err(syntax(format!(
                    "leaf {:#x} subleaf {:#x} was already given on line {first}",
                    key.0, key.1
                )));
            }
            recorded.insert(
                key.0,
                key.1,
                [numbers[2], numbers[3], numbers[4], numbers[5]],
            );
        }
        Ok(recorded)
    }

    /// Record the leaves pmx decodes from another source: every basic leaf
    /// up to the maximum (subleaf 0, plus subleaf 1 of leaf 7), the hypervisor
    /// leaves when the hypervisor bit is set, and every extended leaf —
    /// except those that answer all zeros.
    pub fn capture(source: &dyn CpuidSource) -> RecordedCpuid {
        let mut recorded = RecordedCpuid::new();
        if !source.available() {
            return recorded;
        }
        // All-zero answers read back as zeros anyway; leaving them out keeps
        // dumps short. Leaf 0 is always kept.
        let mut take = |leaf: u32, subleaf: u32| {
            let regs = source.cpuid(leaf, subleaf);
            if leaf == 0 || regs != [0; 4] {
                recorded.insert(leaf, subleaf, regs);
            }
        };
        let max = source.cpuid(0, 0)[0].min(0x40);
        for leaf in 0..=max {
            take(leaf, 0);
        }
        if max >= 7 {
            take(7, 1);
        }
        if source.cpuid(1, 0)[2] & (1 << 31) != 0 {
            let max_hv = source.cpuid(0x4000_0000, 0)[0].clamp(0x4000_0000, 0x4000_0010);
            for leaf in 0x4000_0000..=max_hv {
                take(leaf, 0);
            }
        }
        let max_ext = source.cpuid(0x8000_0000, 0)[0];
        if max_ext & 0xFFFF_0000 == 0x8000_0000 {
            for leaf in 0x8000_0000..=max_ext.min(0x8000_0040) {
                take(leaf, 0);
            }
        }
        recorded
    }

    /// Write the recording in the text format [`Self::parse`] reads.
    pub fn to_text(&self) -> String {
        let mut out = String::from("# leaf    subleaf  eax      ebx      ecx      edx\n");
        for ((leaf, subleaf), [a, b, c, d]) in &self.leaves {
            let _ = writeln!(
                out,
                "{leaf:08x}  {subleaf:<7x}  {a:08x} {b:08x} {c:08x} {d:08x}"
            );
        }
        out
    }
}

impl CpuidSource for RecordedCpuid {
    fn cpuid(&self, leaf: u32, subleaf: u32) -> [u32; 4] {
        self.leaves.get(&(leaf, subleaf)).copied().unwrap_or([0; 4])
    }
}

fn parse_hex(text: &str) -> Option<u32> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_text_format() {
        let text = "\
# a comment
00000000 0 00000016 756e6547 6c65746e 49656e69   # vendor
0x0000000A 0x0 0x07300404 0 0 603

";
        let rec = RecordedCpuid::parse(text).unwrap();
        assert_eq!(rec.len(), 2);
        assert_eq!(rec.cpuid(0, 0), [0x16, 0x756e6547, 0x6c65746e, 0x49656e69]);
        assert_eq!(rec.cpuid(0xA, 0), [0x07300404, 0, 0, 0x603]);
        assert_eq!(
            rec.cpuid(0xA, 1),
            [0; 4],
            "unrecorded subleaf reads as zeros"
        );
        assert_eq!(rec.cpuid(0x8000_0000, 0), [0; 4]);
        assert!(rec.available());
    }

    #[test]
    fn bad_lines_are_reported_with_their_number() {
        let cases = [
            ("0 0 0 0 0\n", 1, "5 fields, 6 expected"),
            (
                "# x\n0 0 0 0 0 zz\n",
                2,
                "\"zz\" is not a 32-bit hex number",
            ),
            ("0 0 0 0 0 100000000\n", 1, "not a 32-bit hex number"),
            (
                "1 0 0 0 0 0\n\n0x1 0x0 1 1 1 1\n",
                3,
                "already given on line 1",
            ),
        ];
        for (text, line, message) in cases {
            match RecordedCpuid::parse(text) {
                Err(CpuidFileError::Syntax {
                    line: l, problem, ..
                }) => {
                    assert_eq!(l, line, "{text:?}");
                    assert!(problem.contains(message), "{problem}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
        let err = RecordedCpuid::parse("x").unwrap_err().to_string();
        assert!(err.starts_with("<text>:1: 1 fields, 6 expected"), "{err}");
    }

    #[test]
    fn missing_file_names_the_path() {
        let err = RecordedCpuid::from_file(Path::new("/nonexistent/cpuid.txt")).unwrap_err();
        assert!(
            err.to_string().starts_with("/nonexistent/cpuid.txt: "),
            "{err}"
        );
    }

    #[test]
    fn capture_and_text_round_trip() {
        let mut source = RecordedCpuid::new();
        source.insert(0, 0, [7, 1, 2, 3]);
        source.insert(1, 0, [0x906EA, 0, 1 << 31, 0]);
        source.insert(7, 1, [5, 0, 0, 0]);
        source.insert(0x4000_0000, 0, [0x4000_0001, 0x4b4d564b, 0x564b4d56, 0x4d]);
        source.insert(0x8000_0000, 0, [0x8000_0001, 0, 0, 0]);
        let captured = RecordedCpuid::capture(&source);
        // Leaves 0, 1, 7.1, 0x40000000 and 0x80000000; the all-zero leaves
        // 2-7.0, 0x40000001 and 0x80000001 are left out.
        assert_eq!(captured.len(), 5);
        assert_eq!(captured.cpuid(3, 0), [0; 4]);
        assert_eq!(captured.cpuid(7, 1), [5, 0, 0, 0]);
        let again = RecordedCpuid::parse(&captured.to_text()).unwrap();
        assert_eq!(again, captured);
    }

    #[test]
    fn native_cpuid_answers_on_x86() {
        let native = NativeCpuid;
        if !native.available() {
            assert_eq!(native.cpuid(0, 0), [0; 4]);
            return;
        }
        let [max, ..] = native.cpuid(0, 0);
        assert!(max >= 1, "every x86-64 CPU has leaf 1");
        let boxed: Box<dyn CpuidSource> = Box::new(native);
        assert_eq!(boxed.cpuid(0, 0)[0], max);
    }
}
