//! Where the event tables are when no directory is named: the value
//! [`EventsDirDefault`] (`$PMX_EVENTS_DIR`, else pmx's cache,
//! `$XDG_CACHE_HOME/pmx/events` or `~/.cache/pmx/events`) and [`from_env`],
//! the one place the embedding API reads it.
//!
//! `PMX_EVENTS_DIR` is the interface of the API's entry points that find
//! tables ([`Counters`](crate::Counters), [`region`](mod@crate::region),
//! [`measure`](crate::measure), [`completion`](crate::completion),
//! [`events_fetch`](crate::events_fetch)), so they read it here; the
//! engines below (`pmx-count`, `pmx-analysis`, `pmx-events`) take the
//! value as an option ([`DatabaseOptions::events_dir_default`]). The
//! command line and the C and Python entry points get it from here too.
//!
//! [`DatabaseOptions::events_dir_default`]: crate::DatabaseOptions::events_dir_default

pub use pmx_events::EventsDirDefault;

/// `$PMX_EVENTS_DIR` (empty: unset) and pmx's cache directory, read from
/// the process environment: the default of the entry points that find
/// event tables. [`EventsDirDefault::resolve`] puts a `--events-dir`
/// first.
pub fn from_env() -> EventsDirDefault {
    EventsDirDefault::new(
        std::env::var_os("PMX_EVENTS_DIR"),
        &pmx_io::dirs::Dirs::from_env(),
    )
}
