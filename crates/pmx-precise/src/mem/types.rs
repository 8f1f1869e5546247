//! The memory operand of a sampled instruction, for the data-type keys
//! (`type`, `typeoff`): its base register as DWARF numbers it and its
//! displacement, when the operand has a base register and no index (an
//! indexed access says nothing about the field without the index's
//! value). The types themselves come from DWARF:
//! [`pmx_symbols::symbolize::Symbolizer::data_type`].

use iced_x86::{Decoder, DecoderOptions, OpKind, Register};

/// DWARF's x86-64 number of a 64-bit general register.
fn dwarf_number(r: Register) -> Option<u16> {
    use Register::*;
    Some(match r {
        RAX => 0,
        RDX => 1,
        RCX => 2,
        RBX => 3,
        RSI => 4,
        RDI => 5,
        RBP => 6,
        RSP => 7,
        R8 => 8,
        R9 => 9,
        R10 => 10,
        R11 => 11,
        R12 => 12,
        R13 => 13,
        R14 => 14,
        R15 => 15,
        _ => return Option::None,
    })
}

/// The (DWARF base register, displacement) of the memory operand of the
/// instruction at the start of `code` (at address `ip`).
pub(crate) fn memory_operand(code: &[u8], ip: u64) -> Option<(u16, i64)> {
    let mut d = Decoder::with_ip(64, code, ip, DecoderOptions::NONE);
    let insn = d.decode();
    if insn.is_invalid() || insn.memory_index() != Register::None {
        return None;
    }
    (0..insn.op_count()).find(|&i| insn.op_kind(i) == OpKind::Memory)?;
    let base = dwarf_number(insn.memory_base())?;
    Some((base, insn.memory_displacement64() as i64))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_store_through_rdi_and_an_indexed_load() {
        // mov dword ptr [rdi+8], 1
        let st = [0xc7, 0x47, 0x08, 0x01, 0, 0, 0];
        assert_eq!(super::memory_operand(&st, 0x1000), Some((5, 8)));
        // mov eax, [rdi+rsi*4+4]: an index, no answer.
        assert_eq!(super::memory_operand(&[0x8b, 0x44, 0xb7, 0x04], 0), None);
        // mov eax, [rbx-16]
        assert_eq!(
            super::memory_operand(&[0x8b, 0x43, 0xf0], 0),
            Some((3, -16))
        );
    }
}
