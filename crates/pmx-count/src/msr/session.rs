//! A program's own MSR session: [`MsrSession`] opens the msr devices of
//! some CPUs, reads registers by name or address, programs an event list
//! with the plan `pmx msr plan` shows, reads the programmed counters, and
//! restores every register it changed (on [`MsrSession::restore`], on
//! drop, and on SIGINT/SIGTERM/SIGHUP). It is what the C API's
//! `pmx_msr_*` calls and the Python `pmx` package stand on.
//!
//! ```
//! use pmx_count::msr::{MsrSession, MsrSessionOptions};
//! match MsrSession::open(&MsrSessionOptions::default()) {
//!     Ok(mut s) => {
//!         let cpu = s.cpus()[0];
//!         println!("TSC on cpu {cpu}: {:#x}", s.read("IA32_TIME_STAMP_COUNTER", cpu)?);
//!     }
//!     // No msr driver, or not root: the error says which.
//!     Err(e) => println!("{e}"),
//! }
//! # Ok::<(), pmx_count::msr::MsrCommandError>(())
//! ```

use super::access::{msr_root, sys_root, topology};
use super::error::MsrCommandError;
use crate::stat_msr::{msr_event, pmu_counters};
use pmx_model::cpu::CpuId;
use pmx_model::encoding::Arch;
use pmx_model::topology::{parse_cpu_list, Topology};
use pmx_msr::catalogue::{resolve, Register, Scope};
use pmx_msr::{
    domains, CounterReading, Domain, Mode, MsrDevice, MsrRoot, Plan, Session, SessionOptions,
    Signals,
};
use std::path::PathBuf;

/// Where an [`MsrSession`] works.
#[derive(Debug, Clone, Default)]
pub struct MsrSessionOptions {
    /// CPUs in the kernel's list syntax (`0-3,8`); `None`: every online
    /// CPU.
    pub cpus: Option<String>,
    /// The msr devices' directory (default `/dev/cpu`; tests: fixture
    /// files `cpuN/msr`, register N at byte 8·N).
    pub msr_root: Option<PathBuf>,
    /// Root holding `sys/` instead of `/` (tests).
    pub sysfs_root: Option<PathBuf>,
    /// Resolve events and registers for this CPU instead of the one
    /// running.
    pub cpu: Option<CpuId>,
    /// Program even when the counters look in use.
    pub force: bool,
    /// Where Intel's tables are ([`pmx_events::EventsDirDefault`]:
    /// `$PMX_EVENTS_DIR`, else the cache, read by the caller).
    pub events_dir_default: pmx_events::EventsDirDefault,
}

/// Open msr devices, and the counters programmed through them.
#[derive(Debug)]
pub struct MsrSession {
    opts: MsrSessionOptions,
    root: MsrRoot,
    topology: Topology,
    cpus: Vec<u32>,
    device: MsrDevice,
    programmed: Option<Session>,
}

impl MsrSession {
    /// Open the msr devices of the CPUs (read-only until
    /// [`MsrSession::program`]); fails with the driver's or the
    /// permission's reason.
    pub fn open(opts: &MsrSessionOptions) -> Result<MsrSession, MsrCommandError> {
        let topology = topology(&sys_root(&opts.sysfs_root));
        let dir = opts
            .msr_root
            .clone()
            .unwrap_or_else(|| PathBuf::from(MsrRoot::DEFAULT_DIR));
        let root = msr_root(&dir, &opts.sysfs_root);
        let cpus = match &opts.cpus {
            Some(text) => {
                let c = parse_cpu_list(text)
                    .map_err(|e| MsrCommandError::Usage(format!("cpus {text:?}: {e}")))?;
                if c.is_empty() {
                    return Err(MsrCommandError::Usage(format!("cpus {text:?}: no CPU")));
                }
                c
            }
            None => crate::stat_msr::default_cpus(&topology, &root),
        };
        let device = MsrDevice::open(&root, &cpus, Mode::Read)?;
        Ok(MsrSession {
            opts: opts.clone(),
            root,
            topology,
            cpus,
            device,
            programmed: None,
        })
    }

    /// The CPUs opened.
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    fn target(&self) -> Result<pmx_events::Target, MsrCommandError> {
        match &self.opts.cpu {
            Some(cpu) => Ok(pmx_events::Target {
                cpu: cpu.clone(),
                host: false,
            }),
            None => crate::database::host_cpu_id()
                .map(|cpu| pmx_events::Target { cpu, host: true })
                .ok_or_else(|| {
                    MsrCommandError::Usage("this machine has no CPUID to name it by".into())
                }),
        }
    }

    fn arch(&self) -> Option<Arch> {
        self.target().ok().and_then(|t| t.arch())
    }

    /// Read `register` (a name such as `IA32_TIME_STAMP_COUNTER` or an address such as
    /// `0x10`) on `cpu`, one of [`MsrSession::cpus`].
    pub fn read(&self, register: &str, cpu: u32) -> Result<u64, MsrCommandError> {
        let reg =
            resolve(register, self.arch()).map_err(|e| MsrCommandError::Usage(e.to_string()))?;
        Ok(self.device.read(cpu, reg.address)?)
    }

    /// `register` resolved for this CPU's vendor, and the session's CPUs
    /// folded into `scope`'s domains (one CPU each).
    pub fn domains(
        &self,
        register: &str,
        scope: Scope,
    ) -> Result<(Register, Vec<Domain>), MsrCommandError> {
        let reg =
            resolve(register, self.arch()).map_err(|e| MsrCommandError::Usage(e.to_string()))?;
        Ok((reg, domains(scope, &self.cpus, &self.topology)))
    }

    /// The opened devices (read-only), for reading registers elsewhere
    /// (a `pmx::recorder::MsrHandle`).
    /// Anything programmed is restored first.
    pub fn into_device(self) -> MsrDevice {
        self.device
    }

    /// Program `events` (an `-e` list) on the session's CPUs with the
    /// plan `pmx msr plan` shows: the registers saved, other users
    /// checked, the counters zeroed and enabled. A second call restores
    /// the first plan before programming the new one.
    pub fn program(&mut self, events: &str) -> Result<&Plan, MsrCommandError> {
        self.restore()?;
        let specs = super::event_specs(&[events.to_string()])?;
        let target = self.target()?;
        let arch = super::msr_arch(&target)?;
        let db = pmx_events::Database::load(
            target.clone(),
            &pmx_events::LoadOptions {
                events_dir_default: self.opts.events_dir_default.clone(),
                ..Default::default()
            },
        );
        let planned = specs
            .iter()
            .map(|s| msr_event(&db, s, arch).map_err(|e| MsrCommandError::Usage(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        let pmu = pmu_counters(&target, arch);
        let plan = pmx_msr::plan(&planned, &self.cpus, &pmu, &self.topology)
            .map_err(|e| MsrCommandError::Usage(e.to_string()))?;
        let device = MsrDevice::open(&self.root, &plan.cpus_touched(), Mode::ReadWrite)?;
        let session = Session::start(
            device,
            plan,
            &SessionOptions {
                force: self.opts.force,
                signals: Signals::RestoreAndExit,
            },
        )?;
        Ok(self.programmed.insert(session).plan())
    }

    /// The programmed counters: per counter slot, the raw value, the
    /// change since the previous read (modulo the counter's width) and
    /// the total since [`MsrSession::program`]. Empty before it.
    pub fn read_counters(&mut self) -> Result<Vec<CounterReading>, MsrCommandError> {
        match &mut self.programmed {
            Some(s) => Ok(s.read()?),
            None => Ok(Vec::new()),
        }
    }

    /// Put back every register [`MsrSession::program`] changed (also done
    /// on drop); harmless when nothing is programmed.
    pub fn restore(&mut self) -> Result<(), MsrCommandError> {
        if let Some(mut s) = self.programmed.take() {
            s.restore()?;
        }
        Ok(())
    }
}
