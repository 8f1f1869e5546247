//! `perf stat record`'s records: what a counting run leaves in perf.data
//! instead of samples (perf's `include/perf/event.h`, Linux 6.1).
//!
//! - `THREAD_MAP` (73): the threads counted, `{u64 pid; char comm[16]}`
//!   each (`-1` and no comm for a CPU-wide run);
//! - `CPU_MAP` (74): the CPUs counted (`-1` for a task's counters);
//! - `STAT_CONFIG` (75): `{tag, value}` terms: aggregation mode, interval
//!   (ms), scaling;
//! - `STAT` (76): one counter's `{id, cpu, thread, value, enabled,
//!   running}`, `cpu` a CPU number of the CPU map, `thread` an index into
//!   the thread map;
//! - `STAT_ROUND` (77): the end of a round of `STAT` records, interval or
//!   final, with its time (the final one: the run's elapsed ns).
//!
//! Events are named, scaled and given a unit by `EVENT_UPDATE` (78)
//! records ([`event_update`]); a pipe stream ([`pipe_header`]) declares
//! them in `HEADER_ATTR` records ([`header_attr`]). [`StatRecord::parse`]
//! reads what [`StatRecord::to_bytes`] writes, and perf's own.

use crate::format::{record_type, EventHeader};

/// perf's aggregation modes (`enum aggr_mode`) as `STAT_CONFIG` stores
/// them.
pub mod aggr_mode {
    /// `-A`: per CPU.
    pub const NONE: u64 = 0;
    /// One total per event.
    pub const GLOBAL: u64 = 1;
    /// `--per-socket`.
    pub const SOCKET: u64 = 2;
    /// `--per-die`.
    pub const DIE: u64 = 3;
    /// `--per-core`.
    pub const CORE: u64 = 4;
    /// `--per-thread`.
    pub const THREAD: u64 = 5;
    /// `--per-node`.
    pub const NODE: u64 = 7;
}

/// `STAT_CONFIG`: how the counts were taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatConfig {
    /// One of [`aggr_mode`].
    pub aggr_mode: u64,
    /// `-I` in ms (0: none).
    pub interval_ms: u64,
    /// Counts are scaled by enabled/running time.
    pub scale: bool,
}

/// `STAT`: one counter's reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatCount {
    /// The counter's id (one of its event's ids).
    pub id: u64,
    /// The CPU (`-1`: the task's counter).
    pub cpu: i32,
    /// The index of its thread in the thread map.
    pub thread: u32,
    /// The raw count.
    pub value: u64,
    /// Time enabled, ns.
    pub enabled: u64,
    /// Time running, ns.
    pub running: u64,
}

/// One of `perf stat record`'s records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatRecord {
    /// `THREAD_MAP`: (pid, comm) of each thread, in map order.
    ThreadMap(Vec<(i64, String)>),
    /// `CPU_MAP`: the CPUs, in map order.
    CpuMap(Vec<i32>),
    /// `STAT_CONFIG`.
    Config(StatConfig),
    /// `STAT`.
    Count(StatCount),
    /// `STAT_ROUND`: the end of an interval (`final_round` false) or of
    /// the run, at `time` ns.
    Round {
        /// The last round (perf's `FINAL`).
        final_round: bool,
        /// ns since the start (interval) or the run's elapsed time.
        time: u64,
    },
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A record of `kind` with `body` after its header, padded to 8 bytes.
fn record(kind: u32, mut body: Vec<u8>) -> Vec<u8> {
    body.resize(body.len().div_ceil(8) * 8, 0);
    let header = EventHeader {
        kind,
        misc: 0,
        size: (8 + body.len()) as u16,
    };
    let mut out = header.to_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

/// The CPUs of a `CPU_MAP` body: perf's list (type 0), mask (type 1, 32-
/// or 64-bit words) or range (type 2) forms.
fn cpu_map(b: &[u8]) -> Option<Vec<i32>> {
    match u16_at(b, 0)? {
        0 => {
            let nr = u16_at(b, 2)? as usize;
            (0..nr)
                .map(|i| u16_at(b, 4 + 2 * i).map(|c| c as i16 as i32))
                .collect()
        }
        1 => {
            let nr = u16_at(b, 2)? as usize;
            let (word, start) = match u16_at(b, 4)? {
                4 => (4, 6),
                8 => (8, 10),
                _ => return None,
            };
            let mut cpus = Vec::new();
            for w in 0..nr {
                let at = start + w * word;
                let bits = match word {
                    4 => u32_at(b, at)? as u64,
                    _ => u64_at(b, at)?,
                };
                let base = (w * word * 8) as i32;
                cpus.extend(
                    (0..word as i32 * 8)
                        .filter(|i| bits >> i & 1 != 0)
                        .map(|i| base + i),
                );
            }
            Some(cpus)
        }
        2 => {
            let any = *b.get(2)? != 0;
            let (start, end) = (u16_at(b, 4)? as i32, u16_at(b, 6)? as i32);
            let mut cpus: Vec<i32> = if any { vec![-1] } else { Vec::new() };
            cpus.extend(start..=end);
            Some(cpus)
        }
        _ => None,
    }
}

impl StatRecord {
    /// The stat record of `kind` with `body` (the bytes after the
    /// header): `None` for another kind, an error for a malformed one.
    pub fn parse(kind: u32, body: &[u8]) -> Option<Result<StatRecord, String>> {
        let bad = |what: &str| format!("malformed {what} record ({} bytes)", body.len());
        let rec = match kind {
            record_type::THREAD_MAP => u64_at(body, 0)
                .and_then(|nr| {
                    let nr = usize::try_from(nr).ok()?;
                    (0..nr)
                        .map(|i| {
                            let at = 8 + 24 * i;
                            let pid = u64_at(body, at)? as i64;
                            let comm = body.get(at + 8..at + 24)?;
                            let end = comm.iter().position(|&c| c == 0).unwrap_or(16);
                            Some((pid, String::from_utf8_lossy(&comm[..end]).into_owned()))
                        })
                        .collect::<Option<Vec<_>>>()
                })
                .map(StatRecord::ThreadMap)
                .ok_or_else(|| bad("THREAD_MAP")),
            record_type::CPU_MAP => cpu_map(body)
                .map(StatRecord::CpuMap)
                .ok_or_else(|| bad("CPU_MAP")),
            record_type::STAT_CONFIG => u64_at(body, 0)
                .and_then(|nr| {
                    let mut c = StatConfig {
                        aggr_mode: aggr_mode::GLOBAL,
                        interval_ms: 0,
                        scale: false,
                    };
                    for i in 0..usize::try_from(nr).ok()? {
                        let (tag, val) = (u64_at(body, 8 + 16 * i)?, u64_at(body, 16 + 16 * i)?);
                        match tag {
                            0 => c.aggr_mode = val,
                            1 => c.interval_ms = val,
                            2 => c.scale = val != 0,
                            _ => {}
                        }
                    }
                    Some(c)
                })
                .map(StatRecord::Config)
                .ok_or_else(|| bad("STAT_CONFIG")),
            record_type::STAT => (|| {
                Some(StatCount {
                    id: u64_at(body, 0)?,
                    cpu: u32_at(body, 8)? as i32,
                    thread: u32_at(body, 12)?,
                    value: u64_at(body, 16)?,
                    enabled: u64_at(body, 24)?,
                    running: u64_at(body, 32)?,
                })
            })()
            .map(StatRecord::Count)
            .ok_or_else(|| bad("STAT")),
            record_type::STAT_ROUND => u64_at(body, 0)
                .zip(u64_at(body, 8))
                .map(|(t, time)| StatRecord::Round {
                    final_round: t == 1,
                    time,
                })
                .ok_or_else(|| bad("STAT_ROUND")),
            _ => return None,
        };
        Some(rec)
    }

    /// The record's bytes, header first, as perf writes it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::new();
        let kind = match self {
            StatRecord::ThreadMap(threads) => {
                b.extend_from_slice(&(threads.len() as u64).to_le_bytes());
                for (pid, comm) in threads {
                    b.extend_from_slice(&pid.to_le_bytes());
                    let mut c = [0u8; 16];
                    let n = comm.len().min(15);
                    c[..n].copy_from_slice(&comm.as_bytes()[..n]);
                    b.extend_from_slice(&c);
                }
                record_type::THREAD_MAP
            }
            StatRecord::CpuMap(cpus) => {
                b.extend_from_slice(&0u16.to_le_bytes());
                b.extend_from_slice(&(cpus.len() as u16).to_le_bytes());
                for &c in cpus {
                    b.extend_from_slice(&(c as i16).to_le_bytes());
                }
                record_type::CPU_MAP
            }
            StatRecord::Config(c) => {
                let terms = [(0u64, c.aggr_mode), (1, c.interval_ms), (2, c.scale as u64)];
                b.extend_from_slice(&(terms.len() as u64).to_le_bytes());
                for (tag, val) in terms {
                    b.extend_from_slice(&tag.to_le_bytes());
                    b.extend_from_slice(&val.to_le_bytes());
                }
                record_type::STAT_CONFIG
            }
            StatRecord::Count(s) => {
                b.extend_from_slice(&s.id.to_le_bytes());
                b.extend_from_slice(&(s.cpu as u32).to_le_bytes());
                b.extend_from_slice(&s.thread.to_le_bytes());
                for v in [s.value, s.enabled, s.running] {
                    b.extend_from_slice(&v.to_le_bytes());
                }
                record_type::STAT
            }
            StatRecord::Round { final_round, time } => {
                b.extend_from_slice(&(*final_round as u64).to_le_bytes());
                b.extend_from_slice(&time.to_le_bytes());
                record_type::STAT_ROUND
            }
        };
        record(kind, b)
    }
}

/// What an `EVENT_UPDATE` record says about an event.
#[derive(Debug, Clone, PartialEq)]
pub enum EventUpdate {
    /// Its unit (`msec`).
    Unit(String),
    /// The factor its counts are multiplied by.
    Scale(f64),
    /// Its name.
    Name(String),
}

/// An `EVENT_UPDATE` record about the event with counter `id`.
pub fn event_update(id: u64, what: &EventUpdate) -> Vec<u8> {
    let (tag, mut data) = match what {
        EventUpdate::Unit(u) => (0u64, u.as_bytes().to_vec()),
        EventUpdate::Scale(s) => (1, s.to_le_bytes().to_vec()),
        EventUpdate::Name(n) => (2, n.as_bytes().to_vec()),
    };
    if !matches!(what, EventUpdate::Scale(_)) {
        data.push(0);
    }
    // perf sizes it as its struct (a 16-byte union after type and id)
    // plus the data rounded up to 8 bytes.
    data.resize(data.len().div_ceil(8) * 8 + 16, 0);
    let mut b = tag.to_le_bytes().to_vec();
    b.extend_from_slice(&id.to_le_bytes());
    b.extend_from_slice(&data);
    record(record_type::EVENT_UPDATE, b)
}

/// The 16 bytes a pipe stream starts with: the magic and its size.
pub fn pipe_header() -> [u8; 16] {
    let mut h = [0u8; 16];
    h[..8].copy_from_slice(b"PERFILE2");
    h[8..].copy_from_slice(&16u64.to_le_bytes());
    h
}

/// A pipe stream's `HEADER_ATTR` record: the attr bytes (as
/// [`crate::write::normalize_attr`] makes them) and the event's ids.
pub fn header_attr(attr: &[u8], ids: &[u64]) -> Vec<u8> {
    let mut b = attr.to_vec();
    for id in ids {
        b.extend_from_slice(&id.to_le_bytes());
    }
    record(record_type::HEADER_ATTR, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// perf 6.1's own records, from `perf stat record -o - -e
    /// task-clock,page-faults true` on this machine (`perf report -D`),
    /// byte for byte: they parse to what perf printed, and are written
    /// back the same.
    #[test]
    fn perfs_records_read_and_write_back() {
        let hex = |s: &str| -> Vec<u8> {
            s.split_whitespace()
                .map(|b| u8::from_str_radix(b, 16).unwrap())
                .collect()
        };
        // PERF_RECORD_STAT: id 206795, cpu -1, thread 0, value 900049.
        let stat = hex(
            "4c 00 00 00 00 00 30 00 cb 27 03 00 00 00 00 00 ff ff ff ff 00 00 00 00 \
             d1 bb 0d 00 00 00 00 00 d1 bb 0d 00 00 00 00 00 d1 bb 0d 00 00 00 00 00",
        );
        let want = StatRecord::Count(StatCount {
            id: 206795,
            cpu: -1,
            thread: 0,
            value: 900049,
            enabled: 900049,
            running: 900049,
        });
        assert_eq!(StatRecord::parse(76, &stat[8..]), Some(Ok(want.clone())));
        assert_eq!(want.to_bytes(), stat);
        // PERF_RECORD_CPU_MAP: -1 (16 bytes).
        let cpus = hex("4a 00 00 00 00 00 10 00 00 00 01 00 ff ff 00 00");
        assert_eq!(
            StatRecord::parse(74, &cpus[8..]),
            Some(Ok(StatRecord::CpuMap(vec![-1])))
        );
        assert_eq!(StatRecord::CpuMap(vec![-1]).to_bytes(), cpus);
        // PERF_RECORD_STAT_ROUND: time 39740966, FINAL.
        let round = StatRecord::Round {
            final_round: true,
            time: 39_740_966,
        };
        let bytes = hex("4d 00 00 00 00 00 18 00 01 00 00 00 00 00 00 00 26 66 5e 02 00 00 00 00");
        assert_eq!(StatRecord::parse(77, &bytes[8..]), Some(Ok(round.clone())));
        assert_eq!(round.to_bytes(), bytes);
        // PERF_RECORD_STAT_CONFIG: aggr_mode 1, interval 0, scale 1.
        let config = hex(
            "4b 00 00 00 00 00 40 00 03 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 \
             01 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 \
             02 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00",
        );
        let want = StatRecord::Config(StatConfig {
            aggr_mode: aggr_mode::GLOBAL,
            interval_ms: 0,
            scale: true,
        });
        assert_eq!(StatRecord::parse(75, &config[8..]), Some(Ok(want.clone())));
        assert_eq!(want.to_bytes(), config);
        // PERF_RECORD_THREAD_MAP: nr 1, thread 16676 (perf leaves the comm
        // empty).
        let threads = hex(
            "49 00 00 00 00 00 28 00 01 00 00 00 00 00 00 00 24 41 00 00 00 00 00 00 \
             00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
        );
        let want = StatRecord::ThreadMap(vec![(16676, String::new())]);
        assert_eq!(StatRecord::parse(73, &threads[8..]), Some(Ok(want.clone())));
        assert_eq!(want.to_bytes(), threads);
        // EVENT_UPDATE unit "msec" of id 206795 (48 bytes).
        let unit = hex(
            "4e 00 00 00 00 00 30 00 00 00 00 00 00 00 00 00 cb 27 03 00 00 00 00 00 \
             6d 73 65 63 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
        );
        assert_eq!(
            event_update(206795, &EventUpdate::Unit("msec".into())),
            unit
        );
        assert_eq!(StatRecord::parse(78, &unit[8..]), None);
    }

    #[test]
    fn maps_and_config_round_trip_and_bad_ones_are_errors() {
        for r in [
            StatRecord::ThreadMap(vec![(16676, "true".into()), (-1, String::new())]),
            StatRecord::CpuMap(vec![0, 1, 3]),
            StatRecord::Config(StatConfig {
                aggr_mode: aggr_mode::THREAD,
                interval_ms: 100,
                scale: true,
            }),
        ] {
            let b = r.to_bytes();
            assert_eq!(b.len() % 8, 0);
            let kind = u32::from_le_bytes(b[..4].try_into().unwrap());
            assert_eq!(StatRecord::parse(kind, &b[8..]), Some(Ok(r)));
        }
        // A 64-bit mask: CPUs 0, 2 and 65.
        let mut mask = vec![1, 0, 2, 0, 8, 0, 0, 0, 0, 0];
        mask.extend_from_slice(&5u64.to_le_bytes());
        mask.extend_from_slice(&2u64.to_le_bytes());
        assert_eq!(cpu_map(&mask), Some(vec![0, 2, 65]));
        assert!(StatRecord::parse(76, &[0; 10]).unwrap().is_err());
        assert!(StatRecord::parse(73, &[9, 0, 0, 0, 0, 0, 0, 0])
            .unwrap()
            .is_err());
    }
}
