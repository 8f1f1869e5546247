//! The binary as BOLT sees it when it reads a profile: its functions
//! (the ELF symbol table's code symbols, local ones named `name/N` as
//! BOLT names them), each one's size and the room up to the next
//! function, and on demand its basic blocks, decoded with iced-x86 the
//! way BOLT splits code into blocks: a block starts at the function's
//! entry, at every target of a direct jump inside it and after every
//! jump or return (a block's last instruction may be a no-op, as in
//! BOLT: alignment padding stays in the block before it).

use iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic};
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SectionKind, SymbolKind};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeSet;
use std::path::Path;

/// One function.
pub(crate) struct Function {
    /// BOLT's name of it.
    pub name: String,
    /// Its address.
    pub start: u64,
    /// Its symbol's size.
    pub size: u64,
    /// Up to the next function or its section's end.
    pub max_size: u64,
}

/// One basic block: offsets in its function.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Block {
    pub start: u64,
    /// Its last instruction.
    pub last: u64,
    /// Control can reach the next block in the layout (a fall-through,
    /// or a jump to it).
    pub to_next: bool,
    /// The last instruction is a call.
    pub call: bool,
}

/// A binary's functions and the blocks decoded so far.
pub(crate) struct Binary {
    /// Sorted by address.
    pub functions: Vec<Function>,
    sections: Vec<(u64, Vec<u8>)>,
    /// (file offset, size, address) of each loaded segment.
    segments: Vec<(u64, u64, u64)>,
    x86_64: bool,
    blocks: HashMap<usize, Option<Vec<Block>>>,
    /// The build id, when the binary has one.
    pub build_id: Option<Vec<u8>>,
    /// The first executable segment's address, page-aligned (what
    /// llvm-profgen's offsets count from).
    pub text_base: u64,
}

impl Binary {
    /// Read `path`'s functions. Errors name the file.
    pub fn open(path: &Path) -> Result<Binary, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let obj = object::File::parse(&*bytes)
            .map_err(|e| format!("{}: not an ELF file: {e}", path.display()))?;
        let mut sections = Vec::new();
        let mut ends = Vec::new();
        for s in obj.sections().filter(|s| s.kind() == SectionKind::Text) {
            if let Ok(data) = s.data() {
                ends.push((s.address(), s.address() + s.size()));
                sections.push((s.address(), data.to_vec()));
            }
        }
        let text_base = (obj.segments())
            .find(
                |s| matches!(s.flags(), object::SegmentFlags::Elf { p_flags } if p_flags & 1 != 0),
            )
            .map_or(0, |s| s.address() & !0xfff);
        let segments = (obj.segments())
            .map(|s| (s.file_range().0, s.file_range().1, s.address()))
            .collect();
        let mut counters: HashMap<String, u32> = HashMap::default();
        let mut functions: Vec<Function> = Vec::new();
        for s in obj.symbols() {
            let Ok(name) = s.name() else { continue };
            if name.is_empty() || s.is_undefined() {
                continue;
            }
            let local = !s.is_global();
            let shown = if local && matches!(s.kind(), SymbolKind::Text | SymbolKind::Data) {
                let n = counters.entry(name.to_string()).or_default();
                *n += 1;
                format!("{name}/{n}")
            } else {
                name.to_string()
            };
            let code = ends.iter().any(|&(a, b)| (a..b).contains(&s.address()));
            if s.kind() != SymbolKind::Text || !code {
                continue;
            }
            if let Some(f) = functions.iter_mut().find(|f| f.start == s.address()) {
                f.size = f.size.max(s.size());
                continue;
            }
            functions.push(Function {
                name: shown,
                start: s.address(),
                size: s.size(),
                max_size: 0,
            });
        }
        functions.sort_by_key(|f| f.start);
        for i in 0..functions.len() {
            let start = functions[i].start;
            let section_end = (ends.iter())
                .find(|&&(a, b)| (a..b).contains(&start))
                .map_or(start, |e| e.1);
            let next = (functions.get(i + 1)).map_or(section_end, |f| f.start.min(section_end));
            functions[i].max_size = next - start;
        }
        Ok(Binary {
            functions,
            sections,
            segments,
            x86_64: obj.architecture() == object::Architecture::X86_64,
            blocks: HashMap::default(),
            build_id: obj.build_id().ok().flatten().map(<[u8]>::to_vec),
            text_base,
        })
    }

    /// The address of file offset `off` (the loaded segment holding it).
    pub fn address(&self, off: u64) -> Option<u64> {
        (self.segments.iter())
            .filter(|s| s.2 != 0 || s.0 != 0 || s.1 != 0)
            .find(|&&(o, n, _)| (o..o + n).contains(&off))
            .map(|&(o, _, a)| a + (off - o))
    }

    /// The function whose room (up to the next function) holds `addr`,
    /// as BOLT's aggregator looks functions up.
    pub fn containing(&self, addr: u64) -> Option<usize> {
        let i = self.functions.partition_point(|f| f.start <= addr);
        let f = self.functions.get(i.checked_sub(1)?)?;
        (addr - f.start < f.max_size.max(1)).then_some(i - 1)
    }

    /// Whether function `f`'s symbol covers `addr`.
    pub fn contains(&self, f: usize, addr: u64) -> bool {
        let f = &self.functions[f];
        (f.start..f.start + f.size).contains(&addr)
    }

    /// Function `f`'s blocks, `None` when BOLT would not build them (not
    /// x86-64, undecodable bytes, an indirect jump).
    pub fn blocks(&mut self, f: usize) -> Option<&[Block]> {
        if !self.blocks.contains_key(&f) {
            let b = self.decode(f);
            self.blocks.insert(f, b);
        }
        self.blocks.get(&f)?.as_deref()
    }

    /// Every instruction's address, decoded from each function's start
    /// up to the next function (as llvm-profgen disassembles), and the
    /// addresses of the calls, returns and direct unconditional jumps
    /// among them (llvm-profgen's "unconditional branches").
    pub fn instructions(&self) -> (BTreeSet<u64>, BTreeSet<u64>) {
        let (mut all, mut jumps) = (BTreeSet::new(), BTreeSet::new());
        for f in &self.functions {
            let Some(code) = self.code(f.start, f.max_size) else {
                continue;
            };
            for ins in Decoder::with_ip(64, code, f.start, DecoderOptions::NONE) {
                all.insert(ins.ip());
                if matches!(
                    ins.flow_control(),
                    FlowControl::UnconditionalBranch
                        | FlowControl::Call
                        | FlowControl::IndirectCall
                        | FlowControl::Return
                ) {
                    jumps.insert(ins.ip());
                }
            }
        }
        (all, jumps)
    }

    /// The bytes of `[start, start + len)`, when one code section holds them.
    fn code(&self, start: u64, len: u64) -> Option<&[u8]> {
        self.sections.iter().find_map(|(addr, data)| {
            let from = start.checked_sub(*addr)? as usize;
            data.get(from..from.checked_add(len as usize)?)
        })
    }

    fn decode(&self, f: usize) -> Option<Vec<Block>> {
        let func = &self.functions[f];
        if !self.x86_64 || func.size == 0 {
            return None;
        }
        let code = self.code(func.start, func.size)?;
        let mut decoder = Decoder::with_ip(64, code, func.start, DecoderOptions::NONE);
        let mut insns = Vec::new();
        let mut labels = BTreeSet::from([0u64]);
        let end = func.start + func.size;
        for ins in &mut decoder {
            if ins.is_invalid() {
                return None;
            }
            match ins.flow_control() {
                FlowControl::IndirectBranch => return None,
                FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch => {
                    let t = ins.near_branch_target();
                    if (func.start..end).contains(&t) {
                        labels.insert(t - func.start);
                    }
                }
                _ => {}
            }
            insns.push(ins);
        }
        Some(split(&insns, &labels, func.start))
    }
}

/// The blocks of a function's instructions.
fn split(insns: &[Instruction], labels: &BTreeSet<u64>, start: u64) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut targets: Vec<Option<u64>> = Vec::new();
    let mut ended = true;
    for ins in insns {
        let off = ins.ip() - start;
        if labels.contains(&off) || ended {
            if let Some(b) = blocks.last_mut() {
                b.to_next |= !ended;
            }
            blocks.push(Block {
                start: off,
                last: off,
                to_next: false,
                call: false,
            });
            targets.push(None);
            ended = false;
        }
        let (Some(b), Some(t)) = (blocks.last_mut(), targets.last_mut()) else {
            continue;
        };
        b.last = off;
        b.call = ins.flow_control() == FlowControl::Call;
        let flow = ins.flow_control();
        ended = matches!(
            flow,
            FlowControl::UnconditionalBranch
                | FlowControl::ConditionalBranch
                | FlowControl::Return
                | FlowControl::IndirectBranch
                | FlowControl::Exception
        ) || ins.mnemonic() == Mnemonic::Hlt;
        b.to_next = flow == FlowControl::ConditionalBranch;
        *t = matches!(
            flow,
            FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch
        )
        .then(|| ins.near_branch_target().wrapping_sub(start));
    }
    for i in 0..blocks.len().saturating_sub(1) {
        if targets[i] == Some(blocks[i + 1].start) {
            blocks[i].to_next = true;
        }
    }
    blocks
}
