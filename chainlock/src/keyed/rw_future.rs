//! The async face of the keyed reader-writer manager: tasks wait on a waker; every lock
//! future is cancel-safe.

use std::hash::{BuildHasher, Hash};

use super::DefaultHashBuilder;
use super::future::{Async, Claim};
use super::rw::{KeyGuards, KeyReadGuard, KeyUpgradableGuard, KeyWriteGuard, RwLockManager};
use super::weighted::{READ, UPGRADABLE, WRITE};
use crate::lock_order::ascending_unique;

/// A manager of named reader-writer locks for async tasks, one per key of type `K`.
///
/// The async twin of [`KeyedRwLocks`](super::KeyedRwLocks), on the same core: many readers
/// or one writer per key, strict FIFO with batched readers, entries removed with the last
/// release. Timeouts come from the runtime (`tokio::time::timeout`); dropping a pending
/// lock future is always safe: it leaves the queue, and if it had been granted already, it
/// gives the key back at once.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use chainlock::keyed::AsyncKeyedRwLocks;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let locks = Arc::new(AsyncKeyedRwLocks::new());
/// let mut tasks = Vec::new();
/// for i in 0..4 {
///     let locks = Arc::clone(&locks);
///     tasks.push(tokio::spawn(async move {
///         if i == 0 {
///             let _w = locks.write("doc").await;
///             tokio::task::yield_now().await; // held across an await
///         } else {
///             let _r = locks.read("doc").await;
///         }
///     }));
/// }
/// for task in tasks {
///     task.await.unwrap();
/// }
/// assert!(locks.is_empty());
/// # }
/// ```
pub type AsyncKeyedRwLocks<K, S = DefaultHashBuilder> = RwLockManager<K, S, Async>;

/// A read hold of an [`AsyncKeyedRwLocks`] key.
pub type AsyncKeyReadGuard<'a, K, S = DefaultHashBuilder> = KeyReadGuard<'a, K, S, Async>;

/// A write hold of an [`AsyncKeyedRwLocks`] key.
pub type AsyncKeyWriteGuard<'a, K, S = DefaultHashBuilder> = KeyWriteGuard<'a, K, S, Async>;

/// An upgradable read hold of an [`AsyncKeyedRwLocks`] key.
pub type AsyncKeyUpgradableGuard<'a, K, S = DefaultHashBuilder> =
    KeyUpgradableGuard<'a, K, S, Async>;

impl<K: Eq + Hash, S: BuildHasher> RwLockManager<K, S, Async> {
    /// Read-locks `key`, in FIFO order.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future leaves the queue, or gives the key back if it was
    /// granted already.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let (a, b) = (locks.read(1).await, locks.read(1).await);
    /// assert!(locks.try_write(1).is_none());
    /// # drop((a, b));
    /// # }
    /// ```
    pub async fn read(&self, key: K) -> AsyncKeyReadGuard<'_, K, S> {
        let ticket = Claim::acquire(&self.registry, key, READ).await;
        KeyReadGuard::new(&self.registry, ticket)
    }

    /// Write-locks `key`, in FIFO order.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`read`](Self::read).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let r = locks.read(1).await;
    /// let timed = tokio::time::timeout(Duration::from_millis(5), locks.write(1)).await;
    /// assert!(timed.is_err()); // the dropped future left the queue
    /// drop(r);
    /// assert!(locks.is_empty());
    /// # }
    /// ```
    pub async fn write(&self, key: K) -> AsyncKeyWriteGuard<'_, K, S> {
        let ticket = Claim::acquire(&self.registry, key, WRITE).await;
        KeyWriteGuard::new(&self.registry, ticket)
    }

    /// Takes an upgradable read lock of `key`, in FIFO order.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`read`](Self::read).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let u = locks.upgradable_read("k").await;
    /// let w = u.upgrade().await;
    /// assert!(locks.is_write_locked("k"));
    /// # drop(w);
    /// # }
    /// ```
    pub async fn upgradable_read(&self, key: K) -> AsyncKeyUpgradableGuard<'_, K, S> {
        let ticket = Claim::acquire(&self.registry, key, UPGRADABLE).await;
        KeyUpgradableGuard::new(&self.registry, ticket)
    }
}

impl<K: Eq + Hash + Ord, S: BuildHasher> RwLockManager<K, S, Async> {
    /// Read-locks every key of `keys`, in ascending `Ord` order (duplicates once).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe and all-or-nothing: dropping the future releases the keys taken so far.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let held = locks.read_many(["b", "a", "b"]).await;
    /// assert_eq!(held.len(), 2);
    /// # }
    /// ```
    pub async fn read_many(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> KeyGuards<AsyncKeyReadGuard<'_, K, S>> {
        let mut guards = Vec::new();
        for key in ascending_unique(keys) {
            guards.push(self.read(key).await);
        }
        KeyGuards::new(guards)
    }

    /// Write-locks every key of `keys`, in ascending `Ord` order (duplicates once).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe and all-or-nothing, as [`read_many`](Self::read_many).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let held = locks.write_many([2, 1]).await;
    /// assert!(locks.try_read(1).is_none());
    /// drop(held);
    /// assert!(locks.is_empty());
    /// # }
    /// ```
    pub async fn write_many(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> KeyGuards<AsyncKeyWriteGuard<'_, K, S>> {
        let mut guards = Vec::new();
        for key in ascending_unique(keys) {
            guards.push(self.write(key).await);
        }
        KeyGuards::new(guards)
    }
}

impl<'a, K: Eq + Hash, S: BuildHasher> KeyUpgradableGuard<'a, K, S, Async> {
    /// Becomes a write hold once the readers have left, ahead of every queued waiter.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the upgradable hold too (it was moved in): the key is
    /// released whether or not the upgrade had been granted.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let w = locks.upgradable_read("k").await.upgrade().await;
    /// assert!(locks.is_write_locked("k"));
    /// # drop(w);
    /// # }
    /// ```
    pub async fn upgrade(self) -> AsyncKeyWriteGuard<'a, K, S> {
        let (registry, ticket) = (self.registry, self.ticket);
        // If this future is dropped at the await, `self` drops after the claim: the
        // upgrade's weight (if granted) and then the upgradable hold are given back.
        Claim::grow(registry, ticket, WRITE - UPGRADABLE).await;
        let (registry, ticket) = self.into_parts();
        KeyWriteGuard::new(registry, ticket)
    }
}
