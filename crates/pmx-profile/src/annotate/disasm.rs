//! x86-64 machine code → instructions as objdump writes them (iced-x86):
//! the mnemonic padded to six columns and a space, AT&T or Intel
//! operands, direct jump and call targets as `ADDR <symbol+0xOFF>`, and
//! RIP-relative operands followed by `# ADDR <symbol>` — the layout of
//! `objdump -d`, which `perf annotate` shows.

use super::types::Syntax;
use iced_x86::{
    Decoder, DecoderOptions, Formatter, GasFormatter, Instruction, IntelFormatter, OpKind, Register,
};

/// One decoded instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// Its address.
    pub addr: u64,
    /// Its encoding.
    pub bytes: Vec<u8>,
    /// Its text.
    pub text: String,
    /// The target of a direct jump or call.
    pub target: Option<u64>,
}

fn formatter(syntax: Syntax) -> Box<dyn Formatter> {
    let mut f: Box<dyn Formatter> = match syntax {
        Syntax::Att => Box::new(GasFormatter::new()),
        Syntax::Intel => Box::new(IntelFormatter::new()),
    };
    let o = f.options_mut();
    o.set_first_operand_char_index(7);
    o.set_rip_relative_addresses(true);
    o.set_uppercase_hex(false);
    o.set_hex_prefix("0x");
    o.set_hex_suffix("");
    o.set_small_hex_numbers_in_decimal(false);
    o.set_space_after_operand_separator(false);
    o.set_branch_leading_zeros(false);
    o.set_show_branch_size(false);
    // objdump -M intel: `QWORD PTR [rsp+0x10]`.
    o.set_uppercase_keywords(true);
    f
}

/// Decode `code` (64-bit mode) placed at `ip`; `label` names an address
/// (`symbol+0xOFF`, `name@plt`) for jump targets and RIP-relative operands.
pub fn disassemble(
    code: &[u8],
    ip: u64,
    syntax: Syntax,
    label: &mut dyn FnMut(u64) -> Option<String>,
) -> Vec<Decoded> {
    let mut fmt = formatter(syntax);
    let mut decoder = Decoder::with_ip(64, code, ip, DecoderOptions::NONE);
    let mut out = Vec::new();
    let mut text = String::new();
    while decoder.can_decode() {
        let pos = decoder.position();
        let ins = decoder.decode();
        let bytes = code[pos..pos + ins.len()].to_vec();
        text.clear();
        let branch = ins.op_count() == 1
            && matches!(
                ins.op0_kind(),
                OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
            );
        let target = branch.then(|| ins.near_branch_target());
        if ins.is_invalid() {
            text.push_str("(bad)");
        } else if let Some(t) = target {
            fmt.format_mnemonic(&ins, &mut text);
            pad_mnemonic(&mut text);
            text.push_str(&format!("{t:x}"));
            if let Some(l) = label(t) {
                text.push_str(&format!(" <{l}>"));
            }
        } else {
            // objdump shows a displacement of 0 when one is encoded, and
            // the scale whenever there is an index.
            let o = fmt.options_mut();
            o.set_show_zero_displacements(
                ins.memory_displ_size() > 0 && !ins.is_ip_rel_memory_operand(),
            );
            o.set_always_show_scale(ins.memory_index() != Register::None);
            fmt.format(&ins, &mut text);
            objdump_names(&mut text);
            ignored_segment(&ins, &mut text);
            if ins.is_ip_rel_memory_operand() {
                let a = ins.ip_rel_memory_address();
                text.push_str(&format!("        # {a:x}"));
                if let Some(l) = label(a) {
                    text.push_str(&format!(" <{l}>"));
                }
            }
        }
        out.push(Decoded {
            addr: ins.ip(),
            bytes,
            text: text.trim_end().to_string(),
            target,
        });
    }
    out
}

/// The GOT slot a PLT entry at `ip` jumps through: the first
/// `jmp *ADDR(%rip)` of its first three instructions (after `endbr64`,
/// `bnd`).
pub fn plt_slot(code: &[u8], ip: u64) -> Option<u64> {
    let mut decoder = Decoder::with_ip(64, code, ip, DecoderOptions::NONE);
    for _ in 0..3 {
        if !decoder.can_decode() {
            break;
        }
        let ins = decoder.decode();
        if ins.mnemonic() == iced_x86::Mnemonic::Jmp && ins.is_ip_rel_memory_operand() {
            return Some(ins.ip_rel_memory_address());
        }
    }
    None
}

/// objdump's names where iced's differ: indirect jumps and calls without
/// the size suffix (binutils ≥ 2.37), `repz`/`repnz` for `rep`/`repe`/`repne`
/// before instructions that are not string moves or stores.
fn objdump_names(text: &mut String) {
    const RENAMES: [(&str, &str); 5] = [
        ("callq  *", "call   *"),
        ("jmpq   *", "jmp    *"),
        ("rep ret", "repz ret"),
        ("repe ", "repz "),
        ("repne ", "repnz "),
    ];
    for (long, short) in RENAMES {
        if text.starts_with(long) {
            text.replace_range(..long.len(), short);
            return;
        }
    }
}

/// A segment override that 64-bit mode ignores (es, cs, ss, ds; padding
/// such as `cs nopw`) written as objdump writes it: a prefix before the
/// mnemonic, not part of the operand.
fn ignored_segment(ins: &Instruction, text: &mut String) {
    let seg = match ins.segment_prefix() {
        Register::ES => "es",
        Register::CS => "cs",
        Register::SS => "ss",
        Register::DS => "ds",
        _ => return,
    };
    if text.starts_with("notrack") {
        return;
    }
    let (mnemonic, operands) = text.split_once(' ').unwrap_or((text.as_str(), ""));
    let mut out = format!("{seg} {mnemonic}");
    pad_mnemonic(&mut out);
    out.push_str(operands.trim_start());
    *text = out.trim_end().to_string();
}

/// objdump's layout: the mnemonic (with its prefixes) padded to six
/// columns, then a space.
fn pad_mnemonic(text: &mut String) {
    while text.chars().count() < 6 {
        text.push(' ');
    }
    text.push(' ');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `hot` of a `gcc -O1` loop (hot.c of the annotate test), its bytes as
    /// `objdump -d` printed them.
    const HOT: [u8; 65] = [
        0x48, 0x85, 0xff, // test %rdi,%rdi
        0x7e, 0x35, // jle 1173
        0xb8, 0x00, 0x00, 0x00, 0x00, // mov $0x0,%eax
        0xb9, 0x00, 0x00, 0x00, 0x00, // mov $0x0,%ecx
        0x48, 0x89, 0xc2, // mov %rax,%rdx
        0x81, 0xe2, 0xff, 0x03, 0x00, 0x00, // and $0x3ff,%edx
        0x48, 0x8b, 0x14, 0xd6, // mov (%rsi,%rdx,8),%rdx
        0x48, 0x8d, 0x14, 0x52, // lea (%rdx,%rdx,2),%rdx
        0x49, 0x89, 0xc8, // mov %rcx,%r8
        0x49, 0xc1, 0xf8, 0x03, // sar $0x3,%r8
        0x4c, 0x01, 0xc2, // add %r8,%rdx
        0x48, 0x01, 0xd1, // add %rdx,%rcx
        0x48, 0x83, 0xc0, 0x01, // add $0x1,%rax
        0x48, 0x39, 0xc7, // cmp %rax,%rdi
        0x75, 0xd9, // jne 1148
        0x48, 0x89, 0xc8, // mov %rcx,%rax
        0xc3, // ret
        0xb9, 0x00, 0x00, 0x00, 0x00, // mov $0x0,%ecx
        0xeb, 0xf5, // jmp 116f
    ];

    #[test]
    fn objdump_layout_att() {
        let mut label = |a: u64| Some(format!("hot+{:#x}", a - 0x1139));
        let d = disassemble(&HOT, 0x1139, Syntax::Att, &mut label);
        let text: Vec<(u64, &str)> = d.iter().map(|i| (i.addr, i.text.as_str())).collect();
        // objdump -d's lines for these bytes (binutils 2.40).
        assert_eq!(
            text,
            [
                (0x1139, "test   %rdi,%rdi"),
                (0x113c, "jle    1173 <hot+0x3a>"),
                (0x113e, "mov    $0x0,%eax"),
                (0x1143, "mov    $0x0,%ecx"),
                (0x1148, "mov    %rax,%rdx"),
                (0x114b, "and    $0x3ff,%edx"),
                (0x1151, "mov    (%rsi,%rdx,8),%rdx"),
                (0x1155, "lea    (%rdx,%rdx,2),%rdx"),
                (0x1159, "mov    %rcx,%r8"),
                (0x115c, "sar    $0x3,%r8"),
                (0x1160, "add    %r8,%rdx"),
                (0x1163, "add    %rdx,%rcx"),
                (0x1166, "add    $0x1,%rax"),
                (0x116a, "cmp    %rax,%rdi"),
                (0x116d, "jne    1148 <hot+0xf>"),
                (0x116f, "mov    %rcx,%rax"),
                (0x1172, "ret"),
                (0x1173, "mov    $0x0,%ecx"),
                (0x1178, "jmp    116f <hot+0x36>"),
            ]
        );
        assert_eq!(d[1].target, Some(0x1173));
        assert_eq!(d[1].bytes, [0x7e, 0x35]);
        assert_eq!(d[0].target, None);
    }

    #[test]
    fn padding_prefixes_and_absolute_addresses() {
        let code = [
            0x2e, 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, // cs nopw
            0x0f, 0x1f, 0x40, 0x00, 0x0f, 0x1f, 0x00, 0x66, 0x0f, 0x1f, 0x44, 0x00,
            0x00, // nops
            0x48, 0x8b, 0x04, 0x25, 0x10, 0x00, 0x00, 0x00, // mov 0x10,%rax
            0x64, 0x89, 0x02, 0xf3, 0xc3, 0x66, 0x90, // %fs, repz ret, xchg
            0x3e, 0xff, 0xe0, 0x3e, 0x48, 0x8b, 0x00, // notrack jmp, ds mov
        ];
        let d = disassemble(&code, 0, Syntax::Att, &mut |_| None);
        let text: Vec<&str> = d.iter().map(|i| i.text.as_str()).collect();
        // objdump -D -b binary -m i386:x86-64 on these bytes (binutils 2.40).
        assert_eq!(
            text,
            [
                "cs nopw 0x0(%rax,%rax,1)",
                "nopl   0x0(%rax)",
                "nopl   (%rax)",
                "nopw   0x0(%rax,%rax,1)",
                "mov    0x10,%rax",
                "mov    %eax,%fs:(%rdx)",
                "repz ret",
                "xchg   %ax,%ax",
                "notrack jmp *%rax",
                "ds mov (%rax),%rax",
            ]
        );
    }

    #[test]
    fn intel_rip_relative_and_bad_bytes() {
        // lea 0xe9c(%rip),%rdi at 0x1160; call *0x3d6dbe(%rip); movq
        // $0x0,0x10(%rsp); then 0x06 (invalid in 64-bit mode).
        let code = [
            0x48, 0x8d, 0x3d, 0x9c, 0x0e, 0x00, 0x00, 0xff, 0x15, 0xbe, 0x6d, 0x3d, 0x00, 0x48,
            0xc7, 0x44, 0x24, 0x10, 0x00, 0x00, 0x00, 0x00, 0x06,
        ];
        let mut label = |a: u64| (a == 0x2003).then(|| "msg".to_string());
        let d = disassemble(&code, 0x1160, Syntax::Att, &mut label);
        assert_eq!(d[0].text, "lea    0xe9c(%rip),%rdi        # 2003 <msg>");
        // objdump -d's text for these bytes (binutils 2.40), without the
        // data symbols it also names.
        assert_eq!(d[1].text, "call   *0x3d6dbe(%rip)        # 3d7f2b");
        assert_eq!(d[2].text, "movq   $0x0,0x10(%rsp)");
        assert_eq!(d[3].text, "(bad)");
        let d = disassemble(&code, 0x1160, Syntax::Intel, &mut label);
        assert_eq!(d[0].text, "lea    rdi,[rip+0xe9c]        # 2003 <msg>");
        assert_eq!(d[1].text, "call   QWORD PTR [rip+0x3d6dbe]        # 3d7f2b");
        assert_eq!(d[2].text, "mov    QWORD PTR [rsp+0x10],0x0");
    }
}
