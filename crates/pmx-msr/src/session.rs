//! A counting session: check, save, program, read deltas, restore.
//!
//! [`Session::start`] takes an open [`MsrDevice`] and a [`Plan`] and:
//!
//! 1. reads every register the plan will write (the saved values);
//! 2. refuses, unless [`SessionOptions::force`], when someone else uses the
//!    counters: an enable bit for one of them already set in the global
//!    control register (Intel: Linux keeps AMD's PerfMonV2 enable bits set
//!    while idle), or EN already set in one of the event selects (or
//!    the ring bits of a fixed counter) it will program;
//! 3. computes the restore list before changing anything — global controls
//!    to 0 first, then every saved register in reverse plan order, the
//!    global controls' saved values last — and registers it for signals
//!    ([`crate::signal`]);
//! 4. applies the plan's writes in order (counters zeroed, offcore-response
//!    filters, event selects, fixed control, global control last).
//!
//! [`Session::read`] returns, per counter slot, the raw value, the delta
//! since the last read and the running total; deltas are taken modulo
//! 2^width (the counter width from CPUID), so a counter that wraps between
//! two reads still gives the exact count. Reading only calls `pread`:
//! [`Session::read_into`] refills a caller's buffer without allocating.
//!
//! The saved values are written back by [`Session::restore`], by `Drop`
//! (a normal return or a panic unwinding through the owner), and by the
//! signal handler. Restoring twice is harmless: it writes the same values.
//!
//! Counter values are restored through the same address they were zeroed
//! at, except that Intel general-purpose counters go through the
//! full-width alias `IA32_A_PMCx` when `IA32_PERF_CAPABILITIES` bit 13 says
//! the CPU has it: through `IA32_PMCx` only bits 31:0 are writable (sign
//! extended), which [`Session::notes`] then says for any saved value that
//! needs more.

use crate::catalogue::{lookup_address, width_mask};
use crate::device::{Mode, MsrDevice};
use crate::error::MsrError;
use crate::plan::{CounterSlot, Plan, RestoreValue, Step};
use crate::signal::{self, Armed, RestoreEntry, Signals};
use pmx_model::encoding::Arch;
use serde::Serialize;

/// `IA32_PERF_CAPABILITIES`.
pub const IA32_PERF_CAPABILITIES: u32 = 0x345;
/// Its FW_WRITE bit: full-width writes through `IA32_A_PMCx`.
pub const FW_WRITE: u64 = 1 << 13;
/// `IA32_PMC0`.
const IA32_PMC0: u32 = 0xC1;
/// `IA32_A_PMC0`.
const IA32_A_PMC0: u32 = 0x4C1;
/// The EN bit of every event-select layout pmx programs (Intel core and
/// uncore, AMD).
const EVTSEL_EN: u64 = 1 << 22;
/// `MSR_UNC_PERF_GLOBAL_CTRL.EN`.
const UNC_GLOBAL_EN: u64 = 1 << 29;

/// How to start a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionOptions {
    /// Program even when the counters look in use (their owner loses them
    /// until the session ends; their registers are restored then).
    pub force: bool,
    /// What SIGINT/SIGTERM/SIGHUP do.
    pub signals: Signals,
}

/// A register's value before the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SavedRegister {
    /// The CPU.
    pub cpu: u32,
    /// The MSR.
    pub address: u32,
    /// Its name.
    pub name: String,
    /// Its value before the session.
    pub value: u64,
}

/// One counter read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CounterReading {
    /// What was read.
    #[serde(flatten)]
    pub slot: CounterSlot,
    /// The counter's value.
    pub raw: u64,
    /// Events since the previous read (modulo 2^width).
    pub delta: u64,
    /// Events since the session started.
    pub total: u64,
}

/// A programmed PMU; restores what it changed when dropped.
#[derive(Debug)]
pub struct Session {
    device: MsrDevice,
    plan: Plan,
    saved: Vec<SavedRegister>,
    restore: Vec<(u32, u32, u64)>,
    armed: Option<Armed>,
    last: Vec<u64>,
    totals: Vec<u64>,
    touched: bool,
    restored: bool,
    notes: Vec<String>,
}

impl Session {
    /// Save, check, and program `plan` through `device` (opened
    /// read-write on every CPU the plan touches).
    pub fn start(
        device: MsrDevice,
        plan: Plan,
        options: &SessionOptions,
    ) -> Result<Session, MsrError> {
        if device.mode() != Mode::ReadWrite {
            let cpu = plan.cpus_touched().first().copied().unwrap_or(0);
            return Err(MsrError::ReadOnly { cpu });
        }
        // 1. Save.
        let mut saved: Vec<(Step, SavedRegister)> = Vec::new();
        for w in &plan.writes {
            if saved
                .iter()
                .any(|(_, s)| s.cpu == w.cpu && s.address == w.address)
            {
                continue;
            }
            let value = device.read(w.cpu, w.address)?;
            saved.push((
                w.step,
                SavedRegister {
                    cpu: w.cpu,
                    address: w.address,
                    name: w.name.clone(),
                    value,
                },
            ));
        }
        for s in &plan.slots {
            // Counters that are read but not written (none today) must
            // still be readable before anything is changed.
            device.read(s.cpu, s.address)?;
        }
        // 2. Check.
        let busy = busy(&plan, &saved);
        if !busy.is_empty() && !options.force {
            return Err(MsrError::Busy(busy));
        }
        // 3. Restore list.
        let mut notes = Vec::new();
        let full_width = plan.pmu.arch == Arch::Intel
            && plan.cpus_touched().first().is_some_and(|&cpu| {
                device
                    .read(cpu, IA32_PERF_CAPABILITIES)
                    .is_ok_and(|v| v & FW_WRITE != 0)
            });
        let mut restore = Vec::new();
        for r in plan.restore_order() {
            let Some((_, s)) = saved
                .iter()
                .find(|(_, s)| s.cpu == r.cpu && s.address == r.address)
            else {
                continue;
            };
            if r.value == RestoreValue::Zero {
                restore.push((s.cpu, s.address, 0));
                continue;
            }
            let mut address = s.address;
            if plan.pmu.arch == Arch::Intel && (IA32_PMC0..IA32_PMC0 + 8).contains(&address) {
                if full_width {
                    address = address - IA32_PMC0 + IA32_A_PMC0;
                } else if !fits_legacy_write(s.value, plan.pmu.widths.general) {
                    notes.push(format!(
                        "cpu {}: {} was {:#x} before; without full-width writes only its bits 31:0 can be put back",
                        s.cpu, s.name, s.value
                    ));
                }
            }
            restore.push((s.cpu, address, s.value));
        }
        let table = restore
            .iter()
            .map(|&(cpu, address, value)| {
                device
                    .raw_target(cpu, address)
                    .map(|(fd, offset)| RestoreEntry { fd, offset, value })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let slots = plan.slots.len();
        let mut session = Session {
            device,
            plan,
            saved: saved.into_iter().map(|(_, s)| s).collect(),
            restore,
            armed: None,
            last: vec![0; slots],
            totals: vec![0; slots],
            touched: false,
            restored: false,
            notes,
        };
        session.armed = signal::arm(table, options.signals)?;
        // 4. Program.
        session.touched = true;
        for i in 0..session.plan.writes.len() {
            let w = &session.plan.writes[i];
            if let Err(e) = session.device.write(w.cpu, w.address, w.new) {
                let _ = session.restore();
                return Err(e);
            }
        }
        Ok(session)
    }

    /// The plan being counted.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The device (for reading other registers, e.g. RAPL, meanwhile).
    pub fn device(&self) -> &MsrDevice {
        &self.device
    }

    /// Every register the session touches, with its value before.
    pub fn saved(&self) -> &[SavedRegister] {
        &self.saved
    }

    /// Things the caller should tell the user (restore limitations).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The signal received under [`Signals::Defer`], if any: stop, report,
    /// and drop the session.
    pub fn interrupted(&self) -> Option<i32> {
        signal::pending()
    }

    /// Read every counter: raw value, delta since the previous read, total.
    pub fn read(&mut self) -> Result<Vec<CounterReading>, MsrError> {
        let mut out = Vec::with_capacity(self.plan.slots.len());
        self.read_into(&mut out)?;
        Ok(out)
    }

    /// [`Self::read`] into `out` (cleared first); allocates nothing once
    /// `out` has room for every slot. Counters are read CPU by CPU, in the
    /// order of [`Plan::slots`].
    pub fn read_into(&mut self, out: &mut Vec<CounterReading>) -> Result<(), MsrError> {
        out.clear();
        for (i, slot) in self.plan.slots.iter().enumerate() {
            let mask = width_mask(slot.width);
            let raw = self.device.read(slot.cpu, slot.address)? & mask;
            let delta = raw.wrapping_sub(self.last[i]) & mask;
            self.last[i] = raw;
            self.totals[i] = self.totals[i].wrapping_add(delta);
            out.push(CounterReading {
                slot: *slot,
                raw,
                delta,
                total: self.totals[i],
            });
        }
        Ok(())
    }

    /// Put every saved register back. Idempotent; on a failed write the
    /// rest are still written and the first error is returned.
    pub fn restore(&mut self) -> Result<(), MsrError> {
        if self.restored || !self.touched {
            self.restored = true;
            self.armed = None;
            return Ok(());
        }
        let mut first = None;
        for &(cpu, address, value) in &self.restore {
            if let Err(e) = self.device.write(cpu, address, value) {
                first.get_or_insert(e);
            }
        }
        self.restored = true;
        // Unregister the signal table only now: a signal during the writes
        // above restores (the same values) and ends the process.
        self.armed = None;
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

/// Whether `value` survives a write through `IA32_PMCx`, which sets bits
/// 31:0 and copies bit 31 into the bits above (up to the width).
fn fits_legacy_write(value: u64, width: u32) -> bool {
    let low = value as u32 as i32 as i64 as u64;
    low & width_mask(width) == value & width_mask(width)
}

/// What in the saved values says someone else is counting.
fn busy(plan: &Plan, saved: &[(Step, SavedRegister)]) -> Vec<String> {
    let mut out = Vec::new();
    for w in &plan.writes {
        let Some((_, s)) = saved
            .iter()
            .find(|(_, s)| s.cpu == w.cpu && s.address == w.address)
        else {
            continue;
        };
        let old = s.value;
        let label = format!("cpu {}: {} = {:#x}", w.cpu, w.name, old);
        let is_uncore_global = lookup_address(w.address, Some(plan.pmu.arch))
            .is_some_and(|m| m.def.template == "MSR_UNC_PERF_GLOBAL_CTRL");
        match w.step {
            Step::GlobalControl if is_uncore_global => {
                if old & UNC_GLOBAL_EN != 0 {
                    out.push(format!("{label} already enables the uncore counters"));
                }
            }
            // Linux sets every PerfMonV2 enable bit whenever its PMU is
            // enabled (amd_pmu_v2_enable_all), counting or not: on AMD only
            // an event select's EN says a counter is in use.
            Step::GlobalControl if plan.pmu.arch == Arch::Amd => {}
            Step::GlobalControl => {
                let both = old & w.new;
                if both != 0 {
                    let names: Vec<String> = w
                        .fields
                        .iter()
                        .filter(|f| f.field.mask() & both != 0)
                        .map(|f| f.field.name.to_string())
                        .collect();
                    out.push(format!("{label} already enables {}", names.join(", ")));
                }
            }
            Step::EventSelect => {
                if old & EVTSEL_EN != 0 {
                    out.push(format!("{label} has EN set"));
                }
            }
            Step::FixedControl => {
                let used: Vec<u32> = (0..16).filter(|i| (w.new >> (4 * i)) & 0xf != 0).collect();
                let enabled: Vec<String> = used
                    .iter()
                    .filter(|&&i| (old >> (4 * i)) & 0x3 != 0)
                    .map(|i| format!("fixed counter {i}"))
                    .collect();
                if !enabled.is_empty() {
                    out.push(format!("{label} already enables {}", enabled.join(", ")));
                }
            }
            Step::ZeroCounter | Step::OffcoreFilter => {}
        }
    }
    out
}

impl Plan {
    /// Read the current value of every register the plan writes, where the
    /// device can (others stay `None`). Reads only. (Here rather than in
    /// [`mod@crate::plan`], which makes plans without touching a device.)
    pub fn fill_old(&mut self, device: &MsrDevice) {
        for w in &mut self.writes {
            w.old = device.read(w.cpu, w.address).ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_counter_writes() {
        assert!(fits_legacy_write(0, 48));
        assert!(fits_legacy_write(0x7fff_ffff, 48));
        assert!(fits_legacy_write(0xffff_ffff_ffff, 48));
        assert!(!fits_legacy_write(0x1_0000_0000, 48));
        assert!(!fits_legacy_write(0x8000_0000, 48));
    }
}
