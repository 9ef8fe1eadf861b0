//! Owned guards narrowed to a part of the data they protect.
//!
//! A chain descent or a walk hands back the leaf's *owned* guard (lock_api's `ArcMutexGuard`,
//! `ArcRwLockWriteGuard`, …, tokio's `Owned*Guard`). [`MappedGuard::map`] narrows such a guard
//! to one field (or element) of the locked data and still owns the lock, so that a function
//! can return "the students of class 3, locked" without exposing the whole class. lock_api has
//! mapped guards only for its borrowed guards; these are the owned counterparts.
//!
//! # Examples
//!
//! ```
//! use chainlock::mapped::MappedGuard;
//! use chainlock::parking_lot::Mutex;
//! use std::sync::Arc;
//!
//! struct Class { teacher: String, students: Vec<u32> }
//!
//! let class = Arc::new(Mutex::new(Class { teacher: "Ada".into(), students: vec![] }));
//! let mut students = MappedGuard::map(class.lock_arc(), |class| &mut class.students);
//! students.push(7);
//! assert!(class.try_lock().is_none(), "the mapped guard still holds the lock");
//! drop(students);
//! assert_eq!(class.lock().students, [7]);
//! ```

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// An owned guard whose data stays at one address for as long as the guard lives, wherever
/// the guard itself is moved: what [`MappedGuard`] and [`MappedReadGuard`] need to keep a
/// pointer into the data next to the guard.
///
/// # Safety
///
/// Implementors guarantee that the place `Deref::deref` (and `DerefMut::deref_mut`, if
/// implemented) points to does not move or get freed while the guard is alive, even when the
/// guard value is moved, and that the data is accessed by no one else for as long as the
/// guard's mode excludes them (it is a guard: holding it is what grants the access). Guards
/// whose data lives in an `Arc` allocation they keep alive satisfy this; a guard holding its
/// data inline does not.
pub unsafe trait StableGuard: Deref {}

// SAFETY: lock_api's `Arc*Guard`s hold an `Arc` of the lock, so the data (inside the `Arc`'s
// heap allocation) neither moves nor is freed while the guard lives, and the raw lock grants
// the guard its access mode until the guard is dropped.
unsafe impl<R: lock_api::RawMutex, T: ?Sized> StableGuard for lock_api::ArcMutexGuard<R, T> {}
// SAFETY: as for `ArcMutexGuard`.
unsafe impl<R: lock_api::RawRwLock, T: ?Sized> StableGuard for lock_api::ArcRwLockReadGuard<R, T> {}
// SAFETY: as for `ArcMutexGuard`.
unsafe impl<R: lock_api::RawRwLock, T: ?Sized> StableGuard for lock_api::ArcRwLockWriteGuard<R, T> {}
// SAFETY: as for `ArcMutexGuard`.
unsafe impl<R: lock_api::RawRwLockUpgrade, T: ?Sized> StableGuard
    for lock_api::ArcRwLockUpgradableReadGuard<R, T>
{
}
// SAFETY: as for `ArcMutexGuard`.
unsafe impl<R: lock_api::RawMutex, G: lock_api::GetThreadId, T: ?Sized> StableGuard
    for lock_api::ArcReentrantMutexGuard<R, G, T>
{
}

#[cfg(feature = "tokio")]
mod tokio_guards {
    use super::StableGuard;
    use tokio::sync::{OwnedMutexGuard, OwnedRwLockReadGuard, OwnedRwLockWriteGuard};

    // SAFETY: tokio's owned guards hold an `Arc` of the lock; the data lives in its heap
    // allocation and the lock grants the guard its mode until it is dropped.
    unsafe impl<T: ?Sized> StableGuard for OwnedMutexGuard<T> {}
    // SAFETY: as for `OwnedMutexGuard`.
    unsafe impl<T: ?Sized> StableGuard for OwnedRwLockReadGuard<T> {}
    // SAFETY: as for `OwnedMutexGuard`.
    unsafe impl<T: ?Sized> StableGuard for OwnedRwLockWriteGuard<T> {}
}

/// An owned guard narrowed, mutably, to a part `U` of the data it protects. It holds the lock
/// until dropped, exactly as the guard it was made from.
///
/// # Examples
///
/// ```
/// use chainlock::mapped::MappedGuard;
/// use chainlock::parking_lot::RwLock;
/// use std::sync::Arc;
///
/// let scores = Arc::new(RwLock::new(vec![10, 20, 30]));
/// let mut second = MappedGuard::try_map(scores.write_arc(), |v| v.get_mut(1)).ok().unwrap();
/// *second += 1;
/// drop(second);
/// assert_eq!(*scores.read(), [10, 21, 30]);
///
/// // A failed `try_map` gives the guard back, still locked.
/// let whole = MappedGuard::try_map(scores.write_arc(), |v| v.get_mut(9)).unwrap_err();
/// assert_eq!(whole.len(), 3);
/// ```
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct MappedGuard<G, U: ?Sized> {
    /// Points into the data `guard` protects (derived from `&mut`), valid while it lives.
    value: NonNull<U>,
    /// Holds the lock; dropped (released) with `self`.
    guard: G,
}

impl<G: StableGuard + DerefMut, U: ?Sized> MappedGuard<G, U> {
    /// Narrows `guard` to the part of its data `f` picks.
    ///
    /// # Examples
    ///
    /// See [`MappedGuard`] and the [module docs](self).
    pub fn map(mut guard: G, f: impl FnOnce(&mut G::Target) -> &mut U) -> Self {
        let value = NonNull::from(f(&mut *guard));
        MappedGuard { value, guard }
    }

    /// Narrows `guard` to the part of its data `f` picks, if `f` finds one; otherwise gives
    /// the guard back, still holding the lock.
    ///
    /// # Errors
    ///
    /// The guard itself when `f` returns `None`.
    ///
    /// # Examples
    ///
    /// See [`MappedGuard`].
    pub fn try_map(
        mut guard: G,
        f: impl FnOnce(&mut G::Target) -> Option<&mut U>,
    ) -> Result<Self, G> {
        match f(&mut *guard) {
            Some(value) => {
                let value = NonNull::from(value);
                Ok(MappedGuard { value, guard })
            }
            None => Err(guard),
        }
    }
}

impl<G, U: ?Sized> MappedGuard<G, U> {
    /// Narrows further, to a part of `U`, keeping the same lock.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::mapped::MappedGuard;
    /// use chainlock::parking_lot::Mutex;
    /// use std::sync::Arc;
    ///
    /// let grid = Arc::new(Mutex::new(vec![vec![0u8; 3]; 3]));
    /// let row = MappedGuard::map(grid.lock_arc(), |grid| &mut grid[1]);
    /// let mut cell = MappedGuard::map_further(row, |row| &mut row[2]);
    /// *cell = 9;
    /// drop(cell);
    /// assert_eq!(grid.lock()[1][2], 9);
    /// ```
    pub fn map_further<V: ?Sized>(
        mut this: Self,
        f: impl FnOnce(&mut U) -> &mut V,
    ) -> MappedGuard<G, V> {
        let value = NonNull::from(f(&mut *this));
        MappedGuard {
            value,
            guard: this.guard,
        }
    }

    /// The guard this was made from (still holding the lock), giving up the narrowing.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::mapped::MappedGuard;
    /// use chainlock::parking_lot::Mutex;
    /// use std::sync::Arc;
    ///
    /// let pair = Arc::new(Mutex::new((1, 2)));
    /// let first = MappedGuard::map(pair.lock_arc(), |pair| &mut pair.0);
    /// let whole = MappedGuard::into_inner(first);
    /// assert_eq!(*whole, (1, 2));
    /// ```
    pub fn into_inner(this: Self) -> G {
        this.guard
    }
}

impl<G, U: ?Sized> Deref for MappedGuard<G, U> {
    type Target = U;

    #[inline]
    fn deref(&self) -> &U {
        // SAFETY: `value` was derived from `&mut` data that `guard` protects and keeps in
        // place (`StableGuard`); the guard is alive as long as `self`, and `&self` lends it
        // out only shared.
        unsafe { self.value.as_ref() }
    }
}

impl<G, U: ?Sized> DerefMut for MappedGuard<G, U> {
    #[inline]
    fn deref_mut(&mut self) -> &mut U {
        // SAFETY: as in `deref`; the pointer came from `&mut` access granted by an exclusive
        // guard (`map` requires `DerefMut`), and `&mut self` makes this borrow unique.
        unsafe { self.value.as_mut() }
    }
}

// SAFETY: a `MappedGuard` is a guard `G` plus exclusive access to a `U` inside its data, as
// `(G, &mut U)` would be: sending it sends both.
unsafe impl<G: Send, U: ?Sized + Send> Send for MappedGuard<G, U> {}
// SAFETY: sharing it shares `&G` and `&U` (only `Deref` works through `&self`).
unsafe impl<G: Sync, U: ?Sized + Sync> Sync for MappedGuard<G, U> {}

impl<G, U: ?Sized + fmt::Debug> fmt::Debug for MappedGuard<G, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// An owned guard narrowed, for reading, to a part `U` of the data it protects (from a read
/// guard, or giving up write access). Holds the lock until dropped.
///
/// # Examples
///
/// ```
/// use chainlock::mapped::MappedReadGuard;
/// use chainlock::parking_lot::RwLock;
/// use std::sync::Arc;
///
/// let config = Arc::new(RwLock::new((String::from("db"), 5432)));
/// let port = MappedReadGuard::map(config.read_arc(), |config| &config.1);
/// assert_eq!(*port, 5432);
/// assert!(config.try_read().is_some(), "a read lock: other readers get in");
/// assert!(config.try_write().is_none());
/// ```
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct MappedReadGuard<G, U: ?Sized> {
    /// Points into the data `guard` protects, valid while it lives; read-only.
    value: NonNull<U>,
    guard: G,
}

impl<G: StableGuard, U: ?Sized> MappedReadGuard<G, U> {
    /// Narrows `guard` to the part of its data `f` picks.
    ///
    /// # Examples
    ///
    /// See [`MappedReadGuard`].
    pub fn map(guard: G, f: impl FnOnce(&G::Target) -> &U) -> Self {
        let value = NonNull::from(f(&*guard));
        MappedReadGuard { value, guard }
    }

    /// Narrows `guard` to the part of its data `f` picks, if `f` finds one; otherwise gives
    /// the guard back.
    ///
    /// # Errors
    ///
    /// The guard itself when `f` returns `None`.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::mapped::MappedReadGuard;
    /// use chainlock::parking_lot::RwLock;
    /// use std::sync::Arc;
    ///
    /// let names = Arc::new(RwLock::new(vec!["a", "b"]));
    /// let first = MappedReadGuard::try_map(names.read_arc(), |names| names.first()).ok().unwrap();
    /// assert_eq!(*first, "a");
    /// assert!(MappedReadGuard::try_map(names.read_arc(), |names| names.get(5)).is_err());
    /// ```
    pub fn try_map(guard: G, f: impl FnOnce(&G::Target) -> Option<&U>) -> Result<Self, G> {
        match f(&*guard).map(NonNull::from) {
            Some(value) => Ok(MappedReadGuard { value, guard }),
            None => Err(guard),
        }
    }
}

impl<G, U: ?Sized> MappedReadGuard<G, U> {
    /// Narrows further, to a part of `U`, keeping the same lock.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::mapped::MappedReadGuard;
    /// use chainlock::parking_lot::RwLock;
    /// use std::sync::Arc;
    ///
    /// let table = Arc::new(RwLock::new(vec![(1, "one")]));
    /// let row = MappedReadGuard::map(table.read_arc(), |table| &table[0]);
    /// assert_eq!(*MappedReadGuard::map_further(row, |row| &row.1), "one");
    /// ```
    pub fn map_further<V: ?Sized>(this: Self, f: impl FnOnce(&U) -> &V) -> MappedReadGuard<G, V> {
        let value = NonNull::from(f(&*this));
        MappedReadGuard {
            value,
            guard: this.guard,
        }
    }

    /// The guard this was made from (still holding the lock).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::mapped::MappedReadGuard;
    /// use chainlock::parking_lot::RwLock;
    /// use std::sync::Arc;
    ///
    /// let pair = Arc::new(RwLock::new((1, 2)));
    /// let second = MappedReadGuard::map(pair.read_arc(), |pair| &pair.1);
    /// assert_eq!(*MappedReadGuard::into_inner(second), (1, 2));
    /// ```
    pub fn into_inner(this: Self) -> G {
        this.guard
    }
}

impl<G, U: ?Sized> From<MappedGuard<G, U>> for MappedReadGuard<G, U> {
    /// Gives up write access through the narrowed guard (the lock itself is unchanged).
    fn from(mapped: MappedGuard<G, U>) -> Self {
        MappedReadGuard {
            value: mapped.value,
            guard: mapped.guard,
        }
    }
}

impl<G, U: ?Sized> Deref for MappedReadGuard<G, U> {
    type Target = U;

    #[inline]
    fn deref(&self) -> &U {
        // SAFETY: `value` points into data that `guard` protects and keeps in place
        // (`StableGuard`) for as long as `self` lives; only shared access is ever given out.
        unsafe { self.value.as_ref() }
    }
}

// SAFETY: a `MappedReadGuard` is a guard `G` plus shared access to a `U`, as `(G, &U)`:
// sending it needs `U: Sync`.
unsafe impl<G: Send, U: ?Sized + Sync> Send for MappedReadGuard<G, U> {}
// SAFETY: as `(G, &U)`.
unsafe impl<G: Sync, U: ?Sized + Sync> Sync for MappedReadGuard<G, U> {}

impl<G, U: ?Sized + fmt::Debug> fmt::Debug for MappedReadGuard<G, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::{MappedGuard, MappedReadGuard};
    use parking_lot::{Mutex, RwLock};
    use std::sync::Arc;

    #[test]
    fn a_mapped_guard_moves_and_keeps_its_pointer_valid() {
        let data = Arc::new(Mutex::new((String::from("x"), vec![1, 2, 3])));
        let mapped = MappedGuard::map(data.lock_arc(), |d| &mut d.1);
        // Moving the guard (into a Box, through a Vec) must not move the data it points to.
        let mut boxed = Box::new(mapped);
        boxed.push(4);
        let mut moved = vec![*boxed];
        let mut mapped = moved.pop().unwrap();
        mapped.push(5);
        let mut element = MappedGuard::map_further(mapped, |v| &mut v[0]);
        *element += 10;
        assert!(data.try_lock().is_none());
        drop(element);
        assert_eq!(data.lock().1, [11, 2, 3, 4, 5]);
    }

    #[test]
    fn the_arc_outlives_every_other_handle() {
        let mapped = {
            let data = Arc::new(RwLock::new(vec![String::from("kept")]));
            MappedGuard::map(data.write_arc(), |v| &mut v[0])
        };
        // The only `Arc` left is the one inside the guard.
        assert_eq!(&*mapped, "kept");
        let read: MappedReadGuard<_, String> = mapped.into();
        assert_eq!(read.len(), 4);
    }

    #[test]
    fn read_guards_share_and_release() {
        let data = Arc::new(RwLock::new([1u8, 2]));
        let a = MappedReadGuard::map(data.read_arc(), |d| &d[0]);
        let b = MappedReadGuard::map(data.read_arc(), |d| &d[1]);
        assert_eq!((*a, *b), (1, 2));
        assert!(data.try_write().is_none());
        drop((a, b));
        assert!(data.try_write().is_some());
    }

    #[test]
    fn a_panicking_projection_releases_the_lock() {
        let data = Arc::new(Mutex::new(vec![0u8]));
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            MappedGuard::map(data.lock_arc(), |v| &mut v[5])
        }));
        assert!(outcome.is_err());
        assert!(data.try_lock().is_some());
    }
}
