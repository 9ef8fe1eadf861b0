//! Hand-over-hand ("chain") locking down a tree of locks.
//!
//! See [`chain_locker!`](crate::chain_locker) for the generated lockers, [`Exit`] for how a
//! descent ends early, and the lock traits for what a level may be.

mod children;
mod exit;
mod leaves;
mod lock;
mod node;

pub use children::{ChildContainer, Children};
pub use exit::{Exit, PathExit};
#[doc(hidden)]
pub use leaves::{lock_leaves, lock_leaves_until};
pub use lock::{
    AsyncExclusiveLock, AsyncSharedLock, ExclusiveLock, SharedLock, TimedExclusiveLock,
    TimedSharedLock,
};
pub use node::ChainNode;
