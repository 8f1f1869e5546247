//! `pmx msr read|write|plan`: raw MSR access through `/dev/cpu/N/msr`.
//!
//! `read` and `write` work like rdmsr/wrmsr, with the PMU registers' names,
//! their scope (a package register is read once per package) and their
//! fields decoded through the register model. `write` only touches the
//! vendor's PMU registers and their writable bits unless `--unsafe`.
//! `plan` prints every write `pmx stat --backend msr` would make, and
//! makes none. The work is in `pmx-msr`; this module turns flags into
//! calls and renders the answers.

use crate::db::DbArgs;
use crate::exit::{UsageError, OK};
use anyhow::Context as _;
use pmx::stat_msr::{msr_event, pmu_counters};
use pmx_model::encoding::Arch;
use pmx_model::register::{FieldKind, FieldValue};
use pmx_model::spec::EventSpec;
use pmx_model::topology::{format_cpu_list, parse_cpu_list, Topology};
use pmx_msr::allow::{check, WritePolicy};
use pmx_msr::catalogue::{parse_u64, resolve, CounterWidths, Register, Role};
use pmx_msr::rapl::RaplUnits;
use pmx_msr::{domains, plan, Domain, Mode, MsrDevice, MsrEvent, MsrRoot, Plan};
use pmx_sys::{NativeCpuid, PmuCaps, SysRoot};
use serde_json::json;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Arguments of `pmx msr`.
#[derive(Debug, clap::Args)]
pub struct MsrArgs {
    #[command(subcommand)]
    pub command: MsrCommand,
}

/// The `pmx msr` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum MsrCommand {
    /// Read an MSR (like rdmsr), once per CPU, core or package as its scope
    /// says.
    Read(ReadArgs),
    /// Write an MSR (like wrmsr); only the vendor's PMU registers and their
    /// writable bits, unless --unsafe.
    Write(WriteArgs),
    /// Print every write `pmx stat --backend msr` would make for the
    /// events, without making any.
    Plan(PlanArgs),
}

/// Where and on which CPUs: the flags `read` and `write` share.
#[derive(Debug, Clone, clap::Args)]
pub struct Target {
    /// CPUs, in the kernel's list syntax (0-3,8). Default: CPU 0.
    #[arg(short = 'c', short_alias = 'C', long = "cpus", value_name = "LIST")]
    pub cpus: Option<String>,
    /// All online CPUs.
    #[arg(short = 'a', long = "all-cpus", conflicts_with = "cpus")]
    pub all: bool,
    /// Directory of the msr devices (cpuN/msr).
    #[arg(long, value_name = "DIR", default_value = MsrRoot::DEFAULT_DIR)]
    pub msr_root: PathBuf,
    /// Register set: intel or amd. Default: this CPU's vendor.
    #[arg(long, value_parser = crate::parse_arch)]
    pub arch: Option<Arch>,
    /// Root holding sys/ (topology, lockdown) instead of / (for tests).
    #[arg(long, value_name = "DIR", hide = true)]
    pub sysfs_root: Option<PathBuf>,
}

/// Arguments of `pmx msr read`.
#[derive(Debug, clap::Args)]
pub struct ReadArgs {
    /// The MSR: an address (0x38f, 911) or a name (IA32_PERF_GLOBAL_CTRL,
    /// ia32_perfevtsel0).
    #[arg(value_name = "ADDR|NAME")]
    pub register: String,
    #[command(flatten)]
    pub target: Target,
    /// Print only bits HI:LO (or one bit N), shifted down.
    #[arg(long, value_name = "HI:LO")]
    pub field: Option<String>,
    /// Print every field through the register model, where it has a layout.
    #[arg(long)]
    pub decode: bool,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `pmx msr write`.
#[derive(Debug, clap::Args)]
pub struct WriteArgs {
    /// The MSR: an address or a name.
    #[arg(value_name = "ADDR|NAME")]
    pub register: String,
    /// The value (0x…, 0b… or decimal).
    #[arg(value_name = "VALUE")]
    pub value: String,
    #[command(flatten)]
    pub target: Target,
    /// Write even outside the allow-list (any MSR, any bit). Dangerous.
    #[arg(long = "unsafe")]
    pub unsafe_write: bool,
}

/// Arguments of `pmx msr plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// Events, as for pmx stat (cpu/event=0x2e,umask=0x41/u,instructions).
    #[arg(short = 'e', long = "event", value_name = "EVENTS", required = true)]
    pub events: Vec<String>,
    /// CPUs to program, in the kernel's list syntax. Default: every online
    /// CPU.
    #[arg(short = 'c', short_alias = 'C', long = "cpus", value_name = "LIST")]
    pub cpus: Option<String>,
    /// Read the current values from the msr devices under DIR, where
    /// readable (reads only).
    #[arg(long, value_name = "DIR", default_value = MsrRoot::DEFAULT_DIR)]
    pub msr_root: PathBuf,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

/// Run `pmx msr …`.
pub fn run(args: &MsrArgs) -> anyhow::Result<i32> {
    match &args.command {
        MsrCommand::Read(a) => read(a),
        MsrCommand::Write(a) => write(a),
        MsrCommand::Plan(a) => run_plan(a),
    }
}

// ---------------------------------------------------------------------------
// Shared.

fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

fn sys_root(flag: &Option<PathBuf>) -> SysRoot {
    flag.as_ref().map(SysRoot::new).unwrap_or_default()
}

fn topology(root: &SysRoot) -> Topology {
    pmx_sys::topology::read_topology(root, &mut Vec::new())
}

fn msr_root(dir: &Path, sysfs_root: &Option<PathBuf>) -> MsrRoot {
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

/// This CPU's PMU as CPUID describes it.
fn host_caps() -> Option<PmuCaps> {
    PmuCaps::decode(&NativeCpuid)
}

fn host_arch(caps: &Option<PmuCaps>) -> Option<Arch> {
    caps.as_ref()
        .and_then(|c| Arch::from_name(c.vendor.cpuid_str()))
}

/// The selected CPUs: `-c`, `-a` (online CPUs; the devices under the root
/// when sysfs says nothing), or CPU 0.
fn select_cpus(t: &Target, topo: &Topology, root: &MsrRoot) -> anyhow::Result<Vec<u32>> {
    if t.cpus.is_none() && !t.all {
        return Ok(vec![0]);
    }
    msr_cpus(t.cpus.as_deref(), "-c", topo, root)
}

/// The CPUs an msr command works on: the list given with `flag`, else the
/// online CPUs, else those with an msr device, else CPU 0.
pub(crate) fn msr_cpus(
    list: Option<&str>,
    flag: &str,
    topo: &Topology,
    root: &MsrRoot,
) -> anyhow::Result<Vec<u32>> {
    if let Some(text) = list {
        let cpus = parse_cpu_list(text).map_err(|e| usage(format!("{flag} {text}: {e}")))?;
        if cpus.is_empty() {
            return Err(usage(format!("{flag} {text:?}: no CPU")));
        }
        return Ok(cpus);
    }
    Ok(pmx::stat_msr::default_cpus(topo, root))
}

/// `HI:LO` or `N` → (hi, lo).
fn parse_field(text: &str) -> anyhow::Result<(u32, u32)> {
    let bad = || {
        usage(format!(
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

fn extract(value: u64, (hi, lo): (u32, u32)) -> u64 {
    let width = hi - lo + 1;
    let mask = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    (value >> lo) & mask
}

/// `EventSelect=0x2e UMASK=0x41 USR=1 EN=1`: the non-zero fields.
fn compact_fields(fields: &[FieldValue]) -> String {
    fields
        .iter()
        .filter(|f| f.value != 0)
        .map(|f| match f.field.kind {
            FieldKind::Flag => format!("{}=1", f.field.name),
            FieldKind::Value => format!("{}={:#x}", f.field.name, f.value),
            FieldKind::Reserved => format!("RESERVED[{}]={:#x}", f.field.bits(), f.value),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn domain_label(d: &Domain) -> String {
    match d.id {
        pmx_msr::DomainId::Cpu { .. } => d.id.to_string(),
        _ => format!("{} (cpu {})", d.id, d.cpu),
    }
}

// ---------------------------------------------------------------------------
// read

/// The selected CPUs folded into `register`'s scope domains (one CPU each),
/// the device opened on those CPUs, and the width of the domain labels.
fn open_domains(
    target: &Target,
    register: &Register,
    mode: Mode,
) -> anyhow::Result<(Vec<Domain>, MsrDevice, usize)> {
    let topo = topology(&sys_root(&target.sysfs_root));
    let root = msr_root(&target.msr_root, &target.sysfs_root);
    let cpus = select_cpus(target, &topo, &root)?;
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

fn read(args: &ReadArgs) -> anyhow::Result<i32> {
    let caps = host_caps();
    let arch = args.target.arch.or_else(|| host_arch(&caps));
    let register = resolve(&args.register, arch).map_err(|e| usage(e.to_string()))?;
    let field = args.field.as_deref().map(parse_field).transpose()?;
    let (doms, device, width) = open_domains(&args.target, &register, Mode::Read)?;
    let mut out = std::io::stdout().lock();
    for d in &doms {
        let value = device.read(d.cpu, register.address)?;
        let energy = energy_joules(&device, d.cpu, &register, value);
        let decoded = register.msr.and_then(|m| m.decode(value));
        if args.json {
            let mut obj = json!({
                "domain": d.id,
                "cpu": d.cpu,
                "cpus": d.cpus,
                "register": register.msr.map(|m| m.name()),
                "address": format!("{:#x}", register.address),
                "scope": register.scope().name(),
                "value": value,
                "hex": format!("{value:#x}"),
            });
            if let Some(f) = field {
                obj["field"] =
                    json!({"bits": format!("{}:{}", f.0, f.1), "value": extract(value, f)});
            }
            if args.decode {
                if let Some(fields) = &decoded {
                    obj["fields"] = crate::fields::json(fields);
                }
            }
            if let Some(j) = energy {
                obj["joules"] = json!(j);
            }
            writeln!(out, "{obj}")?;
            continue;
        }
        let shown = match field {
            Some(f) => format!("{:#x} (bits {}:{})", extract(value, f), f.0, f.1),
            None => format!("{value:#018x}"),
        };
        let mut line = format!(
            "{:<width$}  {} = {shown}",
            domain_label(d),
            register.label()
        );
        if let Some(j) = energy {
            line.push_str(&format!("  ({j:.6} J)"));
        }
        writeln!(out, "{line}")?;
        if args.decode {
            match &decoded {
                Some(fields) => write!(out, "{}", crate::fields::table(fields, "    "))?,
                None => writeln!(
                    out,
                    "    (pmx has no field layout for {})",
                    register.label()
                )?,
            }
        }
    }
    Ok(OK)
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

// ---------------------------------------------------------------------------
// write

fn write(args: &WriteArgs) -> anyhow::Result<i32> {
    let caps = host_caps();
    let arch = args.target.arch.or_else(|| host_arch(&caps));
    let register = resolve(&args.register, arch).map_err(|e| usage(e.to_string()))?;
    let value = parse_u64(&args.value).map_err(|_| {
        usage(format!(
            "'{}' is not a 64-bit value (0x…, 0b… or decimal)",
            args.value
        ))
    })?;
    let mut policy = WritePolicy::for_vendor(arch);
    if let Some(c) = caps.as_ref().filter(|_| host_arch(&caps) == arch) {
        if let Some(counters) = c.counters {
            policy.general = Some(counters.general);
            policy.fixed = Some(counters.fixed);
            policy.widths = CounterWidths {
                general: nz(counters.general_width),
                fixed: nz(counters.fixed_width),
            };
        }
    }
    if let Err(refusal) = check(&register, value, &policy) {
        if !args.unsafe_write {
            anyhow::bail!("refusing to write: {refusal} (--unsafe writes anyway)");
        }
        eprintln!(
            "pmx: WARNING: --unsafe: {refusal}. Writing it anyway: a wrong value in an MSR can hang or reset the machine, corrupt data, or weaken its security."
        );
    }
    let (doms, device, width) = open_domains(&args.target, &register, Mode::ReadWrite)?;
    let mut out = std::io::stdout().lock();
    for d in &doms {
        let old = device.read(d.cpu, register.address).ok();
        device
            .write(d.cpu, register.address, value)
            .with_context(|| format!("{}: writing {}", d.id, register.label()))?;
        let old = old.map_or_else(|| "?".to_string(), |v| format!("{v:#x}"));
        writeln!(
            out,
            "{:<width$}  {}: {old} → {value:#x}",
            domain_label(d),
            register.label()
        )?;
    }
    Ok(OK)
}

fn nz(w: u32) -> u32 {
    if w == 0 {
        pmx_msr::catalogue::DEFAULT_COUNTER_WIDTH
    } else {
        w
    }
}

// ---------------------------------------------------------------------------
// plan

fn run_plan(args: &PlanArgs) -> anyhow::Result<i32> {
    let mut specs: Vec<EventSpec> = Vec::new();
    for list in &args.events {
        for g in pmx::parse_event_list(list).map_err(|e| usage(e.to_string()))? {
            specs.extend(g.members);
        }
    }
    let target = args.db.target()?;
    let Some(arch) = target.arch() else {
        return Err(usage(format!(
            "{} is not an x86 CPU: the msr backend programs Intel and AMD PMUs",
            target.cpu
        )));
    };
    let db = args.db.load()?;
    let events = specs
        .iter()
        .map(|s| msr_event(&db, s, arch).map_err(|e| usage(e.to_string())))
        .collect::<anyhow::Result<Vec<_>>>()?;

    let pmu = pmu_counters(&target, arch);
    let sys = sys_root(&args.db.sysfs_root);
    let topo = topology(&sys);
    let cpus = match &args.cpus {
        Some(text) => {
            let c = parse_cpu_list(text).map_err(|e| usage(format!("-c {text}: {e}")))?;
            if c.is_empty() {
                return Err(usage(format!("-c {text:?}: no CPU")));
            }
            c
        }
        None => {
            let online = topo.online_cpus();
            if online.is_empty() {
                vec![0]
            } else {
                online
            }
        }
    };
    let mut p = plan(&events, &cpus, &pmu, &topo).map_err(|e| usage(e.to_string()))?;
    let root = msr_root(&args.msr_root, &args.db.sysfs_root);
    let old_values = match MsrDevice::open(&root, &p.cpus_touched(), Mode::Read) {
        Ok(dev) => {
            p.fill_old(&dev);
            None
        }
        Err(e) => Some(e.to_string()),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let mut text = serde_json::to_string_pretty(&json!({
            "cpu": target.cpu.to_string(),
            "plan": p,
            "old_values_unknown": old_values,
            "encoded_notes": events.iter().map(|e| &e.encoded.notes).collect::<Vec<_>>(),
        }))?;
        text.push('\n');
        out.write_all(text.as_bytes())?;
        return Ok(OK);
    }
    write!(
        out,
        "{}",
        render_plan(&p, &target.cpu.to_string(), &events, old_values.as_deref())
    )?;
    Ok(OK)
}

fn render_plan(p: &Plan, cpu: &str, events: &[MsrEvent], old_unknown: Option<&str>) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let arch = pmx_msr::catalogue::arch_name(p.pmu.arch);
    let _ = writeln!(
        s,
        "plan for {cpu} ({arch}): {} event{} on cpu {}",
        p.events.len(),
        if p.events.len() == 1 { "" } else { "s" },
        format_cpu_list(&p.cpus)
    );
    let mut counters = format!(
        "{} general-purpose ({} bits)",
        p.pmu.general, p.pmu.widths.general
    );
    if p.pmu.fixed > 0 {
        counters.push_str(&format!(
            ", {} fixed ({} bits)",
            p.pmu.fixed, p.pmu.widths.fixed
        ));
    }
    if p.pmu.global_control {
        counters.push_str(", global control");
    }
    let _ = writeln!(s, "counters: {counters}; {}", p.pmu.source);
    let _ = writeln!(
        s,
        "nothing is written: this is what `pmx stat --backend msr` would do"
    );
    if let Some(why) = old_unknown {
        let _ = writeln!(s, "old values unknown: {why}");
    }
    let _ = writeln!(s, "\nevents");
    let name_w = p.events.iter().map(|e| e.name.len()).max().unwrap_or(0);
    for (i, e) in p.events.iter().enumerate() {
        let how = if e.control_name == "IA32_FIXED_CTR_CTRL" {
            format!(
                "fixed-counter field {:#x} in {}",
                e.control_value, e.control_name
            )
        } else {
            format!("{} = {:#x}", e.control_name, e.control_value)
        };
        let _ = writeln!(
            s,
            "  {:<name_w$}  {} ({:#x}), {} scope, {how}",
            e.name,
            e.counter_name,
            e.counter_address,
            e.scope.name()
        );
        for n in e.notes.iter().chain(events[i].encoded.notes.iter()) {
            let _ = writeln!(s, "  {:<name_w$}  note: {n}", "");
        }
    }
    let name_w = p.writes.iter().map(|w| w.name.len()).max().unwrap_or(8);
    for &cpu in &p.cpus_touched() {
        let _ = writeln!(s, "\ncpu {cpu}");
        let _ = writeln!(
            s,
            "  {:>3}  {:<10}  {:<name_w$}  {:>18}  {:>18}  step",
            "#", "address", "register", "old", "new"
        );
        for (i, w) in p.writes.iter().enumerate().filter(|(_, w)| w.cpu == cpu) {
            let old = w.old.map_or_else(|| "?".to_string(), |v| format!("{v:#x}"));
            let _ = writeln!(
                s,
                "  {:>3}  {:<10}  {:<name_w$}  {:>18}  {:>18}  {}",
                i + 1,
                format!("{:#x}", w.address),
                w.name,
                old,
                format!("{:#x}", w.new),
                w.step.describe()
            );
            let fields = compact_fields(&w.fields);
            if !fields.is_empty() && w.new != 0 {
                let _ = writeln!(s, "  {:>3}  {:<10}  {fields}", "", "");
            }
        }
    }
    s
}
