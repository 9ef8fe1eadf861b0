//! Upgradable reads: a node held for reading by one upgrader at a time (other readers pass),
//! made writable in place, without being released, when the holder finds it must change it.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::Instant;

/// A lock with an upgradable read mode (lock_api's `upgradable_read_arc`): many readers and
/// one upgradable reader share it; the upgradable reader can become the writer in place,
/// without releasing, once the plain readers have left.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no upgradable read mode",
    label = "an upgradable level needs a lock with upgradable reads",
    note = "an `upgradable` level needs a `lock_api`/parking_lot `RwLock` (its raw lock implements `lock_api::RawRwLockUpgrade`); or make the level `shared` or exclusive"
)]
pub trait UpgradableLock {
    /// The data the lock protects.
    type Target: ?Sized;
    /// The owned upgradable read guard.
    type Guard: Deref<Target = Self::Target>;
    /// The owned write guard an upgrade gives.
    type Upgraded: DerefMut<Target = Self::Target>;

    /// Blocks until the lock is held as the upgradable reader.
    fn lock_upgradable(this: &Arc<Self>) -> Self::Guard;

    /// The upgradable read if it can be had without waiting. The default answers `None`
    /// (cannot tell without waiting): a chain locker whose first locked level after
    /// `optimistic` ones is such a lock then always waits for it out of its pin (correct,
    /// one descent more). `lock_api`'s `RwLock` tries.
    #[inline]
    fn try_lock_upgradable(this: &Arc<Self>) -> Option<Self::Guard> {
        let _ = this;
        None
    }

    /// Turns the upgradable read into the write lock, waiting for the plain readers to
    /// leave; no other writer can get in between.
    fn upgrade(guard: Self::Guard) -> Self::Upgraded;
}

/// An [`UpgradableLock`] that can give up waiting at a deadline.
pub trait TimedUpgradableLock: UpgradableLock {
    /// Waits to become the upgradable reader until `deadline`; `None` if it passed first.
    fn try_lock_upgradable_until(this: &Arc<Self>, deadline: Instant) -> Option<Self::Guard>;
}

impl<R: lock_api::RawRwLockUpgrade, T: ?Sized> UpgradableLock for lock_api::RwLock<R, T> {
    type Target = T;
    type Guard = lock_api::ArcRwLockUpgradableReadGuard<R, T>;
    type Upgraded = lock_api::ArcRwLockWriteGuard<R, T>;

    #[inline]
    fn lock_upgradable(this: &Arc<Self>) -> Self::Guard {
        this.upgradable_read_arc()
    }

    #[inline]
    fn try_lock_upgradable(this: &Arc<Self>) -> Option<Self::Guard> {
        this.try_upgradable_read_arc()
    }

    #[inline]
    fn upgrade(guard: Self::Guard) -> Self::Upgraded {
        lock_api::ArcRwLockUpgradableReadGuard::upgrade(guard)
    }
}

impl<R, T> TimedUpgradableLock for lock_api::RwLock<R, T>
where
    R: lock_api::RawRwLockUpgradeTimed<Instant = Instant>,
    T: ?Sized,
{
    #[inline]
    fn try_lock_upgradable_until(this: &Arc<Self>, deadline: Instant) -> Option<Self::Guard> {
        this.try_upgradable_read_arc_until(deadline)
    }
}

/// A node held as the upgradable reader: it reads as `&T` and, once
/// [`upgrade`](Self::upgrade)d, writes as `&mut T`, all without releasing the lock.
///
/// # Examples
///
/// ```
/// use chainlock::chain::Upgradable;
/// use chainlock::parking_lot::RwLock;
/// use std::sync::Arc;
///
/// let classes = Arc::new(RwLock::new(vec![8u32, 8]));
/// let mut lecture = Upgradable::lock(&classes);
/// assert!(classes.try_read().is_some(), "plain readers still get in");
/// if lecture.iter().all(|&size| size == 8) {
///     lecture.upgrade().push(0); // every class is full: add one, in place
/// }
/// assert!(lecture.is_upgraded() && classes.try_read().is_none());
/// drop(lecture);
/// assert_eq!(*classes.read(), [8, 8, 0]);
/// ```
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct Upgradable<L: UpgradableLock + ?Sized> {
    state: State<L::Guard, L::Upgraded>,
}

enum State<R, W> {
    Read(R),
    Write(W),
    /// Only while `upgrade` moves the guard from one state to the other.
    Upgrading,
}

impl<L: UpgradableLock + ?Sized> Upgradable<L> {
    /// Blocks until `lock` is held as the upgradable reader.
    ///
    /// # Examples
    ///
    /// See [`Upgradable`].
    pub fn lock(lock: &Arc<L>) -> Self {
        Upgradable::from_guard(L::lock_upgradable(lock))
    }

    /// Wraps an upgradable read guard.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::chain::Upgradable;
    /// use chainlock::parking_lot::RwLock;
    /// use std::sync::Arc;
    ///
    /// let value = Arc::new(RwLock::new(1));
    /// let held: Upgradable<RwLock<i32>> = Upgradable::from_guard(value.upgradable_read_arc());
    /// assert_eq!(*held, 1);
    /// ```
    pub fn from_guard(guard: L::Guard) -> Self {
        Upgradable {
            state: State::Read(guard),
        }
    }

    /// The data, writable: upgrades the lock in place first if it is not yet (waiting for
    /// the plain readers to leave; no writer gets in between).
    ///
    /// # Examples
    ///
    /// See [`Upgradable`].
    pub fn upgrade(&mut self) -> &mut L::Target {
        if let State::Read(_) = self.state {
            let State::Read(guard) = std::mem::replace(&mut self.state, State::Upgrading) else {
                unreachable!("checked just above")
            };
            self.state = State::Write(L::upgrade(guard));
        }
        match &mut self.state {
            State::Write(guard) => guard,
            _ => unreachable!("upgraded just above"),
        }
    }

    /// Whether [`upgrade`](Self::upgrade) has made the lock the writer's.
    ///
    /// # Examples
    ///
    /// See [`Upgradable`].
    pub fn is_upgraded(&self) -> bool {
        matches!(self.state, State::Write(_))
    }

    /// The write guard, upgrading first if needed.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::chain::Upgradable;
    /// use chainlock::parking_lot::RwLock;
    /// use std::sync::Arc;
    ///
    /// let value = Arc::new(RwLock::new(1));
    /// let mut writer = Upgradable::lock(&value).into_upgraded();
    /// *writer += 1;
    /// drop(writer);
    /// assert_eq!(*value.read(), 2);
    /// ```
    pub fn into_upgraded(mut self) -> L::Upgraded {
        self.upgrade();
        match self.state {
            State::Write(guard) => guard,
            _ => unreachable!("upgraded just above"),
        }
    }
}

impl<L: UpgradableLock + ?Sized> Deref for Upgradable<L> {
    type Target = L::Target;

    #[inline]
    fn deref(&self) -> &L::Target {
        match &self.state {
            State::Read(guard) => guard,
            State::Write(guard) => guard,
            State::Upgrading => unreachable!("only seen inside `upgrade`"),
        }
    }
}

impl<L: UpgradableLock + ?Sized> fmt::Debug for Upgradable<L>
where
    L::Target: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upgradable")
            .field("upgraded", &self.is_upgraded())
            .field("data", &&**self)
            .finish()
    }
}
