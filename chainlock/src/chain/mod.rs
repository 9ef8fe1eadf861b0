//! Hand-over-hand ("chain") locking down a tree of locks.
//!
//! See [`chain_locker!`](crate::chain_locker) for the generated lockers, [`Exit`] for how a
//! descent ends early, and the lock traits for what a level may be.
//!
#![doc = include_str!("../../docs/chain.md")]

pub(crate) mod acquire;
mod children;
pub(crate) mod end;
mod epoch;
pub(crate) mod exit;
pub(crate) mod leaves;
pub(crate) mod link;
pub(crate) mod lock;
pub(crate) mod node;
pub(crate) mod optimistic;
mod pin;
pub(crate) mod stage;
mod upgrade;
pub(crate) mod wait;

pub use children::{ChildContainer, Children, ChildrenBy, ChildrenRef, LookupBy, LookupRef};
pub use epoch::{EpochMap, EpochVec};
pub use exit::{Absence, Exit, LeavesExit};
pub use leaves::ExclusiveLeaf;
pub use link::{
    AsyncExclusiveLink, AsyncSharedLink, ChildField, ChildLock, ExclusiveLink, Link, LinkRef,
    OptimisticLink, SharedLink, TimedExclusiveLink, TimedSharedLink, TimedUpgradableLink,
    UpgradableLink,
};
pub use lock::{
    AsyncExclusiveLock, AsyncSharedLock, ExclusiveLock, SharedLock, TimedExclusiveLock,
    TimedSharedLock,
};
pub use node::ChainNode;
pub use optimistic::{MAX_RESTARTS, OptimisticLock};
pub use pin::EpochGuard;
pub use upgrade::{TimedUpgradableLock, Upgradable, UpgradableLock};
