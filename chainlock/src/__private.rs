//! Paths used by the code that `chainlock-macros` generates. Not public API: anything
//! here may change in any release; the macros pin this crate's exact version.
//!
//! Only re-exports: each helper lives in the module of what it does (a chain's steps in
//! `chain/`, a mixed chain's walk steps in `walk/`, the telemetry's hooks in
//! `telemetry/hooks.rs`), so that generated code reaches chainlock through this one path
//! and nothing here is reached by the rest of the crate.

pub use crate::chain::acquire::{
    exclusive, exclusive_async, exclusive_async_unheld, exclusive_unheld, exclusive_until,
    exclusive_until_async, exclusive_until_async_unheld, exclusive_until_unheld, shared,
    shared_async, shared_async_unheld, shared_unheld, shared_until, shared_until_async,
    shared_until_async_unheld, shared_until_unheld, upgradable, upgradable_unheld,
    upgradable_until, upgradable_until_unheld,
};
pub use crate::chain::end::{End, Found, FoundLeaf, Hold, Kept, ModeS, ModeU, ModeX, Open, Unheld};
pub use crate::chain::exit::{Res, found, walk_exit};
pub use crate::chain::leaves::{ExclusiveLeaf, LeafLocks, Leaves, leaves, no_exclusive_leaf};
pub use crate::chain::link::{
    AsyncExclusiveLink as LinkAX, AsyncSharedLink as LinkAS, ChildField, ChildLock,
    ExclusiveLink as LinkX, KeyOf, Link, LinkRef, LockOf, OptimisticLink as LinkO,
    SharedLink as LinkS, TimedExclusiveLink as LinkTX, TimedSharedLink as LinkTS,
    TimedUpgradableLink as LinkTU, UpgradableLink as LinkU, key_mut, key_opt, key_ref, key_up,
};
pub use crate::chain::lock::{ASGuard, AXGuard, SGuard, XGuard};
pub use crate::chain::node::{ClosedProbe, ProbeNode, ProbeOther};
pub use crate::chain::optimistic::{
    Carry, Carrying, Holds, Kind, Pass, Seen, Stop, TakeIn, Versions, Waits, optimistic,
};
pub use crate::chain::stage::{StageS, StageU, StageX};
pub use crate::chain::wait::{
    AsyncSteps, Blocking, Handle, NextLock, Parent, Steps, Wait, WaitS, WaitU, WaitX,
};
pub use crate::chain::{
    Absence, AsyncExclusiveLock, AsyncSharedLock, ChainNode, ChildContainer, Children, ChildrenBy,
    ChildrenRef, EpochGuard, ExclusiveLock, Exit, LeavesExit, LookupBy, LookupRef, OptimisticLock,
    SharedLock, TimedExclusiveLock, TimedSharedLock, TimedUpgradableLock, Upgradable,
    UpgradableLock,
};
pub use crate::hybrid::HybridLock;
pub use crate::telemetry::hooks::{
    Held, Level, Next, Off as RecOff, On as RecOn, Rec, hybrid, leaf, no_hold, out_of_line,
    records, release, release_as, release_taken, restart, spend_unreached_async,
};
#[cfg(not(loom))]
pub use crate::walk::optimistic::repeated::repeat;
pub use crate::walk::steps::{walk_child, walk_depth};
pub use crate::walk::{
    AsyncMode as WalkAsyncMode, Exclusive as WalkExclusive, Mode as WalkMode, Shared as WalkShared,
    Step as WalkStep, Walker,
};
pub use crate::{
    __chainlock_if_tokio as if_tokio, __chainlock_levels as levels,
    __chainlock_recording_branches as recording_branches, __chainlock_tracked as tracked,
};
pub use chainlock_macros::chain_locker_items;
pub use core::borrow::Borrow;
pub use core::clone::Clone;
pub use core::convert::{From, Into};
pub use core::default::Default;
pub use core::fmt::{Debug, Formatter, Result as FmtResult};
pub use core::iter::{IntoIterator, Iterator};
pub use core::marker::{Copy, Send, Sized, Sync};
pub use core::mem::drop;
pub use core::ops::{FnMut, FnOnce};
pub use core::option::Option::{self, None, Some};
pub use core::primitive::{bool, u32};
pub use core::result::Result::{self, Err, Ok};
pub use std::sync::Arc;
pub use std::sync::atomic::{AtomicBool, Ordering::Acquire};
pub use std::time::Instant;
pub use std::vec::Vec;
