//! pmx-sys's integration tests, one test binary: `fixtures` (the recorded
//! machines under `tests/fixtures/`), `odd_input`, `this_machine`.

mod fixtures;
mod odd_input;
mod this_machine;
