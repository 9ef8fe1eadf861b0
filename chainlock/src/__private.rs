//! Paths used by the code that `chainlock-macros` generates. Not public API: anything
//! here may change in any release; the macros pin this crate's exact version.

pub use crate::chain::leaves::{lock_leaves, lock_leaves_until};
pub use crate::chain::{
    AsyncExclusiveLock, AsyncSharedLock, ChainNode, Children, ExclusiveLock, Exit, PathExit,
    SharedLock, TimedExclusiveLock, TimedSharedLock,
};
pub use core::ops::FnOnce;
pub use core::option::Option::{self, None, Some};
pub use core::result::Result::{self, Err, Ok};
pub use std::sync::Arc;
pub use std::time::Instant;
pub use std::vec::Vec;

/// Asks a level whether it is closed, when its type implements [`ChainNode`], and
/// answers "no" at compile time otherwise (autoref specialization: the generated code
/// calls `(&ClosedProbe(node)).level_is_closed()` on a concrete level type, and method
/// resolution prefers [`ProbeNode`] over [`ProbeOther`] when both apply).
pub struct ClosedProbe<'a, T: ?Sized>(pub &'a T);

/// The [`ClosedProbe`] answer for level types that implement [`ChainNode`].
pub trait ProbeNode {
    /// Whether the probed node is closed.
    fn level_is_closed(&self) -> bool;
}

impl<T: ?Sized + ChainNode> ProbeNode for ClosedProbe<'_, T> {
    #[inline]
    fn level_is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

/// The [`ClosedProbe`] answer for all other level types: never closed.
pub trait ProbeOther {
    /// Always `false`.
    fn level_is_closed(&self) -> bool;
}

impl<T: ?Sized> ProbeOther for &ClosedProbe<'_, T> {
    #[inline]
    fn level_is_closed(&self) -> bool {
        false
    }
}
