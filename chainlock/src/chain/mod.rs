//! Hand-over-hand ("chain") locking down a tree of locks.
//!
//! See [`chain_locker!`](crate::chain_locker) for the generated lockers, [`Exit`] for how a
//! descent ends early, and the lock traits for what a level may be.
//!
#![doc = include_str!("../../docs/chain.md")]

mod children;
mod exit;
pub(crate) mod leaves;
mod lock;
mod node;
pub(crate) mod observed;
mod upgrade;

pub use children::{ChildContainer, Children, ChildrenBy, LookupBy};
pub use exit::{Absence, Exit, LeavesExit};
pub use lock::{
    AsyncExclusiveLock, AsyncSharedLock, ExclusiveLock, SharedLock, TimedExclusiveLock,
    TimedSharedLock,
};
pub use node::ChainNode;
pub use upgrade::{TimedUpgradableLock, Upgradable, UpgradableLock};
