//! `pmx_encode`/`pmx_decode`: [`pmx::registers`](pmx_rs::registers) from
//! C — an event spec to its control-register value and perf config, and a
//! register value's fields.

use crate::{guarded, name_arg};
use pmx_model::encoding::EncodeOptions;
use pmx_rs::registers::{arch_named, decode, encode, register_named};
use std::ffi::{c_char, c_int};

/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn optional<'a>(p: *const c_char, what: &str) -> Result<Option<&'a str>, String> {
    if p.is_null() {
        Ok(None)
    } else {
        name_arg(p, what).map(Some)
    }
}

/// Encode `spec` (`"event=0x2e,umask=0x41:u"`, `"r412e"`,
/// `"cpu/event=0xc0/"`) for `arch` (`"intel"`, `"amd"`; NULL: this
/// CPU's) as `pmx encode` does: `*reg` gets the event-select value pmx
/// would write, `*config` perf's `attr.config` (either may be NULL).
///
/// # Safety
/// `spec` a NUL-terminated string; `arch` NULL or one; `reg`, `config`
/// NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn pmx_encode(
    spec: *const c_char,
    arch: *const c_char,
    reg: *mut u64,
    config: *mut u64,
) -> c_int {
    guarded(|| {
        let spec = name_arg(spec, "spec")?;
        let arch = arch_named(optional(arch, "arch")?).map_err(|e| format!("pmx_encode: {e}"))?;
        let e = encode(
            spec,
            EncodeOptions {
                arch,
                sampling: false,
            },
        )
        .map_err(|e| format!("pmx_encode: {e}"))?;
        if !reg.is_null() {
            *reg = e.register;
        }
        if !config.is_null() {
            *config = e.attr.config;
        }
        Ok(0)
    })
}

/// Field `field` (`"EventSelect"`, `"umask"`, `"usr"`; case-insensitive)
/// of `value` read as register `reg`: a vendor (`"intel"`, `"amd"`; NULL:
/// this CPU's event select) or a layout of `pmx decode --register`
/// (`"evtsel"`, `"fixed-ctrl"`, `"global-ctrl"`, `"global-status"`,
/// `"uncore-evtsel"`, `"perf-ctl"`), into `*out`.
///
/// # Safety
/// `reg` NULL or a NUL-terminated string; `field` one; `out` valid.
#[no_mangle]
pub unsafe extern "C" fn pmx_decode(
    reg: *const c_char,
    value: u64,
    field: *const c_char,
    out: *mut u64,
) -> c_int {
    guarded(|| {
        let kind =
            register_named(optional(reg, "register")?).map_err(|e| format!("pmx_decode: {e}"))?;
        let field = name_arg(field, "field")?;
        if out.is_null() {
            return Err("pmx_decode: out is NULL".to_string());
        }
        let d = decode(kind, value);
        *out = d.field(field).ok_or_else(|| {
            let names: Vec<&str> = d.fields.iter().map(|f| f.field.name).collect();
            format!(
                "pmx_decode: {} has no field '{field}' (fields: {})",
                kind.cli_name(),
                names.join(", ")
            )
        })?;
        Ok(0)
    })
}
