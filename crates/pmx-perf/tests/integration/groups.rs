//! Groups on the real kernel: a disabled leader, members joined, one
//! ioctl to start and stop them all, one read for every member.

use crate::common::{open, sw, THREAD};
use pmx_perf::{read_format, software, Attr, Counter, OpenCause};
use pmx_testkit::workload::fresh_pages;

fn group_format() -> u64 {
    read_format::GROUP
        | read_format::ID
        | read_format::TOTAL_TIME_ENABLED
        | read_format::TOTAL_TIME_RUNNING
}

fn leader(config: u64) -> Counter {
    open(
        &Attr {
            read_format: group_format(),
            ..sw(config)
        },
        THREAD,
        None,
    )
}

/// A member as perf opens it: enabled, so it starts and stops with its
/// leader. (A member created disabled and enabled later may not be put on
/// the PMU until the task next switches in: see the crate docs.)
fn member(config: u64) -> Attr {
    Attr {
        disabled: false,
        ..sw(config)
    }
}

#[test]
fn one_ioctl_drives_the_group_and_one_read_returns_it() {
    let lead = leader(software::TASK_CLOCK);
    let faults = open(&member(software::PAGE_FAULTS), THREAD, Some(&lead));
    let minor = open(&member(software::PAGE_FAULTS_MIN), THREAD, Some(&lead));
    let switches = open(&member(software::CONTEXT_SWITCHES), THREAD, Some(&lead));

    // Enabled members of a disabled leader do not count.
    fresh_pages(4).touch();
    let idle = lead.read_group().unwrap();
    assert_eq!(idle.len(), 4);
    assert!(
        idle.iter().all(|(_, c)| c.value == 0 && c.enabled == 0),
        "{idle:?}"
    );

    let pages = fresh_pages(32);
    lead.enable(true).unwrap();
    pages.touch();
    std::thread::sleep(std::time::Duration::from_millis(1));
    lead.disable(true).unwrap();

    let counts = lead.read_group().unwrap();
    eprintln!("{counts:?}");
    let ids: Vec<u64> = counts.iter().map(|(id, _)| *id).collect();
    assert_eq!(
        ids,
        [lead.id(), faults.id(), minor.id(), switches.id()],
        "leader first, then in order"
    );
    let (_, first) = counts[0];
    assert!(
        first.enabled > 0 && first.running == first.enabled,
        "{first:?}"
    );
    for (id, c) in &counts {
        // One pair of times for the whole group.
        assert_eq!(
            (c.enabled, c.running),
            (first.enabled, first.running),
            "member {id}"
        );
    }
    assert!(counts[0].1.value > 0, "task-clock");
    assert!(counts[1].1.value >= 32, "page-faults");
    assert_eq!(
        counts[2].1.value, counts[1].1.value,
        "minor-faults: the same faults"
    );
    assert!(counts[3].1.value >= 1, "context-switches (the sleep)");

    // A member opened without GROUP reads on its own, same value.
    assert_eq!(faults.read().unwrap().value, counts[1].1.value);
    // The leader's read() picks its own entry out of the group read.
    assert_eq!(lead.read().unwrap(), counts[0].1);
    // Disabled: frozen.
    fresh_pages(8).touch();
    assert_eq!(lead.read_group().unwrap(), counts);
    // The allocation-free read gives the same, into a buffer too small at
    // first (it grows) and then reused as it is.
    for start in [1, 0] {
        let mut buf = vec![0u64; start];
        let mut got = Vec::new();
        for _ in 0..2 {
            got.clear();
            lead.read_group_with(&mut buf, |id, c| got.push((id, c)))
                .unwrap();
            assert_eq!(got, counts);
        }
    }
    // Without GROUP | ID it refuses, as read_group does.
    assert!(faults.read_group_with(&mut Vec::new(), |_, _| {}).is_err());

    lead.reset(true).unwrap();
    assert!(lead.read_group().unwrap().iter().all(|(_, c)| c.value == 0));
}

#[test]
fn enabled_members_start_with_any_software_leader() {
    for config in [
        software::CPU_CLOCK,
        software::TASK_CLOCK,
        software::PAGE_FAULTS,
        software::CONTEXT_SWITCHES,
        software::DUMMY,
    ] {
        let lead = leader(config);
        let faults = open(&member(software::PAGE_FAULTS_MIN), THREAD, Some(&lead));
        let pages = fresh_pages(16);
        lead.enable(true).unwrap();
        pages.touch();
        lead.disable(true).unwrap();
        let counts = lead.read_group().unwrap();
        assert_eq!(counts[1].0, faults.id());
        assert!(
            counts[1].1.value >= 16,
            "leader config {config}: {counts:?}"
        );
    }
}

#[test]
fn enabling_only_the_leader_leaves_disabled_members_off() {
    let lead = leader(software::PAGE_FAULTS);
    let off = open(&sw(software::PAGE_FAULTS), THREAD, Some(&lead));
    let pages = fresh_pages(16);
    lead.enable(false).unwrap();
    pages.touch();
    lead.disable(false).unwrap();
    let counts = lead.read_group().unwrap();
    assert!(counts[0].1.value >= 16, "{counts:?}");
    assert_eq!(counts[1].0, off.id());
    assert_eq!(counts[1].1.value, 0, "{counts:?}");
    // The group read reports the leader's times for every member, even
    // one that was off; its own read tells the truth.
    assert_eq!(counts[1].1.enabled, counts[0].1.enabled);
    assert_eq!(off.read().unwrap().enabled, 0);
}

#[test]
fn a_large_group_is_read_in_one_go() {
    // More members than the first read buffer holds: the read must grow.
    const MEMBERS: usize = 40;
    let lead = leader(software::PAGE_FAULTS);
    let members: Vec<Counter> = (0..MEMBERS)
        .map(|_| open(&member(software::PAGE_FAULTS), THREAD, Some(&lead)))
        .collect();
    let pages = fresh_pages(8);
    lead.enable(true).unwrap();
    pages.touch();
    lead.disable(true).unwrap();
    let counts = lead.read_group().unwrap();
    assert_eq!(counts.len(), MEMBERS + 1);
    let want: Vec<u64> = std::iter::once(lead.id())
        .chain(members.iter().map(Counter::id))
        .collect();
    let got: Vec<u64> = counts.iter().map(|(id, _)| *id).collect();
    assert_eq!(got, want);
    // Every member counted the same faults.
    assert!(counts
        .iter()
        .all(|(_, c)| c.value == counts[0].1.value && c.value >= 8));
}

#[test]
fn a_hardware_member_fails_alone_and_the_group_goes_on() {
    let lead = leader(software::PAGE_FAULTS);
    let cycles = Counter::open(&Attr::default(), THREAD, Some(&lead));
    match cycles {
        Ok(c) => eprintln!("this machine counts cycles (id {})", c.id()),
        Err(e) => {
            eprintln!("{e}");
            assert!(matches!(e.cause, OpenCause::NotSupported { .. }), "{e}");
            assert_eq!(lead.read_group().unwrap().len(), 1);
        }
    }
}

#[test]
fn group_reads_need_the_group_format() {
    let lone = open(&sw(software::DUMMY), THREAD, None);
    let e = lone.read_group().unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("use read"), "{e}");

    // GROUP without ID: the members cannot be named.
    let anonymous = open(
        &Attr {
            read_format: read_format::GROUP,
            ..sw(software::DUMMY)
        },
        THREAD,
        None,
    );
    assert!(anonymous.read_group().is_err());
    // ...but a group of one still reads its own value.
    assert_eq!(anonymous.read().unwrap().value, 0);
    let _member = open(&member(software::DUMMY), THREAD, Some(&anonymous));
    assert_eq!(
        anonymous.read().unwrap_err().kind(),
        std::io::ErrorKind::InvalidInput
    );
}

#[test]
fn only_a_leader_may_be_pinned() {
    let lead = open(
        &Attr {
            pinned: true,
            read_format: group_format(),
            ..sw(software::TASK_CLOCK)
        },
        THREAD,
        None,
    );
    let e = Counter::open(
        &Attr {
            pinned: true,
            ..sw(software::PAGE_FAULTS)
        },
        THREAD,
        Some(&lead),
    )
    .unwrap_err();
    eprintln!("{e}");
    assert!(matches!(e.cause, OpenCause::Invalid { .. }), "{e}");
    assert!(
        e.to_string().contains("only a group leader may be pinned"),
        "{e}"
    );
    // A member on another CPU than its leader is refused too.
    let e = Counter::open(
        &sw(software::PAGE_FAULTS),
        pmx_perf::Target { pid: 0, cpu: 0 },
        Some(&lead),
    )
    .unwrap_err();
    assert!(matches!(e.cause, OpenCause::Invalid { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("group leader counts another task or CPU"),
        "{e}"
    );
}
