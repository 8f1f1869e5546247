//! `-F brstackinsn` (and `brstackinsnlen`): the instructions executed
//! between consecutive branches of a sample's branch stack, read from the
//! binaries and decoded with iced-x86, in perf 6.1's layout without
//! `--xed`: each instruction as `insn: ` and its bytes, each branch with
//! its flags, cycles, the running total of cycles and the block's IPC,
//! the symbol printed where a new one starts. Blocks are as perf cuts
//! them: the oldest branch alone, then from each branch's target to the
//! next branch's source (a block that crosses between kernel and user
//! joined with the next), then from the newest target to the sample's
//! address. Kernel code is not read (perf reads it from a vmlinux or
//! `/proc/kcore`): its blocks are left out.

use iced_x86::{Decoder, DecoderOptions, FlowControl};
use pmx_perfdata::branch::BranchFlags;
use std::io::Write;

/// perf's limits: the longest block dumped, the longest instruction.
const MAXBB: u64 = 16384;
const MAXINSN: u64 = 15;

/// What the printer needs of the replay: code bytes and symbols.
pub(crate) trait Lookup {
    /// Up to `len` bytes of code at `addr` of the sample's process (user
    /// code only), read from its binary's file: empty when unreadable.
    fn code(&mut self, addr: u64, len: u64, out: &mut Vec<u8>);
    /// The symbol covering `addr`: an identity, its name and the offset.
    fn symbol(&mut self, kernel: bool, addr: u64) -> Option<(u32, String, i64)>;
}

/// A block's bytes, or why there are none (perf's `grab_bb`).
enum Block {
    Bytes,
    /// Empty, or unreadable.
    None,
    /// It crosses between kernel and user (`-ENXIO`).
    Crosses,
}

fn is_kernel(a: u64) -> bool {
    a >= 1 << 63
}

/// The printer's state over one sample.
struct Insns<'a> {
    b: &'a mut Vec<u8>,
    look: &'a mut dyn Lookup,
    buf: Vec<u8>,
    kernel: bool,
    last_sym: Option<u32>,
    total_cycles: u64,
    with_len: bool,
}

impl Insns<'_> {
    fn grab(&mut self, start: u64, end: u64, _last: bool) -> Block {
        self.buf.clear();
        if start == 0 || end == 0 {
            return Block::None;
        }
        self.kernel = is_kernel(start);
        if self.kernel != is_kernel(end) {
            return Block::Crosses;
        }
        if end.wrapping_sub(start) > MAXBB - MAXINSN || self.kernel {
            return Block::None;
        }
        let mut buf = std::mem::take(&mut self.buf);
        self.look.code(start, end - start + MAXINSN, &mut buf);
        self.buf = buf;
        if self.buf.is_empty() {
            Block::None
        } else {
            Block::Bytes
        }
    }

    /// The symbol's line when `addr` starts a new one.
    fn symbol(&mut self, addr: u64) {
        let Some((id, name, off)) = self.look.symbol(self.kernel, addr) else {
            return;
        };
        if self.last_sym == Some(id) {
            return;
        }
        let _ = write!(self.b, "\t{name}");
        if off != 0 {
            let _ = write!(self.b, "{off:+}");
        }
        self.b.extend_from_slice(b":\n");
        self.last_sym = Some(id);
    }

    /// `insn: xx xx …` of the instruction at `self.buf[off..]`, and its
    /// length (0: not decodable).
    fn dump(&self, at: u64, off: usize) -> (String, usize) {
        let code = self.buf.get(off..).unwrap_or(&[]);
        let mut d = Decoder::with_ip(64, code, at, DecoderOptions::NONE);
        let i = d.decode();
        if i.is_invalid() || i.len() > code.len() {
            return ("<bad>".to_string(), 0);
        }
        let mut s = String::from("insn: ");
        for byte in &code[..i.len()] {
            let _ = std::fmt::Write::write_fmt(&mut s, format_args!("{byte:02x} "));
        }
        (s, i.len())
    }

    /// The line of the instruction at `at` (`self.buf[off..]`, not a
    /// branch of the stack), with its length for `brstackinsnlen`; its
    /// length (0: not decodable).
    fn line(&mut self, at: u64, off: usize) -> usize {
        let (text, ilen) = self.dump(at, off);
        let _ = write!(self.b, "\t{at:016x}\t{text}");
        if self.with_len {
            let _ = write!(self.b, "\tilen: {ilen}");
        }
        self.b.push(b'\n');
        ilen
    }

    /// The branch instruction at `at` (`self.buf[off..]`) with its flags
    /// and cycles; `insns` the block's instructions (0: no IPC).
    fn jump(&mut self, at: u64, flags: BranchFlags, off: usize, insns: u64) {
        let (text, ilen) = self.dump(at, off);
        let _ = write!(self.b, "\t{at:016x}\t{text:<30}\t");
        if self.with_len {
            let _ = write!(self.b, "ilen: {ilen}\t");
        }
        self.b.push(b'#');
        for (on, word) in [
            (flags.predicted(), " PRED"),
            (flags.mispred(), " MISPRED"),
            (flags.in_tx(), " INTX"),
            (flags.abort(), " ABORT"),
        ] {
            if on {
                self.b.extend_from_slice(word.as_bytes());
            }
        }
        let cycles = flags.cycles();
        if cycles != 0 {
            self.total_cycles += u64::from(cycles);
            let _ = write!(self.b, " {cycles} cycles [{}]", self.total_cycles);
            if insns != 0 {
                let _ = write!(self.b, " {:.2} IPC", insns as f32 / f32::from(cycles));
            }
        }
        self.b.push(b'\n');
    }

    /// The block from `start` to the branch at `end` (entry `flags`).
    fn block(&mut self, start: u64, end: u64, flags: BranchFlags) {
        let len = self.buf.len();
        let (mut off, mut insns) = (0usize, 0u64);
        while off < len {
            let at = start + off as u64;
            self.symbol(at);
            if at == end {
                insns += 1;
                self.jump(at, flags, off, insns);
                break;
            }
            let ilen = self.line(at, off);
            if ilen == 0 {
                break;
            }
            insns += 1;
            off += ilen;
        }
        if off as u64 != end.wrapping_sub(start) {
            self.b
                .extend_from_slice(b"\tmismatch of LBR data and executable\n");
        }
    }

    /// From the newest branch's target up to the sample's address `ip`.
    fn last_block(&mut self, start: u64, ip: u64) {
        let end = if ip < start { start + 128 } else { ip };
        let got = self.grab(start, end, true);
        self.symbol(start);
        if !matches!(got, Block::Bytes) {
            if matches!(self.grab(ip, ip, false), Block::Bytes) {
                self.line(ip, 0);
            }
            return;
        }
        let mut off = 0u64;
        while off <= end - start {
            let ilen = self.line(start + off, off as usize);
            if ilen == 0 {
                break;
            }
            if is_branch(&self.buf[off as usize..]) && start + off != ip {
                self.b.extend_from_slice(b"\t... not reaching sample ...\n");
                break;
            }
            off += ilen as u64;
        }
    }
}

/// Whether the instruction at the start of `code` branches (as perf's
/// `arch_is_branch`: an undecodable one counts as a branch).
fn is_branch(code: &[u8]) -> bool {
    let mut d = Decoder::new(64, code, DecoderOptions::NONE);
    let i = d.decode();
    i.is_invalid()
        || !matches!(
            i.flow_control(),
            FlowControl::Next | FlowControl::Exception | FlowControl::XbeginXabortXend
        )
}

/// The `brstackinsn` text of a sample at `ip` with the branch stack `br`
/// ((from, to, flags) triples, newest first).
pub(crate) fn text(b: &mut Vec<u8>, look: &mut dyn Lookup, ip: u64, br: &[u64], with_len: bool) {
    let entries: Vec<(u64, u64, BranchFlags)> = (br.chunks_exact(3))
        .map(|e| (e[0], e[1], BranchFlags(e[2])))
        .collect();
    let Some(&(oldest, _, oldest_flags)) = entries.last() else {
        return;
    };
    let mut p = Insns {
        b,
        look,
        buf: Vec::new(),
        kernel: false,
        last_sym: None,
        total_cycles: 0,
        with_len,
    };
    p.b.push(b'\n');
    if matches!(p.grab(oldest, oldest, false), Block::Bytes) {
        p.symbol(oldest);
        p.jump(oldest, oldest_flags, 0, 0);
    }
    let mut i = entries.len() - 1;
    while i > 0 {
        i -= 1;
        let start = entries[i + 1].1;
        let mut end = entries[i].0;
        let mut got = p.grab(start, end, false);
        if matches!(got, Block::Crosses) && i > 0 {
            // A transfer into the kernel that the ring filter dropped.
            i -= 1;
            end = entries[i].0;
            got = p.grab(start, end, false);
        }
        if matches!(got, Block::Bytes) {
            p.block(start, end, entries[i].2);
        }
    }
    let (from, to, flags) = entries[0];
    if from == ip || flags.abort() {
        return;
    }
    p.last_block(to, ip);
}
