//! The async face of the keyed permit manager: tasks wait on a waker; every future is
//! cancel-safe.

use std::hash::{BuildHasher, Hash};

use super::DefaultHashBuilder;
use super::future::{Async, Claim};
use super::permits::{PermitGuard, PermitManager};
use super::rw::KeyGuards;
use crate::lock_order::ascending_unique;

/// A manager of named counting semaphores for async tasks: at most N holders per key.
///
/// The async twin of [`KeyedPermits`](super::KeyedPermits), on the same core. Timeouts come
/// from the runtime (`tokio::time::timeout`); dropping a pending future is always safe.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use chainlock::keyed::AsyncKeyedPermits;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let hosts = Arc::new(AsyncKeyedPermits::new(2));
/// let mut tasks = Vec::new();
/// for _ in 0..5 {
///     let hosts = Arc::clone(&hosts);
///     tasks.push(tokio::spawn(async move {
///         let _permit = hosts.acquire("example.org").await;
///         tokio::task::yield_now().await;
///     }));
/// }
/// for task in tasks {
///     task.await.unwrap();
/// }
/// assert!(hosts.is_empty());
/// # }
/// ```
pub type AsyncKeyedPermits<K, S = DefaultHashBuilder> = PermitManager<K, S, Async>;

/// A permit of an [`AsyncKeyedPermits`] key.
pub type AsyncPermitGuard<'a, K, S = DefaultHashBuilder> = PermitGuard<'a, K, S, Async>;

impl<K: Eq + Hash, S: BuildHasher> PermitManager<K, S, Async> {
    /// Takes a permit of `key`, in FIFO order.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future leaves the queue, or gives the permit back if it
    /// was granted already.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let hosts = chainlock::keyed::AsyncKeyedPermits::new(1);
    /// let held = hosts.acquire("h").await;
    /// let timed = tokio::time::timeout(Duration::from_millis(5), hosts.acquire("h")).await;
    /// assert!(timed.is_err());
    /// drop(held);
    /// assert!(hosts.is_empty());
    /// # }
    /// ```
    pub async fn acquire(&self, key: K) -> AsyncPermitGuard<'_, K, S> {
        let ticket = Claim::acquire(&self.registry, key, 1).await;
        PermitGuard::new(&self.registry, ticket)
    }
}

impl<K: Eq + Hash + Ord, S: BuildHasher> PermitManager<K, S, Async> {
    /// Takes a permit of every key of `keys`, in ascending `Ord` order (duplicates once).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe and all-or-nothing: dropping the future gives back the permits taken so
    /// far.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let hosts = chainlock::keyed::AsyncKeyedPermits::new(1);
    /// let both = hosts.acquire_all([2, 1, 2]).await;
    /// assert_eq!(both.len(), 2);
    /// # }
    /// ```
    pub async fn acquire_all(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> KeyGuards<AsyncPermitGuard<'_, K, S>> {
        let mut guards = Vec::new();
        for key in ascending_unique(keys) {
            guards.push(self.acquire(key).await);
        }
        KeyGuards::new(guards)
    }
}
