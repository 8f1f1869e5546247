//! The default event and the kernel's sampling limit: what `pmx record`
//! samples when no `-e` is given.

use super::options::RecordEvent;
use pmx_perf::{sample_type, Attr, Counter, OpenCause, OpenError, SampleRate};

/// perf's default sampling rate (`-F 4000`).
pub const DEFAULT_FREQUENCY: u64 = 4000;

/// `kernel.perf_event_max_sample_rate`: the highest `-F` the kernel
/// accepts, and the rate beyond which it throttles.
pub fn max_sample_rate() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The default event: hardware `cycles` at the most precise level this
/// machine opens (perf's `cycles:P`), or `cpu-clock` when the PMU does not
/// count cycles; user space only (`:u`) when `kernel.perf_event_paranoid`
/// forbids sampling the kernel and nothing lifts it. The notes say what
/// was chosen instead of plain cycles, and why.
pub fn default_event(rate: SampleRate) -> (RecordEvent, Vec<String>) {
    let cycles = Attr {
        type_: pmx_perf::event_type::HARDWARE,
        config: 0,
        ..Attr::default()
    };
    let mut reason = None;
    for precise in (0..=3u8).rev() {
        let a = Attr {
            precise_ip: precise,
            ..cycles.clone()
        };
        match probe(&a, rate) {
            Ok(()) => return (event("cycles", a), Vec::new()),
            // Not allowed with the kernel: user space only, or the reason
            // that one gives (the permission check comes before the PMU's).
            Err(e) if refused(&e) => match probe(&user_only(&a), rate) {
                Ok(()) => return (event("cycles", user_only(&a)), vec![paranoid_note()]),
                Err(e) => reason = Some(why(e)),
            },
            // The least precise form's reason is the one that matters.
            Err(e) => reason = Some(why(e)),
        }
    }
    let why = reason.unwrap_or_else(|| "it cannot be opened".to_string());
    let mut notes = vec![format!(
        "cycles is not supported here ({}); sampling cpu-clock instead",
        why.trim_end_matches('.')
    )];
    let mut clock = Attr {
        type_: pmx_perf::event_type::SOFTWARE,
        config: pmx_perf::software::CPU_CLOCK,
        ..Attr::default()
    };
    if let Err(e) = probe(&clock, rate) {
        if refused(&e) && probe(&user_only(&clock), rate).is_ok() {
            clock = user_only(&clock);
            notes.push(paranoid_note());
        }
        // Otherwise opening it for real reports the reason.
    }
    (event("cpu-clock", clock), notes)
}

/// Whether `a` opens sampling at `rate` on this thread (opened disabled,
/// closed at once).
fn probe(a: &Attr, rate: SampleRate) -> Result<(), OpenError> {
    let probe = Attr {
        sample: Some(rate),
        sample_type: sample_type::IP,
        disabled: true,
        ..a.clone()
    };
    Counter::open(&probe, pmx_perf::Target { pid: 0, cpu: -1 }, None).map(drop)
}

/// The open failed for lack of permission (`kernel.perf_event_paranoid`).
fn refused(e: &OpenError) -> bool {
    matches!(e.cause, OpenCause::Permission { .. })
}

/// The reason an open failed, as the user reads it.
fn why(e: OpenError) -> String {
    e.to_string()
}

/// `a` for user space only.
fn user_only(a: &Attr) -> Attr {
    Attr {
        exclude_kernel: true,
        exclude_hv: true,
        ..a.clone()
    }
}

/// The event named `base` with the modifiers `a` has (`cycles:upp`).
fn event(base: &str, attr: Attr) -> RecordEvent {
    let mods = format!(
        "{}{}",
        if attr.exclude_kernel { "u" } else { "" },
        "p".repeat(usize::from(attr.precise_ip))
    );
    let name = if mods.is_empty() {
        base.to_string()
    } else {
        format!("{base}:{mods}")
    };
    RecordEvent {
        name,
        attr,
        inherit: None,
        call_graph: None,
        group: None,
    }
}

/// Why sampling is user space only.
fn paranoid_note() -> String {
    format!(
        "kernel.perf_event_paranoid is {}: sampling user space only (level 1 or \
         CAP_PERFMON would let pmx sample the kernel too)",
        pmx_perf::perf_event_paranoid().map_or("set".to_string(), |l| l.to_string())
    )
}
