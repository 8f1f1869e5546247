//! `perf mem`'s commands as pmx's command lines: `mem [-t T] report
//! ARGS` is `report --mem-mode -n ARGS` (with perf mem's store sort order
//! for `-t store`); `mem [-t T] record [--ldlat N] ARGS` is `record -d -W
//! -e EVENT… ARGS` with the machine's precise memory events
//! ([`events::mem_events`]), or why there are none; `c2c record` and
//! `c2c report`'s words ([`c2c`]) likewise. [`parse`] reads perf mem's
//! own flags as perf 6.1 reads them: anywhere on the line (before or
//! after `record`/`report`, up to `--`), the rest kept in order.

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

/// `pmx mem`'s command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemCommand {
    /// `record` (perf takes any prefix of at least 3 letters).
    Record,
    /// `report`.
    Report,
}

/// perf mem's command line: its own flags and the words left for
/// `record` or `report`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemLine {
    /// The command.
    pub command: MemCommand,
    /// `-t`: load, store or load,store.
    pub op: String,
    /// `-D`: the samples dumped one a line.
    pub dump_raw: bool,
    /// `-x`: the dump's separator.
    pub separator: Option<String>,
    /// `-C`: CPUs (record's `-C`; the dump asks the file to sample CPUs).
    pub cpus: Option<String>,
    /// `-U`: the dump leaves out samples whose code has no symbol.
    pub hide_unresolved: bool,
    /// `-p`: physical addresses.
    pub phys: bool,
    /// `--data-page-size`.
    pub data_page_size: bool,
    /// `-i`.
    pub input: Option<OsString>,
    /// record's `--ldlat`.
    pub ldlat: u32,
    /// record's `-K`/`--all-kernel`, `--all-user`: each event's `k` or `u`
    /// (`-U` is perf mem's `--hide-unresolved` wherever it stands, as in
    /// perf 6.1).
    pub only: Option<char>,
    /// The words left, in order.
    pub rest: Vec<OsString>,
}

/// perf mem's words (what follows `mem`), its flags taken wherever they
/// stand before `--`, as perf 6.1's parser takes them.
pub fn parse(words: &[OsString]) -> Result<MemLine, String> {
    let mut l = MemLine {
        command: MemCommand::Report,
        op: "load,store".into(),
        dump_raw: false,
        separator: None,
        cpus: None,
        hide_unresolved: false,
        phys: false,
        data_page_size: false,
        input: None,
        ldlat: events::DEFAULT_LDLAT,
        only: None,
        rest: Vec::new(),
    };
    let mut command = None;
    let mut it = words.iter();
    while let Some(w) = it.next() {
        let s = w.to_string_lossy();
        if s == "--" {
            l.rest.push(w.clone());
            l.rest.extend(it.by_ref().cloned());
            break;
        }
        let (name, inline) = match s.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (s.to_string(), None),
        };
        let mut value = |flag: &str| -> Result<String, String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => (it.next().map(|v| v.to_string_lossy().into_owned()))
                    .ok_or_else(|| format!("{flag} needs a value")),
            }
        };
        match name.as_str() {
            "-t" | "--type" => l.op = value("-t")?,
            "-D" | "--dump-raw-samples" => l.dump_raw = true,
            "-x" | "--field-separator" => l.separator = Some(value("-x")?),
            "-C" | "--cpu" => l.cpus = Some(value("-C")?),
            "-U" | "--hide-unresolved" => l.hide_unresolved = true,
            "-p" | "--phys-data" => l.phys = true,
            "--data-page-size" => l.data_page_size = true,
            "-f" | "--force" => {}
            "-i" | "--input" => l.input = Some(value("-i")?.into()),
            "-K" | "--all-kernel" if command != Some(MemCommand::Report) => l.only = Some('k'),
            "--all-user" if command != Some(MemCommand::Report) => l.only = Some('u'),
            "--ldlat" if command != Some(MemCommand::Report) => {
                let n = value("--ldlat")?;
                l.ldlat = n
                    .parse()
                    .map_err(|_| format!("--ldlat {n}: a number of cycles"))?;
            }
            _ if command.is_none() && !s.starts_with('-') => {
                command = Some(match s.as_ref() {
                    c if c.len() >= 3 && "record".starts_with(c) => MemCommand::Record,
                    c if c.len() >= 3 && "report".starts_with(c) => MemCommand::Report,
                    c => return Err(format!("{c}: not a command of perf mem (record, report)")),
                });
            }
            _ => l.rest.push(w.clone()),
        }
    }
    l.command = command.ok_or("record or report: perf mem's command is missing")?;
    ops(&l.op)?;
    Ok(l)
}

impl MemLine {
    /// `report`'s words: `report --mem-mode -n`, perf mem's sort order
    /// for stores, physical addresses or page sizes, `-i`, the rest.
    pub fn report_words(&self) -> Result<Vec<OsString>, String> {
        let mut words: Vec<OsString> = ["report", "--mem-mode", "-n"].map(Into::into).to_vec();
        let sorted = (self.rest.iter().map(|w| w.to_string_lossy()))
            .any(|w| w.starts_with("-s") || w.starts_with("--sort"));
        const LOADS: &str =
            "local_weight,mem,sym,dso,symbol_daddr,dso_daddr,snoop,tlb,locked,blocked";
        let sort = match sort_for(&self.op)? {
            Some(s) => Some(s.to_string()),
            None if self.phys => Some(format!("{LOADS},phys_daddr")),
            None if self.data_page_size => Some(format!("{LOADS},data_page_size")),
            None => None,
        };
        if let Some(sort) = sort.filter(|_| !sorted) {
            words.push(format!("--sort={sort}").into());
        }
        if let Some(i) = &self.input {
            words.extend(["-i".into(), i.clone()]);
        }
        words.extend(self.rest.iter().cloned());
        Ok(words)
    }

    /// `record`'s words on this machine: `record -d -W`, the memory
    /// events (`u` or `k` added for `--all-user`, `-K`), `--phys-data`,
    /// `--data-page-size`, `-C`, the rest.
    pub fn record_words(&self) -> Result<Vec<OsString>, String> {
        let mut words = record_words(&self.op, self.ldlat, &[])?;
        if let Some(m) = self.only {
            for w in words.iter_mut().skip(4).step_by(2) {
                w.push(m.to_string());
            }
        }
        let flags = [
            (self.phys, "--phys-data"),
            (self.data_page_size, "--data-page-size"),
        ];
        words.extend(flags.iter().filter(|f| f.0).map(|f| f.1.into()));
        if let Some(c) = &self.cpus {
            words.extend(["-C".into(), c.into()]);
        }
        words.extend(self.rest.iter().cloned());
        Ok(words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(w: &[&str]) -> Result<MemLine, String> {
        parse(&w.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn perf_mems_flags_are_taken_anywhere_before_the_double_dash() {
        let l = line(&[
            "-D", "rep", "-x", ",", "-U", "--stdio", "-p", "--", "-C", "1",
        ])
        .unwrap();
        assert_eq!(l.command, MemCommand::Report);
        assert!(l.dump_raw && l.hide_unresolved && l.phys && l.cpus.is_none());
        assert_eq!(l.separator.as_deref(), Some(","));
        assert_eq!(l.rest, ["--stdio", "--", "-C", "1"]);
        let w = line(&["report", "-p", "-i", "f"])
            .unwrap()
            .report_words()
            .unwrap();
        let sort = "--sort=local_weight,mem,sym,dso,symbol_daddr,dso_daddr,snoop,tlb,locked,blocked,phys_daddr";
        assert_eq!(w, ["report", "--mem-mode", "-n", sort, "-i", "f"]);
        let l = line(&["record", "--ldlat", "50", "-K", "--", "true"]).unwrap();
        assert_eq!((l.ldlat, l.only), (50, Some('k')));
        assert!(line(&["report", "-K"]).unwrap().rest == ["-K"]);
        assert!(line(&["list"]).unwrap_err().contains("not a command"));
        assert!(line(&["-t", "loads", "report"]).is_err());
        assert!(line(&["-D"]).is_err());
    }

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
