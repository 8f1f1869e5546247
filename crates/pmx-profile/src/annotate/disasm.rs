//! x86-64 machine code → instructions as objdump writes them (iced-x86):
//! the mnemonic padded to six columns and a space, AT&T or Intel
//! operands, direct jump and call targets as `ADDR <symbol+0xOFF>`, and
//! RIP-relative operands followed by `# ADDR <symbol>` — the layout of
//! `objdump -d`, which `perf annotate` shows.

use super::types::Syntax;
use iced_x86::{
    Code, Decoder, DecoderOptions, Formatter, GasFormatter, Instruction, IntelFormatter, OpKind,
    Register,
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
    o.set_memory_size_options(iced_x86::MemorySizeOptions::Always);
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
            match syntax {
                Syntax::Att => att_operands(&ins, &mut text),
                Syntax::Intel => intel_operands(&ins, &mut text),
            }
            ignored_segment(&ins, &mut text);
            for _ in 1..extra_data16(&ins, &bytes) + 1 {
                text.insert_str(0, "data16 ");
            }
            if ins.is_ip_rel_memory_operand() {
                let a = ins.ip_rel_memory_address();
                text.push_str(&format!("        # {a:x}"));
                if let Some(l) = label(a) {
                    text.push_str(&format!(" <{l}>"));
                }
            }
        }
        let mut d = Decoded {
            addr: ins.ip(),
            bytes,
            text: text.trim_end().to_string(),
            target,
        };
        if out.last().is_some_and(|p| waits_for(p, &ins)) {
            if let Some(wait) = out.pop() {
                d = merge_wait(wait, d);
            }
        }
        out.push(d);
    }
    out
}

/// Whether `prev` is an `fwait` that objdump writes together with `ins`
/// (`fwait; fnstcw` is `fstcw`).
fn waits_for(prev: &Decoded, ins: &Instruction) -> bool {
    use iced_x86::Mnemonic as M;
    prev.text == "fwait"
        && matches!(
            ins.mnemonic(),
            M::Fnstcw | M::Fnstsw | M::Fnclex | M::Fninit | M::Fnsave | M::Fnstenv
        )
}

/// `fwait` and the no-wait instruction after it as one: `fstcw`, …
fn merge_wait(wait: Decoded, d: Decoded) -> Decoded {
    let (mnemonic, operands) = d.text.split_once(' ').unwrap_or((&d.text, ""));
    let mut text = mnemonic.replacen("fn", "f", 1);
    if !operands.trim().is_empty() {
        pad_mnemonic(&mut text);
        text.push_str(operands.trim_start());
    }
    Decoded {
        addr: wait.addr,
        bytes: [wait.bytes, d.bytes].concat(),
        text,
        target: None,
    }
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
    const RENAMES: [(&str, &str); 7] = [
        ("callq  *", "call   *"),
        ("jmpq   *", "jmp    *"),
        ("pushq  ", "push   "),
        ("popq   ", "pop    "),
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

/// The operands objdump writes in AT&T syntax where iced leaves them
/// out or adds one: shifts and rotates by 1 without `$0x1`, three-operand
/// `imul` with its source repeated, string operands with their segments
/// (`%ds:(%rsi)`, `%es:(%rdi)`), x87's implicit `%st(1)`.
fn att_operands(ins: &Instruction, text: &mut String) {
    use iced_x86::Mnemonic as M;
    let m = ins.mnemonic();
    let by_one = matches!(
        m,
        M::Shl | M::Shr | M::Sar | M::Sal | M::Rol | M::Ror | M::Rcl | M::Rcr
    ) && by_one(ins.code());
    if by_one {
        *text = text.replacen("$0x1,", "", 1);
    } else if m == M::Imul && ins.op_count() == 3 && text.matches(',').count() == 1 {
        let last = text.rsplit(',').next().unwrap_or("").to_string();
        text.push(',');
        text.push_str(&last);
    } else if ins.is_string_instruction() {
        if let Some((mnemonic, operands)) = text.rsplit_once(' ') {
            let ops: Vec<&str> = operands
                .trim_start()
                .split(',')
                .map(|o| match o {
                    "(%rsi)" => "%ds:(%rsi)",
                    "(%rdi)" => "%es:(%rdi)",
                    o => o,
                })
                .collect();
            let mut out = mnemonic.trim_end().to_string();
            pad_mnemonic(&mut out);
            out.push_str(&ops.join(","));
            *text = out;
        }
    } else if !text.contains(' ') {
        match m {
            M::Fxch => text.push_str("   %st(1)"),
            M::Faddp | M::Fsubp | M::Fsubrp | M::Fmulp | M::Fdivp | M::Fdivrp => {
                pad_mnemonic(text);
                text.push_str("%st,%st(1)");
            }
            _ => {}
        }
    }
}

/// The operands objdump writes in Intel syntax where iced's differ:
/// shifts by `1`, three-operand `imul` in full, a bare displacement as
/// `SEG:0xN`, a negative RIP displacement as its 64-bit two's complement,
/// string operands with their segments, x87's implicit `st` left out and
/// `st(1)` written.
fn intel_operands(ins: &Instruction, text: &mut String) {
    use iced_x86::Mnemonic as M;
    const PREFIXES: [&str; 8] = [
        "lock ",
        "rep ",
        "repz ",
        "repnz ",
        "bnd ",
        "notrack ",
        "xacquire ",
        "xrelease ",
    ];
    let m = ins.mnemonic();
    let skip = PREFIXES
        .iter()
        .find(|p| text.starts_with(*p))
        .map_or(0, |p| p.len());
    let Some((name, operands)) = text[skip..].split_once(' ') else {
        match m {
            M::Fxch => text.push_str("   st(1)"),
            M::Faddp | M::Fsubp | M::Fsubrp | M::Fmulp | M::Fdivp | M::Fdivrp => {
                pad_mnemonic(text);
                text.push_str("st(1),st");
            }
            _ => {}
        }
        return;
    };
    let code = ins.code();
    let mut mnemonic = format!("{}{name}", &text[..skip]);
    if code == Code::Mov_r64_imm64 || moffs(code) {
        mnemonic = mnemonic.replacen("mov", "movabs", 1);
    }
    let mut ops: Vec<String> = operands
        .trim_start()
        .split(',')
        .map(str::to_string)
        .collect();
    let memory = (0..ins.op_count()).any(|i| ins.op_kind(i) == OpKind::Memory);
    if by_one(code) && ops.last().is_some_and(|o| o == "0x1") {
        *ops.last_mut().expect("an operand") = "1".into();
    } else if m == M::Imul && ins.op_count() == 3 && ops.len() == 2 {
        ops.insert(0, ops[0].clone());
    } else if ops.len() == 2
        && ops.iter().any(|o| o == "st")
        && (memory || matches!(m, M::Fxch | M::Fld | M::Fst | M::Fstp))
    {
        // x87: objdump leaves out the implicit `st` of memory forms, fld,
        // fst(p) and fxch.
        ops.retain(|o| o != "st");
    } else if ops.len() == 1 && ops[0].starts_with("st(") && is_x87_arith(m) {
        ops.insert(0, "st".into());
    }
    for o in &mut ops {
        absolute_operand(o);
    }
    pad_mnemonic(&mut mnemonic);
    mnemonic.push_str(&ops.join(","));
    *text = mnemonic;
}

/// A shift or rotate by an implicit 1 (opcodes D0/D1, iced's `Rol_rm8_1`
/// … `Sar_rm64_1`, contiguous in `Code`). Compared by value, never by
/// `Code`'s name: formatting a `Code` with `{:?}` keeps iced's table of
/// 4,936 names in the binary, 79 KiB of pointers the loader relocates at
/// every start of pmx.
fn by_one(code: Code) -> bool {
    (Code::Rol_rm8_1 as u16..=Code::Sar_rm64_1 as u16).contains(&(code as u16))
}

/// `mov` between the accumulator and an absolute address (A0–A3, iced's
/// `Mov_AL_moffs8` … `Mov_moffs64_RAX`, contiguous): objdump's `movabs`.
fn moffs(code: Code) -> bool {
    (Code::Mov_AL_moffs8 as u16..=Code::Mov_moffs64_RAX as u16).contains(&(code as u16))
}

/// x87 arithmetic whose `st(i)` form objdump writes as `st,st(i)`.
fn is_x87_arith(m: iced_x86::Mnemonic) -> bool {
    use iced_x86::Mnemonic as M;
    matches!(
        m,
        M::Fadd | M::Fsub | M::Fsubr | M::Fmul | M::Fdiv | M::Fdivr
    )
}

/// objdump's Intel memory operands: a bare displacement as `SEG:0xN`
/// (`ds:` by default), a negative RIP displacement as its 64-bit two's
/// complement.
fn absolute_operand(o: &mut String) {
    let Some(at) = o.find('[') else { return };
    let Some(close) = o[at..].find(']').map(|c| at + c) else {
        return;
    };
    let inner = &o[at + 1..close];
    let rest = &o[close + 1..];
    if let Some(neg) = inner.strip_prefix("rip-0x") {
        if let Ok(v) = u64::from_str_radix(neg, 16) {
            *o = format!("{}[rip+{:#x}]{rest}", &o[..at], v.wrapping_neg());
        }
    } else if inner.starts_with("0x") {
        let seg = if o[..at].ends_with(':') { "" } else { "ds:" };
        *o = format!("{}{seg}{inner}{rest}", &o[..at]);
    }
}

/// How many `0x66` prefixes of a `nop` objdump writes as `data16` (all
/// but the one that sets its operand size).
fn extra_data16(ins: &Instruction, bytes: &[u8]) -> usize {
    if ins.mnemonic() != iced_x86::Mnemonic::Nop {
        return 0;
    }
    let prefixes = bytes
        .iter()
        .take_while(|b| {
            matches!(
                b,
                0x66 | 0x2e | 0x3e | 0x26 | 0x36 | 0x64 | 0x65 | 0xf2 | 0xf3
            )
        })
        .filter(|&&b| b == 0x66)
        .count();
    prefixes.saturating_sub(1)
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
    fn intel_as_objdump_writes_it() {
        // Instructions of Debian's libc 2.36 (.text) and the text
        // `objdump -d -M intel` printed for them (binutils 2.40).
        let cases: [(u64, &[u8], &str); 9] = [
            (
                0x263af,
                &[0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0],
                "mov    rax,QWORD PTR fs:0x28",
            ),
            (
                0x28027,
                &[0x48, 0x8d, 0x05, 0x92, 0xfe, 0xff, 0xff],
                "lea    rax,[rip+0xfffffffffffffe92]        # 27ec0",
            ),
            (0x30c3c, &[0xd1, 0xe8], "shr    eax,1"),
            (
                0x31e5d,
                &[0x49, 0xbb, 0xf8, 0xbf, 0xff, 0xff, 0xff, 0xff, 0xf7, 0xff],
                "movabs r11,0xfff7ffffffffbff8",
            ),
            (
                0x3ad50,
                &[0xdb, 0x6c, 0x24, 0x18],
                "fld    TBYTE PTR [rsp+0x18]",
            ),
            (0x3ae3e, &[0xde, 0xe1], "fsubrp st(1),st"),
            (0x3af72, &[0xd8, 0xc0], "fadd   st,st(0)"),
            (0x3afaa, &[0xd9, 0xc9], "fxch   st(1)"),
            (
                0x407c2,
                &[0x69, 0xc0, 0x6d, 0x4e, 0xc6, 0x41],
                "imul   eax,eax,0x41c64e6d",
            ),
        ];
        for (ip, code, want) in cases {
            let d = disassemble(code, ip, Syntax::Intel, &mut |_| None);
            assert_eq!((d.len(), d[0].text.as_str()), (1, want), "{ip:#x}");
        }
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

    /// The ranges of `by_one` and `moffs` are exactly the codes whose
    /// names say so, in the iced-x86 of Cargo.lock.
    #[test]
    fn code_ranges_match_the_names() {
        for c in Code::values() {
            let name = format!("{c:?}");
            assert_eq!(by_one(c), name.ends_with("_1"), "{name}");
            assert_eq!(moffs(c), name.contains("moffs"), "{name}");
        }
    }
}
