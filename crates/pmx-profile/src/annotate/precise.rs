//! The per-instruction figures of the samples' precise records, beside
//! the sample counts: for samples that carry `data_src` or a weight
//! (`-d`/`-W`, PEBS load latency, IBS), each instruction's memory levels
//! (perf's words for `data_src`'s level, as `perf script` prints them)
//! and average weight. perf annotate 6.1 has no such columns
//! (docs/memory.md). They come from the file's second read (`samples`,
//! shared with the IPC and Cycle columns: `super::second_read`), made only
//! when one of its selected events carries those fields or branch
//! stacks; its side band (maps, forks) is applied in file order, and each
//! user sample's address is taken to the annotated binary's virtual
//! addresses through its mapping.

use super::types::{AnnotateOptions, Annotation, MemoryCell};
use super::AnnotateError;
use crate::report::ReportError;
use pmx_perfdata::format::{misc, sample_type};
use pmx_perfdata::read::{Record, Sample};
use pmx_perfdata::Reader;
use pmx_symbols::symbolize::Symbolizer;
use rustc_hash::FxHashMap as HashMap;
use std::path::Path;

/// The sample fields that make a memory sample.
const MEMORY: u64 = sample_type::DATA_SRC | sample_type::WEIGHT | sample_type::WEIGHT_STRUCT;

/// The memory columns being counted: per instruction, samples, weight
/// and samples per level.
pub(super) struct Memory {
    cells: Vec<(u64, u64, HashMap<String, u64>)>,
    /// Per event of the file: whether its samples carry `data_src`.
    has_src: Vec<bool>,
}

impl Memory {
    /// Counts for `a`'s instructions, the file's events' sample types
    /// given.
    pub(super) fn new(a: &Annotation, sample_types: &[u64]) -> Self {
        Memory {
            cells: vec![Default::default(); a.instructions.len()],
            has_src: (sample_types.iter())
                .map(|t| t & sample_type::DATA_SRC != 0)
                .collect(),
        }
    }

    /// Whether an event with this `sample_type` feeds the columns.
    pub(super) fn wants(sample_type: u64) -> bool {
        sample_type & MEMORY != 0
    }

    /// One sample of a wanted event, `at` taking an address to the
    /// function's (`Some` only inside it).
    pub(super) fn sample(
        &mut self,
        a: &Annotation,
        s: &Sample<'_>,
        at: &dyn Fn(u64) -> Option<u64>,
    ) {
        if s.misc & misc::CPUMODE_MASK == misc::KERNEL {
            return;
        }
        let Some(vaddr) = at(s.ip) else { return };
        let i = a.instructions.partition_point(|ins| ins.addr <= vaddr) - 1;
        let c = &mut self.cells[i];
        c.0 += 1;
        c.1 += s.weight;
        if self.has_src.get(s.event) == Some(&true) {
            let d = pmx_perfdata::mem::DataSrc::from_raw(s.data_src);
            *c.2.entry(crate::data_src::lvl_text(&d)).or_default() += 1;
        }
    }

    /// Give `a` its columns, if any of its instructions had a sample.
    pub(super) fn finish(self, a: &mut Annotation) {
        if self.cells.iter().all(|c| c.0 == 0) {
            return;
        }
        a.memory = (self.cells.into_iter())
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
    }
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
