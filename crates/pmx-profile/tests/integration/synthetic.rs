//! A profile of a synthetic perf.data (written with pmx-perfdata's writer,
//! read back from memory): samples in two functions of this very test
//! binary mapped by an MMAP2, one written before its MMAP and COMM (time
//! order must fix it), kernel samples resolved through given kallsyms,
//! call stacks, sort keys.

use pmx_perfdata::format::{callchain, misc, record_type};
use pmx_perfdata::{Features, Reader};
use pmx_profile::{build, KernelSymbols, Options, SortKey};
use pmx_symbols::demangle::demangle;
use pmx_symbols::elf::ElfFile;
use pmx_symbols::kernel::Kallsyms;
use pmx_testkit::perfdata::{self, record as rec, sample_id, SAMPLE_ID_ALL};
use std::io::Cursor;

#[inline(never)]
pub fn marker_function(x: u64) -> u64 {
    x.wrapping_mul(31).rotate_left(7)
}

#[inline(never)]
pub fn caller_function(x: u64) -> u64 {
    marker_function(x) ^ 5
}

const ST: u64 = perfdata::CALLCHAIN_SAMPLES;
const PID: u32 = 77;
const BASE: u64 = 0x5555_0000_0000;

fn trailer(time: u64, cpu: u32) -> Vec<u8> {
    sample_id(PID, time, cpu)
}

fn sample(misc: u16, ip: u64, time: u64, cpu: u32, period: u64, chain: &[u64]) -> Vec<u8> {
    let mut b = ip.to_le_bytes().to_vec();
    b.extend_from_slice(&trailer(time, cpu));
    b.extend_from_slice(&period.to_le_bytes());
    b.extend_from_slice(&(chain.len() as u64).to_le_bytes());
    for c in chain {
        b.extend_from_slice(&c.to_le_bytes());
    }
    rec(record_type::SAMPLE, misc, &b)
}

fn file() -> Vec<u8> {
    file_with(&Features::default())
}

fn file_with(features: &Features) -> Vec<u8> {
    let exe = std::env::current_exe().unwrap();
    let elf = ElfFile::open(&exe).unwrap();
    let addr_of = |name: &str| {
        let s = elf
            .symbols()
            .iter()
            .find(|s| demangle(&s.name).ends_with(name))
            .expect(name);
        BASE + elf.vaddr_to_offset(s.start).unwrap()
    };
    let (marker, caller) = (addr_of("::marker_function"), addr_of("::caller_function"));
    let mut w = perfdata::memory_writer(perfdata::attr(128, 1000, ST, SAMPLE_ID_ALL));
    let user_chain = |leaf: u64| vec![callchain::CONTEXT_USER, leaf, caller + 5];
    // Written first, but later in time than the COMM and MMAP2 below (another CPU's buffer).
    w.write_record(&sample(
        misc::USER,
        marker + 2,
        300,
        1,
        1000,
        &user_chain(marker + 2),
    ))
    .unwrap();
    let mut comm = perfdata::comm(PID, "prog");
    comm.extend_from_slice(&trailer(100, 0));
    w.write_record(&rec(record_type::COMM, misc::COMM_EXEC, &comm))
        .unwrap();
    let len = std::fs::metadata(&exe)
        .unwrap()
        .len()
        .next_multiple_of(4096);
    let mut mm = perfdata::mmap2(PID, BASE, len, 5, exe.to_str().unwrap());
    mm.extend_from_slice(&trailer(200, 0));
    w.write_record(&rec(record_type::MMAP2, misc::USER, &mm))
        .unwrap();
    w.write_record(&rec(record_type::FINISHED_ROUND, 0, &[]))
        .unwrap();
    for t in 0..5 {
        w.write_record(&sample(
            misc::USER,
            marker + 4,
            400 + t,
            0,
            1000,
            &user_chain(marker + 4),
        ))
        .unwrap();
    }
    w.write_record(&sample(
        misc::USER,
        caller + 1,
        500,
        0,
        2000,
        &[callchain::CONTEXT_USER, caller + 1],
    ))
    .unwrap();
    let kchain = [
        callchain::CONTEXT_KERNEL,
        0xffff_ffff_8100_0010,
        callchain::CONTEXT_USER,
        marker + 4,
        caller + 5,
    ];
    w.write_record(&sample(
        misc::KERNEL,
        0xffff_ffff_8100_0010,
        600,
        1,
        1000,
        &kchain,
    ))
    .unwrap();
    w.write_record(&sample(
        misc::KERNEL,
        0xffff_ffff_8100_0020,
        601,
        1,
        1000,
        &kchain,
    ))
    .unwrap();
    w.write_record(&rec(record_type::FINISHED_ROUND, 0, &[]))
        .unwrap();
    w.finish(features).unwrap().into_inner()
}

fn options(sort: &[SortKey], stacks: bool) -> Options {
    Options {
        sort: sort.to_vec(),
        stacks,
        kallsyms: KernelSymbols::Given(Kallsyms::parse(
            "ffffffff81000000 T kfunc\nffffffff82000000 T other\n",
        )),
        ..Options::default()
    }
}

#[test]
fn hotspots_in_time_order_with_kernel_symbols() {
    let mut r = Reader::new(Cursor::new(file())).unwrap();
    let p = build(
        &mut r,
        &options(&[SortKey::Comm, SortKey::Dso, SortKey::Symbol], true),
        &mut |_, _| {},
    )
    .unwrap();
    let e = &p.events[0];
    assert_eq!(
        (e.name.as_str(), e.samples, e.period),
        ("cpu-clock", 9, 10_000)
    );
    let top = &e.rows[0];
    assert!(
        top.symbol.as_deref().unwrap().ends_with("marker_function"),
        "{:?}",
        e.rows
    );
    // All 6 marker samples, the one written before its MMAP and COMM included.
    assert_eq!(
        (top.samples, top.period, top.comm.as_deref()),
        (6, 6000, Some("prog"))
    );
    let exe = std::env::current_exe().unwrap();
    assert_eq!(top.dso.as_deref(), exe.file_name().unwrap().to_str());
    // The two kernel addresses are one kernel symbol.
    let k = e.rows.iter().find(|r| r.kernel).unwrap();
    assert_eq!(
        (k.symbol.as_deref(), k.samples, k.dso.as_deref()),
        (Some("kfunc"), 2, Some("[kernel.kallsyms]"))
    );
    assert!(p.kernel_symbols_used);
    // Stacks: root first, kernel frames after the user ones.
    let names = |s: &Vec<String>| {
        s.iter()
            .map(|n| n.rsplit("::").next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let stacks: Vec<(Vec<String>, u64)> = e.stacks.iter().map(|(s, n, _)| (names(s), *n)).collect();
    let want = vec![
        "prog".to_string(),
        "caller_function".into(),
        "marker_function".into(),
    ];
    assert!(stacks.contains(&(want.clone(), 6)), "{stacks:?}");
    let mut kwant = want.clone();
    kwant.push("kfunc".into());
    assert!(stacks.contains(&(kwant, 2)), "{stacks:?}");
}

#[test]
fn children_count_each_function_on_the_chain_once() {
    let mut r = Reader::new(Cursor::new(file())).unwrap();
    let mut o = options(&[SortKey::Symbol], false);
    o.children = true;
    let p = build(&mut r, &o, &mut |_, _| {}).unwrap();
    let row = |name: &str| {
        p.events[0]
            .rows
            .iter()
            .find(|r| r.symbol.as_deref().unwrap().ends_with(name))
            .unwrap()
            .clone()
    };
    let (caller, marker, k) = (row("caller_function"), row("marker_function"), row("kfunc"));
    // caller: its own sample, the 6 marker samples and the 2 kernel ones.
    assert_eq!(
        (
            caller.children_samples,
            caller.children_period,
            caller.samples
        ),
        (9, 10_000, 1)
    );
    assert_eq!((marker.children_samples, marker.samples), (8, 6));
    assert_eq!((k.children_samples, k.samples), (2, 2));
    // Sorted by children first.
    assert!(p.events[0].rows[0]
        .symbol
        .as_deref()
        .unwrap()
        .ends_with("caller_function"));
}

#[test]
fn sort_keys_change_the_rows() {
    let mut r = Reader::new(Cursor::new(file())).unwrap();
    let p = build(&mut r, &options(&[SortKey::Cpu], false), &mut |_, _| {}).unwrap();
    let rows = &p.events[0].rows;
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0].cpu, rows[0].samples, rows[0].period),
        (Some(0), 6, 7000)
    );
    assert!(rows[0].symbol.is_none() && rows[0].comm.is_none());
    let mut r = Reader::new(Cursor::new(file())).unwrap();
    let p = build(
        &mut r,
        &options(&[SortKey::Pid, SortKey::Dso], false),
        &mut |_, _| {},
    )
    .unwrap();
    let rows = &p.events[0].rows;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!((rows[0].pid, rows[0].samples), (Some(PID), 7));
    assert_eq!(rows[1].dso.as_deref(), Some("[kernel.kallsyms]"));
    assert!(p.events[0].stacks.is_empty());
}

#[test]
fn kernel_symbols_not_used_for_a_file_from_elsewhere() {
    let features = Features {
        hostname: Some("elsewhere".into()),
        osrelease: Some("1.2.3".into()),
        ..Default::default()
    };
    let mut o = options(&[SortKey::Symbol], false);
    o.this_machine.hostname = Some("here".into());
    o.this_machine.osrelease = Some("1.2.3".into());
    let mut r = Reader::new(Cursor::new(file_with(&features))).unwrap();
    let p = build(&mut r, &o, &mut |_, _| {}).unwrap();
    assert!(!p.kernel_symbols_used);
    let k: Vec<_> = p.events[0]
        .rows
        .iter()
        .filter(|r| r.kernel)
        .map(|r| r.symbol.clone().unwrap())
        .collect();
    assert_eq!(k.len(), 2, "each raw address its own row: {k:?}");
    assert!(k.iter().all(|s| s.starts_with("0xffffffff8100")), "{k:?}");
    // The same file recorded "here" resolves them.
    o.this_machine.hostname = Some("elsewhere".into());
    let mut r = Reader::new(Cursor::new(file_with(&features))).unwrap();
    assert!(
        build(&mut r, &o, &mut |_, _| {})
            .unwrap()
            .kernel_symbols_used
    );
    assert_eq!(marker_function(1) ^ 5, caller_function(1));
}
