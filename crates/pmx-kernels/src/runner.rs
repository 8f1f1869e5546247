//! The kernels by name, so a process started for the purpose runs one
//! (`pmx check` starts `pmx check --run-kernel NAME ARGS…` under its
//! counters). The names and their arguments:
//!
//! | name | arguments | does |
//! |---|---|---|
//! | `loop` | N | [`branch_loop`](crate::ops::branch_loop) of N iterations |
//! | `chase` | BYTES STEPS | a [`Chase`] over BYTES, STEPS loads |
//! | `triad` | ELEMENTS PASSES | PASSES passes of a [`Triad`] |
//! | `fma` | WIDTH ITERATIONS | [`fma::run`] |
//! | `pages` | N | [`touch_pages`](crate::ops::touch_pages) |
//! | `ping-pong` | ROUNDS | [`ping_pong`](crate::ops::ping_pong) |
//! | `sleep` | MS | sleeps |
//! | `spin` | MS | [`spin`](crate::ops::spin)s |

use crate::chase::Chase;
use crate::fma::{self, Width};
use crate::ops::{self, KernelError};
use crate::triad::Triad;
use std::time::Duration;

/// Run the kernel `args[0]` with its arguments.
pub fn run(args: &[String]) -> Result<(), KernelError> {
    let (name, rest) = args
        .split_first()
        .ok_or_else(|| KernelError("name a kernel".into()))?;
    let num = |i: usize| -> Result<u64, KernelError> {
        let s = rest.get(i).ok_or_else(|| {
            KernelError(format!("kernel '{name}': argument {} is missing", i + 1))
        })?;
        s.parse()
            .map_err(|_| KernelError(format!("kernel '{name}': '{s}' is not a number")))
    };
    let size = |i: usize| -> Result<usize, KernelError> {
        usize::try_from(num(i)?).map_err(|_| KernelError(format!("kernel '{name}': too big")))
    };
    match name.as_str() {
        "loop" if ops::branch_loop(num(0)?) => Ok(()),
        "loop" => Err(KernelError("no branch loop for this architecture".into())),
        "chase" => {
            let c = Chase::new(size(0)?, 0x9e37_79b9_7f4a_7c15);
            std::hint::black_box(c.run(num(1)?));
            Ok(())
        }
        "triad" => {
            let mut t = Triad::new(size(0)?);
            for _ in 0..num(1)? {
                t.pass();
            }
            Ok(())
        }
        "fma" => {
            let w = rest.first().and_then(|w| Width::from_name(w));
            let w = w.ok_or_else(|| KernelError("kernel 'fma': name a width".into()))?;
            fma::run(w, num(1)?)
                .map(|_| ())
                .ok_or_else(|| KernelError(format!("this CPU has no {} unit", w.name())))
        }
        "pages" => ops::touch_pages(size(0)?),
        "ping-pong" => ops::ping_pong(num(0)?),
        "sleep" => {
            std::thread::sleep(Duration::from_millis(num(0)?));
            Ok(())
        }
        "spin" => {
            ops::spin(Duration::from_millis(num(0)?));
            Ok(())
        }
        _ => Err(KernelError(format!("no kernel named '{name}'"))),
    }
}
