//! Semaphore stripes: Guava's `Striped.semaphore`, a fixed set of FIFO counting semaphores
//! shared by an unbounded set of keys.

use std::fmt;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher, Hash};
use std::time::{Duration, Instant};

use super::{DefaultHashBuilder, StripeGuards, Striped};
use crate::engine::sharded::Ticket;
use crate::engine::wait::{Deadline, acquire_weighted};
use crate::engine::weighted::Weighted;
use crate::telemetry::hooks::{Held, KeyProbe, Label, ProbeKind};

/// A FIFO counting semaphore: at most `permits` holders at once, served in arrival order,
/// with timeouts that never lose a grant. The stripe type of
/// [`Striped::semaphores`]; usable on its own too.
///
/// It is the keyed permit manager's engine with a single key, so it shares its guarantees
/// and its verification.
///
/// # Examples
///
/// ```
/// use chainlock::striped::Semaphore;
///
/// let pool = Semaphore::new(2);
/// let (a, b) = (pool.acquire(), pool.acquire());
/// assert!(pool.try_acquire().is_none());
/// drop(a);
/// assert_eq!(pool.available(), 1);
/// # drop(b);
/// ```
pub struct Semaphore {
    /// One shard, one key (`()`): the hash is never used to choose anything.
    registry: Weighted<(), BuildHasherDefault<DefaultHasher>>,
}

impl Semaphore {
    /// Creates a semaphore of `permits` permits.
    ///
    /// # Panics
    ///
    /// Panics if `permits` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(chainlock::striped::Semaphore::new(3).permits(), 3);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn new(permits: usize) -> Self {
        assert!(permits > 0, "a semaphore needs at least one permit");
        Self {
            registry: Weighted::with_telemetry(
                1,
                permits as u64,
                BuildHasherDefault::default(),
                KeyProbe::new(ProbeKind::Striped {
                    set: Label::caller(),
                }),
            ),
        }
    }

    /// Takes a permit, blocking until one is free and every earlier waiter was served.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = chainlock::striped::Semaphore::new(1);
    /// drop(pool.acquire());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn acquire(&self) -> SemaphorePermit<'_> {
        self.acquire_by(Deadline::Forever)
            .expect("an untimed acquisition always succeeds")
    }

    /// Takes a permit if one is free right now and nobody waits; never waits.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = chainlock::striped::Semaphore::new(1);
    /// let held = pool.try_acquire().unwrap();
    /// assert!(pool.try_acquire().is_none());
    /// # drop(held);
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_acquire(&self) -> Option<SemaphorePermit<'_>> {
        self.acquire_by(Deadline::Now)
    }

    /// Takes a permit, waiting at most `timeout`; `None` if the time ran out.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let pool = chainlock::striped::Semaphore::new(1);
    /// let _held = pool.acquire();
    /// assert!(pool.try_acquire_for(Duration::from_millis(5)).is_none());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_acquire_for(&self, timeout: Duration) -> Option<SemaphorePermit<'_>> {
        self.acquire_by(Deadline::after(timeout))
    }

    /// Takes a permit, waiting until `deadline` at the latest.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let pool = chainlock::striped::Semaphore::new(1);
    /// assert!(pool.try_acquire_until(Instant::now() + Duration::from_millis(5)).is_some());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_acquire_until(&self, deadline: Instant) -> Option<SemaphorePermit<'_>> {
        self.acquire_by(Deadline::At(deadline))
    }

    #[cfg_attr(feature = "telemetry", track_caller)]
    fn acquire_by(&self, deadline: Deadline) -> Option<SemaphorePermit<'_>> {
        acquire_weighted(&self.registry, (), 1, deadline).map(|(ticket, held)| SemaphorePermit {
            registry: &self.registry,
            ticket,
            held,
        })
    }

    /// Names this semaphore in [`telemetry`](crate::telemetry) reports (default: the
    /// location of the constructor's call, `"src/main.rs:12"`).
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = chainlock::striped::Semaphore::new(4).telemetry_name("pool");
    /// # drop(pool);
    /// ```
    #[cfg(feature = "telemetry")]
    #[cfg_attr(docsrs, doc(cfg(feature = "telemetry")))]
    #[must_use]
    pub fn telemetry_name(mut self, name: &str) -> Self {
        self.registry
            .telemetry
            .rename(crate::telemetry::hooks::Label::named(name));
        self
    }

    /// The number of permits.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(chainlock::striped::Semaphore::new(4).permits(), 4);
    /// ```
    #[must_use]
    pub fn permits(&self) -> usize {
        self.registry.capacity() as usize
    }

    /// The number of permits free right now (a snapshot).
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = chainlock::striped::Semaphore::new(4);
    /// let _held = pool.acquire();
    /// assert_eq!(pool.available(), 3);
    /// ```
    #[must_use]
    pub fn available(&self) -> usize {
        let used = self.registry.probe(&()).map_or(0, |(used, _)| used);
        (self.registry.capacity() - used) as usize
    }

    /// The number of threads waiting for a permit right now (a snapshot).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(chainlock::striped::Semaphore::new(1).waiting(), 0);
    /// ```
    #[must_use]
    pub fn waiting(&self) -> usize {
        self.registry.probe(&()).map_or(0, |(_, waiting)| waiting)
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("permits", &self.permits())
            .field("available", &self.available())
            .finish()
    }
}

/// A permit of a [`Semaphore`], given back when it drops. `Send`: another thread may give it
/// back.
///
/// # Examples
///
/// ```
/// let pool = chainlock::striped::Semaphore::new(1);
/// let permit = pool.acquire();
/// std::thread::scope(|s| {
///     s.spawn(move || drop(permit));
/// });
/// assert_eq!(pool.available(), 1);
/// ```
#[must_use = "if unused the permit is given back at once"]
#[clippy::has_significant_drop]
pub struct SemaphorePermit<'a> {
    registry: &'a Weighted<(), BuildHasherDefault<DefaultHasher>>,
    ticket: Ticket,
    /// The hold's telemetry record (zero-sized without the feature).
    held: Held,
}

impl Drop for SemaphorePermit<'_> {
    fn drop(&mut self) {
        std::mem::take(&mut self.held).released();
        self.registry.release(self.ticket, 1);
    }
}

impl fmt::Debug for SemaphorePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphorePermit").finish_non_exhaustive()
    }
}

impl Striped<Semaphore> {
    /// Creates `stripes` semaphores (rounded up to a power of two) of `permits` permits each,
    /// with a randomly seeded [`DefaultHashBuilder`]: Guava's `Striped.semaphore(stripes,
    /// permits)`.
    ///
    /// # Panics
    ///
    /// Panics if `stripes` or `permits` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::striped::{Semaphore, Striped};
    ///
    /// // At most 3 concurrent requests per host, over 64 semaphores.
    /// let hosts: Striped<Semaphore> = Striped::semaphores(64, 3);
    /// let permit = hosts.acquire("example.org");
    /// assert_eq!(hosts.get("example.org").available(), 2);
    /// # drop(permit);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn semaphores(stripes: usize, permits: usize) -> Self {
        Self::semaphores_with_hasher(stripes, permits, DefaultHashBuilder::default())
    }
}

impl<S> Striped<Semaphore, S> {
    /// Creates `stripes` semaphores (rounded up to a power of two) of `permits` permits each,
    /// mapping keys with `hasher`.
    ///
    /// # Panics
    ///
    /// Panics if `stripes` or `permits` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::hash::BuildHasherDefault;
    /// use std::collections::hash_map::DefaultHasher;
    /// use chainlock::striped::{Semaphore, Striped};
    ///
    /// let hosts: Striped<Semaphore, BuildHasherDefault<DefaultHasher>> =
    ///     Striped::semaphores_with_hasher(4, 1, BuildHasherDefault::default());
    /// assert_eq!(hosts.stripe_count(), 4);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn semaphores_with_hasher(stripes: usize, permits: usize, hasher: S) -> Self {
        assert!(permits > 0, "a semaphore needs at least one permit");
        Self::from_fn(stripes, hasher, |_| Semaphore::new(permits))
    }
}

impl<S: BuildHasher> Striped<Semaphore, S> {
    /// Takes a permit of the stripe of `key`, blocking until one is free (FIFO).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::striped::Striped;
    ///
    /// let hosts = Striped::semaphores(8, 1);
    /// let held = hosts.acquire(&7_u32);
    /// assert!(hosts.try_acquire(&7_u32).is_none());
    /// # drop(held);
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn acquire<Q: Hash + ?Sized>(&self, key: &Q) -> SemaphorePermit<'_> {
        self.get(key).acquire()
    }

    /// Takes a permit of the stripe of `key` if one is free right now.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::striped::Striped;
    ///
    /// let hosts = Striped::semaphores(8, 2);
    /// assert!(hosts.try_acquire("h").is_some());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_acquire<Q: Hash + ?Sized>(&self, key: &Q) -> Option<SemaphorePermit<'_>> {
        self.get(key).try_acquire()
    }

    /// Takes a permit of the stripe of `key`, waiting at most `timeout`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use chainlock::striped::Striped;
    ///
    /// let hosts = Striped::semaphores(8, 1);
    /// let _held = hosts.acquire("h");
    /// assert!(hosts.try_acquire_for("h", Duration::from_millis(5)).is_none());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_acquire_for<Q: Hash + ?Sized>(
        &self,
        key: &Q,
        timeout: Duration,
    ) -> Option<SemaphorePermit<'_>> {
        self.get(key).try_acquire_for(timeout)
    }

    /// Takes a permit of `key`'s stripe, waiting until `deadline` at the latest.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use chainlock::striped::Striped;
    ///
    /// let hosts = Striped::semaphores(8, 1);
    /// let held = hosts.acquire("h");
    /// assert!(hosts.try_acquire_until("h", Instant::now() + Duration::from_millis(5)).is_none());
    /// drop(held);
    /// assert!(hosts.try_acquire_until("h", Instant::now()).is_some());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_acquire_until<Q: Hash + ?Sized>(
        &self,
        key: &Q,
        deadline: Instant,
    ) -> Option<SemaphorePermit<'_>> {
        self.get(key).try_acquire_until(deadline)
    }

    /// Takes a permit of the stripe of each of `keys`, each stripe once, in ascending stripe
    /// order, so that bulk acquirers never deadlock one another.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::striped::Striped;
    ///
    /// let hosts = Striped::semaphores(1, 2);
    /// let held = hosts.acquire_all(["a", "b"]); // one stripe: one permit
    /// assert_eq!(held.len(), 1);
    /// assert_eq!(hosts.get("a").available(), 1);
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn acquire_all<Q, I>(&self, keys: I) -> StripeGuards<SemaphorePermit<'_>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        // Each stripe is a `Semaphore` that records itself; called directly here (not
        // through a function or closure) so that its site is the caller's line.
        let indices = self.indices_of(keys);
        let mut guards = Vec::with_capacity(indices.len());
        for index in indices {
            guards.push((index, self.stripes[index].acquire()));
        }
        StripeGuards { guards }
    }

    /// Takes a permit of the stripe of each of `keys` if every one has a free permit right
    /// now, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::striped::Striped;
    ///
    /// let hosts = Striped::semaphores(1, 1);
    /// let held = hosts.acquire("a");
    /// assert!(hosts.try_acquire_all(["a", "b"]).is_none());
    /// drop(held);
    /// assert_eq!(hosts.try_acquire_all(["a", "b"]).map(|held| held.len()), Some(1));
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_acquire_all<Q, I>(&self, keys: I) -> Option<StripeGuards<SemaphorePermit<'_>>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        let indices = self.indices_of(keys);
        let mut guards = Vec::with_capacity(indices.len());
        for index in indices {
            guards.push((index, self.stripes[index].try_acquire()?));
        }
        Some(StripeGuards { guards })
    }

    /// Takes a permit of the stripe of each of `keys` within `timeout` in total, or none of
    /// them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use chainlock::striped::Striped;
    ///
    /// let hosts = Striped::semaphores(1, 1);
    /// let held = hosts.acquire("a");
    /// assert!(hosts.try_acquire_all_for(["a", "b"], Duration::from_millis(5)).is_none());
    /// drop(held);
    /// assert!(hosts.try_acquire_all_for(["a", "b"], Duration::from_millis(5)).is_some());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_acquire_all_for<Q, I>(
        &self,
        keys: I,
        timeout: Duration,
    ) -> Option<StripeGuards<SemaphorePermit<'_>>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.try_acquire_all_until(keys, deadline),
            None => Some(self.acquire_all(keys)),
        }
    }

    /// Takes a permit of the stripe of each of `keys` before `deadline`, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use chainlock::striped::Striped;
    ///
    /// let hosts = Striped::semaphores(1, 1);
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let held = hosts.try_acquire_all_until(["a", "b"], deadline).expect("free");
    /// assert!(hosts.try_acquire_all_until(["a"], deadline).is_none());
    /// # drop(held);
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_acquire_all_until<Q, I>(
        &self,
        keys: I,
        deadline: Instant,
    ) -> Option<StripeGuards<SemaphorePermit<'_>>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        let indices = self.indices_of(keys);
        let mut guards = Vec::with_capacity(indices.len());
        for index in indices {
            guards.push((index, self.stripes[index].try_acquire_until(deadline)?));
        }
        Some(StripeGuards { guards })
    }
}
