//! The per-instruction figures of the samples' precise records, beside
//! the sample counts: for samples that carry `data_src` or a weight
//! (`-d`/`-W`, PEBS load latency, IBS), each instruction's memory levels
//! (perf's words for `data_src`'s level, as `perf script` prints them)
//! and average weight. perf annotate 6.1 has no such columns
//! (docs/memory.md). The file is read a second time for them, only when
//! one of its selected events carries those fields; its side band (maps,
//! forks) is applied in file order, and each user sample's address is
//! taken to the annotated binary's virtual addresses through its
//! mapping.

use super::types::{AnnotateOptions, Annotation, MemoryCell};
use super::AnnotateError;
use crate::profile::{AddressSamples, Profile};
use crate::report::ReportError;
use pmx_perfdata::format::{misc, sample_type};
use pmx_perfdata::read::{Record, Sample};
use pmx_perfdata::Reader;
use pmx_symbols::symbolize::Symbolizer;
use rustc_hash::FxHashMap as HashMap;
use std::path::Path;

/// The sample fields that make a memory sample.
const MEMORY: u64 = sample_type::DATA_SRC | sample_type::WEIGHT | sample_type::WEIGHT_STRUCT;

/// Add `a`'s memory columns from `opts.input` (not from a pipe, which
/// cannot be read twice).
pub(super) fn add(
    a: &mut Annotation,
    profile: &Profile,
    places: &[AddressSamples],
    opts: &AnnotateOptions,
) -> Result<(), AnnotateError> {
    if opts.input.as_os_str() == "-" {
        return Ok(());
    }
    let selected = super::select(profile, opts.event.as_deref(), &a.file)?;
    let chosen = super::choose(places, &selected, opts, &a.file)?;
    let read_err = |source| {
        AnnotateError::Report(ReportError::Read {
            file: a.file.clone(),
            source,
        })
    };
    let reader = Reader::open(&opts.input).map_err(read_err)?;
    let wanted: Vec<bool> = (0..reader.events().len())
        .map(|e| selected.contains(&e) && reader.events()[e].attr.sample_type & MEMORY != 0)
        .collect();
    if !wanted.contains(&true) {
        return Ok(());
    }
    let has_src: Vec<bool> = (reader.events().iter())
        .map(|e| e.attr.sample_type & sample_type::DATA_SRC != 0)
        .collect();
    // Per instruction: samples, weight, level → samples.
    let mut cells: Vec<(u64, u64, HashMap<String, u64>)> =
        vec![Default::default(); a.instructions.len()];
    let mut each = |s: &Sample<'_>, at: &dyn Fn(u64) -> Option<u64>| {
        if s.misc & misc::CPUMODE_MASK == misc::KERNEL {
            return;
        }
        let Some(vaddr) = at(s.ip) else { return };
        let i = a.instructions.partition_point(|ins| ins.addr <= vaddr) - 1;
        let c = &mut cells[i];
        c.0 += 1;
        c.1 += s.weight;
        if has_src[s.event] {
            let d = pmx_perfdata::mem::DataSrc::from_raw(s.data_src);
            *c.2.entry(crate::data_src::lvl_text(&d)).or_default() += 1;
        }
    };
    samples(a, &chosen.dso_path, reader, &wanted, opts, &mut each)?;
    if cells.iter().all(|c| c.0 == 0) {
        return Ok(());
    }
    a.memory = (cells.into_iter())
        .map(|(samples, weight, levels)| {
            let mut levels: Vec<(String, u64)> = levels.into_iter().collect();
            levels.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
            (samples > 0).then_some(MemoryCell {
                samples,
                weight,
                levels,
            })
        })
        .collect();
    Ok(())
}

/// A sample given with the way to its function's addresses ([`samples`]).
pub(super) type Each<'a> = dyn FnMut(&Sample<'_>, &dyn Fn(u64) -> Option<u64>) + 'a;

/// Read the rest of `reader`: its side band (maps, forks) applied in file
/// order, each sample of a `wanted` event given to `each` with a way to
/// take a user address of the sample's process to the annotated
/// binary's virtual addresses (through its mapping of `dso_path`):
/// `Some` only inside `a`'s code, at or after its first instruction.
pub(super) fn samples(
    a: &Annotation,
    dso_path: &str,
    mut reader: Reader,
    wanted: &[bool],
    opts: &AnnotateOptions,
    each: &mut Each<'_>,
) -> Result<(), AnnotateError> {
    let read_err = |source| {
        AnnotateError::Report(ReportError::Read {
            file: a.file.clone(),
            source,
        })
    };
    let (elf, _) = (opts.symbols.binaries.open(Path::new(&a.path))).map_err(|reason| {
        AnnotateError::NoCode {
            symbol: a.symbol.clone(),
            reason,
        }
    })?;
    let mut sym = Symbolizer::new(Default::default(), Default::default(), None, &opts.symbols);
    while let Some(rec) = reader.next_record().map_err(read_err)? {
        match rec {
            Record::Mmap(m) if m.pid != u32::MAX && m.misc & misc::CPUMODE_MASK != misc::KERNEL => {
                sym.add_mapping(m.pid, m.start, m.len, m.pgoff, m.filename, m.inode);
            }
            Record::Fork(t) => sym.fork(t.ppid, t.pid),
            Record::Sample(s) if wanted.get(s.event) == Some(&true) => {
                let at = |addr: u64| {
                    let (start, _, pgoff, dso) = sym.mapping(s.pid, addr)?;
                    if sym.dso(dso).path != dso_path {
                        return None;
                    }
                    let vaddr = elf.offset_to_vaddr((addr - start).wrapping_add(pgoff))?;
                    let first = a.instructions.first()?.addr;
                    (vaddr >= first && vaddr < a.end).then_some(vaddr)
                };
                each(&s, &at);
            }
            _ => {}
        }
    }
    Ok(())
}
