//! The sampling flags `pmx record` and `pmx top` share (`-e`, `-c`, `-F`,
//! `-g`, `--call-graph`, `-m`), as the user typed them
//! ([`SamplingFlags`]), and what they mean once checked
//! ([`pmx_record::Sampling`], the options the sampling session takes):
//! one set of rules and messages for both commands. `-b`/`-j` are
//! [`branch`]'s.

pub mod branch;

use pmx_count::database::{self, DatabaseOptions};
use pmx_record::{check_mmap_pages, default_event, event_groups, sample_rate, sampling_events};
use pmx_record::{CallGraph, RecordError, Sampling};

/// The shared sampling flags, unchecked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SamplingFlags {
    /// `-e`: event lists (`{…}` groups and `:S` included); none: the
    /// default event.
    pub events: Vec<String>,
    /// `-c PERIOD`.
    pub count: Option<u64>,
    /// `-F HZ` or `-F max`.
    pub freq: Option<String>,
    /// `-g`: frame-pointer call chains.
    pub g: bool,
    /// `--call-graph MODE`.
    pub call_graph: Option<String>,
    /// `-m N`: data pages of each CPU's ring; `None`: the command's default.
    pub mmap_pages: Option<usize>,
    /// `-j LIST` (`-b`: `any`): sample each event's branch stack.
    pub branch_filter: Option<String>,
}

impl SamplingFlags {
    /// Check every flag (the cheap ones first) and resolve the events
    /// with the database `db` names. Bad input is [`RecordError::Invalid`]
    /// (an event the database does not know included); an event that
    /// cannot sample here is [`RecordError::NotSampleable`].
    pub fn check(&self, db: &DatabaseOptions) -> Result<Sampling, RecordError> {
        let mmap_pages = self.mmap_pages.map(check_mmap_pages).transpose()?;
        let (rate, mut notes) = sample_rate(self.count, self.freq.as_deref())?;
        let call_graph = CallGraph::from_flags(self.g, self.call_graph.as_deref())?;
        let events = if self.events.is_empty() {
            let (ev, more) = default_event(rate);
            notes.extend(more);
            vec![ev]
        } else {
            let groups = event_groups(&self.events)?;
            let plan = database::plan(db, &groups, None)
                .map_err(|e| RecordError::Invalid(e.to_string()))?;
            sampling_events(plan, &groups)?
        };
        let mut events = events;
        if let Some(list) = &self.branch_filter {
            let bits = branch::parse(list).map_err(RecordError::Invalid)?;
            for e in &mut events {
                e.attr.branch_sample_type = bits;
            }
        }
        Ok(Sampling {
            events,
            notes,
            rate,
            call_graph,
            mmap_pages,
        })
    }
}

/// `record --off-cpu [--off-cpu-thresh MS]` as the recording's off-CPU
/// options (`None`: no off-CPU profile); a threshold without `--off-cpu`,
/// or one that is not a positive number of milliseconds, is refused.
pub fn off_cpu_flags(
    off_cpu: bool,
    thresh_ms: Option<f64>,
) -> Result<Option<pmx_record::OffCpuOptions>, RecordError> {
    let thresh_ns = match thresh_ms {
        None => None,
        Some(_) if !off_cpu => {
            return Err(RecordError::Invalid(
                "--off-cpu-thresh applies to --off-cpu, which is not given".into(),
            ))
        }
        Some(ms) if ms.is_finite() && ms >= 0.0 => Some((ms * 1e6) as u64),
        Some(ms) => {
            return Err(RecordError::Invalid(format!(
                "--off-cpu-thresh {ms}: give the threshold in milliseconds (0.5, 10)"
            )))
        }
    };
    Ok(off_cpu.then_some(pmx_record::OffCpuOptions { thresh_ns }))
}

/// `top --off-cpu`'s events: the user's `-e`, or with none the waits
/// alone (`dummy`, which never samples, carries the side band).
pub fn top_off_cpu_events(events: &[String], off_cpu: bool) -> Vec<String> {
    match off_cpu && events.is_empty() {
        true => vec!["dummy".into()],
        false => events.to_vec(),
    }
}

/// `record --threads[=SPEC]` as the recording's number of ring reader
/// threads ([`pmx_record::FileOptions::reader_threads`]): none without
/// the flag; one per CPU's ring for `--threads` and `--threads=cpu`
/// (perf's default spec); `--threads=N`, N readers with the rings dealt
/// among them. perf's other specs (`core`, `package`, `numa`, CPU masks)
/// are refused with what pmx takes instead.
pub fn reader_threads(spec: Option<&str>) -> Result<usize, RecordError> {
    match spec {
        None => Ok(0),
        Some("" | "cpu") => Ok(usize::MAX),
        Some(n) => match n.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(RecordError::Invalid(format!(
                "--threads={n}: pmx reads the rings with one thread per CPU (--threads, \
                 --threads=cpu) or with N threads (--threads=N, N ≥ 1); perf's core, package, \
                 numa and mask layouts are not taken"
            ))),
        },
    }
}

/// `record`'s memory-access flags: which sample fields to add to every
/// event (perf record's `-d`, `--phys-data`, `--data-page-size`,
/// `--code-page-size`, `-W`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DataFlags {
    /// `-d`: the data address (and the data mappings to name it by).
    pub data: bool,
    /// `--phys-data`: the physical address.
    pub phys_data: bool,
    /// `--data-page-size`: the data address's page size.
    pub data_page_size: bool,
    /// `--code-page-size`: the code address's page size.
    pub code_page_size: bool,
    /// `-W`: the weight (WEIGHT_STRUCT, as perf on x86: the latency and
    /// the instruction latency).
    pub weight: bool,
}

impl DataFlags {
    /// The `sample_type` bits they add, as perf 6.1 on x86 adds them: `-d`
    /// the data address and source, `-W` the weight struct.
    pub fn sample_bits(&self) -> u64 {
        use pmx_perfdata::format::sample_type as st;
        let mut bits = 0;
        if self.data {
            bits |= st::ADDR | st::DATA_SRC;
        }
        if self.phys_data {
            bits |= st::PHYS_ADDR;
        }
        if self.data_page_size {
            bits |= st::DATA_PAGE_SIZE;
        }
        if self.code_page_size {
            bits |= st::CODE_PAGE_SIZE;
        }
        if self.weight {
            bits |= st::WEIGHT_STRUCT;
        }
        bits & pmx_record::MEMORY_FIELDS
    }

    /// Add the fields to every event of `s`.
    pub fn apply(&self, s: &mut Sampling) {
        let bits = self.sample_bits();
        for e in &mut s.events {
            e.attr.sample_type |= bits;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmx_record::SampleRate;

    #[test]
    fn threads_specs_are_per_cpu_or_a_count() {
        assert_eq!(reader_threads(None).unwrap(), 0);
        assert_eq!(reader_threads(Some("cpu")).unwrap(), usize::MAX);
        assert_eq!(reader_threads(Some("")).unwrap(), usize::MAX);
        assert_eq!(reader_threads(Some("3")).unwrap(), 3);
        for bad in ["0", "core", "numa", "-1", "0x3"] {
            let e = reader_threads(Some(bad)).unwrap_err().to_string();
            assert!(e.contains(&format!("--threads={bad}:")), "{e}");
        }
    }

    fn check(f: SamplingFlags) -> Result<Sampling, String> {
        f.check(&DatabaseOptions::default())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_ring_must_be_a_power_of_two_of_pages() {
        for bad in [0, 3, 6, 100] {
            let f = SamplingFlags {
                mmap_pages: Some(bad),
                ..Default::default()
            };
            let e = check(f).unwrap_err();
            assert_eq!(
                e,
                format!(
                    "-m {bad}: the ring size must be a power of two of pages (1, 2, 4 … 128 …)"
                )
            );
        }
        let f = SamplingFlags {
            mmap_pages: Some(4),
            ..Default::default()
        };
        assert_eq!(check(f).unwrap().mmap_pages, Some(4));
        let s = check(SamplingFlags::default()).unwrap();
        assert_eq!(s.mmap_pages, None);
    }

    #[test]
    fn without_e_the_default_event_with_its_note() {
        let s = check(SamplingFlags::default()).unwrap();
        assert_eq!(s.events.len(), 1);
        assert_eq!(s.call_graph, CallGraph::None);
        let (ev, notes) = default_event(s.rate);
        assert_eq!(s.events[0].name, ev.name);
        assert!(notes.iter().all(|n| s.notes.contains(n)), "{:?}", s.notes);
    }

    #[test]
    fn events_rate_and_call_graph_from_the_flags() {
        let f = SamplingFlags {
            events: vec!["cpu-clock,task-clock".into()],
            count: Some(10_000),
            g: true,
            ..Default::default()
        };
        let s = check(f).unwrap();
        let names: Vec<&str> = s.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["cpu-clock", "task-clock"]);
        assert_eq!(s.rate, SampleRate::Period(10_000));
        assert_eq!(s.call_graph, CallGraph::Fp { max_stack: None });
        assert!(s.notes.is_empty(), "{:?}", s.notes);
    }

    #[test]
    fn data_flags_add_their_sample_fields() {
        use pmx_perfdata::format::sample_type as st;
        let d = DataFlags {
            data: true,
            ..Default::default()
        };
        assert_eq!(d.sample_bits(), st::ADDR | st::DATA_SRC);
        let p = DataFlags {
            phys_data: true,
            data_page_size: true,
            weight: true,
            ..Default::default()
        };
        assert_eq!(
            p.sample_bits(),
            st::PHYS_ADDR | st::DATA_PAGE_SIZE | st::WEIGHT_STRUCT
        );
        let mut s = check(SamplingFlags {
            events: vec!["page-faults".into()],
            ..Default::default()
        })
        .unwrap();
        d.apply(&mut s);
        assert_eq!(s.events[0].attr.sample_type & st::ADDR, st::ADDR);
    }

    #[test]
    fn bad_values_are_invalid_input() {
        let bad = [
            SamplingFlags {
                count: Some(0),
                ..Default::default()
            },
            SamplingFlags {
                freq: Some("fast".into()),
                ..Default::default()
            },
            SamplingFlags {
                call_graph: Some("sideways".into()),
                ..Default::default()
            },
            SamplingFlags {
                events: vec!["cpu-clokc".into()],
                ..Default::default()
            },
        ];
        for f in bad {
            let e = f.check(&DatabaseOptions::default()).unwrap_err();
            assert!(matches!(e, RecordError::Invalid(_)), "{f:?}: {e:?}");
        }
    }
}
