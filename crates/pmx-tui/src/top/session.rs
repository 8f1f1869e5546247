//! The two threads of a live profile and the requests between them: the
//! session streams into a pipe; the aggregator reads it round by round
//! and, between rounds, answers the caller's requests (a snapshot then
//! aging, an annotation).

use super::frame::{Clock, Frame};
use super::{TopError, TopOptions};
use pmx_count::metrics::MetricSet;
use pmx_profile::annotate::{AnnotateOptions, Annotation};
use pmx_profile::{KernelSymbols, Live, MachineId, Options, Profile};
use pmx_record::{RecordError, RecordSummary};
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

/// What a refresh does to the counts after its snapshot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Aging {
    /// Nothing (a redraw, the annotate view).
    Keep,
    /// Keep this fraction of every count (perf top's decay).
    Decay(f64),
    /// Forget them (`-z`, the `z` key).
    Zero,
}

/// A snapshot and the aggregator's state after it.
struct Snap {
    profile: Profile,
    /// Samples applied since the previous snapshot.
    new_samples: u64,
    ended: bool,
    held_rows: usize,
}

enum Request {
    Snapshot {
        aging: Aging,
        max_rows: usize,
        reply: mpsc::Sender<Snap>,
    },
    Annotate {
        symbol: String,
        dso: Option<String>,
        reply: mpsc::Sender<Result<Annotation, String>>,
    },
}

type Recorder = JoinHandle<Result<RecordSummary, RecordError>>;

/// A running live profile.
pub struct Session {
    requests: Option<mpsc::Sender<Request>>,
    stop: Arc<AtomicBool>,
    recorder: Option<Recorder>,
    aggregator: Option<JoinHandle<Result<(), String>>>,
    clock: Clock,
    max_rows: usize,
    metrics: Option<MetricSet>,
}

impl Session {
    /// Open the events and start both threads; `addresses`: keep each
    /// instruction's samples, for [`Session::annotate`]. An event that
    /// cannot be opened is the session's error, returned here.
    pub fn start(opts: &TopOptions, addresses: bool) -> Result<Session, TopError> {
        let (rx, tx) = std::io::pipe()?;
        // A larger pipe absorbs a slow snapshot's pause (the rings would
        // fill and lose records); the default 64 KiB is kept if refused.
        // SAFETY: fcntl on a pipe this function owns.
        unsafe { libc::fcntl(tx.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
        let stop = Arc::new(AtomicBool::new(false));
        let recorder = {
            let (events, record, stop) = (opts.events.clone(), opts.record.clone(), stop.clone());
            let out = Box::new(File::from(OwnedFd::from(tx)));
            std::thread::spawn(move || pmx_record::stream(&events, &record, out, stop))
        };
        // The header comes once the events are open; a session that
        // failed closed the pipe instead.
        let reader = match pmx_perfdata::Reader::new(File::from(OwnedFd::from(rx))) {
            Ok(r) => r,
            Err(e) => {
                return Err(match recorder.join() {
                    Ok(Err(re)) => TopError::Record(re),
                    _ => TopError::Stream(e.to_string()),
                })
            }
        };
        let (requests, inbox) = mpsc::channel();
        let children = !matches!(opts.record.call_graph, pmx_record::CallGraph::None);
        let symbols = opts.symbols.clone();
        let aggregator =
            std::thread::spawn(move || aggregate(reader, inbox, addresses, children, symbols));
        Ok(Session {
            requests: Some(requests),
            stop,
            recorder: Some(recorder),
            aggregator: Some(aggregator),
            clock: Clock::new(opts),
            max_rows: opts.max_rows,
            metrics: None,
        })
    }

    /// Evaluate these metrics over a sample-read group's rows at every
    /// refresh (`-M`: [`super::metrics`]).
    pub fn with_metrics(mut self, metrics: Option<MetricSet>) -> Session {
        self.metrics = metrics;
        self
    }

    /// The profile as it stands, then aged as `aging` says.
    pub fn frame(&mut self, aging: Aging) -> Result<Frame, TopError> {
        let (reply, answer) = mpsc::channel();
        let max_rows = self.max_rows;
        self.send(Request::Snapshot {
            aging,
            max_rows,
            reply,
        })?;
        let snap = answer.recv().map_err(|_| self.failure())?;
        let m = self.metrics.as_ref();
        Ok(self.clock.frame(
            snap.profile,
            snap.new_samples,
            snap.ended,
            snap.held_rows,
            m,
        ))
    }

    /// The annotation of `symbol` (in `dso`, a base name or path) from
    /// the samples of its instructions so far.
    pub fn annotate(&mut self, symbol: &str, dso: Option<&str>) -> Result<Annotation, String> {
        let (reply, answer) = mpsc::channel();
        let req = Request::Annotate {
            symbol: symbol.to_string(),
            dso: dso.map(str::to_string),
            reply,
        };
        self.send(req).map_err(|e| e.to_string())?;
        answer
            .recv()
            .map_err(|_| self.failure().to_string())
            .and_then(|r| r)
    }

    fn send(&mut self, req: Request) -> Result<(), TopError> {
        match &self.requests {
            Some(s) if s.send(req).is_ok() => Ok(()),
            _ => Err(self.failure()),
        }
    }

    /// Why the aggregator stopped answering.
    fn failure(&mut self) -> TopError {
        match self.aggregator.take().map(|h| h.join()) {
            Some(Ok(Err(e))) => TopError::Stream(e),
            Some(Err(_)) => TopError::Stream("the aggregator panicked".into()),
            _ => TopError::Stream("the aggregator ended".into()),
        }
    }

    /// End the session: stop sampling, wait for both threads; the
    /// session's summary, or the error that ended it.
    pub fn stop(&mut self) -> Result<Option<RecordSummary>, TopError> {
        self.stop.store(true, Ordering::SeqCst);
        self.requests = None;
        let summary = match self.recorder.take().map(|h| h.join()) {
            Some(Ok(Ok(s))) => Some(s),
            Some(Ok(Err(e))) => return Err(TopError::Record(e)),
            Some(Err(_)) => return Err(TopError::Stream("the session panicked".into())),
            None => None,
        };
        if let Some(h) = self.aggregator.take() {
            let _ = h.join();
        }
        Ok(summary)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// The aggregator thread: rounds in; requests answered between rounds,
/// and after the end of the stream until the caller hangs up.
fn aggregate(
    reader: pmx_perfdata::Reader,
    inbox: mpsc::Receiver<Request>,
    addresses: bool,
    children: bool,
    symbols: pmx_symbols::SymbolOptions,
) -> Result<(), String> {
    let options = Options {
        kallsyms: KernelSymbols::Load,
        this_machine: MachineId::current(),
        children,
        symbols,
        ..Options::default()
    };
    let mut live = Live::new(reader, &options, addresses);
    // Samples held after the previous snapshot's aging.
    let mut held = 0;
    loop {
        let more = live.next_round().map_err(|e| e.to_string())?;
        if !more {
            for req in inbox.iter() {
                serve(&mut live, req, &mut held, &options.symbols);
            }
            return Ok(());
        }
        while let Ok(req) = inbox.try_recv() {
            serve(&mut live, req, &mut held, &options.symbols);
        }
    }
}

fn serve(live: &mut Live<'_>, req: Request, held: &mut u64, symbols: &pmx_symbols::SymbolOptions) {
    match req {
        Request::Snapshot {
            aging,
            max_rows,
            reply,
        } => {
            let profile = live.snapshot();
            let new_samples = live.samples().saturating_sub(*held);
            match aging {
                Aging::Keep => {}
                Aging::Decay(keep) => live.decay(keep),
                Aging::Zero => live.zero(),
            }
            // Bounded memory: halve until the rows fit (the lightest go).
            while live.held_rows() > max_rows {
                live.decay(0.5);
            }
            *held = live.samples();
            let _ = reply.send(Snap {
                profile,
                new_samples,
                ended: live.ended(),
                held_rows: live.held_rows(),
            });
        }
        Request::Annotate { symbol, dso, reply } => {
            let opts = AnnotateOptions {
                input: Default::default(),
                symbol,
                dso,
                event: None,
                symfs: None,
                syntax: Default::default(),
                symbols: symbols.clone(),
            };
            let (profile, places) = (live.snapshot(), live.addresses());
            let a = pmx_profile::annotate_places(
                &profile,
                &places,
                &live.precise(),
                "the live session",
                &opts,
            );
            let _ = reply.send(a.map_err(|e| e.to_string()));
        }
    }
}
