//! Unwinding this test's own stack: registers and a stack copy taken
//! here, the maps of `/proc/self/maps`, and the frame pointer withheld so
//! that only the CFI can find the callers.

use super::*;
use crate::kernel::Kallsyms;
use std::arch::asm;

/// This thread's stack: (lowest, highest) address.
fn thread_stack() -> (u64, u64) {
    // SAFETY: pthread_getattr_np fills `attr` for the calling thread; the
    // attr is destroyed after reading the stack bounds from it.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        assert_eq!(libc::pthread_getattr_np(libc::pthread_self(), &mut attr), 0);
        let mut addr = std::ptr::null_mut();
        let mut size = 0usize;
        assert_eq!(libc::pthread_attr_getstack(&attr, &mut addr, &mut size), 0);
        libc::pthread_attr_destroy(&mut attr);
        (addr as u64, addr as u64 + size as u64)
    }
}

/// The registers here and up to 8 KiB of stack above them; `rbp` is given
/// as 0, so frame pointers cannot be followed.
#[inline(never)]
fn capture() -> UserStack {
    let (sp, ip): (u64, u64);
    // SAFETY: reads rsp and the address of the next instruction; no memory touched.
    unsafe {
        asm!("mov {0}, rsp", "lea {1}, [rip]", out(reg) sp, out(reg) ip);
    }
    let (_, top) = thread_stack();
    let n = (top - sp).min(8192) as usize;
    // SAFETY: [sp, sp + n) lies within this thread's stack (below its top),
    // above this frame's stack pointer: mapped and readable.
    let stack = unsafe { std::slice::from_raw_parts(sp as *const u8, n) };
    UserStack {
        ip,
        sp,
        bp: 0,
        stack: stack.into(),
    }
}

#[inline(never)]
fn level_c() -> UserStack {
    std::hint::black_box(capture())
}

#[inline(never)]
fn level_b() -> UserStack {
    std::hint::black_box(level_c())
}

#[inline(never)]
fn level_a() -> UserStack {
    std::hint::black_box(level_b())
}

fn symbolizer_of_this_process() -> (Symbolizer, u32) {
    let pid = std::process::id();
    let mut sym = Symbolizer::new(
        Kallsyms::default(),
        HashMap::default(),
        None,
        &crate::SymbolOptions::default(),
    );
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (s, e) = f[0].split_once('-').unwrap();
        let (s, e) = (
            u64::from_str_radix(s, 16).unwrap(),
            u64::from_str_radix(e, 16).unwrap(),
        );
        let pgoff = u64::from_str_radix(f[2], 16).unwrap();
        let path = f.get(5).copied().unwrap_or("//anon");
        sym.add_map(pid, s, e - s, pgoff, path.as_bytes());
    }
    (sym, pid)
}

#[test]
fn the_cfi_finds_the_callers_without_frame_pointers() {
    let u = level_a();
    let (mut sym, pid) = symbolizer_of_this_process();
    let mut un = Unwinder::new();
    let mut chain = Vec::new();
    un.unwind(&sym, pid, &u, &mut chain);
    let names: Vec<String> = chain
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            let a = if i == 0 { a } else { a - 1 };
            let f = sym.user_frame(pid, a);
            sym.frame(f).label()
        })
        .collect();
    let at = |n: &str| {
        names
            .iter()
            .position(|x| x.ends_with(n))
            .unwrap_or_else(|| panic!("{n} not in {names:#?}"))
    };
    let (c, b, a, t) = (
        at("unwind::tests::capture"),
        at("unwind::tests::level_c"),
        at("unwind::tests::level_b"),
        at("unwind::tests::level_a"),
    );
    assert_eq!((c, b, a, t), (0, 1, 2, 3), "{names:#?}");
    assert!(at("the_cfi_finds_the_callers_without_frame_pointers") == 4);
    assert_eq!(un.stats().samples, 1);
    assert_eq!(un.stats().frames, chain.len() as u64);
    // A second sample reuses the process's unwinder and gives the same chain.
    let mut again = Vec::new();
    un.unwind(&sym, pid, &u, &mut again);
    assert_eq!(again, chain);
    // A copy cut to 16 bytes stops early, with the leaf still there.
    let short = UserStack {
        stack: u.stack[..16].into(),
        ..u.clone()
    };
    let mut cut = Vec::new();
    un.unwind(&sym, pid, &short, &mut cut);
    assert!(!cut.is_empty() && cut.len() < chain.len(), "{cut:x?}");
    assert_eq!(cut[0], u.ip);
}

#[test]
fn reads_stay_inside_the_copy() {
    let u = UserStack {
        ip: 1,
        sp: 0x1000,
        bp: 0,
        stack: (0u8..24).collect::<Vec<_>>().into(),
    };
    assert_eq!(
        u.read(0x1000),
        Ok(u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]))
    );
    assert_eq!(
        u.read(0x1010),
        Ok(u64::from_le_bytes([16, 17, 18, 19, 20, 21, 22, 23]))
    );
    assert_eq!(u.read(0x1011), Err(()));
    assert_eq!(u.read(0xfff), Err(()));
    assert_eq!(u.read(u64::MAX), Err(()));
}
