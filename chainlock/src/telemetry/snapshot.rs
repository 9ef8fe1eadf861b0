//! What is held and waited for now, as [`live`](super::live) and [`cycles`](super::cycles)
//! return it: [`Live`] ([`Holding`], [`Waiting`]) and the wait-for [`Cycle`]s. The table
//! they are read from is `live.rs`.

use super::endpoints::{Endpoint, EndpointState};
use super::report::LockName;
use std::fmt;
use std::panic::Location;
use std::time::Duration;

/// The holders and waiters chainlock sees now, from [`live`](super::live).
///
/// ```
/// let live = chainlock::telemetry::live();
/// for waiting in &live.waiters {
///     println!("{} waits on {} at {}", waiting.thread, waiting.lock, waiting.site);
/// }
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, Default)]
pub struct Live {
    /// The holds seen.
    pub holders: Vec<Holding>,
    /// The waits seen.
    pub waiters: Vec<Waiting>,
    /// The server endpoints of every live distributed-lock client and how each client
    /// judges them now (recorded whether or not recording is enabled).
    pub endpoints: Vec<Endpoint>,
}

/// One hold seen by [`live`](super::live).
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct Holding {
    /// The lock held.
    pub lock: LockName,
    /// Where it was acquired.
    pub site: &'static Location<'static>,
    /// The thread that acquired it (its name, or its id).
    pub thread: String,
    /// For how long.
    pub held_for: Duration,
}

/// One wait seen by [`live`](super::live).
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct Waiting {
    /// The lock waited for.
    pub lock: LockName,
    /// Where the wait began.
    pub site: &'static Location<'static>,
    /// The waiting thread (its name, or its id).
    pub thread: String,
    /// For how long.
    pub waited_for: Duration,
    /// The holds of that same lock seen.
    pub holders: Vec<Holding>,
}

/// A wait-for cycle: each wait is on a lock held by the next one's thread, the last's on
/// one held by the first's.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct Cycle {
    /// The waits, in order.
    pub edges: Vec<Waiting>,
}

impl fmt::Display for Holding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} held by {} at {} for {:?}",
            self.lock, self.thread, self.site, self.held_for
        )
    }
}

impl fmt::Display for Waiting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} waited for by {} at {} for {:?}",
            self.lock, self.thread, self.site, self.waited_for
        )?;
        for holder in &self.holders {
            write!(f, "\n    {holder}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Live {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} holders, {} waiters",
            self.holders.len(),
            self.waiters.len()
        )?;
        for holder in &self.holders {
            writeln!(f, "  {holder}")?;
        }
        for waiter in &self.waiters {
            writeln!(f, "  {waiter}")?;
        }
        if !self.endpoints.is_empty() {
            let healthy = self
                .endpoints
                .iter()
                .filter(|e| e.state == EndpointState::Healthy);
            writeln!(
                f,
                "{} endpoints, {} healthy",
                self.endpoints.len(),
                healthy.count()
            )?;
            for endpoint in &self.endpoints {
                writeln!(f, "  {endpoint}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "wait-for cycle of {} waits:", self.edges.len())?;
        for edge in &self.edges {
            writeln!(f, "  {edge}")?;
        }
        Ok(())
    }
}
