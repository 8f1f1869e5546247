//! The first stage: events and options → what to open. Each event's
//! sampling attr (side-band on the first event only, ids when there are
//! several), the CPUs, and the tasks (`pid` values) each event is opened
//! on.

use super::callgraph::CallGraph;
use super::options::{RecordError, RecordEvent, RecordOptions};
use pmx_count::stat::Scope;
use pmx_perf::{read_format, sample_type, Attr};

/// What to open: one attr per event, on every CPU × task.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    /// The sampling attrs, in the events' order.
    pub(super) attrs: Vec<Attr>,
    /// The CPUs to open on.
    pub(super) cpus: Vec<u32>,
    /// The `pid` values to open on: the command, every thread of `-p`, the
    /// `-t` threads, or -1 for CPUs.
    pub(super) tasks: Vec<i32>,
    /// A task that is gone by the time it is opened is skipped (`-p`/`-t`).
    pub(super) tolerate_gone: bool,
    /// What the kernel did not take of the groups' attrs.
    pub(super) notes: Vec<String>,
}

/// Refuse options that cannot work, before anything is started.
pub(super) fn validate(events: &[RecordEvent], opts: &RecordOptions) -> Result<(), RecordError> {
    if events.is_empty() {
        return Err(RecordError::Invalid("no event to record".to_string()));
    }
    super::sampling::check_mmap_pages(opts.mmap_pages)?;
    if opts.scope == Scope::Command && opts.command.is_empty() {
        return Err(RecordError::Invalid("no command to record".to_string()));
    }
    // One sample layout for the whole file: one call-graph mode for all.
    let mode = |e: &RecordEvent| e.call_graph.unwrap_or(opts.call_graph);
    if let Some(odd) = events.iter().find(|e| mode(e) != mode(&events[0])) {
        return Err(RecordError::Invalid(format!(
            "{}: call chains are recorded the same way for every event (pmx record writes one \
             sample layout); give call-graph= the same way on every event, or use -g/--call-graph",
            odd.name
        )));
    }
    Ok(())
}

impl Plan {
    /// The plan for `events` as `opts` says; `child` is the launched
    /// command's pid, if any.
    pub(super) fn new(
        events: &[RecordEvent],
        opts: &RecordOptions,
        child: Option<i32>,
    ) -> Result<Plan, RecordError> {
        let n = events.len();
        let mut attrs: Vec<Attr> = events
            .iter()
            .enumerate()
            .map(|(i, e)| sampling_attr(e, i, n, opts))
            .collect();
        let notes = super::groups::shape(&mut attrs, events);
        let cpus = match &opts.scope {
            Scope::Cpus(c) => c.clone(),
            _ => pmx_count::stat::online_cpus(),
        };
        if cpus.is_empty() {
            return Err(RecordError::Invalid("no CPU to record on".to_string()));
        }
        Ok(Plan {
            attrs,
            cpus,
            tasks: tasks(&opts.scope, child),
            tolerate_gone: matches!(opts.scope, Scope::Pids(_) | Scope::Tids(_)),
            notes,
        })
    }

    /// Some event samples the kernel (so a missing kernel map matters).
    pub(super) fn samples_kernel(&self) -> bool {
        !self.attrs.iter().all(|a| a.exclude_kernel)
    }
}

/// The `pid` values events are opened on for `scope`.
fn tasks(scope: &Scope, child: Option<i32>) -> Vec<i32> {
    match scope {
        Scope::Command => vec![child.unwrap_or(0)],
        Scope::Pids(p) => p
            .iter()
            .flat_map(|&pid| {
                let t = pmx_count::stat::threads_of(pid);
                if t.is_empty() {
                    vec![pid]
                } else {
                    t
                }
            })
            .collect(),
        Scope::Tids(t) => t.clone(),
        Scope::Cpus(_) | Scope::AllThreads => vec![-1],
    }
}

/// The sampling attr of event `index` of `n`.
pub(super) fn sampling_attr(
    ev: &RecordEvent,
    index: usize,
    n: usize,
    opts: &RecordOptions,
) -> Attr {
    let mut st = sample_type::IP
        | sample_type::TID
        | sample_type::TIME
        | sample_type::CPU
        | sample_type::PERIOD;
    if n > 1 {
        st |= sample_type::IDENTIFIER;
    }
    // The memory fields an event asks for (`-d`, `--phys-data`, page
    // sizes, `-W`, a PEBS load-latency event's data source).
    st |= ev.attr.sample_type & MEMORY_FIELDS;
    let side_band = index == 0;
    let by_exec = opts.scope == Scope::Command;
    // perf's rule: a command and a `-p`/`-t` target are followed into the
    // threads and processes they create after the session opened (the
    // kernel clones an inherited event into every new task, its records
    // into the parent's ring); CPUs see every task anyway.
    let follows = by_exec || matches!(opts.scope, Scope::Pids(_) | Scope::Tids(_));
    let mut attr = Attr {
        sample: Some(
            ev.attr
                .sample
                .filter(|_| ev.attr.is_sampling())
                .unwrap_or(opts.rate),
        ),
        sample_type: st,
        read_format: read_format::ID,
        disabled: true,
        enable_on_exec: by_exec,
        inherit: follows && ev.inherit.unwrap_or(opts.inherit),
        sample_id_all: true,
        mmap: side_band,
        mmap2: side_band,
        comm: side_band,
        comm_exec: side_band,
        task: side_band,
        ..ev.attr.clone()
    };
    // `-b`/`-j`: the event's branch filter asks for its branch stack.
    if attr.branch_sample_type != 0 {
        attr.sample_type |= sample_type::BRANCH_STACK;
    }
    let call_graph = ev.call_graph.unwrap_or(opts.call_graph);
    call_graph.apply(&mut attr);
    // Unwinders read the unwind tables of a binary's read-only segment
    // from "memory": perf asks for the data mappings too with dwarf.
    // Data addresses are named by their mappings: perf's `-d` asks for
    // the data mappings too.
    let data = st & sample_type::ADDR != 0;
    attr.mmap_data = side_band && (data || matches!(call_graph, CallGraph::Dwarf { .. }));
    attr.context_switch = side_band && opts.file.switch_events;
    attr.namespaces = side_band && opts.file.namespaces;
    super::tracepoints::adjust(&mut attr, ev.attr.sample.filter(|_| ev.attr.is_sampling()));
    attr
}

/// The sample fields of memory accesses an event may ask for beyond the
/// session's: data address, data source, weights, physical address, page
/// sizes (`perf record -d`, `--phys-data`, `--data-page-size`,
/// `--code-page-size`, `-W`).
pub const MEMORY_FIELDS: u64 = sample_type::ADDR
    | sample_type::DATA_SRC
    | sample_type::WEIGHT
    | sample_type::WEIGHT_STRUCT
    | sample_type::PHYS_ADDR
    | sample_type::DATA_PAGE_SIZE
    | sample_type::CODE_PAGE_SIZE;

#[cfg(test)]
mod tests {
    use super::*;
    use pmx_perf::SampleRate;

    fn options(scope: Scope, command: &[&str]) -> RecordOptions {
        RecordOptions {
            scope,
            command: command.iter().map(|s| s.to_string()).collect(),
            inherit: true,
            rate: SampleRate::Frequency(1000),
            call_graph: CallGraph::None,
            mmap_pages: 4,
            duration: None,
            output: "x".into(),
            cmdline: vec![],
            spawn: Default::default(),
            file: Default::default(),
        }
    }

    fn clock() -> RecordEvent {
        RecordEvent {
            name: "cpu-clock".into(),
            attr: Attr {
                type_: 1,
                ..Attr::default()
            },
            inherit: None,
            call_graph: None,
            group: None,
        }
    }

    #[test]
    fn validate_refuses_what_cannot_work() {
        let ok = options(Scope::Command, &["true"]);
        assert!(validate(&[clock()], &ok).is_ok());
        let fp = RecordEvent {
            call_graph: Some(CallGraph::Fp { max_stack: None }),
            ..clock()
        };
        assert!(validate(&[fp.clone(), fp.clone()], &ok).is_ok());
        assert!(matches!(
            validate(&[fp, clock()], &ok),
            Err(RecordError::Invalid(_))
        ));
        assert!(matches!(validate(&[], &ok), Err(RecordError::Invalid(_))));
        let pages = RecordOptions {
            mmap_pages: 3,
            ..ok.clone()
        };
        let e = validate(&[clock()], &pages).unwrap_err().to_string();
        assert!(
            e.starts_with("-m 3: the ring size must be a power of two"),
            "{e}"
        );
        let none = options(Scope::Command, &[]);
        assert_eq!(
            validate(&[clock()], &none).unwrap_err().to_string(),
            "no command to record"
        );
    }

    #[test]
    fn plans_tasks_per_scope() {
        let cpus = Plan::new(&[clock()], &options(Scope::Cpus(vec![0]), &[]), None).unwrap();
        assert_eq!((cpus.cpus.clone(), cpus.tasks.clone()), (vec![0], vec![-1]));
        assert!(!cpus.tolerate_gone);
        let cmd = Plan::new(&[clock()], &options(Scope::Command, &["true"]), Some(42)).unwrap();
        assert_eq!(cmd.tasks, vec![42]);
        assert!(cmd.attrs[0].enable_on_exec);
        // A pid without threads in /proc is opened as itself.
        let gone = Plan::new(&[clock()], &options(Scope::Pids(vec![i32::MAX]), &[]), None).unwrap();
        assert_eq!(gone.tasks, vec![i32::MAX]);
        assert!(gone.tolerate_gone && gone.samples_kernel());
        // `-p`/`-t` follow new threads as perf does; CPUs see them anyway.
        assert!(gone.attrs[0].inherit && !cpus.attrs[0].inherit);
        assert!(matches!(
            Plan::new(&[clock()], &options(Scope::Cpus(vec![]), &[]), None),
            Err(RecordError::Invalid(_))
        ));
    }

    #[test]
    fn sampling_attrs_put_side_band_on_the_first_event_only() {
        let ev = RecordEvent {
            name: "cpu-clock".into(),
            attr: Attr {
                type_: 1,
                config: 0,
                ..Attr::default()
            },
            inherit: None,
            call_graph: None,
            group: None,
        };
        let opts = RecordOptions {
            scope: Scope::Command,
            command: vec!["true".into()],
            inherit: true,
            rate: SampleRate::Frequency(4000),
            call_graph: CallGraph::Fp { max_stack: None },
            mmap_pages: 8,
            duration: None,
            output: "x".into(),
            cmdline: vec![],
            spawn: Default::default(),
            file: Default::default(),
        };
        let a0 = sampling_attr(&ev, 0, 2, &opts);
        let a1 = sampling_attr(&ev, 1, 2, &opts);
        assert!(a0.mmap2 && a0.comm && a0.task && a0.comm_exec);
        assert!(!a1.mmap2 && !a1.comm && !a1.task);
        assert_eq!(a0.sample_type, a1.sample_type);
        assert!(a0.sample_type & sample_type::IDENTIFIER != 0);
        assert!(a0.sample_type & sample_type::CALLCHAIN != 0);
        assert!(a0.inherit && a0.enable_on_exec && a0.disabled && a0.sample_id_all);
        assert_eq!(a0.sample, Some(SampleRate::Frequency(4000)));
        let own = RecordEvent {
            attr: Attr {
                sample: Some(SampleRate::Period(5000)),
                ..ev.attr.clone()
            },
            ..ev
        };
        assert_eq!(
            sampling_attr(&own, 0, 1, &opts).sample,
            Some(SampleRate::Period(5000))
        );
        assert_eq!(
            sampling_attr(&own, 0, 1, &opts).sample_type & sample_type::IDENTIFIER,
            0
        );
    }
}
