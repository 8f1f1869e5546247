//! Fuzz the profile builder over the perf.data reader: any bytes give a
//! profile or an error, and the folded stacks and flame graph render;
//! nothing panics. Recorded paths are looked up under a directory that
//! does not exist, so no file of this machine is opened for symbols.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pmx_perfdata::read::Reader;
use pmx_profile::profile::{build, KernelSymbols, MachineId, Options, SortKey};

fuzz_target!(|data: &[u8]| {
    let Ok(mut r) = Reader::new(std::io::Cursor::new(data.to_vec())) else {
        return;
    };
    let options = Options {
        sort: vec![SortKey::Comm, SortKey::Dso, SortKey::Symbol],
        stacks: true,
        children: true,
        kallsyms: KernelSymbols::Off,
        this_machine: MachineId::default(),
        root: Some("/nonexistent-pmx-fuzz-root".into()),
        lines: false,
        inline: false,
        tids: None,
        symbols: Default::default(),
    };
    if let Ok(p) = build(&mut r, &options, &mut |_, _| {}) {
        let _ = format!("{:?}", p.events.len());
        for e in &p.events {
            let _ = pmx_profile::flame::folded(&e.stacks);
            let _ = pmx_profile::flame::svg(&e.stacks, &pmx_profile::flame::FlameOptions::default());
        }
    }
});
