//! `pmx msr read` and `write`: the register resolved for this CPU's
//! vendor, the selected CPUs folded into the register's scope domains, and
//! one read (or write) per domain.

use super::error::MsrCommandError;
use pmx_model::encoding::Arch;
use pmx_model::register::FieldValue;
use pmx_model::topology::{parse_cpu_list, Topology};
use pmx_msr::allow::{check, WritePolicy};
use pmx_msr::catalogue::{parse_u64, resolve, CounterWidths, Register, Role};
use pmx_msr::rapl::RaplUnits;
use pmx_msr::{domains, Domain, DomainId, Mode, MsrDevice, MsrError, MsrRoot};
use pmx_sys::{NativeCpuid, PmuCaps, SysRoot};
use std::path::{Path, PathBuf};

/// Where and on which CPUs: what `read` and `write` share.
#[derive(Debug, Clone)]
pub struct MsrTarget {
    /// CPUs in the kernel's list syntax; with neither this nor `all`, CPU 0.
    pub cpus: Option<String>,
    /// All online CPUs.
    pub all: bool,
    /// Directory of the msr devices (`cpuN/msr`).
    pub msr_root: PathBuf,
    /// Register set; `None`: this CPU's vendor.
    pub arch: Option<Arch>,
    /// Root holding `sys/` instead of `/` (tests).
    pub sysfs_root: Option<PathBuf>,
}

/// What to read.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// An address or a register name.
    pub register: String,
    /// Where.
    pub target: MsrTarget,
    /// Only these bits (`HI:LO` or `N`).
    pub field: Option<String>,
}

/// What to write.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// An address or a register name.
    pub register: String,
    /// The value (`0x…`, `0b…` or decimal).
    pub value: String,
    /// Where.
    pub target: MsrTarget,
    /// Write outside the allow-list.
    pub unsafe_write: bool,
}

/// One domain's read.
#[derive(Debug, Clone)]
pub struct DomainRead {
    /// The domain (and the CPU it was read on).
    pub domain: Domain,
    /// The value.
    pub value: u64,
    /// For a RAPL energy register, the value in joules.
    pub joules: Option<f64>,
    /// The fields, where the register has a layout.
    pub fields: Option<Vec<FieldValue>>,
}

/// The answer of [`read`].
#[derive(Debug)]
pub struct Reading {
    /// The register read.
    pub register: Register,
    /// The bits asked for.
    pub field: Option<(u32, u32)>,
    /// Per domain, in order, up to the first that failed.
    pub domains: Vec<DomainRead>,
    /// Why the next domain could not be read.
    pub error: Option<MsrError>,
    /// The width of the widest domain label.
    pub label_width: usize,
}

/// One domain's write.
#[derive(Debug, Clone)]
pub struct DomainWrite {
    /// The domain.
    pub domain: Domain,
    /// The value before, when it could be read.
    pub old: Option<u64>,
}

/// The answer of [`write()`].
#[derive(Debug)]
pub struct Writing {
    /// The register written.
    pub register: Register,
    /// The value written.
    pub value: u64,
    /// Per domain, in order, up to the first that failed.
    pub domains: Vec<DomainWrite>,
    /// Why the devices could not be opened, or the next domain written.
    pub error: Option<MsrCommandError>,
    /// The refusal `--unsafe` overrode.
    pub overridden: Option<String>,
    /// The width of the widest domain label.
    pub label_width: usize,
}

/// Read the register on every domain of the target.
pub fn read(opts: &ReadOptions) -> Result<Reading, MsrCommandError> {
    let caps = host_caps();
    let arch = opts.target.arch.or_else(|| host_arch(&caps));
    let register =
        resolve(&opts.register, arch).map_err(|e| MsrCommandError::Usage(e.to_string()))?;
    let field = opts.field.as_deref().map(parse_field).transpose()?;
    let (doms, device, label_width) = open_domains(&opts.target, &register, Mode::Read)?;
    let mut reading = Reading {
        register,
        field,
        domains: Vec::new(),
        error: None,
        label_width,
    };
    for domain in doms {
        let value = match device.read(domain.cpu, reading.register.address) {
            Ok(v) => v,
            Err(e) => {
                reading.error = Some(e);
                break;
            }
        };
        reading.domains.push(DomainRead {
            joules: energy_joules(&device, domain.cpu, &reading.register, value),
            fields: reading.register.msr.and_then(|m| m.decode(value)),
            domain,
            value,
        });
    }
    Ok(reading)
}

/// Write the value on every domain of the target, after the allow-list's
/// check (overridden by `unsafe_write`).
pub fn write(opts: &WriteOptions) -> Result<Writing, MsrCommandError> {
    let caps = host_caps();
    let arch = opts.target.arch.or_else(|| host_arch(&caps));
    let register =
        resolve(&opts.register, arch).map_err(|e| MsrCommandError::Usage(e.to_string()))?;
    let value = parse_u64(&opts.value).map_err(|_| {
        MsrCommandError::Usage(format!(
            "'{}' is not a 64-bit value (0x…, 0b… or decimal)",
            opts.value
        ))
    })?;
    let policy = write_policy(&caps, arch);
    let overridden = match check(&register, value, &policy) {
        Ok(()) => None,
        Err(refusal) if opts.unsafe_write => Some(refusal.to_string()),
        Err(refusal) => return Err(MsrCommandError::Refused(refusal.to_string())),
    };
    let mut w = Writing {
        register,
        value,
        domains: Vec::new(),
        error: None,
        overridden,
        label_width: 0,
    };
    // After the check, a failure is part of the answer: the override's
    // warning comes first.
    let (doms, device) = match open_domains(&opts.target, &w.register, Mode::ReadWrite) {
        Ok((doms, device, width)) => {
            w.label_width = width;
            (doms, device)
        }
        Err(e) => {
            w.error = Some(e);
            return Ok(w);
        }
    };
    for domain in doms {
        let old = device.read(domain.cpu, w.register.address).ok();
        if let Err(source) = device.write(domain.cpu, w.register.address, value) {
            w.error = Some(MsrCommandError::Write {
                domain: domain.id.to_string(),
                register: w.register.label(),
                source: Box::new(source),
            });
            break;
        }
        w.domains.push(DomainWrite { domain, old });
    }
    Ok(w)
}

/// The allow-list for `arch`, with this CPU's counter counts and widths
/// when it is of that vendor.
fn write_policy(caps: &Option<PmuCaps>, arch: Option<Arch>) -> WritePolicy {
    let mut policy = WritePolicy::for_vendor(arch);
    if let Some(c) = caps.as_ref().filter(|_| host_arch(caps) == arch) {
        if let Some(counters) = c.counters {
            policy.general = Some(counters.general);
            policy.fixed = Some(counters.fixed);
            policy.widths = CounterWidths {
                general: nz(counters.general_width),
                fixed: nz(counters.fixed_width),
            };
        }
    }
    policy
}

fn nz(w: u32) -> u32 {
    if w == 0 {
        pmx_msr::catalogue::DEFAULT_COUNTER_WIDTH
    } else {
        w
    }
}

/// This CPU's PMU as CPUID describes it.
fn host_caps() -> Option<PmuCaps> {
    PmuCaps::decode(&NativeCpuid)
}

fn host_arch(caps: &Option<PmuCaps>) -> Option<Arch> {
    caps.as_ref()
        .and_then(|c| Arch::from_name(c.vendor.cpuid_str()))
}

pub(super) fn sys_root(flag: &Option<PathBuf>) -> SysRoot {
    flag.as_ref().map(SysRoot::new).unwrap_or_default()
}

pub(super) fn topology(root: &SysRoot) -> Topology {
    pmx_sys::topology::read_topology(root, &mut Vec::new())
}

/// The msr devices under `dir` (the host's for the default directory),
/// with sysfs under `sysfs_root` when given.
pub(super) fn msr_root(dir: &Path, sysfs_root: &Option<PathBuf>) -> MsrRoot {
    let root = if dir == Path::new(MsrRoot::DEFAULT_DIR) {
        MsrRoot::host()
    } else {
        MsrRoot::new(dir)
    };
    match sysfs_root {
        Some(r) => root.with_sysfs(r.join("sys")),
        None => root,
    }
}

/// The CPUs an msr command works on: the list given with `flag`, else the
/// online CPUs, else those with an msr device, else CPU 0.
pub fn select_cpus(
    list: Option<&str>,
    flag: &str,
    topo: &Topology,
    root: &MsrRoot,
) -> Result<Vec<u32>, MsrCommandError> {
    if let Some(text) = list {
        let cpus = parse_cpu_list(text)
            .map_err(|e| MsrCommandError::Usage(format!("{flag} {text}: {e}")))?;
        if cpus.is_empty() {
            return Err(MsrCommandError::Usage(format!("{flag} {text:?}: no CPU")));
        }
        return Ok(cpus);
    }
    Ok(crate::stat_msr::default_cpus(topo, root))
}

/// The selected CPUs folded into `register`'s scope domains (one CPU each),
/// the device opened on those CPUs, and the width of the domain labels.
fn open_domains(
    target: &MsrTarget,
    register: &Register,
    mode: Mode,
) -> Result<(Vec<Domain>, MsrDevice, usize), MsrCommandError> {
    let topo = topology(&sys_root(&target.sysfs_root));
    let root = msr_root(&target.msr_root, &target.sysfs_root);
    let cpus = if target.cpus.is_none() && !target.all {
        vec![0]
    } else {
        select_cpus(target.cpus.as_deref(), "-c", &topo, &root)?
    };
    let doms = domains(register.scope(), &cpus, &topo);
    let on: Vec<u32> = doms.iter().map(|d| d.cpu).collect();
    let device = MsrDevice::open(&root, &on, mode)?;
    let width = doms
        .iter()
        .map(|d| domain_label(d).len())
        .max()
        .unwrap_or(0);
    Ok((doms, device, width))
}

/// For a RAPL energy register, the value in joules (the unit register read
/// on the same CPU); `None` otherwise or when the unit cannot be read.
fn energy_joules(device: &MsrDevice, cpu: u32, register: &Register, value: u64) -> Option<f64> {
    let msr = register.msr?;
    if msr.def.role != Role::Energy {
        return None;
    }
    let unit_addr = match msr.def.vendor? {
        Arch::Intel => 0x606,
        Arch::Amd => 0xC001_0299,
    };
    let units = RaplUnits::decode(device.read(cpu, unit_addr).ok()?);
    Some(units.joules(value & 0xffff_ffff))
}

/// `HI:LO` or `N` → (hi, lo): the bits `--field` selects.
pub fn parse_field(text: &str) -> Result<(u32, u32), MsrCommandError> {
    let bad = || {
        MsrCommandError::Usage(format!(
            "--field {text}: give bits as HI:LO (63:32) or one bit N"
        ))
    };
    let (hi, lo) = match text.split_once(':') {
        Some((h, l)) => (h.trim().parse::<u32>(), l.trim().parse::<u32>()),
        None => (text.trim().parse::<u32>(), text.trim().parse::<u32>()),
    };
    let (hi, lo) = (hi.map_err(|_| bad())?, lo.map_err(|_| bad())?);
    if hi > 63 || lo > hi {
        return Err(bad());
    }
    Ok((hi, lo))
}

/// Bits `hi:lo` of `value`, shifted down.
pub fn extract(value: u64, (hi, lo): (u32, u32)) -> u64 {
    let width = hi - lo + 1;
    let mask = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    (value >> lo) & mask
}

/// How a domain is shown: `cpu 3`, or `package 0 (cpu 0)`.
pub fn domain_label(d: &Domain) -> String {
    match d.id {
        DomainId::Cpu { .. } => d.id.to_string(),
        _ => format!("{} (cpu {})", d.id, d.cpu),
    }
}
