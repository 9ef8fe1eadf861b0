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

use std::fmt;
use std::panic::Location;
use std::sync::Arc;
use std::time::Duration;

mod class;
mod histogram;
pub(crate) mod hooks;
mod live;
mod pprof;
mod probe;
mod table;
#[cfg(all(test, loom))]
mod tests {
    mod loom_recording;
}

/// What to record, given to [`enable`].
///
/// ```
/// use std::time::Duration;
/// use chainlock::telemetry::Config;
///
/// let config = Config::new()
///     .sample_every(100)
///     .slow_wait(Duration::from_millis(20))
///     .hot_keys(16);
/// # let _ = config;
/// ```
#[must_use]
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub(crate) sample_every: u32,
    pub(crate) slow_wait: Option<Duration>,
    pub(crate) hot_keys: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self::new()
    }
}

impl Config {
    /// Every acquisition timed, no slow-wait report, the 32 hottest keys of each keyed
    /// manager.
    ///
    /// ```
    /// let config = chainlock::telemetry::Config::new();
    /// # let _ = config;
    /// ```
    pub fn new() -> Self {
        Self {
            sample_every: 1,
            slow_wait: None,
            hot_keys: 32,
        }
    }

    /// Records one acquisition in `n` per thread (1, the default: all), at random intervals
    /// averaging `n`; the others cost a thread-local countdown and record nothing. A sampled
    /// acquisition counts for `n`: counts and site figures estimate the whole (as Go's mutex
    /// profile does), the histograms describe the sample, and the live table, the slow-wait
    /// reports and the cycle check see sampled acquisitions only (see the guide, "Cost").
    ///
    /// # Panics
    ///
    /// If `n` is 0.
    ///
    /// ```
    /// let config = chainlock::telemetry::Config::new().sample_every(100);
    /// # let _ = config;
    /// ```
    pub fn sample_every(mut self, n: u32) -> Self {
        assert!(n > 0, "sample_every(0): sample one acquisition in n >= 1");
        self.sample_every = n;
        self
    }

    /// Emits a `tracing::warn!` carrying a [`Live`] snapshot when a wait passes `threshold`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let config = chainlock::telemetry::Config::new().slow_wait(Duration::from_millis(20));
    /// # let _ = config;
    /// ```
    pub fn slow_wait(mut self, threshold: Duration) -> Self {
        self.slow_wait = Some(threshold);
        self
    }

    /// Keeps the statistics of the `n` hottest keys of each keyed manager; the other keys
    /// are summed as [`LockName::OtherKeys`].
    ///
    /// ```
    /// let config = chainlock::telemetry::Config::new().hot_keys(8);
    /// # let _ = config;
    /// ```
    pub fn hot_keys(mut self, n: usize) -> Self {
        self.hot_keys = n;
        self
    }
}

/// Starts recording with `config` (replacing the configuration if already recording).
///
/// ```
/// chainlock::telemetry::enable(chainlock::telemetry::Config::new());
/// assert!(chainlock::telemetry::is_enabled());
/// # chainlock::telemetry::disable();
/// ```
pub fn enable(config: Config) {
    probe::enable(&config);
}

/// Stops recording; the statistics recorded so far stay until [`reset`].
///
/// ```
/// chainlock::telemetry::disable();
/// assert!(!chainlock::telemetry::is_enabled());
/// ```
pub fn disable() {
    probe::disable();
}

/// Whether recording is on.
///
/// ```
/// let _on = chainlock::telemetry::is_enabled();
/// ```
pub fn is_enabled() -> bool {
    probe::recording()
}

/// Zeroes every statistic (and forgets the cycles seen).
///
/// ```
/// chainlock::telemetry::reset();
/// ```
pub fn reset() {
    probe::reset();
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
    probe::report()
}

/// The holders and waiters now (see the guide for what sampling hides).
///
/// ```
/// println!("{}", chainlock::telemetry::live());
/// ```
pub fn live() -> Live {
    probe::live()
}

/// The wait-for cycles seen since the last [`reset`] (debug builds only; empty in release
/// builds).
///
/// ```
/// assert!(chainlock::telemetry::cycles().is_empty());
/// ```
pub fn cycles() -> Vec<Cycle> {
    probe::cycles()
}

/// The statistics of every lock class, from [`report`].
///
/// ```
/// let report = chainlock::telemetry::report();
/// println!("{report}");
/// ```
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct Report {
    /// One entry per lock class.
    pub locks: Vec<LockStats>,
    /// The sampling rate in force when the report was made ([`Config::sample_every`]): each
    /// sampled acquisition was counted this many times in the counts and site figures.
    pub sample_every: u32,
}

impl Report {
    /// The `n` locks with the most total wait, most first.
    ///
    /// ```
    /// for lock in chainlock::telemetry::report().hottest(5) {
    ///     println!("{} {:?}", lock.lock, lock.wait.total);
    /// }
    /// ```
    pub fn hottest(&self, n: usize) -> impl Iterator<Item = &LockStats> {
        let mut locks: Vec<&LockStats> = self.locks.iter().collect();
        locks.sort_by_key(|lock| std::cmp::Reverse(lock.wait.total));
        locks.into_iter().take(n)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.table())
    }
}

/// The statistics of one lock class.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct LockStats {
    /// Which lock.
    pub lock: LockName,
    /// Acquisitions (exact with `sample_every(1)`; else each sampled one counts for the
    /// sampling rate: an estimate).
    pub acquisitions: u64,
    /// Acquisitions that had to wait (an estimate, as `acquisitions`).
    pub contended: u64,
    /// The waits of the sampled acquisitions, contended or not.
    pub wait: Summary,
    /// The sampled holds by threads.
    pub hold: Summary,
    /// The sampled holds of async guards (held by a task, across `.await`).
    pub hold_across_await: Summary,
    /// Sum over releases of the waiters left waiting (an estimate, as `acquisitions`).
    pub waiters_at_release: u64,
    /// Up to 4 waiter sites, by total wait (each wait counted and timed as `contended`:
    /// estimates under sampling).
    pub waiter_sites: Vec<SiteStats>,
    /// The waits of every other site, summed: with `waiter_sites`, the whole of
    /// `contended`, and of the wait (`wait.total` times the sampling rate).
    pub other_waiter_sites: OtherSites,
    /// Up to 4 holder sites, by delay charged: at each release, the waiting of every
    /// waiter since the previous recorded release (Go 1.22's mutex profile: each wait is
    /// charged once, so the charges sum to the waiting time when every acquisition is
    /// recorded; under sampling, an underestimate).
    pub holder_sites: Vec<SiteStats>,
    /// The delay charged to every other holder site, summed.
    pub other_holder_sites: OtherSites,
}

/// The share of the sites a [`LockStats`] does not name (beyond the four it shows), summed.
///
/// ```
/// for lock in &chainlock::telemetry::report().locks {
///     let named: u64 = lock.waiter_sites.iter().map(|site| site.count).sum();
///     assert_eq!(named + lock.other_waiter_sites.count, lock.contended);
/// }
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OtherSites {
    /// How many waits (waiter side) or releases that ended waits (holder side).
    pub count: u64,
    /// The wait (waiter side) or the delay charged (holder side).
    pub total: Duration,
}

/// One call site's share of a lock's waits or delays.
#[non_exhaustive]
#[derive(Clone, Copy, Debug)]
pub struct SiteStats {
    /// Where.
    pub site: &'static Location<'static>,
    /// How many waits (waiter side) or releases that ended waits (holder side).
    pub count: u64,
    /// The wait (waiter side) or the delay charged (holder side).
    pub total: Duration,
}

/// A distribution of durations: count, total, min, max and percentiles.
#[non_exhaustive]
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// How many durations.
    pub count: u64,
    /// Their sum.
    pub total: Duration,
    /// The shortest.
    pub min: Duration,
    /// The longest.
    pub max: Duration,
    /// The median (within the histogram's resolution, 1/8 of the value).
    pub p50: Duration,
    /// The 99th percentile (within the histogram's resolution).
    pub p99: Duration,
    pub(crate) buckets: Vec<(Duration, u64)>,
}

impl Summary {
    /// The histogram's non-empty buckets: (upper bound, count), shortest first.
    ///
    /// ```
    /// let report = chainlock::telemetry::report();
    /// for lock in &report.locks {
    ///     for (upper, count) in lock.wait.buckets() {
    ///         println!("{} <= {upper:?}: {count}", lock.lock);
    ///     }
    /// }
    /// ```
    pub fn buckets(&self) -> impl Iterator<Item = (Duration, u64)> + '_ {
        self.buckets.iter().copied()
    }

    /// The mean, zero if empty.
    ///
    /// ```
    /// let summary = chainlock::telemetry::Summary::default();
    /// assert_eq!(summary.mean(), std::time::Duration::ZERO);
    /// ```
    pub fn mean(&self) -> Duration {
        if self.count == 0 {
            Duration::ZERO
        } else {
            let nanos = self.total.as_nanos() / u128::from(self.count);
            Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
        }
    }
}

/// Which lock (or lock class) statistics belong to.
///
/// ```
/// use chainlock::telemetry::LockName;
/// let name = LockName::Key { manager: "sessions".into(), key: "42".into() };
/// assert_eq!(name.to_string(), "sessions[key 42]");
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LockName {
    /// A level of a `chain_locker!`.
    Level {
        /// The locker (its levels joined by `>`).
        locker: &'static str,
        /// The level, from the root (0).
        level: usize,
        /// The level's name.
        name: &'static str,
    },
    /// A depth of a walk.
    Depth {
        /// The walk's label (`"walk"` unless named).
        walk: &'static str,
        /// The depth, from the root (0).
        depth: usize,
    },
    /// One hot key of a keyed manager.
    Key {
        /// The manager's label (the constructor's location unless named).
        manager: Arc<str>,
        /// The key (its `Debug` if opted in, else `#<hash>`).
        key: Arc<str>,
    },
    /// The keys of a manager outside its hottest ones, summed.
    OtherKeys {
        /// The manager's label.
        manager: Arc<str>,
    },
    /// One stripe of a striped set.
    Stripe {
        /// The set's label.
        set: Arc<str>,
        /// The stripe.
        index: usize,
    },
    /// One room of a set of rooms.
    Room {
        /// The rooms' label.
        rooms: Arc<str>,
        /// The room.
        room: Arc<str>,
    },
    /// One name of a distributed backend.
    Distributed {
        /// The backend (`"file"`, `"postgres"`, `"etcd"`).
        backend: &'static str,
        /// The lock's name.
        name: Arc<str>,
    },
}

impl fmt::Display for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Level {
                locker,
                level,
                name,
            } => write!(f, "{locker} level {level} ({name})"),
            Self::Depth { walk, depth } => write!(f, "{walk} depth {depth}"),
            Self::Key { manager, key } => write!(f, "{manager}[key {key}]"),
            Self::OtherKeys { manager } => write!(f, "{manager}[other keys]"),
            Self::Stripe { set, index } => write!(f, "{set}[stripe {index}]"),
            Self::Room { rooms, room } => write!(f, "{rooms}[room {room}]"),
            Self::Distributed { backend, name } => write!(f, "{backend}:{name}"),
        }
    }
}

/// The holders and waiters chainlock sees now, from [`live`].
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
}

/// One hold seen by [`live`].
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

/// One wait seen by [`live`].
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
