//! Hand-over-hand ("chain") locking down a tree of locks.
//!
//! See [`chain_locker!`](crate::chain_locker) for the generated lockers, [`Exit`] for how a
//! descent ends early, and the lock traits for what a level may be.

mod exit;
mod lock;
mod node;

pub use exit::Exit;
pub use lock::{
    AsyncExclusiveLock, AsyncSharedLock, ExclusiveLock, SharedLock, TimedExclusiveLock,
    TimedSharedLock,
};
pub use node::ChainNode;
