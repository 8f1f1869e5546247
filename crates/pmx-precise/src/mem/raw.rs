//! `perf mem report -D` (`--dump-raw-samples`): each memory sample on a
//! line — pid, tid, code and data address, (physical address, data page
//! size), weight, `data_src`, the code's binary and symbol — as perf 6.1
//! writes it. perf pads the first line's columns (`%5d`, `0x%016x`, and
//! the data address as `0x016` then the hex: its format's slip) and no
//! later one (its separator is then set, a space); with `-x SEP` no line
//! is padded.

use super::replay::{self, MemSample, Resolver};
use super::report::MemError;
use pmx_perfdata::format::sample_type;
use pmx_perfdata::Reader;
use pmx_symbols::symbolize::{FrameName, UNKNOWN_DSO};
use pmx_symbols::SymbolOptions;
use std::io::Write;
use std::path::PathBuf;

/// What to dump.
#[derive(Debug, Clone, Default)]
pub struct RawOptions {
    /// The perf.data file.
    pub input: PathBuf,
    /// `-x`: the separator (no padding).
    pub separator: Option<String>,
    /// `-p`: the physical address column.
    pub phys: bool,
    /// `--data-page-size`: the page size column.
    pub data_page_size: bool,
    /// `-U`: leave out samples whose code no symbol covers.
    pub hide_unresolved: bool,
    /// `-C`: a CPU list, checked against the file as perf checks it (perf
    /// 6.1's dump does not filter by it).
    pub cpus: Option<String>,
    /// Demangling, directories and binary cache of the symbolizer.
    pub symbols: SymbolOptions,
}

/// Why `-C` is refused (perf's words).
fn check_cpus(list: &str, reader: &Reader) -> Result<(), String> {
    let has_cpu = (reader.events().iter()).any(|e| e.attr.sample_type & sample_type::CPU != 0);
    if !has_cpu {
        return Err("File does not contain CPU events. Remove -C option to proceed.".into());
    }
    let cpus = pmx_model::topology::parse_cpu_list(list).map_err(|_| "Invalid cpu_list")?;
    let avail = reader.features().nrcpus.map_or(2048, |n| n.1.min(2048));
    match cpus.iter().find(|&&c| c >= avail) {
        Some(c) => Err(format!(
            "Requested CPU {c} too large. Consider raising MAX_NR_CPUS"
        )),
        None => Ok(()),
    }
}

/// Dump the memory samples of `opts.input` to `out` as `perf mem report
/// -D` does; `Err(MemError::Refused)` for a `-C` the file cannot take.
pub fn dump(opts: &RawOptions, out: &mut dyn Write) -> Result<(), MemError> {
    let file = opts.input.display().to_string();
    let read_err = |source| MemError::Read {
        file: file.clone(),
        source,
    };
    let mut reader = Reader::open(&opts.input).map_err(read_err)?;
    if let Some(list) = &opts.cpus {
        check_cpus(list, &reader).map_err(MemError::Refused)?;
    }
    let mut resolver = Resolver::for_reader(&reader, None, &opts.symbols);
    let mut head = String::from("# PID, TID, IP, ADDR, ");
    if opts.phys {
        head.push_str("PHYS ADDR, ");
    }
    if opts.data_page_size {
        head.push_str("DATA PAGE SIZE, ");
    }
    head.push_str("LOCAL WEIGHT, DSRC, SYMBOL\n");
    let mut failed = out.write_all(head.as_bytes()).err();
    let mut padded = opts.separator.is_none();
    let sep = opts.separator.clone().unwrap_or_else(|| " ".into());
    let mut line = |s: &MemSample, r: &mut Resolver| {
        let frame = r.sym.frame(s.frame);
        let symbol = match &frame.name {
            FrameName::Symbol(n) => Some(n.as_str()),
            FrameName::Address(_) => None,
        };
        if opts.hide_unresolved && symbol.is_none() {
            return;
        }
        let dso = match frame.dso {
            UNKNOWN_DSO => "???",
            d => r.sym.dso(d).path.as_str(),
        };
        let mut l = if padded {
            format!(
                "{:5}{sep}{:5}{sep}0x{:016x}{sep}0x016{:x}{sep}",
                s.pid, s.tid, s.ip, s.addr
            )
        } else {
            format!(
                "{}{sep}{}{sep}0x{:x}{sep}0x{:x}{sep}",
                s.pid, s.tid, s.ip, s.addr
            )
        };
        if opts.phys {
            l.push_str(&format!("0x{:016x}{sep}", s.phys_addr));
        }
        if opts.data_page_size {
            let size = pmx_profile::data_src::page_size_name(s.data_page_size);
            l.push_str(&format!("{size}{sep}"));
        }
        let (weight, src) = (s.weight, s.data_src);
        if padded {
            l.push_str(&format!("{weight:5}{sep}0x{src:06x}{sep}"));
        } else {
            l.push_str(&format!("{weight}{sep}0x{src:x}{sep}"));
        }
        l.push_str(&format!("{dso}:{}\n", symbol.unwrap_or("???")));
        if failed.is_none() {
            failed = out.write_all(l.as_bytes()).err();
        }
        padded = false;
    };
    replay::run(&mut reader, &mut resolver, &mut line).map_err(read_err)?;
    failed.map_or(Ok(()), |e| Err(MemError::Write(e)))
}
