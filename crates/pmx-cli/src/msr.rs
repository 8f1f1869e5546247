//! `pmx msr read|write|plan`: raw MSR access through `/dev/cpu/N/msr`.
//!
//! `read` and `write` work like rdmsr/wrmsr, with the PMU registers' names,
//! their scope (a package register is read once per package) and their
//! fields decoded through the register model. `write` only touches the
//! vendor's PMU registers and their writable bits unless `--unsafe`.
//! `plan` prints every write `pmx stat --backend msr` would make, and
//! makes none. The work is `pmx::msr` and the renderers are
//! `pmx_output::msr`; this module turns flags into options, makes the
//! call and picks the renderer.

use crate::db::DbArgs;
use crate::exit::{UsageError, OK};
use pmx::msr::{self as lib, MsrCommandError, MsrRoot};
use pmx_model::encoding::Arch;
use pmx_output::msr as render;
use std::io::Write as _;
use std::path::PathBuf;

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
    #[arg(long, value_parser = pmx::registers::parse_arch)]
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

/// A library error as the CLI reports it (bad input: exit 2).
fn failure(e: MsrCommandError) -> anyhow::Error {
    match e {
        MsrCommandError::Usage(m) => UsageError(m).into(),
        e => e.into(),
    }
}

fn target(t: &Target) -> lib::MsrTarget {
    lib::MsrTarget {
        cpus: t.cpus.clone(),
        all: t.all,
        msr_root: t.msr_root.clone(),
        arch: t.arch,
        sysfs_root: t.sysfs_root.clone(),
    }
}

fn read(args: &ReadArgs) -> anyhow::Result<i32> {
    let r = lib::read(&lib::ReadOptions {
        register: args.register.clone(),
        target: target(&args.target),
        field: args.field.clone(),
    })
    .map_err(failure)?;
    let mut out = std::io::stdout().lock();
    for d in &r.domains {
        out.write_all(render::read_domain(&r, d, args.decode, args.json).as_bytes())?;
    }
    match r.error {
        Some(e) => Err(e.into()),
        None => Ok(OK),
    }
}

fn write(args: &WriteArgs) -> anyhow::Result<i32> {
    let w = lib::write(&lib::WriteOptions {
        register: args.register.clone(),
        value: args.value.clone(),
        target: target(&args.target),
        unsafe_write: args.unsafe_write,
    })
    .map_err(failure)?;
    if let Some(refusal) = &w.overridden {
        eprintln!(
            "pmx: WARNING: --unsafe: {refusal}. Writing it anyway: a wrong value in an MSR can hang or reset the machine, corrupt data, or weaken its security."
        );
    }
    let mut out = std::io::stdout().lock();
    for d in &w.domains {
        writeln!(out, "{}", render::write_line(&w, d))?;
    }
    match w.error {
        Some(e) => Err(failure(e)),
        None => Ok(OK),
    }
}

fn run_plan(args: &PlanArgs) -> anyhow::Result<i32> {
    let specs = lib::event_specs(&args.events).map_err(failure)?;
    let target = args.db.target()?;
    let arch = lib::msr_arch(&target).map_err(failure)?;
    let db = args.db.load()?;
    let opts = lib::PlanOptions {
        specs,
        cpus: args.cpus.clone(),
        msr_root: args.msr_root.clone(),
        sysfs_root: args.db.sysfs_root.clone(),
    };
    let report = lib::plan(&opts, &target, arch, &db).map_err(failure)?;
    let text = if args.json {
        render::plan_json(&report)?
    } else {
        render::plan_text(&report)
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(OK)
}
