//! The tests that change a setting of the whole machine, each putting it
//! back even when an assertion fails: `record_throttle` lowers
//! `kernel.perf_event_max_sample_rate`, `serve_hotplug` takes CPU 1
//! offline. A target of their own, so that no other test (the
//! `integration` target's) runs in this process while a setting is
//! changed; and one at a time ([`alone`]), so that neither sees the
//! other's change. Both need root and skip with a message otherwise:
//! `cargo test -p pmx-cli --test system`.

#[path = "../serve_support/mod.rs"]
mod serve_support;

mod record_throttle;
mod serve_hotplug;

/// Held for the whole of a test that changes a machine setting.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One such test at a time (a failed one's poison is no matter: it put
/// its setting back).
fn alone() -> std::sync::MutexGuard<'static, ()> {
    ALONE.lock().unwrap_or_else(|e| e.into_inner())
}
