//! Contention telemetry: which lock is hot, and who holds what a thread is waiting for
//! (feature `telemetry`).
//!
//! ```
//! use chainlock::keyed::KeyedLocks;
//! use chainlock::telemetry::{self, Config};
//!
//! telemetry::enable(Config::new());
//! let sessions = KeyedLocks::<u32>::new();
//! drop(sessions.lock(42));
//! let report = telemetry::report();
//! # let _ = report;
//! telemetry::disable();
//! ```
#![doc = include_str!("../../docs/telemetry.md")]

mod class;
pub(crate) mod endpoints;
mod histogram;
pub(crate) mod hooks;
mod live;
mod naming;
mod pprof;
mod probe;
mod report;
mod sampling;
mod snapshot;
mod state;
mod table;
#[cfg(all(test, loom))]
mod tests {
    mod loom_recording;
}

pub use endpoints::{Endpoint, EndpointState};
pub use report::{LockName, LockStats, OtherSites, Report, SiteStats, Summary};
pub use snapshot::{Cycle, Holding, Live, Waiting};
pub use state::Config;

/// Starts recording with `config` (replacing the configuration if already recording).
///
/// ```
/// chainlock::telemetry::enable(chainlock::telemetry::Config::new());
/// assert!(chainlock::telemetry::is_enabled());
/// # chainlock::telemetry::disable();
/// ```
pub fn enable(config: Config) {
    state::enable(&config);
}

/// Stops recording; the statistics recorded so far stay until [`reset`].
///
/// ```
/// chainlock::telemetry::disable();
/// assert!(!chainlock::telemetry::is_enabled());
/// ```
pub fn disable() {
    state::disable();
}

/// Whether recording is on.
///
/// ```
/// let _on = chainlock::telemetry::is_enabled();
/// ```
pub fn is_enabled() -> bool {
    state::recording()
}

/// Zeroes every statistic (and forgets the cycles seen).
///
/// ```
/// chainlock::telemetry::reset();
/// ```
pub fn reset() {
    state::reset();
}

/// The statistics now, one [`LockStats`] per lock class that recorded something.
///
/// ```
/// let report = chainlock::telemetry::report();
/// for lock in report.hottest(3) {
///     println!("{}: {} waits", lock.lock, lock.contended);
/// }
/// ```
pub fn report() -> Report {
    state::report()
}

/// The holders and waiters now (see the guide for what sampling hides).
///
/// ```
/// println!("{}", chainlock::telemetry::live());
/// ```
pub fn live() -> Live {
    state::live()
}

/// The wait-for cycles seen since the last [`reset`] (debug builds only; empty in release
/// builds).
///
/// ```
/// assert!(chainlock::telemetry::cycles().is_empty());
/// ```
pub fn cycles() -> Vec<Cycle> {
    state::cycles()
}
