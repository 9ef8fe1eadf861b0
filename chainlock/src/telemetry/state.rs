//! The recording state: the [`Config`] given to [`enable`](super::enable), the switches that
//! hold it (plain atomics, read by every hook), and the registry of every lock class, which
//! [`report`] and [`reset`] go through.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;

use super::class::Class;
use super::live::{self};
use super::report::Report;
use super::snapshot::{Cycle, Live};

/// What to record, given to [`enable`](super::enable).
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

    /// Emits a `tracing::warn!` carrying a [`Live`](super::Live) snapshot when a wait passes `threshold`.
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
    /// are summed as [`LockName::OtherKeys`](super::LockName::OtherKeys).
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

// The switches are plain `std` atomics, also under loom: statics outlive a loom model (the
// loom models check the statistics themselves, `class.rs` and `histogram.rs`).

/// Whether recording is on: the one load of an acquire while telemetry is off at run time.
static ENABLED: AtomicBool = AtomicBool::new(false);
static SAMPLE_EVERY: AtomicU32 = AtomicU32::new(1);
/// The slow-wait threshold in nanoseconds; 0: no report.
static SLOW_WAIT: AtomicU64 = AtomicU64::new(0);
static HOT_KEYS: AtomicUsize = AtomicUsize::new(32);

/// Every class ever made, weakly: a class lives as long as its probe (and the guards that
/// record into it). Pruned of the dead ones whenever it grows past twice its live size.
static REGISTRY: Mutex<Vec<Weak<Class>>> = Mutex::new(Vec::new());
static REGISTRY_LIVE: AtomicUsize = AtomicUsize::new(0);

pub(super) fn enable(config: &Config) {
    SAMPLE_EVERY.store(config.sample_every, Ordering::Relaxed);
    SLOW_WAIT.store(
        config.slow_wait.map_or(0, |d| {
            u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1)
        }),
        Ordering::Relaxed,
    );
    HOT_KEYS.store(config.hot_keys, Ordering::Relaxed);
    ENABLED.store(true, Ordering::Relaxed);
}

pub(super) fn disable() {
    ENABLED.store(false, Ordering::Relaxed);
}

/// Whether telemetry records now: a hot loop that asks once can run an instantiation
/// without hooks (a walk does).
#[expect(
    clippy::inline_always,
    reason = "the one load of every hook while the telemetry is off at run time"
)]
#[inline(always)]
pub(crate) fn recording() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

pub(super) fn sample_every() -> u32 {
    SAMPLE_EVERY.load(Ordering::Relaxed)
}

fn classes() -> Vec<Arc<Class>> {
    REGISTRY
        .lock()
        .iter()
        .filter_map(Weak::upgrade)
        .filter(|class| !class.retired.load(Ordering::Relaxed))
        .collect()
}

pub(super) fn register(class: &Arc<Class>) {
    let mut registry = REGISTRY.lock();
    if registry.len() >= 2 * REGISTRY_LIVE.load(Ordering::Relaxed).max(64) {
        registry.retain(|weak| weak.strong_count() > 0);
        REGISTRY_LIVE.store(registry.len(), Ordering::Relaxed);
    }
    registry.push(Arc::downgrade(class));
}

pub(super) fn reset() {
    for class in classes() {
        class.reset();
    }
    live::forget_cycles();
}

pub(super) fn report() -> Report {
    let mut locks: Vec<_> = classes()
        .iter()
        .filter(|class| class.is_used())
        .map(|class| class.stats())
        .collect();
    locks.sort_by(|a, b| a.lock.cmp(&b.lock));
    Report {
        locks,
        sample_every: sample_every(),
    }
}

pub(super) fn live() -> Live {
    live::snapshot()
}

pub(super) fn cycles() -> Vec<Cycle> {
    live::cycles()
}

/// The slow-wait threshold in nanoseconds (0: no report).
pub(super) fn slow_wait_nanos() -> u64 {
    SLOW_WAIT.load(Ordering::Relaxed)
}

/// How many hot keys a keyed class keeps.
pub(super) fn hot_keys() -> usize {
    HOT_KEYS.load(Ordering::Relaxed)
}
