//! AMD's pipeline-utilization (top-down) tree, built in for Zen 4 and
//! Zen 5, over the events of pmx's built-in AMD tables
//! ([`pmx_events::amd_builtin`]), so `-M PipelineL1`, `-M TopdownL2` and
//! `pmx tma` work without an events directory. A tree read from perf's
//! tables (an events directory) is preferred when loaded.
//!
//! The method is AMD's (the processor programming references for families
//! 19h and 1Ah, "Pipeline Utilization"): each cycle the dispatcher has W
//! slots (W = 6 on Zen 4, 8 on Zen 5); PMCx1A0 counts, per slot, why it was
//! left empty. With `slots = W × cycles not in halt` (PMCx076):
//!
//! | node | value |
//! |---|---|
//! | frontend bound | empty slots for want of ops from the frontend (PMCx1A0 0x01) / slots |
//! | … latency | W × cycles in which no op at all came (PMCx1A0 0x01 with counter mask W) / slots |
//! | … bandwidth | frontend bound − latency |
//! | bad speculation | (ops dispatched, PMCx0AA − ops retired, PMCx0C1) / slots |
//! | … mispredicts | bad speculation × mispredicted branches (PMCx0C3) / (those + resyncs) |
//! | … pipeline restarts | bad speculation × resyncs / (mispredicted branches + resyncs) |
//! | backend bound | empty slots for want of backend resources (PMCx1A0 0x1E) / slots |
//! | … memory | backend bound × cycles not retiring for a load (PMCx0D6 0xA2) / cycles not retiring for an incomplete op (PMCx0D6 0x02) |
//! | … cpu | backend bound − memory |
//! | SMT contention | slots given to the sibling thread (PMCx1A0 0x60) / slots |
//! | retiring | ops retired / slots |
//! | … fastpath | retiring × (1 − microcoded ops retired, PMCx1C2 / ops retired) |
//! | … microcode | retiring × microcoded ops retired / ops retired |
//!
//! Resyncs are PMCx096 on Zen 4 and PMCx09F unit mask 0x01 on Zen 5. An
//! event with a counter mask is written `EVENT.UMASK:cN` (libpfm's `:` before
//! the unit mask would not survive the `cpu/…,cmask=N/` spec it becomes).
//! Event names are those of the built-in tables: libpfm4's on Zen 4
//! (`DISPATCH_STALLS_1:FE_NO_OPS`), AMD's mnemonics on Zen 5
//! (`de_no_dispatch_per_slot.no_ops_from_frontend`); metric names are the
//! ones Linux perf gives the nodes of each generation, so `-M` means the
//! same with or without perf's tables. Zen 1–3 have no such tree (AMD
//! publishes none, and perf has none). Thresholds are pmx's
//! ([`crate::perf_x86::pipeline_thresholds`]).

use crate::formula::{Dialect, Formula};
use crate::library::{Metric, MetricTable};
use pmx_events::amd_builtin::{generation_for, Zen};
use pmx_model::cpu::CpuId;

/// One node (or helper) of the tree.
struct Node {
    name: &'static str,
    formula: &'static str,
    description: &'static str,
    /// `None`: level 1 (or the slots helper).
    parent: Option<&'static str>,
}

const fn node(
    name: &'static str,
    formula: &'static str,
    description: &'static str,
    parent: Option<&'static str>,
) -> Node {
    Node {
        name,
        formula,
        description,
        parent,
    }
}

const FE: &str = "Share of dispatch slots left empty because the frontend supplied no ops";
const FE_LAT: &str =
    "Share of dispatch slots lost in cycles when the frontend supplied no op at all (fetch latency)";
const FE_BW: &str =
    "Share of dispatch slots lost in cycles when the frontend supplied too few ops (fetch bandwidth)";
const BS: &str = "Share of dispatch slots used by ops that never retired";
const BS_MISP: &str = "Bad speculation put down to mispredicted branches";
const BS_RESYNC: &str = "Bad speculation put down to pipeline restarts (resyncs)";
const BE: &str = "Share of dispatch slots left empty because the backend had no room";
const BE_MEM: &str = "Backend bound put down to waiting for loads (memory)";
const BE_CPU: &str = "Backend bound put down to the execution core (not memory)";
const SMT: &str = "Share of dispatch slots given to the sibling thread";
const RET: &str = "Share of dispatch slots that retired ops";
const RET_FAST: &str = "Retiring ops that did not come from microcode";
const RET_UCODE: &str = "Retiring ops that came from microcode";

const ZEN4: &[Node] = &[
    node(
        "total_dispatch_slots",
        "6 * CYCLES_NOT_IN_HALT",
        "Dispatch slots: 6 per unhalted cycle",
        None,
    ),
    node("frontend_bound", "d_ratio(DISPATCH_STALLS_1:FE_NO_OPS, total_dispatch_slots)", FE, None),
    node(
        "bad_speculation",
        "d_ratio(OPS_SOURCE_DISPATCHED_FROM_DECODER:DECODER:OPCACHE:LOOP_BUFFER - RETIRED_OPS, total_dispatch_slots)",
        BS,
        None,
    ),
    node("backend_bound", "d_ratio(DISPATCH_STALLS_1:BE_STALLS, total_dispatch_slots)", BE, None),
    node("smt_contention", "d_ratio(DISPATCH_STALLS_1:SMT_CONTENTION, total_dispatch_slots)", SMT, None),
    node("retiring", "d_ratio(RETIRED_OPS, total_dispatch_slots)", RET, None),
    node(
        "frontend_bound_latency",
        "d_ratio(6 * DISPATCH_STALLS_1.FE_NO_OPS:c6, total_dispatch_slots)",
        FE_LAT,
        Some("frontend_bound"),
    ),
    node(
        "frontend_bound_bandwidth",
        "d_ratio(DISPATCH_STALLS_1:FE_NO_OPS - 6 * DISPATCH_STALLS_1.FE_NO_OPS:c6, total_dispatch_slots)",
        FE_BW,
        Some("frontend_bound"),
    ),
    node(
        "bad_speculation_mispredicts",
        "d_ratio(bad_speculation * RETIRED_BRANCH_INSTRUCTIONS_MISPREDICTED, RETIRED_BRANCH_INSTRUCTIONS_MISPREDICTED + RESYNCS)",
        BS_MISP,
        Some("bad_speculation"),
    ),
    node(
        "bad_speculation_pipeline_restarts",
        "d_ratio(bad_speculation * RESYNCS, RETIRED_BRANCH_INSTRUCTIONS_MISPREDICTED + RESYNCS)",
        BS_RESYNC,
        Some("bad_speculation"),
    ),
    node(
        "backend_bound_memory",
        "backend_bound * d_ratio(CYCLES_NO_RETIRE:NOT_COMPLETE_MISSING_LOAD, CYCLES_NO_RETIRE:NOT_COMPLETE_LOAD_AND_ALU)",
        BE_MEM,
        Some("backend_bound"),
    ),
    node(
        "backend_bound_cpu",
        "backend_bound * (1 - d_ratio(CYCLES_NO_RETIRE:NOT_COMPLETE_MISSING_LOAD, CYCLES_NO_RETIRE:NOT_COMPLETE_LOAD_AND_ALU))",
        BE_CPU,
        Some("backend_bound"),
    ),
    node(
        "retiring_fastpath",
        "retiring * (1 - d_ratio(RETIRED_UCODE_OPS, RETIRED_OPS))",
        RET_FAST,
        Some("retiring"),
    ),
    node(
        "retiring_microcode",
        "retiring * d_ratio(RETIRED_UCODE_OPS, RETIRED_OPS)",
        RET_UCODE,
        Some("retiring"),
    ),
];

const ZEN5: &[Node] = &[
    node(
        "total_dispatch_slots",
        "8 * ls_not_halted_cyc",
        "Dispatch slots: 8 per unhalted cycle",
        None,
    ),
    node(
        "frontend_bound",
        "d_ratio(de_no_dispatch_per_slot.no_ops_from_frontend, total_dispatch_slots)",
        FE,
        None,
    ),
    node(
        "bad_speculation",
        "d_ratio(de_src_op_disp.all - ex_ret_ops, total_dispatch_slots)",
        BS,
        None,
    ),
    node(
        "backend_bound",
        "d_ratio(de_no_dispatch_per_slot.backend_stalls, total_dispatch_slots)",
        BE,
        None,
    ),
    node(
        "smt_contention",
        "d_ratio(de_no_dispatch_per_slot.smt_contention, total_dispatch_slots)",
        SMT,
        None,
    ),
    node("retiring", "d_ratio(ex_ret_ops, total_dispatch_slots)", RET, None),
    node(
        "frontend_bound_by_latency",
        "d_ratio(8 * de_no_dispatch_per_slot.no_ops_from_frontend:c8, total_dispatch_slots)",
        FE_LAT,
        Some("frontend_bound"),
    ),
    node(
        "frontend_bound_by_bandwidth",
        "d_ratio(de_no_dispatch_per_slot.no_ops_from_frontend - 8 * de_no_dispatch_per_slot.no_ops_from_frontend:c8, total_dispatch_slots)",
        FE_BW,
        Some("frontend_bound"),
    ),
    node(
        "bad_speculation_from_mispredicts",
        "d_ratio(bad_speculation * ex_ret_brn_misp, ex_ret_brn_misp + bp_redirects.resync)",
        BS_MISP,
        Some("bad_speculation"),
    ),
    node(
        "bad_speculation_from_pipeline_restarts",
        "d_ratio(bad_speculation * bp_redirects.resync, ex_ret_brn_misp + bp_redirects.resync)",
        BS_RESYNC,
        Some("bad_speculation"),
    ),
    node(
        "backend_bound_by_memory",
        "backend_bound * d_ratio(ex_no_retire.load_not_complete, ex_no_retire.not_complete)",
        BE_MEM,
        Some("backend_bound"),
    ),
    node(
        "backend_bound_by_cpu",
        "backend_bound * (1 - d_ratio(ex_no_retire.load_not_complete, ex_no_retire.not_complete))",
        BE_CPU,
        Some("backend_bound"),
    ),
    node(
        "retiring_from_fastpath",
        "retiring * (1 - d_ratio(ex_ret_ucode_ops, ex_ret_ops))",
        RET_FAST,
        Some("retiring"),
    ),
    node(
        "retiring_from_microcode",
        "retiring * d_ratio(ex_ret_ucode_ops, ex_ret_ops)",
        RET_UCODE,
        Some("retiring"),
    ),
];

/// The tree's nodes for a generation (`None`: Zen 1–3 have none).
fn nodes(zen: Zen) -> Option<&'static [Node]> {
    match zen {
        Zen::Zen4 => Some(ZEN4),
        Zen::Zen5 => Some(ZEN5),
        Zen::Zen1 | Zen::Zen2 | Zen::Zen3 => None,
    }
}

fn metric(n: &Node) -> Result<Metric, crate::FormulaError> {
    let formula = Formula::parse(n.formula, Dialect::Pmx)?;
    let mut m = if n.name == "total_dispatch_slots" {
        let mut m = Metric::from_formula(n.name, formula, "slots", 1.0);
        m.groups = vec!["Pipeline".into()];
        m
    } else {
        let mut m = Metric::from_formula(n.name, formula, "%", 100.0);
        m.groups = match n.parent {
            None => vec!["PipelineL1".into(), "TopdownL1".into()],
            Some(p) => vec![
                "PipelineL2".into(),
                "TopdownL2".into(),
                format!("{p}_group"),
            ],
        };
        m.level = Some(if n.parent.is_some() { 2 } else { 1 });
        m.parent = n.parent.map(str::to_string);
        m
    };
    m.description = n.description.to_string();
    Ok(m)
}

/// Add the tree of `cpu`'s generation (when it has one) to a table.
pub(crate) fn add(table: &mut MetricTable, cpu: &CpuId) {
    let Some(list) = generation_for(cpu).and_then(nodes) else {
        return;
    };
    for n in list {
        match metric(n) {
            Ok(m) => table.metrics.push(m),
            Err(e) => table.warnings.push(format!("{}: {e}", n.name)),
        }
    }
}

/// The names of the tree's nodes and helpers for a generation, in order
/// (for tests and documentation).
pub fn node_names(zen: Zen) -> Vec<&'static str> {
    nodes(zen)
        .map(|l| l.iter().map(|n| n.name).collect())
        .unwrap_or_default()
}
