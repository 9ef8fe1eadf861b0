//! The seam between the primitives and the backends.
//!
//! A backend implements [`Backend`] once: acquire a key in a [`Mode`] with a [`Wait`] (not at
//! all, until a deadline, or as long as it takes), returning a [`Hold`] that knows its fencing
//! token, whether it was lost, and how to release itself (dropping it releases too). Everything
//! public is built on these two traits without knowing the backend: the mutex
//! (`LockClient::lock`, [`Mode::Exclusive`]), the reader-writer lock (`lock_shared`,
//! [`Mode::Shared`]), the semaphore (slots, exclusive locks of derived names) and several names
//! at once (`lock_all`, exclusive locks in one global order). Adding a backend (etcd, say) is
//! one new module with a type implementing [`Backend`] and [`Hold`], and one constructor of
//! `LockClient` that boxes it.
//!
//! What a backend must guarantee:
//!
//! - **Modes.** Any number of [`Mode::Shared`] holds of a key, or one [`Mode::Exclusive`]
//!   hold, across every client of the backend, including holds of one client.
//! - **Waits.** [`Wait::Never`] asks once and returns `Ok(None)` only if the key is held in a
//!   conflicting mode; [`Wait::Until`] returns `Ok(None)` once the deadline passed without the
//!   lock; [`Wait::Forever`] returns the lock or an error. Every network wait is bounded
//!   (a backend reports `Error::Unresponsive` rather than hang on a silent peer), except the
//!   wait for the lock itself under [`Wait::Forever`].
//! - **Cancel safety.** Dropping the future of [`Backend::acquire`] leaves nothing held (a
//!   grant racing the drop is released).
//! - **Tokens.** [`Hold::token`] of an exclusive hold is greater than the token of every
//!   earlier hold of its key; a shared hold's token is at least the token of the last
//!   exclusive hold before it and less than every later exclusive hold's.
//! - **Loss.** [`Hold::is_lost`] becomes `true` (and stays) once the backend may have given
//!   the key to someone else; [`Hold::lost`] completes then (never, for a backend that cannot
//!   lose a hold while its process lives).
//! - **Release.** [`Hold::release`] reports failures; dropping a hold releases it without
//!   reporting (a backend may do so on a background task).
//! - **Elections** ([`Backend::campaign`], [`Backend::leader`], [`Backend::observe`]): a
//!   campaign waits as an exclusive acquisition does (the same waits, cancel safety and
//!   tokens) and returns a [`Leading`] hold; at most one candidacy of a name leads at a time;
//!   [`Backend::leader`] is the candidacy the backend holds now (never the record of one that
//!   died); [`Backend::observe`] publishes the leaders in the order they led.

use super::election::leader::{Leader, Publisher};
use super::{Error, FencingToken, LockKey};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A boxed, sendable future: what the seam's methods return.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The two modes of a key's lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Mode {
    /// One holder (the mutex, the writer).
    Exclusive,
    /// Any number of holders (readers), never with an exclusive one.
    Shared,
}

/// How long an acquisition may wait.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Wait {
    /// Not at all.
    Never,
    /// Until `deadline`; `timeout` is the wait's length as the caller gave it (a
    /// `try_lock_for` timeout, or the time left when a `try_lock_until` was called), which
    /// backends report in their errors.
    Until {
        deadline: Instant,
        // `allow`, not `expect`: read by the network backends, dead with the file backend alone.
        #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
        timeout: Duration,
    },
    /// Until the lock is free.
    Forever,
}

impl Wait {
    /// A wait of at most `timeout` from now (zero: [`Wait::Never`]; too large for an
    /// `Instant`: [`Wait::Forever`]).
    pub(crate) fn at_most(timeout: Duration) -> Self {
        if timeout.is_zero() {
            return Self::Never;
        }
        Instant::now()
            .checked_add(timeout)
            .map_or(Self::Forever, |deadline| Self::Until { deadline, timeout })
    }

    /// A wait until `deadline` (already passed: [`Wait::Never`]).
    pub(crate) fn until(deadline: Instant) -> Self {
        let timeout = deadline.saturating_duration_since(Instant::now());
        if timeout.is_zero() {
            Self::Never
        } else {
            Self::Until { deadline, timeout }
        }
    }

    /// What is left of this wait now: `Never` once a deadline passed.
    pub(crate) fn now(self) -> Self {
        match self {
            Self::Until { deadline, .. } if deadline <= Instant::now() => Self::Never,
            other => other,
        }
    }

    /// The time left before the deadline (`None`: no deadline; zero: none left).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // as `timeout`
    pub(crate) fn remaining(self) -> Option<Duration> {
        match self {
            Self::Never => Some(Duration::ZERO),
            Self::Until { deadline, .. } => {
                Some(deadline.saturating_duration_since(Instant::now()))
            }
            Self::Forever => None,
        }
    }

    /// The deadline, if any.
    pub(crate) fn deadline(self) -> Option<Instant> {
        match self {
            Self::Until { deadline, .. } => Some(deadline),
            Self::Never | Self::Forever => None,
        }
    }

    /// The wait's length as the caller gave it (`None`: unbounded).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // as `timeout`
    pub(crate) fn timeout(self) -> Option<Duration> {
        match self {
            Self::Never => Some(Duration::ZERO),
            Self::Until { timeout, .. } => Some(timeout),
            Self::Forever => None,
        }
    }
}

/// A lock service: what a backend implements once.
pub(crate) trait Backend: Send + Sync + 'static {
    /// Acquires `key` in `mode`, waiting as `wait` allows: the hold, or `None` if the key is
    /// still held in a conflicting mode when the wait ends.
    fn acquire<'a>(
        &'a self,
        key: LockKey<'a>,
        mode: Mode,
        wait: Wait,
    ) -> BoxFuture<'a, Result<Option<Box<dyn Hold>>, Error>>;

    /// The backend's name in the telemetry (`LockName::Distributed`): `"file"`,
    /// `"postgres"`, `"etcd"`.
    #[cfg_attr(not(feature = "telemetry"), allow(dead_code))]
    fn name(&self) -> &'static str;

    /// What `LockClient`'s `Debug` shows of the backend.
    fn describe(&self, f: &mut std::fmt::DebugStruct<'_, '_>);

    /// Campaigns for the leadership of `name` with `value`, waiting as `wait` allows: the
    /// leadership, or `None` if another candidacy still leads when the wait ends (a
    /// candidacy that did not win is withdrawn before this returns).
    fn campaign<'a>(
        &'a self,
        name: &'a str,
        value: &'a [u8],
        wait: Wait,
    ) -> BoxFuture<'a, Result<Option<Box<dyn Leading>>, Error>>;

    /// The leader of `name` now (`None`: no candidacy leads).
    fn leader<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Leader>, Error>>;

    /// How often the default [`observe`](Backend::observe) asks [`leader`](Backend::leader).
    fn observe_every(&self) -> Duration {
        Duration::from_millis(100)
    }

    /// Publishes the leaders of `name` until every receiver of `publisher` is gone. By
    /// default, asks [`leader`](Backend::leader) every [`observe_every`](Backend::observe_every);
    /// a backend that can be told of changes overrides it.
    fn observe(self: Arc<Self>, name: String, mut publisher: Publisher) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let every = self.observe_every();
            loop {
                if let Ok(leader) = self.leader(&name).await {
                    publisher.publish(leader);
                }
                tokio::select! {
                    () = publisher.closed() => return,
                    () = tokio::time::sleep(every) => {}
                }
            }
        })
    }
}

/// A leading candidacy of a [`Backend`]: a hold of the name's leadership ([`Hold::release`]
/// resigns, dropping it resigns without reporting) whose value can change.
pub(crate) trait Leading: Hold {
    /// Sets the leader's value, if this candidacy still leads ([`Error::Lost`] otherwise).
    fn proclaim<'a>(&'a self, value: &'a [u8]) -> BoxFuture<'a, Result<(), Error>>;
}

/// One held key of a [`Backend`]; dropping it releases the key.
pub(crate) trait Hold: Send + Sync + 'static {
    /// The fencing token of this acquisition.
    fn token(&self) -> FencingToken;
    /// Whether the hold is known to be lost (sticky).
    fn is_lost(&self) -> bool;
    /// Completes when the hold is lost.
    fn lost(&self) -> BoxFuture<'_, ()>;
    /// Releases the key and reports whether that worked.
    fn release(self: Box<Self>) -> BoxFuture<'static, Result<(), Error>>;
}
