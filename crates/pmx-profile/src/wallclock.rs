//! The wall-clock view (`pmx report --wall-clock`): where each thread's
//! time went, on the CPU and off it, in one unit (nanoseconds).
//!
//! A recording made with `--off-cpu` and a clock event (`-e cpu-clock`
//! or `task-clock`) has both halves of a thread's time: each clock
//! sample stands for its period of CPU time at its stack, each
//! `offcpu-time` sample for the nanoseconds the thread slept at its
//! stack. Added together per thread they come to the thread's wall time
//! (less the time it was runnable but preempted, which neither counts);
//! per function they answer "where did the 700 ms go" with one figure,
//! computing and waiting alike.
//!
//! The view is built from an [`Export`] (every sample with its thread
//! and stack), folded by [`Export::to_wall_clock`] into one column:
//! [`WallClock`] has the per-thread and per-function times (total: the
//! function and its callees; self: the function itself), and the stacks
//! in nanoseconds for folded stacks and flame graphs, an off-CPU stack
//! ending in the pseudo-frame [`OFF_CPU_FRAME`]. The exports write the
//! folded [`Export`]: pprof one `wall-clock/nanoseconds` sample type,
//! the Firefox Profiler one track per thread.

use crate::export::{collect::Collector, Export};
use crate::flame::{self, FlameOptions};
use crate::report::{report_with, Report, ReportError, ReportOptions};
use rustc_hash::FxHashMap as HashMap;
use std::io::Write;

pub use crate::flame::OFF_CPU_FRAME;

/// Time on and off the CPU, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Time {
    /// On the CPU (the clock samples' periods).
    pub on: u64,
    /// Off the CPU, asleep (the `offcpu-time` samples' periods).
    pub off: u64,
}

impl Time {
    /// Both together.
    pub fn wall(&self) -> u64 {
        self.on.saturating_add(self.off)
    }

    fn add(&mut self, off: bool, ns: u64) {
        let t = if off { &mut self.off } else { &mut self.on };
        *t = t.saturating_add(ns);
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({ "wall_ns": self.wall(), "on_cpu_ns": self.on, "off_cpu_ns": self.off })
    }
}

/// A thread's time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadTime {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Its command.
    pub comm: String,
    /// Its time.
    pub time: Time,
}

/// A function's time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionTime {
    /// Its name.
    pub name: String,
    /// Its binary's base name.
    pub dso: String,
    /// The time of the samples with the function on their stack.
    pub total: Time,
    /// The time of the samples with the function as their leaf.
    pub own: Time,
}

/// The wall-clock view of a recording (see the module page).
#[derive(Debug, Clone, Default)]
pub struct WallClock {
    /// The file as shown.
    pub file: String,
    /// The events whose samples are on-CPU time.
    pub on_events: Vec<String>,
    /// Threads, the most time first.
    pub threads: Vec<ThreadTime>,
    /// Functions, the most total time first.
    pub functions: Vec<FunctionTime>,
    /// Stacks (command, then frames root → leaf, then [`OFF_CPU_FRAME`]
    /// off the CPU) with their nanoseconds twice (as the flame graph's
    /// samples and period), sorted.
    pub stacks: Vec<(Vec<String>, u64, u64)>,
}

/// The report of `opts` with its [`Export`] folded into wall-clock time
/// and the [`WallClock`] view of it; `lines`: find the source lines of
/// user locations (for pprof).
pub fn report(
    opts: &ReportOptions,
    lines: bool,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<(Report, Export, WallClock), ReportError> {
    let mut c = Collector::new(lines);
    let report = report_with(opts, progress, Some(&mut c))?;
    let mut x = c.into_export();
    x.describe(&report);
    x.to_wall_clock(&report.file)?;
    let w = WallClock::of(&x, &report.file);
    Ok((report, x, w))
}

impl WallClock {
    /// The view of an export folded by [`Export::to_wall_clock`].
    pub fn of(x: &Export, file: &str) -> WallClock {
        let mut threads = vec![Time::default(); x.threads.len()];
        let mut total = vec![Time::default(); x.functions.len()];
        let mut own = vec![Time::default(); x.functions.len()];
        let mut stacks: HashMap<Vec<String>, u64> = HashMap::default();
        let mut seen = Vec::new();
        for s in &x.samples {
            let Some(e) = x.events.get(s.event as usize) else {
                continue;
            };
            let off = e.off_cpu;
            threads[s.thread as usize].add(off, s.period);
            seen.clear();
            let funcs = x.stack_locations(s.stack);
            for f in funcs.map(|l| x.locations[l as usize].function as usize) {
                if seen.is_empty() {
                    own[f].add(off, s.period);
                }
                if !seen.contains(&f) {
                    seen.push(f);
                    total[f].add(off, s.period);
                }
            }
            let mut frames = vec![x.threads[s.thread as usize].comm.clone()];
            let leaf_first = x.stack_locations(s.stack);
            let names: Vec<u32> = leaf_first.collect();
            for &l in names.iter().rev() {
                let f = x.locations[l as usize].function as usize;
                frames.push(x.functions[f].name.clone());
            }
            if off {
                frames.push(OFF_CPU_FRAME.to_string());
            }
            *stacks.entry(frames).or_insert(0) += s.period;
        }
        let mut threads: Vec<ThreadTime> = (x.threads.iter().zip(threads))
            .filter(|(_, t)| t.wall() > 0)
            .map(|(t, time)| ThreadTime {
                pid: t.pid,
                tid: t.tid,
                comm: t.comm.clone(),
                time,
            })
            .collect();
        threads.sort_by(|a, b| (b.time.wall(), a.tid).cmp(&(a.time.wall(), b.tid)));
        let mut functions: Vec<FunctionTime> = (x.functions.iter().zip(total.into_iter().zip(own)))
            .filter(|(_, (t, _))| t.wall() > 0)
            .map(|(f, (total, own))| FunctionTime {
                name: f.name.clone(),
                dso: f.dso.clone(),
                total,
                own,
            })
            .collect();
        functions.sort_by(|a, b| {
            (b.total.wall(), b.own.wall(), &a.name).cmp(&(a.total.wall(), a.own.wall(), &b.name))
        });
        let mut stacks: Vec<_> = stacks.into_iter().map(|(f, ns)| (f, ns, ns)).collect();
        stacks.sort();
        let on_events = (x.events.iter())
            .filter(|e| e.kept && !e.off_cpu)
            .map(|e| e.name.clone())
            .collect();
        WallClock {
            file: file.to_string(),
            on_events,
            threads,
            functions,
            stacks,
        }
    }

    /// The sum of every thread's time.
    pub fn all(&self) -> Time {
        let mut all = Time::default();
        for t in &self.threads {
            all.add(false, t.time.on);
            all.add(true, t.time.off);
        }
        all
    }

    /// Folded stacks in nanoseconds (`comm;outer;…;inner[;[off-CPU]] ns`).
    pub fn folded(&self) -> String {
        flame::folded(&self.stacks)
    }

    /// The flame graph of wall-clock time: widths in nanoseconds, off-CPU
    /// time above its stack as [`OFF_CPU_FRAME`].
    pub fn flame_svg(&self) -> String {
        let name = self.file.rsplit('/').next().unwrap_or(&self.file);
        let all = self.all();
        let title = format!(
            "{name} — wall-clock time ({:.1} ms on the CPU, {:.1} ms off it)",
            all.on as f64 / 1e6,
            all.off as f64 / 1e6
        );
        let opts = FlameOptions {
            title,
            unit: "ns".into(),
            ..FlameOptions::default()
        };
        flame::svg(&self.stacks, &opts)
    }

    /// The view as JSON.
    pub fn json(&self) -> serde_json::Value {
        let threads: Vec<_> = (self.threads.iter())
            .map(|t| {
                let mut v = t.time.json();
                v["pid"] = t.pid.into();
                v["tid"] = t.tid.into();
                v["comm"] = t.comm.clone().into();
                v
            })
            .collect();
        let functions: Vec<_> = (self.functions.iter())
            .map(|f| {
                serde_json::json!({
                    "symbol": f.name, "dso": f.dso, "total": f.total.json(), "self": f.own.json()
                })
            })
            .collect();
        serde_json::json!({
            "file": self.file,
            "on_cpu_events": self.on_events,
            "off_cpu_event": "offcpu-time",
            "threads": threads,
            "functions": functions,
        })
    }

    /// The tables: threads, then functions whose total is at least
    /// `percent_limit` % of all threads' time, at most `limit` of them.
    pub fn table(
        &self,
        out: &mut dyn Write,
        percent_limit: f64,
        limit: Option<usize>,
    ) -> std::io::Result<()> {
        let ms = |ns: u64| ns as f64 / 1e6;
        writeln!(
            out,
            "# Wall-clock time of {}: on the CPU from {} samples (their periods), off the CPU from offcpu-time (asleep: S or D)",
            self.file,
            self.on_events.join(", ")
        )?;
        writeln!(out, "#\n# Threads\n#")?;
        writeln!(
            out,
            "# {:>11}  {:>11}  {:>11}  Command/Tid",
            "Wall ms", "On-CPU ms", "Off-CPU ms"
        )?;
        for t in &self.threads {
            let (w, on, off) = (t.time.wall(), t.time.on, t.time.off);
            let (w, on, off) = (ms(w), ms(on), ms(off));
            writeln!(
                out,
                "  {w:>11.3}  {on:>11.3}  {off:>11.3}  {}/{}",
                t.comm, t.tid
            )?;
        }
        let all = self.all().wall();
        writeln!(
            out,
            "#\n# Functions (Total: with its callees; Self: its own)\n#"
        )?;
        writeln!(
            out,
            "# {:>11}  {:>11}  {:>11}  {:>11}  {:<20}  Symbol",
            "Total ms", "On-CPU ms", "Off-CPU ms", "Self ms", "Shared Object"
        )?;
        let shown = (self.functions.iter())
            .filter(|f| crate::report::pct(f.total.wall(), all) >= percent_limit)
            .take(limit.unwrap_or(usize::MAX));
        for f in shown {
            let (t, on, off, own) = (
                ms(f.total.wall()),
                ms(f.total.on),
                ms(f.total.off),
                ms(f.own.wall()),
            );
            writeln!(
                out,
                "  {t:>11.3}  {on:>11.3}  {off:>11.3}  {own:>11.3}  {:<20}  {}",
                f.dso, f.name
            )?;
        }
        Ok(())
    }
}

impl Export {
    /// Fold the kept clock events' samples (cpu-clock, task-clock: CPU
    /// nanoseconds) and `offcpu-time`'s (nanoseconds asleep) into one
    /// wall-clock column, dropping the other events; an error naming
    /// `file` when either half is missing.
    pub fn to_wall_clock(&mut self, file: &str) -> Result<(), ReportError> {
        let has = |off: bool| {
            (self.samples.iter()).any(|s| {
                let e = &self.events[s.event as usize];
                e.kept && if off { e.off_cpu } else { e.clock }
            })
        };
        let missing = if !has(true) {
            "no offcpu-time samples (record with --off-cpu)"
        } else if !has(false) {
            "no cpu-clock or task-clock samples for the time on the CPU (record with -e cpu-clock --off-cpu)"
        } else {
            ""
        };
        if !missing.is_empty() {
            return Err(ReportError::NoWallClock(format!("{file}: {missing}")));
        }
        for e in &mut self.events {
            e.kept = e.kept && (e.clock || e.off_cpu);
            e.column = 0;
            e.members.clear();
        }
        let kept = |e: u32| self.events[e as usize].kept;
        self.samples.retain(|s| kept(s.event));
        self.markers.retain(|m| m.event.is_none_or(kept));
        self.wall_clock = true;
        Ok(())
    }
}
