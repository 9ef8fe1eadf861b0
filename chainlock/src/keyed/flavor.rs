//! The sealed flavors of the keyed managers: who owns a hold, and so how a caller waits.

use std::marker::PhantomData;

use lock_api::GuardNoSend;

/// How a keyed manager's callers wait and own their holds: [`Blocking`] (the `Keyed*`
/// faces) or `Async` (the `AsyncKeyed*` faces, feature `async`). Sealed: there is no other
/// flavor.
///
/// # Examples
///
/// ```
/// use chainlock::keyed::{Blocking, Flavor, KeyGuard};
///
/// // The flavor is a type parameter of the guards too.
/// fn count<F: Flavor>(guards: Vec<KeyGuard<'_, u8, chainlock::keyed::DefaultHashBuilder, F>>) -> usize {
///     guards.len()
/// }
/// let locks = chainlock::keyed::KeyedLocks::new();
/// let guards: Vec<KeyGuard<'_, u8, _, Blocking>> = vec![locks.lock(1), locks.lock(2)];
/// assert_eq!(count(guards), 2);
/// ```
pub trait Flavor: sealed::Sealed {}

// The sealed-trait pattern: public in name, unreachable by design.
pub(super) mod sealed {
    /// What the core needs to know about a [`Flavor`](super::Flavor).
    pub trait Sealed: 'static {
        /// Whether holds belong to the calling thread, which may then take a key it holds
        /// again; otherwise each acquisition is its own owner.
        const PER_THREAD: bool;
        /// The public name of the manager of this flavor (for `Debug`), for each primitive.
        const LOCKS: &'static str;
        /// See [`LOCKS`](Self::LOCKS).
        const RW_LOCKS: &'static str;
        /// See [`LOCKS`](Self::LOCKS).
        const PERMITS: &'static str;
    }
}

/// The blocking flavor: a thread owns its exclusive holds, reentrantly; its exclusive
/// guards are `!Send`.
#[derive(Debug)]
pub struct Blocking(PhantomData<GuardNoSend>);

impl Flavor for Blocking {}

impl sealed::Sealed for Blocking {
    const PER_THREAD: bool = true;
    const LOCKS: &'static str = "KeyedLocks";
    const RW_LOCKS: &'static str = "KeyedRwLocks";
    const PERMITS: &'static str = "KeyedPermits";
}

/// The async flavor: each acquisition is its own owner (no reentrancy); guards are `Send`.
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
#[derive(Debug)]
pub struct Async(());

#[cfg(feature = "async")]
impl Flavor for Async {}

#[cfg(feature = "async")]
impl sealed::Sealed for Async {
    const PER_THREAD: bool = false;
    const LOCKS: &'static str = "AsyncKeyedLocks";
    const RW_LOCKS: &'static str = "AsyncKeyedRwLocks";
    const PERMITS: &'static str = "AsyncKeyedPermits";
}
