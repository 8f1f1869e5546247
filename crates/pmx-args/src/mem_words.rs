//! `perf mem`'s commands as pmx's command lines: `mem [-t T] report
//! ARGS` is `report --mem-mode -n ARGS` (with perf mem's store sort order
//! for `-t store`); `mem [-t T] record [--ldlat N] ARGS` is `record -d -W
//! -e EVENT… ARGS` with the machine's precise memory events
//! ([`events::mem_events`]), or why there are none; `c2c record` and
//! `c2c report`'s words ([`c2c`]) likewise.

pub mod c2c;
pub mod events;

use std::ffi::OsString;

/// `-t`'s loads and stores, or why it is not one of perf's.
fn ops(op: &str) -> Result<(bool, bool), String> {
    let (mut load, mut store) = (false, false);
    for w in op.split(',').map(str::trim) {
        match w {
            "load" => load = true,
            "store" => store = true,
            _ => return Err(format!("-t {op}: load, store or load,store")),
        }
    }
    Ok((load, store))
}

/// perf mem report's sort order for `-t`: stores have no weight, so no
/// weight, snoop or blocked columns; `None`: report's default.
pub fn sort_for(op: &str) -> Result<Option<&'static str>, String> {
    Ok(match ops(op)? {
        (false, true) => Some("mem,sym,dso,symbol_daddr,dso_daddr,tlb,locked"),
        _ => None,
    })
}

/// `report`'s words for `mem -t OP report ARGS`.
pub fn report_words(op: &str, args: &[OsString]) -> Result<Vec<OsString>, String> {
    let mut words: Vec<OsString> = ["report", "--mem-mode", "-n"].map(Into::into).to_vec();
    let sorted = (args.iter().map(|w| w.to_string_lossy()))
        .any(|w| w.starts_with("-s") || w.starts_with("--sort"));
    if let Some(sort) = sort_for(op)?.filter(|_| !sorted) {
        words.push(format!("--sort={sort}").into());
    }
    words.extend(args.iter().cloned());
    Ok(words)
}

/// `record`'s words for `mem -t OP record --ldlat N ARGS` on this machine.
pub fn record_words(op: &str, ldlat: u32, args: &[OsString]) -> Result<Vec<OsString>, String> {
    let (load, store) = ops(op)?;
    let events = events::mem_events(&pmx_record::SysRoot::host(), load, store, ldlat)?;
    let mut words: Vec<OsString> = ["record", "-d", "-W"].map(Into::into).to_vec();
    for e in events {
        words.extend(["-e".into(), e.into()]);
    }
    words.extend(args.iter().cloned());
    Ok(words)
}

/// `record`'s words for `c2c record [--ldlat N] ARGS` on this machine,
/// as perf c2c record's: data addresses, weights and physical addresses
/// of the loads (with the latency threshold, default 30) and stores.
pub fn c2c_record_words(args: &[OsString]) -> Result<Vec<OsString>, String> {
    let (mut ldlat, mut args) = (events::DEFAULT_LDLAT, args);
    if let [flag, n, rest @ ..] = args {
        if flag == "--ldlat" {
            let n = n.to_string_lossy();
            ldlat = n
                .parse()
                .map_err(|_| format!("--ldlat {n}: a number of cycles"))?;
            args = rest;
        }
    }
    let events = events::mem_events(&pmx_record::SysRoot::host(), true, true, ldlat)?;
    let mut words: Vec<OsString> = ["record", "-W", "-d", "--phys-data"]
        .map(Into::into)
        .to_vec();
    for e in events {
        words.extend(["-e".into(), e.into()]);
    }
    words.extend(args.iter().cloned());
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_mem_command_lines() {
        let w = report_words("store", &["--stdio".into()]).unwrap();
        assert_eq!(
            w,
            [
                "report",
                "--mem-mode",
                "-n",
                "--sort=mem,sym,dso,symbol_daddr,dso_daddr,tlb,locked",
                "--stdio"
            ]
        );
        let w = report_words("load,store", &["-s".into(), "mem".into()]).unwrap();
        assert_eq!(w, ["report", "--mem-mode", "-n", "-s", "mem"]);
        assert!(report_words("loads", &[]).is_err());
    }
}
