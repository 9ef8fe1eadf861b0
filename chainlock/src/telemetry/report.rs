//! What the telemetry recorded, as [`report`](super::report) returns it: one [`LockStats`]
//! per lock class ([`LockName`]), with [`Summary`] distributions and [`SiteStats`] per call
//! site. The exports of a report are `table.rs` and `pprof.rs`.

use std::fmt;
use std::panic::Location;
use std::sync::Arc;
use std::time::Duration;

/// The statistics of every lock class, from [`report`](super::report).
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
    /// The sampling rate in force when the report was made ([`Config::sample_every`](super::Config::sample_every)): each
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
    /// The sampled waits that ended without the lock: a deadline passed (`try_*_for`,
    /// `*_until`), an optimistic upgrade failed, a future was dropped, a waiter unwound.
    /// Not acquisitions, so not in `contended` nor `wait`; but the releases during them were
    /// charged to their holders, so with `sample_every(1)` the `holder_sites` charges sum to
    /// at most `wait.total + gave_up.total`.
    pub gave_up: Summary,
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
    /// charged once, so the charges sum to the waiting time, `wait` and `gave_up`, when
    /// every acquisition is recorded; under sampling, an underestimate).
    pub holder_sites: Vec<SiteStats>,
    /// The delay charged to every other holder site, summed.
    pub other_holder_sites: OtherSites,
    /// Optimistic passes that failed at this level or depth and started again (its version
    /// changed, or a writer held it), the restart into a pessimistic pass included (an
    /// estimate, as `acquisitions`). An optimistic read is never counted: only its restarts.
    pub restarts: u64,
    /// Of the `restarts`, those after which the descent gave up optimism and took locks
    /// (its pessimistic pass, after its restart bound): each descent's last failed level.
    pub fallbacks: u64,
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
    /// The [`HybridLock`](crate::hybrid::HybridLock)s over one data type, taken by themselves
    /// (`read`, `write` and their `try_` forms, an optimistic read's `upgrade`; a hybrid lock
    /// a chain locker or a walk takes is recorded at its level or depth). Displayed
    /// `HybridLock<data>`; the types past the hot keys' capacity are summed as
    /// `HybridLock<other types>`.
    Hybrid {
        /// The data type (`std::any::type_name`).
        data: Arc<str>,
    },
}

impl LockName {
    /// Whether the locks of this class are told apart by their address in memory (a chain
    /// level, a walk depth, a hybrid lock), the same whatever class takes them.
    pub(super) fn is_in_memory(&self) -> bool {
        matches!(
            self,
            Self::Level { .. } | Self::Depth { .. } | Self::Hybrid { .. }
        )
    }
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
            Self::Hybrid { data } => write!(f, "HybridLock<{data}>"),
        }
    }
}
