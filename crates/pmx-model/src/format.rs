//! PMU format fields: where the kernel puts each term of a PMU's events.
//!
//! Every PMU under `/sys/bus/event_source/devices/<pmu>/format/` has one
//! file per term whose content says which bits of which attr word hold it:
//! `config:0-7`, `config:0-7,32-35` (a term split over two ranges, AMD's
//! event select), `config1:0-15`, `config:18` (one bit). A
//! [`FormatField`] scatters a term's value over those bits, low range
//! first, as the kernel does.

use serde::Serialize;

/// Which attr word a field lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigWord {
    /// `attr.config`.
    Config,
    /// `attr.config1`.
    Config1,
    /// `attr.config2`.
    Config2,
    /// `attr.config3`.
    Config3,
}

/// One format field: a term name and the bit ranges it occupies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FormatField {
    /// The term (`event`, `umask`, `cmask`…).
    pub name: String,
    /// Which word.
    pub word: ConfigWord,
    /// Bit ranges `(lo, hi)`, inclusive, in the order the value fills them.
    pub ranges: Vec<(u8, u8)>,
}

impl FormatField {
    /// Parse a format file's content (`config:0-7,32-35`).
    pub fn parse(name: &str, text: &str) -> Result<FormatField, String> {
        let t = text.trim();
        let (word, bits) = t
            .split_once(':')
            .ok_or_else(|| format!("format '{name}': expected 'configN:BITS', got '{t}'"))?;
        let word = match word.trim() {
            "config" => ConfigWord::Config,
            "config1" => ConfigWord::Config1,
            "config2" => ConfigWord::Config2,
            "config3" => ConfigWord::Config3,
            other => return Err(format!("format '{name}': unknown word '{other}'")),
        };
        let mut ranges = Vec::new();
        for part in bits.split(',') {
            let part = part.trim();
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part, part),
            };
            let lo: u8 = lo.parse().map_err(|_| format!("format '{name}': bad bit '{lo}'"))?;
            let hi: u8 = hi.parse().map_err(|_| format!("format '{name}': bad bit '{hi}'"))?;
            if lo > hi || hi > 63 {
                return Err(format!("format '{name}': bad bit range {lo}-{hi}"));
            }
            ranges.push((lo, hi));
        }
        Ok(FormatField { name: name.to_string(), word, ranges })
    }

    /// Total width in bits.
    pub fn width(&self) -> u32 {
        self.ranges.iter().map(|(lo, hi)| (hi - lo) as u32 + 1).sum()
    }

    /// The largest value the field holds.
    pub fn max_value(&self) -> u64 {
        let w = self.width();
        if w >= 64 {
            u64::MAX
        } else {
            (1u64 << w) - 1
        }
    }

    /// Scatter `value` over the ranges; `None` if it does not fit.
    pub fn place(&self, value: u64) -> Option<u64> {
        if value > self.max_value() {
            return None;
        }
        let mut out = 0u64;
        let mut v = value;
        for (lo, hi) in &self.ranges {
            let w = (hi - lo) as u32 + 1;
            let mask = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
            out |= (v & mask) << lo;
            v = if w >= 64 { 0 } else { v >> w };
        }
        Some(out)
    }

    /// The bits the field occupies in its word.
    pub fn mask(&self) -> u64 {
        self.place(self.max_value()).unwrap_or(0)
    }

    /// Gather the field's value back out of a word.
    pub fn extract(&self, word: u64) -> u64 {
        let mut out = 0u64;
        let mut shift = 0u32;
        for (lo, hi) in &self.ranges {
            let w = (hi - lo) as u32 + 1;
            let mask = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
            if shift < 64 {
                out |= ((word >> lo) & mask) << shift;
            }
            shift += w;
        }
        out
    }

    /// `config:0-7,32-35` as the kernel prints it.
    pub fn describe(&self) -> String {
        let word = match self.word {
            ConfigWord::Config => "config",
            ConfigWord::Config1 => "config1",
            ConfigWord::Config2 => "config2",
            ConfigWord::Config3 => "config3",
        };
        let r: Vec<String> = self
            .ranges
            .iter()
            .map(|(lo, hi)| if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") })
            .collect();
        format!("{word}:{}", r.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amd_split_event() {
        let f = FormatField::parse("event", "config:0-7,32-35\n").unwrap();
        assert_eq!(f.width(), 12);
        assert_eq!(f.place(0x4e1), Some(0x4_0000_00e1));
        assert_eq!(f.extract(0x4_0000_f7e1), 0x4e1);
        assert_eq!(f.place(0x1000), None);
        assert_eq!(f.describe(), "config:0-7,32-35");
    }

    #[test]
    fn single_bits_and_words() {
        let f = FormatField::parse("edge", "config:18").unwrap();
        assert_eq!(f.place(1), Some(1 << 18));
        let l = FormatField::parse("ldlat", "config1:0-15").unwrap();
        assert_eq!(l.word, ConfigWord::Config1);
        assert_eq!(l.mask(), 0xffff);
        let whole = FormatField::parse("offcore_rsp", "config1:0-63").unwrap();
        assert_eq!(whole.place(u64::MAX), Some(u64::MAX));
        assert!(FormatField::parse("x", "config:9-3").is_err());
        assert!(FormatField::parse("x", "bogus").is_err());
        assert!(FormatField::parse("x", "config:64").is_err());
    }
}
